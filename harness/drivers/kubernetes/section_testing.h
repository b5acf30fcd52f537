// Test helper: a kubernetes: section given as JSON (JSON is YAML) read as a manifest load reads it
// (ReadKubernetesSection), so tests build their settings through the one reader the product uses.
#pragma once

#include <yaml-cpp/yaml.h>

#include <expected>
#include <nlohmann/json.hpp>
#include <string>

#include "core/manifest.h"
#include "drivers/kubernetes/kube_section.h"

namespace sandprobe::drivers::kube {

// The section -> its settings, or the reader's error as one line (file:line:col: field: ...).
inline std::expected<KubeSettings, std::string> ReadSectionForTest(const nlohmann::json& section,
                                                                   const std::string& file) {
  auto s = ReadKubernetesSection(file, YAML::Load(nlohmann::json{{"kubernetes", section}}.dump()));
  if (!s) return std::unexpected(s.error().ToString());
  return *s;
}

// A kubernetes manifest named `name`, read from `file`, carrying the section's settings (none
// when the section does not read: SettingsOf and the driver then say so).
inline core::Manifest KubeManifestForTest(const std::string& name, const std::string& file,
                                          const nlohmann::json& section) {
  core::Manifest m;
  m.name = name;
  m.driver = "kubernetes";
  m.source_path = file;
  if (auto s = ReadSectionForTest(section, file)) m.section = std::move(*s);
  return m;
}

}  // namespace sandprobe::drivers::kube
