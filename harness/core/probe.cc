#include "core/probe.h"

#include <algorithm>

namespace sandprobe::core {

bool ProbeDescriptor::AppliesTo(const std::string& driver) const {
  return std::ranges::any_of(drivers,
                             [&](const std::string& d) { return d == "all" || d == driver; });
}

bool ProbeDescriptor::Needs(Need need) const {
  return std::ranges::find(needs, need) != needs.end();
}

}  // namespace sandprobe::core
