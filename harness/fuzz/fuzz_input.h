// Shared helpers for the libFuzzer targets (docs/design.md "Fuzzing"): the input as text, and
// the one way a target reports a broken invariant (abort, which libFuzzer records as a crash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace sandprobe::fuzz {

inline std::string Text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Aborts with `what` when `ok` is false: an invariant the entry point promises its callers.
inline void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

}  // namespace sandprobe::fuzz
