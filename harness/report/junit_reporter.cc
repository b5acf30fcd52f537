// junit.xml for a CI's test view: one <testsuite> per candidate, one <testcase> per probe.
// Every string passes through XmlText/XmlAttr (escape.h) before pugixml sees it; pugixml then
// escapes & < > " itself. No CDATA, so "]]>" in evidence is plain escaped text.
#include <fmt/format.h>

#include <pugixml.hpp>
#include <sstream>

#include "report/escape.h"
#include "report/reporters.h"
#include "report/text_clean.h"
#include "report/view.h"

namespace sandprobe::report {
namespace {

constexpr size_t kNameBytes = 256;
constexpr size_t kMessageBytes = 1024;  // failure/error/skipped message attribute
constexpr size_t kFactBytes = 512;      // one evidence fact in an element body
constexpr size_t kExcerptBytes = 1024;  // raw stdout/stderr excerpt per stream

struct Totals {
  size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  double time_s = 0;
};

Totals Count(const core::Matrix& m, const core::ArmInfo& arm) {
  const VerdictCounts counts = CountVerdicts(m, arm.name);
  Totals t;
  t.tests = counts.Total();
  t.failures = counts.Of(core::VerdictKind::kFail);
  t.errors = counts.Of(core::VerdictKind::kInconclusive) + counts.Of(core::VerdictKind::kError) +
             counts.missing;
  t.skipped = counts.Of(core::VerdictKind::kSkip) + counts.accepted;
  for (const core::Row& row : m.rows) {
    if (const core::Cell* cell = m.Find(row.probe, arm.name)) {
      t.time_s += cell->observation.duration_s;
    }
  }
  return t;
}

void SetCounts(pugi::xml_node node, const Totals& t) {
  node.append_attribute("tests") = static_cast<unsigned long long>(t.tests);
  node.append_attribute("failures") = static_cast<unsigned long long>(t.failures);
  node.append_attribute("errors") = static_cast<unsigned long long>(t.errors);
  node.append_attribute("skipped") = static_cast<unsigned long long>(t.skipped);
  node.append_attribute("time") = fmt::format("{:.3f}", t.time_s).c_str();
}

void AddProperty(pugi::xml_node props, const char* name, std::string_view value) {
  pugi::xml_node p = props.append_child("property");
  p.append_attribute("name") = name;
  p.append_attribute("value") = XmlAttr(value, kMessageBytes).c_str();
}

// Evidence facts of the candidate cell, one "key: value" line each, plus bounded output excerpts.
std::string EvidenceText(const core::Cell* cell, const core::VerdictCell* v) {
  if (cell == nullptr) return "no observation\n";
  std::string text;
  for (const Fact& fact : EvidenceFacts(*cell, v)) {
    text += fmt::format("{}: {}\n", fact.key, OneLine(XmlText(fact.value, kFactBytes)));
  }
  const core::Observation& obs = cell->observation;
  for (const auto& [name, head] :
       {std::pair{"stdout", &obs.stdout_head}, std::pair{"stderr", &obs.stderr_head}}) {
    if (head->empty()) continue;
    std::string excerpt = XmlText(*head, kExcerptBytes);
    if (excerpt.ends_with('\n')) excerpt.pop_back();
    text += fmt::format("--- {} (first {} bytes at most) ---\n{}\n", name, kExcerptBytes, excerpt);
  }
  return text;
}

void AddTestcase(pugi::xml_node suite, const core::Matrix& m, const core::Row& row,
                 const core::ArmInfo& arm) {
  const core::Cell* cell = m.Find(row.probe, arm.name);
  const core::VerdictCell* v = m.FindVerdict(row.probe, arm.name);
  pugi::xml_node tc = suite.append_child("testcase");
  tc.append_attribute("classname") = ("sandprobe." + XmlAttr(arm.name, kNameBytes)).c_str();
  tc.append_attribute("name") =
      XmlAttr(fmt::format("{} ({})", row.probe, row.label), kNameBytes * 2).c_str();
  tc.append_attribute("time") =
      fmt::format("{:.3f}", cell ? cell->observation.duration_s : 0.0).c_str();
  // Flaky trials and an acceptance lead the message: a CI view shows the message first.
  std::string reason = v ? v->verdict.reason : "no verdict recorded";
  if (const std::string flaky = cell ? FlakyText(*cell) : ""; !flaky.empty()) {
    reason = fmt::format("[{}] {}", flaky, reason);
  }
  if (v != nullptr && v->accepted) reason = fmt::format("[{}] {}", AcceptanceText(*v), reason);
  // A PASS on the sandbox's word passes the gate; the testcase says so in a property a CI view
  // can show, and its output starts with the verdict reason that says why.
  if (OnSandboxWord(v)) {
    pugi::xml_node props = tc.append_child("properties");
    AddProperty(props, "evidence", fmt::format("PASS {}: {}", kSandboxWord, kSandboxWordRule));
  }
  const std::string message = XmlAttr(reason, kMessageBytes);
  const std::string body =
      XmlText(fmt::format("{}\n{}", reason, cell ? cell->classification.reason : "no observation"),
              kMessageBytes * 2);
  pugi::xml_node outcome;
  // An accepted FAIL does not fail the gate: JUnit's nearest is <skipped>, its message says why.
  const bool accepted = v != nullptr && v->Accepted();
  switch (accepted ? core::VerdictKind::kSkip : v ? v->verdict.kind : core::VerdictKind::kError) {
    case core::VerdictKind::kPass:
      break;
    case core::VerdictKind::kFail:
      outcome = tc.append_child("failure");
      break;
    case core::VerdictKind::kSkip:
      outcome = tc.append_child("skipped");
      break;
    case core::VerdictKind::kInconclusive:
    case core::VerdictKind::kError:
      outcome = tc.append_child("error");
      break;
  }
  if (outcome) {
    outcome.append_attribute("message") = message.c_str();
    if (outcome.name() != std::string_view("skipped")) {
      outcome.append_attribute("type") =
          v ? std::string(core::ToString(v->verdict.kind)).c_str() : "MISSING";
      outcome.text().set(body.c_str());
    }
  }
  tc.append_child("system-out").text().set(EvidenceText(cell, v).c_str());
}

// The checklist of one candidate as a <testsuite> of its own, before the rows: one <testcase>
// per criterion, a <failure> naming the rows that broke it.
void AddChecklist(pugi::xml_node suites, const core::Matrix& m, const CandidateChecklist& list) {
  Totals t;
  t.tests = list.items.size();
  t.failures = list.items.size() - list.holding;
  pugi::xml_node suite = suites.append_child("testsuite");
  const std::string candidate = XmlAttr(list.candidate->name, kNameBytes);
  suite.append_attribute("name") = ("acceptance criteria: " + candidate).c_str();
  SetCounts(suite, t);
  suite.append_attribute("timestamp") = XmlAttr(m.started_at, kNameBytes).c_str();
  pugi::xml_node props = suite.append_child("properties");
  AddProperty(props, "candidate", list.candidate->name);
  AddProperty(props, "rule", kChecklistRule);
  for (const ChecklistItem& item : list.items) {
    pugi::xml_node tc = suite.append_child("testcase");
    tc.append_attribute("classname") = ("sandprobe.criteria." + candidate).c_str();
    tc.append_attribute("name") = XmlAttr(item.criterion->name, kMessageBytes).c_str();
    tc.append_attribute("time") = "0.000";
    std::string rows_out;
    for (const std::string& probe : item.criterion->probes) rows_out += probe + "\n";
    tc.append_child("system-out")
        .text()
        .set(XmlText("rows:\n" + rows_out, kMessageBytes * 4).c_str());
    if (item.holds) continue;
    std::string rows, body;
    for (const BrokenRow& row : item.broken) {
      rows += (rows.empty() ? "" : ", ") + BrokenRowText(row);
      body += BrokenRowText(row) + ": " + row.reason + "\n";
    }
    pugi::xml_node failure = tc.insert_child_before("failure", tc.child("system-out"));
    failure.append_attribute("message") = XmlAttr("broken by: " + rows, kMessageBytes).c_str();
    failure.append_attribute("type") = "CRITERION";
    failure.text().set(XmlText(body, kMessageBytes * 4).c_str());
  }
}

}  // namespace

std::string RenderJunit(const core::Matrix& m) {
  pugi::xml_document doc;
  pugi::xml_node decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  pugi::xml_node suites = doc.append_child("testsuites");
  suites.append_attribute("name") = ("sandprobe " + XmlAttr(m.suite, kNameBytes)).c_str();
  Totals all;
  const auto checklist = Checklist(m);
  for (const CandidateChecklist& list : checklist) {
    all.tests += list.items.size();
    all.failures += list.items.size() - list.holding;
  }
  for (const core::ArmInfo* arm : CandidateArms(m)) {
    const Totals t = Count(m, *arm);
    all.tests += t.tests;
    all.failures += t.failures;
    all.errors += t.errors;
    all.skipped += t.skipped;
    all.time_s += t.time_s;
  }
  SetCounts(suites, all);
  for (const CandidateChecklist& list : checklist) AddChecklist(suites, m, list);
  for (const core::ArmInfo* arm : CandidateArms(m)) {
    pugi::xml_node suite = suites.append_child("testsuite");
    suite.append_attribute("name") = XmlAttr(arm->name, kNameBytes).c_str();
    SetCounts(suite, Count(m, *arm));
    suite.append_attribute("timestamp") = XmlAttr(m.started_at, kNameBytes).c_str();
    pugi::xml_node props = suite.append_child("properties");
    AddProperty(props, "run_id", m.run_id);
    AddProperty(props, "suite", m.suite);
    AddProperty(props, "driver", arm->driver);
    AddProperty(props, "control", arm->control);
    for (const std::string& weakens : arm->weakens) AddProperty(props, "weakens", weakens);
    if (m.interrupted) AddProperty(props, "interrupted", "true");
    if (const VerdictCounts counts = CountVerdicts(m, arm->name); counts.on_sandbox_word > 0) {
      AddProperty(props, "pass_on_sandbox_word", std::to_string(counts.on_sandbox_word));
    }
    for (const core::Row& row : m.rows) AddTestcase(suite, m, row, *arm);
  }
  std::ostringstream out;
  doc.save(out, "  ", pugi::format_default, pugi::encoding_utf8);
  return out.str();
}

}  // namespace sandprobe::report
