// The `http` kind: a run-code service (http_driver.h); its section is checked on load.
#include <fmt/format.h>

#include "drivers/http/http_driver.h"
#include "drivers/http/http_section.h"
#include "drivers/registry.h"

namespace sandprobe::drivers {

DriverKind HttpKind() {
  DriverKind k;
  k.name = "http";
  k.check_section = CheckHttpSection;
  k.make = [](const core::Manifest& manifest,
              const DriverContext& context) -> std::expected<std::unique_ptr<Driver>, SetupError> {
    auto config = ParseHttpConfig(manifest.driver_config);
    if (!config) {
      return std::unexpected(SetupError{
          fmt::format("manifest {}: {}", manifest.source_path, config.error()),
          "see the README section \"Testing a run-code service\" (manifests/http/minimal.yaml)"});
    }
    return std::make_unique<HttpDriver>(std::move(*config), context);
  };
  return k;
}

}  // namespace sandprobe::drivers
