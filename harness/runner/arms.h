// The run's arms: one driver per manifest, made by the run's DriverFactory, prepared and
// preflighted before any probe runs. Every driver made is cleaned up on every exit path
// (Cleanup() or the destructor).
#pragma once

#include <atomic>
#include <expected>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "drivers/driver.h"
#include "runner/run.h"
#include "runner/session.h"

namespace sandprobe::runner {

class Arms {
 public:
  // `observer` (may be null) hears every driver's warnings as they come: Warnings() once an arm
  // is prepared, CleanupWarnings() after its Cleanup(). It must outlive the Arms.
  explicit Arms(RunObserver* observer = nullptr) : observer_(observer) {}
  ~Arms();  // Cleanup()
  Arms(const Arms&) = delete;
  Arms& operator=(const Arms&) = delete;

  // Makes and prepares each manifest's driver, in order. Each driver's Warnings() become run
  // notes "<arm>: <warning>", each told to the observer as "warning: <arm>: <warning>". Errors
  // (exit code 3): the factory's SetupError as is, or "arm <name> (<path>): <message>" with the
  // hint of a failed Prepare(); the failing driver's own Cleanup() has run (what a half-done
  // Prepare created, e.g. an arm's NetworkPolicy).
  std::expected<void, RunError> Open(const std::vector<const core::Manifest*>& manifests,
                                     const DriverFactory& factory,
                                     const drivers::DriverContext& context,
                                     std::vector<std::string>& notes);

  // Runs a trivial probe (emits an ok result record) in each arm, in Open()'s order, with a 30 s
  // deadline: proves the sandbox starts Python and records come back, so a broken argv is a setup
  // error, not a column of INCONCLUSIVE. Progress goes to `observer`. Stops early, without an
  // error, once `cancel` is set. Errors: "arm <name> (<path>) could not run a trivial probe:
  // <why>" with the driver's PreflightHint().
  std::expected<void, RunError> Preflight(const std::string& preamble, const Session& session,
                                          RunObserver& observer, const std::atomic<bool>& cancel);

  // The run's placeholder maps. `common`: `session` (the runner's canaries and secrets) plus
  // what the arms fill (drivers::Driver::Placeholders, e.g. the in-cluster canary), the first
  // filler's value; `by_arm`: for each arm that fills a placeholder, `common` with its own values
  // (one canary's address of the arm's family, kubernetes.ipFamily). Errors (exit code 3): a
  // placeholder in `used` that two arms of different sources (Driver::PlaceholderSource) fill
  // with different values (a control must reach the target its candidate aims at), or an arm
  // placeholder (kArmPlaceholders) in `used` that no arm fills, naming which kind of arm
  // provides it.
  struct Filled {
    std::map<std::string, std::string> common;
    std::map<std::string, std::map<std::string, std::string>> by_arm;
  };
  std::expected<Filled, RunError> Substitutions(std::map<std::string, std::string> session,
                                                const std::set<std::string>& used) const;

  // Every arm's drivers::Driver::GivenSecrets(), in Open()'s order.
  std::vector<std::pair<std::string, std::string>> GivenSecrets() const;

  // Appends each driver's RunNotes() as "<arm>: <note>", in Open()'s order.
  void CollectRunNotes(std::vector<std::string>& notes);

  // The driver of an arm Open() made. Precondition: `arm` names one.
  drivers::Driver& driver(const std::string& arm) { return *drivers_.at(arm); }

  // Idempotent: every driver's Cleanup(), then process::SweepOrphans() (anything a killed reaper
  // left behind; the harness is its subreaper). Returns the drivers' CleanupWarnings(), each also
  // told to the observer as "warning: <warning>", for the run's notes (empty on a second call).
  std::vector<std::string> Cleanup();

 private:
  std::vector<const core::Manifest*> order_;
  std::map<std::string, std::unique_ptr<drivers::Driver>> drivers_;
  bool cleaned_ = false;
  RunObserver* observer_ = nullptr;
};

}  // namespace sandprobe::runner
