// Docker Engine API log stream demultiplexing (GET /containers/{id}/logs on a container without a
// TTY): frames of an 8-byte header [stream (1 = stdout, 2 = stderr), 0, 0, 0, size as 4 bytes
// big-endian] followed by `size` bytes. Pure; fed in arbitrary chunks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace sandprobe::drivers {

class LogDemuxer {
 public:
  // on_frame(stream, bytes): stream 1 = stdout, 2 = stderr (0 = stdin echo, passed through).
  explicit LogDemuxer(std::function<void(int, std::string_view)> on_frame);
  void Feed(std::string_view bytes);
  // True when the input ended inside a frame (a truncated stream).
  bool Partial() const { return !header_.empty() || remaining_ > 0; }

 private:
  std::function<void(int, std::string_view)> on_frame_;
  std::string header_;
  uint32_t remaining_ = 0;
  int stream_ = 0;
};

}  // namespace sandprobe::drivers
