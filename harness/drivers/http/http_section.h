// The `http:` manifest section, checked when a manifest is loaded (the fields are described in
// http_driver.h; ParseHttpConfig turns the checked section into the driver's HttpConfig).
#pragma once

#include <yaml-cpp/yaml.h>

#include <expected>
#include <string>

#include "config/config.h"

namespace sandprobe::drivers {

// A URL, a preset or a body + response shape, optional health URL, token variable name, timeout
// rule and durations. Errors name the file, line, column and field (http.<key>).
std::expected<void, config::ConfigError> CheckHttpSection(const std::string& file,
                                                          const YAML::Node& root);

}  // namespace sandprobe::drivers
