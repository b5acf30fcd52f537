#include "core/classify.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/facts.h"
#include "core/json_field.h"
#include "core/text.h"

namespace sandprobe::core {
namespace {

std::string Upper(std::string s) {
  std::ranges::transform(s, s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

// Cell text for a declared outcome: exposed outcomes shout, contained ones do not.
std::string OutcomeLabel(const std::string& outcome, Exposure e) {
  std::string text = outcome;
  std::ranges::replace(text, '_', ' ');
  return e == Exposure::kExposed ? Upper(text) : text;
}

std::string KillLabel(const Observation& obs) {
  if (obs.ending == Ending::kSignaled) return fmt::format("killed (signal {})", obs.signal);
  return fmt::format("exit {}", obs.exit_code);
}

std::string ProgressNote(const Observation& obs) {
  const nlohmann::json* p = obs.LastProgress();
  if (p == nullptr) return "";
  nlohmann::json copy = *p;
  for (const char* k : {"kind", "probe", "seq"}) copy.erase(k);
  return fmt::format("; last progress {}",
                     copy.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Classification FromResult(const ClassifyRules& rules, const nlohmann::json& result) {
  const std::string outcome = StringField(result, "outcome");
  auto it = rules.outcomes.find(outcome);
  if (it == rules.outcomes.end()) {
    return {Exposure::kUnknown, Evidence::kNone, "unparsed",
            fmt::format("result outcome '{}' is not declared by the probe", Bounded(outcome, 300))};
  }
  Evidence ev = Evidence::kAbsence;
  // A probe's record says positive or absence; only Classify says "the sandbox's word".
  if (auto parsed = ParseEvidence(StringField(result, "evidence"));
      parsed && *parsed != Evidence::kSandboxWord) {
    ev = *parsed;
  }
  if (it->second == Exposure::kUnknown) ev = Evidence::kNone;
  std::string reason = fmt::format("outcome {}", outcome);
  const std::string err = StringField(result, "errno");
  if (!err.empty()) reason += fmt::format(" ({})", Bounded(err, 300));
  const std::string detail = StringField(result, "detail");
  if (!detail.empty()) reason += ": " + Bounded(detail, 300);
  return {it->second, ev, OutcomeLabel(outcome, it->second), reason};
}

// The claim check: the largest value of rules.exceeds->field in any record, when it is over the
// claim held in the resolved parameter of that name (a claim of 0 or none is no claim).
std::optional<Classification> OverClaim(const ClassifyRules& rules, const Observation& obs) {
  if (!rules.exceeds) return std::nullopt;
  const auto claim_it = obs.params.find(rules.exceeds->param);
  if (claim_it == obs.params.end() || !claim_it->is_number()) return std::nullopt;
  const double claim = claim_it->get<double>();
  if (claim <= 0) return std::nullopt;
  double most = 0;
  auto consider = [&](const nlohmann::json& record) {
    const auto it = record.find(rules.exceeds->field);
    if (it != record.end() && it->is_number()) most = std::max(most, it->get<double>());
  };
  for (const nlohmann::json& r : obs.records) consider(r);
  if (obs.result) consider(*obs.result);
  if (most <= claim) return std::nullopt;
  return Classification{
      Exposure::kExposed, Evidence::kPositive, fmt::format("OVER CLAIM ({:g})", most),
      fmt::format("{} reached {:g}, over the claimed {:g} ({}): the claimed limit did not hold",
                  rules.exceeds->field, most, claim, rules.exceeds->param)};
}

// rules.fact, when the driver measured it: driver_facts[fact] (a number) with an optional
// driver_facts[fact + "_source"] naming where it came from.
std::optional<Classification> FromFact(const ClassifyRules& rules, const Observation& obs) {
  if (!rules.fact) return std::nullopt;
  const auto it = obs.driver_facts.find(rules.fact->fact);
  if (it == obs.driver_facts.end() || !it->is_number()) return std::nullopt;
  const double n = it->get<double>();
  const std::string source = StringField(obs.driver_facts, rules.fact->fact + "_source");
  const Exposure e = n > 0 ? rules.fact->above_zero : rules.fact->zero;
  std::string label = fmt::format("{} {:g}", rules.fact->fact, n);
  if (e == Exposure::kExposed) label = Upper(label);
  return Classification{e, e == Exposure::kUnknown ? Evidence::kNone : Evidence::kPositive, label,
                        fmt::format("driver fact {} = {:g}{}", rules.fact->fact, n,
                                    source.empty() ? "" : " (" + Bounded(source, 300) + ")")};
}

// rules.output: how much of what the probe wrote came back (stdout_bytes against the parameter).
std::optional<Classification> FromOutput(const ClassifyRules& rules, const Observation& obs,
                                         bool started, bool ended_itself) {
  if (!rules.output) return std::nullopt;
  const auto it = obs.params.find(rules.output->param);
  if (it == obs.params.end() || !it->is_number()) return std::nullopt;
  const double written = it->get<double>() * rules.output->unit_bytes;
  if (written <= 0) return std::nullopt;
  const double seen = static_cast<double>(obs.stdout_bytes);
  if (seen >= written) {
    return Classification{
        Exposure::kExposed, Evidence::kPositive,
        fmt::format("DELIVERED {:.0f} MiB", seen / 1048576),
        fmt::format("all {:.0f} bytes the probe wrote came back ({} bytes of stdout): nothing cut "
                    "the output",
                    written, obs.stdout_bytes)};
  }
  // A cut only counts for a probe seen running that was not stopped by the harness, and whose
  // result (if it got through) does not say the probe itself failed (the preamble's "error").
  const bool failed = obs.result && StringField(*obs.result, "outcome") == "error";
  if (started && ended_itself && !failed && seen < written / 2) {
    return Classification{
        Exposure::kContained, Evidence::kPositive, fmt::format("cut at {:.0f} KiB", seen / 1024),
        fmt::format("output cut: {} of the {:.0f} bytes written came back{}", obs.stdout_bytes,
                    written, obs.result ? "" : " and the result record never arrived")};
  }
  return std::nullopt;
}

// rules.quiet_after_call: the driver waited after the call and the canary heard nothing.
std::optional<Classification> FromQuiet(const ClassifyRules& rules, const Observation& obs) {
  if (!rules.quiet_after_call || !obs.canary_hits.empty()) return std::nullopt;
  const auto wait = obs.driver_facts.find(fact::kAfterCallWaitS);
  if (wait == obs.driver_facts.end() || !wait->is_number() || wait->get<double>() <= 0)
    return std::nullopt;
  const auto target = obs.params.find(rules.quiet_after_call->param);
  if (target == obs.params.end() || !target->is_string() || target->get<std::string>().empty())
    return std::nullopt;
  const Exposure e = rules.quiet_after_call->exposure;
  return Classification{
      e, e == Exposure::kUnknown ? Evidence::kNone : Evidence::kAbsence, "no heartbeat",
      fmt::format("nothing reached the canary in the {:g}s the driver waited after the call "
                  "(absence: the driver cannot count survivors, and a survivor without a route to "
                  "the canary would not be heard either)",
                  wait->get<double>())};
}

// rules.still_running: heartbeats logged after the driver's call_ended_unix_ms (plus one beat's
// grace), or reaper survivors of an invocation that ended by itself.
std::optional<Classification> StillRunning(const ClassifyRules& rules, const Observation& obs) {
  if (!rules.still_running) return std::nullopt;
  const bool ended_itself = obs.ending == Ending::kExited || obs.ending == Ending::kSignaled;
  if (!ended_itself) return std::nullopt;
  const std::string said = obs.ending == Ending::kSignaled
                               ? fmt::format("killed by signal {}", obs.signal)
                               : fmt::format("exit {}", obs.exit_code);
  const auto ended = obs.driver_facts.find(fact::kCallEndedUnixMs);
  if (ended != obs.driver_facts.end() && ended->is_number_integer()) {
    const int64_t after = ended->get<int64_t>() + static_cast<int64_t>(kHeartbeatGraceS * 1000);
    size_t late = 0;
    int64_t last = 0;
    for (const CanaryHit& h : obs.canary_hits) {
      if (h.unix_ms > after) {
        ++late;
        last = std::max(last, h.unix_ms);
      }
    }
    if (late >= kLateBeatsForStillRunning) {
      return Classification{
          Exposure::kExposed, Evidence::kPositive, "STILL RUNNING",
          fmt::format("still running after the sandbox reported it stopped: {} heartbeat(s) "
                      "logged by the canary up to {:.1f}s after the call ended ({}){}",
                      late, static_cast<double>(last - ended->get<int64_t>()) / 1000, said,
                      ProgressNote(obs))};
    }
  }
  const auto survivors = obs.driver_facts.find(fact::kSurvivors);
  if (survivors != obs.driver_facts.end() && survivors->is_number() &&
      survivors->get<double>() > 0) {
    const std::string source = StringField(obs.driver_facts, fact::kSurvivorsSource);
    return Classification{
        Exposure::kExposed, Evidence::kPositive, "STILL RUNNING",
        fmt::format("still running after the sandbox reported it stopped ({}): {:g} process(es) "
                    "of its tree were alive when it ended{}",
                    said, survivors->get<double>(),
                    source.empty() ? "" : " (" + Bounded(source, 300) + ")")};
  }
  return std::nullopt;
}

// rules.live_change: the canary's hits against the time the driver changed the running pod
// (live_change_sent_unix_ms .. live_change_unix_ms, the PATCH's round trip on the harness's
// clock; the hits on the canary's: one clock on one machine, and the settle absorbs a small skew
// elsewhere). A hit later than the answer plus the settle is certainly late; one inside the round
// trip's own margin is neither. "Still trying after the settle" rests on the probe's last try,
// bounded by when the harness saw its container end (live_change_ended_unix_ms). nullopt when the
// arm changed nothing.
std::optional<Classification> FromLiveChange(const ClassifyRules& rules, const Observation& obs) {
  const std::string change = StringField(obs.driver_facts, fact::kLiveChange);
  if (!rules.live_change || change.empty()) return std::nullopt;
  const auto unknown = [](std::string why) {
    return Classification{Exposure::kUnknown, Evidence::kNone, "no change", std::move(why)};
  };
  const std::string error = StringField(obs.driver_facts, fact::kLiveChangeError);
  const int64_t t = IntField(obs.driver_facts, fact::kLiveChangeUnixMs);
  if (!error.empty() || t <= 0) {
    return unknown(fmt::format("the driver did not make the live change ({}): {}", change,
                               error.empty() ? "no time recorded" : Bounded(error, 300)));
  }
  const int64_t sent_at = IntField(obs.driver_facts, fact::kLiveChangeSentUnixMs);
  const int64_t sent = sent_at > 0 ? std::min(t, sent_at) : t;
  const auto s = obs.driver_facts.find(fact::kLiveChangeSettleS);
  const double settle = s != obs.driver_facts.end() && s->is_number() ? s->get<double>() : 0;
  const auto settle_ms = static_cast<int64_t>(settle * 1000);
  const int64_t after = t + settle_ms;
  size_t before = 0, late = 0, margin = 0;
  int64_t first = 0, last = 0;
  for (const CanaryHit& h : obs.canary_hits) {
    if (h.unix_ms <= 0) continue;
    if (h.unix_ms < sent) ++before;
    if (h.unix_ms > sent + settle_ms && h.unix_ms <= after) ++margin;
    if (h.unix_ms <= after) continue;
    if (late++ == 0) first = h.unix_ms;
    last = std::max(last, h.unix_ms);
  }
  const auto secs = [t](int64_t when) { return static_cast<double>(when - t) / 1000; };
  if (late > 0) {
    return Classification{
        Exposure::kExposed, Evidence::kPositive, "REACHED AFTER CHANGE",
        fmt::format("{}, and the canary logged {} hit(s) of this invocation {:.1f}s to {:.1f}s "
                    "after the API server took it (settle {:g}s)",
                    change, late, secs(first), secs(last), settle)};
  }
  if (margin > 0) {
    return unknown(
        fmt::format("{}: {} hit(s) landed within the PATCH's own round trip ({} ms) "
                    "after the {:g}s settle: neither surely late nor surely not",
                    change, margin, t - sent, settle));
  }
  if (before == 0) {
    return unknown(
        fmt::format("{}: the canary logged no hit before the change and none from {:g}s "
                    "after it: nothing shows the change made a difference",
                    change, settle));
  }
  const int64_t tried = obs.result ? IntField(*obs.result, "last_try_unix_ms") : 0;
  if (tried <= 0) {
    return unknown(
        fmt::format("{}: the probe recorded no time of its last try: nothing shows it "
                    "still tried after the {:g}s settle",
                    change, settle));
  }
  const int64_t ended = IntField(obs.driver_facts, fact::kLiveChangeEndedUnixMs);
  const int64_t until = ended > 0 ? std::min(tried, ended) : tried;
  if (until <= after) {
    return unknown(
        fmt::format("{}: the probe's last try was {:.1f}s after the change{}, before the "
                    "{:g}s settle ended: nothing shows what held after it",
                    change, secs(until),
                    ended > 0 && ended < tried ? " (its container had ended)" : "", settle));
  }
  return Classification{
      Exposure::kContained, Evidence::kAbsence, "held after change",
      fmt::format(
          "{}: the canary logged {} hit(s) of this invocation before it and none from {:g}s "
          "after it to the probe's last try, {:.1f}s after it",
          change, before, settle, secs(until))};
}

// A containment read from the ending alone (timed_out, killed, crashed) holds only if the probe
// really stopped when the sandbox said so. The harness knows that from a survivors count
// (sandprobe-reaper, a private PID namespace) or, for a probe with a heartbeat, from beats heard
// while it ran and none after (StillRunning found none late). Without either, the ending of a
// still_running probe, or any ending the sandbox reported itself (a run-code service's answer:
// ended_by "service"), is the sandbox's word: "" when it is not, else why it is.
std::string SandboxWordNote(const ClassifyRules& rules, const Observation& obs) {
  if (obs.driver_facts.contains(fact::kSurvivors)) return "";
  if (rules.still_running && !obs.canary_hits.empty()) return "";
  const bool service = StringField(obs.driver_facts, fact::kEndedBy) == "service";
  if (!rules.still_running && !service) return "";
  std::string why = service ? "the exit status is the service's own answer"
                            : "nothing counted what was left of its process tree";
  if (rules.still_running) {
    const std::string canary = StringField(obs.params, rules.still_running->param);
    why += canary.empty()
               ? fmt::format(", and the probe had no heartbeat canary (params.{} is empty)",
                             rules.still_running->param)
               : fmt::format(
                     ", and its heartbeat to {} was never heard (no route from the "
                     "sandbox to the canary)",
                     Bounded(canary, 120));
  }
  return fmt::format("; nothing the harness measured confirms the stop: {}", why);
}

}  // namespace

KillKind KillKindOf(const Observation& obs) {
  if (obs.ending == Ending::kSignaled)
    return obs.signal == 15 ? KillKind::kTimeout : KillKind::kKill;
  if (obs.ending != Ending::kExited) return KillKind::kNone;
  if (obs.exit_code == 124 || obs.exit_code == 143) return KillKind::kTimeout;
  if (obs.exit_code == 137) return KillKind::kKill;
  return KillKind::kNone;
}

namespace {

Classification ClassifyEnding(const ProbeDescriptor& probe, const Observation& obs) {
  const ClassifyRules& rules = probe.classify;
  switch (obs.ending) {
    case Ending::kHarnessError:
      return {Exposure::kUnknown, Evidence::kNone, "error", "harness error: " + obs.harness_error};
    case Ending::kInterrupted:
      return {Exposure::kUnknown, Evidence::kNone, "interrupted", "run interrupted before the end"};
    case Ending::kNotRun:
      return {Exposure::kUnknown, Evidence::kNone, "not run", "probe was not run"};
    default:
      break;
  }
  if (auto running = StillRunning(rules, obs)) return *running;
  if (auto live = FromLiveChange(rules, obs)) return *live;
  // A still-running probe's hits are its heartbeats: liveness during the call, not reach.
  // A probe whose evidence is a heartbeat after the call (rules.quiet_after_call) counts only
  // beats logged after the driver's call_ended_unix_ms: one logged before it was sent while the
  // call still ran (between the probe's own exit and its sandbox's end, a window a loaded
  // machine widens) and proves nothing.
  int64_t ended_ms = 0;  // 0 = not known: every hit counts
  if (const auto e = obs.driver_facts.find(fact::kCallEndedUnixMs);
      rules.quiet_after_call && e != obs.driver_facts.end() && e->is_number_integer())
    ended_ms = e->get<int64_t>();
  const auto counts = [&](const CanaryHit& h) {
    if (ended_ms > 0 && h.unix_ms > 0 && h.unix_ms <= ended_ms) return false;
    return rules.canary_hit_kinds.empty() ||
           std::ranges::find(rules.canary_hit_kinds, h.kind) != rules.canary_hit_kinds.end();
  };
  const auto hit = std::ranges::find_if(obs.canary_hits, counts);
  if (hit != obs.canary_hits.end() && !rules.still_running) {
    const size_t n = std::ranges::count_if(obs.canary_hits, counts);
    // The probe's own account of the same leak, when it tells one: the canary sees a translated
    // peer (a NodePort's SNAT), the probe knows which address and port it used.
    std::string also;
    if (obs.result) {
      if (const Classification own = FromResult(rules, *obs.result);
          own.exposure == Exposure::kExposed && !own.reason.empty()) {
        also = "; the probe: " + Bounded(own.reason, 400);
      }
    }
    if (!rules.canary_hit_kinds.empty()) {
      return {rules.canary_hit, Evidence::kPositive, Upper(hit->kind) + " SERVED",
              fmt::format("the canary served this invocation a {} ({}) from {} ({} such hit(s)){}",
                          hit->kind, Bounded(hit->detail, 300), hit->peer, n, also)};
    }
    return {rules.canary_hit, Evidence::kPositive,
            rules.canary_hit == Exposure::kExposed ? "REACHED" : "canary hit",
            fmt::format("{} canary logged this invocation from {} ({} hit(s)){}", hit->kind,
                        hit->peer, n, also)};
  }
  std::optional<Classification> from_result;
  if (obs.result) from_result = FromResult(rules, *obs.result);
  // A declared exposed outcome is a leak whatever happened after it.
  if (from_result && from_result->exposure == Exposure::kExposed) return *from_result;
  if (auto over = OverClaim(rules, obs)) return *over;
  const bool started = std::ranges::any_of(
      obs.records, [](const nlohmann::json& r) { return StringField(r, "kind") == "start"; });
  // Only an invocation that ended by itself says what outlived it: one stopped at the deadline
  // was killed whole by the harness.
  const bool ended_itself = obs.ending == Ending::kExited || obs.ending == Ending::kSignaled;
  if (auto output = FromOutput(rules, obs, started, ended_itself)) return *output;
  if (BoolField(obs.driver_facts, fact::kOomKilled)) {
    return {rules.killed, Evidence::kPositive, "OOM killed",
            "driver fact: OOMKilled" + ProgressNote(obs)};
  }
  if (started && ended_itself && (!from_result || from_result->exposure == Exposure::kUnknown)) {
    if (auto fact = FromFact(rules, obs)) {
      if (from_result) fact->reason = from_result->reason + "; " + fact->reason;
      return *fact;
    }
    if (auto quiet = FromQuiet(rules, obs)) {
      if (from_result) quiet->reason = from_result->reason + "; " + quiet->reason;
      return *quiet;
    }
  }
  // A row proven by the canary's word (canary_hit_kinds): its silence is the containment, and a
  // log the driver could not read is no silence (kubernetes: pods/log of the in-cluster canary).
  if (from_result && from_result->exposure == Exposure::kContained &&
      from_result->evidence == Evidence::kAbsence && !rules.canary_hit_kinds.empty()) {
    if (const auto e = obs.driver_facts.find(fact::kClusterCanaryLog);
        e != obs.driver_facts.end()) {
      return {Exposure::kUnknown, Evidence::kNone, "canary log unread",
              from_result->reason +
                  "; but the canary's log, which decides this row, could not "
                  "be read: " +
                  Bounded(e->dump(), 300)};
    }
  }
  if (from_result) return *from_result;
  // The kubelet removes an evicted pod's containers, and with them the probe's log, often before
  // the driver reads it (docs/traps.md, trap 59): no record is no sign the probe never ran. Not
  // containment either: the kubelet acts on usage it already measured over a limit.
  if (!started && BoolField(obs.driver_facts, fact::kEvicted)) {
    const std::string why = OneLine(StringField(obs.driver_facts, fact::kPodMessage), 300, true);
    return {Exposure::kUnknown, Evidence::kNone, "evicted",
            fmt::format("the kubelet evicted the pod after {:.1f}s{}; it removes an evicted "
                        "pod's containers with their logs, so no record of the probe survived",
                        obs.duration_s, why.empty() ? "" : " (" + why + ")")};
  }
  // Endings only say something about a probe that was seen running: a "sandbox" that is killed
  // or hangs before the probe's start record may never have run the probe at all.
  if (!started && obs.ending != Ending::kExited) {
    return {Exposure::kUnknown, Evidence::kNone, "no start",
            fmt::format("{} after {:.1f}s with no start record: the probe may never have run",
                        obs.ending == Ending::kDeadline ? "hit the harness deadline"
                                                        : "killed (" + KillLabel(obs) + ")",
                        obs.duration_s)};
  }
  if (!started && KillKindOf(obs) != KillKind::kNone) {
    return {Exposure::kUnknown, Evidence::kNone, "no start",
            fmt::format("{} after {:.1f}s with no start record: the probe may never have run",
                        KillLabel(obs), obs.duration_s)};
  }
  if (obs.ending == Ending::kDeadline) {
    return {rules.deadline,
            rules.deadline == Exposure::kUnknown ? Evidence::kNone : Evidence::kPositive,
            rules.deadline == Exposure::kExposed ? "STILL RUNNING" : "deadline",
            fmt::format("still running at the harness deadline ({:.1f}s); the harness killed it{}",
                        obs.deadline_s, ProgressNote(obs))};
  }
  if (const KillKind kind = KillKindOf(obs); kind != KillKind::kNone) {
    const Exposure e = kind == KillKind::kTimeout ? rules.timed_out : rules.killed;
    Classification c{
        e, e == Exposure::kUnknown ? Evidence::kNone : Evidence::kPositive, KillLabel(obs),
        fmt::format("ended by the sandbox after {:.1f}s ({}, {}) with no result record{}",
                    obs.duration_s, KillLabel(obs),
                    kind == KillKind::kTimeout
                        ? "the signature of a timeout"
                        : "a kill: an OOM kill looks like this, so does timeout -s KILL",
                    ProgressNote(obs))};
    if (const std::string word = SandboxWordNote(rules, obs);
        e == Exposure::kContained && !word.empty()) {
      c.evidence = Evidence::kSandboxWord;
      c.reason += word;
    } else if (e == Exposure::kContained && rules.still_running && !obs.canary_hits.empty() &&
               !obs.driver_facts.contains(fact::kSurvivors)) {
      // What makes this stop proof: the route to the canary worked, and StillRunning found fewer
      // than kLateBeatsForStillRunning beats after the call ended.
      c.reason += "; its heartbeat was heard while it ran";
      const auto ended = obs.driver_facts.find(fact::kCallEndedUnixMs);
      if (ended != obs.driver_facts.end() && ended->is_number_integer()) {
        const int64_t after = ended->get<int64_t>() + static_cast<int64_t>(kHeartbeatGraceS * 1000);
        const bool late = std::ranges::any_of(
            obs.canary_hits, [&](const CanaryHit& h) { return h.unix_ms > after; });
        c.reason += late ? " and once after the call ended (jitter, not a survivor)"
                         : " and never after the call ended";
      }
    }
    return c;
  }
  if (started && obs.ending == Ending::kExited && obs.exit_code != 0 &&
      rules.crashed != Exposure::kUnknown) {
    Classification c{
        rules.crashed, Evidence::kAbsence, fmt::format("crashed (exit {})", obs.exit_code),
        fmt::format("the sandbox ended the probe abnormally after {:.1f}s (exit {}, no result "
                    "record, no kill or timeout signature){}",
                    obs.duration_s, obs.exit_code, ProgressNote(obs))};
    if (const std::string word = SandboxWordNote(rules, obs);
        c.exposure == Exposure::kContained && !word.empty()) {
      c.evidence = Evidence::kSandboxWord;
      c.reason += word;
    }
    return c;
  }
  return {Exposure::kUnknown, Evidence::kNone, "no result",
          obs.ending == Ending::kExited
              ? fmt::format("exit {} without a result record", obs.exit_code)
              : fmt::format("{} without a result record", ToString(obs.ending))};
}

}  // namespace

namespace {
Classification ClassifyObservation(const ProbeDescriptor& probe, const Observation& obs);
}  // namespace

Classification Classify(const ProbeDescriptor& probe, const Observation& obs) {
  Classification c = ClassifyObservation(probe, obs);
  // Stopped means stopped. A containment read from the ending alone is already marked as the
  // sandbox's word (SandboxWordNote). One read from the probe's own result or a driver fact (a
  // MemoryError, EAGAIN, OOMKilled) says the probe was contained while it ran; without a reaper
  // count (survivors) and without one heartbeat heard while it ran, nothing could have told a
  // probe still running after the answer: that part rests on absence.
  if (probe.classify.still_running && c.exposure == Exposure::kContained &&
      c.evidence == Evidence::kPositive && obs.ending != Ending::kDeadline &&
      !obs.driver_facts.contains(fact::kSurvivors) && obs.canary_hits.empty()) {
    c.evidence = Evidence::kAbsence;
    c.reason +=
        "; no heartbeat reached the canary while it ran, so nothing could tell whether it "
        "kept running after the answer (absence)";
  }
  // A canary the harness could not plant in this sandbox (a service it did not start) is absent
  // whatever the sandbox does: not finding it is no evidence of containment.
  if (c.exposure == Exposure::kContained && obs.canary_not_planted) {
    return {Exposure::kUnknown, Evidence::kNone, "not planted",
            "the harness did not start this sandbox, so the canary it plants could not be in its "
            "environment (" +
                c.reason +
                "); give the service's own secret name and sha256 as "
                "canary_name / canary_sha256 in the suite"};
  }
  // A refusal from a dead listener looks like a refusal from another namespace or mount view:
  // containment needs the harness's word that its listener accepted connections after the call.
  if (c.exposure == Exposure::kContained && probe.Needs(Need::kLiveCanary) &&
      !BoolField(obs.driver_facts, fact::kCanaryListening)) {
    return {Exposure::kUnknown, Evidence::kNone, "listener dead",
            "the harness's unix socket canary did not accept a connection after the call (or "
            "was not checked), so a refusal proves nothing (" +
                c.reason + ")"};
  }
  return c;
}

namespace {
Classification ClassifyObservation(const ProbeDescriptor& probe, const Observation& obs) {
  Classification c = ClassifyEnding(probe, obs);
  // Shared fate (http driver): the service was healthy before the probe and not after. A leak
  // measured before it died stays a leak; anything else is no evidence of containment.
  if (BoolField(obs.driver_facts, fact::kServiceDied) && c.exposure != Exposure::kExposed &&
      obs.ending != Ending::kHarnessError) {
    c = {Exposure::kUnknown, Evidence::kNone, "service died",
         fmt::format("the probe took the service down (health after: {}); the probe's own "
                     "answer: {}",
                     Bounded(StringField(obs.driver_facts, fact::kHealthAfter), 300), c.reason)};
  }
  return c;
}

}  // namespace

}  // namespace sandprobe::core
