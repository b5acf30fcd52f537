// `sandprobe cleanup`: removes what earlier runs left behind when they could not clean up (the
// harness was SIGKILLed): planted canary token folders (<canary dir>/sp-*) and fill-tmp files
// (<dir>/.sandprobe-fill-*). Processes cannot be left behind: sandprobe-reaper dies with the
// harness (PR_SET_PDEATHSIG) and kills its tree first.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"

namespace sandprobe::cli {

namespace fs = std::filesystem;

void AddCleanup(CLI::App& app, CleanupArgs& a) {
  CLI::App* c = app.add_subcommand("cleanup", "Remove leftovers of earlier interrupted runs");
  c->add_option("--canary-dir", a.canary_dir,
                "canary folder of those runs (default: ~/.cache/sandprobe)");
  c->add_option("--tmp", a.tmp_dirs, "folders where fill-tmp probes wrote (default: /tmp)");
  c->add_flag("--dry-run", a.dry_run, "only list what would be removed");
}

int DoCleanup(const CleanupArgs& a) {
  int removed = 0;
  auto sweep = [&](const fs::path& dir, std::string_view prefix) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (!e.path().filename().string().starts_with(prefix)) continue;
      std::cout << (a.dry_run ? "would remove " : "removed ") << e.path().string() << "\n";
      if (!a.dry_run) fs::remove_all(e.path(), ec);
      ++removed;
    }
  };
  sweep(a.canary_dir.empty() ? DefaultCanaryDir() : a.canary_dir, "sp-");
  for (const std::string& t : a.tmp_dirs.empty() ? std::vector<std::string>{"/tmp"} : a.tmp_dirs) {
    sweep(t, ".sandprobe-fill-");
  }
  std::cout << fmt::format("{} leftover(s) {}\n", removed, a.dry_run ? "found" : "removed");
  return 0;
}

}  // namespace sandprobe::cli
