// The `local` kind: the probe as a plain child of the harness, no isolation at all. It is the
// baseline control (the agent's own process: its env, its files, its loopback), so any candidate
// may name it as its control. Built on the command driver with `python3 -I -S -u -c {script}`
// (command_section.h, LocalConfig); a manifest built in code without a section gets that too.
#include "drivers/command/command_section.h"
#include "drivers/registry.h"

namespace sandprobe::drivers {

DriverKind LocalKind() {
  DriverKind k;
  k.name = "local";
  k.baseline = true;
  k.read_section = TypedReader(ReadLocalSection);
  k.make = [](const core::Manifest& manifest,
              const DriverContext& context) -> std::expected<std::unique_ptr<Driver>, SetupError> {
    auto config = SectionOf<CommandConfig>(manifest);
    return std::make_unique<CommandDriver>("local", config ? **config : LocalConfig(), context);
  };
  return k;
}

}  // namespace sandprobe::drivers
