#include "drivers/http/body_reader.h"

#include <algorithm>

namespace sandprobe::drivers {

BodyReader::BodyReader(size_t max_body, uint64_t ceiling, const std::string& stdout_ptr,
                       const std::string& stderr_ptr, core::OutputCollector& collector)
    : max_body_(max_body), ceiling_(ceiling), collector_(collector) {
  options_.streams = {stdout_ptr, stderr_ptr};
}

bool BodyReader::Take(std::string_view chunk) {
  if (bytes_ + chunk.size() > ceiling_) {
    chunk = chunk.substr(0, static_cast<size_t>(ceiling_ - std::min(bytes_, ceiling_)));
    ceiling_hit_ = true;
  }
  bytes_ += chunk.size();
  if (scanner_ == nullptr && body_.size() + chunk.size() <= max_body_ && !ceiling_hit_) {
    body_.append(chunk);
    return true;
  }
  if (scanner_ == nullptr) {  // past the cap: stream from here on
    scanner_ =
        std::make_unique<JsonStreamScanner>(options_, [this](size_t stream, std::string_view text) {
          if (stream == 0) {
            collector_.FeedStdout(text);
          } else {
            collector_.FeedStderr(text);
          }
        });
    const bool ok = scanner_->Feed(body_);
    std::string().swap(body_);  // release it
    if (!ok) return false;
  }
  return scanner_->Feed(chunk) && !ceiling_hit_;
}

std::expected<void, std::string> BodyReader::Finish() {
  if (scanner_ == nullptr) return std::unexpected("the body was not streamed");
  return scanner_->Finish();
}

}  // namespace sandprobe::drivers
