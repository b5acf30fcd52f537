// libFuzzer target: a probe.yaml's text -> config::ParseProbe, what LoadProbe and the probe tree
// read (config/probe_loader.cc).
#include "config/config.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sandprobe::fuzz::Check;
  auto p = sandprobe::config::ParseProbe(sandprobe::fuzz::Text(data, size), "probe.yaml");
  if (p) {
    Check(p->id.starts_with(p->category + "."), "a loaded probe's id starts with its category");
    Check(!p->drivers.empty(), "a loaded probe names its drivers (or all)");
  } else {
    Check(p.error().file == "probe.yaml", "a probe error names its file");
  }
  return 0;
}
