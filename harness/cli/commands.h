// Subcommands of the sandprobe CLI (CLI11). Each returns the process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/matrix.h"
#include "report/formats.h"

namespace sandprobe::cli {

inline constexpr int kExitSetup = 3;  // usage, manifest or setup error before any probe ran

// Prints "sandprobe: error: <message>" (and "  hint: <hint>") to stderr and returns kExitSetup.
// Both are cleaned for the terminal: a message can carry a sandbox's own stderr or a file's bytes.
int SetupError(const std::string& message, const std::string& hint = "");

// Writes each of `formats`, in that order, under `dir` (which must exist) as its row in
// report/formats.h says: its file, and its full_file beside it when that differs (an older run's
// removed when not); each through a .tmp and a rename, each named on stderr ("sandprobe: wrote
// PATH"). Returns 0, or kExitSetup after SetupError naming the file that could not be written.
int WriteReports(std::span<const report::Format* const> formats, const core::Matrix& m,
                 const std::filesystem::path& dir, const report::TextOptions& text);

struct RunArgs {
  std::string home;
  std::string suite;                   // default <home>/suites/default.yaml
  std::vector<std::string> sandboxes;  // default <home>/manifests/bubblewrap.yaml
  std::vector<std::string> controls;   // default: each candidate's control:
  std::string out = "reports/out";
  std::string formats = report::FormatNames(",");  // every format
  int jobs = 4;
  bool jobs_given = false;  // --jobs on the command line: exactly that many, no deadline workers
  int repeat = 1;           // trials of every invocation (core/trials.h)
  std::string expect;       // expectations file (core/expect.h); "" = none
  double grace_s = 5;
  double default_timeout_s = 10;
  std::string canary_bind = "127.0.0.1";
  uint16_t canary_dns_port = 0;  // 0: kernel-chosen
  std::string canary_bind6;
  std::string canary_dir;
  bool no_color = false;
  std::string nodes;    // kubernetes: "all" or a label selector: one arm per node
  std::string context;  // kubernetes: kubeconfig context for every kubernetes arm
};

struct ListArgs {
  std::string home;
  std::string probe;  // for explain
};

struct ValidateArgs {
  std::string home;
  std::vector<std::string> files;
  // Also ask the live service each manifest names (its kind's check_live: the Docker daemon's
  // API version). Off: validate contacts nothing.
  bool daemon = false;
};

struct CleanupArgs {
  std::string canary_dir;
  std::vector<std::string> tmp_dirs;
  bool dry_run = false;
  std::vector<std::string> kubernetes;  // kubernetes manifests: their cluster + namespace
  std::string context;                  // kubeconfig context for those ("" = the manifest's)
  std::string run;                      // only this run's leftovers ("" = every dead run's)
};

// `render`: the Kubernetes objects a run would submit, as YAML.
struct RenderArgs {
  std::string home;
  std::vector<std::string> sandboxes;
  std::string suite;
  std::string probe;
};

// `report`: re-render a saved run.
struct ReportArgs {
  std::string report;
  std::string formats = "text";
  std::string out;  // "" = stdout
  bool no_color = false;
};

// `diff`: two runs' report.json.
struct DiffArgs {
  std::string old_report;
  std::string new_report;
  std::string format = "text";
};

void AddRun(CLI::App& app, RunArgs& args);
void AddReport(CLI::App& app, ReportArgs& args);
void AddDiff(CLI::App& app, DiffArgs& args);
void AddRender(CLI::App& app, RenderArgs& args);
void AddCleanup(CLI::App& app, CleanupArgs& args);
void AddList(CLI::App& app, ListArgs& args);  // adds both `list` and `explain`
void AddValidate(CLI::App& app, ValidateArgs& args);

int DoRun(const RunArgs& args);
int DoReport(const ReportArgs& args);
int DoDiff(const DiffArgs& args);
int DoRender(const RenderArgs& args);
int DoList(const ListArgs& args, bool explain);
int DoValidate(const ValidateArgs& args);
int DoCleanup(const CleanupArgs& args);

// ${XDG_CACHE_HOME:-~/.cache}/sandprobe: where run plants its canary token folder.
std::string DefaultCanaryDir();

}  // namespace sandprobe::cli
