#include "drivers/kubernetes/objects.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <tuple>

#include "config/yaml_json.h"
#include "drivers/kubernetes/stderr_tail_script.h"

namespace sandprobe::drivers::kube {
namespace {

using Json = nlohmann::json;

std::string ShortHash(std::string_view s) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(s.data(), s.size(), md, &len, EVP_sha256(), nullptr);
  return fmt::format("{:02x}{:02x}{:02x}", md[0], md[1], md[2]);
}

// Lower-case [a-z0-9-], no leading/trailing '-', at most max_len; a truncated name ends in a
// hash of the whole input so two long names stay distinct.
std::string DnsLabel(const std::string& s, size_t max_len) {
  std::string out;
  for (unsigned char c : s) {
    const char l = static_cast<char>(std::tolower(c));
    out += (std::isalnum(static_cast<unsigned char>(l)) != 0) ? l : '-';
  }
  auto trim = [](std::string& t) {
    while (!t.empty() && t.front() == '-') t.erase(0, 1);
    while (!t.empty() && t.back() == '-') t.pop_back();
  };
  trim(out);
  if (out.size() > max_len) {
    out = out.substr(0, max_len - 7);
    trim(out);
    out += "-" + ShortHash(s);
  }
  return out.empty() ? "x" + ShortHash(s) : out;
}

std::string Seconds(double s) { return fmt::format("{:g}", s); }

Json Labels(const JobRequest& r) {
  return {{kRunLabel, LabelValue(r.run_id)},
          {kArmLabel, LabelValue(r.arm)},
          {kInvocationLabel, LabelValue(r.invocation)},
          {kProbeLabel, LabelValue(r.probe)}};
}

// Defaults of the pod template (PodTemplateSpec) for one request.
Json DefaultPodTemplate(const KubeSettings& s, const JobRequest& r) {
  Json resources = Json::object();
  if (s.limits.memory_bytes) {
    resources["limits"]["memory"] = Quantity(*s.limits.memory_bytes);
    resources["requests"]["memory"] = Quantity(*s.limits.memory_bytes);
  }
  Json empty_dir = Json::object();
  if (s.limits.tmp_bytes) empty_dir["sizeLimit"] = Quantity(*s.limits.tmp_bytes);
  Json container = {{"name", kContainerName},
                    {"image", s.image},
                    {"securityContext",
                     {{"allowPrivilegeEscalation", false},
                      {"readOnlyRootFilesystem", true},
                      {"capabilities", {{"drop", {"ALL"}}}}}},
                    {"resources", resources},
                    {"volumeMounts", {{{"name", "tmp"}, {"mountPath", "/tmp"}}}}};
  return {{"metadata", {{"labels", Labels(r)}}},
          {"spec",
           {{"restartPolicy", "Never"},
            {"automountServiceAccountToken", false},
            {"enableServiceLinks", false},
            {"securityContext",
             {{"runAsNonRoot", true},
              {"runAsUser", 65534},
              {"runAsGroup", 65534},
              {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
            {"containers", {container}},
            {"volumes", {{{"name", "tmp"}, {"emptyDir", empty_dir}}}}}}};
}

// Applies jobTemplate over the default Job; the probe container is merged by name.
void ApplyTemplate(Json& job, Json patch) {
  Json container_patch;
  Json extra_containers = Json::array();
  if (Json* cs = patch.contains("spec") && patch["spec"].is_object() &&
                         patch["spec"].contains("template") &&
                         patch["spec"]["template"].is_object() &&
                         patch["spec"]["template"].contains("spec") &&
                         patch["spec"]["template"]["spec"].is_object() &&
                         patch["spec"]["template"]["spec"].contains("containers")
                     ? &patch["spec"]["template"]["spec"]["containers"]
                     : nullptr;
      cs != nullptr) {
    if (cs->is_array()) {
      for (const Json& c : *cs) {
        if (!c.is_object()) continue;
        // A name that is not a string is no container of ours (the API server refuses it).
        const auto n = c.find("name");
        const std::string name = n == c.end() ? "" : n->is_string() ? n->get<std::string>() : "?";
        if (name == kContainerName || (name.empty() && cs->size() == 1)) {
          container_patch = c;
        } else {
          extra_containers.push_back(c);
        }
      }
    }
    patch["spec"]["template"]["spec"].erase("containers");
  }
  job.merge_patch(patch);
  Json& containers = job["spec"]["template"]["spec"]["containers"];
  if (!container_patch.is_null()) containers[0].merge_patch(container_patch);
  for (const Json& c : extra_containers) containers.push_back(c);
}

// The fields that always win over the template.
void Enforce(Json& job, const KubeSettings& s, const JobRequest& r) {
  const Json labels = Labels(r);
  job["apiVersion"] = "batch/v1";
  job["kind"] = "Job";
  job["metadata"]["name"] = JobName(r.run_id, r.invocation);
  job["metadata"].erase("generateName");
  job["metadata"]["annotations"]["sandprobe.io/probe"] = r.probe;
  Json& tmpl = job["spec"]["template"];
  for (auto& [k, v] : labels.items()) {
    job["metadata"]["labels"][k] = v;
    tmpl["metadata"]["labels"][k] = v;
  }
  Json& probe = tmpl["spec"]["containers"][0];
  probe["name"] = kContainerName;
  probe["image"] = s.image;
  // pid 1 is stderr_tail.py: stdout to pods/log, the probe's stderr never (pods/log carries both
  // as one stream: a record forged on stderr read as a record, stderr bytes split records;
  // docs/traps.md, trap 44). Its last 4 KiB go to the termination-message file, which the kubelet
  // reports as state.terminated.message and the driver reads as the probe's stderr. It sleeps
  // podSettle first. -I -S, for it and for the probe (as in every driver): no environment, site or
  // user path runs before them.
  probe["terminationMessagePath"] = kTerminationMessagePath;
  probe["terminationMessagePolicy"] = "File";
  probe["command"] = {"python3",
                      "-I",
                      "-S",
                      "-c",
                      generated::kStderrTailPy,
                      kTerminationMessagePath,
                      Seconds(s.pod_settle_s),
                      "timeout",
                      "-k",
                      "2",
                      Seconds(r.timeout_s),
                      "python3",
                      "-I",
                      "-S",
                      "-u",
                      "-c",
                      r.script};
  probe.erase("args");
  Json env = Json::array();
  if (const auto it = probe.find("env"); it != probe.end() && it->is_array()) {
    for (const Json& e : *it) {
      const bool ours = e.is_object() && e.contains("name") && e["name"].is_string() &&
                        (e["name"].get_ref<const std::string&>() == kNodeIpEnv ||
                         e["name"].get_ref<const std::string&>() == kIpFamilyEnv);
      if (!ours) env.push_back(e);
    }
  }
  const std::string& family = r.ip_family.empty() ? s.ip_family : r.ip_family;
  env.push_back(
      {{"name", kNodeIpEnv},
       {"valueFrom",
        {{"fieldRef", {{"fieldPath", family.empty() ? "status.hostIP" : "status.hostIPs"}}}}}});
  if (!family.empty()) env.push_back({{"name", kIpFamilyEnv}, {"value", family}});
  probe["env"] = std::move(env);
  const std::string node = r.node.empty() ? s.node : r.node;
  if (!node.empty()) tmpl["spec"]["nodeName"] = node;
}

bool LooksTyped(const std::string& s) {
  if (s.empty()) return true;
  try {
    const YAML::Node n = YAML::Load(s);
    if (!n.IsDefined() || !n.IsScalar() || n.Scalar() != s) return true;  // not plain of itself
    return !config::YamlToJson(n).is_string();
  } catch (const YAML::Exception&) {
    return true;  // not plain YAML: quote it
  }
}

void Emit(YAML::Emitter& out, const Json& v) {
  if ((v.is_object() || v.is_array()) && v.empty()) {  // "{}" / "[]" on the key's line
    out << YAML::Flow << (v.is_object() ? YAML::BeginMap : YAML::BeginSeq)
        << (v.is_object() ? YAML::EndMap : YAML::EndSeq);
  } else if (v.is_object()) {
    out << YAML::BeginMap;
    for (auto& [k, val] : v.items()) {
      out << YAML::Key << k << YAML::Value;
      Emit(out, val);
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    out << YAML::BeginSeq;
    for (const Json& e : v) Emit(out, e);
    out << YAML::EndSeq;
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.find('\n') != std::string::npos) {
      // A literal block when it reads back byte for byte; otherwise double-quoted.
      YAML::Emitter probe;
      probe << YAML::BeginMap << YAML::Key << "k" << YAML::Value << YAML::Literal << s << YAML::Key
            << "next" << YAML::Value << 0 << YAML::EndMap;  // as inside a document
      bool literal_ok = false;
      try {
        const YAML::Node back = YAML::Load(probe.c_str());
        literal_ok = back.IsMap() && back["k"].IsDefined() && back["k"].IsScalar() &&
                     back["k"].Scalar() == s;
      } catch (const YAML::Exception&) {
      }
      out << (literal_ok ? YAML::Literal : YAML::DoubleQuoted) << s;
    } else if (LooksTyped(s)) {
      out << YAML::DoubleQuoted << s;
    } else {
      out << s;
    }
  } else if (v.is_boolean()) {
    out << v.get<bool>();
  } else if (v.is_number_integer()) {
    out << v.get<int64_t>();
  } else if (v.is_number()) {
    out << v.get<double>();
  } else {
    out << YAML::Null;
  }
}

}  // namespace

std::string LabelValue(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    out += (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.') ? static_cast<char>(c) : '-';
  }
  while (!out.empty() && std::isalnum(static_cast<unsigned char>(out.front())) == 0)
    out.erase(0, 1);
  while (!out.empty() && std::isalnum(static_cast<unsigned char>(out.back())) == 0) out.pop_back();
  if (out.size() > 63) out = out.substr(0, 56) + "-" + ShortHash(s);
  return out;
}

std::string JobName(const std::string& run_id, const std::string& invocation) {
  const std::string run = run_id.starts_with("sp-") ? run_id.substr(3) : run_id;
  return DnsLabel("sp-" + run + "-" + invocation, 63);
}

std::string PolicyName(const std::string& run_id, const std::string& arm) {
  const std::string run = run_id.starts_with("sp-") ? run_id.substr(3) : run_id;
  return DnsLabel("sandprobe-" + run + "-" + arm, 63);
}

std::string RunSelector(const std::string& run_id) {
  return fmt::format("{}={}", kRunLabel, LabelValue(run_id));
}

std::string Quantity(uint64_t bytes) {
  for (auto [suffix, unit] :
       {std::pair{"Gi", uint64_t{1} << 30}, {"Mi", uint64_t{1} << 20}, {"Ki", uint64_t{1} << 10}}) {
    if (bytes >= unit && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, suffix);
  }
  return std::to_string(bytes);
}

double ContainerTimeout(const core::Limits& limits, double deadline_s) {
  if (limits.timeout_s) return *limits.timeout_s;
  return std::ceil(deadline_s) + 30;
}

std::vector<std::string> TemplateWeakenings(const Json& job) {
  std::vector<std::string> out;
  const Json pod = job.value("/spec/template/spec"_json_pointer, Json::object());
  for (const char* host : {"hostNetwork", "hostPID", "hostIPC"}) {
    if (pod.value(host, false)) out.push_back(fmt::format("jobTemplate sets {}: true", host));
  }
  if (pod.value("automountServiceAccountToken", false)) {
    out.push_back("jobTemplate mounts the service-account token (automountServiceAccountToken)");
  }
  auto root_in = [&](const Json& sc, const std::string& where) {
    if (!sc.is_object()) return;
    if (sc.contains("runAsUser") && sc["runAsUser"] == 0)
      out.push_back(fmt::format("jobTemplate runs {} as uid 0", where));
    if (sc.contains("runAsNonRoot") && sc["runAsNonRoot"] == false)
      out.push_back(
          fmt::format("jobTemplate allows {} to run as root (runAsNonRoot: false)", where));
  };
  root_in(pod.value("securityContext", Json::object()), "the pod");
  const Json containers = pod.value("containers", Json::array());
  if (containers.size() > 1) {
    out.push_back(
        fmt::format("jobTemplate adds {} container(s) beside the probe", containers.size() - 1));
  }
  for (const Json& c : containers) {
    const Json sc = c.value("securityContext", Json::object());
    const std::string who = fmt::format("container {}", c.value("name", "?"));
    root_in(sc, who);
    if (sc.value("privileged", false))
      out.push_back(fmt::format("jobTemplate makes {} privileged", who));
    if (sc.value("allowPrivilegeEscalation", false))
      out.push_back(fmt::format("jobTemplate allows privilege escalation in {}", who));
    if (sc.contains("readOnlyRootFilesystem") && sc["readOnlyRootFilesystem"] == false)
      out.push_back(fmt::format("jobTemplate gives {} a writable root filesystem", who));
    const Json add = sc.value("/capabilities/add"_json_pointer, Json::array());
    if (add.is_array() && !add.empty())
      out.push_back(fmt::format("jobTemplate adds capabilities {} to {}", add.dump(), who));
  }
  return out;
}

Json BuildJob(const KubeSettings& s, const JobRequest& r) {
  const int64_t active =
      static_cast<int64_t>(std::ceil(r.timeout_s + 2 + s.pod_start_timeout_s + s.pod_settle_s));
  Json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", JobName(r.run_id, r.invocation)}, {"labels", Labels(r)}}},
              {"spec",
               {{"backoffLimit", 0},
                {"activeDeadlineSeconds", active},
                {"ttlSecondsAfterFinished", 300},
                {"template", DefaultPodTemplate(s, r)}}}};
  ApplyTemplate(job, s.job_template);
  Enforce(job, s, r);
  return job;
}

Json BuildAdmissionPod(const KubeSettings& s, const JobRequest& r) {
  const Json job = BuildJob(s, r);
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", DnsLabel(job["metadata"]["name"].get<std::string>() + "-admission", 63)},
                {"labels", job["spec"]["template"]["metadata"]["labels"]},
                {"annotations", job["metadata"]["annotations"]}}},
              {"spec", job["spec"]["template"]["spec"]}};
  pod["spec"].erase("runtimeClassName");
  return pod;
}

std::string CanaryName(const std::string& run_id) {
  const std::string run = run_id.starts_with("sp-") ? run_id.substr(3) : run_id;
  return DnsLabel("spc-" + run, 63);  // a Service name must start with a letter (DNS-1035)
}

// The canary's ports, served by its container and exposed by its Service (port == targetPort).
constexpr std::tuple<const char*, int, const char*> kCanaryPorts[] = {
    {"http", kCanaryHttpPort, "TCP"},
    {"tcp", kCanaryTcpPort, "TCP"},
    {"udp", kCanaryUdpPort, "UDP"},
    {"dns", kCanaryDnsPort, "UDP"},
    {"dns-tcp", kCanaryDnsPort, "TCP"}};

Json BuildCanaryPod(const KubeSettings& s, const std::string& run_id, const std::string& nonce,
                    const std::string& script, double max_s) {
  const Json labels = {{kRunLabel, LabelValue(run_id)}, {kRoleLabel, "canary"}};
  Json ports = Json::array();
  for (const auto& [name, port, protocol] : kCanaryPorts) {
    ports.push_back({{"name", name}, {"containerPort", port}, {"protocol", protocol}});
  }
  Json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", CanaryName(run_id)}, {"labels", labels}}},
      {"spec",
       {{"restartPolicy", "Never"},
        {"activeDeadlineSeconds", static_cast<int64_t>(std::ceil(max_s)) + 60},
        {"automountServiceAccountToken", false},
        {"enableServiceLinks", false},
        {"terminationGracePeriodSeconds", 1},
        {"securityContext",
         {{"runAsNonRoot", true},
          {"runAsUser", 65534},
          {"runAsGroup", 65534},
          {"seccompProfile", {{"type", "RuntimeDefault"}}},
          {"sysctls", {{{"name", "net.ipv4.ip_unprivileged_port_start"}, {"value", "0"}}}}}},
        {"containers",
         {{{"name", "canary"},
           {"image", s.image},
           {"command", {"python3", "-u", "-c", script, nonce, fmt::format("{}", std::ceil(max_s))}},
           {"ports", ports},
           {"resources",
            {{"requests", {{"cpu", "10m"}, {"memory", "32Mi"}}},
             {"limits", {{"cpu", "500m"}, {"memory", "128Mi"}}}}},
           {"securityContext",
            {{"allowPrivilegeEscalation", false},
             {"readOnlyRootFilesystem", true},
             {"capabilities", {{"drop", {"ALL"}}}}}}}}}}}};
  if (s.canary_template.is_object() && !s.canary_template.empty()) {
    const Json ours = pod;
    pod.merge_patch(s.canary_template);
    for (const char* key : {"metadata", "spec"}) {  // a patch that nulled or replaced them
      if (!pod[key].is_object()) pod[key] = ours[key];
    }
    if (!pod["metadata"]["labels"].is_object()) pod["metadata"]["labels"] = Json::object();
    pod["metadata"]["name"] = ours["metadata"]["name"];
    for (const auto& [k, v] : labels.items()) pod["metadata"]["labels"][k] = v;
    pod["spec"]["containers"] = ours["spec"]["containers"];
    pod["apiVersion"] = "v1";
    pod["kind"] = "Pod";
  }
  if (!s.namespace_name.empty()) pod["metadata"]["namespace"] = s.namespace_name;
  return pod;
}

std::string CanaryServiceName(const std::string& run_id, const std::string& family) {
  if (family.empty()) return CanaryName(run_id);
  const std::string base = CanaryName(run_id);  // at most 63: the suffix replaces its tail
  const std::string suffix = family == "IPv6" ? "-v6" : "-v4";
  return base.substr(0, std::min(base.size(), 63 - suffix.size())) + suffix;
}

Json BuildCanaryService(const std::string& run_id, const std::string& family) {
  Json ports = Json::array();
  for (const auto& [name, port, protocol] : kCanaryPorts) {
    ports.push_back({{"name", name}, {"port", port}, {"targetPort", port}, {"protocol", protocol}});
  }
  Json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata",
               {{"name", CanaryServiceName(run_id, family)},
                {"labels", {{kRunLabel, LabelValue(run_id)}}}}},
              {"spec",
               {{"type", "ClusterIP"},
                {"selector", {{kRunLabel, LabelValue(run_id)}, {kRoleLabel, "canary"}}},
                {"ports", ports}}}};
  if (!family.empty()) {
    svc["spec"]["ipFamilies"] = Json::array({family});
    svc["spec"]["ipFamilyPolicy"] = "SingleStack";
  }
  return svc;
}

void AnnotateRunFolder(Json& object, const std::string& folder) {
  if (folder.empty() || !object.is_object()) return;
  object["metadata"]["annotations"][kRunFolderAnnotation] = folder;
  if (object.contains("spec") && object["spec"].is_object() &&
      object["spec"].contains("template")) {
    object["spec"]["template"]["metadata"]["annotations"][kRunFolderAnnotation] = folder;
  }
}

Json BuildDenyAllEgressPolicy(const std::string& run_id, const std::string& arm) {
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata",
           {{"name", PolicyName(run_id, arm)}, {"labels", {{kRunLabel, LabelValue(run_id)}}}}},
          {"spec",
           {{"podSelector",
             {{"matchLabels", {{kRunLabel, LabelValue(run_id)}, {kArmLabel, LabelValue(arm)}}}}},
            {"policyTypes", {"Egress"}},
            {"egress", Json::array()}}}};
}

std::expected<Json, std::string> PolicyFromYaml(const std::string& text, const std::string& source,
                                                const std::string& run_id, const std::string& arm) {
  auto j = config::YamlToJson(text, source);
  if (!j) return std::unexpected("network policy " + j.error().ToString());
  const auto is_string = [](const Json& o, const char* key, const char* want) {
    const auto it = o.find(key);
    return it != o.end() && it->is_string() && (want == nullptr || *it == want);
  };
  if (!j->is_object() || !is_string(*j, "kind", "NetworkPolicy") || !j->contains("spec") ||
      !(*j)["spec"].is_object()) {
    return std::unexpected(fmt::format(
        "network policy {}: expected one networking.k8s.io/v1 NetworkPolicy with a spec", source));
  }
  Json p = *j;
  p["apiVersion"] = "networking.k8s.io/v1";
  if (!p.contains("metadata") || !p["metadata"].is_object()) p["metadata"] = Json::object();
  for (const char* key : {"name", "labels", "annotations"}) {
    const auto it = p["metadata"].find(key);
    if (it == p["metadata"].end() || it->is_null()) continue;
    if (std::string_view(key) == "name" ? !it->is_string() : !it->is_object()) {
      return std::unexpected(
          fmt::format("network policy {}: metadata.{}: expected {}", source, key,
                      std::string_view(key) == "name" ? "a string" : "a mapping"));
    }
  }
  const std::string original =
      is_string(p["metadata"], "name", nullptr) ? p["metadata"]["name"].get<std::string>() : "";
  p["metadata"].erase("namespace");
  p["metadata"].erase("resourceVersion");
  p["metadata"].erase("uid");
  p["metadata"].erase("creationTimestamp");
  p["metadata"]["name"] = PolicyName(run_id, arm);
  p["metadata"]["labels"][kRunLabel] = LabelValue(run_id);
  p["metadata"]["annotations"]["sandprobe.io/source"] =
      original.empty() ? source : fmt::format("{} ({})", original, source);
  // Narrowed to the arm's own pods (the user's selector AND run + arm): a `podSelector: {}` would
  // otherwise also select the control's pods and the in-cluster canary, and the control would no
  // longer be a control.
  Json& selector = p["spec"]["podSelector"];
  if (!selector.is_object()) selector = Json::object();
  if (!selector.contains("matchLabels") || !selector["matchLabels"].is_object()) {
    selector["matchLabels"] = Json::object();
  }
  selector["matchLabels"][kRunLabel] = LabelValue(run_id);
  selector["matchLabels"][kArmLabel] = LabelValue(arm);
  return p;
}

std::string JsonToYaml(const Json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  Emit(out, value);
  return std::string(out.c_str()) + "\n";
}

}  // namespace sandprobe::drivers::kube
