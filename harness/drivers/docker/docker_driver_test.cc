// DockerDriver::Execute against a fake Docker Engine API on 127.0.0.1 (an httplib server answering
// ContainerCreate, ContainerStart, ContainerWait, ContainerInspect, ContainerLogs, ContainerKill
// and ContainerDelete as the Engine API v1.41 shapes them; ContainerWait holds its answer until
// the container stops, as the daemon does). The real daemon is exercised by the docker
// e2e tests; this fake exists to make the daemon slow on purpose, which a real one is only under
// load (gVisor's boot inside ContainerStart).
#include "drivers/docker/docker_driver.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "core/facts.h"
#include "drivers/transport/http_server_testing.h"

namespace sandprobe::drivers {
namespace {

using Clock = std::chrono::steady_clock;
using http_test::Running;

// A daemon whose ContainerStart takes `start_s` and whose container then runs `run_s` (forever
// when negative, until ContainerKill).
class SlowDaemon {
 public:
  SlowDaemon(double start_s, double run_s) : start_s_(start_s), run_s_(run_s) {
    auto& s = server_.server();
    s.Post("/v1.41/containers/create", [](const httplib::Request&, httplib::Response& res) {
      res.status = 201;
      res.set_content(R"({"Id":"c0ffee","Warnings":[]})", "application/json");
    });
    s.Post("/v1.41/containers/c0ffee/start",
           [this](const httplib::Request&, httplib::Response& res) {
             std::this_thread::sleep_for(std::chrono::duration<double>(start_s_));
             std::lock_guard lock(mu_);
             started_ = Clock::now();
             res.status = 204;
           });
    s.Post("/v1.41/containers/c0ffee/wait", [this](const httplib::Request& req,
                                                   httplib::Response& res) {
      ++waits_;
      EXPECT_EQ(req.get_param_value("condition"), "not-running");
      while (IsRunning()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      std::lock_guard lock(mu_);
      res.set_content(nlohmann::json{{"StatusCode", killed_ ? 137 : 0}, {"Error", nullptr}}.dump(),
                      "application/json");
    });
    s.Get("/v1.41/containers/c0ffee/json", [this](const httplib::Request&, httplib::Response& res) {
      ++inspections_;
      const bool running = IsRunning();
      std::lock_guard lock(mu_);
      res.set_content(
          nlohmann::json{
              {"State",
               {{"Running", running}, {"ExitCode", killed_ ? 137 : 0}, {"OOMKilled", false}}},
              {"HostConfig", {{"Runtime", "runsc"}}}}
              .dump(),
          "application/json");
    });
    s.Post("/v1.41/containers/c0ffee/kill",
           [this](const httplib::Request&, httplib::Response& res) {
             std::lock_guard lock(mu_);
             killed_ = true;
             res.status = 204;
           });
    s.Get("/v1.41/containers/c0ffee/logs", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("", "application/vnd.docker.raw-stream");
    });
    s.Delete("/v1.41/containers/c0ffee",
             [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
    server_.Start();
  }
  std::string Endpoint() const { return server_.Url("tcp", ""); }
  bool killed() {
    std::lock_guard lock(mu_);
    return killed_;
  }
  int waits() const { return waits_; }
  int inspections() const { return inspections_; }

 private:
  bool IsRunning() {
    std::lock_guard lock(mu_);
    const double ran = std::chrono::duration<double>(Clock::now() - started_).count();
    return !killed_ && (run_s_ < 0 || ran < run_s_);
  }

  double start_s_, run_s_;
  std::mutex mu_;
  Clock::time_point started_ = Clock::now();
  bool killed_ = false;
  std::atomic<int> waits_{0}, inspections_{0};
  Running<httplib::Server> server_;
};

core::Observation Execute(const SlowDaemon& daemon, double deadline_s,
                          std::atomic<bool>* interrupt = nullptr) {
  DriverContext context;
  context.nonce = "n0nce";
  context.run_id = "sp-test";
  DockerDriver driver({{"image", "sandprobe-probe:local"}, {"endpoint", daemon.Endpoint()}},
                      context);
  Invocation inv;
  inv.probe = "res.cpu-loop";
  inv.invocation = "i1";
  inv.script = "pass";
  inv.deadline_s = deadline_s;
  std::atomic<bool> cancel{false};
  return driver.Execute(inv, interrupt != nullptr ? *interrupt : cancel);
}

// A ContainerStart slower than the whole deadline (gVisor booting on a loaded machine) does not
// turn a container that ends by itself soon after into a harness deadline.
TEST(DockerDriverDeadlineTest, CountsFromContainerStartNotFromCreate) {
  SlowDaemon daemon(/*start_s=*/1.5, /*run_s=*/0.5);
  const core::Observation obs = Execute(daemon, /*deadline_s=*/1.2);
  EXPECT_EQ(obs.ending, core::Ending::kExited) << obs.harness_error;
  EXPECT_EQ(obs.driver_facts.at(core::fact::kEndedBy), "sandbox");
  EXPECT_FALSE(daemon.killed());
  EXPECT_GE(obs.duration_s, 1.9);  // the duration still covers create and start
  // No polling: one ContainerWait, then one ContainerInspect for how it ended.
  EXPECT_EQ(daemon.waits(), 1);
  EXPECT_EQ(daemon.inspections(), 1);
}

// The deadline still ends a container that runs on: killed by the harness about deadline_s after
// ContainerStart answered.
TEST(DockerDriverDeadlineTest, StillEndsAContainerThatRunsOn) {
  SlowDaemon daemon(/*start_s=*/0.3, /*run_s=*/-1);
  const auto t0 = Clock::now();
  const core::Observation obs = Execute(daemon, /*deadline_s=*/1.0);
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(obs.ending, core::Ending::kDeadline) << obs.harness_error;
  EXPECT_EQ(obs.driver_facts.at(core::fact::kEndedBy), "harness deadline");
  EXPECT_TRUE(daemon.killed());
  EXPECT_GE(took, 1.3);
  EXPECT_LT(took, 5.0);
  EXPECT_EQ(daemon.waits(), 2);  // the one the deadline ended, the one after the kill
  EXPECT_EQ(daemon.inspections(), 1);
}

// Ctrl-C during the wait ends the call within moments, kills the container and says interrupted.
TEST(DockerDriverDeadlineTest, CtrlCEndsTheWait) {
  SlowDaemon daemon(/*start_s=*/0.1, /*run_s=*/-1);
  std::atomic<bool> interrupt{false};
  std::thread ctrl_c([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    interrupt = true;
  });
  const auto t0 = Clock::now();
  const core::Observation obs = Execute(daemon, /*deadline_s=*/30, &interrupt);
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  ctrl_c.join();
  EXPECT_EQ(obs.ending, core::Ending::kInterrupted) << obs.harness_error;
  EXPECT_TRUE(daemon.killed());
  EXPECT_LT(took, 5.0);
}

}  // namespace
}  // namespace sandprobe::drivers
