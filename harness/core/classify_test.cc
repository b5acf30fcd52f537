// Classification from observation to exposure: precedence of facts over self-reports.
#include "core/classify.h"

#include <gtest/gtest.h>

#include <cstdint>  // INT64_MIN

#include "core/facts.h"

namespace sandprobe::core {
namespace {

ProbeDescriptor NetProbe() {
  ProbeDescriptor p;
  p.id = "net.tcp-by-ip";
  p.classify.outcomes = {{"reached", Exposure::kExposed},
                         {"blocked", Exposure::kContained},
                         {"error", Exposure::kUnknown}};
  return p;
}

ProbeDescriptor LoopProbe() {
  ProbeDescriptor p;
  p.id = "res.cpu-loop";
  p.classify.killed = Exposure::kContained;
  p.classify.timed_out = Exposure::kContained;
  p.classify.deadline = Exposure::kExposed;
  return p;
}

Observation Exited(int code, std::optional<nlohmann::json> result = std::nullopt) {
  Observation o;
  o.ending = Ending::kExited;
  o.exit_code = code;
  o.result = std::move(result);
  return o;
}

Observation Started(Observation o) {
  o.records.insert(o.records.begin(), nlohmann::json{{"kind", "start"}});
  return o;
}

TEST(ClassifyTest, DeclaredOutcomeWithEvidence) {
  auto c = Classify(NetProbe(), Exited(0, nlohmann::json{{"kind", "result"},
                                                         {"outcome", "blocked"},
                                                         {"evidence", "positive"},
                                                         {"errno", "ENETUNREACH"}}));
  EXPECT_EQ(c.exposure, Exposure::kContained);
  EXPECT_EQ(c.evidence, Evidence::kPositive);
  EXPECT_EQ(c.label, "blocked");
  EXPECT_NE(c.reason.find("ENETUNREACH"), std::string::npos);
}

TEST(ClassifyTest, ExposedOutcomeIsUppercase) {
  auto c =
      Classify(NetProbe(), Exited(0, nlohmann::json{{"kind", "result"}, {"outcome", "reached"}}));
  EXPECT_EQ(c.exposure, Exposure::kExposed);
  EXPECT_EQ(c.label, "REACHED");
}

TEST(ClassifyTest, UndeclaredOutcomeIsUnknown) {
  auto c = Classify(NetProbe(), Exited(0, nlohmann::json{{"kind", "result"}, {"outcome", "200"}}));
  EXPECT_EQ(c.exposure, Exposure::kUnknown);
}

TEST(ClassifyTest, CanaryHitBeatsSelfReport) {
  Observation o = Exited(0, nlohmann::json{{"kind", "result"}, {"outcome", "blocked"}});
  o.canary_hits.push_back({"tcp", "127.0.0.1:5555", "SANDPROBE"});
  auto c = Classify(NetProbe(), o);
  EXPECT_EQ(c.exposure, Exposure::kExposed);
  EXPECT_EQ(c.evidence, Evidence::kPositive);
}

// The canary's word decides; the probe's own account of the same leak rides along (a NodePort's
// SNAT hides the address the probe used from the canary), and only when it is a leak too.
TEST(ClassifyTest, CanaryHitCarriesTheProbesOwnExposedAccount) {
  ProbeDescriptor p;
  p.id = "net.node-local";
  p.classify.outcomes = {{"reached", Exposure::kExposed}, {"held", Exposure::kContained}};
  const struct {
    const char* outcome;
    std::string want;
  } cases[] = {
      {"reached",
       "tcp canary logged this invocation from 10.252.0.1:4242 (1 hit(s)); the probe: outcome "
       "reached: answered: nodeport 10.251.0.2:30700"},
      {"held", "tcp canary logged this invocation from 10.252.0.1:4242 (1 hit(s))"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.outcome);
    Observation o = Exited(0, nlohmann::json{{"kind", "result"},
                                             {"outcome", c.outcome},
                                             {"evidence", "positive"},
                                             {"detail", "answered: nodeport 10.251.0.2:30700"}});
    o.canary_hits.push_back({"tcp", "10.252.0.1:4242", "SANDPROBE"});
    const auto got = Classify(p, o);
    EXPECT_EQ(got.exposure, Exposure::kExposed);
    EXPECT_EQ(got.reason, c.want);
  }
}

// net.held-open's "cut" is contained on the canary's silence: a canary log the driver could not
// read is no silence.
TEST(ClassifyTest, CanarySilenceNeedsTheCanarysLog) {
  ProbeDescriptor p;
  p.id = "net.held-open";
  p.classify.outcomes = {{"kept", Exposure::kExposed}, {"cut", Exposure::kContained}};
  p.classify.canary_hit_kinds = {"tcp-held", "udp-held"};
  Observation o =
      Exited(0, nlohmann::json{{"kind", "result"}, {"outcome", "cut"}, {"evidence", "absence"}});
  EXPECT_EQ(Classify(p, o).exposure, Exposure::kContained);
  o.driver_facts[sandprobe::core::fact::kClusterCanaryLog] = "pods/log: timed out";
  const auto c = Classify(p, o);
  EXPECT_EQ(c.exposure, Exposure::kUnknown);
  EXPECT_EQ(c.label, "canary log unread");
  EXPECT_NE(c.reason.find("pods/log: timed out"), std::string::npos) << c.reason;
}

// cred.cloud-metadata: only the canary's "credential" hits decide the row; its other requests
// to the canary (the IMDSv2 token PUT, a refused path) stay evidence and leave the row to the
// result (a metadata service that answered without credentials is contained).
TEST(ClassifyTest, CanaryHitKindsCountOnlyTheirKind) {
  ProbeDescriptor p;
  p.id = "cred.cloud-metadata";
  p.classify.outcomes = {{"credentials", Exposure::kExposed},
                         {"no_credentials", Exposure::kContained}};
  p.classify.canary_hit_kinds = {"credential"};
  Observation o = Exited(
      0,
      nlohmann::json{{"kind", "result"}, {"outcome", "no_credentials"}, {"evidence", "positive"}});
  o.canary_hits.push_back({"http", "127.0.0.1:5555", "PUT /latest/api/token"});
  auto c = Classify(p, o);
  EXPECT_EQ(c.exposure, Exposure::kContained);
  EXPECT_EQ(c.label, "no credentials");
  o.canary_hits.push_back({"credential", "[::1]:5556", "GET /computeMetadata/v1/x/token"});
  o.canary_hits.push_back({"credential", "[::1]:5557", "GET /metadata/identity/oauth2/token"});
  c = Classify(p, o);  // the server-side proof beats the probe's own word
  EXPECT_EQ(c.exposure, Exposure::kExposed);
  EXPECT_EQ(c.evidence, Evidence::kPositive);
  EXPECT_EQ(c.label, "CREDENTIAL SERVED");
  EXPECT_EQ(c.reason,
            "the canary served this invocation a credential (GET /computeMetadata/v1/x/token) "
            "from [::1]:5556 (2 such hit(s))");
  p.classify.canary_hit_kinds.clear();  // every kind counts: the token PUT alone is reach
  o.canary_hits.resize(1);
  EXPECT_EQ(Classify(p, o).label, "REACHED");
}

TEST(ClassifyTest, MissingResultIsNeverContained) {
  for (int code : {0, 1, 2}) {
    auto c = Classify(NetProbe(), Exited(code));
    EXPECT_EQ(c.exposure, Exposure::kUnknown) << code;
  }
}

// A "sandbox" that never ran the probe and was killed or hung is not containment evidence.
TEST(ClassifyTest, EndingsWithoutAStartRecordAreUnknown) {
  for (int code : {124, 137, 143}) {
    Observation o = Exited(code);
    EXPECT_EQ(Classify(LoopProbe(), o).exposure, Exposure::kUnknown) << code;
    EXPECT_EQ(Classify(LoopProbe(), o).label, "no start");
  }
  Observation sig;
  sig.ending = Ending::kSignaled;
  sig.signal = 9;
  EXPECT_EQ(Classify(LoopProbe(), sig).exposure, Exposure::kUnknown);
  Observation hang;
  hang.ending = Ending::kDeadline;
  EXPECT_EQ(Classify(LoopProbe(), hang).exposure, Exposure::kUnknown);
}

TEST(ClassifyTest, KillEndingsFollowDeclaredRule) {
  EXPECT_EQ(KillKindOf(Exited(124)), KillKind::kTimeout);
  EXPECT_EQ(KillKindOf(Exited(143)), KillKind::kTimeout);
  EXPECT_EQ(KillKindOf(Exited(137)), KillKind::kKill);
  EXPECT_EQ(KillKindOf(Exited(1)), KillKind::kNone);
  for (int code : {124, 137, 143}) {
    EXPECT_EQ(Classify(LoopProbe(), Started(Exited(code))).exposure, Exposure::kContained) << code;
    EXPECT_EQ(Classify(NetProbe(), Started(Exited(code))).exposure, Exposure::kUnknown) << code;
  }
  Observation sig;
  sig.ending = Ending::kSignaled;
  sig.signal = 9;
  sig = Started(sig);
  EXPECT_EQ(Classify(LoopProbe(), sig).exposure, Exposure::kContained);
  EXPECT_EQ(Classify(LoopProbe(), sig).label, "killed (signal 9)");
}

ProbeDescriptor Balloon() {
  ProbeDescriptor b;
  b.classify.outcomes = {{"target_reached", Exposure::kExposed},
                         {"memory_error", Exposure::kContained}};
  b.classify.killed = Exposure::kContained;
  b.classify.timed_out = Exposure::kUnknown;
  b.classify.exceeds = ExceedsRule{"allocated_mib", "claimed_mib"};
  return b;
}

Observation BalloonKilled(int exit_code, int last_mib, int claimed_mib) {
  Observation o = Exited(exit_code);
  o.params = {{"claimed_mib", claimed_mib}, {"target_mib", 2 * claimed_mib}};
  o.records.push_back({{"kind", "start"}});
  for (int mib = 16; mib <= last_mib; mib += 16) {
    o.records.push_back({{"kind", "progress"}, {"allocated_mib", mib}});
  }
  return o;
}

// docs/traps.md, trap 59: the kubelet removes an evicted pod's containers and their logs. With no
// record left the cell says eviction (not "may never have run") and stays unknown; when the log
// survived, the records judge as ever (here: written past the claim before the eviction).
TEST(ClassifyTest, AnEvictedPodWithNoRecordSaysSoAndIsUnknown) {
  Observation gone = BalloonKilled(143, 0, 16);
  gone.records.clear();
  gone.duration_s = 52.2;
  gone.driver_facts = {
      {"evicted", true},
      {"pod_message", "Usage of EmptyDir volume \"tmp\" exceeds the limit \"16Mi\". "}};
  const Classification c = Classify(Balloon(), gone);
  EXPECT_EQ(c.exposure, Exposure::kUnknown);
  EXPECT_EQ(c.label, "evicted");
  EXPECT_EQ(
      c.reason,
      "the kubelet evicted the pod after 52.2s (Usage of EmptyDir volume \"tmp\" exceeds the "
      "limit \"16Mi\".); it removes an evicted pod's containers with their logs, so no record "
      "of the probe survived");
  gone.driver_facts.erase("pod_message");
  EXPECT_EQ(Classify(Balloon(), gone).reason,
            "the kubelet evicted the pod after 52.2s; it removes an evicted pod's containers with "
            "their logs, so no record of the probe survived");
  Observation kept = BalloonKilled(143, 32, 16);
  kept.driver_facts = {{"evicted", true}};
  EXPECT_EQ(Classify(Balloon(), kept).exposure, Exposure::kExposed);
  EXPECT_EQ(Classify(Balloon(), kept).label, "OVER CLAIM (32)");
  Observation not_evicted = BalloonKilled(143, 0, 16);
  not_evicted.records.clear();
  EXPECT_EQ(Classify(Balloon(), not_evicted).label, "no start");
}

// docs/traps.md, trap 5: a timeout kill is not a memory limit.
TEST(ClassifyTest, TimeoutIsNotMemoryContainment) {
  const struct {
    int exit_code, last_mib, claimed_mib;
    Exposure want;
  } cases[] = {
      {137, 80, 96, Exposure::kContained},  // SIGKILL under the claim: an OOM kill looks so
      {124, 80, 96, Exposure::kUnknown},    // GNU timeout under the claim: says nothing
      {143, 80, 96, Exposure::kUnknown},    // busybox timeout
      {124, 608, 512, Exposure::kExposed},  // allocated past the claim before the timeout
      {137, 608, 512, Exposure::kExposed},  // killed, but only after passing the claim
      {137, 608, 0, Exposure::kContained},  // no claim made: nothing to hold it to
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << c.exit_code << " " << c.last_mib << "/" << c.claimed_mib);
    const Classification cls =
        Classify(Balloon(), BalloonKilled(c.exit_code, c.last_mib, c.claimed_mib));
    EXPECT_EQ(cls.exposure, c.want) << cls.reason;
  }
  const Classification over = Classify(Balloon(), BalloonKilled(124, 608, 512));
  EXPECT_NE(over.reason.find("over the claimed 512"), std::string::npos) << over.reason;
  EXPECT_EQ(over.evidence, Evidence::kPositive);
}

TEST(ClassifyTest, ClaimCheckAlsoReadsTheResultRecord) {
  Observation o = Exited(
      0, nlohmann::json{{"kind", "result"}, {"outcome", "memory_error"}, {"allocated_mib", 900}});
  o.params = {{"claimed_mib", 256}};
  EXPECT_EQ(Classify(Balloon(), o).exposure, Exposure::kExposed);
  o.params = {{"claimed_mib", "256"}};  // not a number: no claim check
  EXPECT_EQ(Classify(Balloon(), o).exposure, Exposure::kContained);
}

TEST(ClassifyTest, DeadlineIsExposedForTheLoop) {
  Observation o;
  o.ending = Ending::kDeadline;
  o.deadline_s = 15;
  o.records.push_back({{"kind", "start"}});
  o.records.push_back({{"kind", "progress"}, {"elapsed_s", 14}});
  auto c = Classify(LoopProbe(), o);
  EXPECT_EQ(c.exposure, Exposure::kExposed);
  EXPECT_NE(c.reason.find("elapsed_s"), std::string::npos) << c.reason;
  EXPECT_EQ(Classify(NetProbe(), o).exposure, Exposure::kUnknown);
}

TEST(ClassifyTest, OomFactBeatsSilence) {
  ProbeDescriptor balloon;
  balloon.classify.outcomes = {{"target_reached", Exposure::kExposed},
                               {"memory_error", Exposure::kContained}};
  balloon.classify.killed = Exposure::kUnknown;  // even a probe unsure about kills trusts the fact
  Observation o = Exited(137);
  o.driver_facts["oom_killed"] = true;
  o.records.push_back({{"kind", "progress"}, {"allocated_mib", 240}});
  balloon.classify.killed = Exposure::kContained;
  auto c = Classify(balloon, o);
  EXPECT_EQ(c.exposure, Exposure::kContained);
  EXPECT_EQ(c.label, "OOM killed");
  EXPECT_NE(c.reason.find("OOMKilled"), std::string::npos);
  EXPECT_NE(c.reason.find("240"), std::string::npos);
}

// res.fork-bomb under gVisor: the sandbox dies (exit 2) when the pids cgroup counts its threads.
TEST(ClassifyTest, CrashedRuleOnlyForDeclaringProbesAfterStart) {
  ProbeDescriptor bomb;
  bomb.classify.outcomes = {{"all_forked", Exposure::kExposed}};
  Observation crashed = Started(Exited(2));
  crashed.records.push_back({{"kind", "progress"}, {"forked", 4}});
  EXPECT_EQ(Classify(bomb, crashed).exposure, Exposure::kUnknown) << "not declared: no judgement";
  bomb.classify.crashed = Exposure::kContained;
  const Classification c = Classify(bomb, crashed);
  EXPECT_EQ(c.exposure, Exposure::kContained);
  EXPECT_EQ(c.evidence, Evidence::kAbsence);
  EXPECT_EQ(c.label, "crashed (exit 2)");
  EXPECT_NE(c.reason.find("\"forked\":4"), std::string::npos) << c.reason;
  EXPECT_EQ(Classify(bomb, Exited(2)).exposure, Exposure::kUnknown) << "never started";
  EXPECT_EQ(Classify(bomb, Started(Exited(0))).exposure, Exposure::kUnknown) << "exit 0";
  EXPECT_EQ(Classify(bomb, Started(Exited(124))).exposure, Exposure::kUnknown) << "a timeout";
}

// proc.outlives-call: the probe detaches a process and defers to the driver's survivors count.
TEST(ClassifyTest, FactRuleDecidesWhenTheProbeDefers) {
  ProbeDescriptor p;
  p.classify.outcomes = {{"detached", Exposure::kUnknown},
                         {"fork_failed", Exposure::kContained},
                         {"leaked", Exposure::kExposed}};
  p.classify.fact = FactRule{.fact = "survivors"};
  const nlohmann::json detached = {{"kind", "result"}, {"outcome", "detached"}};
  struct Case {
    std::string name;
    nlohmann::json result;
    nlohmann::json facts;
    bool started;
    Exposure want;
    std::string label;
  } cases[] = {
      {"survivor",
       detached,
       {{"survivors", 1}, {"survivors_source", "reaper"}},
       true,
       Exposure::kExposed,
       "SURVIVORS 1"},
      {"none survived", detached, {{"survivors", 0}}, true, Exposure::kContained, "survivors 0"},
      {"no fact: the probe's unknown stands", detached, nlohmann::json::object(), true,
       Exposure::kUnknown, "detached"},
      {"non-numeric fact is no fact",
       detached,
       {{"survivors", "0"}},
       true,
       Exposure::kUnknown,
       "detached"},
      {"a declared contained outcome wins",
       {{"kind", "result"}, {"outcome", "fork_failed"}},
       {{"survivors", 3}},
       true,
       Exposure::kContained,
       "fork failed"},
      {"a declared exposed outcome wins",
       {{"kind", "result"}, {"outcome", "leaked"}},
       {{"survivors", 0}},
       true,
       Exposure::kExposed,
       "LEAKED"},
      {"never started: no judgement",
       nullptr,
       {{"survivors", 0}},
       false,
       Exposure::kUnknown,
       "no result"},
  };
  for (const Case& c : cases) {
    Observation o =
        Exited(0, c.result.is_null() ? std::nullopt : std::optional<nlohmann::json>(c.result));
    if (c.started) o = Started(o);
    o.driver_facts = c.facts;
    const Classification got = Classify(p, o);
    EXPECT_EQ(got.exposure, c.want) << c.name;
    EXPECT_EQ(got.label, c.label) << c.name;
  }
  Observation killed_at_deadline = Started(Exited(0, detached));
  killed_at_deadline.ending = Ending::kDeadline;
  killed_at_deadline.driver_facts = {{"survivors", 0}};
  EXPECT_EQ(Classify(p, killed_at_deadline).exposure, Exposure::kUnknown)
      << "the harness killed the whole tree: nothing is known about what would have survived";
  Observation o = Started(Exited(0, detached));
  o.driver_facts = {{"survivors", 2}, {"survivors_source", "sandprobe-reaper"}};
  const Classification got = Classify(p, o);
  EXPECT_EQ(got.evidence, Evidence::kPositive);
  EXPECT_NE(got.reason.find("sandprobe-reaper"), std::string::npos) << got.reason;
}

// A service the harness did not start cannot hold the planted canary: absent proves nothing.
TEST(ClassifyTest, CanaryNotPlantedIsNoContainment) {
  ProbeDescriptor env;
  env.classify.outcomes = {{"absent", Exposure::kContained}, {"present", Exposure::kExposed}};
  Observation absent = Started(Exited(
      0, nlohmann::json{{"kind", "result"}, {"outcome", "absent"}, {"evidence", "positive"}}));
  EXPECT_EQ(Classify(env, absent).exposure, Exposure::kContained);
  absent.canary_not_planted = true;
  const Classification c = Classify(env, absent);
  EXPECT_EQ(c.exposure, Exposure::kUnknown);
  EXPECT_NE(c.reason.find("did not start this sandbox"), std::string::npos) << c.reason;
  Observation present =
      Started(Exited(0, nlohmann::json{{"kind", "result"}, {"outcome", "present"}}));
  present.canary_not_planted = true;
  EXPECT_EQ(Classify(env, present).exposure, Exposure::kExposed) << "exposure still counts";
}

// net.abstract-unix: ECONNREFUSED from another network namespace and from a dead listener are the
// same errno; only the harness's own connect after the call tells them apart.
TEST(ClassifyTest, ARefusalCountsOnlyWhileTheListenerLives) {
  ProbeDescriptor unix_probe;
  unix_probe.needs = {Need::kLiveCanary};
  unix_probe.classify.outcomes = {{"refused", Exposure::kContained},
                                  {"reached", Exposure::kExposed}};
  Observation refused = Started(Exited(
      0, nlohmann::json{{"kind", "result"}, {"outcome", "refused"}, {"evidence", "positive"}}));
  Classification c = Classify(unix_probe, refused);
  EXPECT_EQ(c.exposure, Exposure::kUnknown) << "not checked: no proof the listener lived";
  EXPECT_EQ(c.label, "listener dead");
  refused.driver_facts["canary_listening"] = false;
  c = Classify(unix_probe, refused);
  EXPECT_EQ(c.exposure, Exposure::kUnknown);
  EXPECT_NE(c.reason.find("did not accept a connection"), std::string::npos) << c.reason;
  refused.driver_facts["canary_listening"] = true;
  c = Classify(unix_probe, refused);
  EXPECT_EQ(c.exposure, Exposure::kContained);
  EXPECT_EQ(c.evidence, Evidence::kPositive);
  Observation reached =
      Started(Exited(0, nlohmann::json{{"kind", "result"}, {"outcome", "reached"}}));
  reached.driver_facts["canary_listening"] = false;
  EXPECT_EQ(Classify(unix_probe, reached).exposure, Exposure::kExposed) << "a leak stays a leak";
  ProbeDescriptor other = unix_probe;
  other.needs.clear();
  refused.driver_facts.erase("canary_listening");
  EXPECT_EQ(Classify(other, refused).exposure, Exposure::kContained) << "only probes that need it";
}

TEST(ClassifyTest, ExposedResultIsALeakEvenIfKilledLater) {
  ProbeDescriptor balloon;
  balloon.classify.outcomes = {{"target_reached", Exposure::kExposed}};
  balloon.classify.killed = Exposure::kContained;
  Observation o = Exited(137, nlohmann::json{{"kind", "result"}, {"outcome", "target_reached"}});
  o.driver_facts["oom_killed"] = true;
  EXPECT_EQ(Classify(balloon, o).exposure, Exposure::kExposed);
}

TEST(ClassifyTest, HarnessProblemsAreUnknown) {
  for (Ending e : {Ending::kHarnessError, Ending::kInterrupted, Ending::kNotRun}) {
    Observation o;
    o.ending = e;
    o.result = nlohmann::json{{"kind", "result"}, {"outcome", "blocked"}};
    EXPECT_EQ(Classify(NetProbe(), o).exposure, Exposure::kUnknown) << ToString(e);
  }
}

// res.output-flood: stdout_bytes against the amount the probe wrote (param total_mib, MiB).
ProbeDescriptor FloodProbe() {
  ProbeDescriptor p;
  p.id = "res.output-flood";
  p.classify.outcomes = {{"written", Exposure::kUnknown}, {"error", Exposure::kUnknown}};
  p.classify.output = OutputRule{"total_mib", 1 << 20};
  return p;
}

TEST(ClassifyTest, OutputRuleTable) {
  const nlohmann::json written = {{"kind", "result"}, {"outcome", "written"}};
  const nlohmann::json failed = {{"kind", "result"}, {"outcome", "error"}};
  struct Case {
    const char* name;
    Ending ending;
    bool started;
    std::optional<nlohmann::json> result;
    uint64_t stdout_bytes;
    Exposure want;
    const char* label_has;
  };
  const uint64_t mib = 1 << 20;
  const Case cases[] = {
      {"everything delivered", Ending::kExited, true, written, 64 * mib + 300, Exposure::kExposed,
       "DELIVERED"},
      {"cut, result lost", Ending::kExited, true, std::nullopt, mib, Exposure::kContained, "cut"},
      {"cut, head and tail kept", Ending::kExited, true, written, 2 * mib, Exposure::kContained,
       "cut"},
      {"cut by the sandbox's kill", Ending::kSignaled, true, std::nullopt, mib,
       Exposure::kContained, "cut"},
      {"most delivered: no decision", Ending::kExited, true, written, 40 * mib, Exposure::kUnknown,
       ""},
      {"probe failed", Ending::kExited, true, failed, mib, Exposure::kUnknown, ""},
      {"never started", Ending::kExited, false, std::nullopt, 0, Exposure::kUnknown, ""},
      {"harness deadline cut it", Ending::kDeadline, true, std::nullopt, mib, Exposure::kUnknown,
       ""},
      {"harness error", Ending::kHarnessError, true, std::nullopt, 0, Exposure::kUnknown, ""},
  };
  for (const Case& c : cases) {
    Observation o;
    o.ending = c.ending;
    o.signal = c.ending == Ending::kSignaled ? 9 : 0;
    o.result = c.result;
    if (c.started) o.records.push_back({{"kind", "start"}});
    o.stdout_bytes = c.stdout_bytes;
    o.params = {{"total_mib", 64}};
    const Classification got = Classify(FloodProbe(), o);
    EXPECT_EQ(got.exposure, c.want) << c.name << ": " << got.reason;
    EXPECT_NE(got.label.find(c.label_has), std::string::npos) << c.name << ": " << got.label;
    if (c.want != Exposure::kUnknown) {
      EXPECT_EQ(got.evidence, Evidence::kPositive) << c.name;
    }
  }
}

// proc.outlives-call's rules: the probe's own outcome is unknown, the survivors fact decides, and
// without it a quiet canary after the call is containment.
ProbeDescriptor OutlivesCallRules() {
  ProbeDescriptor p;
  p.classify.outcomes = {{"detached", Exposure::kUnknown}, {"fork_failed", Exposure::kContained}};
  p.classify.fact = FactRule{"survivors"};
  p.classify.quiet_after_call = QuietAfterCallRule{"canary", Exposure::kContained};
  return p;
}

// proc.outlives-call through a service: no survivors fact, the driver waited after the call.
TEST(ClassifyTest, QuietAfterCallTable) {
  const ProbeDescriptor p = OutlivesCallRules();
  const nlohmann::json detached = {{"kind", "result"}, {"outcome", "detached"}};
  struct Case {
    const char* name;
    nlohmann::json facts;
    std::string canary;
    bool hit;
    Exposure want;
    Evidence evidence;
  };
  const Case cases[] = {
      {"waited, quiet",
       {{"after_call_wait_s", 1.5}},
       "127.0.0.1:9",
       false,
       Exposure::kContained,
       Evidence::kAbsence},
      {"waited, heartbeat heard",
       {{"after_call_wait_s", 1.5}},
       "127.0.0.1:9",
       true,
       Exposure::kExposed,
       Evidence::kPositive},
      {"did not wait", nlohmann::json::object(), "127.0.0.1:9", false, Exposure::kUnknown,
       Evidence::kNone},
      {"no canary to report to",
       {{"after_call_wait_s", 1.5}},
       "",
       false,
       Exposure::kUnknown,
       Evidence::kNone},
      {"survivors fact wins",
       {{"after_call_wait_s", 1.5}, {"survivors", 1}},
       "127.0.0.1:9",
       false,
       Exposure::kExposed,
       Evidence::kPositive},
  };
  for (const Case& c : cases) {
    Observation o = Started(Exited(0, detached));
    o.driver_facts = c.facts;
    o.params = {{"canary", c.canary}};
    if (c.hit) o.canary_hits.push_back({"tcp", "127.0.0.1:5555", "heartbeat"});
    const Classification got = Classify(p, o);
    EXPECT_EQ(got.exposure, c.want) << c.name << ": " << got.reason;
    EXPECT_EQ(got.evidence, c.evidence) << c.name;
  }
}

// proc.outlives-call in a container: a beat sent between the probe's own exit and its sandbox's end
// (logged before the driver's call_ended_unix_ms) proves nothing; one logged after it does, and
// without a known end every beat counts.
TEST(ClassifyTest, QuietAfterCallCountsOnlyBeatsAfterTheCallEnded) {
  const ProbeDescriptor p = OutlivesCallRules();
  const nlohmann::json detached = {{"kind", "result"}, {"outcome", "detached"}};
  struct Case {
    const char* name;
    nlohmann::json facts;
    int64_t beat_ms;
    Exposure want;
  };
  const Case cases[] = {
      {"beat before the end, no survivors",
       {{"survivors", 0}, {"call_ended_unix_ms", 5000}},
       4900,
       Exposure::kContained},
      {"beat at the end",
       {{"survivors", 0}, {"call_ended_unix_ms", 5000}},
       5000,
       Exposure::kContained},
      {"beat after the end",
       {{"survivors", 0}, {"call_ended_unix_ms", 5000}},
       5400,
       Exposure::kExposed},
      {"end not known", {{"survivors", 0}}, 4900, Exposure::kExposed},
      {"beat time not known",
       {{"survivors", 0}, {"call_ended_unix_ms", 5000}},
       0,
       Exposure::kExposed},
  };
  for (const Case& c : cases) {
    Observation o = Started(Exited(0, detached));
    o.driver_facts = c.facts;
    o.params = {{"canary", "127.0.0.1:9"}};
    o.canary_hits.push_back({"tcp", "127.0.0.1:5555", "heartbeat", c.beat_ms});
    const Classification got = Classify(p, o);
    EXPECT_EQ(got.exposure, c.want) << c.name << ": " << got.reason;
    EXPECT_EQ(got.evidence, Evidence::kPositive) << c.name;
  }
}

// "Stopped means stopped" (res.cpu-loop through a service or a wrapper command): heartbeats are
// liveness during the call; one logged after the call's end, or a reaper survivor, is a FAIL
// whatever exit code the sandbox reported.
TEST(ClassifyTest, StillRunningTable) {
  ProbeDescriptor p;
  p.classify.outcomes = {{"error", Exposure::kUnknown}};
  p.classify.killed = p.classify.timed_out = Exposure::kContained;
  p.classify.deadline = Exposure::kExposed;
  p.classify.still_running = StillRunningRule{"canary"};
  constexpr int64_t kEnd = 1'800'000'000'000;
  struct Case {
    const char* name;
    int exit_code;  // -1: the harness deadline
    nlohmann::json facts;
    std::vector<int64_t> beats_ms;  // hit times relative to the call's end
    Exposure want;
    Evidence evidence;
    const char* label_has;
  };
  const nlohmann::json ended = {{"call_ended_unix_ms", kEnd}};
  const Case cases[] = {
      {"beats only during the call, 124",
       124,
       ended,
       {-2000, -1500, -1000, -500, -20},
       Exposure::kContained,
       Evidence::kPositive,
       "exit 124"},
      {"a beat in flight at the end (grace)",
       124,
       ended,
       {-500, 300},
       Exposure::kContained,
       Evidence::kPositive,
       "exit 124"},
      {"one late beat is jitter, not a survivor",
       124,
       ended,
       {-500, 900},
       Exposure::kContained,
       Evidence::kPositive,
       "exit 124"},
      {"beats after the answer, 124",
       124,
       ended,
       {-500, 0, 600, 1100, 1600},
       Exposure::kExposed,
       Evidence::kPositive,
       "STILL RUNNING"},
      {"beats after a clean exit 0",
       0,
       ended,
       {900, 1400},
       Exposure::kExposed,
       Evidence::kPositive,
       "STILL RUNNING"},
      {"reaper survivors, no canary",
       124,
       {{"survivors", 1}},
       {},
       Exposure::kExposed,
       Evidence::kPositive,
       "STILL RUNNING"},
      {"reaper counted none, never heard",
       124,
       {{"survivors", 0}},
       {},
       Exposure::kContained,
       Evidence::kPositive,
       "exit 124"},
      {"a service, never heard: its word only",
       124,
       ended,
       {},
       Exposure::kContained,
       Evidence::kSandboxWord,
       "exit 124"},
      {"harness deadline",
       -1,
       ended,
       {5000},
       Exposure::kExposed,
       Evidence::kPositive,
       "STILL RUNNING"},
  };
  for (const Case& c : cases) {
    Observation o = c.exit_code < 0 ? Started(Observation{}) : Started(Exited(c.exit_code));
    if (c.exit_code < 0) {
      o.ending = Ending::kDeadline;
      o.deadline_s = 10;
    }
    o.driver_facts = c.facts;
    o.params = {{"canary", "127.0.0.1:9"}};
    for (int64_t at : c.beats_ms) {
      o.canary_hits.push_back({"tcp", "127.0.0.1:5555", "beat", kEnd + at});
    }
    const Classification got = Classify(p, o);
    EXPECT_EQ(got.exposure, c.want) << c.name << ": " << got.reason;
    EXPECT_EQ(got.evidence, c.evidence) << c.name << ": " << got.reason;
    EXPECT_NE(got.label.find(c.label_has), std::string::npos) << c.name << ": " << got.label;
  }
  Observation late = Started(Exited(124));
  late.driver_facts = ended;
  for (int64_t at : {1100, 1600})
    late.canary_hits.push_back({"tcp", "127.0.0.1:5555", "b", kEnd + at});
  EXPECT_NE(Classify(p, late).reason.find("still running after the sandbox reported it stopped"),
            std::string::npos);
}

// Shared fate: service_died turns anything but a measured leak into unknown.
TEST(ClassifyTest, ServiceDiedTable) {
  const nlohmann::json blocked = {{"kind", "result"}, {"outcome", "blocked"}};
  const nlohmann::json reached = {{"kind", "result"}, {"outcome", "reached"}};
  struct Case {
    const char* name;
    std::optional<nlohmann::json> result;
    bool died;
    Exposure want;
  };
  const Case cases[] = {
      {"contained, service fine", blocked, false, Exposure::kContained},
      {"contained, then the service died", blocked, true, Exposure::kUnknown},
      {"leak, then the service died", reached, true, Exposure::kExposed},
      {"no result, service died", std::nullopt, true, Exposure::kUnknown},
  };
  for (const Case& c : cases) {
    Observation o = Started(Exited(0, c.result));
    o.driver_facts = {{"health_before", "ok"}, {"health_after", "GET /healthz: HTTP 503"}};
    if (c.died) o.driver_facts["service_died"] = true;
    const Classification got = Classify(NetProbe(), o);
    EXPECT_EQ(got.exposure, c.want) << c.name << ": " << got.reason;
    if (c.died && c.want == Exposure::kUnknown) {
      EXPECT_NE(got.reason.find("the probe took the service down"), std::string::npos) << c.name;
      EXPECT_NE(got.reason.find("HTTP 503"), std::string::npos) << c.name;
    }
  }
}

// classify.live_change: the canary's hits against the driver's change of the running pod (the
// PATCH sent at t - 100 ms, answered at t = 1'000'000 ms; settle 5 s; the container seen ended at
// t + 9 s). One table: the hits' times (ms after t; 0 = a hit without a time), the probe's last
// try, the driver's facts -> exposure, label and reason.
TEST(ClassifyTest, LiveChangeJudgesHitsByTheirTimeAfterTheChange) {
  ProbeDescriptor p;
  p.id = "net.live-change";
  p.classify.outcomes = {{"sent", Exposure::kUnknown}};
  p.classify.live_change = true;
  constexpr int64_t kT = 1'000'000, kNoTime = INT64_MIN;
  const struct {
    const char* name;
    std::vector<int64_t> hits;  // ms relative to the change; kNoTime: unix_ms 0
    int64_t last_try;           // ms relative to the change; kNoTime: no last_try_unix_ms
    bool changed;               // the driver's PATCH was answered
    Exposure exposure;
    const char* label;
    const char* reason;
  } cases[] = {
      {"cut within the settle",
       {-2000, -1000, 1000, 4900, kNoTime},
       8000,
       true,
       Exposure::kContained,
       "held after change",
       "added label s=1: the canary logged 2 hit(s) of this invocation before it and none from 5s "
       "after it to the probe's last try, 8.0s after it"},
      {"still reached after the settle",
       {-2000, 6000, 7500},
       8000,
       true,
       Exposure::kExposed,
       "REACHED AFTER CHANGE",
       "added label s=1, and the canary logged 2 hit(s) of this invocation 6.0s to 7.5s after the "
       "API server took it (settle 5s)"},
      {"a hit inside the PATCH's round trip after the settle",
       {-2000, 4950},
       8000,
       true,
       Exposure::kUnknown,
       "no change",
       "added label s=1: 1 hit(s) landed within the PATCH's own round trip (100 ms) after the 5s "
       "settle: neither surely late nor surely not"},
      {"stopped trying inside the settle",
       {-2000},
       4000,
       true,
       Exposure::kUnknown,
       "no change",
       "added label s=1: the probe's last try was 4.0s after the change, before the 5s settle "
       "ended: nothing shows what held after it"},
      {"a last try after the container ended is bounded by it",
       {-2000},
       900'000,
       true,
       Exposure::kContained,
       "held after change",
       "added label s=1: the canary logged 1 hit(s) of this invocation before it and none from 5s "
       "after it to the probe's last try, 9.0s after it"},
      {"no last try recorded",
       {-2000},
       kNoTime,
       true,
       Exposure::kUnknown,
       "no change",
       "added label s=1: the probe recorded no time of its last try: nothing shows it still tried "
       "after the 5s settle"},
      {"never reached at all",
       {},
       8000,
       true,
       Exposure::kUnknown,
       "no change",
       "added label s=1: the canary logged no hit before the change and none from 5s after it: "
       "nothing shows the change made a difference"},
      {"the change was not made",
       {-2000, 7000},
       8000,
       false,
       Exposure::kUnknown,
       "no change",
       "the driver did not make the live change (added label s=1): the probe container ended "
       "before the change"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    nlohmann::json result = {{"kind", "result"}, {"outcome", "sent"}, {"evidence", "absence"}};
    if (c.last_try != kNoTime) result["last_try_unix_ms"] = kT + c.last_try;
    Observation o = Started(Exited(0, result));
    for (int64_t h : c.hits) {
      o.canary_hits.push_back({"tcp", "10.0.0.9:4000", "SANDPROBE", h == kNoTime ? 0 : kT + h});
    }
    o.driver_facts[fact::kLiveChange] = "added label s=1";
    o.driver_facts[fact::kLiveChangeSettleS] = 5;
    o.driver_facts[fact::kLiveChangeEndedUnixMs] = kT + 9000;
    if (c.changed) {
      o.driver_facts[fact::kLiveChangeSentUnixMs] = kT - 100;
      o.driver_facts[fact::kLiveChangeUnixMs] = kT;
    } else {
      o.driver_facts[fact::kLiveChangeError] = "the probe container ended before the change";
    }
    const Classification got = Classify(p, o);
    EXPECT_EQ(got.exposure, c.exposure);
    EXPECT_EQ(got.label, c.label);
    EXPECT_EQ(got.reason, c.reason);
  }
  // Without a change (a plain control) the hits decide as for any probe; a probe that does not
  // declare live_change ignores the facts.
  Observation plain = Started(Exited(0, nlohmann::json{{"kind", "result"}, {"outcome", "sent"}}));
  plain.canary_hits.push_back({"tcp", "10.0.0.9:4000", "SANDPROBE", kT});
  EXPECT_EQ(Classify(p, plain).label, "REACHED");
  plain.driver_facts[fact::kLiveChange] = "added label s=1";
  plain.driver_facts[fact::kLiveChangeUnixMs] = kT + 10'000;
  p.classify.live_change = false;
  EXPECT_EQ(Classify(p, plain).label, "REACHED");
  // A hostile result's last_try_unix_ms that is not a number is no try.
  p.classify.live_change = true;
  plain.canary_hits[0].unix_ms = kT + 9'000;
  plain.result = nlohmann::json{{"kind", "result"}, {"outcome", "sent"}, {"last_try_unix_ms", "x"}};
  EXPECT_EQ(Classify(p, plain).exposure, Exposure::kUnknown);
}

}  // namespace
}  // namespace sandprobe::core
