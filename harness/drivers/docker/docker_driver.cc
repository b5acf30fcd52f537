#include "drivers/docker/docker_driver.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "core/facts.h"
#include "core/output.h"
#include "drivers/docker/log_stream.h"
#include "drivers/docker/oom_events.h"
#include "drivers/given_secrets.h"

namespace sandprobe::drivers {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

constexpr double kCallTimeout = 15;  // seconds, every API call but the log read
// How long a container that ended 137 by itself may wait for the daemon's late `oom` event
// (oom_events.h): the TaskOOM lags the exit by milliseconds, more on a loaded machine.
constexpr double kLateOomWaitS = 3;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Path(std::string_view fmt_path, std::string_view id = "") {
  return std::string(kDockerApi) + fmt::format(fmt::runtime(fmt_path), id);
}

}  // namespace

DockerDriver::DockerDriver(Json config, DriverContext context)
    : config_(std::move(config)),
      context_(std::move(context)),
      client_(config_.value("endpoint", DefaultDockerEndpoint())) {}

std::expected<void, SetupError> DockerDriver::Prepare() {
  const std::string image = config_.value("image", "");
  if (image.empty()) return std::unexpected(SetupError{"docker.image is missing", "name an image"});
  auto ping = client_.Call("GET", "/_ping", "", 5);
  if (!ping || ping->status != 200) {
    return std::unexpected(
        SetupError{fmt::format("the Docker daemon at {} does not answer: {}", client_.endpoint(),
                               ping ? fmt::format("HTTP {}", ping->status) : ping.error()),
                   "start it: ci/services/dockerd (or set DOCKER_HOST / docker.endpoint)"});
  }
  auto inspect = client_.Call("GET", Path("/images/{}/json", image), "", kCallTimeout);
  if (!inspect) return std::unexpected(SetupError{inspect.error(), "check the daemon"});
  if (inspect->status == 404) {
    return std::unexpected(
        SetupError{fmt::format("image {} is not present and sandprobe never pulls", image),
                   "build it offline: ci/images/probe-image"});
  }
  return {};
}

Json DockerDriver::CreateBody(const Invocation& inv) const {
  Json cmd = config_.value("cmd", Json::array({"python3", "-I", "-S", "-u", "-c", "{script}"}));
  for (auto& arg : cmd) {
    if (arg.is_string() && arg.get<std::string>() == "{script}") arg = inv.script;
  }
  // The manifest's ContainerConfig fields first (checked by docker_section.cc to the ones the
  // driver takes), then the driver's own, which win: Image, Cmd, User, HostConfig, and the
  // sandprobe.* labels cleanup finds containers by.
  Json body = config_.contains("config") && config_["config"].is_object() ? config_["config"]
                                                                          : Json::object();
  if (!body.contains("Labels") || !body["Labels"].is_object()) body["Labels"] = Json::object();
  body["Labels"].update(Json{{"sandprobe.run", context_.run_id},
                             {"sandprobe.run-folder", context_.run_folder},
                             {"sandprobe.invocation", inv.invocation},
                             {"sandprobe.probe", inv.probe}});
  body["Image"] = config_.value("image", "");
  body["Cmd"] = cmd;
  body["HostConfig"] = config_.value("hostConfig", Json::object());
  if (config_.contains("user")) body["User"] = config_["user"];
  return body;
}

std::vector<std::pair<std::string, std::string>> DockerDriver::GivenSecrets() const {
  std::vector<std::string> env;
  if (const auto c = config_.find("config"); c != config_.end() && c->is_object()) {
    if (const auto e = c->find("Env"); e != c->end() && e->is_array()) {
      for (const Json& item : *e) {
        if (item.is_string()) env.push_back(item.get<std::string>());
      }
    }
  }
  return SecretLookingEntries(env);
}

std::expected<void, std::string> DockerDriver::Remove(const std::string& id) {
  auto r = client_.Call("DELETE", Path("/containers/{}?force=1", id), "", kCallTimeout);
  if (!r) return std::unexpected(r.error());
  if (r->status != 204 && r->status != 404) {
    return std::unexpected(fmt::format("ContainerDelete: HTTP {}", r->status));
  }
  std::lock_guard lock(mu_);
  live_.erase(id);
  return {};
}

bool DockerDriver::OomKilled(const std::string& id, const Json& state, bool stopped_by_harness,
                             double since_unix) {
  if (state.value("OOMKilled", false)) return true;  // ContainerInspect State.OOMKilled
  // A container the harness killed, or one that did not end 137 (SIGKILL), was not OOM killed
  // without State.OOMKilled saying so; a 137 asks the event log, which may lag (oom_events.h).
  if (stopped_by_harness || state.value("ExitCode", -1) != 137) return false;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(kLateOomWaitS));
  while (true) {
    auto r =
        client_.Call("GET", std::string(kDockerApi) + OomEventsQuery(id, since_unix, UnixNow()), "",
                     kCallTimeout);
    if (r && r->status == 200 && HasOomEvent(r->body, id)) return true;
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

core::Observation DockerDriver::Execute(const Invocation& inv, const std::atomic<bool>& cancel) {
  core::Observation obs;
  obs.driver_facts[core::fact::kDriver] = "docker";
  const auto start = Clock::now();
  const double since_unix = UnixNow() - 1;  // the daemon's clock is this machine's
  auto fail = [&](std::string why) {
    obs.ending = core::Ending::kHarnessError;
    obs.harness_error = std::move(why);
    obs.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
    return obs;
  };
  const std::string name = fmt::format("{}-{}", context_.run_id, inv.invocation);
  double phase = SteadySeconds();
  auto next_phase = [&](const char* ended) {  // the timeline: `ended` is over, the next begins
    obs.timeline.push_back(PhaseSince(ended, phase));
    phase = obs.timeline.back().end_s;
  };
  auto created = client_.Call("POST", Path("/containers/create?name={}", name),
                              CreateBody(inv).dump(), kCallTimeout);
  next_phase("create");
  if (!created) return fail(created.error());
  if (created->status != 201) {
    return fail(fmt::format("ContainerCreate: HTTP {}: {}", created->status,
                            core::SanitizeUtf8(created->body.substr(0, 500))));
  }
  const std::string id = Json::parse(created->body, nullptr, false).value("Id", "");
  if (id.empty()) return fail("ContainerCreate returned no Id");
  {
    std::lock_guard lock(mu_);
    live_.insert(id);
  }
  obs.driver_facts[core::fact::kContainer] = id.substr(0, 12);
  auto started = client_.Call("POST", Path("/containers/{}/start", id), "", kCallTimeout);
  next_phase("start");
  if (!started || (started->status != 204 && started->status != 304)) {
    Remove(id);
    return fail(started ? fmt::format("ContainerStart: HTTP {}: {}", started->status,
                                      core::SanitizeUtf8(started->body.substr(0, 500)))
                        : started.error());
  }
  // Wait: ContainerWait (condition not-running) answers when the container stops; the deadline
  // or Ctrl-C ends the call instead, and the container is killed and waited for. One call
  // instead of an inspection every 100 ms: the daemon does no work until the container ends.
  // The deadline counts from ContainerStart's answer, when the probe's process exists: create
  // and start (gVisor boots its kernel there, seconds on a loaded machine) are bounded by their
  // own call timeouts and must not eat the probe's time (docs/traps.md: a deadline that includes
  // the sandbox's boot turns a timeout the sandbox enforced into a harness deadline).
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(inv.deadline_s));
  const std::string wait_path = Path("/containers/{}/wait?condition=not-running", id);
  auto waited = client_.Call("POST", wait_path, "", inv.deadline_s, {}, &cancel);
  bool stopped_by_harness = false;
  if (!waited && (Clock::now() >= deadline || cancel.load())) {
    obs.ending = cancel.load() ? core::Ending::kInterrupted : core::Ending::kDeadline;
    stopped_by_harness = true;
    // Kill, then wait; a container slow to stop (gVisor's teardown on a loaded machine, a process
    // stuck in the kernel) or a kill the daemon did not carry out gets the kill again, up to a
    // minute in all, before the invocation becomes a harness error.
    for (int attempt = 0; attempt < 4; ++attempt) {
      client_.Call("POST", Path("/containers/{}/kill", id), "", kCallTimeout);
      waited = client_.Call("POST", wait_path, "", kCallTimeout);
      if (waited) break;
    }
  }
  if (!waited || waited->status != 200) {
    Remove(id);
    return fail(waited ? fmt::format("ContainerWait: HTTP {}: {}", waited->status,
                                     core::SanitizeUtf8(waited->body.substr(0, 500)))
                       : waited.error());
  }
  obs.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  // When the harness heard the container stopped (ContainerWait's answer): at or after its real
  // end, so a canary hit logged before it was sent while the container still ran.
  obs.driver_facts[core::fact::kCallEndedUnixMs] = UnixMsNow();
  next_phase("wait");
  // How it ended: the state ContainerWait does not give (OOMKilled, the runtime, the PID mode).
  auto inspected = client_.Call("GET", Path("/containers/{}/json", id), "", kCallTimeout);
  if (!inspected || inspected->status != 200) {
    Remove(id);
    return fail(inspected ? fmt::format("ContainerInspect: HTTP {}", inspected->status)
                          : inspected.error());
  }
  const Json state = Json::parse(inspected->body, nullptr, false);
  if (!state.is_object() || !state.contains("State") || !state["State"].is_object()) {
    Remove(id);
    return fail("ContainerInspect: unreadable answer");
  }
  if (state["State"].value("Running", false)) {
    Remove(id);
    return fail("ContainerInspect: the container still runs after ContainerWait answered");
  }
  const Json& st = state["State"];
  obs.driver_facts[core::fact::kOomKilled] = OomKilled(id, st, stopped_by_harness, since_unix);
  obs.driver_facts[core::fact::kExitCode] = st.value("ExitCode", -1);
  obs.driver_facts[core::fact::kRuntime] =
      state.value("/HostConfig/Runtime"_json_pointer, std::string());
  obs.driver_facts[core::fact::kEndedBy] = stopped_by_harness ? "harness deadline" : "sandbox";
  if (!stopped_by_harness) {
    obs.ending = core::Ending::kExited;
    obs.exit_code = st.value("ExitCode", -1);
    // Nothing outlives a container's init when the container has its own PID namespace: the
    // kernel kills the namespace with it (proc.outlives-call). With PidMode host (or another
    // container's) that proof does not hold, and no survivors fact is given.
    const std::string pid_mode = state.value("/HostConfig/PidMode"_json_pointer, std::string());
    if (pid_mode.empty() || pid_mode == "private") {
      obs.driver_facts[core::fact::kSurvivors] = 0;
      obs.driver_facts[core::fact::kSurvivorsSource] =
          "Engine API ContainerInspect: State.Running false, HostConfig.PidMode private: the "
          "container's PID namespace ended with its init";
    }
  }
  // Logs after the end: records were flushed line by line, so a killed probe's last words are
  // there. The demultiplexed stream goes through the same collector as a local process's pipes.
  // The daemon can answer 409 for a moment while it finishes the container's exit: retry with a
  // fresh collector, so an error body never reaches the evidence.
  std::expected<EngineResponse, std::string> logs;
  for (int attempt = 0; attempt < 5; ++attempt) {
    core::OutputCollector collector(context_.nonce);
    LogDemuxer demux([&](int stream, std::string_view bytes) {
      if (stream == 2) {
        collector.FeedStderr(bytes);
      } else {
        collector.FeedStdout(bytes);
      }
    });
    logs = client_.Call("GET", Path("/containers/{}/logs?stdout=1&stderr=1", id), "", 60,
                        [&](std::string_view bytes) { demux.Feed(bytes); });
    if (!logs || logs->status != 409) {
      collector.Finish(obs);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  next_phase("inspect+logs");
  const auto removed = Remove(id);
  next_phase("remove");
  if (!logs) return fail("ContainerLogs: " + logs.error());
  if (logs->status != 200) return fail(fmt::format("ContainerLogs: HTTP {}", logs->status));
  // A daemon that cannot confirm the removal went away or is failing during this invocation:
  // what it reported (a container it was itself stopping, partial logs) is not evidence.
  if (!removed) return fail(removed.error() + " (the Docker daemon stopped answering?)");
  if (cancel.load() && obs.ending != core::Ending::kInterrupted) {
    obs.ending = core::Ending::kInterrupted;
  }
  return obs;
}

void DockerDriver::Cleanup() {
  const std::string filter =
      QueryEscape(Json{{"label", {fmt::format("sandprobe.run={}", context_.run_id)}}}.dump());
  auto list =
      client_.Call("GET", Path("/containers/json?all=1&filters={}", filter), "", kCallTimeout);
  std::set<std::string> ids;
  {
    std::lock_guard lock(mu_);
    ids = live_;
  }
  if (list && list->status == 200) {
    const Json arr = Json::parse(list->body, nullptr, false);
    if (arr.is_array()) {
      for (const Json& c : arr) ids.insert(c.value("Id", ""));
    }
  }
  for (const std::string& id : ids) {
    if (!id.empty()) Remove(id);
  }
}

}  // namespace sandprobe::drivers
