#include "drivers/http/json_stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <optional>

namespace sandprobe::drivers {
namespace {

constexpr size_t kOutFlush = 64u << 10;  // unescaped stream text handed to the sink at a time
constexpr size_t kPointerShown = 200;    // bytes of a pointer in a not-kept note
// What a kept value costs beyond its text (a JSON node and a map entry), so that many tiny
// values cannot make the kept object much bigger than max_kept.
constexpr size_t kKeptOverhead = 32;

bool Space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool Digit(char c) { return c >= '0' && c <= '9'; }

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "/a~1b/c" -> {"a/b", "c"}; "" (the whole document) -> {}.
std::vector<std::string> Tokens(std::string_view pointer) {
  std::vector<std::string> out;
  if (pointer.empty()) return out;
  pointer.remove_prefix(1);
  while (true) {
    const size_t slash = pointer.find('/');
    std::string token;
    const std::string_view raw = pointer.substr(0, slash);
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        token += raw[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        token += raw[i];
      }
    }
    out.push_back(std::move(token));
    if (slash == std::string_view::npos) break;
    pointer.remove_prefix(slash + 1);
  }
  return out;
}

// A byte for an error message: 'x' when printable ASCII, else its hex value.
std::string Shown(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x20 && u < 0x7f ? fmt::format("'{}'", c) : fmt::format("byte 0x{:02x}", u);
}

}  // namespace

JsonStreamScanner::JsonStreamScanner(JsonStreamOptions options, Sink sink)
    : options_(std::move(options)), sink_(std::move(sink)) {
  if (options_.streams.size() > 32) options_.streams.resize(32);
  for (const std::string& p : options_.streams) tokens_.push_back(Tokens(p));
  result_.streamed.assign(options_.streams.size(), false);
}

void JsonStreamScanner::Fail(std::string why, std::optional<char> found) {
  if (state_ == State::kError) return;
  state_ = State::kError;
  error_ =
      found ? fmt::format("{} at byte {}, found {}", why, bytes_, Shown(*found)) : std::move(why);
  capture_.clear();
  out_.clear();
}

bool JsonStreamScanner::Feed(std::string_view data) {
  if (state_ == State::kError) return false;
  chunk_ = data;
  chunk_base_ = bytes_;
  capture_mark_ = 0;
  size_t i = 0;
  while (i < data.size() && state_ != State::kError) {
    bytes_ = chunk_base_ + i;
    i += Step(data, i);
  }
  if (state_ == State::kError) return false;
  bytes_ = chunk_base_ + data.size();
  if (capturing_) EndCapture(data.size());  // the value goes on in the next chunk
  Flush();
  chunk_ = {};
  return true;
}

std::expected<void, std::string> JsonStreamScanner::Finish() {
  if (state_ == State::kError) return std::unexpected(error_);
  Flush();
  if (state_ == State::kDone) return {};
  if (state_ == State::kStart) {
    return std::unexpected(bytes_ == 0 ? "the body is empty" : "the body is only whitespace");
  }
  return std::unexpected(
      fmt::format("the body ended inside the JSON document after {} bytes", bytes_));
}

size_t JsonStreamScanner::Step(std::string_view data, size_t i) {
  const char c = data[i];
  switch (state_) {
    case State::kString:
    case State::kEscape:
    case State::kUnicode:
      return StringStep(data, i);
    case State::kNumber: {
      const bool accepting =
          num_ == Num::kZero || num_ == Num::kInt || num_ == Num::kFrac || num_ == Num::kExp;
      auto next = [&]() -> std::optional<Num> {
        switch (num_) {
          case Num::kSign:
            if (c == '0') return Num::kZero;
            if (Digit(c)) return Num::kInt;
            return std::nullopt;
          case Num::kZero:
            if (c == '.') return Num::kDot;
            if (c == 'e' || c == 'E') return Num::kE;
            return std::nullopt;
          case Num::kInt:
          case Num::kFrac:
          case Num::kExp:
            if (Digit(c)) return num_;
            if (num_ != Num::kExp && (c == 'e' || c == 'E')) return Num::kE;
            if (num_ == Num::kInt && c == '.') return Num::kDot;
            return std::nullopt;
          case Num::kDot:
            return Digit(c) ? std::optional(Num::kFrac) : std::nullopt;
          case Num::kE:
            if (c == '+' || c == '-') return Num::kESign;
            return Digit(c) ? std::optional(Num::kExp) : std::nullopt;
          case Num::kESign:
            return Digit(c) ? std::optional(Num::kExp) : std::nullopt;
        }
        return std::nullopt;
      }();
      if (next) {
        num_ = *next;
        return 1;
      }
      if (!accepting || Digit(c)) {  // "-", "1.", "1e+", or a digit after a leading zero
        Fail("not a JSON number", c);
        return 1;
      }
      ValueDone(i);  // c belongs to what follows the number
      return 0;
    }
    case State::kLiteral:
      if (c != literal_[literal_at_]) {
        Fail(fmt::format("expected '{}'", literal_), c);
        return 1;
      }
      if (++literal_at_ == literal_.size()) ValueDone(i + 1);
      return 1;
    default:
      break;
  }
  if (Space(c)) return 1;
  switch (state_) {
    case State::kStart:
      if (c != '{') {
        Fail("expected '{' to open the JSON object", c);
        return 1;
      }
      StartValue(c, i);
      return 1;
    case State::kKeyOrEnd:
      if (c == '}') {
        Pop(i + 1);
        return 1;
      }
      [[fallthrough]];
    case State::kKey:
      if (c != '"') {
        Fail("expected a string key", c);
        return 1;
      }
      {
        Frame& f = frames_.back();
        const bool tracked = f.tracked && !capturing_;
        if (tracked) {
          f.key.clear();
          f.key_ok = true;
        }
        StartString(tracked ? StringKind::kKey : StringKind::kPlain, /*key=*/true);
      }
      return 1;
    case State::kColon:
      if (c != ':') {
        Fail("expected ':' after a key", c);
        return 1;
      }
      state_ = State::kValue;
      return 1;
    case State::kValueOrEnd:
      if (c == ']') {
        Pop(i + 1);
        return 1;
      }
      [[fallthrough]];
    case State::kValue:
      StartValue(c, i);
      return 1;
    case State::kAfterValue: {
      const bool object = frames_.back().object;
      if (c == ',') {
        state_ = object ? State::kKey : State::kValue;
      } else if (c == (object ? '}' : ']')) {
        Pop(i + 1);
      } else {
        Fail(object ? "expected ',' or '}'" : "expected ',' or ']'", c);
      }
      return 1;
    }
    case State::kDone:
      Fail("more after the JSON object", c);
      return 1;
    default:
      Fail("internal: unexpected state");
      return 1;
  }
}

void JsonStreamScanner::StartValue(char c, size_t i) {
  bool tracked = false;
  uint32_t child_mask = 0;
  uint32_t exact = 0;
  if (frames_.empty()) {  // the root object
    tracked = true;
    for (size_t s = 0; s < tokens_.size(); ++s) {
      if (!tokens_[s].empty()) child_mask |= 1u << s;
    }
  } else if (const Frame& parent = frames_.back(); !capturing_ && parent.object && parent.tracked) {
    if (!parent.key_ok) {
      NotKept(fmt::format("its key is longer than {} bytes", options_.max_key), frames_.size());
    } else {
      const size_t depth = frames_.size() - 1;  // the parent's path has `depth` keys
      for (uint32_t m = parent.mask; m != 0; m &= m - 1) {
        const int s = std::countr_zero(m);
        if (tokens_[s][depth] != parent.key) continue;
        if (tokens_[s].size() == depth + 1) {
          exact |= 1u << s;
        } else {
          child_mask |= 1u << s;
        }
      }
      tracked = true;
    }
  }
  if (tracked && c == '"' && exact != 0) {  // a string to stream
    string_mask_ = exact;
    for (uint32_t m = exact; m != 0; m &= m - 1) result_.streamed[std::countr_zero(m)] = true;
    StartString(StringKind::kStream, /*key=*/false);
    return;
  }
  if (tracked && c == '{') {  // followed member by member
    if (!frames_.empty()) {   // kept as {} so that an empty object reads as one
      if (nlohmann::json* node = Keep(2)) {
        if (!node->is_object()) *node = nlohmann::json::object();
      }
    }
    Push(true, true, child_mask);
    return;
  }
  if (tracked) {  // any other member value: kept verbatim when small
    capturing_ = true;
    capture_over_ = false;
    capture_level_ = frames_.size();
    capture_mark_ = i;
    capture_.clear();
  }
  switch (c) {
    case '{':
    case '[':
      Push(c == '{', false, 0);
      return;
    case '"':
      StartString(StringKind::kPlain, /*key=*/false);
      return;
    case 't':
    case 'f':
    case 'n':
      literal_ = c == 't' ? "true" : c == 'f' ? "false" : "null";
      literal_at_ = 1;
      state_ = State::kLiteral;
      return;
    default:
      if (c == '-' || Digit(c)) {
        num_ = c == '-' ? Num::kSign : c == '0' ? Num::kZero : Num::kInt;
        state_ = State::kNumber;
        return;
      }
      Fail("expected a JSON value", c);
  }
}

void JsonStreamScanner::Push(bool object, bool tracked, uint32_t mask) {
  if (frames_.size() >= options_.max_depth) {
    Fail(fmt::format("nested deeper than {} levels at byte {}", options_.max_depth, bytes_));
    return;
  }
  frames_.push_back(Frame{object, tracked, mask, {}, true});
  state_ = object ? State::kKeyOrEnd : State::kValueOrEnd;
}

void JsonStreamScanner::Pop(size_t end) {
  frames_.pop_back();
  ValueDone(end);
}

void JsonStreamScanner::ValueDone(size_t end) {
  if (capturing_ && frames_.size() == capture_level_) {
    EndCapture(end);
    capturing_ = false;
    if (!capture_over_) {
      nlohmann::json value = nlohmann::json::parse(capture_, nullptr, /*allow_exceptions=*/false);
      if (value.is_discarded()) {
        NotKept("not valid JSON", frames_.size());
      } else if (nlohmann::json* node = Keep(capture_.size())) {
        *node = std::move(value);
      } else {
        NotKept(fmt::format("over the {} bytes kept in all", options_.max_kept), frames_.size());
      }
    }
    capture_.clear();
    if (capture_.capacity() > 2 * kOutFlush) capture_.shrink_to_fit();
  }
  state_ = frames_.empty() ? State::kDone : State::kAfterValue;
}

void JsonStreamScanner::EndCapture(size_t end) {
  if (capture_over_) return;
  const std::string_view part = chunk_.substr(capture_mark_, end - capture_mark_);
  capture_mark_ = end;
  if (capture_.size() + part.size() > options_.max_value) {
    capture_over_ = true;
    capture_.clear();
    capture_.shrink_to_fit();
    NotKept(fmt::format("larger than {} bytes", options_.max_value), capture_level_);
    return;
  }
  capture_.append(part);
}

nlohmann::json* JsonStreamScanner::Keep(size_t value_bytes) {
  size_t cost = value_bytes + kKeptOverhead;
  for (const Frame& f : frames_) cost += f.key.size() + 1;
  if (kept_bytes_ + cost > options_.max_kept) return nullptr;
  kept_bytes_ += cost;
  nlohmann::json* node = &result_.kept;
  for (const Frame& f : frames_) {
    if (!node->is_object()) *node = nlohmann::json::object();  // a duplicate key: the last wins
    node = &(*node)[f.key];
  }
  return node;
}

void JsonStreamScanner::NotKept(std::string_view why, size_t levels) {
  ++result_.not_kept_count;
  if (result_.not_kept.size() >= JsonStreamResult::kNotKeptListed) return;
  result_.not_kept.push_back(fmt::format("{} ({})", Pointer(levels), why));
}

// The pointer of the member value the first `levels` frames lead to (each a followed object).
std::string JsonStreamScanner::Pointer(size_t levels) const {
  std::string out;
  for (size_t l = 0; l < levels && l < frames_.size() && out.size() <= kPointerShown; ++l) {
    out += '/';
    const std::string& key = frames_[l].key;
    for (size_t k = 0; k < key.size() && out.size() <= kPointerShown; ++k) {
      if (key[k] == '~') {
        out += "~0";
      } else if (key[k] == '/') {
        out += "~1";
      } else {
        out += key[k];
      }
    }
  }
  if (out.size() > kPointerShown) {
    out.resize(kPointerShown);
    out += "...";
  }
  return out;
}

void JsonStreamScanner::StartString(StringKind kind, bool key) {
  string_kind_ = kind;
  string_is_key_ = key;
  pending_high_ = 0;
  state_ = State::kString;
}

void JsonStreamScanner::Emit(std::string_view text) {
  if (string_kind_ == StringKind::kStream) {
    if (out_.size() + text.size() < kOutFlush) {
      out_.append(text);
      return;
    }
    Flush();
    if (text.size() < kOutFlush) {
      out_.append(text);
      return;
    }
    for (uint32_t m = string_mask_; m != 0; m &= m - 1) sink_(std::countr_zero(m), text);
  } else if (string_kind_ == StringKind::kKey) {
    Frame& f = frames_.back();
    if (!f.key_ok) return;
    if (f.key.size() + text.size() > options_.max_key) {
      f.key_ok = false;
      f.key.clear();
      f.key.shrink_to_fit();
      return;
    }
    f.key.append(text);
  }
}

void JsonStreamScanner::EmitCodePoint(uint32_t cp) {
  char buf[4];
  size_t n = 0;
  if (cp < 0x80) {
    buf[n++] = static_cast<char>(cp);
  } else if (cp < 0x800) {
    buf[n++] = static_cast<char>(0xC0 | (cp >> 6));
    buf[n++] = static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    buf[n++] = static_cast<char>(0xE0 | (cp >> 12));
    buf[n++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    buf[n++] = static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    buf[n++] = static_cast<char>(0xF0 | (cp >> 18));
    buf[n++] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    buf[n++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    buf[n++] = static_cast<char>(0x80 | (cp & 0x3F));
  }
  Emit(std::string_view(buf, n));
}

void JsonStreamScanner::FlushPendingHigh() {
  if (pending_high_ == 0) return;
  pending_high_ = 0;
  EmitCodePoint(0xFFFD);  // a high surrogate with no low half after it
}

void JsonStreamScanner::Flush() {
  if (out_.empty()) return;
  for (uint32_t m = string_mask_; m != 0; m &= m - 1) sink_(std::countr_zero(m), out_);
  out_.clear();
}

void JsonStreamScanner::EndString(size_t end) {
  FlushPendingHigh();
  if (string_kind_ == StringKind::kStream) {
    Flush();
    string_kind_ = StringKind::kPlain;
    ValueDone(end);
  } else if (string_is_key_) {
    state_ = State::kColon;
  } else {
    ValueDone(end);
  }
}

size_t JsonStreamScanner::StringStep(std::string_view data, size_t i) {
  const char c = data[i];
  if (state_ == State::kString) {
    // The run of plain bytes up to the next quote or backslash, at once.
    size_t j = i;
    while (j < data.size() && data[j] != '"' && data[j] != '\\') ++j;
    if (j > i) {
      FlushPendingHigh();
      if (string_kind_ != StringKind::kPlain) Emit(data.substr(i, j - i));
      return j - i;
    }
    if (c == '"') {
      EndString(i + 1);
      return 1;
    }
    state_ = State::kEscape;
    return 1;
  }
  if (state_ == State::kEscape) {
    state_ = State::kString;
    if (c == 'u') {
      state_ = State::kUnicode;
      unicode_ = 0;
      hex_digits_ = 0;
      return 1;
    }
    FlushPendingHigh();
    switch (c) {
      case '"':
      case '\\':
      case '/':
        Emit(std::string_view(&c, 1));
        break;
      case 'b':
        Emit("\b");
        break;
      case 'f':
        Emit("\f");
        break;
      case 'n':
        Emit("\n");
        break;
      case 'r':
        Emit("\r");
        break;
      case 't':
        Emit("\t");
        break;
      default:
        EmitCodePoint(0xFFFD);  // not a JSON escape: "\x" -> U+FFFD, the x is consumed
    }
    return 1;
  }
  // kUnicode
  const int h = Hex(c);
  if (h < 0) {  // "\u12G": U+FFFD, then G is read as string text (it may be the closing quote)
    FlushPendingHigh();
    EmitCodePoint(0xFFFD);
    state_ = State::kString;
    return 0;
  }
  unicode_ = (unicode_ << 4) | static_cast<uint32_t>(h);
  if (++hex_digits_ < 4) return 1;
  state_ = State::kString;
  const uint32_t u = unicode_;
  if (pending_high_ != 0) {
    if (u >= 0xDC00 && u <= 0xDFFF) {
      const uint32_t cp = 0x10000 + ((pending_high_ - 0xD800) << 10) + (u - 0xDC00);
      pending_high_ = 0;
      EmitCodePoint(cp);
      return 1;
    }
    FlushPendingHigh();
  }
  if (u >= 0xD800 && u <= 0xDBFF) {
    pending_high_ = u;
  } else if (u >= 0xDC00 && u <= 0xDFFF) {
    EmitCodePoint(0xFFFD);  // a low surrogate alone
  } else {
    EmitCodePoint(u);
  }
  return 1;
}

}  // namespace sandprobe::drivers
