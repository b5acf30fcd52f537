// The run's in-cluster canary: a Pod and a ClusterIP Service in the arm's namespace that speak
// the harness canaries' protocols (cluster_canary.py, embedded in the binary), so a real
// cluster's pods have a target they can reach without flags (docs/design.md, "The in-cluster
// canary"). Deployed only when the suite uses a {canary.cluster.*} placeholder; shared by every
// kubernetes arm of the run on the same API server and namespace, so controls and candidates
// aim at one target with identical parameters. The first arm's client (credentials), image and
// canaryTemplate deploy it and read its log; the joining arms' are not used. Its hits come back
// through pods/log
// (`SANDPROBE-HIT {json}` lines), bounded and made printable again here.
//
// Removal: both objects carry sandprobe.io/run, so the driver's Cleanup() and `sandprobe cleanup
// --kubernetes` remove them with the run's other objects.
#pragma once

#include <atomic>
#include <chrono>
#include <expected>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/observation.h"
#include "drivers/driver.h"
#include "drivers/kubernetes/api_client.h"
#include "drivers/kubernetes/objects.h"

namespace sandprobe::drivers::kube {

// The cluster_canary.py source, as embedded at build time.
std::string_view ClusterCanaryScript();

// Hits in a canary log (pods/log text) carrying `invocation`: lines "SANDPROBE-HIT {json}" with
// string kind/peer/detail and a non-empty invocation equal to `invocation`; fields bounded to
// 200 printable bytes; unix_ms when it is a positive integer (the canary's clock), else 0.
// Anything else in the log is ignored. Pure.
std::vector<core::CanaryHit> ParseCanaryHits(std::string_view log, std::string_view invocation);

class ClusterCanary {
 public:
  // The run's canary on `client`'s server in `ns`: deployed by the first caller (Service, then
  // Pod; waits up to settings.pod_start_timeout_s for the Pod to run and print its ready line),
  // the same object for later callers with the same server, namespace and run. `submitted` is
  // set before the first create, so the caller's cleanup knows to look. `cancel` (Ctrl-C) stops
  // the wait and every call; the objects already created are left to the caller's Cleanup().
  // Errors: a SetupError
  // naming the object and the API's answer (RBAC, image pull, a Pod that never ran).
  static std::expected<std::shared_ptr<ClusterCanary>, SetupError> Acquire(
      const ApiClient& client, const std::string& ns, const KubeSettings& settings,
      const std::string& run_id, const std::string& run_folder, const std::string& nonce,
      bool& submitted, const std::atomic<bool>* cancel = nullptr);

  // Adds the Service of one address family (kubernetes.ipFamily: "IPv4" | "IPv6"), selecting
  // the same Pod (BuildCanaryService), once per family whoever asks; checks that the Pod has an
  // address of that family (status.podIPs). Errors: a SetupError saying the cluster is not
  // dual-stack (the API server refused the family, or the Pod has no such address) and how to
  // make one, or the API's answer.
  std::expected<void, SetupError> AddFamily(const std::string& family,
                                            const std::atomic<bool>* cancel = nullptr);
  // canary.cluster.{name,ip,http,tcp,udp,dns} (runner::kArmPlaceholders): of the default
  // Service, or with `family` of that family's (AddFamily first; empty map otherwise).
  std::map<std::string, std::string> Placeholders(const std::string& family = "") const;
  // "<server>|<namespace>|<pod>": arms whose placeholders differ only by family share this.
  std::string Identity() const;
  // Reads the canary's log since `since` (GET pods/<name>/log?sinceTime=, bounded to 8 MiB, so
  // a long run or a busy scanner does not push an invocation's hits out of reach) and returns
  // the hits carrying `invocation`; empty when the log cannot be read (the caller notes it).
  std::vector<core::CanaryHit> HitsFor(const std::string& invocation,
                                       std::chrono::system_clock::time_point since,
                                       std::string* error) const;
  const std::string& pod() const { return name_; }

  ClusterCanary(const ApiClient& client, std::string ns, std::string name, std::string ip,
                double api_timeout_s, std::string run_id = "", std::string run_folder = "");

 private:
  ApiClient client_;
  std::string ns_, name_, ip_;
  double api_timeout_s_;
  std::string run_id_, run_folder_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> family_ip_;  // family -> its Service's ClusterIP
};

}  // namespace sandprobe::drivers::kube
