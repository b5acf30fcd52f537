#include "config/yaml_util.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/output.h"

namespace sandprobe::config {

std::string ConfigError::ToString() const {
  std::string where = file;
  if (line > 0) where += fmt::format(":{}:{}", line, column);
  return field.empty() ? fmt::format("{}: {}", where, message)
                       : fmt::format("{}: {}: {}", where, field, message);
}

std::string ConfigError::Summary() const {
  if (more.empty()) return ToString();
  return fmt::format("{} (and {} more mistake{} in this file: `sandprobe validate {}` lists each)",
                     ToString(), more.size(), more.size() == 1 ? "" : "s", file);
}

std::vector<ConfigError> ConfigError::All() const {
  std::vector<ConfigError> all{*this};
  all.front().more.clear();
  for (const ConfigError& e : more) {
    for (ConfigError& one : e.All()) all.push_back(std::move(one));
  }
  return all;
}

namespace internal {
namespace {

constexpr uintmax_t kMaxFileBytes = 1 << 20;
constexpr size_t kMaxNodes = 100'000;
constexpr int kMaxDepth = 64;

}  // namespace

ConfigError At(const std::string& file, const YAML::Node& node, const std::string& field,
               const std::string& message) {
  ConfigError e{file, 0, 0, field, message};
  if (node.IsDefined() && !node.Mark().is_null()) {
    e.line = node.Mark().line + 1;
    e.column = node.Mark().column + 1;
  }
  return e;
}

void Errors::Add(const ConfigError& e) {
  for (ConfigError& one : e.All()) {
    if (one.message == kMissing && std::ranges::find(meant_, one.field) != meant_.end()) continue;
    list_.push_back(std::move(one));
  }
}

void Errors::AddTypo(const ConfigError& e, const std::string& meant) {
  meant_.push_back(meant);
  Add(e);
}

bool Errors::Meant(const std::string& field) const {
  return std::ranges::find(meant_, field) != meant_.end();
}

ConfigError Errors::First() const {
  ConfigError first = list_.front();
  first.more.assign(list_.begin() + 1, list_.end());
  return first;
}

std::expected<std::string, ConfigError> ReadFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return std::unexpected(ConfigError{path, 0, 0, "", "is a directory, not a file"});
  }
  // A device or a FIFO has no size to check and may never end (/dev/zero, a named pipe).
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    return std::unexpected(ConfigError{path, 0, 0, "", "is not a regular file"});
  }
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > kMaxFileBytes) {
    return std::unexpected(
        ConfigError{path, 0, 0, "",
                    fmt::format("is {} bytes; manifests, suites and probes are at most {}", size,
                                kMaxFileBytes)});
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(ConfigError{path, 0, 0, "", "cannot open file"});
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Walks the whole document once: duplicate keys (yaml-cpp keeps the first silently), merge keys
// (yaml-cpp 0.7 does not merge), non-scalar keys, nesting
// deeper than kMaxDepth, and alias expansion past kMaxNodes ("billion laughs") are errors.
std::expected<void, ConfigError> CheckTree(const std::string& source, const YAML::Node& node,
                                           int depth, size_t& visited) {
  if (++visited > kMaxNodes) {
    return std::unexpected(At(
        source, node, "", fmt::format("more than {} nodes once aliases are expanded", kMaxNodes)));
  }
  if (depth > kMaxDepth) {
    return std::unexpected(
        At(source, node, "", fmt::format("nested deeper than {} levels", kMaxDepth)));
  }
  // yaml-cpp rejects bad escapes ("\ud800") but passes raw bytes that are not UTF-8 through;
  // they reached a JSON body or the probe's parameters and nlohmann's dump() threw mid-run
  // (std::terminate, nothing cleaned up). Such text is an error at its place.
  auto not_utf8 = [&](const YAML::Node& n) {
    return std::unexpected(At(source, n, "", "not valid UTF-8 text (YAML files are UTF-8)"));
  };
  if (node.IsScalar()) {
    if (core::SanitizeUtf8(node.Scalar()) != node.Scalar()) return not_utf8(node);
  } else if (node.IsSequence()) {
    for (const auto& child : node) {
      if (auto r = CheckTree(source, child, depth + 1, visited); !r) return r;
    }
  } else if (node.IsMap()) {
    std::set<std::string> keys;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) {
        return std::unexpected(At(source, kv.first, "", "a mapping key must be a plain value"));
      }
      if (kv.first.Scalar() == "<<" && kv.first.Tag() == "?") {
        return std::unexpected(
            At(source, kv.first, "<<", "merge keys are not supported; write the keys out"));
      }
      if (core::SanitizeUtf8(kv.first.Scalar()) != kv.first.Scalar()) return not_utf8(kv.first);
      if (!keys.insert(kv.first.Scalar()).second) {
        return std::unexpected(At(source, kv.first, kv.first.Scalar(), "duplicate key"));
      }
      if (auto r = CheckTree(source, kv.second, depth + 1, visited); !r) return r;
    }
  }
  return {};
}

namespace {

// Where each document of a stream starts (its first node's mark), read with yaml-cpp's event
// API without building the documents.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;

  void OnDocumentStart(const YAML::Mark&) override { first_ = true; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { Note(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { Note(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Note(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Note(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Note(m);
  }
  void OnMapEnd() override {}

 private:
  void Note(const YAML::Mark& m) {
    if (first_) starts.push_back(m);
    first_ = false;
  }
  bool first_ = false;
};

ConfigError AtMark(const std::string& source, const YAML::Mark& mark, const std::string& message) {
  return ConfigError{source, mark.is_null() ? 0 : mark.line + 1,
                     mark.is_null() ? 0 : mark.column + 1, "", message};
}

}  // namespace

Loaded<YAML::Node> ReadYaml(const std::string& text, const std::string& source) {
  try {
    // Count the documents first, without YAML::LoadAll: yaml-cpp 0.7 (Debian 12) loops forever
    // there, allocating, on a stray ',' where a document starts (",", "[a]\n, b"): its parser
    // reports an empty document without consuming the comma (yaml-cpp issue 1040; found by the
    // manifest fuzz target, docs/design.md "Fuzzing"). A document that starts where the one
    // before it started made no progress: a syntax error, not another document.
    std::stringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts docs;
    for (size_t n = 0; parser.HandleNextDocument(docs);) {
      if (docs.starts.size() == n) break;  // a document with no node: nothing more to read
      ++n;
      if (n > 1 && docs.starts[n - 1].pos <= docs.starts[n - 2].pos) {
        return std::unexpected(
            AtMark(source, docs.starts[n - 1],
                   "YAML syntax: unexpected character where a value or document should start"));
      }
    }
    if (docs.starts.size() > 1) {
      return std::unexpected(
          AtMark(source, docs.starts[1],
                 fmt::format("holds {} YAML documents; expected one", docs.starts.size())));
    }
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) {
      return std::unexpected(At(source, root, "", "expected a YAML mapping at the top level"));
    }
    size_t visited = 0;
    if (auto r = CheckTree(source, root, 0, visited); !r) return std::unexpected(r.error());
    return root;
  } catch (const YAML::Exception& e) {
    return std::unexpected(ConfigError{source, e.mark.is_null() ? 0 : e.mark.line + 1,
                                       e.mark.is_null() ? 0 : e.mark.column + 1, "",
                                       "YAML syntax: " + e.msg});
  }
}

Loaded<std::string> String(const std::string& file, const YAML::Node& map, const std::string& key,
                           const std::string& path, bool required) {
  const YAML::Node node = map[key];
  const std::string field = path.empty() ? key : path + "." + key;
  if (!node.IsDefined() || node.IsNull()) {
    if (required) return std::unexpected(At(file, map, field, kMissing));
    return std::string();
  }
  if (!node.IsScalar()) return std::unexpected(At(file, node, field, "expected a string"));
  return node.Scalar();
}

size_t EditDistance(const std::string& a_in, const std::string& b_in) {
  auto lower = [](std::string s) {
    std::ranges::transform(s, s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  const std::string a = lower(a_in), b = lower(b_in);
  // Optimal string alignment: insertions, deletions, substitutions and a swap of two neighbours
  // (nmae -> name) each cost one.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string DidYouMean(const std::string& key, const std::vector<std::string>& known) {
  std::string best;
  // One edit for keys of up to 4 letters (Pids is not Binds), else two edits or a third of the
  // key, whichever is more: farther is no typo.
  size_t best_d = (key.size() <= 4 ? 1 : std::max<size_t>(2, key.size() / 3)) + 1;
  for (const std::string& candidate : known) {
    if (candidate == key) continue;
    const size_t d = EditDistance(key, candidate);
    if (d < best_d) {
      best_d = d;
      best = candidate;
    }
  }
  if (best.empty() && key.size() >= 3) {  // a known name that starts with it: Pids -> PidsLimit
    auto lower = [](std::string v) {
      std::ranges::transform(v, v.begin(), [](unsigned char c) { return std::tolower(c); });
      return v;
    };
    for (const std::string& candidate : known) {
      if (lower(candidate).starts_with(lower(key))) return candidate;
    }
  }
  return best;
}

void OnlyKeys(const std::string& file, const YAML::Node& map, const std::string& path,
              const std::vector<std::string>& allowed, Errors& errors,
              const std::vector<std::string>& reported) {
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    if (std::ranges::find(reported, key) != reported.end()) continue;
    if (std::ranges::find(allowed, key) == allowed.end()) {
      // Bytes outside printable ASCII are shown escaped: "Privileged\xe2\x80\x8b" is not
      // Privileged, and the message must not make it look so.
      std::string shown;
      for (unsigned char c : key) {
        shown += (c >= 0x20 && c < 0x7f) ? std::string(1, static_cast<char>(c))
                                         : fmt::format("\\x{:02x}", c);
      }
      const std::string field = path.empty() ? shown : path + "." + shown;
      if (const std::string near = DidYouMean(key, allowed); !near.empty()) {
        errors.AddTypo(
            At(file, kv.first, field, fmt::format("unknown field; did you mean {}?", near)),
            path.empty() ? near : path + "." + near);
        continue;
      }
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
      errors.Add(
          At(file, kv.first, field, fmt::format("unknown field (expected one of: {})", list)));
    }
  }
}

std::expected<void, ConfigError> OnlyKeys(const std::string& file, const YAML::Node& map,
                                          const std::string& path,
                                          const std::vector<std::string>& allowed) {
  Errors errors;
  OnlyKeys(file, map, path, allowed, errors);
  if (!errors.empty()) return errors.Fail();
  return {};
}

std::expected<void, ConfigError> OnlyKeys(const std::string& file, const YAML::Node& map,
                                          const std::string& path,
                                          std::initializer_list<const char*> allowed) {
  return OnlyKeys(file, map, path, std::vector<std::string>(allowed.begin(), allowed.end()));
}

}  // namespace internal
}  // namespace sandprobe::config
