// libFuzzer target: a suite file's text -> config::ParseSuite, the entry `--suite` reads through
// (config/suite_loader.cc). Any input: a suite or an error naming the file.
#include "config/config.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sandprobe::fuzz::Check;
  auto suite = sandprobe::config::ParseSuite(sandprobe::fuzz::Text(data, size), "fuzz.yaml");
  if (!suite) {
    Check(suite.error().file == "fuzz.yaml", "a suite error names its file");
    Check(!suite.error().ToString().empty(), "a suite error has a message");
  }
  return 0;
}
