#include "runner/run.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <thread>

#include "core/banners.h"
#include "runner/arms.h"
#include "runner/cost.h"
#include "runner/invoke.h"
#include "runner/row_book.h"
#include "runner/secrets.h"
#include "runner/session.h"

namespace sandprobe::runner {
namespace {

std::string NowRfc3339() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
}

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

const core::ProbeDescriptor& ProbeOf(const std::vector<core::ProbeDescriptor>& probes,
                                     const std::string& id) {
  return *std::ranges::find(probes, id, &core::ProbeDescriptor::id);
}

// Task indices in start order. Longest first: invocations that may run to the harness deadline
// (the probe's `deadline` rule is exposed, e.g. the CPU loop in a control) start before the
// quick ones, so the run's wall time stays close to its longest probe instead of queueing
// behind it. Otherwise plan order.
std::vector<size_t> StartOrder(const Plan& plan, const std::vector<core::ProbeDescriptor>& probes) {
  std::vector<size_t> order(plan.tasks.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::ranges::stable_partition(order, [&](size_t k) {
    return ProbeOf(probes, plan.tasks[k].probe).classify.deadline == core::Exposure::kExposed;
  });
  return order;
}

}  // namespace

std::expected<core::Matrix, RunError> Run(const RunOptions& options, RunObserver& observer,
                                          const std::atomic<bool>& cancel) {
  if (!options.make_driver) return std::unexpected(RunError{"no driver factory", ""});
  core::Matrix matrix;
  matrix.started_at = NowRfc3339();
  // Declared before the arms: closed (canaries stopped, secrets removed) after their cleanup.
  auto session = Session::Open(options.canary_dir, options.canary_bind, options.canary_dns_port,
                               options.canary_bind6);
  if (!session) return std::unexpected(session.error());
  matrix.run_id = (*session)->run_id();
  matrix.nonce_hash = (*session)->nonce_hash();
  matrix.suite = options.suite.name;
  matrix.criteria = options.suite.criteria;

  // Arms first: an arm may fill placeholders of its own (the in-cluster canary's addresses),
  // and every arm's parameters are resolved from one map so controls and candidates stay
  // identical. Arms's destructor cleans up on every error return below.
  std::vector<const core::Manifest*> manifests;
  for (const auto& m : options.controls) manifests.push_back(&m);
  for (const auto& m : options.candidates) manifests.push_back(&m);
  Arms arms(&observer);
  const drivers::DriverContext context{(*session)->nonce(),
                                       options.reaper_path,
                                       options.kill_grace_s,
                                       matrix.run_id,
                                       PlaceholdersUsed(options.suite),
                                       &cancel,
                                       (*session)->run_folder()};
  if (auto open = arms.Open(manifests, options.make_driver, context, matrix.notes); !open) {
    return std::unexpected(open.error());
  }
  // What the arms' own configurations hand their sandboxes (docker config.Env secrets) is looked
  // for like the planted canaries, with the same parameters in every arm.
  (*session)->SetGivenSecrets(arms.GivenSecrets());
  auto substitutions = arms.Substitutions((*session)->substitutions(), context.placeholders_used);
  if (!substitutions) return std::unexpected(substitutions.error());
  std::map<std::string, std::string> families;  // candidate -> the address family it measures
  for (const core::Manifest& m : options.candidates) {
    if (std::string f = arms.driver(m.name).AddressFamily(); !f.empty()) families[m.name] = f;
  }
  for (const core::Manifest& c : options.controls) {
    if (families.empty() || arms.driver(c.name).RunsInAddressFamily()) continue;
    std::string named;
    for (const auto& [arm, family] : families) named += (named.empty() ? "" : ", ") + arm;
    matrix.notes.push_back(fmt::format(
        "control {} ({}) cannot run a row in an address family: the rows of {} carry no "
        "ip_family, and a row with no address of its own (net.node-local) is judged against "
        "the control's default family",
        c.name, c.driver, named));
    families.clear();
  }
  auto plan = PlanRun(options.suite, options.probes, options.candidates, options.controls,
                      substitutions->common, options.timing, substitutions->by_arm, families);
  if (!plan) return std::unexpected(RunError{plan.error(), ""});
  if (auto budget = CheckControlBudget(*plan, options.probes, MeasureHostBudget()); !budget) {
    return std::unexpected(
        RunError{budget.error(), "lower the candidate's claimed limit or the suite's size"});
  }
  for (core::ArmInfo& arm : plan->arms) arm.ip_family = arms.driver(arm.name).AddressFamily();
  matrix.arms = plan->arms;
  matrix.rows = plan->rows;
  matrix.notes.push_back((*session)->CanaryNote());
  if (auto ok = arms.Preflight(options.preamble, **session, observer, cancel); !ok) {
    return std::unexpected(ok.error());
  }

  const size_t trials = static_cast<size_t>(std::clamp(options.repeat, 1, 100));
  if (trials > 1) {
    matrix.notes.push_back(fmt::format(
        "--repeat {}: every invocation ran {} times; one exposed trial makes a FAIL, a control "
        "exposed in one trial validates its row; cells whose trials disagreed are marked flaky",
        trials, trials));
  }
  // Tasks that wait for their deadline in independent sandboxes get workers of their own
  // (RunOptions::deadline_workers); everything else shares the --jobs workers. In each of the two
  // queues, trial t of every task comes before trial t + 1 of any: a row's trials spread over the
  // run.
  const int jobs = std::clamp(options.jobs, 1, 64);
  std::vector<size_t> trial_order, trial_deadline_order;  // one trial's task indices
  for (size_t i : StartOrder(*plan, options.probes)) {
    const Task& task = plan->tasks[i];
    const bool waits_for_deadline =
        options.deadline_workers &&
        ProbeOf(options.probes, task.probe).classify.deadline == core::Exposure::kExposed &&
        arms.driver(task.arm).IndependentSandboxes();
    (waits_for_deadline ? trial_deadline_order : trial_order).push_back(i);
  }
  std::vector<size_t> order, deadline_order;
  for (size_t t = 0; t < trials; ++t) {
    for (size_t i : trial_order) order.push_back(i + t * plan->tasks.size());
    for (size_t i : trial_deadline_order) deadline_order.push_back(i + t * plan->tasks.size());
  }
  const int deadline_jobs = std::min(jobs, static_cast<int>(trial_deadline_order.size()));
  observer.OnMessage(fmt::format(
      "run {}: {} probes x {} arms, {} invocations{}, --jobs {}{}", matrix.run_id,
      plan->rows.size(), plan->arms.size(), plan->tasks.size() * trials,
      trials > 1 ? fmt::format(" ({} trials each)", trials) : "", jobs,
      deadline_jobs > 0
          ? fmt::format(" (and {} more for the invocations that run until their deadline)",
                        deadline_jobs)
          : ""));
  observer.OnBegin(matrix);
  const std::string today = options.today.empty()
                                ? fmt::format("{:%Y-%m-%d}", fmt::gmtime(std::time(nullptr)))
                                : options.today;
  RowBook book(*plan, options.probes, matrix, observer, trials, options.expectations, today);
  std::atomic<size_t> next{0}, next_deadline{0};
  const CostSample before = SampleCost();  // the run's clock starts here (core::Phase)
  auto worker = [&](const std::vector<size_t>& queue, std::atomic<size_t>& cursor) {
    for (size_t n = cursor.fetch_add(1); n < queue.size(); n = cursor.fetch_add(1)) {
      const size_t i = queue[n] % plan->tasks.size();
      const size_t trial = queue[n] / plan->tasks.size();
      const Task& task = plan->tasks[i];
      const std::string invocation = trials > 1
                                         ? fmt::format("i{:03d}t{}{}", i, trial + 1, RandomHex(2))
                                         : fmt::format("i{:03d}{}", i, RandomHex(2));
      if (cancel.load()) {
        core::Observation not_run;
        not_run.invocation = invocation;
        not_run.ending = core::Ending::kNotRun;
        book.Complete(i, std::move(not_run));
        continue;
      }
      const double picked = drivers::SteadySeconds();
      core::Observation obs =
          Invoke(task, ProbeOf(options.probes, task.probe), arms.driver(task.arm), invocation,
                 options.preamble, **session, cancel);
      PlaceOnRunClock(obs, before.steady_s, picked, drivers::SteadySeconds());
      book.Complete(i, std::move(obs));
    }
  };
  std::vector<std::thread> workers;
  for (int j = 0; j < deadline_jobs; ++j) {
    workers.emplace_back(worker, std::cref(deadline_order), std::ref(next_deadline));
  }
  for (int j = 0; j < jobs; ++j) workers.emplace_back(worker, std::cref(order), std::ref(next));
  for (auto& w : workers) w.join();
  matrix.cost = CostBetween(before, SampleCost());
  book.FinalizeRemaining();

  arms.CollectRunNotes(matrix.notes);
  for (const std::string& warning :
       core::ApplyExpectations(matrix, options.expectations, today)) {  // marks are unchanged
    observer.OnMessage("warning: " + warning);
    matrix.notes.push_back("warning: " + warning);
  }
  matrix.banners = core::PolicyBanners(matrix);
  matrix.interrupted = cancel.load();
  if (matrix.interrupted) matrix.notes.push_back("run interrupted: unfinished probes are not run");
  if (const size_t dropped = (*session)->dropped_hits(); dropped > 0) {
    matrix.notes.push_back(fmt::format("canaries dropped {} hits over their bound", dropped));
  }
  matrix.finished_at = NowRfc3339();
  for (const std::string& w : arms.Cleanup()) matrix.notes.push_back("warning: " + w);
  (*session)->Close();
  return matrix;
}

}  // namespace sandprobe::runner
