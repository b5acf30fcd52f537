// Read-only views of a core::Matrix shared by every reporter: column order, which control cell a
// column shows, verdict counts, and the evidence facts of one cell. Nothing here judges: every
// value is looked up in the matrix. Returned strings are raw (untrusted) until a writer escapes
// them.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/matrix.h"

namespace sandprobe::report {

// The matrix's columns, iterated as `const core::ArmInfo*`. Owns what it points at: a control
// shown once per address family is a copy of its ArmInfo with ip_family set. Move-only (the
// pointers stay valid when it moves).
class Columns {
 public:
  explicit Columns(std::vector<core::ArmInfo> arms);
  Columns(Columns&&) = default;
  Columns(const Columns&) = delete;
  Columns& operator=(const Columns&) = delete;
  auto begin() const { return pointers_.begin(); }
  auto end() const { return pointers_.end(); }
  size_t size() const { return pointers_.size(); }

 private:
  std::vector<core::ArmInfo> arms_;
  std::vector<const core::ArmInfo*> pointers_;
};

// Arms in column order: controls first, then candidates, each in the matrix's order. A control
// whose candidates measure different address families (core::ArmInfo::ip_family) is a column
// per family, in the order the candidates bring them ("k8s-open (control)", "k8s-open (IPv6)
// (control)"): each shows the cells it ran for that family's candidates (ShownCell).
Columns ColumnArms(const core::Matrix& m);
// Each arm once, controls first, then candidates, in the matrix's order: for lists of arms (their
// facts, weakenings, evidence), where a control shown per family in the table is one arm.
std::vector<const core::ArmInfo*> ListedArms(const core::Matrix& m);
// Candidate arms in the matrix's order.
std::vector<const core::ArmInfo*> CandidateArms(const core::Matrix& m);

// The cell a column shows for a probe. A candidate has one cell. A control may hold several (one
// per params_key): the one whose params_key equals the observation of this probe of the first
// candidate of the column's address family (arm.ip_family), falling back to the control's first
// cell. nullptr when the arm has no cell.
const core::Cell* ShownCell(const core::Matrix& m, std::string_view probe,
                            const core::ArmInfo& arm);
// Every cell of a probe in an arm, in the matrix's order.
std::vector<const core::Cell*> CellsOf(const core::Matrix& m, std::string_view probe,
                                       std::string_view arm);

// Verdicts of one candidate over the matrix rows, indexed by core::VerdictKind; `missing` counts
// rows without a verdict (e.g. an interrupted run); `accepted` counts accepted FAILs
// (core::VerdictCell::Accepted), which are not in by_kind[kFail]. An expired acceptance is a FAIL.
// `on_sandbox_word` counts the PASSes among by_kind[kPass] that rest only on the sandbox's own
// word (core::VerdictCell::OnSandboxWord): "N PASS (M on the sandbox's word)" in every format.
struct VerdictCounts {
  std::array<size_t, 5> by_kind{};
  size_t missing = 0;
  size_t accepted = 0;
  size_t on_sandbox_word = 0;
  size_t Of(core::VerdictKind k) const { return by_kind[static_cast<size_t>(k)]; }
  size_t Total() const;
};
VerdictCounts CountVerdicts(const core::Matrix& m, std::string_view candidate);
inline constexpr std::array<core::VerdictKind, 5> kVerdictOrder = {
    core::VerdictKind::kPass, core::VerdictKind::kFail, core::VerdictKind::kInconclusive,
    core::VerdictKind::kSkip, core::VerdictKind::kError};

// The verdict a candidate cell shows: "ACCEPTED" for an accepted FAIL, else the kind's name;
// "no verdict" for nullptr. Every format shows this, never the bare FAIL of an accepted row.
std::string ShownVerdictText(const core::VerdictCell* v);

// A PASS on the sandbox's word (core::VerdictCell::OnSandboxWord), in the words every format uses:
// the cell's mark, the summary's "(M on the sandbox's word)" and the list of such rows.
inline constexpr std::string_view kSandboxWord = "on the sandbox's word";
inline constexpr std::string_view kSandboxWordRule =
    "the sandbox said the probe was stopped and nothing the harness measured confirms it (no "
    "heartbeat heard, no survivors count, no driver fact)";
bool OnSandboxWord(const core::VerdictCell* v);
// ", 3 PASS (1 on the sandbox's word)" style: "PASS" alone when none, else "PASS (M on the
// sandbox's word)"; the caller writes the count before it.
std::string PassText(const VerdictCounts& counts);

// The acceptance of a verdict as one line, "" when it has none:
// "accepted until 2027-01-31: <reason> (expectations.yaml:3:5)", or for a past expiry
// "acceptance expired 2026-01-31 (FAIL again): <reason> (...)".
std::string AcceptanceText(const core::VerdictCell& v);

// Repeat trials of a cell (core/trials.h): "flaky: blocked 4/5, REACHED 1/5" when the trials
// disagreed, "" otherwise (a single run or N agreeing trials).
std::string FlakyText(const core::Cell& cell);
// Every cell's trials as one line for its evidence: "5 trials, flaky: blocked 4/5, REACHED 1/5"
// or "5 trials, all blocked"; "" when the invocation ran once.
std::string TrialsText(const core::Cell& cell);

// The acceptance checklist every format opens with: the suite's criteria (core/criteria.h) for
// each candidate, judged by core::JudgeCriteria (a criterion holds only when every row in it
// PASSes), with the rows that broke each one looked up for display. Empty when the suite has no
// criteria. Strings are raw (criterion names come from the suite file: escape them).
struct BrokenRow {
  std::string probe;    // probe id
  std::string label;    // the row's label; the probe id when the matrix has no such row
  std::string verdict;  // "FAIL", "INCONCLUSIVE", "ERROR", "SKIP", or "MISSING" (no verdict)
  std::string reason;   // the verdict's reason, or why there is none
  core::Level level = core::Level::kRequired;
};
struct ChecklistItem {
  const core::Criterion* criterion = nullptr;  // points into the matrix
  bool holds = false;
  std::vector<BrokenRow> broken;  // in the criterion's order; empty when it holds
};
struct CandidateChecklist {
  const core::ArmInfo* candidate = nullptr;
  std::vector<ChecklistItem> items;  // in the suite's order
  size_t holding = 0;                // items that hold
};
std::vector<CandidateChecklist> Checklist(const core::Matrix& m);
// "memory balloon (res.memory-balloon) FAIL", with " (advisory)" for an advisory row.
std::string BrokenRowText(const BrokenRow& row);
inline constexpr std::string_view kChecklistRule =
    "a criterion holds only when every row in it PASSes";

// "0: every required probe PASS or SKIP", ... for core::RunExitCode values.
std::string_view ExitCodeMeaning(int code);

// A field of an untrusted record as text: the string itself, a compact dump for other types, ""
// when absent or when `record` is not an object. Never throws.
std::string FieldText(const nlohmann::json& record, std::string_view key);
// Compact dump of untrusted JSON (invalid UTF-8 replaced). Never throws.
std::string CompactJson(const nlohmann::json& value);

// How the invocation ended, e.g. "exited with code 0 after 0.25 s (deadline 10.00 s)".
std::string EndingText(const core::Observation& obs);

// One line of evidence: a fixed key and an untrusted value (escape it with the format's writer).
struct Fact {
  std::string_view key;
  std::string value;
};
// The evidence of one cell, in a fixed order: for a candidate its verdict, its acceptance (if any)
// and validating control (when `verdict` is given), then trials (when repeated), classification,
// exposure, ending, harness error, result record (outcome, errno, detail), last progress, record
// counts, canary hits, driver facts, parameters, output sizes. Values are raw and may be long;
// writers bound them.
std::vector<Fact> EvidenceFacts(const core::Cell& cell, const core::VerdictCell* verdict);

}  // namespace sandprobe::report
