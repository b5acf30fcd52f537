// The runner: the only place that knows about time and concurrency. It plants canaries, prepares
// every arm's driver, runs the plan's tasks on --jobs workers, classifies and judges each row as
// soon as its last cell is in, and always cleans up (canaries, planted secrets, driver state).
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/expect.h"
#include "core/manifest.h"
#include "core/matrix.h"
#include "core/probe.h"
#include "core/suite.h"
#include "drivers/driver.h"
#include "runner/plan.h"

namespace sandprobe::runner {

// Makes the driver of one arm from its manifest (the CLI passes drivers::MakeDriver; tests pass
// a fake). Called once per arm, controls first, before any probe runs. Errors: a setup problem
// (exit code 3), e.g. a driver this build does not have.
using DriverFactory =
    std::function<std::expected<std::unique_ptr<drivers::Driver>, drivers::SetupError>(
        const core::Manifest&, const drivers::DriverContext&)>;

struct RunOptions {
  core::Suite suite;
  std::vector<core::ProbeDescriptor> probes;
  std::vector<core::Manifest> candidates;
  std::vector<core::Manifest> controls;
  std::string preamble;  // probes/lib/preamble.py
  int jobs = 4;          // invocations in flight at once
  // Besides the `jobs` workers, one more for each invocation of a trial that may run until its
  // deadline (the probe's `deadline` rule is exposed: the busy loop) in an arm whose driver says
  // its sandboxes are process trees that share no bounded capacity (Driver::
  // IndependentSandboxes: command and local arms), at most `jobs` more. Such an invocation waits
  // for its deadline at nice 19 and holds nothing the others need; counted in `jobs` it left the
  // rest of the run one worker for most of its wall time. Off when the operator gave --jobs
  // (then exactly that many in flight).
  bool deadline_workers = false;
  // Trials of every invocation (`run --repeat N`, 1..100): one leak in N is a FAIL, a control
  // exposed in one trial validates (core/trials.h). Never retried until green.
  int repeat = 1;
  // Known FAILs accepted (`run --expect`, core/expect.h), applied to each verdict as it is made,
  // so the streamed matrix already shows ACCEPTED; expiry against `today` (YYYY-MM-DD; "" = the
  // UTC date when the run starts).
  std::vector<core::Expectation> expectations;
  std::string today;
  Timing timing;            // default timeout and grace, seconds
  double kill_grace_s = 2;  // SIGTERM -> SIGKILL, seconds
  std::string canary_bind = "127.0.0.1";
  uint16_t canary_dns_port = 0;      // the DNS canary's UDP and TCP port; 0: kernel-chosen
  std::string canary_bind6;          // "" = ::1 if the host has it; "none"; or an IPv6 address
  std::filesystem::path canary_dir;  // where the canary token file is planted
  std::string reaper_path;
  DriverFactory make_driver;  // required
};

// Receives the matrix as it grows. Called from worker threads, one call at a time.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void OnBegin(const core::Matrix&) {}
  virtual void OnRow(const core::Matrix&, const std::string& /*probe*/) {}
  virtual void OnMessage(std::string_view /*line*/) {}  // progress and setup notes (stderr)
};

// A problem before any probe ran: exit code 3.
struct RunError {
  std::string message;
  std::string hint;
};

// Runs the suite: one driver per arm from options.make_driver (controls first), a preflight in
// each, then every task of the plan on options.jobs workers. `cancel` (Ctrl-C) stops running
// invocations and skips the rest; the matrix is still returned with interrupted = true and what
// was measured. Errors (exit code 3): no make_driver, the canary dir or canaries cannot be set
// up, a plan or control-budget error, an arm's factory, Prepare() or preflight failure. On every
// path each driver made is cleaned up, the canaries are stopped and planted secrets removed.
std::expected<core::Matrix, RunError> Run(const RunOptions& options, RunObserver& observer,
                                          const std::atomic<bool>& cancel);

}  // namespace sandprobe::runner
