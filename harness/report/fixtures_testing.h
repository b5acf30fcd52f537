// Test code: fixture matrices for the reporter tests and their approved baselines
// (reports/baselines/<name>.{txt,md,json,xml}). Fixed run ids and times, so output is
// deterministic. Test-only: linked into report_test, not into sandprobe_report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/matrix.h"

namespace sandprobe::report::fixtures {

// A normal run: control `local` + candidate `bubblewrap`, one row per verdict kind (PASS, FAIL,
// INCONCLUSIVE on an advisory row, SKIP without observations, ERROR), and a control holding two
// cells (params_keys) for the balloon row, the matching one second.
core::Matrix NormalMatrix();

// A hostile run: every string a sandbox or a manifest can influence carries Markdown, HTML and XML
// metacharacters, ``` runs, "]]>", ANSI escapes, C0 controls, a NUL byte, invalid UTF-8, newlines
// in names, a forged-looking record line and a 10 MB stdout head.
core::Matrix HostileMatrix();

// The normal run with --repeat 5 and --expect: a flaky FAIL (one leak in five) whose control's
// trials disagreed too, trials that agreed, an accepted FAIL and an expired acceptance.
core::Matrix GateMatrix();

// The normal run with acceptance criteria (suite criteria:): one that holds, one broken by a FAIL,
// one by INCONCLUSIVE (advisory), SKIP and ERROR rows, and one with a hostile name broken by a row
// the run never reached (no verdict).
core::Matrix CriteriaMatrix();

// Two run-code services (driver http) and the local control, classified and judged by the real
// core::Classify and core::Judge: PASSes with proof, two PASSes on the sandbox's word (a loop's
// "exit 124" and a kill nothing could confirm) and a FAIL.
core::Matrix WordMatrix();

// Size of the hostile stdout head, bytes.
inline constexpr size_t kHostileStdoutBytes = 10 * 1024 * 1024;

struct Fixture {
  const char* name;  // baseline file stem
  core::Matrix (*make)();
};
inline const std::vector<Fixture>& Fixtures() {
  static const std::vector<Fixture> fixtures = {{"normal", &NormalMatrix},
                                                {"hostile", &HostileMatrix},
                                                {"gate", &GateMatrix},
                                                {"criteria", &CriteriaMatrix},
                                                {"word", &WordMatrix}};
  return fixtures;
}

// Building blocks shared by the fixture files.
// A matrix with its run fields set; every fixture run starts at 2025-03-01T12:00:00Z.
core::Matrix MakeMatrix(std::string run_id, std::string nonce_hash, std::string suite,
                        std::string finished_at, std::vector<std::string> notes);
core::Cell MakeCell(std::string probe, std::string arm, nlohmann::json params,
                    core::Classification classification);
// "@@sandprobe <nonce> <record>\n" for each record: the stdout a probe would print.
std::string RecordLines(const std::vector<nlohmann::json>& records);
core::VerdictCell MakeVerdict(std::string probe, std::string candidate, core::VerdictKind kind,
                              std::string reason, std::string validated_by = "",
                              core::Evidence evidence = core::Evidence::kNone);

}  // namespace sandprobe::report::fixtures
