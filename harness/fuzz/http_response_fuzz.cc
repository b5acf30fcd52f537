// libFuzzer target: a run-code service's answer -> the http driver's response mapping
// (HttpDriver::MapResponse, the code Execute runs on what the transport hands over;
// drivers/http/http_driver.h). Input: byte 0 picks the HTTP status (200, 201, 500, 404) and
// how the body is cut into chunks; the rest is the body. Each body goes through the code-json
// preset twice: kept whole (maxBody 16 MiB) and read streaming past a 64-byte maxBody.
#include <vector>

#include "drivers/http/http_driver.h"
#include "drivers/http/http_section.h"
#include "fuzz/fuzz_input.h"

namespace {

using sandprobe::drivers::HttpConfig;
using sandprobe::drivers::HttpDriver;
using sandprobe::fuzz::Check;

HttpDriver MakeDriver(size_t max_body) {
  auto config = sandprobe::drivers::ReadHttpSection(
      "fuzz.yaml", YAML::Load("http: {url: http://127.0.0.1:1/run, preset: code-json}"));
  Check(config.has_value(), "the code-json preset parses");
  config->max_body = max_body;
  config->stream_ceiling = 1 << 20;
  sandprobe::drivers::DriverContext context;
  context.nonce = "fuzznonce";
  return HttpDriver(*config, context);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const HttpDriver whole = MakeDriver(16u << 20);
  static const HttpDriver streamed = MakeDriver(64);
  if (size == 0) return 0;
  static constexpr int kStatus[] = {200, 201, 500, 404};
  const int status = kStatus[data[0] & 3];
  const size_t cut = 1 + (data[0] >> 2);  // chunk bytes, 1..64
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string_view> chunks;
  for (size_t at = 0; at < body.size(); at += cut) chunks.push_back(body.substr(at, cut));
  for (const HttpDriver* driver : {&whole, &streamed}) {
    const sandprobe::core::Observation obs = driver->MapResponse(status, chunks);
    using sandprobe::core::Ending;
    if (obs.ending == Ending::kHarnessError) {
      Check(!obs.harness_error.empty(), "a harness error says why");
    } else {
      Check(obs.ending == Ending::kExited || obs.ending == Ending::kSignaled,
            "an answer ends exited or signaled");
      Check(status / 100 == 2, "only a 2xx answer is read as the probe's ending");
    }
    if (obs.ending == Ending::kSignaled) Check(obs.signal > 0, "a signal is positive");
  }
  return 0;
}
