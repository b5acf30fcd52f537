// A suite: an ordered list of probes with parameter overrides and a requirement level.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace sandprobe::core {

// required: a FAIL / INCONCLUSIVE / ERROR changes the exit code; advisory: reported only.
enum class Level { kRequired, kAdvisory };
std::string_view ToString(Level l);  // "required" | "advisory"

struct SuiteEntry {
  std::string probe;  // probe id
  Level level = Level::kRequired;
  nlohmann::json params = nlohmann::json::object();  // overrides; strings may hold {placeholders}
  // Where the entry's id and each parameter key stand in the suite file (1-based line, column;
  // 0 when built in code), for errors that need the probe tree (config::CheckSuiteEntries).
  std::pair<int, int> id_at = {0, 0};
  std::map<std::string, std::pair<int, int>> param_at = {};
};

// An acceptance criterion: a named group of rows, in the words of the ticket that asked for the
// sandbox ("No network egress: no DNS, no HTTP, no sockets" -> net.dns, net.http-by-name, ...).
// It holds for a candidate only when every row in it PASSes (core/criteria.h).
struct Criterion {
  std::string name;                 // the ticket's words, shown as written
  std::vector<std::string> probes;  // probe ids, each one of the suite's entries, in order
};

struct Suite {
  std::string name;
  std::string description;
  std::vector<SuiteEntry> entries;
  std::vector<Criterion> criteria;  // may be empty
  std::string source_path;
};

}  // namespace sandprobe::core
