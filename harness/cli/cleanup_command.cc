// `sandprobe cleanup`: removes what earlier runs left behind when they could not clean up (the
// harness was SIGKILLed, or the Kubernetes API server stopped answering): planted canary token
// folders (<canary dir>/sp-*), fill-tmp and dev-shm files (<dir>/.sandprobe-fill-*), Docker
// containers labelled sandprobe.run, and, for each `--kubernetes MANIFEST`, the Jobs, Pods and
// NetworkPolicies labelled sandprobe.io/run in that manifest's cluster and namespace. What belongs
// to a run that is still alive (its canary folder's .lock is held) is left alone. Processes cannot
// be left behind: sandprobe-reaper dies with the harness (PR_SET_PDEATHSIG) and kills its tree.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <map>
#include <set>

#include "cli/commands.h"
#include "config/config.h"
#include "drivers/docker/docker_driver.h"
#include "drivers/docker/engine_client.h"
#include "drivers/kubernetes/api_client.h"
#include "drivers/kubernetes/kubeconfig.h"
#include "drivers/kubernetes/objects.h"
#include "report/escape.h"
#include "runner/secrets.h"

namespace sandprobe::cli {

namespace fs = std::filesystem;

namespace {

namespace kube = drivers::kube;
using Json = nlohmann::json;

constexpr char kRunLabel[] = "sandprobe.io/run";

struct Tally {
  int removed = 0, spared = 0, failed = 0;
};

// One kind of object the kubernetes driver creates: its collection path and the extra query of
// its deletecollection (the same as the driver's own Cleanup()).
struct KubeKind {
  std::string name;       // "jobs"
  std::string path;       // "/apis/batch/v1/namespaces/<ns>/jobs"
  std::string delete_qs;  // "&propagationPolicy=Background"
};

std::vector<KubeKind> KubeKinds(const std::string& ns) {
  return {
      {"jobs", "/apis/batch/v1/namespaces/" + ns + "/jobs", "&propagationPolicy=Background"},
      {"pods", "/api/v1/namespaces/" + ns + "/pods", "&gracePeriodSeconds=1"},
      {"networkpolicies", "/apis/networking.k8s.io/v1/namespaces/" + ns + "/networkpolicies", ""}};
}

// Objects labelled sandprobe.io/run in one namespace, by run id: {run -> ["jobs/name", ...]}.
std::expected<std::map<std::string, std::vector<std::string>>, std::string> ListByRun(
    const kube::ApiClient& client, const std::vector<KubeKind>& kinds,
    kube::Clock::time_point deadline, const std::string& only_run = "") {
  std::map<std::string, std::vector<std::string>> by_run;
  const std::string selector = only_run.empty() ? kRunLabel : kube::RunSelector(only_run);
  for (const KubeKind& k : kinds) {
    auto list = client.Call("GET", k.path + "?labelSelector=" + kube::QueryEscape(selector),
                            nullptr, deadline);
    if (!list)
      return std::unexpected(fmt::format("listing {}: {}", k.name, list.error().ToString()));
    const Json items = list->body.is_object() ? list->body.value("items", Json::array()) : Json();
    for (const Json& item : items.is_array() ? items : Json::array()) {
      if (!item.is_object()) continue;
      const Json labels = item.value("/metadata/labels"_json_pointer, Json::object());
      const std::string run = labels.is_object() ? labels.value(kRunLabel, "") : "";
      const std::string name = item.value("/metadata/name"_json_pointer, std::string());
      if (!run.empty() && !name.empty()) by_run[run].push_back(k.name + "/" + name);
    }
  }
  return by_run;
}

// Leftovers of dead runs in the cluster and namespace of one kubernetes manifest. Source: the
// API server's list endpoints (labelSelector sandprobe.io/run), deletecollection per run.
void CleanKubernetes(const std::string& manifest_path, const CleanupArgs& a,
                     const fs::path& canary_dir, std::set<std::string>& seen, Tally& t) {
  auto fail = [&](const std::string& what) {
    std::cout << "kubernetes " << manifest_path << ": " << report::TerminalText(what, 2000) << "\n";
    ++t.failed;
  };
  auto m = config::LoadManifest(manifest_path);
  if (!m) return fail(m.error().ToString());
  if (m->driver != "kubernetes")
    return fail("not a kubernetes manifest (driver " + m->driver + ")");
  if (!a.context.empty()) m->driver_config["context"] = a.context;
  auto settings = kube::ParseSettings(*m);
  if (!settings) return fail(settings.error());
  auto conn = kube::ResolveConnection(m->driver_config, kube::ProcessEnv());
  if (!conn) return fail(conn.error());
  const std::string ns = !settings->namespace_name.empty() ? settings->namespace_name
                         : !conn->namespace_name.empty()   ? conn->namespace_name
                                                           : "default";
  const std::string where = fmt::format("{} namespace {}", conn->server, ns);
  if (!seen.insert(where).second) return;  // another manifest named the same place
  kube::ApiOptions options;
  options.call_timeout_s = settings->api_timeout_s;
  const kube::ApiClient client(*conn, options);
  const auto deadline = kube::After(std::max(30.0, settings->api_timeout_s * 3));
  const std::vector<KubeKind> kinds = KubeKinds(ns);
  auto by_run = ListByRun(client, kinds, deadline);
  if (!by_run) return fail(where + ": " + by_run.error());
  if (by_run->empty())
    std::cout << "kubernetes " << where << ": nothing labelled " << kRunLabel << "\n";
  for (const auto& [run, objects] : *by_run) {
    if (runner::RunFolderInUse(canary_dir / run)) {
      std::cout << fmt::format(
          "kubernetes {}: {} object(s) of a running sandprobe (run {}), "
          "left alone\n",
          where, objects.size(), run);
      t.spared += static_cast<int>(objects.size());
      continue;
    }
    for (const std::string& o : objects) {
      std::cout << (a.dry_run ? "would remove " : "removed ")
                << fmt::format("kubernetes {}/{} (run {})\n", ns, o, run);
    }
    t.removed += static_cast<int>(objects.size());
    if (a.dry_run) continue;
    const std::string sel = "?labelSelector=" + kube::QueryEscape(kube::RunSelector(run));
    for (const KubeKind& k : kinds) {
      auto del = client.Call("DELETE", k.path + sel + k.delete_qs, nullptr, deadline);
      if (!del && del.error().code != 404) {
        fail(fmt::format("{}: deleting {} of run {}: {}", where, k.name, run,
                         del.error().ToString()));
      }
    }
    // Confirm: pods may take a moment to terminate on a real cluster.
    while (true) {
      auto left = ListByRun(client, kinds, deadline, run);
      if (left && left->empty()) break;
      if (!left || !kube::SleepFor(0.5, deadline, nullptr)) {
        fail(fmt::format(
            "{}: run {}: not confirmed gone: {}", where, run,
            left ? fmt::format("{}", fmt::join(left->begin()->second, ", ")) : left.error()));
        break;
      }
    }
  }
}

}  // namespace

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
  // Kubernetes objects of earlier runs, in the cluster/namespace of each --kubernetes manifest.
  Tally kube_tally;
  std::set<std::string> seen;
  for (const std::string& m : a.kubernetes) CleanKubernetes(m, a, canary_dir, seen, kube_tally);
  removed += kube_tally.removed;
  spared += kube_tally.spared;
  std::cout << fmt::format("{} leftover(s) {}, {} left alone", removed,
                           a.dry_run ? "found" : "removed", spared);
  if (kube_tally.failed > 0) {
    std::cout << fmt::format(", {} kubernetes error(s)\n", kube_tally.failed);
    return 1;
  }
  std::cout << "\n";
  return 0;
}

}  // namespace sandprobe::cli
