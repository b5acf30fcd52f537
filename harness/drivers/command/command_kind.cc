// The `command` kind: any CLI sandbox from an argv template (command_driver.h); its section is
// read once on load into the driver's CommandConfig (command_section.h).
#include "drivers/command/command_section.h"
#include "drivers/registry.h"

namespace sandprobe::drivers {

DriverKind CommandKind() {
  DriverKind k;
  k.name = "command";
  k.read_section = TypedReader(ReadCommandSection);
  k.make = [](const core::Manifest& manifest,
              const DriverContext& context) -> std::expected<std::unique_ptr<Driver>, SetupError> {
    auto config = SectionOf<CommandConfig>(manifest);
    if (!config) {
      return std::unexpected(SetupError{config.error(), "load the manifest from its file"});
    }
    return std::make_unique<CommandDriver>("command", **config, context);
  };
  return k;
}

}  // namespace sandprobe::drivers
