// A streaming scanner for a JSON response too big to keep (the http driver past http.maxBody): it
// reads the document chunk by chunk (split anywhere, even inside an escape), follows object keys
// so it knows the pointer of the value it is in, unescapes the string values at a few pointers
// (stdout, stderr) straight into a sink, and keeps every other member value verbatim when it is
// small (max_value bytes each, max_kept in all), so the small fields (exit code, error) can be read
// after the body ends. Memory stays bounded whatever the size of the body.
//
// Hand-written because nothing packaged streams inside one string: nlohmann's SAX interface
// (json::sax_parse) hands a string value over whole, so a 256 MiB stdout would be held in full;
// the other packaged parsers (RapidJSON, simdjson, yajl) also deliver a string as one piece.
//
// What it follows: object members only (RFC 6901 pointers like /stdout or /result/stdout). An
// array member is kept whole when small (so a pointer through it still reads the kept copy) and
// otherwise only counted; a key longer than max_key is not followed. Strictness: the structure is
// checked (an object at the root, keys, colons, commas, literals, the number grammar, nothing but
// whitespace after it); inside strings it is lenient: an invalid escape or a lone surrogate
// becomes U+FFFD, raw bytes pass through as they are (the output collector sanitises what it
// keeps), so a hostile body can make it stop with an error, never crash it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandprobe::drivers {

struct JsonStreamOptions {
  std::vector<std::string> streams;  // RFC 6901 pointers whose string values go to the sink
  size_t max_value = 64u << 10;      // a kept member value's JSON text, bytes
  size_t max_kept = 1u << 20;        // all kept values (text, paths, overhead) together, bytes
  size_t max_key = 4u << 10;         // a key longer than this is not followed
  size_t max_depth = 512;            // deeper nesting is an error
};

struct JsonStreamResult {
  // Every kept member value at its pointer (parents as objects): read it with json_pointer.
  nlohmann::json kept = nlohmann::json::object();
  std::vector<bool> streamed;         // per stream: a string value was found there and streamed
  std::vector<std::string> not_kept;  // "<pointer> (<why>)" of the first member values not kept
  size_t not_kept_count = 0;          // all of them
  static constexpr size_t kNotKeptListed = 8;
};

class JsonStreamScanner {
 public:
  // sink(i, text): the next UTF-8 piece of the string at streams[i].
  using Sink = std::function<void(size_t stream, std::string_view text)>;
  JsonStreamScanner(JsonStreamOptions options, Sink sink);

  // The next bytes of the body. false once they cannot be a JSON object (error() says why);
  // later calls do nothing.
  bool Feed(std::string_view bytes);
  // The body ended: an error unless it was exactly one whole JSON object.
  std::expected<void, std::string> Finish();

  const JsonStreamResult& result() const { return result_; }
  const std::string& error() const { return error_; }
  uint64_t bytes() const { return bytes_; }

 private:
  enum class State {
    kStart,       // before the root object
    kKeyOrEnd,    // after '{'
    kKey,         // after ',' in an object
    kColon,       // after a key
    kValue,       // after ':' or ',' in an array
    kValueOrEnd,  // after '['
    kAfterValue,  // after a member or an element
    kString,      // inside a string
    kEscape,      // after '\'
    kUnicode,     // inside \uXXXX
    kNumber,      // inside a number
    kLiteral,     // inside true / false / null
    kDone,        // after the root object
    kError,
  };
  enum class StringKind { kPlain, kKey, kStream };
  enum class Num { kSign, kZero, kInt, kDot, kFrac, kE, kESign, kExp };
  struct Frame {
    bool object = true;
    bool tracked = false;  // its path is object members only, each key followed
    uint32_t mask = 0;     // streams whose pointer goes through it
    std::string key;       // the current member's key (unescaped; tracked objects only)
    bool key_ok = true;    // the key is at most max_key
  };

  // One step at data[i]; returns how many bytes it consumed (0: look at data[i] again).
  size_t Step(std::string_view data, size_t i);
  size_t StringStep(std::string_view data, size_t i);
  void StartValue(char c, size_t i);
  void StartString(StringKind kind, bool key);
  void Push(bool object, bool tracked, uint32_t mask);
  void Pop(size_t end);
  void ValueDone(size_t end);
  void EndString(size_t end);
  void Emit(std::string_view text);
  void EmitCodePoint(uint32_t cp);
  void FlushPendingHigh();
  void Flush();
  // Stops at the current byte: "<why> at byte N, found <c>" (or just why).
  void Fail(std::string why, std::optional<char> found = std::nullopt);
  void EndCapture(size_t end);
  // Where to keep the current member's value (parents made objects), or nullptr past max_kept.
  nlohmann::json* Keep(size_t value_bytes);
  void NotKept(std::string_view why, size_t levels);
  std::string Pointer(size_t levels) const;

  JsonStreamOptions options_;
  Sink sink_;
  std::vector<std::vector<std::string>> tokens_;  // per stream, its pointer's reference tokens
  JsonStreamResult result_;
  std::string error_;
  uint64_t bytes_ = 0;
  uint64_t chunk_base_ = 0;  // bytes_ before the current chunk

  State state_ = State::kStart;
  std::vector<Frame> frames_;

  StringKind string_kind_ = StringKind::kPlain;
  bool string_is_key_ = false;
  uint32_t string_mask_ = 0;  // kStream: which streams
  std::string out_;           // kStream: unescaped text not yet sunk
  uint32_t unicode_ = 0;      // kUnicode: the code unit so far
  int hex_digits_ = 0;
  uint32_t pending_high_ = 0;  // a high surrogate waiting for its low half

  Num num_ = Num::kSign;
  std::string_view literal_;  // kLiteral: the word, and how much of it has been read
  size_t literal_at_ = 0;

  // Capture of a member value's JSON text (the raw bytes, across chunks).
  bool capturing_ = false;
  size_t capture_level_ = 0;  // frames_.size() when it began
  size_t capture_mark_ = 0;   // where it resumes in the current chunk
  bool capture_over_ = false;
  std::string capture_;
  std::string_view chunk_;
  size_t kept_bytes_ = 0;
};

}  // namespace sandprobe::drivers
