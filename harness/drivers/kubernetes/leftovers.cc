#include "drivers/kubernetes/leftovers.h"

#include <fmt/format.h>

#include <map>

#include "drivers/kubernetes/api_client.h"
#include "drivers/kubernetes/kube_section.h"
#include "drivers/kubernetes/kubeconfig.h"
#include "drivers/kubernetes/objects.h"

namespace sandprobe::drivers::kube {
namespace {

using Json = nlohmann::json;

// One kind of object the kubernetes driver creates: its collection path and the extra query of
// its deletecollection (the same as the driver's own Cleanup()).
struct ObjectKind {
  std::string name;       // "jobs"
  std::string path;       // "/apis/batch/v1/namespaces/<ns>/jobs"
  std::string delete_qs;  // "&propagationPolicy=Background"
  bool by_name = false;   // no deletecollection: each listed object is deleted by name
};

std::vector<ObjectKind> ObjectKinds(const std::string& ns) {
  return {
      {"jobs", "/apis/batch/v1/namespaces/" + ns + "/jobs", "&propagationPolicy=Background"},
      {"pods", "/api/v1/namespaces/" + ns + "/pods", "&gracePeriodSeconds=1"},
      {"networkpolicies", "/apis/networking.k8s.io/v1/namespaces/" + ns + "/networkpolicies", ""},
      {"services", "/api/v1/namespaces/" + ns + "/services", "", true}};  // the in-cluster canary
}

// Objects labelled sandprobe.io/run in one namespace, by run id: {run -> ["jobs/name", ...]}, and
// the run folder their annotation names, if any (`folders`: {run -> folder}).
std::expected<std::map<std::string, std::vector<std::string>>, std::string> ListByRun(
    const ApiClient& client, const std::vector<ObjectKind>& kinds, Clock::time_point deadline,
    const std::string& only_run = "", std::map<std::string, std::string>* folders = nullptr) {
  std::map<std::string, std::vector<std::string>> by_run;
  const std::string selector = only_run.empty() ? kRunLabel : RunSelector(only_run);
  for (const ObjectKind& k : kinds) {
    auto list =
        client.Call("GET", k.path + "?labelSelector=" + QueryEscape(selector), nullptr, deadline);
    if (!list)
      return std::unexpected(fmt::format("listing {}: {}", k.name, list.error().ToString()));
    const Json items = list->body.is_object() ? list->body.value("items", Json::array()) : Json();
    for (const Json& item : items.is_array() ? items : Json::array()) {
      if (!item.is_object()) continue;
      const Json labels = item.value("/metadata/labels"_json_pointer, Json::object());
      const std::string run = labels.is_object() ? labels.value(kRunLabel, "") : "";
      const std::string name = item.value("/metadata/name"_json_pointer, std::string());
      if (run.empty() || name.empty()) continue;
      by_run[run].push_back(k.name + "/" + name);
      const Json notes = item.value("/metadata/annotations"_json_pointer, Json::object());
      const Json folder = notes.is_object() ? notes.value(kRunFolderAnnotation, Json()) : Json();
      if (folders != nullptr && folder.is_string()) (*folders)[run] = folder.get<std::string>();
    }
  }
  return by_run;
}

}  // namespace

void SweepLeftovers(const SweepRequest& r, SweepTally& t) {
  if (r.manifest == nullptr) return;  // where to look comes from a manifest
  const core::Manifest& manifest = *r.manifest;
  auto fail = [&](const std::string& what) {
    r.say(fmt::format("kubernetes {}: {}", manifest.source_path, what));
    ++t.failed;
  };
  auto settings = SettingsOf(manifest);
  if (!settings) return fail(settings.error());
  if (!r.context.empty()) settings->cluster.context = r.context;
  auto conn = ResolveConnection(settings->cluster, ProcessEnv());
  if (!conn) return fail(conn.error());
  const std::string ns = !settings->namespace_name.empty() ? settings->namespace_name
                         : !conn->namespace_name.empty()   ? conn->namespace_name
                                                           : "default";
  const std::string where = fmt::format("{} namespace {}", conn->server, ns);
  if (r.places_seen != nullptr && !r.places_seen->insert(where).second) {
    return;  // another manifest named the same place
  }
  ApiOptions options;
  options.call_timeout_s = settings->api_timeout_s;
  const ApiClient client(*conn, options);
  const auto deadline = After(std::max(30.0, settings->api_timeout_s * 3));
  const std::vector<ObjectKind> kinds = ObjectKinds(ns);
  std::map<std::string, std::string> folders;
  auto by_run = ListByRun(client, kinds, deadline, r.only_run, &folders);
  if (!by_run) return fail(where + ": " + by_run.error());
  if (by_run->empty()) r.say(fmt::format("kubernetes {}: nothing labelled {}", where, kRunLabel));
  for (const auto& [run, objects] : *by_run) {
    if (r.run_alive(run, folders.contains(run) ? folders.at(run) : "")) {
      r.say(fmt::format("kubernetes {}: {} object(s) of a running sandprobe (run {}), left alone",
                        where, objects.size(), run));
      t.spared += static_cast<int>(objects.size());
      continue;
    }
    for (const std::string& o : objects) {
      r.say(fmt::format("{}kubernetes {}/{} (run {})", r.dry_run ? "would remove " : "removed ", ns,
                        o, run));
    }
    t.removed += static_cast<int>(objects.size());
    if (r.dry_run) continue;
    const std::string sel = "?labelSelector=" + QueryEscape(RunSelector(run));
    for (const ObjectKind& k : kinds) {
      std::vector<std::string> paths;
      if (!k.by_name) paths.push_back(k.path + sel + k.delete_qs);
      for (const std::string& o : objects) {
        if (k.by_name && o.starts_with(k.name + "/")) {
          paths.push_back(k.path + o.substr(k.name.size()));
        }
      }
      for (const std::string& path : paths) {
        auto del = client.Call("DELETE", path, nullptr, deadline);
        if (!del && del.error().code != 404) {
          fail(fmt::format("{}: deleting {} of run {}: {}", where, k.name, run,
                           del.error().ToString()));
        }
      }
    }
    // Confirm: a pod is gone only once its kubelet has stopped it, which takes longer when the
    // kubelet has just lost its API server (it watches again after a back-off), so the wait for
    // that is longer than for the calls, and says it is waiting.
    const auto gone_by = After(std::max(120.0, settings->api_timeout_s * 3));
    const auto tell_at = After(10.0);
    bool told = false;
    while (true) {
      auto left = ListByRun(client, kinds, gone_by, run);
      if (left && left->empty()) break;
      if (left && !told && Clock::now() >= tell_at) {
        r.say(fmt::format("kubernetes {}: run {}: waiting for {} to go", where, run,
                          fmt::join(left->begin()->second, ", ")));
        told = true;
      }
      if (!left || !SleepFor(0.5, gone_by, nullptr)) {
        fail(fmt::format(
            "{}: run {}: not confirmed gone: {}", where, run,
            left ? fmt::format("{}", fmt::join(left->begin()->second, ", ")) : left.error()));
        break;
      }
    }
  }
}

}  // namespace sandprobe::drivers::kube
