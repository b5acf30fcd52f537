#include "drivers/kubernetes/cluster_canary.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <mutex>
#include <utility>

#include "core/json_field.h"
#include "drivers/kubernetes/cluster_canary_script.h"
#include "drivers/kubernetes/job_run.h"

namespace sandprobe::drivers::kube {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxField = 200;
constexpr double kCanaryMaxS = 6 * 3600;  // the Pod serves at most this long
constexpr char kReadyLine[] = "SANDPROBE-CANARY-READY";
constexpr char kHitPrefix[] = "SANDPROBE-HIT ";

std::string Printable(const Json& v) {
  std::string out;
  if (!v.is_string()) return out;
  for (unsigned char c : v.get_ref<const std::string&>()) {
    if (out.size() >= kMaxField) break;
    out += (c >= 0x20 && c <= 0x7e) ? static_cast<char>(c) : '?';
  }
  return out;
}

// Waiting reasons that mean the Pod will not run without someone's help.
bool Hopeless(std::string_view reason) {
  return reason == "ErrImagePull" || reason == "ImagePullBackOff" ||
         reason == "ErrImageNeverPull" || reason == "InvalidImageName" ||
         reason == "CreateContainerConfigError" || reason == "CreateContainerError";
}

std::mutex registry_mu;
std::map<std::string, std::weak_ptr<ClusterCanary>>& Registry() {
  static auto* r = new std::map<std::string, std::weak_ptr<ClusterCanary>>;
  return *r;
}

}  // namespace

std::string_view ClusterCanaryScript() { return generated::kClusterCanaryPy; }

std::vector<core::CanaryHit> ParseCanaryHits(std::string_view log, std::string_view invocation) {
  std::vector<core::CanaryHit> out;
  if (invocation.empty()) return out;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(start, end - start);
    start = end + 1;
    if (!line.starts_with(kHitPrefix)) continue;
    const Json hit = Json::parse(line.substr(sizeof(kHitPrefix) - 1), nullptr, false);
    if (!hit.is_object() || !hit.contains("invocation") || !hit["invocation"].is_string() ||
        hit["invocation"].get_ref<const std::string&>() != invocation) {
      continue;
    }
    // The canary's clock (the node's), ms since the epoch: what classify.live_change judges by.
    out.push_back({Printable(hit.value("kind", Json())), Printable(hit.value("peer", Json())),
                   Printable(hit.value("detail", Json())),
                   std::max<int64_t>(0, core::IntField(hit, "unix_ms"))});
  }
  return out;
}

ClusterCanary::ClusterCanary(const ApiClient& client, std::string ns, std::string name,
                             std::string ip, double api_timeout_s, std::string run_id,
                             std::string run_folder)
    : client_(client),
      ns_(std::move(ns)),
      name_(std::move(name)),
      ip_(std::move(ip)),
      api_timeout_s_(api_timeout_s),
      run_id_(std::move(run_id)),
      run_folder_(std::move(run_folder)) {}

std::expected<std::shared_ptr<ClusterCanary>, SetupError> ClusterCanary::Acquire(
    const ApiClient& client, const std::string& ns, const KubeSettings& settings,
    const std::string& run_id, const std::string& run_folder, const std::string& nonce,
    bool& submitted, const std::atomic<bool>* cancel) {
  const std::string key = fmt::format("{}|{}|{}", client.connection().server, ns, run_id);
  std::lock_guard lock(registry_mu);
  if (auto live = Registry()[key].lock()) return live;

  const std::string name = CanaryName(run_id);
  const auto api_deadline = [&] { return After(std::max(30.0, settings.api_timeout_s * 2)); };
  const std::string rbac_hint =
      "the in-cluster canary needs create on services and pods, list on pods and get on "
      "pods/log (ci/kubernetes/rbac.yaml), and the manifest's image able to run python3";
  submitted = true;
  Json svc_object = BuildCanaryService(run_id);
  AnnotateRunFolder(svc_object, run_folder);
  auto svc = client.Call("POST", fmt::format("/api/v1/namespaces/{}/services", ns), svc_object,
                         api_deadline(), cancel);
  if (!svc) {
    return std::unexpected(
        SetupError{fmt::format("in-cluster canary: creating Service {} in {}: {}", name, ns,
                               svc.error().ToString()),
                   rbac_hint});
  }
  const std::string ip = StringAt(svc->body, "/spec/clusterIP");
  if (ip.empty() || ip == "None") {
    return std::unexpected(
        SetupError{fmt::format("in-cluster canary: Service {} got no ClusterIP", name), rbac_hint});
  }
  KubeSettings pod_settings = settings;
  pod_settings.namespace_name = ns;
  Json pod_object =
      BuildCanaryPod(pod_settings, run_id, nonce, std::string(ClusterCanaryScript()), kCanaryMaxS);
  AnnotateRunFolder(pod_object, run_folder);
  auto pod = client.Call(
      // Strict: a canaryTemplate field the API server does not know is refused, not dropped
      // (Kubernetes API: fieldValidation=Strict; a server older than 1.25 ignores it).
      "POST", fmt::format("/api/v1/namespaces/{}/pods?fieldValidation=Strict", ns), pod_object,
      api_deadline(), cancel);
  if (!pod) {
    const bool admission =
        pod.error().code == 422 ||
        (pod.error().code == 403 && !pod.error().IsQuota() &&
         pod.error().message.find("cannot create resource") == std::string::npos);
    return std::unexpected(SetupError{
        fmt::format("in-cluster canary: creating Pod {} in {}: {}", name, ns,
                    pod.error().ToString()),
        pod.error().code == 400
            ? "the API server does not know a field of the canary Pod: fix it in "
              "kubernetes.canaryTemplate; `sandprobe render` shows the Pod"
        : admission
            ? "the cluster's admission rejected the canary Pod: give what it demands in "
              "kubernetes.canaryTemplate (a Pod merge patch, e.g. {spec: {runtimeClassName: "
              "runc}}); `sandprobe render` shows the Pod"
            : rbac_hint});
  }
  // Running with an IP, then the ready line in its log (every socket bound).
  const auto deadline = After(settings.pod_start_timeout_s);
  const std::string list = fmt::format("/api/v1/namespaces/{}/pods?fieldSelector={}", ns,
                                       QueryEscape("metadata.name=" + name));
  const std::string log_path =
      fmt::format("/api/v1/namespaces/{}/pods/{}/log?container=canary&limitBytes=65536", ns, name);
  std::string last = "not scheduled yet";
  while (true) {
    auto r = client.Call("GET", list, nullptr, After(settings.api_timeout_s), cancel);
    const Json items = r ? ListItems(r->body) : Json::array();
    if (!items.empty()) {
      const Json& p = items.front();
      const std::string phase = StringAt(p, "/status/phase");
      const std::string waiting = StringAt(p, "/status/containerStatuses/0/state/waiting/reason");
      last = fmt::format("phase {}{}", phase.empty() ? "Pending" : phase,
                         waiting.empty() ? "" : ", container waiting: " + waiting);
      if (phase == "Failed" || phase == "Succeeded" || Hopeless(waiting)) {
        const std::string message =
            StringAt(p, "/status/containerStatuses/0/state/waiting/message");
        return std::unexpected(SetupError{
            fmt::format("in-cluster canary Pod {} in {} will not run: {}{}", name, ns, last,
                        message.empty() ? "" : " (" + message.substr(0, 300) + ")"),
            rbac_hint});
      }
      if (phase == "Running" && !StringAt(p, "/status/podIP").empty()) {
        auto log = client.Send("GET", log_path, "", After(settings.api_timeout_s), cancel);
        if (log && log->status == 200 && log->text.find(kReadyLine) != std::string::npos) break;
        last = "running, not ready yet (no ready line in its log)";
      }
    } else if (!r) {
      last = "cannot list it: " + r.error().ToString();
    }
    if (cancel != nullptr && cancel->load()) {
      return std::unexpected(
          SetupError{fmt::format("interrupted while the in-cluster canary Pod {} started", name),
                     "nothing to fix: the run was interrupted (its objects are removed)"});
    }
    if (!SleepFor(0.3, deadline, cancel)) {
      if (cancel != nullptr && cancel->load()) continue;  // reported above, next turn
      return std::unexpected(SetupError{
          fmt::format("in-cluster canary Pod {} in {} not ready after podStartTimeout {:g}s: {}",
                      name, ns, settings.pod_start_timeout_s, last),
          rbac_hint});
    }
  }
  auto canary = std::make_shared<ClusterCanary>(client, ns, name, ip, settings.api_timeout_s,
                                                run_id, run_folder);
  Registry()[key] = canary;
  return canary;
}

namespace {
// True when `ip` (an address as the API writes it) is of `family` ("IPv4" | "IPv6").
bool OfFamily(const std::string& ip, const std::string& family) {
  return (ip.find(':') != std::string::npos) == (family == "IPv6");
}
}  // namespace

std::expected<void, SetupError> ClusterCanary::AddFamily(const std::string& family,
                                                         const std::atomic<bool>* cancel) {
  std::lock_guard lock(mu_);
  if (family_ip_.contains(family)) return {};
  const std::string svc_name = CanaryServiceName(run_id_, family);
  const std::string dual_hint = fmt::format(
      "kubernetes.ipFamily {} needs a cluster that serves that family: Services (the API "
      "server's --service-cluster-ip-range has a range of it) and pods (the node's pod ranges "
      "and the CNI); ci/cluster/up --ip-family dual starts one here",
      family);
  const auto deadline = [&] { return After(std::max(30.0, api_timeout_s_ * 2)); };
  // The Pod first: a Service of a family the Pod has no address of would have no endpoint.
  // Listed by name, as Acquire does (the driver's Role has list on pods, not get).
  auto pods = client_.Call("GET",
                           fmt::format("/api/v1/namespaces/{}/pods?fieldSelector={}", ns_,
                                       QueryEscape("metadata.name=" + name_)),
                           nullptr, deadline(), cancel);
  if (!pods) {
    return std::unexpected(SetupError{
        fmt::format("in-cluster canary: listing Pod {}: {}", name_, pods.error().ToString()),
        "the in-cluster canary needs list on pods (ci/kubernetes/rbac.yaml)"});
  }
  const Json items = ListItems(pods->body);
  bool has_family = false;
  for (int i = 0; !items.empty() && i < 8; ++i) {  // a Pod has one address per family
    const std::string ip = StringAt(items.front(), fmt::format("/status/podIPs/{}/ip", i).c_str());
    has_family |= !ip.empty() && OfFamily(ip, family);
  }
  if (!has_family) {
    return std::unexpected(SetupError{
        fmt::format("in-cluster canary Pod {} has no {} address (status.podIPs): the cluster's "
                    "pods are not {}",
                    name_, family, family == "IPv6" ? "dual-stack" : "IPv4"),
        dual_hint});
  }
  Json svc_object = BuildCanaryService(run_id_, family);
  AnnotateRunFolder(svc_object, run_folder_);
  auto svc = client_.Call("POST", fmt::format("/api/v1/namespaces/{}/services", ns_), svc_object,
                          deadline(), cancel);
  if (!svc) {
    return std::unexpected(SetupError{
        fmt::format("in-cluster canary: creating the {} Service {} in {}: {}", family, svc_name,
                    ns_, svc.error().ToString()),
        svc.error().code == 422 ? dual_hint : "the in-cluster canary needs create on services"});
  }
  const std::string ip = StringAt(svc->body, "/spec/clusterIP");
  if (ip.empty() || ip == "None" || !OfFamily(ip, family)) {
    return std::unexpected(SetupError{
        fmt::format("in-cluster canary: the {} Service {} got ClusterIP '{}', not one of that "
                    "family",
                    family, svc_name, ip.substr(0, 64)),
        dual_hint});
  }
  family_ip_[family] = ip;
  return {};
}

std::string ClusterCanary::Identity() const {
  return fmt::format("{}|{}|{}", client_.connection().server, ns_, name_);
}

std::map<std::string, std::string> ClusterCanary::Placeholders(const std::string& family) const {
  std::string service = name_, raw = ip_;
  if (!family.empty()) {
    std::lock_guard lock(mu_);
    const auto it = family_ip_.find(family);
    if (it == family_ip_.end()) return {};
    service = CanaryServiceName(run_id_, family);
    raw = it->second;
  }
  // An IPv6 ClusterIP is bracketed, so "{canary.cluster.ip}:53" and URLs stay host:port.
  const std::string ip = raw.find(':') != std::string::npos ? "[" + raw + "]" : raw;
  return {{"canary.cluster.name", fmt::format("{}.{}.svc.cluster.local", service, ns_)},
          {"canary.cluster.ip", ip},
          {"canary.cluster.http", fmt::format("{}:{}", ip, kCanaryHttpPort)},
          {"canary.cluster.tcp", fmt::format("{}:{}", ip, kCanaryTcpPort)},
          {"canary.cluster.udp", fmt::format("{}:{}", ip, kCanaryUdpPort)},
          {"canary.cluster.dns", fmt::format("{}:{}", ip, kCanaryDnsPort)}};
}

std::vector<core::CanaryHit> ClusterCanary::HitsFor(const std::string& invocation,
                                                    std::chrono::system_clock::time_point since,
                                                    std::string* error) const {
  // Whole seconds, 10 s early: clocks of this machine and the node differ a little.
  const std::time_t t = std::chrono::system_clock::to_time_t(since) - 10;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  auto log = client_.Call(
      "GET",
      fmt::format("/api/v1/namespaces/{}/pods/{}/log?container=canary&limitBytes={}&sinceTime={}",
                  ns_, name_, 8 << 20, QueryEscape(stamp)),
      nullptr, After(std::max(10.0, api_timeout_s_)));
  if (!log) {
    if (error != nullptr) *error = "reading the in-cluster canary's log: " + log.error().ToString();
    return {};
  }
  return ParseCanaryHits(log->text, invocation);
}

}  // namespace sandprobe::drivers::kube
