// libFuzzer target: report.json text -> config::ParseReportJson, what `sandprobe report` and
// `sandprobe diff` read back (config/report_json.cc).
#include "config/report_json.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = sandprobe::config::ParseReportJson(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
  if (!m) sandprobe::fuzz::Check(m.error().starts_with("fuzz.json"), "an error names its source");
  return 0;
}
