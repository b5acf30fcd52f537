// runner::Run with fake drivers (runner/fake_driver_testing.h), no sandbox: scheduling, deadlines,
// multi-call probes, interruption and cleanup, redaction of planted secrets, setup errors and
// the not-planted rule.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "core/redact.h"
#include "runner/fake_driver_testing.h"
#include "runner/run.h"
#include "runner/secrets.h"

namespace sandprobe::runner {
namespace {

using fakes::FakeAct;
using fakes::FakeArm;
using fakes::FakeBook;
using fakes::FakeCall;

core::ProbeDescriptor Probe(std::string id) {
  core::ProbeDescriptor p;
  p.label = id;
  p.category = id.substr(0, id.find('.'));
  p.id = std::move(id);
  p.drivers = {"all"};
  p.classify.outcomes = {{"ok", core::Exposure::kContained}, {"reached", core::Exposure::kExposed}};
  p.script = "result('ok', 'positive')\n";
  return p;
}

core::Manifest Arm(std::string name, std::optional<double> timeout_s = {}) {
  core::Manifest m;
  m.name = std::move(name);
  m.driver = "fake";
  m.source_path = m.name + ".yaml";
  m.limits.timeout_s = timeout_s;
  return m;
}

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    canary_dir_ = std::filesystem::path(::testing::TempDir()) / "runner_test" /
                  ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(canary_dir_);
    std::filesystem::create_directories(canary_dir_);
  }

  // One control ("local") and one candidate ("cand") running every probe of `probes` in order.
  RunOptions Options(std::vector<core::ProbeDescriptor> probes, std::map<std::string, FakeArm> arms,
                     std::string refuse = "") {
    RunOptions o;
    o.suite.name = "t";
    for (const auto& p : probes) o.suite.entries.push_back({p.id, core::Level::kRequired, {}});
    o.probes = std::move(probes);
    o.controls = {Arm("local")};
    o.candidates = {Arm("cand")};
    o.preamble = "# preamble\n";
    o.jobs = 2;
    o.timing = {0.5, 0.5};
    o.canary_dir = canary_dir_;
    o.make_driver = fakes::FakeFactory(book_, std::move(arms), std::move(refuse));
    return o;
  }

  std::expected<core::Matrix, RunError> RunIt(const RunOptions& o) {
    RunObserver observer;
    return runner::Run(o, observer, cancel_);
  }
  // Run(), keeping every message the observer heard (stderr in `sandprobe run`).
  std::expected<core::Matrix, RunError> RunHearing(const RunOptions& o,
                                                   std::vector<std::string>& heard) {
    struct Hearing : RunObserver {
      std::vector<std::string>* heard;
      void OnMessage(std::string_view line) override { heard->emplace_back(line); }
    } observer;
    observer.heard = &heard;
    return runner::Run(o, observer, cancel_);
  }

  // Nothing planted is left: the run's folder under the canary dir is gone.
  bool CanaryDirEmpty() const { return std::filesystem::is_empty(canary_dir_); }

  const core::Verdict& VerdictOf(const core::Matrix& m, std::string_view probe,
                                 std::string_view arm) {
    for (const auto& v : m.verdicts) {
      if (v.probe == probe && v.candidate == arm) return v.verdict;
    }
    ADD_FAILURE() << "no verdict for " << probe << " in " << arm;
    static const core::Verdict none;
    return none;
  }

  const core::Cell& CellOf(const core::Matrix& m, std::string_view probe, std::string_view arm) {
    const core::Cell* c = m.Find(probe, arm);
    EXPECT_NE(c, nullptr) << probe << " in " << arm;
    static const core::Cell kNone;
    return c != nullptr ? *c : kNone;
  }

  std::filesystem::path canary_dir_;
  std::shared_ptr<FakeBook> book_ = std::make_shared<FakeBook>();
  std::atomic<bool> cancel_{false};
};

// The HTTP canary's port from the run note "canaries listen on ... (http 127.0.0.1:PORT, ...".
int HttpCanaryPort(const core::Matrix& m) {
  static const std::regex kNote(R"(\(http [0-9.]+:([0-9]+),)");
  for (const std::string& note : m.notes) {
    std::smatch match;
    if (std::regex_search(note, match, kNote)) return std::stoi(match[1]);
  }
  return 0;
}

bool Listening(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

// Invocations that run until their deadline in independent sandboxes get workers of their own
// when the operator did not fix --jobs: the quick ones keep all --jobs workers meanwhile. Not for
// arms whose capacity is shared, and never when --jobs was given.
TEST_F(RunnerTest, DeadlineWorkersBesideJobs) {
  std::vector<core::ProbeDescriptor> probes;
  for (const char* id : {"q.a", "q.b", "q.c", "q.slow"}) probes.push_back(Probe(id));
  probes.back().classify.deadline = core::Exposure::kExposed;
  FakeArm arm;
  for (const auto& p : probes) arm.acts[p.id] = FakeAct{.run_s = 0.1};
  arm.acts["q.slow"].run_s = 0.6;
  const struct {
    bool deadline_workers;
    bool independent;
    int max_in_flight;
  } cases[] = {{true, true, 4}, {true, false, 2}, {false, true, 2}};
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << c.deadline_workers << " " << c.independent);
    book_ = std::make_shared<FakeBook>();  // a fresh count
    FakeArm a = arm;
    a.independent = c.independent;
    RunOptions o = Options(probes, {{"local", a}, {"cand", a}});
    o.jobs = 2;
    o.deadline_workers = c.deadline_workers;
    std::vector<std::string> heard;
    auto m = RunHearing(o, heard);
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(book_->ProbeCalls().size(), 8u);
    EXPECT_EQ(book_->max_in_flight(), c.max_in_flight);
    const bool said = std::ranges::any_of(heard, [](const std::string& line) {
      return line.find("--jobs 2 (and 2 more for the invocations that run until their deadline)") !=
             std::string::npos;
    });
    EXPECT_EQ(said, c.max_in_flight == 4);
    EXPECT_EQ(m->verdicts.size(), 4u);
  }
}

TEST_F(RunnerTest, JobsBoundInFlightAndDeadlineProbesStartFirst) {
  std::vector<core::ProbeDescriptor> probes;
  for (const char* id : {"q.a", "q.b", "q.c", "q.d", "q.slow"}) probes.push_back(Probe(id));
  probes.back().classify.deadline = core::Exposure::kExposed;  // last in the suite
  FakeArm quick;
  for (const auto& p : probes) quick.acts[p.id] = FakeAct{.run_s = 0.05};
  quick.acts["q.slow"].run_s = 0.2;
  RunOptions o = Options(probes, {{"local", quick}, {"cand", quick}});
  o.jobs = 2;
  auto m = RunIt(o);
  ASSERT_TRUE(m) << m.error().message;

  const std::vector<FakeCall> calls = book_->ProbeCalls();
  ASSERT_EQ(calls.size(), 10u);  // 5 probes x 2 arms
  std::set<std::pair<std::string, std::string>> once;
  for (const FakeCall& c : calls) {
    EXPECT_TRUE(once.insert({c.probe, c.arm}).second) << c.probe << " ran twice in " << c.arm;
  }
  EXPECT_LE(book_->max_in_flight(), 2);
  EXPECT_EQ(book_->max_in_flight(), 2) << "--jobs 2 runs two invocations at once";
  EXPECT_EQ(calls[0].probe, "q.slow");
  EXPECT_EQ(calls[1].probe, "q.slow");
  EXPECT_EQ(m->cells.size(), 10u);
  EXPECT_EQ(m->verdicts.size(), 5u);
  EXPECT_FALSE(m->interrupted);
}

TEST_F(RunnerTest, DeadlineIsClaimedTimeoutPlusGrace) {
  RunOptions o = Options({Probe("t.quick"), Probe("t.hang")},
                         {{"plain", FakeArm{.acts = {{"t.hang", {FakeAct::kToDeadline}}}}}});
  o.timing = {0.4, 0.2};
  o.candidates = {Arm("claims", 1.5), Arm("plain")};
  auto m = RunIt(o);
  ASSERT_TRUE(m) << m.error().message;
  const std::map<std::string, double> want = {{"claims", 1.7}, {"plain", 0.6}, {"local", 1.7}};
  const std::vector<FakeCall> calls = book_->ProbeCalls();
  EXPECT_EQ(calls.size(), 6u);
  for (const FakeCall& c : calls) {
    EXPECT_DOUBLE_EQ(c.deadline_s, want.at(c.arm)) << c.probe << " in " << c.arm;
    EXPECT_DOUBLE_EQ(CellOf(*m, c.probe, c.arm).observation.deadline_s, want.at(c.arm));
  }
  const core::Observation& hang = CellOf(*m, "t.hang", "plain").observation;
  EXPECT_EQ(hang.ending, core::Ending::kDeadline);
  EXPECT_GE(hang.duration_s, 0.6);
}

TEST_F(RunnerTest, RunnerStampsIdentityAndPassesDeployMode) {
  core::ProbeDescriptor adm = Probe("platform.admission");
  adm.deploy = core::Deploy::kHarnessAdmission;
  adm.params["size"] = core::ParamSpec{7, "", "", 1, ""};
  auto m = RunIt(Options({Probe("t.plain"), adm}, {}));
  ASSERT_TRUE(m) << m.error().message;
  for (const FakeCall& c : book_->ProbeCalls()) {
    EXPECT_EQ(c.deploy, c.probe == "platform.admission" ? core::Deploy::kHarnessAdmission
                                                        : core::Deploy::kSandbox)
        << c.probe;
    // The fake stamps nothing: the cell's identity is the runner's.
    const core::Observation& obs = CellOf(*m, c.probe, c.arm).observation;
    EXPECT_EQ(obs.probe, c.probe);
    EXPECT_EQ(obs.arm, c.arm);
    EXPECT_EQ(obs.invocation, c.invocation);
    EXPECT_EQ(obs.params, c.params);
    EXPECT_FALSE(obs.params_key.empty());
    EXPECT_DOUBLE_EQ(obs.deadline_s, 1.0);
  }
  EXPECT_EQ(CellOf(*m, "platform.admission", "cand").observation.params["size"], 7);
  const auto& rows = m->rows;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].category, "platform");  // carried for banners, never rendered
}

// --repeat N: every invocation runs N times, each trial with its own invocation tag; the trials
// fold into one cell per (probe, arm) that lists them all, and the row is judged on that cell.
TEST_F(RunnerTest, RepeatRunsEveryInvocationNTimesIntoOneCell) {
  FakeArm open{
      .acts = {{"t.a", FakeAct{.result = {{"outcome", "reached"}, {"evidence", "positive"}}}}}};
  RunOptions o = Options({Probe("t.a"), Probe("t.b")}, {{"local", open}});
  o.repeat = 3;
  auto m = RunIt(o);
  ASSERT_TRUE(m) << m.error().message;
  std::map<std::pair<std::string, std::string>, std::set<std::string>> tags;
  for (const FakeCall& c : book_->ProbeCalls()) tags[{c.probe, c.arm}].insert(c.invocation);
  ASSERT_EQ(tags.size(), 4u);
  for (const auto& [key, invocations] : tags) {
    EXPECT_EQ(invocations.size(), 3u) << key.first << " in " << key.second;
  }
  ASSERT_EQ(m->cells.size(), 4u);
  for (const core::Cell& cell : m->cells) {
    ASSERT_EQ(cell.trials.size(), 3u);
    std::set<std::string> seen;
    for (const core::Trial& t : cell.trials) seen.insert(t.invocation);
    EXPECT_EQ(seen, (tags[{cell.observation.probe, cell.observation.arm}]));
    EXPECT_TRUE(cell.observation.invocation.find("t") != std::string::npos);
  }
  EXPECT_EQ(VerdictOf(*m, "t.a", "cand").kind, core::VerdictKind::kPass);  // local reached t.a
  EXPECT_EQ(VerdictOf(*m, "t.b", "cand").kind, core::VerdictKind::kInconclusive);
  EXPECT_TRUE(std::ranges::any_of(m->notes, [](const std::string& n) {
    return n.starts_with("--repeat 3: every invocation ran 3 times");
  }));
}

TEST_F(RunnerTest, MultiCallPassesPreviousAndKeepsEarlierCalls) {
  core::ProbeDescriptor twice = Probe("state.twice");
  twice.calls = 2;
  auto m = RunIt(Options({twice}, {}));
  ASSERT_TRUE(m) << m.error().message;
  for (const std::string arm : {"local", "cand"}) {
    SCOPED_TRACE(arm);
    std::vector<FakeCall> calls;
    for (const FakeCall& c : book_->ProbeCalls()) {
      if (c.arm == arm) calls.push_back(c);
    }
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0].params["call"], 1);
    EXPECT_EQ(calls[0].params["previous"], nlohmann::json::array());
    EXPECT_EQ(calls[1].params["call"], 2);
    ASSERT_EQ(calls[1].params["previous"].size(), 1u) << "call 2 sees call 1's result";
    EXPECT_EQ(calls[1].params["previous"][0]["call"], 1);
    EXPECT_EQ(calls[1].params["previous"][0]["outcome"], "ok");
    EXPECT_EQ(calls[0].invocation, calls[1].invocation);
    const core::Observation& obs = CellOf(*m, "state.twice", arm).observation;
    ASSERT_TRUE(obs.result.has_value());
    EXPECT_EQ((*obs.result)["call"], 2) << "the last call is judged";
    ASSERT_TRUE(obs.driver_facts.contains("calls"));
    ASSERT_EQ(obs.driver_facts["calls"].size(), 1u);
    EXPECT_EQ(obs.driver_facts["calls"][0]["call"], 1);
    EXPECT_EQ(obs.driver_facts["calls"][0]["ending"], "exited");
    EXPECT_EQ(obs.driver_facts["calls"][0]["result"]["call"], 1);
  }
}

// Every observation carries its place on the run's clock: queued from 0, then invoke, with the
// driver's own phases inside; a sequence's calls add up their CPU, and one call without a figure
// leaves it unknown. The run's cost is measured around the invocations.
TEST_F(RunnerTest, TimelineAndCpuAccountOfEveryInvocation) {
  core::ProbeDescriptor twice = Probe("state.twice");
  twice.calls = 2;
  FakeArm counted;
  counted.cpu_s = 0.25;
  auto m = RunIt(Options({twice, Probe("fs.once")}, {{"cand", counted}}));
  ASSERT_TRUE(m) << m.error().message;
  for (const core::Cell& cell : m->cells) {
    SCOPED_TRACE(cell.observation.arm + " " + cell.observation.probe);
    const std::vector<core::Phase>& t = cell.observation.timeline;
    const size_t calls = cell.observation.probe == "state.twice" ? 2 : 1;
    ASSERT_EQ(t.size(), 2 + calls);
    EXPECT_EQ(t[0].name, "queued");
    EXPECT_EQ(t[0].start_s, 0);
    EXPECT_EQ(t[1].name, "invoke");
    EXPECT_EQ(t[1].start_s, t[0].end_s);
    EXPECT_GE(t[1].end_s, t[1].start_s);
    for (size_t i = 2; i < t.size(); ++i) {
      EXPECT_EQ(t[i].name, "fake-call");
      EXPECT_GE(t[i].start_s, t[1].start_s);
      EXPECT_LE(t[i].end_s, t[1].end_s);
      EXPECT_LE(t[i].start_s, t[i].end_s);
    }
    if (cell.observation.arm == "cand") {
      ASSERT_TRUE(cell.observation.probe_cpu.has_value());
      EXPECT_DOUBLE_EQ(cell.observation.probe_cpu->seconds, 0.25 * calls);
    } else {
      EXPECT_FALSE(cell.observation.probe_cpu.has_value());
    }
  }
  ASSERT_TRUE(m->cost.has_value());
  EXPECT_GE(m->cost->cpus, 1);
  EXPECT_GT(m->cost->wall_s, 0);
  EXPECT_GE(m->cost->harness_cpu_s, 0);
  double last_end = 0;
  for (const core::Cell& cell : m->cells)
    last_end = std::max(last_end, cell.observation.timeline[1].end_s);
  EXPECT_LE(last_end, m->cost->wall_s);
}

TEST_F(RunnerTest, CallsParameterSizesTheSequenceAndPreviousListsEveryEarlierCall) {
  core::ProbeDescriptor many = Probe("state.many");
  many.calls = 2;
  many.params["calls"] = core::ParamSpec{4, "", "", 1, ""};
  RunOptions o = Options({many}, {});
  o.suite.entries[0].params = {{"calls", 5}};
  auto m = RunIt(o);
  ASSERT_TRUE(m) << m.error().message;
  std::vector<FakeCall> cand;
  for (const FakeCall& c : book_->ProbeCalls()) {
    if (c.arm == "cand") cand.push_back(c);
  }
  ASSERT_EQ(cand.size(), 5u) << "the suite's calls: 5 beats the probe's 2";
  for (size_t k = 0; k < cand.size(); ++k) {
    EXPECT_EQ(cand[k].params["call"], k + 1);
    ASSERT_EQ(cand[k].params["previous"].size(), k);
    for (size_t j = 0; j < k; ++j) EXPECT_EQ(cand[k].params["previous"][j]["call"], j + 1);
  }
  EXPECT_EQ(CellOf(*m, "state.many", "cand").observation.driver_facts["calls"].size(), 4u);
}

TEST_F(RunnerTest, ConcurrentProbeRunsAPairAtTheSameMomentThenAClosingCall) {
  core::ProbeDescriptor state = Probe("state.pair"), sibling = Probe("proc.pair");
  state.calls = 2;
  state.concurrent = sibling.concurrent = true;
  sibling.calls = 0;
  state.params["concurrent"] = core::ParamSpec{true, "", "", 1, ""};
  FakeArm cand;
  cand.acts["state.pair"].run_s = cand.acts["proc.pair"].run_s = 0.3;
  RunOptions o = Options({state, sibling}, {{"cand", cand}});
  o.jobs = 1;  // the only overlap is the pair's
  auto m = RunIt(o);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(book_->max_in_flight(), 2);
  std::map<std::string, std::vector<FakeCall>> cand_calls;
  for (const FakeCall& c : book_->ProbeCalls()) {
    if (c.arm == "cand") cand_calls[c.probe].push_back(c);
  }
  const std::vector<FakeCall>& calls = cand_calls["state.pair"];
  ASSERT_EQ(calls.size(), 5u) << "2 sequential, the pair, the closing call";
  const std::string inv = calls[0].invocation;
  EXPECT_EQ(calls[1].invocation, inv);
  std::set<std::string> pair_ids;
  for (size_t k : {2u, 3u}) {
    pair_ids.insert(calls[k].invocation);
    EXPECT_EQ(calls[k].params["previous"].size(), 2u) << "the pair sees the sequential calls";
    EXPECT_EQ(calls[k].params["concurrent_with"], 7 - calls[k].params["call"].get<int>());
  }
  EXPECT_EQ(pair_ids, (std::set<std::string>{inv + "-c3", inv + "-c4"}));
  EXPECT_EQ(calls[4].invocation, inv);
  EXPECT_EQ(calls[4].params["call"], 5);
  EXPECT_EQ(calls[4].params["previous"].size(), 4u);
  EXPECT_FALSE(calls[4].params.contains("concurrent_with"));
  EXPECT_EQ(CellOf(*m, "state.pair", "cand").observation.driver_facts["calls"].size(), 4u);
  const std::vector<FakeCall>& pair_only = cand_calls["proc.pair"];
  ASSERT_EQ(pair_only.size(), 3u) << "calls: 0 -> the pair and the closing call";
  EXPECT_EQ(pair_only[2].params["call"], 3);
  EXPECT_EQ(pair_only[2].params["previous"].size(), 2u);
}

TEST_F(RunnerTest, ConcurrentParameterFalseLeavesTheSequenceAlone) {
  core::ProbeDescriptor state = Probe("state.pair");
  state.calls = 2;
  state.concurrent = true;
  state.params["concurrent"] = core::ParamSpec{true, "", "", 1, ""};
  RunOptions o = Options({state}, {});
  o.suite.entries[0].params = {{"concurrent", false}};
  auto m = RunIt(o);
  ASSERT_TRUE(m) << m.error().message;
  size_t cand = 0;
  for (const FakeCall& c : book_->ProbeCalls()) cand += c.arm == "cand";
  EXPECT_EQ(cand, 2u);
}

TEST_F(RunnerTest, MultiCallEndsAtDeadlineOrHarnessError) {
  core::ProbeDescriptor hangs = Probe("state.hangs"), broken = Probe("state.broken");
  hangs.calls = broken.calls = 3;
  FakeArm cand;
  cand.acts["state.hangs"] = {FakeAct::kToDeadline};
  cand.acts["state.broken"] = {FakeAct::kHarnessError};
  RunOptions o = Options({hangs, broken}, {{"cand", cand}});
  o.timing = {0.2, 0.1};
  auto m = RunIt(o);
  ASSERT_TRUE(m) << m.error().message;
  std::map<std::pair<std::string, std::string>, int> count;
  for (const FakeCall& c : book_->ProbeCalls()) ++count[{c.probe, c.arm}];
  EXPECT_EQ((count[{"state.hangs", "cand"}]), 1);
  EXPECT_EQ((count[{"state.broken", "cand"}]), 1);
  EXPECT_EQ((count[{"state.hangs", "local"}]), 3);
  const core::Observation& hung = CellOf(*m, "state.hangs", "cand").observation;
  EXPECT_EQ(hung.ending, core::Ending::kDeadline);
  EXPECT_FALSE(hung.driver_facts.contains("calls"));
  EXPECT_EQ(CellOf(*m, "state.broken", "cand").observation.ending, core::Ending::kHarnessError);
  EXPECT_EQ(CellOf(*m, "state.hangs", "local").observation.driver_facts["calls"].size(), 2u);
}

TEST_F(RunnerTest, InterruptSkipsTheRestAndCleansUp) {
  std::vector<core::ProbeDescriptor> probes;
  FakeArm hangs;
  for (const char* id : {"i.a", "i.b", "i.c", "i.d"}) {
    probes.push_back(Probe(id));
    hangs.acts[id] = {FakeAct::kToDeadline};
  }
  RunOptions o = Options(probes, {{"local", hangs}, {"cand", hangs}});
  o.jobs = 1;
  o.timing = {30, 5};
  std::thread ctrl_c([&] {
    book_->WaitForCalls(1);
    cancel_ = true;
  });
  auto m = RunIt(o);
  ctrl_c.join();
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->interrupted);
  EXPECT_NE(std::ranges::find(m->notes, "run interrupted: unfinished probes are not run"),
            m->notes.end());
  EXPECT_EQ(book_->ProbeCalls().size(), 1u);
  ASSERT_EQ(m->cells.size(), 8u);
  int interrupted = 0, not_run = 0;
  for (const core::Cell& c : m->cells) {
    interrupted += c.observation.ending == core::Ending::kInterrupted;
    not_run += c.observation.ending == core::Ending::kNotRun;
  }
  EXPECT_EQ(interrupted, 1);
  EXPECT_EQ(not_run, 7);
  EXPECT_EQ(m->verdicts.size(), 4u);
  std::vector<std::string> cleaned = book_->cleaned();
  std::ranges::sort(cleaned);
  EXPECT_EQ(cleaned, (std::vector<std::string>{"cand", "local"}));
  const int port = HttpCanaryPort(*m);
  ASSERT_GT(port, 0);
  EXPECT_FALSE(Listening(port)) << "canaries stopped";
  EXPECT_TRUE(CanaryDirEmpty());
}

TEST_F(RunnerTest, PlantedSecretPrintedBackIsRedacted) {
  auto m = RunIt(Options({Probe("cred.leak")},
                         {{"cand", FakeArm{.acts = {{"cred.leak", {FakeAct::kPrintSecret}}}}}}));
  ASSERT_TRUE(m) << m.error().message;
  const std::vector<FakeCall> calls = book_->ProbeCalls();
  ASSERT_FALSE(calls.empty());
  ASSERT_FALSE(calls[0].env.empty());
  const std::string secret = calls[0].env.front().second;
  ASSERT_GE(secret.size(), 8u);
  for (const core::Cell& c : m->cells) {
    const core::Observation& o = c.observation;
    for (const std::string& text :
         {o.stdout_head, o.stderr_head, o.harness_error, o.result.value_or(nullptr).dump(),
          nlohmann::json(o.records).dump(), o.driver_facts.dump(), o.params.dump()}) {
      EXPECT_EQ(text.find(secret), std::string::npos) << o.arm << ": " << text;
    }
  }
  const core::Observation& leak = CellOf(*m, "cred.leak", "cand").observation;
  EXPECT_GE(leak.driver_facts.value("canary_secrets_redacted", 0), 3);
  EXPECT_NE(leak.stdout_head.find(core::kRedacted), std::string::npos);
  EXPECT_FALSE(CellOf(*m, "cred.leak", "local")
                   .observation.driver_facts.contains("canary_secrets_redacted"));
}

// The planted env is six canaries, named and hashed for suites by canary.env_set; what an arm's
// own configuration gives its sandbox (GivenSecrets) is hashed into canary.env_given, the same
// parameter in every arm, and redacted like a planted value.
TEST_F(RunnerTest, PlantedSetAndGivenSecretsReachEveryArmHashedAndRedacted) {
  const std::string given = "given-secret-value-0123456789";
  core::ProbeDescriptor p = Probe("cred.env");
  p.params["set"].default_value = "{canary.env_set}";
  p.params["given"].default_value = "{canary.env_given}";
  FakeArm cand{.given = {{"API_TOKEN", given}, {"API_TOKEN", given}}};
  cand.acts["cred.env"].result = {
      {"outcome", "ok"}, {"evidence", "positive"}, {"detail", "read " + given}};
  auto m = RunIt(Options({p}, {{"cand", cand}}));
  ASSERT_TRUE(m) << m.error().message;
  const std::vector<FakeCall> calls = book_->ProbeCalls();
  ASSERT_EQ(calls.size(), 2u);  // the local control and the candidate
  for (const FakeCall& c : calls) {
    SCOPED_TRACE(c.arm);
    EXPECT_EQ(c.params["given"], "API_TOKEN=" + Sha256Hex(given));  // one entry per pair
    ASSERT_EQ(c.env.size(), 6u);
    EXPECT_EQ(c.env.front().first, "SANDPROBE_CANARY_API_TOKEN");
    std::string set;
    for (const auto& [name, value] : c.env)
      set += (set.empty() ? "" : ",") + name + "=" + Sha256Hex(value);
    EXPECT_EQ(c.params["set"], set);
  }
  EXPECT_EQ(calls[0].params, calls[1].params);
  const core::Observation& obs = CellOf(*m, "cred.env", "cand").observation;
  EXPECT_EQ(obs.result.value_or(nullptr).dump().find(given), std::string::npos);
  EXPECT_GE(obs.driver_facts.value("canary_secrets_redacted", 0), 1);
}

// The run's HTTP canary serves the canary cloud credential (derived from the nonce) on the
// metadata credential paths, logs that request as kind "credential", {canary.cloud_sha256} is its
// hash, and a sandbox that prints it back has it redacted from everything the cell carries.
TEST_F(RunnerTest, CanaryCloudCredentialIsServedHashedAndRedacted) {
  core::ProbeDescriptor p = Probe("cred.cloud");
  p.params["target"].default_value = "{canary.http}";
  p.params["sha"].default_value = "{canary.cloud_sha256}";
  p.classify.canary_hit_kinds = {"credential"};
  auto m = RunIt(
      Options({p}, {{"cand", FakeArm{.acts = {{"cred.cloud", {FakeAct::kFetchCredential}}}}}}));
  ASSERT_TRUE(m) << m.error().message;
  const std::vector<std::string> fetched = book_->fetched();
  ASSERT_EQ(fetched.size(), 1u);
  const std::smatch token = [&] {
    std::smatch match;
    std::regex_search(fetched[0], match, std::regex(R"re("access_token": "([0-9a-f]{40})")re"));
    return match;
  }();
  ASSERT_FALSE(token.empty()) << fetched[0];
  const std::string secret = token[1];
  for (const FakeCall& call : book_->ProbeCalls()) EXPECT_EQ(call.params["sha"], Sha256Hex(secret));
  for (const core::Cell& c : m->cells) {
    const core::Observation& o = c.observation;
    for (const std::string& text :
         {o.stdout_head, o.result.value_or(nullptr).dump(), nlohmann::json(o.records).dump()}) {
      EXPECT_EQ(text.find(secret), std::string::npos) << o.arm << ": " << text;
    }
  }
  const core::Cell& cand = CellOf(*m, "cred.cloud", "cand");
  EXPECT_GE(cand.observation.driver_facts.value("canary_secrets_redacted", 0), 2);
  ASSERT_EQ(cand.observation.canary_hits.size(), 1u);
  EXPECT_EQ(cand.observation.canary_hits[0].kind, "credential");
  EXPECT_EQ(cand.classification.label, "CREDENTIAL SERVED");
  EXPECT_EQ(VerdictOf(*m, "cred.cloud", "cand").kind, core::VerdictKind::kFail);
}

TEST_F(RunnerTest, FactoryErrorIsRunErrorAndCleansUp) {
  auto m = RunIt(Options({Probe("t.a")}, {}, /*refuse=*/"cand"));
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "no fake for cand");
  EXPECT_EQ(m.error().hint, "fake factory hint");
  EXPECT_EQ(book_->cleaned(), std::vector<std::string>{"local"});
  EXPECT_TRUE(book_->ProbeCalls().empty());
  EXPECT_TRUE(CanaryDirEmpty());
}

TEST_F(RunnerTest, PrepareErrorIsRunErrorAndCleansUp) {
  FakeArm broken{.prepare_error = drivers::SetupError{"daemon down", "start it"}};
  auto m = RunIt(Options({Probe("t.a")}, {{"cand", broken}}));
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "arm cand (cand.yaml): daemon down");
  EXPECT_EQ(m.error().hint, "start it");
  std::vector<std::string> cleaned = book_->cleaned();
  std::ranges::sort(cleaned);
  EXPECT_EQ(cleaned, (std::vector<std::string>{"cand", "local"}));
  EXPECT_TRUE(CanaryDirEmpty());
}

TEST_F(RunnerTest, PreflightFailureNamesTheArmWithItsDriversHint) {
  FakeArm broken{.preflight_fails = true, .preflight_hint = "run it by hand"};
  auto m = RunIt(Options({Probe("t.a")}, {{"cand", broken}}));
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message,
            "arm cand (cand.yaml) could not run a trivial probe: exited with code 1; stderr: "
            "python3: not found");
  EXPECT_EQ(m.error().hint, "run it by hand");
  EXPECT_TRUE(book_->ProbeCalls().empty());
  EXPECT_EQ(book_->cleaned().size(), 2u);
  EXPECT_TRUE(CanaryDirEmpty());
}

TEST_F(RunnerTest, CanaryNotPlantedRule) {
  const std::string other_sha(64, 'a');  // the service's own secret's sha256, not a planted value
  const struct {
    const char* name;
    bool needs, plants;
    nlohmann::json params;
    bool want;
  } cases[] = {
      {"needs it, not planted, looks for it",
       true,
       false,
       {{"canary_name", "{canary.env_name}"}},
       true},
      {"the planted name with the planted sha256",
       true,
       false,
       {{"canary_name", "{canary.env_name}"}, {"canary_sha256", "{canary.env_sha256}"}},
       true},
      {"the whole planted set", true, false, {{"canaries", "{canary.env_set}"}}, true},
      {"the driver plants it", true, true, {{"canary_name", "{canary.env_name}"}}, false},
      {"the probe does not need it", false, false, {{"canary_name", "{canary.env_name}"}}, false},
      {"looks for another variable", true, false, {{"canary_name", "OTHER_TOKEN"}}, false},
      // A service's own OPENAI_API_KEY: a planted name, but not the planted value.
      {"a planted name with the service's own sha256",
       true,
       false,
       {{"canary_name", "OPENAI_API_KEY"},
        {"canary_sha256", other_sha},
        {"canaries", "{canary.env_set}"}},
       false},
      {"the same, as a pair of the set",
       true,
       false,
       {{"canaries", "{canary.env_set},OPENAI_API_KEY=" + std::string(64, 'b')}},
       false},
      // canary_name overridden, canary_sha256 left at its default: the main canary's sha256,
      // which OPENAI_API_KEY never holds in a service the harness did not start.
      {"a planted name with the main canary's sha256",
       true,
       false,
       {{"canary_name", "OPENAI_API_KEY"}, {"canary_sha256", "{canary.env_sha256}"}},
       true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    book_ = std::make_shared<FakeBook>();
    core::ProbeDescriptor env = Probe("cred.env");
    for (const char* p : {"canary_name", "canary_sha256", "canaries"})
      env.params[p] = core::ParamSpec{"", "", "", 1, ""};
    if (c.needs) env.needs = {core::Need::kPlantedEnv};
    RunOptions o = Options({env}, {{"cand", FakeArm{.plants_env = c.plants}}});
    o.suite.entries[0].params = c.params;
    auto m = RunIt(o);
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(CellOf(*m, "cred.env", "cand").observation.canary_not_planted, c.want);
    EXPECT_FALSE(CellOf(*m, "cred.env", "local").observation.canary_not_planted);
  }
}

// net.abstract-unix's rule: after each call of a probe that needs a live unix canary the runner
// connects to the run's own listeners and records canary_listening (true while they live), so a
// refusal PASSes; every invocation carries the keyring canary for the launch's session keyring
// and the planted descriptors (only the local baseline hands them on: drivers/local).
TEST_F(RunnerTest, LiveCanaryFactAndTheCallersCanariesReachEveryInvocation) {
  core::ProbeDescriptor unix_probe = Probe("net.unix");
  unix_probe.needs = {core::Need::kLiveCanary};
  unix_probe.classify.outcomes = {{"refused", core::Exposure::kContained},
                                  {"reached", core::Exposure::kExposed}};
  FakeArm local, cand;
  local.acts["net.unix"] = {FakeAct::kResult, {{"outcome", "reached"}, {"evidence", "positive"}}};
  cand.acts["net.unix"] = {FakeAct::kResult, {{"outcome", "refused"}, {"evidence", "positive"}}};
  RunOptions o = Options({unix_probe, Probe("t.plain")}, {{"local", local}, {"cand", cand}});
  auto m = RunIt(o);
  ASSERT_TRUE(m) << m.error().message;
  const auto& facts = CellOf(*m, "net.unix", "cand").observation.driver_facts;
  ASSERT_TRUE(facts.contains("canary_listening"));
  EXPECT_TRUE(facts["canary_listening"].get<bool>());
  EXPECT_EQ(VerdictOf(*m, "net.unix", "cand").kind, core::VerdictKind::kPass);
  EXPECT_FALSE(CellOf(*m, "t.plain", "cand").observation.driver_facts.contains("canary_listening"))
      << "only probes that need it";
  for (const FakeCall& c : book_->ProbeCalls()) {
    SCOPED_TRACE(c.arm + " " + c.probe);
    ASSERT_EQ(c.session_keys.size(), 1u) << "the kernel refused the user keyring canary?";
    EXPECT_TRUE(c.session_keys[0].first.ends_with(":session")) << c.session_keys[0].first;
    EXPECT_TRUE(c.session_keys[0].second.starts_with("spkey_"));
    EXPECT_EQ(c.planted_fds, 2u);
  }
}

TEST_F(RunnerTest, ArmPlaceholdersFillTheSuiteForEveryArm) {
  core::ProbeDescriptor tcp = Probe("net.tcp");
  tcp.params["target"] = core::ParamSpec{"", "", "", 1, ""};
  FakeArm open{.placeholders = {{"canary.cluster.tcp", "10.96.0.42:7000"}}};
  open.acts["net.tcp"] = {FakeAct::kResult, {{"outcome", "reached"}, {"evidence", "positive"}}};
  const FakeArm cluster{.placeholders = {{"canary.cluster.tcp", "10.96.0.42:7000"}}};
  RunOptions o = Options({tcp}, {{"local", open}, {"cand", cluster}});
  o.suite.entries[0].params = {{"target", "{canary.cluster.tcp}"}};
  auto m = RunIt(o);
  ASSERT_TRUE(m) << m.error().message;
  for (const FakeCall& c : book_->ProbeCalls()) {
    EXPECT_EQ(c.params.value("target", ""), "10.96.0.42:7000") << c.arm;
  }
  // The control counted: identical parameters in both arms.
  EXPECT_EQ(VerdictOf(*m, "net.tcp", "cand").kind, core::VerdictKind::kPass);
  EXPECT_EQ(VerdictOf(*m, "net.tcp", "cand").validated_by, "local");
}

// One canary, two address families (kubernetes.ipFamily): each candidate's rows aim at its own
// family's address, the control sends what each candidate sends and each is judged against its
// own; the family is shown beside the arm's name. Two canaries (no shared source) still refuse.
TEST_F(RunnerTest, OneCanaryTwoFamiliesEachCandidateItsOwnAndTheControlBoth) {
  core::ProbeDescriptor tcp = Probe("net.tcp");
  tcp.params["target"] = core::ParamSpec{"", "", "", 1, ""};
  const std::string v4 = "10.96.0.42:7000", v6 = "[fd00::42]:7000";
  FakeArm open{.placeholders = {{"canary.cluster.tcp", v4}}, .placeholder_source = "canary-1"};
  open.acts["net.tcp"] = {FakeAct::kResult, {{"outcome", "reached"}, {"evidence", "positive"}}};
  FakeArm cand4{.placeholders = {{"canary.cluster.tcp", v4}}, .placeholder_source = "canary-1"};
  FakeArm cand6{.placeholders = {{"canary.cluster.tcp", v6}},
                .placeholder_source = "canary-1",
                .ip_family = "IPv6"};
  RunOptions o = Options({tcp}, {{"local", open}, {"cand", cand4}, {"cand6", cand6}});
  o.candidates.push_back(Arm("cand6"));
  o.suite.entries[0].params = {{"target", "{canary.cluster.tcp}"}};
  auto m = RunIt(o);
  ASSERT_TRUE(m) << m.error().message;
  std::multiset<std::pair<std::string, std::string>> sent;
  for (const FakeCall& c : book_->ProbeCalls()) sent.insert({c.arm, c.params.value("target", "")});
  EXPECT_EQ(sent, (std::multiset<std::pair<std::string, std::string>>{
                      {"cand", v4}, {"cand6", v6}, {"local", v4}, {"local", v6}}));
  EXPECT_EQ(VerdictOf(*m, "net.tcp", "cand").validated_by, "local");
  EXPECT_EQ(VerdictOf(*m, "net.tcp", "cand6").validated_by, "local");
  // Every row of the IPv6 candidate carries its family, and its control's twin does too.
  for (const FakeCall& c : book_->ProbeCalls()) {
    EXPECT_EQ(c.params.value("ip_family", ""), c.params["target"] == v6 ? "IPv6" : "") << c.arm;
  }
  const core::ArmInfo* arm6 = m->FindArm("cand6");
  ASSERT_NE(arm6, nullptr);
  EXPECT_EQ(core::ArmTitle(*arm6), "cand6 (IPv6)");
  EXPECT_EQ(core::ArmTitle(*m->FindArm("cand")), "cand");
  // A row with no placeholder (net.node-local's node address comes from the Job): the control
  // still runs it once per family, and each candidate is judged against its own family's run.
  book_ = std::make_shared<FakeBook>();
  core::ProbeDescriptor node = Probe("net.node");
  open.acts["net.node"] = open.acts["net.tcp"];
  o = Options({node}, {{"local", open}, {"cand", cand4}, {"cand6", cand6}});
  o.candidates.push_back(Arm("cand6"));
  m = RunIt(o);
  ASSERT_TRUE(m) << m.error().message;
  std::multiset<std::pair<std::string, std::string>> families;
  for (const FakeCall& c : book_->ProbeCalls()) {
    families.insert({c.arm, c.params.value("ip_family", "")});
    EXPECT_EQ(c.ip_family, c.params.value("ip_family", "")) << c.arm;  // what the driver is told
  }
  EXPECT_EQ(families, (std::multiset<std::pair<std::string, std::string>>{
                          {"cand", ""}, {"cand6", "IPv6"}, {"local", ""}, {"local", "IPv6"}}));
  // Each candidate judged against the control's run of its own parameters, family included.
  for (const char* cand : {"cand", "cand6"}) {
    const core::Cell* own = m->Find("net.node", cand);
    ASSERT_NE(own, nullptr);
    EXPECT_NE(m->Find("net.node", "local", own->observation.params_key), nullptr) << cand;
    EXPECT_EQ(VerdictOf(*m, "net.node", cand).validated_by, "local") << cand;
  }
  // A control that cannot run in a family (a local one): the rows carry none, and a note says so.
  book_ = std::make_shared<FakeBook>();
  FakeArm plain = open;
  plain.runs_in_family = false;
  o = Options({node}, {{"local", plain}, {"cand", cand4}, {"cand6", cand6}});
  o.candidates.push_back(Arm("cand6"));
  m = RunIt(o);
  ASSERT_TRUE(m) << m.error().message;
  for (const FakeCall& c : book_->ProbeCalls()) EXPECT_EQ(c.ip_family, "") << c.arm;
  EXPECT_TRUE(std::ranges::any_of(m->notes, [](const std::string& n) {
    return n.starts_with("control local (") &&
           n.find("cannot run a row in an address family") != std::string::npos;
  }));
  // Arms filled by two sources (two namespaces' canaries) with different values: refused.
  book_ = std::make_shared<FakeBook>();
  cand6.placeholder_source = "canary-2";
  o = Options({tcp}, {{"local", open}, {"cand", cand4}, {"cand6", cand6}});
  o.candidates.push_back(Arm("cand6"));
  o.suite.entries[0].params = {{"target", "{canary.cluster.tcp}"}};
  m = RunIt(o);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("fill {canary.cluster.tcp} differently"), std::string::npos)
      << m.error().message;
}

// A refusal at the target the control reached in the same run is a filter's REJECT (contained);
// where the control was refused too, nothing shows a listener lived there: still a FAIL.
TEST_F(RunnerTest, ARefusalAtALiveTargetIsContained) {
  core::ProbeDescriptor tcp = Probe("net.tcp");
  tcp.classify.outcomes["refused"] = core::Exposure::kExposed;
  tcp.classify.live_target = core::LiveTargetRule{"refused", {"reached"}, "target"};
  auto act = [](const char* outcome) {
    return FakeAct{FakeAct::kResult,
                   {{"outcome", outcome}, {"evidence", "positive"}, {"target", "10.0.0.9:80"}}};
  };
  for (const char* control : {"reached", "refused"}) {
    SCOPED_TRACE(control);
    book_ = std::make_shared<FakeBook>();
    FakeArm local, cand;
    local.acts["net.tcp"] = act(control);
    cand.acts["net.tcp"] = act("refused");
    auto m = RunIt(Options({tcp}, {{"local", local}, {"cand", cand}}));
    ASSERT_TRUE(m) << m.error().message;
    const core::Verdict v = VerdictOf(*m, "net.tcp", "cand");
    if (std::string_view(control) == "reached") {
      EXPECT_EQ(v.kind, core::VerdictKind::kPass) << v.reason;
      EXPECT_EQ(v.evidence, core::Evidence::kPositive);
      EXPECT_NE(v.reason.find("which control local reached in this run"), std::string::npos)
          << v.reason;
      for (const core::Cell& c : m->cells) {
        if (c.observation.arm == "cand") {
          EXPECT_EQ(c.classification.label, "refused (filtered)");
        }
      }
    } else {
      EXPECT_EQ(v.kind, core::VerdictKind::kFail) << v.reason;
    }
  }
}

// A driver names what it creates after the invocation id (a Job, a container): each arm's
// preflight has its own, or two arms on one cluster create same-named Jobs one after the other.
TEST_F(RunnerTest, EachArmsPreflightHasItsOwnInvocationId) {
  auto m = RunIt(Options({Probe("net.tcp")}, {{"local", {}}, {"cand", {}}}));
  ASSERT_TRUE(m) << m.error().message;
  std::map<std::string, std::string> by_arm;
  std::set<std::string> ids;
  for (const FakeCall& c : book_->AllCalls()) {
    if (c.probe != "harness.preflight") continue;
    by_arm[c.arm] = c.invocation;
    ids.insert(c.invocation);
  }
  EXPECT_EQ(by_arm.size(), 2u);
  EXPECT_EQ(ids.size(), 2u);
}

TEST_F(RunnerTest, ArmPlaceholderConflictOrMissingIsASetupError) {
  core::ProbeDescriptor tcp = Probe("net.tcp");
  tcp.params["target"] = core::ParamSpec{"", "", "", 1, ""};
  {
    RunOptions o = Options({tcp}, {{"local", {.placeholders = {{"canary.cluster.tcp", "a"}}}},
                                   {"cand", {.placeholders = {{"canary.cluster.tcp", "b"}}}}});
    o.suite.entries[0].params = {{"target", "{canary.cluster.tcp}"}};
    auto m = RunIt(o);
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find("fill {canary.cluster.tcp} differently"), std::string::npos)
        << m.error().message;
    EXPECT_EQ(book_->cleaned().size(), 2u);  // both arms were cleaned up
  }
  {
    book_ = std::make_shared<FakeBook>();
    RunOptions o = Options({tcp}, {});
    o.suite.entries[0].params = {{"target", "{canary.cluster.tcp}"}};
    auto m = RunIt(o);
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find("only a kubernetes arm fills"), std::string::npos)
        << m.error().message;
    EXPECT_TRUE(book_->ProbeCalls().empty());
  }
  // A conflict on a placeholder the suite does not use is harmless.
  book_ = std::make_shared<FakeBook>();
  RunOptions o = Options({tcp}, {{"local", {.placeholders = {{"canary.cluster.tcp", "a"}}}},
                                 {"cand", {.placeholders = {{"canary.cluster.tcp", "b"}}}}});
  EXPECT_TRUE(RunIt(o));
}

TEST_F(RunnerTest, NotJudgedCellIsSkipWithItsEvidenceKeptAndRunNotesCollected) {
  core::ProbeDescriptor ifaces = Probe("net.interfaces");
  ifaces.measures = "interfaces";
  core::ProbeDescriptor dns = Probe("net.dns");
  const FakeAct reached{FakeAct::kResult, {{"outcome", "reached"}, {"evidence", "positive"}}};
  const FakeArm policy{.acts = {{"net.interfaces", reached}, {"net.dns", reached}},
                       .not_judged = {{"interfaces", "a policy filters packets"}},
                       .run_notes = {"ruled out: pod labels selected"}};
  auto m = RunIt(Options({ifaces, dns},
                         {{"local", {.acts = {{"net.interfaces", reached}, {"net.dns", reached}}}},
                          {"cand", policy}}));
  ASSERT_TRUE(m) << m.error().message;
  const core::Verdict v = VerdictOf(*m, "net.interfaces", "cand");
  EXPECT_EQ(v.kind, core::VerdictKind::kSkip);
  EXPECT_EQ(v.reason, "reported, not judged: a policy filters packets");
  // The measurement is still in the cell.
  EXPECT_EQ(CellOf(*m, "net.interfaces", "cand").classification.exposure, core::Exposure::kExposed);
  // Only what `measures` names is spared; the traffic row is judged.
  EXPECT_EQ(VerdictOf(*m, "net.dns", "cand").kind, core::VerdictKind::kFail);
  EXPECT_NE(std::ranges::find(m->notes, "cand: ruled out: pod labels selected"), m->notes.end());
}

// A driver never writes to stderr: its warnings reach the operator through the run's observer
// and the report through the notes; what Cleanup() could not remove is both too.
TEST_F(RunnerTest, DriverWarningsAreHeardAndNotedCleanupWarningsToo) {
  std::vector<std::string> heard;
  const FakeArm arm{.warnings = {"image not pinned by digest"},
                    .cleanup_warnings = {"kubernetes arm cand: 1 object(s) still present"}};
  auto m = RunHearing(Options({Probe("t.plain")}, {{"cand", arm}}), heard);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_NE(std::ranges::find(heard, "warning: cand: image not pinned by digest"), heard.end());
  EXPECT_NE(std::ranges::find(heard, "warning: kubernetes arm cand: 1 object(s) still present"),
            heard.end());
  EXPECT_NE(std::ranges::find(m->notes, "cand: image not pinned by digest"), m->notes.end());
  EXPECT_NE(std::ranges::find(m->notes, "warning: kubernetes arm cand: 1 object(s) still present"),
            m->notes.end());
  // A failed Prepare: its warnings and what its cleanup left are still heard.
  heard.clear();
  book_ = std::make_shared<FakeBook>();
  FakeArm failing = arm;
  failing.prepare_error = drivers::SetupError{"policy refused", "hint"};
  auto bad = RunHearing(Options({Probe("t.plain")}, {{"cand", failing}}), heard);
  ASSERT_FALSE(bad);
  EXPECT_NE(std::ranges::find(heard, "warning: cand: image not pinned by digest"), heard.end());
  EXPECT_NE(std::ranges::find(heard, "warning: kubernetes arm cand: 1 object(s) still present"),
            heard.end());
}

}  // namespace
}  // namespace sandprobe::runner
