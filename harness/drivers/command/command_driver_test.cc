#include "drivers/command/command_driver.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "drivers/driver.h"

namespace sandprobe::drivers {
namespace {

Invocation Inv(std::string probe, std::string invocation, std::string script, double deadline_s,
               std::vector<std::pair<std::string, std::string>> env = {}) {
  Invocation inv;
  inv.probe = std::move(probe);
  inv.invocation = std::move(invocation);
  inv.script = std::move(script);
  inv.deadline_s = deadline_s;
  inv.extra_env = std::move(env);
  return inv;
}

DriverContext Context() {
  return DriverContext{"00112233aabbccdd", SANDPROBE_REAPER, 1, "sp-test"};
}

TEST(CommandDriverTest, SubstitutesScriptAsOneArgumentAndPlantsEnv) {
  CommandDriver d("command", {"sh", "-c", "{script}"}, false, Context());
  ASSERT_TRUE(d.Prepare());
  std::atomic<bool> never{false};
  const Invocation inv = Inv("x.y", "i1",
                             "echo \"@@sandprobe 00112233aabbccdd {\\\"kind\\\":\\\"result\\\","
                             "\\\"outcome\\\":\\\"$SANDPROBE_CANARY_X\\\"}\"",
                             5, {{"SANDPROBE_CANARY_X", "planted"}});
  auto obs = d.Execute(inv, never);
  EXPECT_EQ(obs.ending, core::Ending::kExited);
  ASSERT_TRUE(obs.result) << obs.stdout_head << obs.stderr_head;
  EXPECT_EQ((*obs.result)["outcome"], "planted");
  EXPECT_TRUE(obs.probe.empty()) << "identity is stamped by the runner, not the driver";
  EXPECT_EQ(obs.driver_facts["ended_by"], "sandbox");
}

TEST(CommandDriverTest, MissingBinaryIsASetupErrorWithAHint) {
  CommandDriver d("command", {"bwrap-not-installed", "{script}"}, false, Context());
  auto r = d.Prepare();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("bwrap-not-installed"), std::string::npos);
  EXPECT_FALSE(r.error().hint.empty());
}

// `env -i PATH=... bwrap ...`: the program env runs is looked up on the PATH the line gives it.
TEST(CommandDriverTest, WhatEnvRunsIsCheckedOnThePathItIsGiven) {
  const std::string empty = ::testing::TempDir() + "/cmd-env-empty-path";
  std::filesystem::create_directories(empty);
  CommandDriver missing("command", {"env", "-i", "PATH=" + empty, "bwrap", "--", "{script}"}, false,
                        Context());
  auto r = missing.Prepare();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'bwrap' (run by env)"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(empty), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().hint, "install bubblewrap: apt-get install -y bubblewrap");
  CommandDriver found("command",
                      {"env", "-i", "PATH=/usr/bin:/bin", "-u", "X", "sh", "-c", "{script}"}, false,
                      Context());
  EXPECT_TRUE(found.Prepare());
  // After -i without a PATH, env (glibc's execvp) searches /bin:/usr/bin.
  CommandDriver bare("command", {"env", "-i", "sh", "-c", "{script}"}, false, Context());
  EXPECT_TRUE(bare.Prepare());
}

// `env -i PATH=... sh -c '... exec "$@"' name bwrap ...` (the shipped bubblewrap lines): what the
// shell execs is checked too, on the PATH env gave it; a shell that runs its own script is not
// followed.
TEST(CommandDriverTest, WhatAShellExecsIsCheckedOnThePathItIsGiven) {
  const std::string dir = ::testing::TempDir() + "/cmd-sh-path";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir + "/sh");
  std::filesystem::create_symlink("/bin/sh", dir + "/sh");
  const std::string keyring = "keyctl new_session >/dev/null && exec \"$@\"";
  CommandDriver missing(
      "command", {"env", "-i", "PATH=" + dir, "sh", "-c", keyring, "keyring", "bwrap", "{script}"},
      false, Context());
  auto r = missing.Prepare();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'bwrap' (run by sh)"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(dir), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().hint, "install bubblewrap: apt-get install -y bubblewrap");
  CommandDriver found(
      "command",
      {"env", "-i", "PATH=/usr/bin:/bin", "sh", "-c", keyring, "keyring", "python3", "{script}"},
      false, Context());
  EXPECT_TRUE(found.Prepare());
  CommandDriver own_script(
      "command", {"env", "-i", "PATH=" + dir, "sh", "-c", "echo hi", "name", "bwrap-not-run"},
      false, Context());
  EXPECT_TRUE(own_script.Prepare());
}

// Hooks: `after` runs on every exit path with {run_id}/{invocation} expanded, its JSON stdout
// becomes facts, its failure an error; a failing preflight is a setup error quoting stderr.
TEST(CommandDriverTest, HooksRunOnEveryPathAndReportFacts) {
  const std::string dir = ::testing::TempDir() + "/cmd-hooks";
  std::filesystem::create_directories(dir);
  CommandConfig config;
  config.argv = {"sh", "-c", "{script}"};
  config.after = {"sh", "-c", "echo \"$1\" >> " + dir + "/after.log; echo '{\"oom_killed\":true}'",
                  "sh", "{run_id}/{invocation}"};
  CommandDriver d("command", config, Context());
  ASSERT_TRUE(d.Prepare());
  std::atomic<bool> never{false};
  auto quick = d.Execute(Inv("x.y", "i1", "exit 3", 5), never);
  EXPECT_EQ(quick.ending, core::Ending::kExited);
  EXPECT_EQ(quick.driver_facts["oom_killed"], true);
  auto slow = d.Execute(Inv("x.y", "i2", "sleep 30", 0.3), never);
  EXPECT_EQ(slow.ending, core::Ending::kDeadline);
  std::atomic<bool> cancelled{true};
  auto interrupted = d.Execute(Inv("x.y", "i3", "sleep 30", 5), cancelled);
  EXPECT_EQ(interrupted.ending, core::Ending::kInterrupted);
  std::ifstream log(dir + "/after.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_EQ(text.str(), "sp-test/i1\nsp-test/i2\nsp-test/i3\n");

  config.after = {"sh", "-c", "echo gone wrong >&2; exit 4"};
  CommandDriver failing("command", config, Context());
  auto obs = failing.Execute(Inv("x.y", "i4", "exit 0", 5), never);
  EXPECT_EQ(obs.ending, core::Ending::kHarnessError);
  EXPECT_NE(obs.harness_error.find("exit 4"), std::string::npos) << obs.harness_error;
  EXPECT_NE(obs.harness_error.find("gone wrong"), std::string::npos) << obs.harness_error;

  config.preflight = {"sh", "-c", "echo no such image >&2; exit 1"};
  CommandDriver unprepared("command", config, Context());
  auto r = unprepared.Prepare();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no such image"), std::string::npos) << r.error().message;
  std::filesystem::remove_all(dir);
}

TEST(CommandDriverTest, SurvivorsCountsWhatOutlivedTheCommand) {
  CommandDriver d("command", {"sh", "-c", "{script}"}, false, Context());
  ASSERT_TRUE(d.Prepare());
  std::atomic<bool> never{false};
  auto detached =
      d.Execute(Inv("x.y", "i1", "setsid sleep 30 </dev/null >/dev/null 2>&1 & exit 0", 5), never);
  EXPECT_EQ(detached.ending, core::Ending::kExited);
  EXPECT_EQ(detached.driver_facts["survivors"], 1);
  auto plain = d.Execute(Inv("x.y", "i2", "exit 0", 5), never);
  EXPECT_EQ(plain.driver_facts["survivors"], 0);
}

TEST(CommandDriverTest, FactoryKnowsLocalCommandAndDocker) {
  core::Manifest m;
  m.driver = "kubernetes";
  m.source_path = "k.yaml";
  auto d = MakeDriver(m, Context());
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("kubernetes"), std::string::npos);
  m.driver = "local";
  auto local = MakeDriver(m, Context());
  ASSERT_TRUE(local);
  EXPECT_EQ((*local)->kind(), "local");
}

// Terminal mode: the nonce typed into the harness's terminal (TIOCSTI, no newline) is counted
// from the input left pending after the call; the kernel's legacy_tiocsti is a fact beside it.
TEST(CommandDriverTest, TerminalModeCountsTheNonceLeftPendingOnTheTerminal) {
  std::ifstream legacy("/proc/sys/dev/tty/legacy_tiocsti");
  int value = 1;
  legacy >> value;
  if (value == 0 && geteuid() != 0) GTEST_SKIP() << "legacy_tiocsti 0: TIOCSTI needs root";
  CommandConfig config;
  config.argv = {"python3", "-c", "{script}"};
  config.tty = true;
  CommandDriver d("command", config, Context());
  ASSERT_TRUE(d.Prepare());
  std::atomic<bool> never{false};
  auto typed = d.Execute(Inv("p.t", "i1",
                             "import fcntl,termios\n"
                             "[fcntl.ioctl(0,termios.TIOCSTI,bytes([c])) for c in "
                             "b'SANDPROBE-TTY 00112233aabbccdd i1']\n",
                             10),
                         never);
  EXPECT_EQ(typed.ending, core::Ending::kExited) << typed.stderr_head;
  EXPECT_EQ(typed.driver_facts["tty"], true);
  EXPECT_EQ(typed.driver_facts["tty_injected"], 1);
  EXPECT_EQ(typed.driver_facts["tty_pending_input_bytes"], 33);
  EXPECT_TRUE(typed.driver_facts["legacy_tiocsti"].is_number() ||
              typed.driver_facts["legacy_tiocsti"] == "absent");
  EXPECT_NE(typed.driver_facts["tty_injected_source"].get<std::string>().find("legacy_tiocsti"),
            std::string::npos);
  // Writing the nonce to the terminal is output, not input: not counted.
  auto written = d.Execute(
      Inv("p.t", "i2", "import os\nos.write(0, b'SANDPROBE-TTY 00112233aabbccdd i2')\n", 10),
      never);
  EXPECT_EQ(written.driver_facts["tty_injected"], 0);
  EXPECT_EQ(written.driver_facts["tty_output_nonce"], true);
  // Without terminal mode there is no such fact at all.
  CommandDriver plain("command", {"python3", "-c", "{script}"}, false, Context());
  auto piped = plain.Execute(Inv("p.t", "i3", "pass\n", 10), never);
  EXPECT_FALSE(piped.driver_facts.contains("tty_injected"));
  EXPECT_FALSE(piped.driver_facts.contains("tty"));
}

}  // namespace
}  // namespace sandprobe::drivers
