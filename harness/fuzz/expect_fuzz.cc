// libFuzzer target: an expectations file's text (`run --expect`) -> config::ParseExpectations
// (config/expect_loader.cc).
#include "config/config.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sandprobe::fuzz::Check;
  auto e = sandprobe::config::ParseExpectations(sandprobe::fuzz::Text(data, size), "fuzz.yaml");
  if (!e) Check(e.error().file == "fuzz.yaml", "an expectations error names its file");
  return 0;
}
