// Evidence::kSandboxWord: a containment read from how the sandbox itself says the call ended, with
// nothing the harness measured behind it. Which observations Classify() marks so, that Judge()
// keeps the kind and says so in a PASS, and what it does (and does not) change downstream.
#include <gtest/gtest.h>

#include "core/classify.h"
#include "core/diff.h"
#include "core/matrix.h"
#include "core/verdict.h"

namespace sandprobe::core {
namespace {

constexpr int64_t kEnd = 1'800'000'000'000;  // call_ended_unix_ms

ProbeDescriptor Loop() {  // res.cpu-loop as probes/res/cpu-loop/probe.yaml declares it
  ProbeDescriptor p;
  p.id = "res.cpu-loop";
  p.classify.outcomes = {{"error", Exposure::kUnknown}};
  p.classify.killed = p.classify.timed_out = Exposure::kContained;
  p.classify.deadline = Exposure::kExposed;
  p.classify.still_running = StillRunningRule{"canary"};
  return p;
}

ProbeDescriptor FillTmp() {  // no heartbeat: a kill is contained (tmpfs pages are memory)
  ProbeDescriptor p;
  p.id = "fs.fill-tmp";
  p.classify.outcomes = {{"target_written", Exposure::kExposed},
                         {"write_failed", Exposure::kContained},
                         {"error", Exposure::kUnknown}};
  p.classify.killed = Exposure::kContained;
  return p;
}

ProbeDescriptor Balloon() {
  ProbeDescriptor p = Loop();
  p.id = "res.memory-balloon";
  p.classify.outcomes = {{"target_reached", Exposure::kExposed},
                         {"memory_error", Exposure::kContained},
                         {"error", Exposure::kUnknown}};
  p.classify.timed_out = Exposure::kUnknown;  // a timeout is not a memory limit
  p.classify.deadline = Exposure::kUnknown;
  return p;
}

ProbeDescriptor ForkBomb() {
  ProbeDescriptor p = Loop();
  p.id = "res.fork-bomb";
  p.classify.outcomes = {{"all_forked", Exposure::kExposed}, {"capped", Exposure::kContained}};
  p.classify.killed = p.classify.timed_out = p.classify.deadline = Exposure::kUnknown;
  p.classify.crashed = Exposure::kContained;
  return p;
}

// Where the ending came from, as the drivers record it (core/facts.h).
enum class Via {
  kService,     // http: the service's answer (ended_by "service", call_ended_unix_ms)
  kReaper,      // command/local: sandprobe-reaper counted the tree (survivors)
  kPidNs,       // docker: a private PID namespace (survivors 0)
  kStatusOnly,  // an exit status and nothing else (kubernetes: the pod's terminated state)
};

Observation Ended(Via via, int code, std::string canary, std::vector<int64_t> beats = {},
                  std::optional<nlohmann::json> result = std::nullopt) {
  Observation o;
  o.ending = Ending::kExited;
  o.exit_code = code;
  o.duration_s = 5;
  o.records.push_back({{"kind", "start"}});
  o.result = std::move(result);
  o.params = {{"canary", std::move(canary)}};
  switch (via) {
    case Via::kService:
      o.driver_facts = {{"driver", "http"}, {"ended_by", "service"}, {"call_ended_unix_ms", kEnd}};
      break;
    case Via::kReaper:
      o.driver_facts = {{"ended_by", "sandbox"}, {"survivors", 0}, {"call_ended_unix_ms", kEnd}};
      break;
    case Via::kPidNs:
      o.driver_facts = {{"ended_by", "sandbox"}, {"survivors", 0}};
      break;
    case Via::kStatusOnly:
      break;
  }
  for (int64_t at : beats) o.canary_hits.push_back({"tcp", "127.0.0.1:5555", "beat", kEnd + at});
  return o;
}

nlohmann::json Result(const char* outcome, const char* evidence) {
  return {{"kind", "result"}, {"outcome", outcome}, {"evidence", evidence}};
}

TEST(SandboxWordTest, ClassifyTable) {
  const std::string canary = "127.0.0.1:40124";
  struct Case {
    const char* name;
    ProbeDescriptor probe;
    Observation obs;
    Exposure want;
    Evidence evidence;
    const char* reason_has;
  };
  const Case cases[] = {
      // The loop through a run-code service.
      {"service 124, bare entry of old (no canary)", Loop(), Ended(Via::kService, 124, ""),
       Exposure::kContained, Evidence::kSandboxWord, "params.canary is empty"},
      {"service 124, heartbeat never heard (no route)", Loop(), Ended(Via::kService, 124, canary),
       Exposure::kContained, Evidence::kSandboxWord, "was never heard"},
      {"service 124, heard while it ran, silent after", Loop(),
       Ended(Via::kService, 124, canary, {-1500, -1000, -500}), Exposure::kContained,
       Evidence::kPositive, "heard while it ran and never after the call ended"},
      {"service 124, heard after the answer", Loop(),
       Ended(Via::kService, 124, canary, {-500, 900, 1400}), Exposure::kExposed,
       Evidence::kPositive, "still running after the sandbox reported it stopped"},
      {"service killed it (137), never heard", Loop(), Ended(Via::kService, 137, canary),
       Exposure::kContained, Evidence::kSandboxWord, "the service's own answer"},
      // Drivers that measure the stop themselves.
      {"reaper counted none", Loop(), Ended(Via::kReaper, 124, canary), Exposure::kContained,
       Evidence::kPositive, "exit 124"},
      {"private PID namespace", Loop(), Ended(Via::kPidNs, 137, canary), Exposure::kContained,
       Evidence::kPositive, "exit 137"},
      {"status only, never heard", Loop(), Ended(Via::kStatusOnly, 124, canary),
       Exposure::kContained, Evidence::kSandboxWord, "nothing counted what was left"},
      // A row without a heartbeat: a service's kill is its word; a reaper's is measured.
      {"fill-tmp, service says 137", FillTmp(), Ended(Via::kService, 137, ""), Exposure::kContained,
       Evidence::kSandboxWord, "the service's own answer"},
      {"fill-tmp, command exit 137", FillTmp(), Ended(Via::kReaper, 137, ""), Exposure::kContained,
       Evidence::kPositive, "exit 137"},
      {"fill-tmp, ENOSPC through a service", FillTmp(),
       Ended(Via::kService, 0, "", {}, Result("write_failed", "positive")), Exposure::kContained,
       Evidence::kPositive, "write_failed"},
      {"fill-tmp, status only 137 (not a still_running row)", FillTmp(),
       Ended(Via::kStatusOnly, 137, ""), Exposure::kContained, Evidence::kPositive, "exit 137"},
      // The probe's own result is the probe's evidence, not the sandbox's word: the stop that
      // nothing confirmed stays absence, as before.
      {"balloon MemoryError through a service, never heard", Balloon(),
       Ended(Via::kService, 0, canary, {}, Result("memory_error", "positive")),
       Exposure::kContained, Evidence::kAbsence, "kept running after the answer (absence)"},
      {"balloon, service says 124: a timeout is no memory limit", Balloon(),
       Ended(Via::kService, 124, canary), Exposure::kUnknown, Evidence::kNone, "exit 124"},
      {"fork bomb, the service says it crashed", ForkBomb(), Ended(Via::kService, 2, canary),
       Exposure::kContained, Evidence::kSandboxWord, "ended the probe abnormally"},
      {"fork bomb crashed under the reaper", ForkBomb(), Ended(Via::kReaper, 2, canary),
       Exposure::kContained, Evidence::kAbsence, "ended the probe abnormally"},
      // A probe cannot mark its own result as the sandbox's word.
      {"a record that says sandbox_word", FillTmp(),
       Ended(Via::kReaper, 0, "", {}, Result("write_failed", "sandbox_word")), Exposure::kContained,
       Evidence::kAbsence, "write_failed"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Classification got = Classify(c.probe, c.obs);
    EXPECT_EQ(ToString(got.exposure), ToString(c.want)) << got.reason;
    EXPECT_EQ(ToString(got.evidence), ToString(c.evidence)) << got.reason;
    EXPECT_NE(got.reason.find(c.reason_has), std::string::npos) << got.reason;
    if (got.evidence == Evidence::kSandboxWord) {
      EXPECT_NE(got.reason.find("nothing the harness measured confirms the stop"),
                std::string::npos)
          << got.reason;
    }
  }
}

TEST(SandboxWordTest, SharedFateAndDeadlineStillWin) {
  Observation died = Ended(Via::kService, 124, "");
  died.driver_facts["service_died"] = true;
  const Classification d = Classify(Loop(), died);
  EXPECT_EQ(d.exposure, Exposure::kUnknown);
  EXPECT_EQ(d.evidence, Evidence::kNone);
  Observation hung = Ended(Via::kService, 0, "");
  hung.ending = Ending::kDeadline;
  hung.driver_facts = {{"ended_by", "harness deadline"}};
  const Classification h = Classify(Loop(), hung);
  EXPECT_EQ(h.exposure, Exposure::kExposed);
  EXPECT_EQ(h.evidence, Evidence::kPositive);
}

TEST(SandboxWordTest, EvidenceNamesRoundTrip) {
  for (Evidence e :
       {Evidence::kPositive, Evidence::kAbsence, Evidence::kSandboxWord, Evidence::kNone}) {
    EXPECT_EQ(ParseEvidence(ToString(e)), e) << ToString(e);
  }
  EXPECT_EQ(ToString(Evidence::kSandboxWord), "sandbox_word");
  EXPECT_EQ(ParseEvidence("word"), std::nullopt);
}

Verdict JudgeWith(Evidence evidence, Exposure exposure = Exposure::kContained,
                  bool control_exposed = true) {
  static const Observation ctl, cand;
  ProbeDescriptor probe;
  const std::vector<ArmView> controls = {
      {"local",
       &ctl,
       {control_exposed ? Exposure::kExposed : Exposure::kContained, Evidence::kPositive, "x",
        "ctl"}}};
  return Judge(probe, controls, {"svc", &cand, {exposure, evidence, "exit 124", "why"}});
}

TEST(SandboxWordTest, JudgeKeepsTheKindAndSaysSo) {
  const Verdict word = JudgeWith(Evidence::kSandboxWord);
  EXPECT_EQ(word.kind, VerdictKind::kPass);
  EXPECT_EQ(word.evidence, Evidence::kSandboxWord);
  EXPECT_NE(word.reason.find("on the sandbox's word only"), std::string::npos) << word.reason;
  EXPECT_EQ(word.validated_by, "local");
  EXPECT_TRUE((VerdictCell{"p", "svc", word}.OnSandboxWord()));

  for (Evidence e : {Evidence::kPositive, Evidence::kAbsence}) {
    const Verdict v = JudgeWith(e);
    EXPECT_EQ(v.kind, VerdictKind::kPass);
    EXPECT_EQ(v.reason.find("sandbox's word"), std::string::npos) << v.reason;
    EXPECT_FALSE((VerdictCell{"p", "svc", v}.OnSandboxWord()));
  }
  // Without a control that showed exposure it is no PASS at all, whatever the evidence.
  const Verdict unvalidated = JudgeWith(Evidence::kSandboxWord, Exposure::kContained, false);
  EXPECT_EQ(unvalidated.kind, VerdictKind::kInconclusive);
  EXPECT_FALSE((VerdictCell{"p", "svc", unvalidated}.OnSandboxWord()));
}

TEST(SandboxWordTest, StillAPassForTheGateAndAChangeInADiff) {
  Matrix m;
  m.rows = {{"res.cpu-loop", "infinite loop"}};
  for (const auto& [name, role] :
       {std::pair{"local", ArmRole::kControl}, std::pair{"svc", ArmRole::kCandidate}}) {
    ArmInfo arm;
    arm.name = name;
    arm.role = role;
    m.arms.push_back(arm);
  }
  m.verdicts = {{"res.cpu-loop", "svc", JudgeWith(Evidence::kPositive)}};
  Matrix word = m;
  word.verdicts[0].verdict = JudgeWith(Evidence::kSandboxWord);
  EXPECT_EQ(RunExitCode(word), 0);
  const MatrixDiff d = DiffMatrices(m, word);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].old_evidence, "positive");
  EXPECT_EQ(d.changes[0].new_evidence, "sandbox_word");
  EXPECT_FALSE(d.changes[0].regression);
}

}  // namespace
}  // namespace sandprobe::core
