// The `command` kind: any CLI sandbox from an argv template (command_driver.h).
#include "drivers/command/command_section.h"
#include "drivers/registry.h"

namespace sandprobe::drivers {

DriverKind CommandKind() {
  DriverKind k;
  k.name = "command";
  k.check_section = CheckCommandSection;
  k.make = [](const core::Manifest& manifest,
              const DriverContext& context) -> std::expected<std::unique_ptr<Driver>, SetupError> {
    return std::make_unique<CommandDriver>("command", CommandConfigFrom(manifest.driver_config),
                                           context);
  };
  return k;
}

}  // namespace sandprobe::drivers
