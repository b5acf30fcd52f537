#include "core/expect.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>

namespace sandprobe::core {
namespace {

bool Digits(std::string_view s, int& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool Matches(const Expectation& e, const VerdictCell& v) {
  return e.probe == v.probe && (e.candidate.empty() || e.candidate == v.candidate);
}

}  // namespace

bool ValidDate(std::string_view date) {
  if (date.size() != 10 || date[4] != '-' || date[7] != '-') return false;
  int y = 0, m = 0, d = 0;
  if (!Digits(date.substr(0, 4), y) || !Digits(date.substr(5, 2), m) ||
      !Digits(date.substr(8, 2), d)) {
    return false;
  }
  return std::chrono::year_month_day(std::chrono::year(y), std::chrono::month(m),
                                     std::chrono::day(d))
      .ok();
}

std::optional<size_t> Accept(VerdictCell& v, std::span<const Expectation> expectations,
                             std::string_view today) {
  if (v.verdict.kind != VerdictKind::kFail) return std::nullopt;
  for (size_t i = 0; i < expectations.size(); ++i) {
    const Expectation& e = expectations[i];
    if (!Matches(e, v)) continue;
    // YYYY-MM-DD strings order as dates.
    v.accepted = Acceptance{e.reason, e.expires, e.expires < today, e.source};
    return i;
  }
  return std::nullopt;
}

std::vector<std::string> ApplyExpectations(Matrix& m, std::span<const Expectation> expectations,
                                           std::string_view today) {
  std::vector<size_t> used(expectations.size(), 0);
  for (VerdictCell& v : m.verdicts) {
    if (const auto i = Accept(v, expectations, today)) ++used[*i];
  }
  std::vector<std::string> warnings;
  for (size_t i = 0; i < expectations.size(); ++i) {
    if (used[i] > 0) continue;
    const Expectation& e = expectations[i];
    std::string seen;
    for (const VerdictCell& v : m.verdicts) {
      if (!Matches(e, v)) continue;
      seen +=
          fmt::format("{}{} {}", seen.empty() ? "" : ", ", v.candidate, ToString(v.verdict.kind));
    }
    warnings.push_back(
        fmt::format("{}: expectation for {}{} matched no FAIL ({}); remove it if the row is fixed",
                    e.source, e.probe, e.candidate.empty() ? "" : " in " + e.candidate,
                    seen.empty() ? "no such row in this run" : seen));
  }
  return warnings;
}

}  // namespace sandprobe::core
