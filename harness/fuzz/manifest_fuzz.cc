// libFuzzer target: a manifest's text -> the driver registry's ParseManifest, what `--sandbox`,
// `--control` and `validate` read: the common fields (config/manifest_loader.cc) and each driver
// kind's section reader (drivers/*/..._section.cc).
#include "drivers/registry.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sandprobe::fuzz::Check;
  const auto& registry = sandprobe::drivers::Registry();
  auto m = registry.ParseManifest(sandprobe::fuzz::Text(data, size), "fuzz.yaml");
  if (m) {
    Check(registry.Find(m->driver) != nullptr, "a loaded manifest names a known driver");
    // Every built-in kind reads its section (local's default without one) on load.
    Check(m->section.has_value(), "a loaded manifest carries its section as its kind read it");
  } else {
    Check(m.error().file == "fuzz.yaml", "a manifest error names its file");
  }
  return 0;
}
