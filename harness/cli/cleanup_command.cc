// `sandprobe cleanup`: removes what earlier runs left behind when they could not clean up (the
// harness was SIGKILLed, or the Kubernetes API server stopped answering): planted canary token
// folders (<canary dir>/sp-*), fill-tmp and dev-shm files (<dir>/.sandprobe-fill-*), and what
// each driver kind's leftover sweep finds (drivers/registry.h): Docker containers labelled
// sandprobe.run and, for each `--kubernetes MANIFEST`, the Jobs, Pods and NetworkPolicies labelled
// sandprobe.io/run in that manifest's cluster and namespace. What belongs to a run that is still
// alive (its canary folder's .lock is held) is left alone. Processes cannot be left behind:
// sandprobe-reaper dies with the harness (PR_SET_PDEATHSIG) and kills its tree.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "drivers/registry.h"
#include "report/escape.h"
#include "runner/host_canaries.h"
#include "runner/secrets.h"

namespace sandprobe::cli {

namespace fs = std::filesystem;

void AddCleanup(CLI::App& app, CleanupArgs& a) {
  CLI::App* c = app.add_subcommand("cleanup", "Remove leftovers of earlier interrupted runs");
  c->add_option("--canary-dir", a.canary_dir,
                "canary folder of those runs (default: ~/.cache/sandprobe)");
  c->add_option("--tmp", a.tmp_dirs,
                "folders where fill-tmp/dev-shm probes wrote (default: /tmp and /dev/shm)");
  c->add_flag("--dry-run", a.dry_run, "only list what would be removed");
  c->add_option("--kubernetes", a.kubernetes,
                "kubernetes manifest, repeatable: remove Jobs, Pods and NetworkPolicies of dead "
                "runs (label sandprobe.io/run) in its cluster and namespace");
  c->add_option("--context", a.context, "kubeconfig context for the --kubernetes manifests");
  c->add_option("--run", a.run,
                "only what this run left (its id: the first line of `sandprobe run`, report.json "
                "run_id); other runs on a shared daemon or cluster are not looked at");
}

int DoCleanup(const CleanupArgs& a) {
  int removed = 0, spared = 0;
  std::error_code ec;
  const fs::path canary_dir = a.canary_dir.empty() ? DefaultCanaryDir() : a.canary_dir;
  for (const auto& e : fs::directory_iterator(canary_dir, ec)) {
    if (!e.path().filename().string().starts_with("sp-")) continue;
    if (!a.run.empty() && e.path().filename() != a.run) continue;
    if (runner::RunFolderInUse(e.path())) {  // a live run holds its .lock
      std::cout << "in use by a running sandprobe, left alone: " << e.path().string() << "\n";
      ++spared;
      continue;
    }
    std::cout << (a.dry_run ? "would remove " : "removed ") << e.path().string() << "\n";
    if (!a.dry_run) fs::remove_all(e.path(), ec);
    ++removed;
    // The run's keyring canary in the user keyring (cred.keyring), left by a killed run.
    if (!a.dry_run && runner::RemoveLeftoverUserKey(e.path().filename().string())) {
      std::cout << "removed the keyring canary of " << e.path().filename().string() << "\n";
      ++removed;
    }
  }
  // A run given by id whose folder lives under another canary dir: its key, unless it is alive.
  if (!a.run.empty() && !a.dry_run && !runner::RunFolderInUse(canary_dir / a.run) &&
      !fs::exists(canary_dir / a.run) && runner::RemoveLeftoverUserKey(a.run)) {
    std::cout << "removed the keyring canary of " << a.run << "\n";
    ++removed;
  }
  // fill-tmp and dev-shm files carry no run id; one written to in the last 10 minutes may belong to
  // a live run (every probe is bounded by its deadline), so only older ones are removed.
  const auto cutoff = fs::file_time_type::clock::now() - std::chrono::minutes(10);
  const std::vector<std::string> tmp_dirs =
      a.tmp_dirs.empty() ? std::vector<std::string>{"/tmp", "/dev/shm"} : a.tmp_dirs;
  for (const std::string& t : tmp_dirs) {
    for (const auto& e : fs::directory_iterator(t, ec)) {
      if (!e.path().filename().string().starts_with(".sandprobe-fill-")) continue;
      std::error_code time_ec;
      if (fs::last_write_time(e.path(), time_ec) > cutoff) {
        std::cout << "written in the last 10 minutes, left alone: " << e.path().string() << "\n";
        ++spared;
        continue;
      }
      std::cout << (a.dry_run ? "would remove " : "removed ") << e.path().string() << "\n";
      if (!a.dry_run) fs::remove_all(e.path(), ec);
      ++removed;
    }
  }
  // What the driver kinds find: their default places first (the local Docker daemon), then the
  // place each --kubernetes manifest names.
  drivers::SweepRequest request;
  request.context = a.context;
  request.dry_run = a.dry_run;
  request.only_run = a.run;
  // A run's objects name its canary folder (label sandprobe.run-folder): a run with another
  // canary dir (another HOME, --canary-dir) is alive while that folder's lock is held.
  request.run_alive = [&](const std::string& run, const std::string& folder) {
    // Only a folder named after the run: a label is whatever the daemon's user wrote.
    return runner::RunFolderInUse(canary_dir / run) ||
           (fs::path(folder).is_absolute() && fs::path(folder).filename() == run &&
            runner::RunFolderInUse(folder));
  };
  request.say = [](const std::string& line) {
    std::cout << report::TerminalText(line, 2000) << "\n";
  };
  std::set<std::string> places;
  request.places_seen = &places;
  drivers::SweepTally tally;
  for (const drivers::DriverKind& kind : drivers::Registry().kinds()) {
    if (kind.sweep_leftovers && !kind.sweep_needs_manifest) kind.sweep_leftovers(request, tally);
  }
  for (const std::string& path : a.kubernetes) {
    auto m = drivers::LoadManifest(path);
    const drivers::DriverKind* kind = m ? drivers::Registry().Find(m->driver) : nullptr;
    if (!m || kind == nullptr || !kind->sweep_needs_manifest) {
      request.say(fmt::format(
          "kubernetes {}: {}", path,
          !m ? m.error().ToString() : "not a kubernetes manifest (driver " + m->driver + ")"));
      ++tally.failed;
      continue;
    }
    drivers::SweepRequest with_manifest = request;
    with_manifest.manifest = &*m;
    kind->sweep_leftovers(with_manifest, tally);
  }
  removed += tally.removed;
  spared += tally.spared;
  std::cout << fmt::format("{} leftover(s) {}, {} left alone", removed,
                           a.dry_run ? "found" : "removed", spared);
  if (tally.failed > 0) {
    std::cout << fmt::format(", {} kubernetes error(s)\n", tally.failed);
    return 1;
  }
  std::cout << "\n";
  return 0;
}

}  // namespace sandprobe::cli
