// libFuzzer target: a probe's output -> the record parser (core/output.h): ParseRecordLine on
// every line, and the OutputCollector fed the bytes in chunks (sizes from the input's first byte)
// with tight bounds and with the defaults. Record lines carry the nonce "fuzznonce"
// ("@@sandprobe fuzznonce {...}").
#include <algorithm>

#include "core/output.h"
#include "fuzz/fuzz_input.h"

namespace {

using sandprobe::fuzz::Check;

bool ValidUtf8(const std::string& s) { return sandprobe::core::SanitizeUtf8(s) == s; }

void Collect(std::string_view bytes, size_t chunk, sandprobe::core::OutputBounds bounds) {
  sandprobe::core::OutputCollector collector("fuzznonce", bounds);
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    collector.FeedStdout(bytes.substr(at, chunk));
    collector.FeedStderr(bytes.substr(at, chunk));
  }
  sandprobe::core::Observation obs;
  collector.Finish(obs);
  Check(obs.records.size() <= bounds.max_records, "records kept within max_records");
  Check(obs.stdout_bytes == bytes.size() && obs.stderr_bytes == bytes.size(), "bytes counted");
  Check(ValidUtf8(obs.stdout_head) && ValidUtf8(obs.stderr_head), "heads are valid UTF-8");
  for (const auto& r : obs.records) {
    Check(r.is_object() && r.contains("kind") && r["kind"].is_string(), "a record has a kind");
  }
  if (obs.result) Check((*obs.result)["kind"] == "result", "the result is a result record");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 64;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  for (size_t at = 0; at <= bytes.size();) {
    const size_t nl = std::min(bytes.find('\n', at), bytes.size());
    auto r = sandprobe::core::ParseRecordLine(bytes.substr(at, nl - at), "fuzznonce");
    if (r) Check(r->is_object() && (*r)["kind"].is_string(), "a parsed record has a kind");
    at = nl + 1;
  }
  Collect(bytes, chunk, {.head_bytes = 64, .max_line = 256, .max_records = 4});
  Collect(bytes, chunk, {});
  return 0;
}
