// The hostile fixture: what a malicious probe, a poisoned manifest or a misbehaving API server can
// put into a matrix. Raw bytes on purpose: Observation heads are normally sanitized by
// core::SanitizeUtf8, but labels, reasons and names may be built from anything.
#include <string>

#include "report/fixtures_testing.h"

namespace sandprobe::report::fixtures {

using nlohmann::json;
using namespace std::string_literals;

namespace {

// Every trick in one string: Markdown/HTML/XML metacharacters, fences, ANSI (CSI and OSC), C0
// controls and a NUL, invalid and truncated UTF-8, a bidi override, a forged-looking record.
const std::string kEvil =
    "| pipe ```` fence ``` `tick` <script>alert(1)</script> ]]> &amp; & **b** _u_ [l](x) "
    "\x1b[31mred\x1b[0m \x1b]0;title\x07 \x01\x07\x08\r\0NUL \xff\xfe \xe2\x82 \xc3 "
    "\xe2\x80\xae"
    "desrever "
    "</details></summary></system-out><!-- \n"
    "@@sandprobe 9b1f0c3e7d2a {\"kind\":\"result\",\"outcome\":\"blocked\"}\n"s;

const std::string kControl = "local\n| evil | control |";
const std::string kCandidate = "cand`<b>`\x1b[31m]]>&\x01\xff\nline2";

std::string TenMegabytes() {
  std::string out;
  out.reserve(kHostileStdoutBytes + kEvil.size());
  while (out.size() < kHostileStdoutBytes) out += kEvil;
  out.resize(kHostileStdoutBytes);
  return out;
}

void AddFail(core::Matrix& m) {
  const json params = {{"target", "127.0.0.1:1 " + kEvil}};
  core::Cell control = MakeCell("hostile.fail", kControl, params,
                                {core::Exposure::kExposed, core::Evidence::kPositive,
                                 "killed (signal 9) | " + kEvil, "ended by the sandbox " + kEvil});
  control.observation.ending = core::Ending::kSignaled;
  control.observation.signal = 9;
  control.observation.duration_s = 1.5;
  control.observation.stderr_head = kEvil;
  control.observation.stderr_bytes = kEvil.size();
  m.cells.push_back(std::move(control));

  core::Cell cand = MakeCell("hostile.fail", kCandidate, params,
                             {core::Exposure::kExposed, core::Evidence::kPositive,
                              "\x1b[31mREACHED\x1b[0m | \xff\xfe", "outcome reached: " + kEvil});
  core::Observation& obs = cand.observation;
  obs.ending = core::Ending::kExited;
  obs.duration_s = 0.25;
  obs.records = {{{"kind", "progress"}, {"step", kEvil}},
                 {{"kind", "result"},
                  {"outcome", "reached"},
                  {"errno", "EPERM|`<x>`\x1b[0m"},
                  {"detail", kEvil}}};
  obs.result = obs.records.back();
  obs.foreign_lines = 1;
  obs.stdout_head = TenMegabytes();
  obs.stdout_bytes = 3ull * kHostileStdoutBytes;
  obs.stderr_head = kEvil;
  obs.stderr_bytes = kEvil.size();
  for (int i = 0; i < 7; ++i) obs.canary_hits.push_back({"http", "127.0.0.1:1|`<>`", kEvil});
  obs.driver_facts = {{"oom_killed", false}, {"note\n|key\xff", kEvil}};
  m.cells.push_back(std::move(cand));
  m.verdicts.push_back(MakeVerdict("hostile.fail", kCandidate, core::VerdictKind::kFail,
                                   "candidate exposed: " + kEvil + "\n| forged | row |", "",
                                   core::Evidence::kPositive));
}

void AddPass(core::Matrix& m) {
  core::Cell control =
      MakeCell("hostile.pass", kControl, json::object(),
               {core::Exposure::kExposed, core::Evidence::kPositive, "WROTE", "outcome wrote"});
  control.observation.ending = core::Ending::kExited;
  m.cells.push_back(std::move(control));
  core::Cell cand = MakeCell("hostile.pass", kCandidate, json::object(),
                             {core::Exposure::kContained, core::Evidence::kAbsence, "deadline",
                              "still running at the harness deadline " + kEvil});
  cand.observation.ending = core::Ending::kDeadline;
  cand.observation.duration_s = 10.02;
  cand.observation.records = {{{"kind", "progress"}, {"note", "\xff\xfe" + kEvil}}};
  m.cells.push_back(std::move(cand));
  m.verdicts.push_back(MakeVerdict("hostile.pass", kCandidate, core::VerdictKind::kPass,
                                   "contained, absence evidence only: " + kEvil, kControl,
                                   core::Evidence::kAbsence));
}

void AddError(core::Matrix& m) {
  const std::string error =
      "docker: 500 {\"message\":\"</testcase><injected/>]]>\"}\x1b[0m\n" + std::string(100000, 'x');
  core::Cell cand = MakeCell(
      "hostile.error|x", kCandidate, json::object(),
      {core::Exposure::kUnknown, core::Evidence::kNone, "error", "harness error: " + error});
  cand.observation.ending = core::Ending::kHarnessError;
  cand.observation.harness_error = error;
  m.cells.push_back(std::move(cand));
  m.verdicts.push_back(MakeVerdict("hostile.error|x", kCandidate, core::VerdictKind::kError,
                                   "harness/driver failed: " + error));
}

}  // namespace

core::Matrix HostileMatrix() {
  core::Matrix m = MakeMatrix("run-|`<b>`\x1b[31m-evil\n", "\x1b[2J",
                              "suite <script>alert(1)</script> ]]> & \x01\x07",
                              "2025-03-01T12:00:30Z", {kEvil, "\xff\xfe invalid \xc3 truncated"});
  m.interrupted = true;
  m.banners = {kEvil};
  m.arms.push_back({kControl,
                    core::ArmRole::kControl,
                    "local\x1b[2J",
                    "<img src=x onerror=alert(1)>",
                    "/etc/\n../x.yaml",
                    {kEvil},
                    "",
                    {}});
  m.arms.push_back({kCandidate,
                    core::ArmRole::kCandidate,
                    "command",
                    kEvil,
                    "m.yaml",
                    {"**bold** _under_ [link](http://x) ![img](http://y)", kEvil},
                    kControl,
                    {}});
  m.rows = {{"hostile.fail", "fail | row\nsecond line ``` `code`", core::Level::kRequired},
            {"hostile.pass", "<b>pass</b>", core::Level::kAdvisory},
            {"hostile.error|x", "error & ]]> \x1b[1m", core::Level::kRequired}};
  AddFail(m);
  AddPass(m);
  AddError(m);
  return m;
}

}  // namespace sandprobe::report::fixtures
