#include "drivers/kubernetes/job_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "core/facts.h"
#include "core/output.h"
#include "drivers/kubernetes/diagnostics.h"

namespace sandprobe::drivers {
namespace kube {

std::string StringAt(const nlohmann::json& j, const char* pointer) {
  if (!j.is_object()) return "";
  const nlohmann::json::json_pointer p(pointer);
  if (!j.contains(p) || !j.at(p).is_string()) return "";
  return j.at(p).get<std::string>();
}

nlohmann::json ListItems(const nlohmann::json& body) {
  return body.is_object() && body.contains("items") && body["items"].is_array()
             ? body["items"]
             : nlohmann::json::array();
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace kube

namespace {

using Json = nlohmann::json;
using kube::After;
using kube::ApiError;
using kube::Clock;
using kube::QueryEscape;
using kube::SecondsLeft;
using kube::SecondsSince;
using kube::StringAt;

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

std::string Phase(const Json& pod) { return StringAt(pod, "/status/phase"); }

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
    const std::string name = StringAt(p, "/metadata/name");
    const std::string ts = StringAt(p, "/metadata/creationTimestamp");
    if (best.empty() || ts > best_ts) best = name, best_ts = ts;
  }
  return best;
}

}  // namespace

KubernetesDriver::JobRun::JobRun(KubernetesDriver& driver, const Invocation& inv,
                                 const std::atomic<bool>& cancel)
    : driver_(driver), inv_(inv), cancel_(cancel) {
  obs_.driver_facts[core::fact::kDriver] = "kubernetes";
  obs_.driver_facts[core::fact::kNamespace] = driver_.ns_;
  if (!driver_.warnings_.empty()) obs_.driver_facts[core::fact::kWarnings] = driver_.warnings_;
  start_ = Clock::now();
}

KubernetesDriver::JobRun::~JobRun() {
  if (live_change_.joinable()) {
    live_change_stop_ = true;
    live_change_.join();
  }
}

void KubernetesDriver::JobRun::StartLiveChange() {
  const auto& change = driver_.settings_.live_change;
  if (!change || !running_since_ || live_change_.joinable()) return;
  const std::string pod = StringAt(pod_, "/metadata/name");
  labels_before_change_ = pod_.value("/metadata/labels"_json_pointer, nlohmann::json::object());
  // `after` counts from the probe's start: the container first seen running, plus the seconds
  // stderr_tail.py sleeps first (podSettle, the -settled twin's wait).
  const auto at = *running_since_ +
                  std::chrono::milliseconds(static_cast<int64_t>(
                      std::llround((change->after_s + driver_.settings_.pod_settle_s) * 1000)));
  live_change_ = std::thread([this, pod, at, patch = change->Patch()] {
    while (Clock::now() < at) {
      if (live_change_stop_.load() || cancel_.load()) {
        live_change_error_ = cancel_.load() ? "the run was interrupted before the change"
                                            : "the probe container ended before the change";
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    live_change_sent_ms_ = UnixMsNow();
    auto done = driver_.client_->Call("PATCH", driver_.Path("/api/v1", "pods", pod), patch,
                                      After(driver_.settings_.api_timeout_s), &cancel_);
    if (!done) {
      live_change_error_ = "PATCH pods/" + pod + ": " + done.error().ToString();
      return;
    }
    live_change_ms_ = UnixMsNow();
  });
}

void KubernetesDriver::JobRun::FinishLiveChange() {
  const auto& change = driver_.settings_.live_change;
  if (!change) return;
  if (live_change_.joinable()) {
    live_change_stop_ = true;
    live_change_.join();
  } else {
    live_change_error_ = "no probe container was seen running";
  }
  obs_.driver_facts[core::fact::kLiveChange] = change->Describe();
  obs_.driver_facts[core::fact::kLiveChangeSettleS] = change->settle_s;
  // The harness's own bound on how long the probe could try: when the watch first saw the
  // container ended, on the same clock as the change.
  if (finished_ms_ > 0) obs_.driver_facts[core::fact::kLiveChangeEndedUnixMs] = finished_ms_;
  if (live_change_ms_ > 0) {
    obs_.driver_facts[core::fact::kLiveChangeSentUnixMs] = live_change_sent_ms_;
    obs_.driver_facts[core::fact::kLiveChangeUnixMs] = live_change_ms_;
  } else {
    obs_.driver_facts[core::fact::kLiveChangeError] = core::SanitizeUtf8(live_change_error_);
  }
}

void KubernetesDriver::JobRun::MarkFailed(std::string why) {
  obs_.ending = core::Ending::kHarnessError;
  obs_.harness_error = core::SanitizeUtf8(why);
  obs_.duration_s = SecondsSince(start_);
}

core::Observation KubernetesDriver::JobRun::Fail(std::string why) {
  MarkFailed(std::move(why));
  return Take();
}

void KubernetesDriver::JobRun::MarkInterrupted() {
  obs_.ending = core::Ending::kInterrupted;
  obs_.duration_s = SecondsSince(start_);
}

bool KubernetesDriver::JobRun::WaitForPolicyAge() {
  const kube::KubeSettings& settings = driver_.settings_;
  if (driver_.policy_stored_ && settings.min_policy_age_s > 0) {
    const double wait = settings.min_policy_age_s - SecondsSince(*driver_.policy_stored_);
    if (wait > 0) {
      obs_.driver_facts[core::fact::kPolicyWaitS] = Round1(wait);
      if (!kube::SleepFor(wait, After(wait + 1), &cancel_)) {
        MarkInterrupted();
        return false;
      }
    }
  }
  return true;
}

void KubernetesDriver::JobRun::BuildJob() {
  const kube::KubeSettings& settings = driver_.settings_;
  kube::JobRequest req{driver_.context_.run_id,
                       driver_.manifest_.name,
                       inv_.invocation,
                       inv_.probe,
                       inv_.script,
                       kube::ContainerTimeout(settings.limits, inv_.deadline_s),
                       inv_.node,
                       inv_.ip_family};
  job_ = kube::BuildJob(settings, req);
  kube::AnnotateRunFolder(job_, driver_.context_.run_folder);
  name_ = job_["metadata"]["name"];
  obs_.driver_facts[core::fact::kJob] = name_;
  if (!driver_.policy_name_.empty()) {
    obs_.driver_facts[core::fact::kNetworkPolicy] = driver_.policy_name_;
    obs_.driver_facts[core::fact::kPolicyCreatedAt] = driver_.policy_created_at_;
    obs_.driver_facts[core::fact::kPolicyDeniesAllEgress] = driver_.policy_denies_all_egress_;
    if (!driver_.other_policies_allowing_.empty()) {
      obs_.driver_facts[core::fact::kOtherPoliciesAllowingEgress] =
          driver_.other_policies_allowing_;
    }
    obs_.driver_facts[core::fact::kPolicyAgeS] = Round1(SecondsSince(*driver_.policy_stored_));
  }
  if (settings.pod_settle_s > 0) obs_.driver_facts[core::fact::kPodSettleS] = settings.pod_settle_s;
}

bool KubernetesDriver::JobRun::CreateJob() {
  created_at_ = Clock::now();
  start_deadline_ = After(driver_.settings_.pod_start_timeout_s);
  {
    std::lock_guard lock(driver_.mu_);
    driver_.live_jobs_.insert(name_);  // before the POST: a create that times out may still land
  }
  driver_.submitted_ = true;
  auto created = driver_.client_->Call("POST", driver_.Path("/apis/batch/v1", "jobs"), job_,
                                       start_deadline_, &cancel_);
  if (created) {
    uid_ = StringAt(created->body, "/metadata/uid");
    return true;
  }
  if (created.error().cancelled) {
    driver_.DeleteJob(name_, true);
    MarkInterrupted();
    return false;
  }
  driver_.DeleteJob(name_, true);
  MarkFailed(fmt::format("creating Job {}: {}{}", name_, created.error().ToString(),
                         created.error().IsQuota()
                             ? " (quota back-pressure did not clear before podStartTimeout)"
                             : ""));
  return false;
}

Clock::time_point KubernetesDriver::JobRun::HarnessDeadline() const {
  // A settled pod waits pod_settle_s before the probe starts: not the probe's time.
  const double budget_s = inv_.deadline_s + driver_.settings_.pod_settle_s;
  return running_since_ ? *running_since_ + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(budget_s))
                        : start_deadline_;
}

bool KubernetesDriver::JobRun::PodFinished() const { return pod_.is_object() && Finished(pod_); }

void KubernetesDriver::JobRun::Absorb(const Json& p) {
  if (!p.is_object()) return;
  if (!OwnedByThisJob(p)) return;  // a pod of an earlier Job of the same name, being deleted
  if (pod_.is_object() && StringAt(p, "/metadata/name") != StringAt(pod_, "/metadata/name") &&
      StringAt(p, "/metadata/creationTimestamp") < StringAt(pod_, "/metadata/creationTimestamp")) {
    return;  // an older pod of the same Job
  }
  pod_ = p;
  if (finished_ms_ == 0 && Finished(pod_)) {  // when the harness first saw the container ended
    finished_ms_ = UnixMsNow();
  }
  if (!running_since_ && Running(pod_)) {
    running_since_ = Clock::now();
    obs_.driver_facts[core::fact::kStartWaitS] = Round1(SecondsSince(created_at_));
  }
}

bool KubernetesDriver::JobRun::OwnedByThisJob(const Json& p) const {
  if (uid_.empty()) return true;
  const Json refs = p.value("/metadata/ownerReferences"_json_pointer, Json::array());
  if (!refs.is_array()) return true;
  for (const Json& r : refs) {
    if (r.is_object() && r.value("kind", "") == "Job" && r.value("controller", false)) {
      return r.value("uid", "") == uid_;
    }
  }
  return true;  // no controller reference (yet): the job-name selector is all there is
}

void KubernetesDriver::JobRun::AbsorbNewest(const Json& list) {
  ++relists_;
  Json items = Json::array();
  for (const Json& p : kube::ListItems(list)) {
    if (p.is_object() && OwnedByThisJob(p)) items.push_back(p);
  }
  const std::string newest = NewestPodName(items);
  for (const Json& p : items) {
    if (StringAt(p, "/metadata/name") == newest) Absorb(p);
  }
}

double KubernetesDriver::JobRun::MarkPhase(const char* name, double start) {
  obs_.timeline.push_back(PhaseSince(name, start));
  return obs_.timeline.back().end_s;
}

double KubernetesDriver::JobRun::MarkPodPhases(double start) {
  if (running_since_) {
    const double ran = std::chrono::duration<double>(running_since_->time_since_epoch()).count();
    obs_.timeline.push_back({"pod-start", start, ran});
    return MarkPhase("running", ran);
  }
  return MarkPhase("pod-start", start);
}

void KubernetesDriver::JobRun::WatchPods() {
  // List (resourceVersion), watch from there; re-list on 410 or a broken stream. The harness
  // deadline starts when the container runs.
  pods_path_ =
      driver_.Path("/api/v1", "pods") + "?labelSelector=" + QueryEscape("job-name=" + name_);
  last_check_ = Clock::now() - std::chrono::seconds(10);
  while (true) {
    StartLiveChange();  // kubernetes.liveChange, once a container runs
    if (cancel_.load()) break;
    if (PodFinished()) break;
    if (Clock::now() >= HarnessDeadline()) break;
    if (pod_deleted_) {  // deleted under us: the Job controller (deadline) or someone else
      ExplainDeletedPod();
      break;
    }
    auto list = driver_.client_->Call("GET", pods_path_, nullptr, HarnessDeadline(), &cancel_);
    if (!list) {
      if (!list.error().cancelled) last_api_error_ = list.error().ToString();
      if (list.error().cancelled || list.error().deadline) continue;
      setup_failure_ = "listing pods: " + list.error().ToString();
      break;
    }
    AbsorbNewest(list->body);
    StartLiveChange();  // a container first seen running through a re-list
    if (PodFinished()) break;
    if (!running_since_ && SecondsSince(last_check_) >= 2 && CheckWhyNoPodRuns()) break;
    if (!WatchFrom(StringAt(list->body, "/metadata/resourceVersion"))) break;
  }
  // A pod the Job controller stopped (activeDeadlineSeconds) ends like any SIGTERM, exit 143:
  // only the Job's condition says who stopped it. On a real cluster the pod's end was seen
  // before any Job condition the watch had read (docs/cluster.md "Where the fake was wrong").
  if (const Json* t = Terminated(pod_);
      t != nullptr && !cancel_.load() && job_failure_.empty() && t->value("exitCode", 0) >= 128) {
    // The Job controller writes a failed Job's condition (FailureTarget or Failed, with
    // BackoffLimitExceeded when no deadline stopped it) after it has seen the pod fail: re-read
    // for a bounded while instead of once, so the reason does not depend on who was first.
    const auto until = Clock::now() + std::chrono::seconds(3);
    while (true) {
      ReadJobCondition();
      if (!job_failure_.empty() || cancel_.load() || Clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
}

void KubernetesDriver::JobRun::ReadJobCondition() {
  if (auto j = driver_.client_->Call("GET", driver_.Path("/apis/batch/v1", "jobs", name_), nullptr,
                                     After(driver_.settings_.api_timeout_s), &cancel_)) {
    job_failure_ = JobFailure(j->body);
  }
}

void KubernetesDriver::JobRun::ExplainDeletedPod() {
  ReadJobCondition();
  if (job_failure_.empty())
    setup_failure_ = "pod " + StringAt(pod_, "/metadata/name") + " was deleted before it finished";
}

bool KubernetesDriver::JobRun::CheckWhyNoPodRuns() {
  last_check_ = Clock::now();
  const double api_timeout_s = driver_.settings_.api_timeout_s;
  if (auto j = driver_.client_->Call("GET", driver_.Path("/apis/batch/v1", "jobs", name_), nullptr,
                                     After(api_timeout_s), &cancel_)) {
    job_failure_ = JobFailure(j->body);
  }
  auto ev = driver_.client_->Call("GET",
                                  driver_.Path("/api/v1", "events") + "?fieldSelector=" +
                                      QueryEscape("involvedObject.name=" + name_),
                                  nullptr, After(api_timeout_s), &cancel_);
  if (ev) {
    for (const Json& e : kube::ListItems(ev->body)) {
      if (!e.is_object() || e.value("reason", "") != "FailedCreate") continue;
      std::string message = core::SanitizeUtf8(e.value("message", "").substr(0, 1000));
      if (kube::IsQuotaMessage(message) || kube::IsQuotaConflictMessage(message)) {
        // Quota back-pressure on the pod, not a refusal: the Job controller creates the pod
        // itself once the quota frees (measured on a real cluster: a run's pods and its canary
        // filled `pods: 8`), or retries after the quota admission lost a race to another create
        // (409 "Operation cannot be fulfilled on resourcequotas", measured with 15 Jobs at
        // once; docs/traps.md trap 60). Keep waiting until podStartTimeout.
        quota_wait_ = std::move(message);
        continue;
      }
      failed_create_ = std::move(message);
    }
  }
  if (!job_failure_.empty() || !failed_create_.empty()) return true;
  const std::string waiting = Waiting(pod_);
  if (waiting.starts_with("InvalidImageName") ||
      waiting.starts_with("CreateContainerConfigError")) {
    setup_failure_ = "the probe container cannot start: " + waiting;
    return true;
  }
  return false;
}

bool KubernetesDriver::JobRun::WatchFrom(const std::string& rv) {
  const double left = SecondsLeft(HarnessDeadline());
  const std::string watch_path =
      fmt::format("{}&watch=1&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}",
                  pods_path_, QueryEscape(rv), std::clamp(static_cast<int>(left) + 1, 1, 60));
  ApiError werr;
  const kube::WatchEnd end = driver_.client_->Watch(
      watch_path, HarnessDeadline(), cancel_,
      [this](const std::string& type, const Json& object) { return OnWatchEvent(type, object); },
      &werr);
  if (end == kube::WatchEnd::kGone) ++gone_;
  if (end == kube::WatchEnd::kFailed && werr.code != 410) {
    setup_failure_ = "watching pods: " + werr.ToString();
    return false;
  }
  return true;
}

bool KubernetesDriver::JobRun::OnWatchEvent(const std::string& type, const Json& object) {
  if (type == "ADDED" || type == "MODIFIED") {
    const bool was_running = running_since_.has_value();
    Absorb(object);
    if (Finished(pod_) || (!was_running && running_since_)) return false;
  } else if (type == "DELETED" && pod_.is_object() &&
             StringAt(object, "/metadata/name") == StringAt(pod_, "/metadata/name")) {
    Absorb(object);
    pod_deleted_ = !Finished(pod_);
    return false;
  }
  return true;
}

void KubernetesDriver::JobRun::RecordPodFacts() {
  FinishLiveChange();
  obs_.driver_facts[core::fact::kPodRelists] = relists_;
  if (gone_ > 0) obs_.driver_facts[core::fact::kWatchGone] = gone_;
  pod_name_ = StringAt(pod_, "/metadata/name");
  if (!pod_name_.empty()) obs_.driver_facts[core::fact::kPod] = pod_name_;
  if (pod_.is_object() && pod_.value("/spec/hostNetwork"_json_pointer, nlohmann::json()) == true) {
    obs_.driver_facts[core::fact::kHostNetwork] = true;
  }
  // The pod's labels before any live change (the thread's copy from when it started), else as
  // last seen: what the policy selected when the probe began.
  const nlohmann::json first_labels =
      !labels_before_change_.is_null() ? labels_before_change_
      : pod_.is_object() ? pod_.value("/metadata/labels"_json_pointer, nlohmann::json())
                         : nlohmann::json();
  if (!driver_.policy_name_.empty() && pod_.is_object()) {
    const nlohmann::json& labels = first_labels;
    if (auto selects = kube::SelectorMatches(driver_.policy_selector_, labels)) {
      obs_.driver_facts[core::fact::kPolicySelectsPod] = *selects;
    }
  }
  if (!pod_name_.empty()) {  // for the policy arm's "ruled out" note: labels as stored
    std::lock_guard lock(driver_.mu_);
    if (driver_.stored_pod_labels_.is_null() && pod_.is_object()) {
      driver_.stored_pod_labels_ =
          first_labels.is_object() ? first_labels : nlohmann::json::object();
      driver_.stored_pod_host_network_ =
          pod_.value("/spec/hostNetwork"_json_pointer, nlohmann::json()) == true;
    }
  }
  if (const std::string node = StringAt(pod_, "/spec/nodeName"); !node.empty()) {
    obs_.driver_facts[core::fact::kNode] = node;
  }
  finished_ = PodFinished();
}

void KubernetesDriver::JobRun::NoteHarnessStop() {
  if (!finished_ && !cancel_.load() && running_since_ && Clock::now() >= HarnessDeadline()) {
    harness_stop_ = true;
    obs_.ending = core::Ending::kDeadline;
    obs_.driver_facts[core::fact::kEndedBy] = "harness deadline";
  }
  if (!finished_ && cancel_.load()) {
    harness_stop_ = true;
    obs_.ending = core::Ending::kInterrupted;
  }
}

void KubernetesDriver::JobRun::ReadLogs() {
  // Logs before anything deletes the pod (a Job-level deadline already did: RecordStatusFacts
  // says so).
  const kube::KubeSettings& settings = driver_.settings_;
  if (!pod_name_.empty() && (finished_ || running_since_)) {
    core::OutputCollector collector(driver_.context_.nonce);
    const std::string log_path = driver_.Path("/api/v1", "pods", pod_name_) +
                                 fmt::format("/log?container={}&limitBytes={}",
                                             kube::kContainerName, settings.log_limit_bytes);
    for (int attempt = 0; attempt < 3 && !logs_ok_; ++attempt) {
      auto logs =
          driver_.client_->Send("GET", log_path, "", After(std::max(30.0, settings.api_timeout_s)));
      if (logs && logs->status == 200) {
        collector.FeedStdout(logs->text);
        logs_ok_ = true;
      } else if (logs && logs->status == 404) {
        break;
      } else {
        kube::SleepFor(0.3 * (attempt + 1), After(5), nullptr);
      }
    }
    // stderr: the container's termination message, where pid 1 (stderr_tail.py) leaves the last
    // 4 KiB of the probe's stderr, kept out of pods/log (trap 44). Only once the container ended:
    // a container the harness stops is still running here, and its Job goes next.
    const Json* terminated = Terminated(pod_);
    const bool stderr_kept = terminated != nullptr && terminated->contains("message") &&
                             (*terminated)["message"].is_string();
    if (stderr_kept) collector.FeedStderr((*terminated)["message"].get<std::string>());
    collector.Finish(obs_);
    obs_.driver_facts[core::fact::kLogs] =
        fmt::format("{}; stderr: {}",
                    // An evicted pod's log is gone: the kubelet answers 200 with its own words
                    // or nothing (docs/traps.md, trap 59).
                    !logs_ok_              ? "stdout unavailable (pods/log)"
                    : obs_.records.empty() ? "stdout with no probe record (pods/log)"
                                           : "stdout (pods/log)",
                    terminated == nullptr ? "not read (the container had not ended)"
                    : stderr_kept         ? "its last 4 KiB (termination message)"
                                          : "none (no termination message)");
  }
  obs_.duration_s = SecondsSince(running_since_.value_or(created_at_));
}

void KubernetesDriver::JobRun::RecordStatusFacts() {
  if (const Json* t = Terminated(pod_)) {
    const std::string reason = t->value("reason", "");
    obs_.driver_facts[core::fact::kTerminatedReason] = reason;
    obs_.driver_facts[core::fact::kExitCode] = t->value("exitCode", -1);
    obs_.driver_facts[core::fact::kOomKilled] = reason == "OOMKilled";
    if (t->value("signal", 0) != 0) obs_.driver_facts[core::fact::kSignal] = t->value("signal", 0);
    if (!harness_stop_) {
      obs_.ending = core::Ending::kExited;
      obs_.exit_code = t->value("exitCode", -1);
    }
  }
  const std::string pod_reason = StringAt(pod_, "/status/reason");
  if (!pod_reason.empty()) {
    obs_.driver_facts[core::fact::kPodReason] = pod_reason;
    obs_.driver_facts[core::fact::kPodMessage] =
        core::SanitizeUtf8(StringAt(pod_, "/status/message").substr(0, 500));
  }
  if (pod_reason == "Evicted") {
    obs_.driver_facts[core::fact::kEvicted] = true;
    if (Terminated(pod_) == nullptr && !harness_stop_) {
      obs_.ending = core::Ending::kSignaled;  // the kubelet killed it; no exit status recorded
      obs_.signal = 9;
    }
  }
  if (!job_failure_.empty()) {
    obs_.driver_facts[core::fact::kJobCondition] = job_failure_;
    if (job_failure_ == "DeadlineExceeded" && !logs_ok_) {
      obs_.driver_facts[core::fact::kLogs] =
          "gone: the Job's activeDeadlineSeconds ended it and deleted its pods and logs";
    }
    if (Terminated(pod_) == nullptr && obs_.ending == core::Ending::kNotRun &&
        failed_create_.empty()) {
      obs_.ending = core::Ending::kSignaled;  // the Job controller killed the pod
      obs_.signal = 9;
    }
  }
}

void KubernetesDriver::JobRun::RemoveJob() {
  deleted_ = driver_.DeleteJob(name_, harness_stop_ || !finished_);
  obs_.driver_facts[core::fact::kJobDeleted] = deleted_.has_value();
}

core::Observation KubernetesDriver::JobRun::Decide() {
  if (!failed_create_.empty()) {
    obs_.driver_facts[core::fact::kFailedCreate] = failed_create_;
    return Fail(fmt::format("Job {}: FailedCreate: {}", name_, failed_create_));
  }
  if (!setup_failure_.empty()) return Fail(fmt::format("Job {}: {}", name_, setup_failure_));
  if (obs_.ending == core::Ending::kNotRun) {
    if (cancel_.load()) {
      obs_.ending = core::Ending::kInterrupted;
    } else {
      const std::string waiting = Waiting(pod_);
      if (pod_name_.empty() && !last_api_error_.empty()) {
        return Fail(
            fmt::format("Job {}: the API server stopped answering before a pod ran "
                        "(last error: {})",
                        name_, last_api_error_));
      }
      return Fail(fmt::format(
          "Job {}: no running container within podStartTimeout ({:g}s){}", name_,
          driver_.settings_.pod_start_timeout_s,
          pod_name_.empty()
              ? (quota_wait_.empty() ? std::string(": no pod was created")
                                     : ": no pod was created (quota back-pressure did not "
                                       "clear: " +
                                           quota_wait_ + ")")
              : fmt::format(": pod {} phase {}{}", pod_name_, Phase(pod_),
                            waiting.empty() ? "" : ", " + waiting)));
    }
  }
  if (!deleted_) return Fail(deleted_.error() + " (the API server stopped answering?)");
  if (cancel_.load() && obs_.ending != core::Ending::kInterrupted) {
    obs_.ending = core::Ending::kInterrupted;
  }
  return Take();
}

}  // namespace sandprobe::drivers
