#include "drivers/docker/engine_schema.h"

#include <algorithm>
#include <charconv>

namespace sandprobe::drivers {

// The generator sorts by path (byte order): lookups are binary searches.
static_assert(std::ranges::is_sorted(kHostConfigFields, {}, &EngineField::path));
static_assert(std::ranges::is_sorted(kContainerConfigFields, {}, &EngineField::path));

const EngineField* FindField(const EngineObject& object, std::string_view path) {
  const auto it = std::ranges::lower_bound(object.fields, path, {}, &EngineField::path);
  return it != object.fields.end() && it->path == path ? &*it : nullptr;
}

const EngineField* FindHostConfigField(std::string_view path) {
  return FindField(kHostConfig, path);
}

std::vector<std::string> HostConfigProperties(std::string_view parent) {
  return Properties(kHostConfig, parent);
}

std::vector<std::string> Properties(const EngineObject& object, std::string_view parent) {
  const std::string prefix = parent.empty() ? "" : std::string(parent) + ".";
  std::vector<std::string> names;
  for (const EngineField& f : object.fields) {
    if (!f.path.starts_with(prefix)) continue;
    const std::string_view rest = f.path.substr(prefix.size());
    if (!rest.empty() && rest != "*" && rest.find_first_of(".[") == std::string_view::npos) {
      names.emplace_back(rest);
    }
  }
  return names;
}

std::optional<std::pair<int, int>> ParseApiVersion(std::string_view version) {
  const size_t dot = version.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  int major = 0, minor = 0;
  const char* end = version.data() + dot;
  if (std::from_chars(version.data(), end, major).ptr != end) return std::nullopt;
  const char* last = version.data() + version.size();
  if (dot + 1 == version.size() || std::from_chars(end + 1, last, minor).ptr != last) {
    return std::nullopt;
  }
  return std::pair{major, minor};
}

bool ApiOlder(std::string_view a, std::string_view b) {
  return ParseApiVersion(a).value_or(std::pair{0, 0}) <
         ParseApiVersion(b).value_or(std::pair{0, 0});
}

bool FieldInApi(const EngineField& field, std::string_view version) {
  return !ApiOlder(version, field.since) &&
         (field.removed.empty() || ApiOlder(version, field.removed));
}

}  // namespace sandprobe::drivers
