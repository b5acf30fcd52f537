// The `http:` manifest section, read once when a manifest is loaded into the driver's HttpConfig
// (the fields are described in http_driver.h), checked on the way.
#pragma once

#include <yaml-cpp/yaml.h>

#include <expected>
#include <string>

#include "config/config.h"
#include "drivers/http/http_driver.h"

namespace sandprobe::drivers {

// A URL, a preset or a body + response shape, optional health URL, token variable name, timeout
// rule and durations -> HttpConfig, the preset applied first and the section's fields over it
// (response pointers one by one). Errors name the file, line, column and field (http.<key>).
std::expected<HttpConfig, config::ConfigError> ReadHttpSection(const std::string& file,
                                                               const YAML::Node& root);

}  // namespace sandprobe::drivers
