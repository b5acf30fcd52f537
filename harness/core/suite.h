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

struct Suite {
  std::string name;
  std::string description;
  std::vector<SuiteEntry> entries;
  std::string source_path;
};

}  // namespace sandprobe::core
