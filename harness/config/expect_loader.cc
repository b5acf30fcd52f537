// Expectations YAML -> core::Expectation list (docs/design.md "Expectations"). Every key is
// checked (OnlyKeys); errors are file:line:col with the field.
#include <fmt/format.h>

#include "config/config.h"
#include "config/yaml_util.h"
#include "core/expect.h"

namespace sandprobe::config {

using internal::At;

// Each entry and each of its fields on its own: every mistake of the file is in the error.
Loaded<std::vector<core::Expectation>> ParseExpectations(const std::string& text,
                                                         const std::string& source) {
  auto root = internal::ReadYaml(text, source);
  if (!root) return std::unexpected(root.error());
  const YAML::Node& y = *root;
  if (!y.IsMap())
    return std::unexpected(At(source, y, "", "expected a mapping with expectations:"));
  internal::Errors errors;
  internal::OnlyKeys(source, y, "", {"description", "expectations"}, errors);
  errors.Check(internal::String(source, y, "description", "", false));
  const YAML::Node list = y["expectations"];
  if (!list.IsDefined() || !list.IsSequence()) {
    if (!(!list.IsDefined() && errors.Meant("expectations"))) {
      errors.Add(At(source, list.IsDefined() ? list : y, "expectations",
                    "expected a list of expectations (probe, candidate, reason, expires)"));
    }
    return errors.Fail();
  }
  std::vector<core::Expectation> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    const std::string path = fmt::format("expectations[{}]", i);
    if (!e.IsMap()) {
      errors.Add(At(source, e, path, "expected a mapping"));
      continue;
    }
    const size_t before = errors.size();
    internal::OnlyKeys(source, e, path, {"probe", "candidate", "reason", "expires"}, errors);
    core::Expectation x;
    x.source = fmt::format("{}:{}:{}", source, e.Mark().line + 1, e.Mark().column + 1);
    for (auto [key, field, required] :
         {std::tuple{"probe", &x.probe, true}, std::tuple{"candidate", &x.candidate, false},
          std::tuple{"reason", &x.reason, true}, std::tuple{"expires", &x.expires, true}}) {
      auto v = internal::String(source, e, key, path, required);
      if (!errors.Check(v)) continue;
      if (required && v->empty()) {
        errors.Add(At(source, e[key], path + "." + key, "must not be empty"));
        continue;
      }
      *field = std::move(*v);
    }
    if (!x.expires.empty() && !core::ValidDate(x.expires)) {
      errors.Add(At(source, e["expires"], path + ".expires",
                    "expected a date YYYY-MM-DD (the last day the acceptance holds, UTC)"));
    }
    if (errors.size() > before) continue;
    for (const core::Expectation& earlier : out) {
      if (earlier.probe == x.probe && earlier.candidate == x.candidate) {
        errors.Add(
            At(source, e, path,
               fmt::format("{}{} is already accepted at {}", x.probe,
                           x.candidate.empty() ? "" : " in " + x.candidate, earlier.source)));
        break;
      }
    }
    if (errors.size() == before) out.push_back(std::move(x));
  }
  if (!errors.empty()) return errors.Fail();
  return out;
}

Loaded<std::vector<core::Expectation>> LoadExpectations(const std::filesystem::path& file) {
  auto text = internal::ReadFile(file.string());
  if (!text) return std::unexpected(text.error());
  return ParseExpectations(*text, file.string());
}

}  // namespace sandprobe::config
