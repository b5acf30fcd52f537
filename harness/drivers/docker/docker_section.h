// The `docker:` manifest section, checked when a manifest is loaded (`run`, `validate`), and
// against a live daemon on request (`sandprobe validate --daemon`).
//
//   docker:
//     image: sandprobe-probe:local             # required string
//     user: "65534:65534"                      # optional string (ContainerConfig.User)
//     cmd: [python3, -I, -S, -u, -c, "{script}"]  # optional list of strings, "{script}" once
//     endpoint: unix:///var/run/docker.sock    # optional unix:// or tcp:// (DOCKER_HOST's form)
//     hostConfig: {...}                        # Engine API HostConfig, checked field by field
//     config: {Env: [NAME=value], ...}         # Engine API ContainerConfig, kConfigTaken only
//
// These are the keys DockerDriver reads (docker_driver.cc: image, cmd, user, hostConfig, config,
// endpoint); any other key is an error naming the nearest known one (a ContainerConfig field
// written under docker: itself, e.g. docker.env, says to move it under docker.config).
//
// config is checked against the same generated table (ContainerConfig in
// engine_schema_table.inc) and the same rules as hostConfig, and takes only kConfigTaken; the
// container's image, command and user stay docker.image/cmd/user, the attach and TTY fields stay
// the driver's. Env entries are NAME=value; sandprobe.* labels and a relative WorkingDir are
// refused.
//
// hostConfig is checked against engine_schema_table.inc (generated from moby's api/docs/v1.NN
// .yaml): field names exactly as the Engine API spells them, JSON types recursively (lists,
// objects, maps and their items), null only where the spec says x-nullable. Three choices, and
// why:
//   - Case. The daemon decodes with Go's encoding/json, which matches names case-insensitively,
//     so `ReadOnlyRootfs` does reach ReadonlyRootfs; the check still wants the spec's spelling:
//     two spellings of one field are last-one-wins, and reports and the inspect facts use the
//     spec's names.
//   - Types are the spec's: `CapDrop: ALL` is refused although the daemon's StrSlice would take
//     a lone string; `Memory: 256m` is refused as the daemon would (HTTP 400 at create) and an
//     empty `Memory:` (JSON null) too, which the daemon takes silently as "no limit".
//   - A field added after API v1.41 is an ERROR, not a warning. DockerDriver sends every request
//     at /v1.41 (kDockerApi). A daemon of that version does not know the field and drops it
//     silently; a newer daemon, answering a v1.41 request, resets some of them on purpose
//     (Annotations, BindOptions.CreateMountpoint), refuses others (BindOptions.
//     ReadOnlyForceRecursive, VolumeOptions.Subpath: "needs API v1.44/v1.45 or newer") and leaves
//     the rest to the daemon's version (moby daemon/server/router/container/container_routes.go,
//     postContainersCreate). In no case does the manifest mean what it says, and a hardening
//     field dropped in silence would turn into a wrong verdict.
// Fields that a later spec removed (KernelMemory after v1.41, KernelMemoryTCP after v1.51) are in
// v1.41 and accepted here; `validate --daemon` warns when the daemon's API no longer has them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <expected>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "core/manifest.h"

namespace sandprobe::drivers {

// The ContainerConfig fields docker.config takes, and why each matters here:
//   Env              what the container's processes get: API keys reach real containers this
//                    way; secret-looking ones are looked for by cred.env-secrets
//                    (DockerDriver::GivenSecrets)
//   WorkingDir       where the probe runs and relative paths land (the fs rows)
//   Entrypoint       the wrapper real images start first (an init, a shell exporting variables):
//                    its processes are what the probe's /proc shows
//   Labels           what operators select containers by (policies, runtimes)
//   NetworkDisabled  an isolation switch of its own: no network but loopback
//   Hostname, Domainname  the names the sandbox reports (pasted configurations carry them)
inline constexpr std::string_view kConfigTaken[] = {
    "Env", "WorkingDir", "Entrypoint", "Labels", "NetworkDisabled", "Hostname", "Domainname"};

// The `docker:` section of `root` (read from `file`): each key and each hostConfig/config field
// checked on its own, every mistake with file:line:col and the dotted field
// (docker.hostConfig.Mounts[0].Type), the first carrying the others (ConfigError::more).
std::expected<void, config::ConfigError> CheckDockerSection(const std::string& file,
                                                            const YAML::Node& root);

// The same check, then the section as the JSON DockerDriver builds its Engine API requests from
// (core::Manifest::section of a docker manifest). The section is already in the API's own
// vocabulary (hostConfig and config are sent as they are), so JSON is its typed form.
std::expected<nlohmann::json, config::ConfigError> ReadDockerSection(const std::string& file,
                                                                     const YAML::Node& root);

// What a daemon says about itself (Engine API SystemVersion, GET /version).
struct DaemonApi {
  std::string endpoint;
  std::string version;          // Version, e.g. "20.10.24"
  std::string api_version;      // ApiVersion, e.g. "1.41"
  std::string min_api_version;  // MinAPIVersion, e.g. "1.12"
};

// A checked `docker:` section against that daemon: warnings for hostConfig fields the daemon's
// API version does not have (added later or removed since); an error when the daemon cannot
// take the driver's v1.41 requests at all (older than v1.41, or a minimum above it).
std::expected<std::vector<config::ConfigError>, std::string> CompareWithDaemon(
    const std::string& file, const YAML::Node& root, const DaemonApi& daemon);

// `sandprobe validate --daemon` for one docker manifest: asks the daemon it names (docker.
// endpoint, else DOCKER_HOST or the default socket) and compares. Warnings are one line each;
// errors say how to get a daemon (ci/services/dockerd, DOCKER_HOST).
std::expected<std::vector<std::string>, std::string> CheckDockerAgainstDaemon(
    const core::Manifest& manifest);

}  // namespace sandprobe::drivers
