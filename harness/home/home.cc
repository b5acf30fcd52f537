#include "home/home.h"

#include <fstream>
#include <set>
#include <sstream>

#include "config/config.h"

namespace sandprobe::home {

namespace fs = std::filesystem;

std::expected<std::vector<core::ProbeDescriptor>, HomeError> LoadProbes(const fs::path& root) {
  auto probes = config::LoadProbeTree(root / "probes");
  if (!probes) {
    return std::unexpected(
        HomeError{probes.error().ToString(), "pass --home or set SANDPROBE_HOME to the tree"});
  }
  return std::move(*probes);
}

std::expected<Home, HomeError> OpenHome(const fs::path& root) {
  Home home{root, {}, {}};
  auto probes = LoadProbes(root);
  if (!probes) return std::unexpected(probes.error());
  home.probes = std::move(*probes);
  const fs::path preamble = root / "probes/lib/preamble.py";
  std::ifstream in(preamble);
  std::stringstream text;
  text << in.rdbuf();
  home.preamble = text.str();
  if (home.preamble.empty())
    return std::unexpected(HomeError{preamble.string() + " is missing", ""});
  return home;
}

std::expected<runner::RunOptions, HomeError> RunSpecFrom(
    const Home& home, const RunRequest& request,
    const std::function<void(const std::string&)>& warn) {
  runner::RunOptions opt;
  opt.probes = home.probes;
  opt.preamble = home.preamble;
  opt.make_driver = drivers::MakeDriver;
  // A file with several mistakes is refused on its first; Summary() says how many more there are.
  auto suite = config::LoadSuite(
      request.suite.empty() ? home.DefaultSuite() : fs::path(request.suite), opt.probes);
  if (!suite) return std::unexpected(HomeError{suite.error().Summary(), ""});
  opt.suite = std::move(*suite);

  std::vector<std::string> sandboxes = request.sandboxes;
  if (sandboxes.empty()) sandboxes.push_back(home.DefaultSandbox().string());
  std::vector<std::string> control_paths = request.controls;
  for (const std::string& path : sandboxes) {
    auto m = drivers::LoadManifest(path);
    if (!m) return std::unexpected(HomeError{m.error().Summary(), ""});
    if (request.controls.empty()) {
      if (m->control.empty()) {
        warn(path +
             " names no control: and no --control was given; its contained "
             "rows will be INCONCLUSIVE");
      } else {
        auto found = FindControl(*m, home.root);
        if (!found) return std::unexpected(HomeError{found.error(), "give --control MANIFEST"});
        control_paths.push_back(found->string());
      }
    }
    opt.candidates.push_back(std::move(*m));
  }
  std::set<std::string> seen;
  for (const std::string& path : control_paths) {
    auto m = drivers::LoadManifest(path);
    if (!m) return std::unexpected(HomeError{m.error().Summary(), ""});
    if (!seen.insert(m->name).second) continue;  // several candidates may share one control
    opt.controls.push_back(std::move(*m));
  }
  for (auto* arms : {&opt.candidates, &opt.controls}) {
    if (auto r = drivers::Registry().ExpandArms(*arms, request.arm_options); !r) {
      return std::unexpected(HomeError{r.error(),
                                       "check the kubeconfig and the cluster (sandprobe render "
                                       "shows what a run would submit)"});
    }
  }
  if (!request.expect.empty()) {
    auto loaded = config::LoadExpectations(request.expect);
    if (!loaded) {
      return std::unexpected(
          HomeError{loaded.error().Summary(), "sandprobe validate checks the file"});
    }
    opt.expectations = std::move(*loaded);
  }
  opt.jobs = request.jobs;
  opt.deadline_workers = request.deadline_workers;
  opt.repeat = request.repeat;
  opt.timing = request.timing;
  opt.canary_bind = request.canary_bind;
  opt.canary_dns_port = request.canary_dns_port;
  opt.canary_bind6 = request.canary_bind6;
  if (!request.canary_dir.empty()) opt.canary_dir = fs::absolute(request.canary_dir);
  opt.reaper_path = request.reaper_path;
  return opt;
}

}  // namespace sandprobe::home
