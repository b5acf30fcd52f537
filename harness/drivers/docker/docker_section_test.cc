// The `docker:` section check (docker_section.h): one mistake per manifest, one error naming the
// file, line, column and field, with the nearest known name where there is one; several mistakes,
// each reported; the daemon
// comparison of `sandprobe validate --daemon` with a made-up daemon and with none at all.
#include "drivers/docker/docker_section.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <tuple>
#include <vector>

#include "config/yaml_util.h"
#include "drivers/registry.h"

namespace sandprobe::drivers {
namespace {

constexpr char kHead[] = "name: d\ndriver: docker\n";  // lines 1-2; `docker:` is line 3

struct BadCase {
  const char* section;  // from `docker:` on
  int line;
  int column;
  const char* field;
  const char* message_part;
};

// Every case: one mistake, refused with exactly this place, field and message.
const BadCase kBadCases[] = {
    // The first manifest, verbatim: `envv` comes first and is named first.
    {"docker:\n  image: sandprobe-probe:local\n  envv: [\"A=1\"]\n"
     "  hostconfig: {NetworkMode: none}\n",
     5, 3, "docker.envv",
     "unknown field (expected one of: image, hostConfig, config, user, cmd, endpoint)"},
    // ... and with only its second mistake.
    {"docker:\n  image: sandprobe-probe:local\n  hostconfig: {NetworkMode: none}\n", 5, 3,
     "docker.hostconfig", "unknown field; did you mean hostConfig?"},
    // The second manifest, verbatim: the spelling first.
    {"docker:\n  image: sandprobe-probe:local\n"
     "  hostConfig: {NetworkMode: none, ReadOnlyRootfs: true, CapDrop: ALL}\n",
     5, 35, "docker.hostConfig.ReadOnlyRootfs", "unknown field; did you mean ReadonlyRootfs?"},
    // ... and its CapDrop alone.
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig: {NetworkMode: none, CapDrop: ALL}\n",
     5, 44, "docker.hostConfig.CapDrop",
     "expected a list of strings, not the string \"ALL\"; write [ALL]"},
    {"docker:\n  hostConfig: {NetworkMode: none}\n", 4, 3, "docker.image",
     "required field is missing"},
    {"docker:\n  image: [sandprobe-probe:local]\n", 4, 10, "docker.image",
     "expected a non-empty string, not a list"},
    {"docker:\n  image: sandprobe-probe:local\n  user: 65534\n", 5, 9, "docker.user",
     "quote it: \"65534\""},
    {"docker:\n  image: sandprobe-probe:local\n  cmd: python3 -c \"{script}\"\n", 5, 8,
     "docker.cmd", "expected a non-empty list of strings"},
    {"docker:\n  image: sandprobe-probe:local\n  cmd: [python3, -c, print(1)]\n", 5, 8,
     "docker.cmd", "expected exactly one \"{script}\" argument (found 0)"},
    {"docker:\n  image: sandprobe-probe:local\n  endpoint: /var/run/docker.sock\n", 5, 13,
     "docker.endpoint", "expected unix:///path/to/docker.sock or tcp://host:port"},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n    Memory: 256m\n", 6, 13,
     "docker.hostConfig.Memory",
     "expected an integer (bytes), not the string \"256m\"; docker run's 256m is 268435456"},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n    Memory:\n", 6, 5,
     "docker.hostConfig.Memory", "expected an integer (bytes), not an empty value (null)"},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n    ReadonlyRootfs: yes\n", 6, 21,
     "docker.hostConfig.ReadonlyRootfs", "expected true or false, not the string \"yes\""},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n    Tmpfs: {/tmp: 32}\n", 6, 19,
     "docker.hostConfig.Tmpfs./tmp", "expected a string, not 32; quote it: \"32\""},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n    Tmpfs: [/tmp]\n", 6, 12,
     "docker.hostConfig.Tmpfs", "expected a mapping of keys to values, not a list"},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n    LogConfig: {Typ: none}\n", 6, 17,
     "docker.hostConfig.LogConfig.Typ", "unknown field; did you mean Type?"},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n    LogConfig: json-file\n", 6, 16,
     "docker.hostConfig.LogConfig", "expected a mapping with Config, Type"},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n"
     "    Ulimits: [{Name: nofile, Soft: 64, Hard: lots}]\n",
     6, 46, "docker.hostConfig.Ulimits[0].Hard", "expected an integer, not the string \"lots\""},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n    Ulimits: [{Nme: nofile}]\n", 6,
     16, "docker.hostConfig.Ulimits[0].Nme", "unknown field; did you mean Name?"},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n"
     "    RestartPolicy: {Name: no, MaximumRetryCount: \"3\"}\n",
     6, 50, "docker.hostConfig.RestartPolicy.MaximumRetryCount",
     "expected an integer, not the string \"3\""},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n"
     "    Devices: [/dev/fuse]\n",
     6, 15, "docker.hostConfig.Devices[0]",
     "expected a mapping with CgroupPermissions, PathInContainer, PathOnHost, not the string"},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n"
     "    Mounts: [{Type: tmpfs, Target: /tmp, TmpfsOptions: {SizeBytes: 32m}}]\n",
     6, 68, "docker.hostConfig.Mounts[0].TmpfsOptions.SizeBytes", "docker run's 32m is 33554432"},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n    PortBindings: {80/tcp: "
     "[{HostPort: "
     "8080}]}\n",
     6, 40, "docker.hostConfig.PortBindings.80/tcp[0].HostPort", "quote it: \"8080\""},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n    NetworkDisabled: true\n", 6, 5,
     "docker.hostConfig.NetworkDisabled",
     "unknown field: NetworkDisabled is a ContainerConfig field, not HostConfig: write it under "
     "docker.config"},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n    NoSuchThing: true\n", 6, 5,
     "docker.hostConfig.NoSuchThing",
     "unknown field: HostConfig has no such field in Engine API v1.41..v1.55"},
    // docker.config: ContainerConfig, checked against the same generated table.
    {"docker:\n  image: sandprobe-probe:local\n  env: [AWS_SECRET_ACCESS_KEY=x]\n", 5, 3,
     "docker.env",
     "unknown field; env is a ContainerConfig field: write it under docker.config as Env"},
    {"docker:\n  image: sandprobe-probe:local\n  config: {Env: A_TOKEN=1}\n", 5, 17,
     "docker.config.Env",
     "expected a list of strings, not a string (9 characters, not shown: it may hold a secret); "
     "write it as a list: [NAME=value]"},
    {"docker:\n  image: sandprobe-probe:local\n  config:\n    Env: [PATH=/bin, 7]\n", 6, 22,
     "docker.config.Env[1]", "expected a string, not 7; quote it: \"7\""},
    {"docker:\n  image: sandprobe-probe:local\n  config:\n    Env: [OPENAI_API_KEY]\n", 6, 11,
     "docker.config.Env[0]", "expected NAME=value"},
    {"docker:\n  image: sandprobe-probe:local\n  config:\n    Enviroment: [A=1]\n", 6, 5,
     "docker.config.Enviroment", "unknown field"},
    {"docker:\n  image: sandprobe-probe:local\n  config:\n    Cmd: [python3]\n", 6, 5,
     "docker.config.Cmd", "give the command as docker.cmd"},
    {"docker:\n  image: sandprobe-probe:local\n  config:\n    Tty: true\n", 6, 5,
     "docker.config.Tty", "the driver attaches itself: no TTY"},
    {"docker:\n  image: sandprobe-probe:local\n  config:\n    Volumes: {/data: {}}\n", 6, 5,
     "docker.config.Volumes", "anonymous volumes would outlive"},
    {"docker:\n  image: sandprobe-probe:local\n  config:\n    Labels: {sandprobe.run: x}\n", 6, 14,
     "docker.config.Labels.sandprobe.run", "sandprobe.* labels are the harness's own"},
    {"docker:\n  image: sandprobe-probe:local\n  config:\n    Labels: {team: 1}\n", 6, 20,
     "docker.config.Labels.team", "expected a string, not 1"},
    {"docker:\n  image: sandprobe-probe:local\n  config:\n    WorkingDir: tmp\n", 6, 17,
     "docker.config.WorkingDir", "expected an absolute path"},
    {"docker:\n  image: sandprobe-probe:local\n  config:\n    NetworkDisabled:\n", 6, 5,
     "docker.config.NetworkDisabled", "empty or null"},
    {"docker:\n  image: sandprobe-probe:local\n  config: [Env]\n", 5, 11, "docker.config",
     "expected a mapping of Engine API ContainerConfig fields"},
    // Newer than the driver's API version: an error, with the version it came in.
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n    Annotations: {a: b}\n", 6, 5,
     "docker.hostConfig.Annotations",
     "added in Engine API v1.43; the docker driver sends v1.41 requests"},
    {"docker:\n  image: sandprobe-probe:local\n  hostConfig:\n"
     "    Mounts: [{Type: bind, Source: /a, Target: /b, BindOptions: {CreateMountpoint: true}}]\n",
     6, 65, "docker.hostConfig.Mounts[0].BindOptions.CreateMountpoint",
     "added in Engine API v1.42"},
};

TEST(DockerSectionTest, EachMistakeIsOneErrorWithPlaceFieldAndSuggestion) {
  static_assert(std::size(kBadCases) >= 15);
  for (const BadCase& c : kBadCases) {
    const std::string text = std::string(kHead) + c.section;
    SCOPED_TRACE(text);
    auto m = Registry().ParseManifest(text, "manifests/docker/bad.yaml");
    ASSERT_FALSE(m);
    const config::ConfigError& e = m.error();
    EXPECT_EQ(e.file, "manifests/docker/bad.yaml");
    EXPECT_EQ(e.line, c.line) << e.ToString();
    EXPECT_EQ(e.column, c.column) << e.ToString();
    EXPECT_EQ(e.field, c.field) << e.ToString();
    EXPECT_NE(e.message.find(c.message_part), std::string::npos) << e.ToString();
    // The one line a user sees: file:line:col: field: message.
    EXPECT_TRUE(e.ToString().starts_with(
        fmt::format("manifests/docker/bad.yaml:{}:{}: {}: ", c.line, c.column, c.field)))
        << e.ToString();
  }
}

// Several mistakes in one section: every one is reported (`sandprobe validate` lists them), each
// at its own place, in the order found; the first is what the one-mistake cases above see.
TEST(DockerSectionTest, EveryMistakeOfASectionIsReported) {
  const struct {
    const char* section;  // from `docker:` (line 3) on
    std::vector<std::tuple<int, int, std::string, std::string>> errors;  // line, col, field, part
  } cases[] = {
      // The example: a misspelt key no longer hides a misspelt hostConfig field, and the
      // absent image is not a third mistake: "did you mean image?" says it.
      {"docker:\n  imag: sandprobe-probe:local\n  hostConfig:\n    Memmory: 268435456\n",
       {{4, 3, "docker.imag", "unknown field; did you mean image?"},
        {6, 5, "docker.hostConfig.Memmory", "unknown field; did you mean Memory?"}}},
      // The first manifest: both of its mistakes.
      {"docker:\n  image: sandprobe-probe:local\n  envv: [\"A=1\"]\n"
       "  hostconfig: {NetworkMode: none}\n",
       {{5, 3, "docker.envv", "unknown field (expected one of"},
        {6, 3, "docker.hostconfig", "unknown field; did you mean hostConfig?"}}},
      // ... and its second: two mistakes in one hostConfig.
      {"docker:\n  image: sandprobe-probe:local\n"
       "  hostConfig: {NetworkMode: none, ReadOnlyRootfs: true, CapDrop: ALL}\n",
       {{5, 35, "docker.hostConfig.ReadOnlyRootfs", "did you mean ReadonlyRootfs?"},
        {5, 66, "docker.hostConfig.CapDrop", "write [ALL]"}}},
      // A ContainerConfig field under docker: is named once, as such, not also as unknown.
      {"docker:\n  image: i\n  env: [A=1]\n  usr: x\n  config:\n    Env: [OPENAI_API_KEY]\n"
       "    WorkingDir: tmp\n",
       {{5, 3, "docker.env", "write it under docker.config as Env"},
        {6, 3, "docker.usr", "did you mean user?"},
        {8, 11, "docker.config.Env[0]", "expected NAME=value"},
        {9, 17, "docker.config.WorkingDir", "expected an absolute path"}}},
      {"docker:\n  image: [i]\n  cmd: [python3, 7, \"x{script}\"]\n  endpoint: /var/run/d.sock\n",
       {{4, 10, "docker.image", "expected a non-empty string"},
        {5, 18, "docker.cmd[1]", "quote it: \"7\""},
        {5, 21, "docker.cmd[2]", "{script} must be a whole argument"},
        {6, 13, "docker.endpoint", "expected unix://"}}},
      // One mistake: still one error.
      {"docker:\n  imag: sandprobe-probe:local\n",
       {{4, 3, "docker.imag", "unknown field; did you mean image?"}}},
  };
  for (const auto& c : cases) {
    const std::string text = std::string(kHead) + c.section;
    SCOPED_TRACE(text);
    auto m = Registry().ParseManifest(text, "bad.yaml");
    ASSERT_FALSE(m);
    const std::vector<config::ConfigError> all = m.error().All();
    std::string got;
    for (const config::ConfigError& e : all) got += e.ToString() + "\n";
    ASSERT_EQ(all.size(), c.errors.size()) << got;
    for (size_t i = 0; i < all.size(); ++i) {
      const auto& [line, column, field, part] = c.errors[i];
      EXPECT_EQ(all[i].file, "bad.yaml") << got;
      EXPECT_EQ(all[i].line, line) << got;
      EXPECT_EQ(all[i].column, column) << got;
      EXPECT_EQ(all[i].field, field) << got;
      EXPECT_NE(all[i].message.find(part), std::string::npos) << got;
    }
  }
}

TEST(DockerSectionTest, WellFormedSectionsLoad) {
  for (const char* section : {
           "docker: {image: sandprobe-probe:local}\n",
           "docker:\n  image: sandprobe-probe:local\n  user: \"65534:65534\"\n"
           "  cmd: [timeout, -k, \"2\", \"10\", python3, -u, -c, \"{script}\"]\n"
           "  endpoint: tcp://127.0.0.1:2375\n",
           "docker:\n  image: i\n  hostConfig:\n    Init: true\n    PidsLimit: 64\n"
           "    Ulimits: [{Name: nofile, Soft: 64, Hard: 64}]\n"
           "    LogConfig: {Type: local, Config: {max-size: 1m}}\n"
           "    RestartPolicy: {Name: \"no\", MaximumRetryCount: 0}\n"
           "    Devices: [{PathOnHost: /dev/fuse, PathInContainer: /dev/fuse, "
           "CgroupPermissions: rwm}]\n"
           "    Mounts: [{Type: tmpfs, Target: /tmp, TmpfsOptions: {SizeBytes: 33554432}}]\n"
           "    PortBindings: {80/tcp: [{HostIp: 127.0.0.1, HostPort: \"8080\"}]}\n"
           "    Sysctls: {net.ipv4.ip_unprivileged_port_start: \"0\"}\n"
           "    DeviceRequests: [{Driver: nvidia, Count: -1, Capabilities: [[gpu]]}]\n"
           "    KernelMemory: 0\n",
           "docker:\n  image: i\n  config:\n    Env: [AWS_SECRET_ACCESS_KEY=abc, EMPTY=, "
           "\"X=a=b\"]\n"
           "    WorkingDir: /tmp\n    Entrypoint: [/usr/bin/env]\n    Labels: {team: ml}\n"
           "    NetworkDisabled: true\n    Hostname: box\n    Domainname: example.test\n",
       }) {
    SCOPED_TRACE(section);
    auto m = Registry().ParseManifest(std::string(kHead) + section, "ok.yaml");
    EXPECT_TRUE(m) << m.error().ToString();
  }
}

// Every docker manifest shipped, and the ones the e2e tests write, still load.
TEST(DockerSectionTest, ShippedDockerManifestsLoad) {
  const std::filesystem::path root = SANDPROBE_SOURCE_ROOT;
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root / "manifests/docker")) {
    if (entry.path().extension() != ".yaml") continue;
    ++seen;
    auto m = LoadManifest(entry.path());
    EXPECT_TRUE(m) << entry.path() << ": " << (m ? "" : m.error().ToString());
  }
  EXPECT_GE(seen, 4);
}

YAML::Node Root(const std::string& text) {
  auto root = config::internal::ReadYaml(text, "d.yaml");
  EXPECT_TRUE(root) << root.error().ToString();
  return root ? *root : YAML::Node();
}

TEST(DockerDaemonTest, WarnsOnFieldsTheDaemonsApiNoLongerHas) {
  const YAML::Node root = Root(std::string(kHead) +
                               "docker:\n  image: i\n  hostConfig:\n    Memory: 1\n"
                               "    KernelMemory: 4194304\n");
  auto old = CompareWithDaemon("d.yaml", root, {"unix:///s", "20.10.24", "1.41", "1.12"});
  ASSERT_TRUE(old) << old.error();
  EXPECT_TRUE(old->empty());
  auto now = CompareWithDaemon("d.yaml", root, {"unix:///s", "28.5.2", "1.51", "1.24"});
  ASSERT_TRUE(now) << now.error();
  ASSERT_EQ(now->size(), 1u);
  EXPECT_EQ((*now)[0].field, "docker.hostConfig.KernelMemory");
  EXPECT_EQ((*now)[0].line, 7);
  EXPECT_NE((*now)[0].message.find("gone from the Engine API since v1.42"), std::string::npos)
      << (*now)[0].ToString();
}

TEST(DockerDaemonTest, ADaemonThatCannotTakeV141IsAnError) {
  const YAML::Node root = Root(std::string(kHead) + "docker: {image: i}\n");
  auto too_old = CompareWithDaemon("d.yaml", root, {"unix:///s", "19.03", "1.40", "1.12"});
  ASSERT_FALSE(too_old);
  EXPECT_NE(too_old.error().find("speaks Engine API v1.40, older than the v1.41"),
            std::string::npos)
      << too_old.error();
  auto too_new = CompareWithDaemon("d.yaml", root, {"unix:///s", "99.0", "1.60", "1.44"});
  ASSERT_FALSE(too_new);
  EXPECT_NE(too_new.error().find("DOCKER_MIN_API_VERSION=1.41"), std::string::npos)
      << too_new.error();
}

TEST(DockerDaemonTest, NoDaemonIsAnErrorSayingHowToGetOne) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("sandprobe-docker-section-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "d.yaml";
  std::ofstream(file) << kHead << "docker: {image: i, endpoint: 'unix://"
                      << (dir / "none.sock").string() << "'}\n";
  auto m = LoadManifest(file);
  ASSERT_TRUE(m) << m.error().ToString();
  auto r = Registry().Find("docker")->check_live(*m);
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("does not answer"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("ci/services/dockerd"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("DOCKER_HOST"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace sandprobe::drivers
