// Loading YAML (probe descriptors, suites, manifests) into immutable core types. yaml-cpp's
// exceptions stop here: every error is a value naming the file, line, column and field.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include "core/expect.h"
#include "core/manifest.h"
#include "core/probe.h"
#include "core/suite.h"

namespace sandprobe::config {

struct ConfigError {
  std::string file;
  int line = 0;       // 1-based; 0 when unknown
  int column = 0;     // 1-based; 0 when unknown
  std::string field;  // dotted path, e.g. "command.argv[3]"; "" for the whole file
  std::string message;
  // The file's other mistakes found in the same pass, in the order found (none when this is the
  // only one): loaders go on past a mistake wherever what follows can still be checked, so
  // `sandprobe validate` lists every one. Each names its own line, column and field. (`= {}`:
  // an error written as {file, line, column, field, message} leaves it out without a warning.)
  std::vector<ConfigError> more = {};

  // "manifests/x.yaml:12:3: command.argv: expected a list of strings": this mistake alone.
  std::string ToString() const;
  // ToString(), and when the file has more mistakes, how many and where to see them: what `run`
  // says before it refuses a file.
  std::string Summary() const;
  // This mistake and the others (`more`), each without a `more` of its own.
  std::vector<ConfigError> All() const;
};

template <typename T>
using Loaded = std::expected<T, ConfigError>;

// probes/<category>/<name>/probe.yaml plus probe.py beside it.
Loaded<core::ProbeDescriptor> LoadProbe(const std::filesystem::path& dir);
// The text of a probe.yaml read from `source` (named in errors): the descriptor without its
// script (LoadProbe reads probe.py after this). The fuzz target feeds it (harness/fuzz).
Loaded<core::ProbeDescriptor> ParseProbe(const std::string& text, const std::string& source);
// Every probes/*/*/probe.yaml under root (the lib/ folder is skipped), sorted by id; duplicate
// ids are an error.
Loaded<std::vector<core::ProbeDescriptor>> LoadProbeTree(const std::filesystem::path& root);

// The suite's entries against the probe tree: an unknown probe id or parameter name is an error at
// its line and column in the suite file, with "did you mean X?" when one is near.
std::expected<void, ConfigError> CheckSuiteEntries(
    const core::Suite& suite, const std::vector<core::ProbeDescriptor>& probes);

// Every entry and criterion is checked on its own: the error carries each mistake of the file.
Loaded<core::Suite> LoadSuite(const std::filesystem::path& file);
Loaded<core::Suite> ParseSuite(const std::string& text, const std::string& source);
// LoadSuite and CheckSuiteEntries in one pass (`sandprobe validate`): an entry that reads is
// checked against the tree even when another entry does not.
Loaded<core::Suite> LoadSuite(const std::filesystem::path& file,
                              const std::vector<core::ProbeDescriptor>& probes);

// Manifests are loaded through the driver registry (drivers/registry.h), which checks each
// kind's section: config/manifest_sections.h.

// Expectations file (`run --expect`): `expectations:` a list of {probe, candidate (optional: every
// candidate), reason, expires: YYYY-MM-DD}, optional `description:`. Unknown keys, a missing or
// empty field, an invalid date or a duplicate (probe, candidate) are errors at file:line:col.
Loaded<std::vector<core::Expectation>> LoadExpectations(const std::filesystem::path& file);
Loaded<std::vector<core::Expectation>> ParseExpectations(const std::string& text,
                                                         const std::string& source);

// What kind of file a YAML document is, by its keys: "manifest" (driver:), "suite" (probes:),
// "probe" (id: and classify:), "expectations" (expectations:), or an error.
Loaded<std::string> DetectKind(const std::filesystem::path& file);

}  // namespace sandprobe::config
