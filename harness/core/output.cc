#include "core/output.h"

#include "core/json_field.h"

namespace sandprobe::core {

std::optional<nlohmann::json> ParseRecordLine(std::string_view line, std::string_view nonce) {
  if (!line.starts_with(kRecordMarker)) return std::nullopt;
  line.remove_prefix(kRecordMarker.size());
  if (!line.starts_with(' ')) return std::nullopt;
  line.remove_prefix(1);
  if (nonce.empty() || !line.starts_with(nonce)) return std::nullopt;
  line.remove_prefix(nonce.size());
  if (!line.starts_with(' ')) return std::nullopt;
  line.remove_prefix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // nlohmann's parser validates UTF-8; allow_exceptions=false yields a discarded value.
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto kind = j.find("kind");
  if (kind == j.end() || !kind->is_string()) return std::nullopt;
  return j;
}

std::string SanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (ok && len > 1) {  // reject overlong forms, surrogates and code points past U+10FFFF
      uint32_t cp = c & (0xFF >> (len + 1));
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
      static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

OutputCollector::OutputCollector(std::string nonce, OutputBounds bounds)
    : nonce_(std::move(nonce)), bounds_(bounds) {}

void OutputCollector::FeedStdout(std::string_view bytes) {
  stdout_bytes_ += bytes.size();
  if (stdout_raw_.size() < bounds_.head_bytes) {
    stdout_raw_.append(bytes.substr(0, bounds_.head_bytes - stdout_raw_.size()));
  }
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const std::string_view part = bytes.substr(0, nl);
    if (!line_overflow_) {
      if (line_.size() + part.size() > bounds_.max_line) {
        line_overflow_ = true;
        line_.clear();
      } else {
        line_.append(part);
      }
    }
    if (nl == std::string_view::npos) break;
    if (!line_overflow_) TakeLine(line_);
    line_.clear();
    line_overflow_ = false;
    bytes.remove_prefix(nl + 1);
  }
}

void OutputCollector::FeedStderr(std::string_view bytes) {
  stderr_bytes_ += bytes.size();
  if (stderr_raw_.size() < bounds_.head_bytes) {
    stderr_raw_.append(bytes.substr(0, bounds_.head_bytes - stderr_raw_.size()));
  }
}

void OutputCollector::TakeLine(std::string_view line) {
  if (!line.starts_with(kRecordMarker)) return;
  auto record = ParseRecordLine(line, nonce_);
  if (!record) {
    ++foreign_;
    return;
  }
  const bool is_result = StringField(*record, "kind") == "result";
  if (is_result && !result_) result_ = *record;
  if (records_.size() < bounds_.max_records) {
    records_.push_back(std::move(*record));
  } else {
    ++dropped_;
  }
}

void OutputCollector::Finish(Observation& obs) {
  if (!line_.empty() && !line_overflow_) TakeLine(line_);
  line_.clear();
  obs.records = std::move(records_);
  obs.result = std::move(result_);
  obs.dropped_records = dropped_;
  obs.foreign_lines = foreign_;
  obs.stdout_head = SanitizeUtf8(stdout_raw_);
  obs.stderr_head = SanitizeUtf8(stderr_raw_);
  obs.stdout_bytes = stdout_bytes_;
  obs.stderr_bytes = stderr_bytes_;
}

}  // namespace sandprobe::core
