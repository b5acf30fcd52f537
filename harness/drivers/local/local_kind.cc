// The `local` kind: the probe as a plain child of the harness, no isolation at all. It is the
// baseline control (the agent's own process: its env, its files, its loopback), so any candidate
// may name it as its control. Built on the command driver with `python3 -u -c {script}`.
#include "drivers/command/command_section.h"
#include "drivers/registry.h"

namespace sandprobe::drivers {

DriverKind LocalKind() {
  DriverKind k;
  k.name = "local";
  k.baseline = true;
  k.check_section = CheckLocalSection;
  k.make = [](const core::Manifest& manifest,
              const DriverContext& context) -> std::expected<std::unique_ptr<Driver>, SetupError> {
    CommandConfig config =
        CommandConfigFrom(manifest.driver_config, {"python3", "-u", "-c", "{script}"});
    config.preflight.clear(), config.after.clear(), config.cleanup.clear();  // not in local:
    config.stdin_mode = false;
    // The agent's own plain subprocess keeps the descriptors its parent left open: the local
    // control hands on the planted descriptor canaries (fs.inherited-fds).
    config.pass_planted_fds = true;
    return std::make_unique<CommandDriver>("local", std::move(config), context);
  };
  return k;
}

}  // namespace sandprobe::drivers
