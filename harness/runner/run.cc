#include "runner/run.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include "canary/canary.h"
#include "core/banners.h"
#include "core/classify.h"
#include "core/json_field.h"
#include "core/params.h"
#include "core/redact.h"
#include "core/text.h"
#include "drivers/driver.h"
#include "process/process.h"
#include "runner/secrets.h"

namespace sandprobe::runner {
namespace {

std::string NowRfc3339() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
}

// A tiny script each arm must run before the suite: proves the sandbox starts Python and that
// records come back, so a broken argv is a setup error (exit 3), not a column of INCONCLUSIVE.
core::ProbeDescriptor PreflightProbe() {
  core::ProbeDescriptor p;
  p.id = "harness.preflight";
  p.script = "emit(\"result\", outcome=\"ok\", evidence=\"positive\")\n";
  return p;
}

struct Arm {
  const core::Manifest* manifest;
  std::unique_ptr<drivers::Driver> driver;
};

class RowBook {
 public:
  RowBook(const Plan& plan, const std::vector<core::ProbeDescriptor>& probes, core::Matrix& matrix,
          RunObserver& observer)
      : plan_(plan),
        probes_(probes),
        matrix_(matrix),
        observer_(observer),
        pending_(plan.rows.size(), 0),
        done_(plan.rows.size(), false),
        results_(plan.tasks.size()) {
    for (const Task& t : plan.tasks) ++pending_[t.row];
  }

  // Stores one task's observation; finalizes the row when it was the last one.
  void Complete(size_t task_index, core::Observation obs) {
    std::lock_guard lock(mu_);
    results_[task_index] = std::move(obs);
    const size_t row = plan_.tasks[task_index].row;
    if (--pending_[row] == 0) FinalizeRow(row);
  }

  // Rows with no tasks at all (every candidate skipped) and any left after an interrupt.
  void FinalizeRemaining() {
    std::lock_guard lock(mu_);
    for (size_t row = 0; row < done_.size(); ++row) {
      if (!done_[row]) FinalizeRow(row);
    }
  }

 private:
  void FinalizeRow(size_t row) {
    done_[row] = true;
    const core::Row& r = plan_.rows[row];
    const core::ProbeDescriptor& probe =
        *std::ranges::find(probes_, r.probe, &core::ProbeDescriptor::id);
    const size_t first_cell = matrix_.cells.size();
    for (size_t i = 0; i < plan_.tasks.size(); ++i) {
      if (plan_.tasks[i].row != row) continue;
      core::Observation obs = results_[i].value_or(core::Observation{});
      obs.probe = plan_.tasks[i].probe;
      obs.arm = plan_.tasks[i].arm;
      obs.params = plan_.tasks[i].params;
      obs.params_key = plan_.tasks[i].params_key;
      obs.deadline_s = plan_.tasks[i].deadline_s;
      core::Classification cls = core::Classify(probe, obs);
      matrix_.cells.push_back({std::move(obs), std::move(cls)});
    }
    std::vector<core::ArmView> controls;
    for (size_t c = first_cell; c < matrix_.cells.size(); ++c) {
      const core::Cell& cell = matrix_.cells[c];
      const core::ArmInfo* arm = matrix_.FindArm(cell.observation.arm);
      if (arm != nullptr && arm->role == core::ArmRole::kControl) {
        controls.push_back({cell.observation.arm, &cell.observation, cell.classification});
      }
    }
    for (const core::ArmInfo& arm : matrix_.arms) {
      if (arm.role != core::ArmRole::kCandidate) continue;
      auto skip = std::ranges::find_if(plan_.skips, [&](const PlannedSkip& s) {
        return s.probe == r.probe && s.candidate == arm.name;
      });
      core::Verdict v;
      if (skip != plan_.skips.end()) {
        v = core::Judge(probe, {}, {}, core::Applicability{false, skip->reason});
      } else {
        const core::Cell* cell = nullptr;
        for (size_t c = first_cell; c < matrix_.cells.size(); ++c) {
          if (matrix_.cells[c].observation.arm == arm.name) cell = &matrix_.cells[c];
        }
        if (cell == nullptr) continue;
        v = core::Judge(probe, controls, {arm.name, &cell->observation, cell->classification});
      }
      matrix_.verdicts.push_back({r.probe, arm.name, std::move(v)});
    }
    observer_.OnRow(matrix_, r.probe);
  }

  const Plan& plan_;
  const std::vector<core::ProbeDescriptor>& probes_;
  core::Matrix& matrix_;
  RunObserver& observer_;
  std::mutex mu_;
  std::vector<int> pending_;
  std::vector<bool> done_;
  std::vector<std::optional<core::Observation>> results_;
};

// Half of MemAvailable (/proc/meminfo) and half of the free space under /tmp (statvfs).
HostBudget MeasureHostBudget() {
  HostBudget b;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") b.memory_mib = kib / 1024 / 2;
    meminfo.ignore(256, '\n');
  }
  struct statvfs fs {};
  if (statvfs("/tmp", &fs) == 0) {
    b.tmp_mib = static_cast<double>(fs.f_bavail) * fs.f_frsize / 1048576.0 / 2;
  }
  return b;
}

std::vector<core::CanaryHit> HitsOf(const canary::CanarySet& canaries, const std::string& inv) {
  std::vector<core::CanaryHit> out;
  for (const canary::Hit& h : canaries.HitsFor(inv)) out.push_back({h.kind, h.peer, h.detail});
  return out;
}

}  // namespace

std::expected<core::Matrix, RunError> Run(const RunOptions& options, RunObserver& observer,
                                          const std::atomic<bool>& cancel) {
  core::Matrix matrix;
  matrix.started_at = NowRfc3339();
  matrix.run_id =
      fmt::format("sp-{:%Y%m%dT%H%M%SZ}-{}", fmt::gmtime(std::time(nullptr)), RandomHex(3));
  const std::string nonce = RandomHex(8);
  matrix.nonce_hash = Sha256Hex(nonce).substr(0, 12);
  matrix.suite = options.suite.name;

  auto secrets = PlantedSecrets::Plant(options.canary_dir, matrix.run_id);
  if (!secrets) return std::unexpected(RunError{secrets.error(), "pass --canary-dir DIR"});
  auto canaries = canary::CanarySet::Start(options.canary_bind, nonce);
  if (!canaries) {
    return std::unexpected(RunError{"cannot start canaries: " + canaries.error(),
                                    "pass --canary-bind with a loopback address"});
  }
  std::map<std::string, std::string> subs = secrets->Substitutions();
  const auto split = [](const std::string& hostport) {
    const size_t colon = hostport.rfind(':');
    return std::pair{hostport.substr(0, colon), hostport.substr(colon + 1)};
  };
  subs["canary.http"] = (*canaries)->http_address();
  subs["canary.tcp"] = (*canaries)->tcp_address();
  subs["canary.dns"] = (*canaries)->dns_address();
  subs["canary.udp"] = (*canaries)->udp_address();
  subs["canary.host"] = split((*canaries)->http_address()).first;
  subs["canary.http_port"] = split((*canaries)->http_address()).second;
  subs["canary.tcp_port"] = split((*canaries)->tcp_address()).second;
  subs["canary.dns_port"] = split((*canaries)->dns_address()).second;
  subs["canary.udp_port"] = split((*canaries)->udp_address()).second;
  struct utsname host {};
  uname(&host);
  subs["host.kernel_release"] = host.release;  // kernel.boundary compares against it

  auto plan = PlanRun(options.suite, options.probes, options.candidates, options.controls, subs,
                      options.timing);
  if (!plan) return std::unexpected(RunError{plan.error(), ""});
  if (auto budget = CheckControlBudget(*plan, options.probes, MeasureHostBudget()); !budget) {
    return std::unexpected(
        RunError{budget.error(), "lower the candidate's claimed limit or the suite's size"});
  }
  matrix.arms = plan->arms;
  matrix.rows = plan->rows;
  matrix.notes.push_back(fmt::format("canaries listen on {} (http {}, tcp {}, dns {})",
                                     options.canary_bind, subs["canary.http"], subs["canary.tcp"],
                                     subs["canary.dns"]));

  // Drivers: one per arm, prepared and preflighted before any probe runs.
  const drivers::DriverContext context{nonce, options.reaper_path, options.kill_grace_s,
                                       matrix.run_id};
  std::map<std::string, Arm> arms;
  auto cleanup = [&] {
    for (auto& [name, arm] : arms) arm.driver->Cleanup();
    process::SweepOrphans();  // anything a killed reaper left behind (we are its subreaper)
    (*canaries)->Stop();
    secrets->Remove();
  };
  std::vector<const core::Manifest*> manifests;
  for (const auto& m : options.controls) manifests.push_back(&m);
  for (const auto& m : options.candidates) manifests.push_back(&m);
  for (const core::Manifest* m : manifests) {
    auto driver = drivers::MakeDriver(*m, context);
    if (!driver) {
      cleanup();
      return std::unexpected(RunError{driver.error().message, driver.error().hint});
    }
    if (auto ready = (*driver)->Prepare(); !ready) {
      (*driver)->Cleanup();  // what a half-done Prepare created (e.g. an arm's NetworkPolicy)
      cleanup();
      return std::unexpected(
          RunError{fmt::format("arm {} ({}): {}", m->name, m->source_path, ready.error().message),
                   ready.error().hint});
    }
    for (const std::string& w : (*driver)->Warnings())
      matrix.notes.push_back(fmt::format("{}: {}", m->name, w));
    arms[m->name] = Arm{m, std::move(*driver)};
  }
  for (const core::Manifest* m : manifests) {
    observer.OnMessage(fmt::format("preflight: {} ({})", m->name, m->driver));
    auto script = core::BuildScript(PreflightProbe(), options.preamble, nlohmann::json::object(),
                                    nonce, "preflight");
    const drivers::Invocation inv{"harness.preflight", "preflight", script.value_or(""), 30,
                                  secrets->Env()};
    core::Observation obs = arms[m->name].driver->Execute(inv, cancel);
    core::RedactSecrets(obs, secrets->Values());
    if (cancel.load()) break;
    if (!obs.result || core::StringField(*obs.result, "outcome") != "ok") {
      cleanup();
      std::string why = obs.ending == core::Ending::kHarnessError ? obs.harness_error
                        : obs.ending == core::Ending::kExited
                            ? fmt::format("exited with code {}", obs.exit_code)
                            : fmt::format("{} (signal {})", core::ToString(obs.ending), obs.signal);
      const std::string err = core::Bounded(obs.stderr_head, 600);
      if (!err.empty()) why += "; stderr: " + err;
      const std::string_view kind = arms[m->name].driver->kind();
      const std::string hint =
          kind == "http" ? "check the service by hand: POST a one-line script to the manifest's "
                           "url and compare the answer with its preset or response pointers"
          : kind == "docker" ? "check the image and HostConfig by hand: docker run the image with "
                               "python3 -c 'print(1)'"
          : kind == "kubernetes"
              ? "check the Job by hand: sandprobe render shows what the run submits"
              : "check the manifest's argv by hand, e.g. with a one-line python3 -c script";
      return std::unexpected(RunError{fmt::format("arm {} ({}) could not run a trivial probe: {}",
                                                  m->name, m->source_path, why),
                                      hint});
    }
  }

  observer.OnMessage(fmt::format("run {}: {} probes x {} arms, {} invocations, --jobs {}",
                                 matrix.run_id, plan->rows.size(), plan->arms.size(),
                                 plan->tasks.size(), options.jobs));
  observer.OnBegin(matrix);
  RowBook book(*plan, options.probes, matrix, observer);
  // Longest first: invocations that may run to the harness deadline (the probe's `deadline`
  // rule is exposed, e.g. the CPU loop in a control) start before the quick ones, so the run's
  // wall time stays close to its longest probe instead of queueing behind it.
  std::vector<size_t> order(plan->tasks.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  auto runs_to_deadline = [&](size_t k) {
    const auto it =
        std::ranges::find(options.probes, plan->tasks[k].probe, &core::ProbeDescriptor::id);
    return it != options.probes.end() && it->classify.deadline == core::Exposure::kExposed;
  };
  std::ranges::stable_partition(order, runs_to_deadline);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    while (true) {
      const size_t n = next.fetch_add(1);
      if (n >= order.size()) return;
      const size_t i = order[n];
      const Task& task = plan->tasks[i];
      core::Observation obs;
      obs.invocation = fmt::format("i{:03d}{}", i, RandomHex(2));
      if (cancel.load()) {
        obs.ending = core::Ending::kNotRun;
        book.Complete(i, std::move(obs));
        continue;
      }
      const core::ProbeDescriptor& probe =
          *std::ranges::find(options.probes, task.probe, &core::ProbeDescriptor::id);
      nlohmann::json first_params = task.params;
      if (probe.calls > 1) {
        first_params["call"] = 1;
        first_params["previous"] = nullptr;
      }
      auto script = core::BuildScript(probe, options.preamble, first_params, nonce, obs.invocation);
      if (!script) {
        obs.ending = core::Ending::kHarnessError;
        obs.harness_error = script.error();
        book.Complete(i, std::move(obs));
        continue;
      }
      const std::string invocation = obs.invocation;
      drivers::Invocation inv{task.probe, invocation, *script, task.deadline_s, secrets->Env()};
      inv.after_call_s = probe.after_call_s;
      obs = arms[task.arm].driver->Execute(inv, cancel);
      // Multi-call probes (state.persists): call k+1 sees call k's result as `previous`; the last
      // call is judged, earlier ones are kept as evidence. A call that left no usable answer
      // (harness error, interrupt, deadline) ends the sequence and is judged itself.
      nlohmann::json earlier = nlohmann::json::array();
      for (int call = 2; call <= probe.calls; ++call) {
        if (obs.ending == core::Ending::kHarnessError || obs.ending == core::Ending::kInterrupted ||
            obs.ending == core::Ending::kDeadline || obs.ending == core::Ending::kNotRun) {
          break;
        }
        earlier.push_back({{"call", call - 1},
                           {"ending", core::ToString(obs.ending)},
                           {"exit_code", obs.exit_code},
                           {"result", obs.result.value_or(nullptr)},
                           {"driver_facts", obs.driver_facts}});
        nlohmann::json params = task.params;
        params["call"] = call;
        params["previous"] = obs.result.value_or(nullptr);
        auto next = core::BuildScript(probe, options.preamble, params, nonce, invocation);
        if (!next) {
          obs.ending = core::Ending::kHarnessError;
          obs.harness_error = next.error();
          break;
        }
        inv.script = *next;
        obs = arms[task.arm].driver->Execute(inv, cancel);
      }
      if (!earlier.empty()) obs.driver_facts["calls"] = std::move(earlier);
      obs.invocation = invocation;
      obs.canary_hits = HitsOf(**canaries, invocation);
      if (!arms[task.arm].driver->PlantsEnvironment() && task.probe == "cred.env-secrets" &&
          task.params.is_object() &&
          task.params.value("canary_name", "") == secrets->Env().front().first) {
        obs.driver_facts["canary_not_planted"] = true;  // core::Classify: no containment proof
      }
      if (const size_t n = core::RedactSecrets(obs, secrets->Values()); n > 0) {
        obs.driver_facts["canary_secrets_redacted"] = n;  // the sandbox printed a planted secret
      }
      book.Complete(i, std::move(obs));
    }
  };
  std::vector<std::thread> workers;
  const int jobs = std::clamp(options.jobs, 1, 64);
  for (int j = 0; j < jobs; ++j) workers.emplace_back(worker);
  for (auto& w : workers) w.join();
  book.FinalizeRemaining();

  matrix.banners = core::PolicyNotEnforcedBanners(matrix);
  matrix.interrupted = cancel.load();
  if (matrix.interrupted) matrix.notes.push_back("run interrupted: unfinished probes are not run");
  if (const size_t dropped = (*canaries)->dropped_hits(); dropped > 0) {
    matrix.notes.push_back(fmt::format("canaries dropped {} hits over their bound", dropped));
  }
  matrix.finished_at = NowRfc3339();
  cleanup();
  return matrix;
}

}  // namespace sandprobe::runner
