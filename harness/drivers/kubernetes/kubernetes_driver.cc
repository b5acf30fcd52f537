#include "drivers/kubernetes/kubernetes_driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/facts.h"
#include "core/output.h"

namespace sandprobe::drivers {
namespace {

using Json = nlohmann::json;
using kube::After;
using kube::ApiError;
using kube::Clock;
using kube::QueryEscape;
using kube::SecondsLeft;

// A string at a JSON pointer, "" when absent or when `j` is not an object (never throws).
std::string Str(const Json& j, const char* pointer) {
  if (!j.is_object()) return "";
  const Json::json_pointer p(pointer);
  if (!j.contains(p) || !j.at(p).is_string()) return "";
  return j.at(p).get<std::string>();
}

// Items of a list response ([] when the body is not a list).
Json Items(const Json& body) {
  return body.is_object() && body.contains("items") && body["items"].is_array() ? body["items"]
                                                                                : Json::array();
}

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
double Round1(double s) { return std::round(s * 10) / 10; }

const Json* ProbeStatus(const Json& pod) {
  const Json* statuses = pod.contains("status") && pod["status"].is_object() &&
                                 pod["status"].contains("containerStatuses")
                             ? &pod["status"]["containerStatuses"]
                             : nullptr;
  if (statuses == nullptr || !statuses->is_array()) return nullptr;
  for (const Json& c : *statuses) {
    if (c.is_object() && c.value("name", "") == kube::kContainerName) return &c;
  }
  return nullptr;
}

const Json* Terminated(const Json& pod) {
  const Json* c = ProbeStatus(pod);
  if (c == nullptr || !c->contains("state") || !(*c)["state"].is_object()) return nullptr;
  const Json& st = (*c)["state"];
  return st.contains("terminated") && st["terminated"].is_object() ? &st["terminated"] : nullptr;
}

std::string Phase(const Json& pod) { return Str(pod, "/status/phase"); }

bool Finished(const Json& pod) {
  const std::string phase = Phase(pod);
  return Terminated(pod) != nullptr || phase == "Succeeded" || phase == "Failed";
}

bool Running(const Json& pod) {
  const Json* c = ProbeStatus(pod);
  return Finished(pod) || (c != nullptr && c->contains("state") && (*c)["state"].is_object() &&
                           (*c)["state"].contains("running"));
}

// "ImagePullBackOff: Back-off pulling image ..." when the container waits.
std::string Waiting(const Json& pod) {
  const Json* c = ProbeStatus(pod);
  if (c == nullptr) return "";
  const Json w = c->value("/state/waiting"_json_pointer, Json());
  if (!w.is_object()) return "";
  return fmt::format("{}: {}", w.value("reason", ""), w.value("message", "").substr(0, 300));
}

std::string JobFailure(const Json& job) {
  if (!job.is_object()) return "";
  const Json conds = job.value("/status/conditions"_json_pointer, Json::array());
  if (!conds.is_array()) return "";
  for (const Json& c : conds) {
    if (c.is_object() &&
        (c.value("type", "") == "Failed" || c.value("type", "") == "FailureTarget") &&
        c.value("status", "") == "True") {
      return c.value("reason", "Failed");
    }
  }
  return "";
}

std::string NewestPodName(const Json& items) {
  std::string best, best_ts;
  if (!items.is_array()) return best;
  for (const Json& p : items) {
    const std::string name = Str(p, "/metadata/name");
    const std::string ts = Str(p, "/metadata/creationTimestamp");
    if (best.empty() || ts > best_ts) best = name, best_ts = ts;
  }
  return best;
}

}  // namespace

KubernetesDriver::KubernetesDriver(core::Manifest manifest, kube::KubeSettings settings,
                                   DriverContext context, kube::EnvLookup getenv)
    : manifest_(std::move(manifest)),
      settings_(std::move(settings)),
      context_(std::move(context)),
      getenv_(std::move(getenv)) {}

std::string KubernetesDriver::Path(std::string_view group_path, std::string_view resource,
                                   std::string_view name) const {
  std::string p = fmt::format("{}/namespaces/{}/{}", group_path, ns_, resource);
  if (!name.empty()) p += fmt::format("/{}", name);
  return p;
}

std::vector<std::string> KubernetesDriver::Warnings() const { return warnings_; }

std::expected<void, SetupError> KubernetesDriver::Prepare() {
  const std::string arm = fmt::format("arm {}", manifest_.name);
  auto conn = kube::ResolveConnection(manifest_.driver_config, getenv_);
  if (!conn) {
    return std::unexpected(
        SetupError{conn.error(),
                   "set kubernetes.kubeconfig (a path or in-cluster), $KUBECONFIG, or "
                   "kubernetes.context; kubectl config view --minify shows what is used"});
  }
  warnings_ = conn->warnings;
  {
    // The manifest's jobTemplate can give back what the defaults take away: say so in the report.
    const kube::JobRequest sample{
        context_.run_id, manifest_.name, "template-check", "x", "", 10, ""};
    for (std::string& w : kube::TemplateWeakenings(kube::BuildJob(settings_, sample)))
      warnings_.push_back(std::move(w));
  }
  if (settings_.image.find("@sha256:") == std::string::npos) {
    warnings_.push_back(
        fmt::format("image {} is not pinned by digest: the probe image can change between runs",
                    settings_.image));
  }
  ns_ = !settings_.namespace_name.empty() ? settings_.namespace_name
        : !conn->namespace_name.empty()   ? conn->namespace_name
                                          : "default";
  kube::ApiOptions options;
  options.call_timeout_s = settings_.api_timeout_s;
  client_.emplace(*conn, options);
  const auto deadline = After(settings_.api_timeout_s * 2);
  auto version = client_->Call("GET", "/version", nullptr, deadline);
  if (!version && (version.error().code == 401 || version.error().code == 403)) {
    return std::unexpected(SetupError{
        fmt::format("the API server {} ({}) refused the credentials: {}", conn->server,
                    conn->source, version.error().ToString()),
        "check the kubeconfig user's token or client certificate (kubectl auth whoami)"});
  }
  if (!version) {
    return std::unexpected(
        SetupError{fmt::format("the API server {} ({}) does not answer GET /version: {}",
                               conn->server, conn->source, version.error().ToString()),
                   "check the kubeconfig's server and CA, and that the cluster is up"});
  }
  auto ns = client_->Call("GET", "/api/v1/namespaces/" + ns_, nullptr, deadline);
  if (!ns && ns.error().code == 404) {
    return std::unexpected(
        SetupError{fmt::format("namespace {} does not exist on {}", ns_, conn->server),
                   "create it (ci/kubernetes/) or set kubernetes.namespace"});
  }
  if (!ns && ns.error().code == 403) {
    warnings_.push_back(
        fmt::format("namespace {}: not allowed to read it (a namespaced Role "
                    "cannot grant that); assuming it exists",
                    ns_));
  } else if (!ns) {
    return std::unexpected(
        SetupError{fmt::format("GET namespace {}: {}", ns_, ns.error().ToString()),
                   "check the credentials' permissions"});
  }
  for (const std::string& w : warnings_) std::cerr << "sandprobe: warning: " << w << "\n";
  if (settings_.network_policy.empty()) return {};

  Json policy;
  if (settings_.network_policy == kube::kDenyAllEgress) {
    policy = kube::BuildDenyAllEgressPolicy(context_.run_id, manifest_.name);
  } else {
    std::ifstream in(settings_.network_policy);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      return std::unexpected(
          SetupError{fmt::format("{}: kubernetes.networkPolicy: cannot read {}",
                                 manifest_.source_path, settings_.network_policy),
                     "give deny-all-egress or a NetworkPolicy YAML file"});
    }
    auto p =
        kube::PolicyFromYaml(text.str(), settings_.network_policy, context_.run_id, manifest_.name);
    if (!p) return std::unexpected(SetupError{p.error(), "give one NetworkPolicy object"});
    policy = *p;
  }
  submitted_ = true;  // from here on, Cleanup() has something to look for
  auto created = client_->Call("POST", Path("/apis/networking.k8s.io/v1", "networkpolicies"),
                               policy, After(std::max(60.0, settings_.api_timeout_s * 2)));
  policy_stored_ = Clock::now();
  if (!created) {
    return std::unexpected(SetupError{
        fmt::format("creating NetworkPolicy {} in {}: {}",
                    policy["metadata"]["name"].get<std::string>(), ns_, created.error().ToString()),
        "the driver needs create on networkpolicies (ci/kubernetes/ has the Role)"});
  }
  policy_name_ = policy["metadata"]["name"];
  policy_created_at_ = Str(created->body, "/metadata/creationTimestamp");
  return {};
}

std::expected<void, std::string> KubernetesDriver::DeleteJob(const std::string& name,
                                                             bool also_pods) {
  const auto deadline = After(std::max(30.0, settings_.api_timeout_s * 2));
  auto del = client_->Call("DELETE",
                           Path("/apis/batch/v1", "jobs", name) + "?propagationPolicy=Background",
                           nullptr, deadline);
  if (!del && del.error().code != 404)
    return std::unexpected("deleting Job: " + del.error().ToString());
  if (also_pods) {
    client_->Call("DELETE",
                  Path("/api/v1", "pods") + "?labelSelector=" + QueryEscape("job-name=" + name) +
                      "&gracePeriodSeconds=1",
                  nullptr, deadline);
  }
  while (true) {
    auto get = client_->Send("GET", Path("/apis/batch/v1", "jobs", name), "", deadline);
    if (get && get->status == 404) break;
    if (SecondsLeft(deadline) < 0.5) {
      return std::unexpected(fmt::format("Job {} still present after the delete{}", name,
                                         get ? "" : ": " + get.error().ToString()));
    }
    kube::SleepFor(0.3, deadline, nullptr);
  }
  std::lock_guard lock(mu_);
  live_jobs_.erase(name);
  return {};
}

core::Observation KubernetesDriver::Execute(const Invocation& inv,
                                            const std::atomic<bool>& cancel) {
  core::Observation obs;
  obs.driver_facts[core::fact::kDriver] = "kubernetes";
  obs.driver_facts[core::fact::kNamespace] = ns_;
  if (!warnings_.empty()) obs.driver_facts[core::fact::kWarnings] = warnings_;
  const auto start = Clock::now();
  auto fail = [&](std::string why) {
    obs.ending = core::Ending::kHarnessError;
    obs.harness_error = core::SanitizeUtf8(why);
    obs.duration_s = Since(start);
    return obs;
  };
  if (!client_) return fail("kubernetes driver used before Prepare()");
  if (inv.deploy == core::Deploy::kHarnessAdmission) return Admission(inv, cancel, std::move(obs));

  // Arms that are policies: wait until the policy is old enough (local time since the API server
  // answered 201 is a lower bound of its real age).
  if (policy_stored_ && settings_.min_policy_age_s > 0) {
    const double wait = settings_.min_policy_age_s - Since(*policy_stored_);
    if (wait > 0) {
      obs.driver_facts[core::fact::kPolicyWaitS] = Round1(wait);
      if (!kube::SleepFor(wait, After(wait + 1), &cancel)) {
        obs.ending = core::Ending::kInterrupted;
        obs.duration_s = Since(start);
        return obs;
      }
    }
  }
  kube::JobRequest req{context_.run_id, manifest_.name,
                       inv.invocation,  inv.probe,
                       inv.script,      kube::ContainerTimeout(settings_.limits, inv.deadline_s),
                       inv.node};
  const Json job = kube::BuildJob(settings_, req);
  const std::string name = job["metadata"]["name"];
  obs.driver_facts[core::fact::kJob] = name;
  if (!policy_name_.empty()) {
    obs.driver_facts[core::fact::kNetworkPolicy] = policy_name_;
    obs.driver_facts[core::fact::kPolicyCreatedAt] = policy_created_at_;
    obs.driver_facts[core::fact::kPolicyAgeS] = Round1(Since(*policy_stored_));
  }
  const auto created_at = Clock::now();
  const auto start_deadline = After(settings_.pod_start_timeout_s);
  {
    std::lock_guard lock(mu_);
    live_jobs_.insert(name);  // before the POST: a create that times out may still have landed
  }
  submitted_ = true;
  auto created =
      client_->Call("POST", Path("/apis/batch/v1", "jobs"), job, start_deadline, &cancel);
  if (!created) {
    if (created.error().cancelled) {
      DeleteJob(name, true);
      obs.ending = core::Ending::kInterrupted;
      obs.duration_s = Since(start);
      return obs;
    }
    DeleteJob(name, true);
    return fail(fmt::format("creating Job {}: {}{}", name, created.error().ToString(),
                            created.error().IsQuota()
                                ? " (quota back-pressure did not clear before podStartTimeout)"
                                : ""));
  }

  // Watch the Job's pods: list (resourceVersion), watch from there; re-list on 410 or a broken
  // stream. The harness deadline starts when the container runs.
  const std::string pods_path =
      Path("/api/v1", "pods") + "?labelSelector=" + QueryEscape("job-name=" + name);
  Json pod;
  std::optional<Clock::time_point> running_since;
  std::string job_failure, failed_create, setup_failure;
  std::string last_api_error;  // the last transport or deadline error of a pod list
  bool harness_stop = false, pod_deleted = false;
  auto last_check = Clock::now() - std::chrono::seconds(10);
  int relists = 0, gone = 0;
  auto harness_deadline = [&] {
    return running_since ? *running_since + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(inv.deadline_s))
                         : start_deadline;
  };
  auto absorb = [&](const Json& p) {
    if (!p.is_object()) return;
    if (pod.is_object() && Str(p, "/metadata/name") != Str(pod, "/metadata/name") &&
        Str(p, "/metadata/creationTimestamp") < Str(pod, "/metadata/creationTimestamp")) {
      return;  // an older pod of the same Job
    }
    pod = p;
    if (!running_since && Running(pod)) {
      running_since = Clock::now();
      obs.driver_facts[core::fact::kStartWaitS] = Round1(Since(created_at));
    }
  };
  while (true) {
    if (cancel.load()) break;
    if (pod.is_object() && Finished(pod)) break;
    if (Clock::now() >= harness_deadline()) break;
    if (pod_deleted) {  // deleted under us: the Job controller (deadline) or someone else
      if (auto j = client_->Call("GET", Path("/apis/batch/v1", "jobs", name), nullptr,
                                 After(settings_.api_timeout_s), &cancel)) {
        job_failure = JobFailure(j->body);
      }
      if (job_failure.empty())
        setup_failure = "pod " + Str(pod, "/metadata/name") + " was deleted before it finished";
      break;
    }
    auto list = client_->Call("GET", pods_path, nullptr, harness_deadline(), &cancel);
    if (!list) {
      if (!list.error().cancelled) last_api_error = list.error().ToString();
      if (list.error().cancelled || list.error().deadline) continue;
      setup_failure = "listing pods: " + list.error().ToString();
      break;
    }
    ++relists;
    const Json items = Items(list->body);
    const std::string newest = NewestPodName(items);
    for (const Json& p : items) {
      if (Str(p, "/metadata/name") == newest) absorb(p);
    }
    if (pod.is_object() && Finished(pod)) break;
    // No pod running yet: the Job's own status and events say why (FailedCreate, deadline).
    if (!running_since && Since(last_check) >= 2) {
      last_check = Clock::now();
      if (auto j = client_->Call("GET", Path("/apis/batch/v1", "jobs", name), nullptr,
                                 After(settings_.api_timeout_s), &cancel)) {
        job_failure = JobFailure(j->body);
      }
      auto ev = client_->Call("GET",
                              Path("/api/v1", "events") +
                                  "?fieldSelector=" + QueryEscape("involvedObject.name=" + name),
                              nullptr, After(settings_.api_timeout_s), &cancel);
      if (ev) {
        for (const Json& e : Items(ev->body)) {
          if (e.is_object() && e.value("reason", "") == "FailedCreate") {
            failed_create = core::SanitizeUtf8(e.value("message", "").substr(0, 1000));
          }
        }
      }
      if (!job_failure.empty() || !failed_create.empty()) break;
      const std::string waiting = Waiting(pod);
      if (waiting.starts_with("InvalidImageName") ||
          waiting.starts_with("CreateContainerConfigError")) {
        setup_failure = "the probe container cannot start: " + waiting;
        break;
      }
    }
    const std::string rv = Str(list->body, "/metadata/resourceVersion");
    const double left = SecondsLeft(harness_deadline());
    const std::string watch_path =
        fmt::format("{}&watch=1&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}",
                    pods_path, QueryEscape(rv), std::clamp(static_cast<int>(left) + 1, 1, 60));
    ApiError werr;
    const kube::WatchEnd end = client_->Watch(
        watch_path, harness_deadline(), cancel,
        [&](const std::string& type, const Json& object) {
          if (type == "ADDED" || type == "MODIFIED") {
            const bool was_running = running_since.has_value();
            absorb(object);
            if (Finished(pod) || (!was_running && running_since)) return false;
          } else if (type == "DELETED" && pod.is_object() &&
                     Str(object, "/metadata/name") == Str(pod, "/metadata/name")) {
            absorb(object);
            pod_deleted = !Finished(pod);
            return false;
          }
          return true;
        },
        &werr);
    if (end == kube::WatchEnd::kGone) ++gone;
    if (end == kube::WatchEnd::kFailed && werr.code != 410) {
      setup_failure = "watching pods: " + werr.ToString();
      break;
    }
  }
  obs.driver_facts[core::fact::kPodRelists] = relists;
  if (gone > 0) obs.driver_facts[core::fact::kWatchGone] = gone;
  const std::string pod_name = Str(pod, "/metadata/name");
  if (!pod_name.empty()) obs.driver_facts[core::fact::kPod] = pod_name;
  if (const std::string node = Str(pod, "/spec/nodeName"); !node.empty()) {
    obs.driver_facts[core::fact::kNode] = node;
  }
  const bool finished = pod.is_object() && Finished(pod);
  if (!finished && !cancel.load() && running_since && Clock::now() >= harness_deadline()) {
    harness_stop = true;
    obs.ending = core::Ending::kDeadline;
    obs.driver_facts[core::fact::kEndedBy] = "harness deadline";
  }
  if (!finished && cancel.load()) {
    harness_stop = true;
    obs.ending = core::Ending::kInterrupted;
  }

  // Logs before anything deletes the pod (a Job-level deadline already did: say so).
  bool logs_ok = false;
  if (!pod_name.empty() && (finished || running_since)) {
    core::OutputCollector collector(context_.nonce);
    const std::string log_path = Path("/api/v1", "pods", pod_name) +
                                 fmt::format("/log?container={}&limitBytes={}",
                                             kube::kContainerName, settings_.log_limit_bytes);
    for (int attempt = 0; attempt < 3 && !logs_ok; ++attempt) {
      auto logs =
          client_->Send("GET", log_path, "", After(std::max(30.0, settings_.api_timeout_s)));
      if (logs && logs->status == 200) {
        collector.FeedStdout(logs->text);
        logs_ok = true;
      } else if (logs && logs->status == 404) {
        break;
      } else {
        kube::SleepFor(0.3 * (attempt + 1), After(5), nullptr);
      }
    }
    collector.Finish(obs);
    obs.driver_facts[core::fact::kLogs] =
        logs_ok ? "combined stdout+stderr (pods/log)" : "unavailable";
  }
  obs.duration_s = Since(running_since.value_or(created_at));

  if (const Json* t = Terminated(pod)) {
    const std::string reason = t->value("reason", "");
    obs.driver_facts[core::fact::kTerminatedReason] = reason;
    obs.driver_facts[core::fact::kExitCode] = t->value("exitCode", -1);
    obs.driver_facts[core::fact::kOomKilled] = reason == "OOMKilled";
    if (t->value("signal", 0) != 0) obs.driver_facts[core::fact::kSignal] = t->value("signal", 0);
    if (!harness_stop) {
      obs.ending = core::Ending::kExited;
      obs.exit_code = t->value("exitCode", -1);
    }
  }
  const std::string pod_reason = Str(pod, "/status/reason");
  if (!pod_reason.empty()) {
    obs.driver_facts[core::fact::kPodReason] = pod_reason;
    obs.driver_facts[core::fact::kPodMessage] =
        core::SanitizeUtf8(Str(pod, "/status/message").substr(0, 500));
  }
  if (pod_reason == "Evicted") {
    obs.driver_facts[core::fact::kEvicted] = true;
    if (Terminated(pod) == nullptr && !harness_stop) {
      obs.ending = core::Ending::kSignaled;  // the kubelet killed it; no exit status recorded
      obs.signal = 9;
    }
  }
  if (!job_failure.empty()) {
    obs.driver_facts[core::fact::kJobCondition] = job_failure;
    if (job_failure == "DeadlineExceeded" && !logs_ok) {
      obs.driver_facts[core::fact::kLogs] =
          "gone: the Job's activeDeadlineSeconds ended it and deleted its pods and logs";
    }
    if (Terminated(pod) == nullptr && obs.ending == core::Ending::kNotRun &&
        failed_create.empty()) {
      obs.ending = core::Ending::kSignaled;  // the Job controller killed the pod
      obs.signal = 9;
    }
  }

  auto deleted = DeleteJob(name, harness_stop || !finished);
  obs.driver_facts[core::fact::kJobDeleted] = deleted.has_value();
  if (!failed_create.empty()) {
    obs.driver_facts[core::fact::kFailedCreate] = failed_create;
    return fail(fmt::format("Job {}: FailedCreate: {}", name, failed_create));
  }
  if (!setup_failure.empty()) return fail(fmt::format("Job {}: {}", name, setup_failure));
  if (obs.ending == core::Ending::kNotRun) {
    if (cancel.load()) {
      obs.ending = core::Ending::kInterrupted;
    } else {
      const std::string waiting = Waiting(pod);
      if (pod_name.empty() && !last_api_error.empty()) {
        return fail(
            fmt::format("Job {}: the API server stopped answering before a pod ran "
                        "(last error: {})",
                        name, last_api_error));
      }
      return fail(fmt::format("Job {}: no running container within podStartTimeout ({:g}s){}", name,
                              settings_.pod_start_timeout_s,
                              pod_name.empty()
                                  ? ": no pod was created"
                                  : fmt::format(": pod {} phase {}{}", pod_name, Phase(pod),
                                                waiting.empty() ? "" : ", " + waiting)));
    }
  }
  if (!deleted) return fail(deleted.error() + " (the API server stopped answering?)");
  if (cancel.load() && obs.ending != core::Ending::kInterrupted) {
    obs.ending = core::Ending::kInterrupted;
  }
  return obs;
}

core::Observation KubernetesDriver::Admission(const Invocation& inv,
                                              const std::atomic<bool>& cancel,
                                              core::Observation obs) {
  const auto start = Clock::now();
  kube::JobRequest req{context_.run_id, manifest_.name,
                       inv.invocation,  inv.probe,
                       inv.script,      kube::ContainerTimeout(settings_.limits, inv.deadline_s),
                       inv.node};
  const Json pod = kube::BuildAdmissionPod(settings_, req);
  obs.driver_facts[core::fact::kAdmissionPod] = pod["metadata"]["name"];
  auto r = client_->Call("POST", Path("/api/v1", "pods") + "?dryRun=All", pod,
                         After(std::max(inv.deadline_s, 60.0)), &cancel);
  obs.duration_s = Since(start);
  if (!r && r.error().cancelled) {
    obs.ending = core::Ending::kInterrupted;
    return obs;
  }
  Json result = {{"kind", "result"},
                 {"probe", inv.probe},
                 {"seq", 2},
                 {"evidence", "positive"},
                 {"errno", nullptr}};
  if (r) {
    result["outcome"] = "admitted";
    result["http_status"] = r->status;
    result["warning"] = r->warning;
    result["detail"] = fmt::format("dry-run Pod without runtimeClassName admitted (HTTP {}){}",
                                   r->status, r->warning.empty() ? "" : "; warning: " + r->warning);
  } else {
    const ApiError& e = r.error();
    const bool rbac =
        e.code == 403 && e.message.find("cannot create resource") != std::string::npos;
    const bool policy_422 =
        e.code == 422 && (e.message.find("ValidatingAdmissionPolicy") != std::string::npos ||
                          e.message.find("denied request") != std::string::npos);
    if (e.code == 0 || e.IsQuota() || rbac || (e.code != 403 && !policy_422)) {
      obs.ending = core::Ending::kHarnessError;
      obs.harness_error = core::SanitizeUtf8(
          fmt::format("admission dry run (POST pods?dryRun=All): {}{}", e.ToString(),
                      rbac ? " (RBAC: the driver may not create pods; not an admission verdict)"
                      : e.IsQuota() ? " (quota back-pressure, not an admission verdict)"
                                    : ""));
      return obs;
    }
    result["outcome"] = "rejected";
    result["http_status"] = e.code;
    result["reason"] = e.reason;
    result["message"] = e.message;
    result["detail"] = fmt::format("HTTP {} {}: {}", e.code, e.reason, e.message.substr(0, 400));
  }
  obs.driver_facts[core::fact::kAdmissionStatus] = result["http_status"];
  // The answer travels as the probe's own records would, through the same parser.
  core::OutputCollector collector(context_.nonce);
  const Json start_rec = {{"kind", "start"}, {"probe", inv.probe}, {"seq", 1}};
  for (const Json& rec : {start_rec, result}) {
    collector.FeedStdout(fmt::format("{} {} {}\n", core::kRecordMarker, context_.nonce,
                                     rec.dump(-1, ' ', true, Json::error_handler_t::replace)));
  }
  collector.Finish(obs);
  obs.ending = core::Ending::kExited;
  obs.exit_code = 0;
  return obs;
}

void KubernetesDriver::Cleanup() {
  if (!client_ || !submitted_) return;  // nothing was ever submitted: nothing to remove
  const std::string sel = "?labelSelector=" + QueryEscape(kube::RunSelector(context_.run_id));
  // An API server that does not answer at all (transport failure, not an HTTP status) cannot be
  // cleaned now: say so once instead of spending the whole cleanup deadline on retries.
  if (auto v = client_->Call("GET", "/version", nullptr, After(settings_.api_timeout_s));
      !v && v.error().code == 0) {
    std::cerr << fmt::format(
        "sandprobe: warning: kubernetes arm {}: the API server does not answer ({}): objects of "
        "run {} in namespace {} may remain (sandprobe cleanup --kubernetes <manifest> removes "
        "them)\n",
        manifest_.name, v.error().ToString(), context_.run_id, ns_);
    std::lock_guard lock(mu_);
    live_jobs_.clear();
    return;
  }
  const auto deadline = After(std::max(45.0, settings_.api_timeout_s * 3));
  const std::pair<std::string, std::string> kinds[] = {
      {Path("/apis/batch/v1", "jobs"), "&propagationPolicy=Background"},
      {Path("/api/v1", "pods"), "&gracePeriodSeconds=1"},
      {Path("/apis/networking.k8s.io/v1", "networkpolicies"), ""}};
  for (const auto& [path, extra] : kinds)
    client_->Call("DELETE", path + sel + extra, nullptr, deadline);
  // Confirm by listing; pods may take a moment to terminate.
  std::vector<std::string> left;
  while (true) {
    left.clear();
    bool unreachable = true;  // every list failed in transport: the API server went away
    for (const auto& [path, extra] : kinds) {
      auto list = client_->Call("GET", path + sel, nullptr, deadline);
      unreachable = unreachable && !list && list.error().code == 0;
      if (!list) {
        left.push_back(fmt::format("{} (cannot list: {})", path, list.error().ToString()));
        continue;
      }
      for (const Json& item : Items(list->body)) {
        left.push_back(
            fmt::format("{}/{}", path.substr(path.rfind('/') + 1), Str(item, "/metadata/name")));
      }
    }
    if (left.empty() || unreachable || !kube::SleepFor(0.5, deadline, nullptr)) break;
  }
  if (!left.empty()) {
    std::cerr << fmt::format(
        "sandprobe: warning: kubernetes arm {}: {} object(s) of run {} still present after "
        "cleanup in namespace {}: {} (sandprobe cleanup retries)\n",
        manifest_.name, left.size(), context_.run_id, ns_, fmt::join(left, ", "));
  }
  std::lock_guard lock(mu_);
  live_jobs_.clear();
}

std::expected<std::unique_ptr<Driver>, SetupError> MakeKubernetesDriver(
    const core::Manifest& manifest, const DriverContext& context) {
  auto settings = kube::ParseSettings(manifest);
  if (!settings) {
    return std::unexpected(
        SetupError{settings.error(), "see manifests/kubernetes/ for a working section"});
  }
  return std::make_unique<KubernetesDriver>(manifest, std::move(*settings), context);
}

std::expected<std::vector<std::string>, std::string> ListSchedulableNodes(
    const kube::ApiClient& client, const std::string& label_selector, double timeout_s) {
  std::string path = "/api/v1/nodes";
  if (!label_selector.empty()) path += "?labelSelector=" + QueryEscape(label_selector);
  auto r = client.Call("GET", path, nullptr, After(timeout_s));
  if (!r) return std::unexpected("listing nodes: " + r.error().ToString());
  std::vector<std::string> names;
  for (const Json& n : Items(r->body)) {
    if (!n.is_object() || n.value("/spec/unschedulable"_json_pointer, false)) continue;
    bool tainted = false;
    for (const Json& t : n.value("/spec/taints"_json_pointer, Json::array())) {
      const std::string effect = t.is_object() ? t.value("effect", "") : "";
      tainted = tainted || effect == "NoSchedule" || effect == "NoExecute";
    }
    if (!tainted) names.push_back(Str(n, "/metadata/name"));
  }
  std::ranges::sort(names);
  return names;
}

std::expected<std::vector<Json>, std::string> RenderArm(
    const core::Manifest& manifest, const std::string& run_id,
    const std::vector<Invocation>& invocations) {
  auto settings = kube::ParseSettings(manifest);
  if (!settings) return std::unexpected(settings.error());
  std::vector<Json> out;
  if (settings->network_policy == kube::kDenyAllEgress) {
    out.push_back(kube::BuildDenyAllEgressPolicy(run_id, manifest.name));
  } else if (!settings->network_policy.empty()) {
    std::ifstream in(settings->network_policy);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      return std::unexpected(fmt::format("manifest {}: kubernetes.networkPolicy: cannot read {}",
                                         manifest.source_path, settings->network_policy));
    }
    auto p = kube::PolicyFromYaml(text.str(), settings->network_policy, run_id, manifest.name);
    if (!p) return std::unexpected(p.error());
    out.push_back(*p);
  }
  if (!out.empty() && !settings->namespace_name.empty()) {
    out.front()["metadata"]["namespace"] = settings->namespace_name;  // where the policy goes
  }
  for (const Invocation& inv : invocations) {
    kube::JobRequest req{run_id,         manifest.name,
                         inv.invocation, inv.probe,
                         inv.script,     kube::ContainerTimeout(settings->limits, inv.deadline_s),
                         inv.node};
    Json obj = inv.deploy == core::Deploy::kHarnessAdmission
                   ? kube::BuildAdmissionPod(*settings, req)
                   : kube::BuildJob(*settings, req);
    const std::string ns = settings->namespace_name.empty() ? "" : settings->namespace_name;
    if (!ns.empty()) obj["metadata"]["namespace"] = ns;
    out.push_back(std::move(obj));
  }
  return out;
}

}  // namespace sandprobe::drivers
