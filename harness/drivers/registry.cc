#include "drivers/registry.h"

#include <fmt/format.h>

#include "config/yaml_util.h"

namespace sandprobe::drivers {

// Each kind's folder defines its function.
DriverKind LocalKind();       // local/local_kind.cc
DriverKind CommandKind();     // command/command_kind.cc
DriverKind DockerKind();      // docker/docker_kind.cc
DriverKind KubernetesKind();  // kubernetes/kubernetes_kind.cc
DriverKind HttpKind();        // http/http_kind.cc

const DriverRegistry& Registry() {
  // The one list of driver kinds, in the order messages name them.
  static const DriverRegistry registry(
      {LocalKind(), CommandKind(), DockerKind(), KubernetesKind(), HttpKind()});
  return registry;
}

DriverRegistry::DriverRegistry(std::vector<DriverKind> kinds) : kinds_(std::move(kinds)) {
  for (const DriverKind& k : kinds_) sections_.push_back({std::string(k.name), k.read_section});
}

const DriverKind* DriverRegistry::Find(std::string_view name) const {
  for (const DriverKind& k : kinds_) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string DriverRegistry::Names() const { return config::KindNames(sections_); }

config::Loaded<core::Manifest> DriverRegistry::LoadManifest(
    const std::filesystem::path& file) const {
  return config::LoadManifest(file, sections_);
}

config::Loaded<core::Manifest> DriverRegistry::ParseManifest(const std::string& text,
                                                             const std::string& source) const {
  return config::ParseManifest(text, source, sections_);
}

std::expected<std::unique_ptr<Driver>, SetupError> DriverRegistry::Make(
    const core::Manifest& manifest, const DriverContext& context) const {
  const DriverKind* kind = Find(manifest.driver);
  if (kind == nullptr || !kind->make) {
    return std::unexpected(
        SetupError{fmt::format("driver '{}' (manifest {}) is not available in this build",
                               manifest.driver, manifest.source_path),
                   fmt::format("use a {} manifest", Names())});
  }
  // A factory that reads JSON (docker's section, a kind without a reader) may meet a field of
  // the wrong type in a manifest built in code: a setup error, not a crash.
  try {
    return kind->make(manifest, context);
  } catch (const std::exception& e) {
    return std::unexpected(
        SetupError{fmt::format("manifest {}: its {} section cannot be used: {}",
                               manifest.source_path, manifest.driver, e.what()),
                   "compare the field types with the manifests shipped in manifests/"});
  }
}

std::vector<std::string> DriverRegistry::ManifestNotes(const std::filesystem::path& file) const {
  auto text = config::internal::ReadFile(file.string());
  if (!text) return {};
  auto root = config::internal::ReadYaml(*text, file.string());
  if (!root || !(*root)["driver"].IsScalar()) return {};
  const DriverKind* kind = Find((*root)["driver"].Scalar());
  if (kind == nullptr || !kind->notes) return {};
  try {
    return kind->notes(file.string(), *root);
  } catch (const YAML::Exception&) {
    return {};
  }
}

std::expected<void, std::string> DriverRegistry::CheckArmOptions(const ArmOptions& options) const {
  for (const DriverKind& k : kinds_) {
    if (!k.check_arm_options) continue;
    if (auto r = k.check_arm_options(options); !r) return r;
  }
  return {};
}

std::expected<void, std::string> DriverRegistry::ExpandArms(std::vector<core::Manifest>& manifests,
                                                            const ArmOptions& options) const {
  std::vector<core::Manifest> out;
  for (core::Manifest& m : manifests) {
    const DriverKind* kind = Find(m.driver);
    if (kind == nullptr || !kind->arm_variants) {
      out.push_back(std::move(m));
      continue;
    }
    const std::string source = m.source_path;
    std::expected<std::vector<core::Manifest>, std::string> arms;
    try {
      arms = kind->arm_variants(std::move(m), options);
    } catch (const std::exception& e) {
      arms = std::unexpected(fmt::format("manifest {}: its {} section cannot be used: {}", source,
                                         kind->name, e.what()));
    }
    if (!arms) return std::unexpected(arms.error());
    for (core::Manifest& a : *arms) out.push_back(std::move(a));
  }
  manifests = std::move(out);
  return {};
}

std::expected<std::unique_ptr<Driver>, SetupError> MakeDriver(const core::Manifest& manifest,
                                                              const DriverContext& context) {
  return Registry().Make(manifest, context);
}

config::Loaded<core::Manifest> LoadManifest(const std::filesystem::path& file) {
  return Registry().LoadManifest(file);
}

}  // namespace sandprobe::drivers
