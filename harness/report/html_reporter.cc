// report.html: the matrix as one self-contained page. The only markup written directly is this
// file's own; every untrusted string passes through HtmlBody/HtmlAttr (escape.h). The page has no
// script and loads nothing: its Content-Security-Policy (a meta tag) is default-src 'none' and
// allows exactly the one inline <style> below by its sha256. Tags are always closed and void
// elements self-closed, so the page also parses as XML (tap_html_test.cc relies on it).
#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "report/escape.h"
#include "report/reporters.h"
#include "report/view.h"

namespace sandprobe::report {
namespace {

constexpr size_t kNameBytes = 256;
constexpr size_t kCellBytes = 120;
constexpr size_t kFactBytes = 1024;
constexpr size_t kExcerptBytes = 2048;

// Verdict colours: FAIL red, PASS green, INCONCLUSIVE/ERROR/no verdict amber, SKIP grey, controls
// neutral blue-grey; a PASS on the sandbox's word paler green with a dashed border. The e2e test
// looks for these backgrounds in the screenshot.
constexpr std::string_view kCss =
    "body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#1f2328;background:#fff}"
    "h1{font-size:20px;margin:0 0 8px}"
    ".banner{background:#cf222e;color:#fff;font-weight:bold;padding:8px 12px;margin:8px 0;"
    "border-radius:4px}"
    ".summary{font-size:15px;margin:8px 0}.meta{color:#59636e}"
    "table.matrix{border-collapse:collapse;margin:12px 0}"
    ".matrix th,.matrix td{border:1px solid #d1d9e0;padding:4px 8px;vertical-align:top;"
    "text-align:left}"
    ".matrix thead th{background:#f6f8fa}.matrix small{color:#59636e;font-weight:normal}"
    "td.v-pass{background:#c8f0d0}td.v-fail{background:#ffc1bd}"
    "td.v-inconclusive,td.v-error,td.v-none{background:#fde68a}"
    "td.v-skip{background:#e6e8eb;color:#59636e}td.control{background:#eef3fb}"
    "td.v-pass.word{background:#e6f4d7;border-style:dashed}small.word{color:#9a6700}"
    ".verdict{font-weight:bold}"
    "summary{cursor:pointer;white-space:nowrap}"
    ".evidence{max-width:70ch;font-size:12px;background:#fff;border:1px solid #d1d9e0;"
    "padding:6px;margin-top:4px}"
    ".evidence dt{font-weight:bold}.evidence dd{margin:0 0 4px 12px;overflow-wrap:anywhere}"
    "pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;padding:4px;margin:4px 0}";

std::string Sha256Base64(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  std::string b64(4 * ((len + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()), digest, len);
  b64.resize(n);
  return b64;
}

std::string VerdictClass(const core::VerdictCell* v) {
  if (v == nullptr) return "v-none";
  std::string name(core::ToString(v->verdict.kind));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "v-" + name;
}

void WriteFacts(std::string& out, const core::Cell& cell, const core::VerdictCell* v) {
  out += "<dl>";
  for (const Fact& fact : EvidenceFacts(cell, v)) {
    out += fmt::format("<dt>{}</dt><dd>{}</dd>", HtmlBody(fact.key, kNameBytes),
                       HtmlBody(fact.value, kFactBytes));
  }
  out += "</dl>";
  const core::Observation& obs = cell.observation;
  // Raw stdout repeats the records above when a result came back and nothing was odd (as in
  // matrix.md); it is shown where it is the evidence. report.json has every excerpt.
  const bool stdout_is_evidence = !obs.result || obs.foreign_lines > 0 || obs.dropped_records > 0;
  for (const auto& [stream, head, bytes] :
       {std::tuple{"stdout", &obs.stdout_head, obs.stdout_bytes},
        std::tuple{"stderr", &obs.stderr_head, obs.stderr_bytes}}) {
    if (head->empty() || (head == &obs.stdout_head && !stdout_is_evidence)) continue;
    out += fmt::format("<p>{} ({} bytes; at most the first {} shown, cleaned):</p><pre>{}</pre>",
                       stream, bytes, kExcerptBytes, HtmlBody(*head, kExcerptBytes));
  }
}

// ` data-family="IPv6"` for a column of one address family: with data-arm and data-probe it
// names a cell once (a control is a column per family, view.h ColumnArms).
std::string FamilyAttr(const core::ArmInfo& arm) {
  return arm.ip_family.empty() ? ""
                               : fmt::format(" data-family=\"{}\"", HtmlAttr(arm.ip_family, 8));
}

void WriteCell(std::string& out, const core::Matrix& m, const core::Row& row,
               const core::ArmInfo& arm) {
  const bool candidate = arm.role == core::ArmRole::kCandidate;
  const core::VerdictCell* v = candidate ? m.FindVerdict(row.probe, arm.name) : nullptr;
  const core::Cell* shown = ShownCell(m, row.probe, arm);
  const bool word = OnSandboxWord(v);
  out +=
      fmt::format("<td class=\"cell {}{}\" data-probe=\"{}\" data-arm=\"{}\"{}",
                  candidate ? VerdictClass(v) : "control", word ? " word" : "",
                  HtmlAttr(row.probe, kNameBytes), HtmlAttr(arm.name, kNameBytes), FamilyAttr(arm));
  if (candidate) {
    out += fmt::format(" data-verdict=\"{}\"", v ? core::ToString(v->verdict.kind) : "none");
  }
  if (word) out += fmt::format(" data-evidence=\"{}\"", core::ToString(v->verdict.evidence));
  out += "><details><summary><span class=\"label\">";
  out += shown ? HtmlBody(shown->classification.label, kCellBytes) : "—";
  out += "</span>";
  if (candidate) {
    out += fmt::format(" <span class=\"verdict\">{}</span>",
                       HtmlBody(ShownVerdictText(v), kCellBytes));
    if (word) out += " <small class=\"word\">" + HtmlBody(kSandboxWord, kCellBytes) + "</small>";
    if (const core::Cell* cell = m.Find(row.probe, arm.name)) {
      if (const std::string flaky = FlakyText(*cell); !flaky.empty()) {
        out += " <small class=\"flaky\">" + HtmlBody(flaky, kCellBytes) + "</small>";
      }
    }
  }
  out += "</summary><div class=\"evidence\">";
  const auto cells = CellsOf(m, row.probe, arm.name);
  if (cells.empty()) {
    if (v != nullptr) {
      out += "<p>verdict reason: " + HtmlBody(v->verdict.reason, kFactBytes) + "</p>";
    }
    out += "<p>no observation</p>";
  }
  if (v != nullptr && v->accepted) {
    out += "<p>" + HtmlBody(AcceptanceText(*v), kFactBytes) + "</p>";
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    if (cells.size() > 1) {
      out += fmt::format("<p>cell {} of {}{}</p>", i + 1, cells.size(),
                         cells[i] == shown ? " (shown in the matrix)" : "");
    }
    WriteFacts(out, *cells[i], v);
  }
  out += "</div></details></td>";
}

// The acceptance checklist (suite criteria:), under the banners.
void WriteChecklist(std::string& out, const core::Matrix& m) {
  const auto checklist = Checklist(m);
  if (checklist.empty()) return;
  out += "<section class=\"criteria\"><h2>Acceptance criteria</h2><p class=\"meta\">";
  out += HtmlBody(kChecklistRule, kFactBytes) + "</p>\n";
  for (const CandidateChecklist& list : checklist) {
    out += fmt::format("<p><b>{}</b>: {} of {} criteria hold</p><ul>\n",
                       HtmlBody(list.candidate->name, kCellBytes), list.holding, list.items.size());
    for (const ChecklistItem& item : list.items) {
      out += fmt::format("<li data-criterion=\"{}\" data-holds=\"{}\">{} {}",
                         HtmlAttr(item.criterion->name, kNameBytes), item.holds ? "true" : "false",
                         item.holds ? "&#x2705;" : "&#x274C;",
                         HtmlBody(item.criterion->name, kFactBytes));
      for (size_t i = 0; i < item.broken.size(); ++i) {
        out += (i == 0 ? " &#x2014; broken by: " : ", ") +
               HtmlBody(BrokenRowText(item.broken[i]), kCellBytes);
      }
      out += "</li>\n";
    }
    out += "</ul>\n";
  }
  out += "</section>\n";
}

void WriteSummary(std::string& out, const core::Matrix& m) {
  out += "<p class=\"summary\"><b>Summary:</b> ";
  bool first = true;
  for (const core::ArmInfo* arm : CandidateArms(m)) {
    out += first ? "" : "; ";
    first = false;
    out += "<b>" + HtmlBody(arm->name, kCellBytes) + "</b>:";
    const VerdictCounts counts = CountVerdicts(m, arm->name);
    for (const core::VerdictKind k : kVerdictOrder) {
      out += fmt::format("{} {} {}", k == kVerdictOrder.front() ? "" : ",", counts.Of(k),
                         k == core::VerdictKind::kPass ? HtmlBody(PassText(counts), kCellBytes)
                                                       : core::ToString(k));
    }
    if (counts.accepted > 0) out += fmt::format(", {} ACCEPTED", counts.accepted);
    if (counts.missing > 0) out += fmt::format(", {} without verdict", counts.missing);
  }
  const int code = core::RunExitCode(m);
  out += fmt::format(" · exit code <b class=\"exit\">{}</b> ({})</p>\n", code,
                     HtmlBody(ExitCodeMeaning(code), kFactBytes));
  // Every PASS that rests only on the sandbox's word, so none passes for proof.
  bool heading = false;
  for (const core::Row& row : m.rows) {
    for (const core::ArmInfo* arm : CandidateArms(m)) {
      const core::VerdictCell* v = m.FindVerdict(row.probe, arm->name);
      if (!OnSandboxWord(v)) continue;
      if (!heading) {
        out += "<section class=\"word\"><h2>PASS " + HtmlBody(kSandboxWord, kCellBytes) +
               "</h2><p class=\"meta\">" + HtmlBody(kSandboxWordRule, kFactBytes) + "</p><ul>\n";
      }
      heading = true;
      out += fmt::format("<li data-probe=\"{}\" data-arm=\"{}\">{} ({}) in <b>{}</b>: {}</li>\n",
                         HtmlAttr(row.probe, kNameBytes), HtmlAttr(arm->name, kNameBytes),
                         HtmlBody(row.label, kCellBytes), HtmlBody(row.probe, kCellBytes),
                         HtmlBody(arm->name, kCellBytes), HtmlBody(v->verdict.reason, kFactBytes));
    }
  }
  if (heading) out += "</ul></section>\n";
}

void WriteTable(std::string& out, const core::Matrix& m) {
  const auto arms = ColumnArms(m);
  out += "<table class=\"matrix\">\n<thead><tr><th>probe</th>";
  for (const core::ArmInfo* arm : arms) {
    const bool control = arm->role == core::ArmRole::kControl;
    out += fmt::format("<th class=\"arm\" data-arm=\"{}\"{}>{}{}</th>",
                       HtmlAttr(arm->name, kNameBytes), FamilyAttr(*arm),
                       HtmlBody(core::ArmTitle(*arm), kCellBytes),
                       control ? " <small>(control)</small>" : "");
  }
  out += "</tr></thead>\n<tbody>\n";
  for (const core::Row& row : m.rows) {
    out += fmt::format("<tr data-probe=\"{}\"><th scope=\"row\">{} <small>{}{}</small></th>",
                       HtmlAttr(row.probe, kNameBytes), HtmlBody(row.label, kCellBytes),
                       HtmlBody(row.probe, kCellBytes),
                       row.level == core::Level::kAdvisory ? " · advisory" : "");
    for (const core::ArmInfo* arm : arms) WriteCell(out, m, row, *arm);
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n";
}

void WriteRunFacts(std::string& out, const core::Matrix& m) {
  out += "<h2>Arms</h2>\n<ul>\n";
  for (const core::ArmInfo* arm : ListedArms(m)) {
    out += "<li><b>" + HtmlBody(arm->name, kCellBytes) + "</b>: ";
    out +=
        fmt::format("{}, driver {}", core::ToString(arm->role), HtmlBody(arm->driver, kCellBytes));
    if (!arm->control.empty()) out += ", control " + HtmlBody(arm->control, kCellBytes);
    if (!arm->description.empty()) out += " — " + HtmlBody(arm->description, kFactBytes);
    if (const std::string claims = core::DescribeLimits(arm->limits); !claims.empty()) {
      out += " — claims: " + HtmlBody(claims, kFactBytes);
    }
    if (!arm->source_path.empty()) out += " (" + HtmlBody(arm->source_path, kCellBytes) + ")";
    out += "</li>\n";
  }
  out += "</ul>\n";
  bool heading = false;
  for (const core::ArmInfo* arm : ListedArms(m)) {
    for (const std::string& weakens : arm->weakens) {
      if (!heading) out += "<h2>Weakened isolation (declared by the manifests)</h2>\n<ul>\n";
      heading = true;
      out += "<li><b>" + HtmlBody(arm->name, kCellBytes) +
             "</b>: " + HtmlBody(weakens, kFactBytes) + "</li>\n";
    }
  }
  if (heading) out += "</ul>\n";
  if (!m.notes.empty()) out += "<h2>Notes</h2>\n<ul>\n";
  for (const std::string& note : m.notes) out += "<li>" + HtmlBody(note, kFactBytes) + "</li>\n";
  if (!m.notes.empty()) out += "</ul>\n";
}

// Phase colours of the cost chart, in the order phases first appear (then again from the top).
constexpr std::string_view kPhaseColours[] = {"#0969da", "#1a7f37", "#bf8700", "#8250df",
                                              "#cf222e", "#1b7c83", "#bc4c00", "#57606a"};

// "Where the time went" (a run's report only: Matrix::cost): the run's cost in one line, then an
// inline SVG chart, one bar per arm stacking the mean seconds of each driver phase (the runner's
// queued/invoke left out: they hold the rest). Presentation attributes only, so the page's style
// hash and its CSP stay as they are; every name passes through HtmlBody/HtmlAttr.
void WriteCost(std::string& out, const core::Matrix& m) {
  if (!m.cost) return;
  const core::RunCost& c = *m.cost;
  // Names are indexed once (a re-read report may hold many); past kMaxPhases distinct phases
  // the rest are drawn as one "other"; a duration that is not finite is left out.
  constexpr size_t kMaxPhases = 12;
  double probe_cpu = 0;
  size_t measured = 0;
  bool lower_bound = false;  // a figure counted only what wait4 reaped
  std::vector<std::string> arms, phases;
  std::map<std::string, size_t> arm_index, phase_index;
  std::map<std::pair<size_t, size_t>, std::pair<double, int>> sums;  // (arm, phase) -> sum, n
  for (const core::Cell& cell : m.cells) {
    const core::Observation& o = cell.observation;
    if (o.probe_cpu && std::isfinite(o.probe_cpu->seconds)) {
      probe_cpu += o.probe_cpu->seconds;
      ++measured;
      lower_bound = lower_bound || o.probe_cpu->LowerBound();
    }
    const auto [arm_at, new_arm] = arm_index.try_emplace(o.arm, arms.size());
    if (new_arm) arms.push_back(o.arm);
    for (const core::Phase& p : o.timeline) {
      if (p.name == "queued" || p.name == "invoke") continue;
      const double seconds = p.end_s - p.start_s;
      if (!std::isfinite(seconds)) continue;
      const std::string& name = phases.size() < kMaxPhases || phase_index.contains(p.name)
                                    ? p.name
                                    : std::string("other");
      const auto [phase_at, new_phase] = phase_index.try_emplace(name, phases.size());
      if (new_phase) phases.push_back(name);
      auto& [sum, count] = sums[{arm_at->second, phase_at->second}];
      sum += std::max(0.0, seconds);
      ++count;
    }
  }
  const double floor = c.cpus > 0 ? c.machine_cpu_s / c.cpus : 0;
  out += "<h2>Where the time went</h2>\n";
  out += fmt::format(
      "<p class=\"meta\">wall {:.1f} s · machine CPU {:.1f} s on {} CPUs (floor {:.1f} s) · the "
      "probes' own CPU {}{:.1f} s ({} of {} invocations measured) · sandprobe {:.2f} s</p>\n",
      c.wall_s, c.machine_cpu_s, c.cpus, floor, lower_bound ? "at least " : "", probe_cpu, measured,
      m.cells.size(), c.harness_cpu_s);
  std::vector<double> totals(arms.size(), 0.0);
  for (const auto& [key, sc] : sums) totals[key.first] += sc.first / sc.second;
  const double widest = totals.empty() ? 0 : std::ranges::max(totals);
  if (phases.empty() || !(widest > 0) || !std::isfinite(widest)) return;
  constexpr int kLabel = 170, kBar = 480, kRow = 22;
  const int height = kRow * static_cast<int>(arms.size() + 1 + (phases.size() + 3) / 4) + 8;
  out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 "
      "{0} {1}\" role=\"img\" aria-label=\"mean seconds per driver phase, by arm\">\n",
      kLabel + kBar + 60, height);
  auto colour = [](size_t phase) { return kPhaseColours[phase % std::size(kPhaseColours)]; };
  int y = 4;
  for (size_t a = 0; a < arms.size(); ++a) {
    out += fmt::format("<g data-arm=\"{}\"><text x=\"0\" y=\"{}\" font-size=\"12\">{}</text>",
                       HtmlAttr(arms[a], kNameBytes), y + 14, HtmlBody(arms[a], 28));
    double x = kLabel, total = 0;
    for (size_t ph = 0; ph < phases.size(); ++ph) {
      const auto it = sums.find({a, ph});
      if (it == sums.end()) continue;
      const double mean = it->second.first / it->second.second;
      const double w = mean / widest * kBar;
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"16\" fill=\"{}\" "
          "data-phase=\"{}\"><title>{}: {:.3f} s mean over {}</title></rect>",
          x, y, w, colour(ph), HtmlAttr(phases[ph], kNameBytes), HtmlBody(phases[ph], kNameBytes),
          mean, it->second.second);
      x += w;
      total += mean;
    }
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\">{:.2f} s</text></g>\n", x + 4,
                       y + 13, total);
    y += kRow;
  }
  y += 6;
  for (size_t i = 0; i < phases.size(); ++i) {
    const int lx = kLabel + static_cast<int>(i % 4) * 130;
    const int ly = y + static_cast<int>(i / 4) * kRow;
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\" /><text x=\"{}\" "
        "y=\"{}\" font-size=\"11\">{}</text>\n",
        lx, ly, colour(i), lx + 14, ly + 9, HtmlBody(phases[i], 24));
  }
  out += "</svg>\n";
}

}  // namespace

std::string RenderHtml(const core::Matrix& m) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n";
  out += fmt::format(
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'sha256-{}'; base-uri 'none'; form-action 'none'\" />\n",
      Sha256Base64(kCss));
  out += "<meta name=\"generator\" content=\"sandprobe\" />\n";
  out += "<title>sandprobe run " + HtmlBody(m.run_id, kNameBytes) + "</title>\n";
  out += fmt::format("<style>{}</style>\n</head>\n<body>\n", kCss);
  out += "<h1>sandprobe run " + HtmlBody(m.run_id, kNameBytes) + "</h1>\n";
  for (const std::string& banner : m.banners) {
    out += "<div class=\"banner\" role=\"alert\">" + HtmlBody(banner, kFactBytes) + "</div>\n";
  }
  if (m.interrupted) {
    out +=
        "<div class=\"banner\" role=\"alert\">interrupted: the run stopped before every probe "
        "ended</div>\n";
  }
  WriteChecklist(out, m);
  WriteSummary(out, m);
  out += fmt::format("<p class=\"meta\">suite {} · started {} · finished {}</p>\n",
                     HtmlBody(m.suite, kCellBytes), HtmlBody(m.started_at, kCellBytes),
                     HtmlBody(m.finished_at, kCellBytes));
  WriteTable(out, m);
  WriteRunFacts(out, m);
  WriteCost(out, m);
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace sandprobe::report
