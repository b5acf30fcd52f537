// The 2xx body of one http driver call as the transport hands it over (HttpRequest::on_body):
// kept whole up to max_body, to be parsed like any answer; past it, the kept part and every later
// chunk go through a JsonStreamScanner (the strings at the stdout and stderr pointers unescaped
// into the OutputCollector, other small members kept) and the bytes are counted, up to a ceiling.
// Memory: at most max_body (released when streaming starts) plus the scanner's bounded buffers.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <string_view>

#include "core/output.h"
#include "drivers/http/json_stream.h"

namespace sandprobe::drivers {

class BodyReader {
 public:
  // `collector` outlives the reader; stdout_ptr / stderr_ptr: "" = not in the response.
  BodyReader(size_t max_body, uint64_t ceiling, const std::string& stdout_ptr,
             const std::string& stderr_ptr, core::OutputCollector& collector);

  // The next chunk. false stops the transfer: the body is not a JSON object, or the ceiling.
  bool Take(std::string_view chunk);

  uint64_t bytes() const { return bytes_; }  // received and counted (at most the ceiling)
  bool streamed() const { return scanner_ != nullptr; }
  bool ceiling_hit() const { return ceiling_hit_; }
  // The whole body (when not streamed()), moved out.
  std::string TakeBody() { return std::move(body_); }
  // streamed(): the body ended (or was stopped); an error unless it was one whole JSON object.
  std::expected<void, std::string> Finish();
  // streamed(): the members kept and which strings were streamed.
  const JsonStreamResult& result() const { return scanner_->result(); }

 private:
  size_t max_body_;
  uint64_t ceiling_;
  JsonStreamOptions options_;
  core::OutputCollector& collector_;
  std::string body_;
  uint64_t bytes_ = 0;
  bool ceiling_hit_ = false;
  std::unique_ptr<JsonStreamScanner> scanner_;
};

}  // namespace sandprobe::drivers
