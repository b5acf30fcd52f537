// Planning a run: which probe runs in which arm with which parameters. Pure (no I/O), so the
// "identical parameters" rule and the skip rules are table-tested here.
#pragma once

#include <expected>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "core/matrix.h"
#include "core/probe.h"
#include "core/suite.h"

namespace sandprobe::runner {

// The "{name}" placeholders a suite's string parameters may use; the runner fills each one per
// run (canary addresses and ports, planted canary secrets' names, paths and hashes).
// canary.http6 is "[v6]:port" of the IPv6 HTTP canary, or "" on a host without one (a probe
// then says no_target); canary.cloud_sha256 the sha256 of the canary cloud credential the HTTP
// canaries serve (CloudCredential); canary.env_set every planted canary variable as
// "NAME=<hex sha256>", comma-separated (PlantedSecrets::Substitutions); canary.env_given the
// same for the secrets the arms' own configurations give their sandboxes (Session::
// SetGivenSecrets; "" when none). canary.key_user / key_session are the descriptions of the
// keyring canary (PlantedKeys, "" when the kernel refused it), canary.key_sha256 its payload's
// sha256; canary.unix_socket the path of the unix socket canary ("" when it could not be made);
// canary.icmp the ICMP canary's address, or "" without CAP_NET_RAW; canary.loopback_tcp
// "127.0.0.1:port" of the TCP echo canary bound to loopback only whatever --canary-bind says
// (net.host-loopback), canary.loopback_port its port.
inline constexpr std::string_view kPlaceholders[] = {
    "canary.http",         "canary.tcp",          "canary.dns",          "canary.udp",
    "canary.host",         "canary.http_port",    "canary.tcp_port",     "canary.dns_port",
    "canary.udp_port",     "canary.env_name",     "canary.env_sha256",   "canary.token_file",
    "canary.token_sha256", "canary.docker",       "canary.docker_port",  "host.kernel_release",
    "canary.http6",        "canary.cloud_sha256", "canary.env_set",      "canary.env_given",
    "canary.key_user",     "canary.key_session",  "canary.key_sha256",   "canary.unix_socket",
    "canary.icmp",         "canary.loopback_tcp", "canary.loopback_port"};

// Placeholders an arm fills once prepared (drivers::Driver::Placeholders), not the runner: the
// kubernetes driver's in-cluster canary (a Pod and a ClusterIP Service in the arm's namespace).
// name = the Service's DNS name, ip = its ClusterIP; http/tcp/udp/dns = "<ClusterIP>:<port>".
inline constexpr std::string_view kArmPlaceholders[] = {
    "canary.cluster.name", "canary.cluster.ip",  "canary.cluster.http",
    "canary.cluster.tcp",  "canary.cluster.udp", "canary.cluster.dns"};

// The "{name}" placeholders the suite's string parameters use (nested values included).
std::set<std::string> PlaceholdersUsed(const core::Suite& suite);

// One probe invocation to execute.
struct Task {
  size_t row = 0;     // index into the suite's entries / matrix rows
  std::string probe;  // probe id
  std::string arm;    // manifest name
  bool control = false;
  nlohmann::json params;   // resolved
  std::string params_key;  // core::ParamsKey(params)
  double deadline_s = 0;   // harness deadline, seconds
  // The candidate's address family (drivers::Driver::AddressFamily), also params["ip_family"],
  // so its control runs the row in that family too; "" = none declared.
  std::string ip_family = "";
};

// A verdict decided before anything runs (SKIP: not applicable to the candidate's driver).
struct PlannedSkip {
  std::string probe;
  std::string candidate;
  std::string reason;
};

struct Plan {
  std::vector<core::Row> rows;
  std::vector<core::ArmInfo> arms;  // controls first, then candidates
  std::vector<Task> tasks;          // ordered row by row, so rows complete in suite order
  std::vector<PlannedSkip> skips;
};

struct Timing {
  double default_timeout_s = 10;  // when a candidate claims no timeout
  double grace_s = 5;             // added to the timeout for the harness deadline
};

// The harness deadline of every invocation in `arm`, in seconds: its limits.timeout (else
// timing.default_timeout_s) plus timing.grace_s. The one place a deadline is born: PlanRun
// (`run`) and PlanArmInvocations (`render`) both take it from here.
double ArmDeadline(const core::Manifest& arm, const Timing& timing);

// One invocation of one arm as a run would deploy it.
struct PlannedInvocation {
  std::string probe;       // probe id
  std::string invocation;  // "i000", "i001", ... in suite order
  std::string script;      // core::BuildScript with the given nonce
  double deadline_s = 0;   // ArmDeadline
  core::Deploy deploy = core::Deploy::kSandbox;
};

// The invocations `arm` would run for `suite` (only `only_probe`'s when not empty): every entry
// whose probe applies to the arm's driver, its parameters resolved against the arm's limits and
// `substitutions`, its script built with `preamble` and `nonce`, its deadline ArmDeadline(arm,
// timing). For `sandprobe render`, which shows what a run would submit without running it.
// Errors: an entry naming a probe not in `probes`, a parameter or script error.
std::expected<std::vector<PlannedInvocation>, std::string> PlanArmInvocations(
    const core::Suite& suite, const std::vector<core::ProbeDescriptor>& probes,
    const core::Manifest& arm, const std::map<std::string, std::string>& substitutions,
    const std::string& preamble, const std::string& nonce, const Timing& timing,
    const std::string& only_probe = "");

// Errors: a suite entry naming an unknown probe, a parameter error, two arms with one name.
// Controls run each (probe, parameter set) that some candidate needs, once, with the longest
// deadline among those candidates; identical parameters are what makes a control count. A
// candidate named in `by_arm` resolves its parameters with that map instead of `substitutions`
// (its own address family's canary, Arms::Substitutions); its controls then send the same. A
// candidate named in `families` measures that address family: every row of it carries
// params["ip_family"] (and Task::ip_family), so its control runs each row in that family too,
// judged apart from the other family's, even where no placeholder differs (net.node-local).
std::expected<Plan, std::string> PlanRun(
    const core::Suite& suite, const std::vector<core::ProbeDescriptor>& probes,
    const std::vector<core::Manifest>& candidates, const std::vector<core::Manifest>& controls,
    const std::map<std::string, std::string>& substitutions, const Timing& timing,
    const std::map<std::string, std::map<std::string, std::string>>& by_arm = {},
    const std::map<std::string, std::string>& families = {});

// What the unsandboxed control arm may be asked to allocate or write on this host, in MiB.
struct HostBudget {
  double memory_mib = 0;  // e.g. half of MemAvailable
  double tmp_mib = 0;     // e.g. half of the free space under /tmp
};

// Control arms run without isolation, so an attack sized from a candidate's claim (the balloon
// at 2 x limits.memory, fill-tmp at 2 x limits.tmp) or a suite override must fit the host.
// Errors name the probe, the parameter, the size and the budget. Params in MiB sized from
// memory or tmp are checked.
std::expected<void, std::string> CheckControlBudget(
    const Plan& plan, const std::vector<core::ProbeDescriptor>& probes, const HostBudget& budget);

}  // namespace sandprobe::runner
