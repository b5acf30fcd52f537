// The `http` kind: a run-code service (http_driver.h); its section is read once on load into the
// driver's HttpConfig (http_section.h).
#include "drivers/http/http_driver.h"
#include "drivers/http/http_section.h"
#include "drivers/registry.h"

namespace sandprobe::drivers {

DriverKind HttpKind() {
  DriverKind k;
  k.name = "http";
  k.read_section = TypedReader(ReadHttpSection);
  k.make = [](const core::Manifest& manifest,
              const DriverContext& context) -> std::expected<std::unique_ptr<Driver>, SetupError> {
    auto config = SectionOf<HttpConfig>(manifest);
    if (!config) {
      return std::unexpected(SetupError{
          config.error(),
          "see the README section \"Testing a run-code service\" (manifests/http/minimal.yaml)"});
    }
    return std::make_unique<HttpDriver>(**config, context);
  };
  return k;
}

}  // namespace sandprobe::drivers
