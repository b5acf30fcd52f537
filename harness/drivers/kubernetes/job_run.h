// One Job-backed KubernetesDriver::Execute, as named steps that Execute calls in order. The run
// owns the invocation's Observation and the state one step hands to the next: the Job, the newest
// pod of the Job seen so far, when its probe container started, and why the watch stopped.
//
// Timing (kubernetes_driver.h): podStartTimeout runs from the Job's creation until a container
// runs; the harness deadline (Invocation.deadline_s) runs from the container's start. Facts are
// written under the names in core/facts.h; each step says which it writes and where they come
// from.
#pragma once

#include <atomic>
#include <expected>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "core/observation.h"
#include "drivers/kubernetes/kubernetes_driver.h"

namespace sandprobe::drivers {
namespace kube {

// A string at a JSON pointer ("/metadata/name"); "" when absent, not a string, or when `j` is not
// an object. Never throws.
std::string StringAt(const nlohmann::json& j, const char* pointer);
// The `items` array of a list response; [] when the body is not a list.
nlohmann::json ListItems(const nlohmann::json& body);
// Seconds (steady clock) from `t` to now.
double SecondsSince(Clock::time_point t);

}  // namespace kube

// Per invocation; not shared between threads (the driver's live-Job set is, under its mutex).
class KubernetesDriver::JobRun {
 public:
  using Clock = kube::Clock;

  // Starts the run's clock (duration_s of every early ending) and writes the facts each
  // invocation carries, admission dry runs too: driver, namespace, warnings (Prepare()'s).
  JobRun(KubernetesDriver& driver, const Invocation& inv, const std::atomic<bool>& cancel);
  // Stops and joins the live change's thread, if one runs.
  ~JobRun();
  JobRun(const JobRun&) = delete;
  JobRun& operator=(const JobRun&) = delete;

  // The observation, handed over; the run is done with it.
  core::Observation Take() { return std::move(obs_); }
  // Ends as a harness error: ending kHarnessError, harness_error = `why` (UTF-8 sanitized),
  // duration_s from the run's start. Returns the observation.
  core::Observation Fail(std::string why);

  // 1. Arms that are policies: sleeps until the arm's NetworkPolicy is minPolicyAge old (local
  //    time since the API server's 201 in Prepare(), a lower bound of its age). Writes
  //    policy_wait_s (seconds to wait, to 0.1 s, before sleeping). False when cancel cut the wait:
  //    ending kInterrupted.
  bool WaitForPolicyAge();
  // 2. Builds the Job (objects.h BuildJob; container timeout from the manifest's limits and the
  //    harness deadline). Writes job (metadata.name) and, for a policy arm, network_policy,
  //    policy_created_at and policy_age_s (seconds since the 201, at this moment).
  void BuildJob();
  // 3. POSTs the Job. Starts podStartTimeout and the start-wait clock; registers the name with
  //    the driver (Cleanup()) before the POST, since a create that times out may still land.
  //    False when the create failed: the Job is deleted (unconfirmed is fine) and the ending is
  //    kInterrupted (cancel) or a harness error "creating Job <name>: <API error>".
  bool CreateJob();
  // 4. Watches the Job's pods until the newest pod's probe container finished, the harness
  //    deadline (or, before a container runs, podStartTimeout) passed, cancel, or the Job's
  //    status says no pod will run: GET pods by job-name (resourceVersion), watch from there,
  //    re-list on 410 Gone or a broken stream. Writes start_wait_s when a container first runs
  //    (Pod status.containerStatuses[probe].state.running or terminated, or phase
  //    Succeeded/Failed), and the run's pod, job failure, FailedCreate message and setup failure.
  void WatchPods();
  //    With kubernetes.liveChange, the first time a container runs the watch starts a thread
  //    that PATCHes the pod (LiveChange::Patch) `after` seconds later, unless stopped first.
  // 5. Writes pod_relists, watch_gone (410s, when any), pod (metadata.name) and node (Pod
  //    spec.nodeName) of the pod the watch ended on; notes whether its container finished.
  //    With kubernetes.liveChange: stops the change's thread if it has not acted yet (the
  //    container ended first) and writes live_change, live_change_settle_s,
  //    live_change_ended_unix_ms (the container was seen ended by then) and either
  //    live_change_sent_unix_ms and live_change_unix_ms (the PATCH sent, answered) or
  //    live_change_error. policy_selects_pod and the note's stored labels are the labels
  //    before the change.
  void RecordPodFacts();
  // 6. The harness stopped an unfinished container: ending kDeadline (ended_by "harness
  //    deadline") when its deadline passed, kInterrupted on cancel.
  void NoteHarnessStop();
  // 7. Reads the probe container's stdout (GET pods/<pod>/log, limitBytes = logLimit; 3 tries, a
  //    404 ends them) and, once it ended, its stderr's last 4 KiB (state.terminated.message, see
  //    stderr_tail.py) through an OutputCollector into the observation, when a pod ran, before
  //    anything deletes it. Writes logs ("stdout (pods/log); stderr: ..." saying what was read).
  //    Then duration_s: from the container's start (or the Job's creation) to now.
  void ReadLogs();
  // 8. Facts from status: terminated_reason, exit_code, oom_killed, signal (Pod
  //    status.containerStatuses[probe].state.terminated); pod_reason, pod_message, evicted (Pod
  //    status.reason/message); job_condition (Job status.conditions Failed/FailureTarget reason;
  //    logs "gone: ..." after DeadlineExceeded). Ending kExited from the terminated state, or
  //    kSignaled (signal 9) for an eviction or a Job-controller kill without one (and no
  //    FailedCreate), unless the harness stopped the container.
  void RecordStatusFacts();
  // 9. Deletes the Job (its pods too when the container had not finished) and waits for a 404.
  //    Writes job_deleted.
  void RemoveJob();
  // 10. The ending, first match wins: a FailedCreate event -> harness error (writes
  //     failed_create); a setup failure -> harness error; no ending yet -> kInterrupted on
  //     cancel, else a harness error (the API server stopped answering before a pod ran, or no
  //     running container within podStartTimeout); an unconfirmed delete -> harness error;
  //     cancel -> kInterrupted. Returns the observation.
  core::Observation Decide();

  // The timeline (core::Phase, drivers::SteadySeconds): the phase `name` from `start` to now;
  // returns now, the next phase's start.
  double MarkPhase(const char* name, double start);
  // After WatchPods: "pod-start" from `start` (the Job's creation answered) until a container was
  // first seen running, then "running" until now; only "pod-start" when none ran. Returns now.
  double MarkPodPhases(double start);

 private:
  // Sets the harness-error ending (see Fail) without handing the observation over.
  void MarkFailed(std::string why);
  // Ending kInterrupted, duration_s from the run's start.
  void MarkInterrupted();
  // When the watch gives up: the container's start + deadline_s, or podStartTimeout before it.
  Clock::time_point HarnessDeadline() const;
  // A pod was seen and its probe container finished.
  bool PodFinished() const;
  // Takes `p` as the run's pod unless it is an older pod of the same Job; the first time a
  // container runs, starts the harness deadline and writes start_wait_s.
  void Absorb(const nlohmann::json& p);
  // False when `p`'s controller ownerReference (kind Job) names another uid than the Job this
  // run created (POST answer metadata.uid): a same-named Job's pod still being deleted.
  bool OwnedByThisJob(const nlohmann::json& p) const;
  // A pod list: counts the re-list and absorbs the newest pod (metadata.creationTimestamp).
  void AbsorbNewest(const nlohmann::json& list);
  // No container runs yet: the Job's status (a Failed condition) and its events (FailedCreate)
  // or the container's waiting reason (InvalidImageName, CreateContainerConfigError) say why.
  // True when that ends the watch.
  bool CheckWhyNoPodRuns();
  // The pod was deleted before it finished: the Job's Failed condition (its deadline) when it
  // has one, else a setup failure.
  void ExplainDeletedPod();
  // GET the Job: its Failed / FailureTarget condition's reason into job_failure_ (batch/v1 Job
  // status.conditions, e.g. DeadlineExceeded), when the API answers.
  void ReadJobCondition();
  // kubernetes.liveChange: starts the change's thread once a container runs (once per run).
  void StartLiveChange();
  // Stops the thread if it has not acted, joins it, writes the live_change facts.
  void FinishLiveChange();
  // One watch of the Job's pods from resourceVersion `rv`, up to 60 s. False when the server
  // refused it (setup failure "watching pods: ...").
  bool WatchFrom(const std::string& rv);
  // A watch event; false stops the watch (finished, started running, or deleted).
  bool OnWatchEvent(const std::string& type, const nlohmann::json& object);

  KubernetesDriver& driver_;
  const Invocation& inv_;
  const std::atomic<bool>& cancel_;
  core::Observation obs_;
  Clock::time_point start_;                         // Execute's start
  nlohmann::json job_;                              // the Job as built
  std::string name_;                                // its metadata.name
  std::string uid_;                                 // its metadata.uid, from the POST's answer
  Clock::time_point created_at_;                    // just before the POST
  Clock::time_point start_deadline_;                // created_at_ + podStartTimeout
  std::string pods_path_;                           // GET pods?labelSelector=job-name=<name>
  nlohmann::json pod_;                              // the newest pod seen (null: none)
  std::string pod_name_;                            // its metadata.name, after the watch
  std::optional<Clock::time_point> running_since_;  // local time a container was first seen
  std::string job_failure_;                         // Job Failed/FailureTarget condition reason
  std::string failed_create_;                       // message of a FailedCreate event
  std::string quota_wait_;        // the last FailedCreate for exceeded quota (back-pressure)
  std::string setup_failure_;     // why the watch gave up (harness error)
  std::string last_api_error_;    // the last transport or deadline error of a pod list
  bool pod_deleted_ = false;      // the pod was deleted before it finished
  Clock::time_point last_check_;  // the last CheckWhyNoPodRuns (at most every 2 s)
  int relists_ = 0, gone_ = 0;
  bool finished_ = false;      // the pod's container finished (after the watch)
  bool harness_stop_ = false;  // deadline or cancel ended an unfinished container
  bool logs_ok_ = false;
  std::expected<void, std::string> deleted_;
  std::thread live_change_;  // the PATCH of kubernetes.liveChange
  std::atomic<bool> live_change_stop_{false};
  int64_t live_change_ms_ = 0;       // the PATCH answered; written by the thread, read after join
  int64_t live_change_sent_ms_ = 0;  // the PATCH sent; written by the thread, read after join
  nlohmann::json labels_before_change_;  // the pod's labels when the change's thread started
  int64_t finished_ms_ = 0;        // ms since the epoch when a pod's container was first seen ended
  std::string live_change_error_;  // written by the thread; read after join
};

}  // namespace sandprobe::drivers
