// A sandprobe home: the tree holding probes/, suites/ and manifests/ (`--home`, SANDPROBE_HOME),
// read once, and what a run is made of from it. Functions of files only: no flags, no signals,
// no terminal; cli/ turns flags into a RunRequest and prints what comes back.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "core/probe.h"
#include "drivers/registry.h"
#include "runner/run.h"

namespace sandprobe::home {

// A problem with the home or a file a run names: exit code 3 (message, and a hint for the fix).
struct HomeError {
  std::string message;
  std::string hint;
};

struct Home {
  std::filesystem::path root;
  std::vector<core::ProbeDescriptor> probes;  // probes/ (config::LoadProbeTree)
  std::string preamble;                       // probes/lib/preamble.py

  std::filesystem::path DefaultSuite() const { return root / "suites/default.yaml"; }
  std::filesystem::path DefaultSandbox() const { return root / "manifests/bubblewrap.yaml"; }
};

// The probe tree of `root` only (`list`, `explain`, `validate`). Errors: the tree's first error
// (file:line:col and field), hint "pass --home or set SANDPROBE_HOME to the tree".
std::expected<std::vector<core::ProbeDescriptor>, HomeError> LoadProbes(
    const std::filesystem::path& root);

// The probe tree and the preamble, each read once (`run`, `render`). Errors: LoadProbes's, or
// "<root>/probes/lib/preamble.py is missing" (an empty preamble counts as missing).
std::expected<Home, HomeError> OpenHome(const std::filesystem::path& root);

// The control manifest a candidate names: a path (relative to the candidate's folder, then the
// working directory) or a name looked up as <candidate dir>/<name>.yaml, then
// <home>/manifests/<name>.yaml and <home>/manifests/*/<name>.yaml, then as a manifest `name:`
// (what the matrix shows, e.g. docker-open) in those folders. Elsewhere than beside the
// candidate, only the candidate's driver or the local baseline counts; two matches are an error
// listing both.
std::expected<std::filesystem::path, std::string> FindControl(const core::Manifest& candidate,
                                                              const std::filesystem::path& home);

// What `sandprobe run` was asked, as plain values (cli/run_command.cc fills it from its flags).
struct RunRequest {
  std::string suite;                   // "" = Home::DefaultSuite()
  std::vector<std::string> sandboxes;  // empty = Home::DefaultSandbox()
  std::vector<std::string> controls;   // empty = each candidate's control:
  std::string expect;                  // expectations file; "" = none
  drivers::ArmOptions arm_options;     // --nodes, --context
  int jobs = 4;
  bool deadline_workers = false;  // runner::RunOptions::deadline_workers
  int repeat = 1;
  runner::Timing timing;
  std::string canary_bind = "127.0.0.1";
  uint16_t canary_dns_port = 0;
  std::string canary_bind6;
  std::filesystem::path canary_dir;  // made absolute (the token path travels into the probe)
  std::string reaper_path;
};

// The run `request` asks for, from `home`: the suite (checked against the probe tree), every
// candidate manifest, each candidate's control (FindControl) unless `request.controls` names
// them (a control shared by several candidates once), the arms expanded by their kinds
// (kubernetes --nodes), the expectations. options.make_driver is drivers::MakeDriver. `warn`
// hears what the operator should know as soon as it is found (a candidate with no control: its
// rows will be INCONCLUSIVE), whatever comes after. Errors: the first file that cannot be used,
// with file:line:col and a hint.
std::expected<runner::RunOptions, HomeError> RunSpecFrom(
    const Home& home, const RunRequest& request,
    const std::function<void(const std::string&)>& warn);

}  // namespace sandprobe::home
