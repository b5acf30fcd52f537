// A suite: an ordered list of probes with parameter overrides and a requirement level.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sandprobe::core {

// required: a FAIL / INCONCLUSIVE / ERROR changes the exit code; advisory: reported only.
enum class Level { kRequired, kAdvisory };
std::string_view ToString(Level l);  // "required" | "advisory"

struct SuiteEntry {
  std::string probe;  // probe id
  Level level = Level::kRequired;
  nlohmann::json params = nlohmann::json::object();  // overrides; strings may hold {placeholders}
};

struct Suite {
  std::string name;
  std::string description;
  std::vector<SuiteEntry> entries;
  std::string source_path;
};

}  // namespace sandprobe::core
