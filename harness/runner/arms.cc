#include "runner/arms.h"

#include <fmt/format.h>

#include "core/json_field.h"
#include "core/params.h"
#include "core/redact.h"
#include "core/text.h"
#include "process/process.h"
#include "runner/plan.h"

namespace sandprobe::runner {
namespace {

core::ProbeDescriptor PreflightProbe() {
  core::ProbeDescriptor p;
  p.id = "harness.preflight";
  p.script = "emit(\"result\", outcome=\"ok\", evidence=\"positive\")\n";
  return p;
}

// Why a preflight observation is not an ok result, in one line.
std::string WhyNotOk(const core::Observation& obs) {
  std::string why = obs.ending == core::Ending::kHarnessError ? obs.harness_error
                    : obs.ending == core::Ending::kExited
                        ? fmt::format("exited with code {}", obs.exit_code)
                        : fmt::format("{} (signal {})", core::ToString(obs.ending), obs.signal);
  const std::string err = core::Bounded(obs.stderr_head, 600);
  if (!err.empty()) why += "; stderr: " + err;
  return why;
}

}  // namespace

Arms::~Arms() { Cleanup(); }

std::expected<void, RunError> Arms::Open(const std::vector<const core::Manifest*>& manifests,
                                         const DriverFactory& factory,
                                         const drivers::DriverContext& context,
                                         std::vector<std::string>& notes) {
  cleaned_ = false;
  for (const core::Manifest* m : manifests) {
    auto driver = factory(*m, context);
    if (!driver) return std::unexpected(RunError{driver.error().message, driver.error().hint});
    // A driver that reads JSON while preparing (docker's section, an API's answer) may meet a
    // field of the wrong type: a setup error naming the arm, never an uncaught exception that
    // skips the cleanup.
    std::expected<void, drivers::SetupError> ready;
    try {
      ready = (*driver)->Prepare();
    } catch (const std::exception& e) {
      ready = std::unexpected(
          drivers::SetupError{fmt::format("its {} section cannot be used: {}", m->driver, e.what()),
                              "compare the field types with the manifests shipped in manifests/"});
    }
    // What Prepare() found is told either way (before a failure it often explains it); an arm
    // that runs keeps it in the report's notes too.
    for (const std::string& w : (*driver)->Warnings()) {
      if (observer_ != nullptr) observer_->OnMessage(fmt::format("warning: {}: {}", m->name, w));
      if (ready) notes.push_back(fmt::format("{}: {}", m->name, w));
    }
    if (!ready) {
      (*driver)->Cleanup();
      for (const std::string& w : (*driver)->CleanupWarnings()) {
        if (observer_ != nullptr) observer_->OnMessage("warning: " + w);
      }
      return std::unexpected(
          RunError{fmt::format("arm {} ({}): {}", m->name, m->source_path, ready.error().message),
                   ready.error().hint});
    }
    order_.push_back(m);
    drivers_[m->name] = std::move(*driver);
  }
  return {};
}

std::expected<void, RunError> Arms::Preflight(const std::string& preamble, const Session& session,
                                              RunObserver& observer,
                                              const std::atomic<bool>& cancel) {
  for (size_t i = 0; i < order_.size(); ++i) {
    const core::Manifest* m = order_[i];
    observer.OnMessage(fmt::format("preflight: {} ({})", m->name, m->driver));
    // One invocation id per arm: a driver names what it creates after it (a Job, a container),
    // and two arms of one run on one cluster must not share a name. Measured on a real cluster:
    // the second arm's preflight Job, named as the first's, listed the first's pod while it was
    // still being deleted and took its labels and its exit 137 as its own.
    const std::string invocation = fmt::format("preflight{}", i);
    auto script = core::BuildScript(PreflightProbe(), preamble, nlohmann::json::object(),
                                    session.nonce(), invocation);
    const drivers::Invocation inv{"harness.preflight", invocation, script.value_or(""), 30,
                                  session.Env()};
    drivers::Driver& d = driver(m->name);
    core::Observation obs = d.Execute(inv, cancel);
    core::RedactSecrets(obs, session.SecretValues());
    if (cancel.load()) break;
    if (!obs.result || core::StringField(*obs.result, "outcome") != "ok") {
      return std::unexpected(RunError{fmt::format("arm {} ({}) could not run a trivial probe: {}",
                                                  m->name, m->source_path, WhyNotOk(obs)),
                                      d.PreflightHint()});
    }
  }
  return {};
}

std::expected<Arms::Filled, RunError> Arms::Substitutions(
    std::map<std::string, std::string> session, const std::set<std::string>& used) const {
  std::map<std::string, std::string> filled_by;  // placeholder -> the first arm that filled it
  std::map<std::string, std::map<std::string, std::string>> own;  // arm -> what it filled
  for (const core::Manifest* m : order_) {
    const drivers::Driver& d = *drivers_.at(m->name);
    const std::string source = d.PlaceholderSource();
    for (const auto& [key, value] : d.Placeholders()) {
      own[m->name][key] = value;
      const auto [it, fresh] = session.try_emplace(key, value);
      const bool one_source = !source.empty() && filled_by.contains(key) &&
                              drivers_.at(filled_by[key])->PlaceholderSource() == source;
      if (fresh) {
        filled_by[key] = m->name;
      } else if (it->second != value && used.contains(key) && !one_source) {
        return std::unexpected(RunError{
            fmt::format("arms {} and {} fill {{{}}} differently ({} vs {}): a control and its "
                        "candidates must send identical parameters",
                        filled_by[key], m->name, key, it->second, value),
            "run the kubernetes arms of one run in one namespace of one cluster"});
      }
    }
  }
  for (std::string_view key : kArmPlaceholders) {
    if (used.contains(std::string(key)) && !session.contains(std::string(key))) {
      return std::unexpected(RunError{
          fmt::format("the suite uses {{{}}}, which only a kubernetes arm fills (its in-cluster "
                      "canary), and no arm of this run filled it",
                      key),
          "run this suite with kubernetes manifests, or aim the rows at {canary.http} etc."});
    }
  }
  Filled filled{.common = session, .by_arm = {}};
  for (auto& [arm, values] : own) {
    std::map<std::string, std::string> mine = session;
    for (auto& [key, value] : values) mine[key] = std::move(value);
    filled.by_arm.emplace(arm, std::move(mine));
  }
  return filled;
}

std::vector<std::pair<std::string, std::string>> Arms::GivenSecrets() const {
  std::vector<std::pair<std::string, std::string>> given;
  for (const core::Manifest* m : order_) {
    for (auto& kv : drivers_.at(m->name)->GivenSecrets()) given.push_back(std::move(kv));
  }
  return given;
}

void Arms::CollectRunNotes(std::vector<std::string>& notes) {
  for (const core::Manifest* m : order_) {
    try {
      for (const std::string& n : drivers_.at(m->name)->RunNotes()) {
        notes.push_back(fmt::format("{}: {}", m->name, n));
      }
    } catch (const std::exception& e) {  // a note is never worth the run's cleanup
      notes.push_back(fmt::format("{}: notes could not be gathered: {}", m->name, e.what()));
    }
  }
}

std::vector<std::string> Arms::Cleanup() {
  if (cleaned_) return {};
  cleaned_ = true;
  std::vector<std::string> warnings;
  for (auto& [name, driver] : drivers_) {
    driver->Cleanup();
    for (std::string& w : driver->CleanupWarnings()) {
      if (observer_ != nullptr) observer_->OnMessage("warning: " + w);
      warnings.push_back(std::move(w));
    }
  }
  process::SweepOrphans();
  return warnings;
}

}  // namespace sandprobe::runner
