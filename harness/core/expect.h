// Expectations (`sandprobe run --expect FILE`): known FAILs accepted with a reason and an expiry
// date. An accepted row is still a FAIL in the matrix, shown as ACCEPTED with its reason and
// expiry in every format, and does not fail the gate; past its expiry it fails the gate again
// and says "expired <date>". Pure: "today" is passed in (the CLI gives the UTC date); table-tested.
// See docs/design.md "Expectations".
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/matrix.h"

namespace sandprobe::core {

// One entry of an expectations file (config::LoadExpectations checks its shape).
struct Expectation {
  std::string probe;      // probe id, exact
  std::string candidate;  // candidate arm name, exact; "" = every candidate
  std::string reason;     // why the FAIL is accepted (shown in every format)
  std::string expires;    // YYYY-MM-DD: the last day it holds (UTC)
  std::string source;     // "file:line:col" of the entry
};

// True for a real calendar date written YYYY-MM-DD.
bool ValidDate(std::string_view date);

// Marks one verdict: when it is a FAIL and an expectation matches it (the first that does), it is
// accepted, expired when `expires` is before `today`. Returns the index of that expectation.
std::optional<size_t> Accept(VerdictCell& v, std::span<const Expectation> expectations,
                             std::string_view today);

// Marks every FAIL verdict an expectation matches (probe and candidate) as accepted, expired when
// `expires` is before `today` (YYYY-MM-DD; the expiry day itself still holds). The first matching
// expectation wins. Returns one warning per expectation that matched no FAIL (naming what it
// matched instead, if anything): a stale expectation is worth removing.
std::vector<std::string> ApplyExpectations(Matrix& m, std::span<const Expectation> expectations,
                                           std::string_view today);

}  // namespace sandprobe::core
