// `sandprobe cleanup`: removes what earlier runs left behind when they could not clean up (the
// harness was SIGKILLed): planted canary token folders (<canary dir>/sp-*), fill-tmp and dev-shm
// files (<dir>/.sandprobe-fill-*) and Docker containers labelled sandprobe.run. What belongs to a
// run that is still alive (its canary folder's .lock is held) is left alone. Processes cannot be
// left behind: sandprobe-reaper dies with the harness (PR_SET_PDEATHSIG) and kills its tree first.
#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "cli/commands.h"
#include "drivers/docker/docker_driver.h"
#include "drivers/docker/engine_client.h"
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
}

int DoCleanup(const CleanupArgs& a) {
  int removed = 0, spared = 0;
  std::error_code ec;
  const fs::path canary_dir = a.canary_dir.empty() ? DefaultCanaryDir() : a.canary_dir;
  for (const auto& e : fs::directory_iterator(canary_dir, ec)) {
    if (!e.path().filename().string().starts_with("sp-")) continue;
    if (runner::RunFolderInUse(e.path())) {  // a live run holds its .lock
      std::cout << "in use by a running sandprobe, left alone: " << e.path().string() << "\n";
      ++spared;
      continue;
    }
    std::cout << (a.dry_run ? "would remove " : "removed ") << e.path().string() << "\n";
    if (!a.dry_run) fs::remove_all(e.path(), ec);
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
  // Containers of earlier runs (label sandprobe.run), unless that run is still alive.
  const drivers::EngineClient docker(drivers::DefaultDockerEndpoint());
  auto ping = docker.Call("GET", "/_ping", "", 3);
  if (!ping || ping->status != 200) {
    std::cout << "docker: no daemon at " << docker.endpoint() << ", no containers to look at\n";
  } else {
    const std::string filter = drivers::UrlEncode(R"({"label":["sandprobe.run"]})");
    auto list = docker.Call(
        "GET", std::string(drivers::kDockerApi) + "/containers/json?all=1&filters=" + filter, "",
        15);
    const nlohmann::json arr = list && list->status == 200
                                   ? nlohmann::json::parse(list->body, nullptr, false)
                                   : nlohmann::json::array();
    for (const auto& c : arr.is_array() ? arr : nlohmann::json::array()) {
      const std::string id = c.value("Id", "");
      const std::string run = c.value("/Labels/sandprobe.run"_json_pointer, std::string());
      if (id.empty()) continue;
      if (!run.empty() && runner::RunFolderInUse(canary_dir / run)) {
        std::cout << "container of a running sandprobe, left alone: " << id.substr(0, 12) << "\n";
        ++spared;
        continue;
      }
      std::cout << (a.dry_run ? "would remove container " : "removed container ")
                << id.substr(0, 12) << " (run " << run << ")\n";
      if (!a.dry_run) {
        docker.Call("DELETE", std::string(drivers::kDockerApi) + "/containers/" + id + "?force=1",
                    "", 15);
      }
      ++removed;
    }
  }
  std::cout << fmt::format("{} leftover(s) {}, {} left alone\n", removed,
                           a.dry_run ? "found" : "removed", spared);
  return 0;
}

}  // namespace sandprobe::cli
