// `sandprobe render`: prints the exact objects a run would submit — for a kubernetes arm its
// NetworkPolicy, then one Job per probe (the dry-run Pod for the admission probe) — as
// multi-document YAML, with the placeholder run id and nonce `render`, for review before a run.
// What to print is the driver kind's own `render` (drivers/registry.h). Suite parameters that the
// run fills (canary addresses, planted secrets) stay as {placeholders}. Nothing is contacted.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/paths.h"
#include "config/config.h"
#include "core/params.h"
#include "drivers/registry.h"
#include "home/home.h"
#include "runner/plan.h"

namespace sandprobe::cli {
namespace {

namespace fs = std::filesystem;

}  // namespace

void AddRender(CLI::App& app, RenderArgs& a) {
  CLI::App* render = app.add_subcommand(
      "render",
      "Print the Kubernetes objects a run would submit (YAML), without contacting a cluster");
  render->add_option("--home", a.home, "sandprobe tree with probes/, suites/, manifests/");
  render->add_option("--sandbox", a.sandboxes, "kubernetes manifest, repeatable")->required();
  render->add_option("--suite", a.suite, "suite YAML (default: <home>/suites/default.yaml)");
  render->add_option("--probe", a.probe, "only this probe id");
}

int DoRender(const RenderArgs& a) {
  const auto tree = home::OpenHome(ResolveHome(a.home));
  if (!tree) return SetupError(tree.error().message, "pass --home");
  auto suite = config::LoadSuite(a.suite.empty() ? tree->DefaultSuite() : fs::path(a.suite));
  if (!suite) return SetupError(suite.error().Summary());
  std::map<std::string, std::string> placeholders;
  for (std::string_view p : runner::kPlaceholders) {
    placeholders[std::string(p)] = fmt::format("{{{}}}", p);
  }
  for (std::string_view p : runner::kArmPlaceholders) {
    placeholders[std::string(p)] = fmt::format("{{{}}}", p);
  }
  const std::string run_id = "render";
  bool any = false;
  for (const std::string& path : a.sandboxes) {
    auto m = drivers::LoadManifest(path);
    if (!m) return SetupError(m.error().Summary());
    const drivers::DriverKind* kind = drivers::Registry().Find(m->driver);
    if (kind == nullptr || !kind->render) {
      std::string renderable;
      for (const drivers::DriverKind& k : drivers::Registry().kinds()) {
        if (k.render) renderable += (renderable.empty() ? "" : ", ") + std::string(k.name);
      }
      return SetupError(
          fmt::format("{}: render prints what a run would submit to a cluster ({} "
                      "manifests); this manifest's driver is {}",
                      path, renderable, m->driver));
    }
    // The run's own planner: the same scripts, the same deadline (runner::ArmDeadline) as a run
    // with the default --default-timeout and --grace.
    auto planned = runner::PlanArmInvocations(*suite, tree->probes, *m, placeholders,
                                              tree->preamble, run_id, runner::Timing{}, a.probe);
    if (!planned) return SetupError(planned.error());
    std::vector<drivers::Invocation> invocations;
    for (runner::PlannedInvocation& p : *planned) {
      invocations.push_back({p.probe, p.invocation, std::move(p.script), p.deadline_s, {}});
      invocations.back().deploy = p.deploy;
    }
    if (!a.probe.empty() && invocations.empty()) {
      return SetupError(fmt::format("probe {} is not in the suite (or does not apply to {})",
                                    a.probe, m->driver));
    }
    auto documents = kind->render(*m, run_id, invocations, runner::PlaceholdersUsed(*suite));
    if (!documents) return SetupError(documents.error());
    std::cout << fmt::format("# arm {} ({}): {} object(s), run id '{}'\n", m->name, path,
                             documents->size(), run_id);
    for (const std::string& document : *documents) {
      std::cout << "---\n" << document;
      any = true;
    }
  }
  return any ? 0 : SetupError("nothing to render");
}

}  // namespace sandprobe::cli
