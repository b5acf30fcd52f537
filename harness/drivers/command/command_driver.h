// `command` driver: deploys a probe through any CLI sandbox (bubblewrap, `docker run`, nsjail,
// firejail, `runsc do`) from an argv template with "{script}" as one argument, or the script on
// stdin. The `local` driver is this driver with `python3 -u -c {script}` and no sandbox.
// Evidence it adds: the exit status or signal of the sandbox command.
#pragma once

#include "drivers/driver.h"

namespace sandprobe::drivers {

class CommandDriver : public Driver {
 public:
  // argv: the template; stdin_mode: send the script on stdin instead of substituting it.
  CommandDriver(std::string kind, std::vector<std::string> argv, bool stdin_mode,
                DriverContext context);
  std::string_view kind() const override { return kind_; }
  std::expected<void, SetupError> Prepare() override;
  core::Observation Execute(const Invocation& inv, const std::atomic<bool>& cancel) override;

 private:
  std::string kind_;
  std::vector<std::string> argv_;
  bool stdin_mode_;
  DriverContext context_;
};

}  // namespace sandprobe::drivers
