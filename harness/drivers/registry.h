// The driver registry: the one place that lists the driver kinds (local, command, docker,
// kubernetes, http). A DriverKind is everything the harness knows about one kind of sandbox, and
// each kind's folder under harness/drivers/ defines its own: how its `<kind>:` manifest section
// is checked, how its Driver is built, and optionally the arms it derives from one manifest, the
// objects it would submit (`sandprobe render`), and how leftovers of dead runs are found and
// removed (`sandprobe cleanup`). The CLI and the runner ask the registry; no code outside
// harness/drivers/ names a driver kind or includes a driver's folder (docs/design.md, "Driver
// contract"). Adding a driver: a folder that defines its DriverKind, and one line in registry.cc.
#pragma once

#include <any>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/manifest_sections.h"
#include "core/manifest.h"
#include "drivers/driver.h"

namespace sandprobe::drivers {

// Options that turn one manifest into several arms (CLI flags of `sandprobe run`).
struct ArmOptions {
  std::string nodes;    // "" = the scheduler's choice; "all"; or a label selector
  std::string context;  // "" = the manifest's own (kubeconfig context)
};

// What `sandprobe cleanup` asks a kind to sweep.
struct SweepRequest {
  // The manifest naming where to look (cluster, namespace, daemon), or null for the kind's
  // default place (the local Docker daemon). A kind that needs a manifest ignores a null call.
  const core::Manifest* manifest = nullptr;
  std::string context;  // kubeconfig context override ("" = the manifest's)
  bool dry_run = false;
  std::string only_run;  // non-empty: only objects of this run are looked at (cleanup --run)
  // True while the run with this id is alive (its canary folder's lock is held): spare it.
  // `run_folder` is the folder the object's label names (DriverContext::run_folder), or empty
  // for objects of runs that did not record it: then <canary dir>/<run id> is looked at.
  std::function<bool(const std::string& run_id, const std::string& run_folder)> run_alive;
  // Receives one line (no newline) per object found, removed or spared, and per error. Lines can
  // carry an API server's or daemon's text: the caller cleans them for the terminal.
  std::function<void(const std::string& line)> say;
  // Places (server + namespace, daemon) already swept in this cleanup, so two manifests naming
  // the same place sweep it once. Owned by the caller.
  std::set<std::string>* places_seen = nullptr;
};

struct SweepTally {
  int removed = 0;  // removed (or, with dry_run, found)
  int spared = 0;   // belonging to a live run
  int failed = 0;   // errors: the place could not be read, or a removal was not confirmed
};

struct DriverKind {
  std::string_view name;  // the manifest's `driver:` value and the section's key
  // The local baseline: a control that any candidate may name, whatever its driver.
  bool baseline = false;
  // Reads the `<name>:` section of a manifest into the kind's typed configuration
  // (core::Manifest::section), checking it on the way; file:line:col errors. `make`, `render` and
  // `arm_variants` read that value back (SectionOf below; kubernetes: kube::SettingsOf) and never
  // the YAML again. Null: the section, when present and not null, is kept as JSON verbatim
  // (nlohmann::json; nothing when absent) and checked by `make` (which `sandprobe validate` calls
  // too).
  config::SectionReader read_section = nullptr;
  // Optional: lines `sandprobe validate` prints under a manifest whose section passed
  // read_section: what could not be checked without the sandbox itself, and what checks it later
  // (kubernetes: template fields its table does not know; the preflight dry run). file:line:col.
  std::function<std::vector<std::string>(const std::string& file, const YAML::Node& root)> notes;
  // Optional: checks the `sandprobe run` options this kind reads (kubernetes: --nodes) before
  // anything is loaded. The error is one line; the CLI reports it as a usage error (exit code 3).
  std::function<std::expected<void, std::string>(const ArmOptions&)> check_arm_options;
  // Builds the driver for one arm. Errors: a section the driver cannot use (exit code 3).
  std::function<std::expected<std::unique_ptr<Driver>, SetupError>(const core::Manifest&,
                                                                   const DriverContext&)>
      make;
  // Optional: the arms one manifest stands for (kubernetes: the aged twin, one arm per node),
  // in order. Errors are one line naming the manifest and field.
  std::function<std::expected<std::vector<core::Manifest>, std::string>(core::Manifest,
                                                                        const ArmOptions&)>
      arm_variants;
  // Optional: what a run would submit for these invocations, as YAML documents, contacting
  // nothing (`sandprobe render`). `placeholders_used`: the suite's (runner::PlaceholdersUsed),
  // so targets the arm would deploy for it (the in-cluster canary) are shown too.
  std::function<std::expected<std::vector<std::string>, std::string>(
      const core::Manifest&, const std::string& run_id, const std::vector<Invocation>&,
      const std::set<std::string>& placeholders_used)>
      render;
  // Optional: checks a loaded manifest against the live service it names (`sandprobe validate
  // --daemon`: the Docker daemon's API version). Warnings, one line each (file:line:col: field:
  // message); an error when the service does not answer or could never run the manifest.
  std::function<std::expected<std::vector<std::string>, std::string>(const core::Manifest&)>
      check_live;
  // Optional: find and remove what dead runs left in this kind's place (`sandprobe cleanup`).
  std::function<void(const SweepRequest&, SweepTally&)> sweep_leftovers;
  // With sweep_leftovers: true when the sweep needs a manifest to know where to look.
  bool sweep_needs_manifest = false;
};

class DriverRegistry {
 public:
  explicit DriverRegistry(std::vector<DriverKind> kinds);

  std::span<const DriverKind> kinds() const { return kinds_; }
  // The kind named `name`, or null.
  const DriverKind* Find(std::string_view name) const;
  // "local, command, docker, kubernetes or http"
  std::string Names() const;

  // A manifest file (or text): common fields checked by config/, the driver section by its kind.
  config::Loaded<core::Manifest> LoadManifest(const std::filesystem::path& file) const;
  config::Loaded<core::Manifest> ParseManifest(const std::string& text,
                                               const std::string& source) const;

  // The driver a manifest names. Errors: a kind this registry does not have, or the kind's own.
  std::expected<std::unique_ptr<Driver>, SetupError> Make(const core::Manifest& manifest,
                                                          const DriverContext& context) const;

  // The notes of the manifest file's kind (DriverKind::notes), or none (no notes, or the file no
  // longer reads).
  std::vector<std::string> ManifestNotes(const std::filesystem::path& file) const;
  // Every kind's check_arm_options, in order; the first error.
  std::expected<void, std::string> CheckArmOptions(const ArmOptions& options) const;

  // Replaces each manifest by the arms its kind derives from it (order kept).
  std::expected<void, std::string> ExpandArms(std::vector<core::Manifest>& manifests,
                                              const ArmOptions& options) const;

 private:
  std::vector<DriverKind> kinds_;
  std::vector<config::DriverSection> sections_;
};

// The section `manifest`'s kind read on load (DriverKind::read_section), as type T; an error
// naming the manifest when it holds none of that type (a Manifest built in code without one).
template <class T>
std::expected<const T*, std::string> SectionOf(const core::Manifest& manifest) {
  if (const T* section = std::any_cast<T>(&manifest.section)) return section;
  return std::unexpected(
      "manifest " + manifest.source_path + ": its " + manifest.driver +
      " section was not read (a manifest is loaded through the driver registry: LoadManifest)");
}

// A kind's reader of its own type T (ReadCommandSection, ReadHttpSection, ...) as the registry
// stores it: the value goes into core::Manifest::section.
template <class T>
config::SectionReader TypedReader(std::expected<T, config::ConfigError> (*read)(
    const std::string& file, const YAML::Node& root)) {
  return [read](const std::string& file, const YAML::Node& root,
                std::any& out) -> std::expected<void, config::ConfigError> {
    auto section = read(file, root);
    if (!section) return std::unexpected(section.error());
    out = std::move(*section);
    return {};
  };
}

// The built-in kinds (registry.cc's table).
const DriverRegistry& Registry();

// Shorthands on Registry().
std::expected<std::unique_ptr<Driver>, SetupError> MakeDriver(const core::Manifest& manifest,
                                                              const DriverContext& context);
config::Loaded<core::Manifest> LoadManifest(const std::filesystem::path& file);

}  // namespace sandprobe::drivers
