// The `kubernetes` kind: one Job per probe invocation (kubernetes_driver.h). Its section is read
// once on load into KubeSettings (kube_section.h) and `--nodes` before a run (names.h); it derives
// arms (arms.h), renders what a run would submit, and sweeps dead runs' objects (leftovers.h) in
// the cluster and namespace a manifest names.
#include <fmt/format.h>

#include <algorithm>

#include "drivers/kubernetes/arms.h"
#include "drivers/kubernetes/kube_section.h"
#include "drivers/kubernetes/kubernetes_driver.h"
#include "drivers/kubernetes/leftovers.h"
#include "drivers/kubernetes/names.h"
#include "drivers/kubernetes/objects.h"
#include "drivers/registry.h"

namespace sandprobe::drivers {

DriverKind KubernetesKind() {
  DriverKind k;
  k.name = "kubernetes";
  k.read_section = TypedReader(kube::ReadKubernetesSection);
  k.notes = kube::KubernetesSectionNotes;
  k.make = MakeKubernetesDriver;
  k.check_arm_options = [](const ArmOptions& options) -> std::expected<void, std::string> {
    if (options.nodes.empty() || options.nodes == "all") return {};
    auto r = kube::CheckLabelSelector(options.nodes);
    if (r) return {};
    return std::unexpected(
        fmt::format("'{}' is neither 'all' nor a label selector: {} (e.g. --nodes all, --nodes "
                    "kubernetes.io/hostname=node-1, --nodes 'pool in (a,b)')",
                    options.nodes, r.error()));
  };
  k.arm_variants = kube::ArmVariants;
  k.render = [](const core::Manifest& manifest, const std::string& run_id,
                const std::vector<Invocation>& invocations,
                const std::set<std::string>& placeholders_used)
      -> std::expected<std::vector<std::string>, std::string> {
    const bool canary = std::ranges::any_of(
        placeholders_used, [](const std::string& p) { return p.starts_with("canary.cluster."); });
    auto objects = RenderArm(manifest, run_id, invocations, canary);
    if (!objects) return std::unexpected(objects.error());
    // kubernetes.liveChange is no object: what the driver will do to each Job's running pod is
    // said above the Job, as a YAML comment.
    const auto settings = kube::SettingsOf(manifest);
    std::string live;
    if (settings && settings->live_change) {
      live = fmt::format(
          "# kubernetes.liveChange: PATCH this Job's pod {:g}s into the probe (settle {:g}s): {}\n",
          settings->live_change->after_s, settings->live_change->settle_s,
          settings->live_change->Patch().dump());
    }
    std::vector<std::string> documents;
    for (const nlohmann::json& o : *objects) {
      documents.push_back((o.value("kind", "") == "Job" ? live : "") + kube::JsonToYaml(o));
    }
    return documents;
  };
  k.sweep_leftovers = kube::SweepLeftovers;
  k.sweep_needs_manifest = true;
  return k;
}

}  // namespace sandprobe::drivers
