#include "drivers/kubernetes/diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "drivers/kubernetes/job_run.h"

namespace sandprobe::drivers::kube {
namespace {

using Json = nlohmann::json;

std::string LabelsText(const Json& labels) {
  std::vector<std::string> parts;
  if (labels.is_object()) {
    for (const auto& [k, v] : labels.items()) {
      parts.push_back(fmt::format("{}={}", k, v.is_string() ? v.get<std::string>() : v.dump()));
    }
  }
  return "{" + fmt::format("{}", fmt::join(parts, ", ")) + "}";
}

std::string PeerText(const Json& peer) {
  if (!peer.is_object()) return "?";
  if (peer.contains("ipBlock")) {
    std::string t = "ipBlock " + peer["ipBlock"].value("cidr", std::string("?"));
    if (const Json& ex = peer["ipBlock"].value("except", Json()); ex.is_array() && !ex.empty()) {
      t += " except " + fmt::format("{}", fmt::join(ex, " "));
    }
    return t;
  }
  std::vector<std::string> parts;
  if (peer.contains("namespaceSelector"))
    parts.push_back("namespaceSelector " + peer["namespaceSelector"].dump());
  if (peer.contains("podSelector")) parts.push_back("podSelector " + peer["podSelector"].dump());
  return parts.empty() ? "?" : fmt::format("{}", fmt::join(parts, " "));
}

// Seconds since the epoch of a metadata.creationTimestamp ("2026-11-30T10:35:53Z").
std::optional<double> ParseRfc3339(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  return static_cast<double>(timegm(&tm));
}

double SecondsSinceEpochNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A Kubernetes age: "40s", "12m", "5h", "3d".
std::string Age(double s) {
  if (s < 120) return fmt::format("{:.0f}s", s);
  if (s < 7200) return fmt::format("{:.0f}m", s / 60);
  if (s < 172800) return fmt::format("{:.0f}h", s / 3600);
  return fmt::format("{:.0f}d", s / 86400);
}

}  // namespace

// The bodies, which may throw nlohmann::json::exception on a field of an unexpected type; the
// public functions below catch it.
std::optional<bool> SelectorMatchesUnchecked(const Json& selector, const Json& labels);
std::string PolicySummaryUnchecked(const Json& policy);
std::vector<std::string> CniHintsUnchecked(const Json& nodes, const Json& daemonsets);
RuledOut CheckPolicyArmUnchecked(const ApiClient& client, const PolicyArmView& view,
                                 Clock::time_point deadline);

std::optional<bool> SelectorMatches(const Json& selector, const Json& labels) {
  try {
    return SelectorMatchesUnchecked(selector, labels);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a field of an unexpected type: not understood
  }
}

std::optional<bool> SelectorMatchesUnchecked(const Json& selector, const Json& labels) {
  if (selector.is_null()) return true;
  if (!selector.is_object()) return std::nullopt;
  const Json l = labels.is_object() ? labels : Json::object();
  if (const Json& ml = selector.value("matchLabels", Json()); !ml.is_null()) {
    if (!ml.is_object()) return std::nullopt;
    for (const auto& [k, v] : ml.items()) {
      if (!l.contains(k) || l[k] != v) return false;
    }
  }
  if (const Json& me = selector.value("matchExpressions", Json()); !me.is_null()) {
    if (!me.is_array()) return std::nullopt;
    for (const Json& e : me) {
      if (!e.is_object() || !e.value("key", Json()).is_string()) return std::nullopt;
      const std::string key = e["key"];
      const std::string op = e.value("operator", "");
      const Json values = e.value("values", Json::array());
      const bool has = l.contains(key);
      const bool in = has && values.is_array() && std::ranges::find(values, l[key]) != values.end();
      if (op == "In") {
        if (!in) return false;
      } else if (op == "NotIn") {
        if (in) return false;
      } else if (op == "Exists") {
        if (!has) return false;
      } else if (op == "DoesNotExist") {
        if (has) return false;
      } else {
        return std::nullopt;
      }
    }
  }
  return true;
}

std::string PolicySummary(const Json& policy) {
  try {
    return PolicySummaryUnchecked(policy);
  } catch (const nlohmann::json::exception&) {
    return "a policy this reader does not understand: " + policy.dump().substr(0, 200);
  }
}

std::string PolicySummaryUnchecked(const Json& policy) {
  const Json spec = policy.is_object() ? policy.value("spec", Json::object()) : Json::object();
  const Json types = spec.value("policyTypes", Json::array());
  std::string out = "policyTypes " + types.dump();
  const bool egress_type =
      types.is_array() && std::ranges::find(types, Json("Egress")) != types.end();
  if (!egress_type) return out + ": egress is not isolated by this policy";
  const Json rules = spec.value("egress", Json::array());
  if (!rules.is_array() || rules.empty()) return out + ", deny all egress";
  std::vector<std::string> texts;
  for (const Json& r : rules) {
    std::vector<std::string> ports;
    for (const Json& p : r.value("ports", Json::array())) {
      const std::string proto = p.value("protocol", std::string("TCP"));
      std::string port = p.contains("port") ? (p["port"].is_string() ? p["port"].get<std::string>()
                                                                     : p["port"].dump())
                                            : "all";
      if (p.contains("endPort")) port += "-" + p["endPort"].dump();
      ports.push_back(port + "/" + proto);
    }
    std::vector<std::string> to;
    for (const Json& peer : r.value("to", Json::array())) to.push_back(PeerText(peer));
    texts.push_back(fmt::format("ports {} to {}",
                                ports.empty() ? "all" : fmt::format("{}", fmt::join(ports, ", ")),
                                to.empty() ? "any" : fmt::format("{}", fmt::join(to, ", "))));
  }
  return fmt::format("{}, {} egress rule(s) allowing: {}", out, rules.size(),
                     fmt::join(texts, "; "));
}

std::vector<std::string> CniHints(const Json& nodes, const Json& daemonsets) {
  try {
    return CniHintsUnchecked(nodes, daemonsets);
  } catch (const nlohmann::json::exception&) {
    return {};
  }
}

std::vector<std::string> CniHintsUnchecked(const Json& nodes, const Json& daemonsets) {
  std::vector<std::string> hints;
  auto add = [&](std::string h) {
    if (std::ranges::find(hints, h) == hints.end()) hints.push_back(std::move(h));
  };
  for (const Json& n : ListItems(nodes)) {
    const Json ann = n.value("/metadata/annotations"_json_pointer, Json::object());
    if (!ann.is_object()) continue;
    for (const auto& [k, v] : ann.items()) {
      if (k.starts_with("flannel.alpha.coreos.com/")) {
        add("flannel (node annotation " + k + "; flannel alone does not enforce NetworkPolicy)");
      } else if (k.starts_with("projectcalico.org/")) {
        add("calico (node annotation " + k + ")");
      } else if (k.starts_with("io.cilium") || k.starts_with("network.cilium.io/")) {
        add("cilium (node annotation " + k + ")");
      } else if (k == "k3s.io/node-args" && v.is_string()) {
        const bool off = v.get<std::string>().find("--disable-network-policy") != std::string::npos;
        add(off ? "k3s started with --disable-network-policy (node annotation k3s.io/node-args): "
                  "its embedded policy controller is off"
                : "k3s (node annotation k3s.io/node-args; its embedded policy controller is on "
                  "unless --disable-network-policy)");
      }
    }
  }
  for (const Json& d : ListItems(daemonsets)) {
    const std::string name = StringAt(d, "/metadata/name");
    for (const char* cni : {"calico", "cilium", "flannel", "kube-router", "antrea", "weave"}) {
      if (name.find(cni) != std::string::npos) add(fmt::format("{} (DaemonSet {})", cni, name));
    }
  }
  return hints;
}

std::string RuledOut::Line() const {
  std::string out = "ruled out before concluding: " + fmt::format("{}", fmt::join(facts, "; "));
  if (!not_checked.empty()) {
    out += ". Not checked: " + fmt::format("{}", fmt::join(not_checked, "; "));
  }
  return out;
}

RuledOut CheckPolicyArm(const ApiClient& client, const PolicyArmView& view,
                        Clock::time_point deadline) {
  try {
    return CheckPolicyArmUnchecked(client, view, deadline);
  } catch (const nlohmann::json::exception& e) {
    return RuledOut{{}, {std::string("the API server's answers (malformed: ") + e.what() + ")"}};
  }
}

RuledOut CheckPolicyArmUnchecked(const ApiClient& client, const PolicyArmView& view,
                                 Clock::time_point deadline) {
  RuledOut r;
  auto get = [&](const std::string& path) { return client.Call("GET", path, nullptr, deadline); };
  auto why = [](const ApiError& e) { return e.ToString().substr(0, 200); };

  auto policy = get(fmt::format("/apis/networking.k8s.io/v1/namespaces/{}/networkpolicies/{}",
                                view.ns, view.policy_name));
  if (!policy) {
    r.not_checked.push_back(
        fmt::format("the policy {} as stored ({})", view.policy_name, why(policy.error())));
  } else {
    r.facts.push_back(
        fmt::format("policy {} as stored: {}", view.policy_name, PolicySummary(policy->body)));
    if (view.pod_labels.is_null()) {
      r.not_checked.push_back("whether the policy selects the probe pods (no pod was seen)");
    } else {
      const Json selector = policy->body.value("/spec/podSelector"_json_pointer, Json::object());
      const auto sel = SelectorMatches(selector, view.pod_labels);
      // Only the labels the selector asks about (a Job's pods carry many more).
      Json asked = Json::object();
      auto ask = [&](const std::string& key) {
        asked[key] = view.pod_labels.is_object() && view.pod_labels.contains(key)
                         ? view.pod_labels[key]
                         : Json("<absent>");
      };
      if (selector.is_object()) {
        const Json match_labels = selector.value("matchLabels", Json::object());
        if (match_labels.is_object()) {
          for (const auto& [k, v] : match_labels.items()) ask(k);
        }
        const Json match_expressions = selector.value("matchExpressions", Json::array());
        for (const Json& e : match_expressions.is_array() ? match_expressions : Json::array()) {
          if (e.is_object() && e.value("key", Json()).is_string()) ask(e["key"]);
        }
      }
      r.facts.push_back(fmt::format("the probe pods' stored labels {} {} by its podSelector",
                                    LabelsText(asked),
                                    !sel   ? "(selector not understood)"
                                    : *sel ? "are selected"
                                           : "are NOT selected"));
    }
  }
  // Policies add up: others in the namespace that select the probe pods may allow what this
  // one denies.
  if (auto same =
          get(fmt::format("/apis/networking.k8s.io/v1/namespaces/{}/networkpolicies", view.ns));
      !same) {
    r.not_checked.push_back(
        fmt::format("other NetworkPolicies in {} ({})", view.ns, why(same.error())));
  } else {
    std::vector<std::string> others;
    for (const Json& p : ListItems(same->body)) {
      if (!p.is_object() || StringAt(p, "/metadata/name") == view.policy_name) continue;
      const Json selector = p.value("/spec/podSelector"_json_pointer, Json::object());
      if (!view.pod_labels.is_null() &&
          !SelectorMatches(selector, view.pod_labels).value_or(true)) {
        continue;
      }
      others.push_back(fmt::format("{} ({})", StringAt(p, "/metadata/name"), PolicySummary(p)));
    }
    r.facts.push_back(
        others.empty() ? fmt::format("no other NetworkPolicy in {} selects the probe pods", view.ns)
                       : fmt::format("other NetworkPolicies in {} select the probe pods and "
                                     "add up with it: {}",
                                     view.ns, fmt::join(others, "; ")));
  }
  if (view.host_network) {
    r.facts.push_back(
        "the probe pods run with hostNetwork: true, and the NetworkPolicy API leaves "
        "host-network pods to the plugin (most never apply a policy to them; kube-router "
        "matches them by the node's IP)");
  }
  if (auto served = get("/apis/networking.k8s.io/v1"); !served) {
    r.not_checked.push_back("networking.k8s.io/v1 discovery (" + why(served.error()) + ")");
  } else {
    bool has = false;
    for (const Json& res : served->body.value("resources", Json::array())) {
      has = has || (res.is_object() && res.value("name", "") == "networkpolicies");
    }
    r.facts.push_back(has ? "networking.k8s.io/v1 networkpolicies served"
                          : "networking.k8s.io/v1 does NOT list networkpolicies");
  }
  if (auto all = get("/apis/networking.k8s.io/v1/networkpolicies"); !all) {
    r.not_checked.push_back("NetworkPolicies in other namespaces (" + why(all.error()) + ")");
  } else {
    int others = 0;
    double oldest = -1;
    for (const Json& p : ListItems(all->body)) {
      if (StringAt(p, "/metadata/namespace") == view.ns) continue;
      ++others;
      if (auto t = ParseRfc3339(StringAt(p, "/metadata/creationTimestamp"))) {
        oldest = std::max(oldest, SecondsSinceEpochNow() - *t);
      }
    }
    r.facts.push_back(others == 0
                          ? "no NetworkPolicy in other namespaces"
                          : fmt::format("{} NetworkPolicy(ies) in other namespaces{}", others,
                                        oldest >= 0 ? ", oldest " + Age(oldest) + " old" : ""));
  }
  r.facts.push_back(view.server_version.empty() ? "server version not read"
                                                : "server " + view.server_version);
  Json nodes, daemonsets;
  if (auto n = get("/api/v1/nodes"); n) {
    nodes = n->body;
  } else {
    r.not_checked.push_back("node annotations (" + why(n.error()) + ")");
  }
  if (auto d = get("/apis/apps/v1/namespaces/kube-system/daemonsets"); d) {
    daemonsets = d->body;
  } else {
    r.not_checked.push_back("DaemonSets in kube-system (" + why(d.error()) + ")");
  }
  if (!nodes.is_null() || !daemonsets.is_null()) {
    const auto hints = CniHints(nodes, daemonsets);
    r.facts.push_back(hints.empty() ? "no CNI hint in what was readable"
                                    : "CNI hints: " + fmt::format("{}", fmt::join(hints, ", ")));
  }
  return r;
}

}  // namespace sandprobe::drivers::kube
