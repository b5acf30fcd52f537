#include "drivers/docker/log_stream.h"

#include <algorithm>

namespace sandprobe::drivers {

LogDemuxer::LogDemuxer(std::function<void(int, std::string_view)> on_frame)
    : on_frame_(std::move(on_frame)) {}

void LogDemuxer::Feed(std::string_view bytes) {
  while (!bytes.empty()) {
    if (remaining_ == 0) {
      const size_t take = std::min(bytes.size(), 8 - header_.size());
      header_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (header_.size() < 8) return;
      stream_ = static_cast<unsigned char>(header_[0]);
      remaining_ = (uint32_t(uint8_t(header_[4])) << 24) | (uint32_t(uint8_t(header_[5])) << 16) |
                   (uint32_t(uint8_t(header_[6])) << 8) | uint32_t(uint8_t(header_[7]));
      header_.clear();
      continue;
    }
    const size_t take = std::min<size_t>(bytes.size(), remaining_);
    on_frame_(stream_, bytes.substr(0, take));
    remaining_ -= take;
    bytes.remove_prefix(take);
  }
}

}  // namespace sandprobe::drivers
