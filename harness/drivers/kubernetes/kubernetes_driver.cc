#include "drivers/kubernetes/kubernetes_driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/facts.h"
#include "core/json_field.h"
#include "core/output.h"
#include "drivers/kubernetes/diagnostics.h"
#include "drivers/kubernetes/job_run.h"
#include "drivers/kubernetes/kube_section.h"

namespace sandprobe::drivers {
namespace {

using Json = nlohmann::json;
using kube::After;
using kube::ApiError;
using kube::Clock;
using kube::ListItems;
using kube::QueryEscape;
using kube::SecondsLeft;
using kube::SecondsSince;
using kube::StringAt;

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

std::vector<std::string> KubernetesDriver::CleanupWarnings() const {
  std::lock_guard lock(mu_);
  return cleanup_warnings_;
}

std::expected<void, SetupError> KubernetesDriver::Prepare() {
  if (auto connected = Connect(); !connected) return connected;
  if (auto job = DryRunJob(); !job) return job;
  if (!settings_.network_policy.empty()) {
    if (auto policy = CreatePolicy(); !policy) return policy;
  }
  const bool wants_canary =
      std::ranges::any_of(context_.placeholders_used,
                          [](const std::string& p) { return p.starts_with("canary.cluster."); });
  if (!wants_canary) return {};
  bool submitted = false;
  auto canary =
      kube::ClusterCanary::Acquire(*client_, ns_, settings_, context_.run_id, context_.run_folder,
                                   context_.nonce, submitted, context_.cancel);
  if (submitted) submitted_ = true;
  if (!canary) return std::unexpected(canary.error());
  canary_ = std::move(*canary);
  deployed_canary_ = submitted;  // this arm created it (the others joined): it says so once
  if (!settings_.ip_family.empty()) {
    if (auto family = canary_->AddFamily(settings_.ip_family, context_.cancel); !family) {
      return std::unexpected(family.error());
    }
  }
  return {};
}

std::map<std::string, std::string> KubernetesDriver::Placeholders() const {
  return canary_ ? canary_->Placeholders(settings_.ip_family)
                 : std::map<std::string, std::string>{};
}

std::string KubernetesDriver::PlaceholderSource() const {
  return canary_ ? canary_->Identity() : "";
}

std::vector<std::string> KubernetesDriver::RunNotes() {
  std::vector<std::string> notes;
  if (canary_ && deployed_canary_) {
    const auto p = canary_->Placeholders();
    notes.push_back(fmt::format(
        "in-cluster canary: Pod and Service {} in namespace {} ({}, ClusterIP {}), shared by the "
        "run's kubernetes arms; its hits were read through pods/log",
        canary_->pod(), ns_, p.at("canary.cluster.name"), p.at("canary.cluster.ip")));
  }
  if (!settings_.ip_family.empty()) {
    const auto p =
        canary_ ? canary_->Placeholders(settings_.ip_family) : std::map<std::string, std::string>{};
    const std::string where =
        p.empty()
            ? "the suite aims no row at the in-cluster canary ({canary.cluster.*})"
            : fmt::format(
                  "its rows aimed at the in-cluster canary through the {} Service {} "
                  "(ClusterIP {})",
                  settings_.ip_family, p.at("canary.cluster.name"), p.at("canary.cluster.ip"));
    notes.push_back(fmt::format(
        "arm {}: kubernetes.ipFamily {}: {}, and net.node-local at the node's {} address; a row "
        "aimed at a fixed address or a name of the other family only (kubernetes.default.svc, "
        "169.254.169.254) goes over that family whatever the arm's "
        "(suites/kubernetes-dual-stack.yaml has only rows of both)",
        manifest_.name, settings_.ip_family, where, settings_.ip_family));
  }
  if (!client_ || policy_name_.empty()) return notes;
  kube::PolicyArmView view;
  view.ns = ns_;
  view.policy_name = policy_name_;
  view.server_version = server_version_;
  {
    std::lock_guard lock(mu_);
    view.pod_labels = stored_pod_labels_;
    view.host_network = stored_pod_host_network_;
  }
  std::string line =
      kube::CheckPolicyArm(*client_, view, After(std::max(20.0, settings_.api_timeout_s * 2)))
          .Line();
  // The stored labels the line names are the pods' first; the driver changed them. Said first,
  // so that a terminal's cut of the long line keeps it.
  if (const size_t at = line.find(": "); settings_.live_change && at != std::string::npos) {
    line.insert(at + 2,
                fmt::format("kubernetes.liveChange {} on each running probe pod {:g}s in "
                            "(the labels below are the pods' first); ",
                            settings_.live_change->Describe(), settings_.live_change->after_s));
  }
  notes.push_back(std::move(line));
  return notes;
}

std::string KubernetesDriver::NotJudgedReason(std::string_view measures) const {
  if (measures != "interfaces" || settings_.network_policy.empty()) return "";
  return "a NetworkPolicy filters packets and never removes interfaces (every pod has eth0); "
         "this arm is judged on its traffic rows";
}

std::expected<void, SetupError> KubernetesDriver::Connect() {
  auto conn = kube::ResolveConnection(settings_.cluster, getenv_);
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
  server_version_ = StringAt(version->body, "/gitVersion");
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
  return {};
}

namespace {

// The field paths a strict decoding error names: `unknown field "spec.x"`, `duplicate field "y"`
// (sigs.k8s.io/json strict errors, joined by apimachinery's "strict decoding error: ").
std::vector<std::string> StrictFields(const std::string& message) {
  std::vector<std::string> fields;
  for (const char* kind : {"unknown field \"", "duplicate field \""}) {
    for (size_t at = message.find(kind); at != std::string::npos; at = message.find(kind, at)) {
      at += std::string_view(kind).size();
      const size_t end = message.find('"', at);
      if (end == std::string::npos) break;
      fields.push_back(message.substr(at, end - at));
    }
  }
  return fields;
}

// "v1.24.3+k3s1" -> true when the version is known and below 1.25.
bool OlderThan125(const std::string& git_version) {
  int major = 0, minor = 0;
  return std::sscanf(git_version.c_str(), "v%d.%d", &major, &minor) == 2 &&
         (major < 1 || (major == 1 && minor < 25));
}

}  // namespace

std::expected<void, SetupError> KubernetesDriver::DryRunJob() {
  // Kubernetes API (KEP-2885, server-side field validation): with fieldValidation=Strict an
  // unknown or duplicate field is HTTP 400, Status reason BadRequest, message `Job in version
  // "v1" cannot be handled as a Job: strict decoding error: unknown field
  // "spec.template.spec.containerz"`. Without the parameter the server's default is Warn (the
  // field dropped, a `Warning: 299` header); kubectl asks for Strict (--validate=strict). A server
  // older than 1.25 ignores the parameter (the feature gate was alpha and off in 1.23-1.24, and
  // absent before) and drops the field silently, so there only the field table checked it.
  const kube::JobRequest sample{
      context_.run_id, manifest_.name, "preflight", "harness.preflight", "pass", 10, ""};
  const Json job = kube::BuildJob(settings_, sample);
  auto r = client_->Send(
      "POST", Path("/apis/batch/v1", "jobs") + "?dryRun=All&fieldValidation=Strict", job.dump(),
      After(std::max(30.0, settings_.api_timeout_s * 2)), context_.cancel);
  if (r && r->status / 100 == 2) {
    if (!r->warning.empty()) {
      warnings_.push_back(fmt::format("the API server warns about the Job this arm renders: {}",
                                      core::SanitizeUtf8(r->warning)));
    }
    if (OlderThan125(server_version_)) {
      warnings_.push_back(fmt::format(
          "the API server is {} (older than 1.25): it ignores fieldValidation=Strict, so a "
          "kubernetes.jobTemplate field it does not know would be dropped silently (only "
          "sandprobe's field table checked the names)",
          server_version_));
    }
    return {};
  }
  const kube::ApiError e = r ? kube::StatusError(*r) : r.error();
  if (e.code == 0 || e.code == 429 || e.code >= 500 || e.IsQuota()) {
    warnings_.push_back(fmt::format(
        "the preflight dry run of the Job (POST jobs?dryRun=All&fieldValidation=Strict) was not "
        "answered ({}): the API server did not check kubernetes.jobTemplate",
        e.ToString()));
    return {};
  }
  const std::string server = client_->connection().server;
  if (const std::vector<std::string> fields = StrictFields(e.message);
      e.code == 400 && !fields.empty()) {
    std::string named;
    for (const std::string& f : fields) named += (named.empty() ? "" : ", ") + f;
    return std::unexpected(SetupError{
        fmt::format("kubernetes.jobTemplate.{}: the API server {} refuses the Job this arm "
                    "renders: {}",
                    fields.size() == 1 ? fields[0] : "{" + named + "}", server, e.ToString()),
        "fix or remove that field of kubernetes.jobTemplate (kubectl explain job.spec lists the "
        "fields); sandprobe render shows the Job; nothing was created"});
  }
  if (e.code == 403 && e.message.find("cannot create resource") != std::string::npos) {
    return std::unexpected(SetupError{
        fmt::format("the API server {} does not let the driver create Jobs in namespace {} "
                    "(preflight dry run): {}",
                    server, ns_, e.ToString()),
        "the driver needs create on jobs in its namespace (ci/kubernetes/rbac.yaml); the dry run "
        "asks for the same verb as the Jobs"});
  }
  return std::unexpected(SetupError{
      fmt::format("kubernetes.jobTemplate: the API server {} refuses the Job this arm renders "
                  "(preflight dry run, POST jobs?dryRun=All&fieldValidation=Strict): {}",
                  server, e.ToString()),
      e.code == 403 ? "the cluster's admission refuses the Job: give what it demands in "
                      "kubernetes.jobTemplate; sandprobe render shows the Job"
                    : "fix the value in kubernetes.jobTemplate; sandprobe render shows the Job"});
}

std::expected<void, SetupError> KubernetesDriver::CreatePolicy() {
  Json policy;
  if (settings_.network_policy == kube::kDenyAllEgress) {
    policy = kube::BuildDenyAllEgressPolicy(context_.run_id, manifest_.name);
  } else {
    auto text = kube::ReadKubeFile(settings_.network_policy);
    if (!text) {
      return std::unexpected(
          SetupError{fmt::format("{}: kubernetes.networkPolicy: cannot read {}: {}",
                                 manifest_.source_path, settings_.network_policy, text.error()),
                     "give deny-all-egress or a NetworkPolicy YAML file"});
    }
    auto p = kube::PolicyFromYaml(*text, settings_.network_policy, context_.run_id, manifest_.name);
    if (!p) return std::unexpected(SetupError{p.error(), "give one NetworkPolicy object"});
    policy = *p;
  }
  submitted_ = true;  // from here on, Cleanup() has something to look for
  kube::AnnotateRunFolder(policy, context_.run_folder);
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
  {
    const Json spec = policy.value("spec", Json::object());
    const Json types = spec.value("policyTypes", Json::array());
    const bool egress_type =
        (types.is_array() && std::ranges::find(types, Json("Egress")) != types.end()) ||
        (!types.is_array() && spec.contains("egress"));
    const Json rules = spec.value("egress", Json::array());
    policy_denies_all_egress_ = egress_type && (!rules.is_array() || rules.empty());
    policy_selector_ = spec.value("podSelector", Json::object());
  }
  // Policies add up: another policy of the namespace that selects this arm's pods and allows
  // egress reopens what this one denies. Listed once (list on networkpolicies is granted).
  if (auto list = client_->Call("GET", Path("/apis/networking.k8s.io/v1", "networkpolicies"),
                                nullptr, After(settings_.api_timeout_s));
      list) {
    const kube::JobRequest sample{context_.run_id, manifest_.name, "sample", "x", "", 10, ""};
    const Json labels = kube::BuildJob(settings_, sample)
                            .value("/spec/template/metadata/labels"_json_pointer, Json::object());
    for (const Json& p : ListItems(list->body)) {
      const std::string name = StringAt(p, "/metadata/name");
      if (!p.is_object() || name == policy_name_) continue;
      const Json spec = p.value("spec", Json::object());
      const Json types = spec.is_object() ? spec.value("policyTypes", Json::array()) : Json();
      const Json rules = spec.is_object() ? spec.value("egress", Json::array()) : Json();
      const bool egress =
          types.is_array() && std::ranges::find(types, Json("Egress")) != types.end();
      if (!egress || !rules.is_array() || rules.empty()) continue;
      const Json selector = spec.value("podSelector", Json::object());
      if (kube::SelectorMatches(selector, labels).value_or(true)) {
        other_policies_allowing_.push_back(name);
      }
    }
  }
  policy_created_at_ = StringAt(created->body, "/metadata/creationTimestamp");
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
  const auto started = std::chrono::system_clock::now();
  JobRun run(*this, inv, cancel);
  if (!client_) return run.Fail("kubernetes driver used before Prepare()");
  if (inv.deploy == core::Deploy::kHarnessAdmission) return Admission(inv, cancel, run.Take());
  double phase = SteadySeconds();  // the timeline: each step's phase ends where the next begins
  const bool aged = run.WaitForPolicyAge();
  phase = run.MarkPhase("policy-age", phase);
  if (!aged) return run.Take();
  run.BuildJob();
  const bool created = run.CreateJob();
  phase = run.MarkPhase("create", phase);
  if (!created) return run.Take();
  run.WatchPods();
  phase = run.MarkPodPhases(phase);
  run.RecordPodFacts();
  run.NoteHarnessStop();
  run.ReadLogs();
  run.RecordStatusFacts();
  phase = run.MarkPhase("logs+status", phase);
  run.RemoveJob();
  phase = run.MarkPhase("delete", phase);
  core::Observation obs = run.Decide();
  if (canary_) {
    AddCanaryHits(inv, started, obs);
    obs.timeline.push_back(PhaseSince("canary-log", phase));
  }
  return obs;
}

void KubernetesDriver::AddCanaryHits(const Invocation& inv,
                                     std::chrono::system_clock::time_point started,
                                     core::Observation& obs) const {
  obs.driver_facts[core::fact::kClusterCanary] = canary_->pod();
  std::string error;
  auto hits = canary_->HitsFor(inv.invocation, started, &error);
  // The probe saw an answer, or its containment rests on the canary's silence
  // (result canary_decides: net.held-open's "cut"), and the log has no line yet: container
  // logs can lag by a moment.
  const bool answered = obs.result && (core::StringField(*obs.result, "outcome") == "reached" ||
                                       core::BoolField(*obs.result, "canary_decides"));
  for (int retry = 0; hits.empty() && answered && error.empty() && retry < 3; ++retry) {
    kube::SleepFor(0.5, After(1), nullptr);
    hits = canary_->HitsFor(inv.invocation, started, &error);
  }
  if (!error.empty()) obs.driver_facts[core::fact::kClusterCanaryLog] = error;
  for (core::CanaryHit& h : hits) obs.canary_hits.push_back(std::move(h));
}

core::Observation KubernetesDriver::Admission(const Invocation& inv,
                                              const std::atomic<bool>& cancel,
                                              core::Observation obs) {
  const auto start = Clock::now();
  kube::JobRequest req{context_.run_id, manifest_.name,
                       inv.invocation,  inv.probe,
                       inv.script,      kube::ContainerTimeout(settings_.limits, inv.deadline_s),
                       inv.node,        inv.ip_family};
  const Json pod = kube::BuildAdmissionPod(settings_, req);
  obs.driver_facts[core::fact::kAdmissionPod] = pod["metadata"]["name"];
  const double dry_run = SteadySeconds();
  auto r = client_->Call("POST", Path("/api/v1", "pods") + "?dryRun=All", pod,
                         After(std::max(inv.deadline_s, 60.0)), &cancel);
  obs.duration_s = SecondsSince(start);
  obs.timeline.push_back(PhaseSince("dry-run", dry_run));
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
    std::lock_guard lock(mu_);
    cleanup_warnings_.push_back(fmt::format(
        "kubernetes arm {}: the API server does not answer ({}): objects of run {} in namespace "
        "{} may remain (once it answers, `sandprobe cleanup --kubernetes {} --run {}` removes "
        "them)",
        manifest_.name, v.error().ToString(), context_.run_id, ns_, manifest_.source_path,
        context_.run_id));
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
  // Services (the in-cluster canary's): listed and deleted by name, which every API version
  // serves (deletecollection on services is not guaranteed).
  const std::string services = Path("/api/v1", "services");
  if (auto list = client_->Call("GET", services + sel, nullptr, deadline); list) {
    for (const Json& item : ListItems(list->body)) {
      client_->Call("DELETE", services + "/" + StringAt(item, "/metadata/name"), nullptr, deadline);
    }
  }
  // Confirm by listing; pods may take a moment to terminate.
  std::vector<std::string> left;
  while (true) {
    left.clear();
    bool unreachable = true;  // every list failed in transport: the API server went away
    for (const auto& [path, extra] :
         {kinds[0], kinds[1], kinds[2], std::pair<std::string, std::string>{services, ""}}) {
      auto list = client_->Call("GET", path + sel, nullptr, deadline);
      unreachable = unreachable && !list && list.error().code == 0;
      if (!list) {
        left.push_back(fmt::format("{} (cannot list: {})", path, list.error().ToString()));
        continue;
      }
      for (const Json& item : ListItems(list->body)) {
        left.push_back(fmt::format("{}/{}", path.substr(path.rfind('/') + 1),
                                   StringAt(item, "/metadata/name")));
      }
    }
    if (left.empty() || unreachable || !kube::SleepFor(0.5, deadline, nullptr)) break;
  }
  std::lock_guard lock(mu_);
  if (!left.empty()) {
    cleanup_warnings_.push_back(fmt::format(
        "kubernetes arm {}: {} object(s) of run {} still present after cleanup in namespace {}: "
        "{} (sandprobe cleanup retries)",
        manifest_.name, left.size(), context_.run_id, ns_, fmt::join(left, ", ")));
  }
  live_jobs_.clear();
}

std::expected<std::unique_ptr<Driver>, SetupError> MakeKubernetesDriver(
    const core::Manifest& manifest, const DriverContext& context) {
  auto settings = kube::SettingsOf(manifest);
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
  for (const Json& n : ListItems(r->body)) {
    if (!n.is_object() || n.value("/spec/unschedulable"_json_pointer, false)) continue;
    bool tainted = false;
    for (const Json& t : n.value("/spec/taints"_json_pointer, Json::array())) {
      const std::string effect = t.is_object() ? t.value("effect", "") : "";
      tainted = tainted || effect == "NoSchedule" || effect == "NoExecute";
    }
    if (!tainted) names.push_back(StringAt(n, "/metadata/name"));
  }
  std::ranges::sort(names);
  return names;
}

std::expected<std::vector<Json>, std::string> RenderArm(const core::Manifest& manifest,
                                                        const std::string& run_id,
                                                        const std::vector<Invocation>& invocations,
                                                        bool with_canary) {
  auto settings = kube::SettingsOf(manifest);
  if (!settings) return std::unexpected(settings.error());
  std::vector<Json> out;
  if (settings->network_policy == kube::kDenyAllEgress) {
    out.push_back(kube::BuildDenyAllEgressPolicy(run_id, manifest.name));
  } else if (!settings->network_policy.empty()) {
    auto text = kube::ReadKubeFile(settings->network_policy);
    if (!text) {
      return std::unexpected(
          fmt::format("manifest {}: kubernetes.networkPolicy: cannot read {}: {}",
                      manifest.source_path, settings->network_policy, text.error()));
    }
    auto p = kube::PolicyFromYaml(*text, settings->network_policy, run_id, manifest.name);
    if (!p) return std::unexpected(p.error());
    out.push_back(*p);
  }
  if (!out.empty() && !settings->namespace_name.empty()) {
    out.front()["metadata"]["namespace"] = settings->namespace_name;  // where the policy goes
  }
  if (with_canary) {
    // The default Service, and with kubernetes.ipFamily the one of that family the arm aims at.
    std::vector<std::string> families = {""};
    if (!settings->ip_family.empty()) families.push_back(settings->ip_family);
    for (const std::string& family : families) {
      Json svc = kube::BuildCanaryService(run_id, family);
      if (!settings->namespace_name.empty()) {
        svc["metadata"]["namespace"] = settings->namespace_name;
      }
      out.push_back(std::move(svc));
    }
    out.push_back(kube::BuildCanaryPod(*settings, run_id, "render",
                                       std::string(kube::ClusterCanaryScript()), 6 * 3600));
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
