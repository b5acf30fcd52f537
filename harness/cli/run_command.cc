// `sandprobe run`: load the suite, candidates and controls, run, stream the text matrix, write
// matrix.md (+ matrix-full.md when the comment is cut), report.json, junit.xml, report.tap and
// report.html, and return the gate's exit code.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "cli/paths.h"
#include "config/config.h"
#include "core/matrix.h"
#include "drivers/registry.h"
#include "home/home.h"
#include "process/process.h"
#include "report/escape.h"
#include "report/reporters.h"
#include "runner/run.h"

namespace sandprobe::cli {
namespace {

namespace fs = std::filesystem;

std::atomic<bool> g_cancel{false};

void OnSignal(int) {
  if (g_cancel.exchange(true)) return;
  const char msg[] =
      "\nsandprobe: interrupted; stopping running probes, cleaning up and writing what was "
      "measured\n";
  (void)!write(2, msg, sizeof msg - 1);
}

class Observer : public runner::RunObserver {
 public:
  explicit Observer(report::TextReporter* text) : text_(text) {}
  void OnBegin(const core::Matrix& m) override {
    if (text_ != nullptr) text_->Begin(m);
    std::cout.flush();
  }
  void OnRow(const core::Matrix& m, const std::string& probe) override {
    if (text_ != nullptr) text_->RowDone(m, probe);
    std::cout.flush();
  }
  void OnMessage(std::string_view line) override { std::cerr << "sandprobe: " << line << "\n"; }

 private:
  report::TextReporter* text_;
};

}  // namespace

std::string DefaultCanaryDir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return fs::path(x) / "sandprobe";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return fs::path(h) / ".cache" / "sandprobe";
  }
  return "/tmp/sandprobe-canary";
}

void AddRun(CLI::App& app, RunArgs& a) {
  CLI::App* run =
      app.add_subcommand("run", "Run a suite against candidate sandboxes and their control arms");
  run->add_option("--home", a.home, "sandprobe tree with probes/, suites/, manifests/");
  run->add_option("--suite", a.suite, "suite YAML (default: <home>/suites/default.yaml)");
  run->add_option("--sandbox", a.sandboxes,
                  "candidate manifest, repeatable (default: <home>/manifests/bubblewrap.yaml)");
  run->add_option("--control", a.controls,
                  "control manifest, repeatable (default: each candidate's control:)");
  run->add_option("--out", a.out, "directory for " + report::FormatFiles(/*written_by_run=*/true))
      ->capture_default_str();
  run->add_option("--format", a.formats, "comma list of " + report::FormatNames())
      ->capture_default_str();
  run->add_option("--repeat", a.repeat,
                  "run every invocation N times: one leak in N is a FAIL, disagreeing trials are "
                  "marked flaky")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  run->add_option("--expect", a.expect,
                  "expectations YAML: known FAILs accepted with a reason until an expiry date");
  run->add_option("--jobs", a.jobs,
                  "probe invocations in flight at once (unless given: also up to as many more for "
                  "invocations that run until their deadline in command and local arms)")
      ->each([&a](const std::string&) { a.jobs_given = true; })
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  run->add_option("--grace", a.grace_s,
                  "seconds added to the candidate's timeout for the harness deadline")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  run->add_option("--default-timeout", a.default_timeout_s,
                  "seconds, for candidates that claim no limits.timeout")
      ->check(CLI::Range(0.5, 3600.0))
      ->capture_default_str();
  run->add_option("--canary-bind", a.canary_bind,
                  "address the canaries listen on (loopback, or a network the test created)")
      ->capture_default_str();
  run->add_option("--canary-dns-port", a.canary_dns_port,
                  "a fixed port for the DNS canary, UDP and TCP (for a resolver stub that "
                  "forwards a test zone to it); default: one the kernel picks")
      ->check(CLI::Range(1, 65535));
  run->add_option("--canary-bind6", a.canary_bind6,
                  "IPv6 address of the IPv6 HTTP canary (default ::1 when the host has it; "
                  "'none' for no IPv6 canary)");
  run->add_option("--canary-dir", a.canary_dir,
                  "where the canary token file is planted (default: ~/.cache/sandprobe)");
  run->add_flag("--no-color", a.no_color, "no ANSI colours (NO_COLOR is honoured too)");
  run->add_option("--nodes", a.nodes,
                  "kubernetes: run each arm on every schedulable node ('all') or on the nodes a "
                  "label selector picks, one column per node")
      ->check(CLI::Validator(
          [](std::string& value) {
            // The kinds that read --nodes check its syntax: a usage error before anything runs.
            auto r = drivers::Registry().CheckArmOptions({value, ""});
            return r ? std::string() : r.error();
          },
          "all|SELECTOR", "node selector"));
  run->add_option("--context", a.context,
                  "kubernetes: kubeconfig context for every kubernetes arm");
}

namespace {

// The formats `run --format` chose, split as a run uses them: whether the terminal matrix is
// streamed, and the files to write, in table order.
struct Outputs {
  bool streamed = false;
  std::vector<const report::Format*> files;
};

std::expected<Outputs, std::string> OutputsOf(const std::string& formats) {
  const auto chosen = report::ParseFormats(formats);
  if (!chosen) return std::unexpected(chosen.error());
  Outputs out;
  for (const report::Format& f : report::Formats()) {
    if (std::ranges::find(*chosen, &f) == chosen->end()) continue;
    if (f.streamed_by_run) {
      out.streamed = true;
    } else {
      out.files.push_back(&f);
    }
  }
  return out;
}

home::RunRequest RequestOf(const RunArgs& a) {
  home::RunRequest r;
  r.suite = a.suite;
  r.sandboxes = a.sandboxes;
  r.controls = a.controls;
  r.expect = a.expect;
  r.arm_options = drivers::ArmOptions{a.nodes, a.context};
  r.jobs = a.jobs;
  r.deadline_workers = !a.jobs_given;
  r.repeat = a.repeat;
  r.timing = runner::Timing{a.default_timeout_s, a.grace_s};
  r.canary_bind = a.canary_bind;
  r.canary_dns_port = a.canary_dns_port;
  r.canary_bind6 = a.canary_bind6;
  r.canary_dir = a.canary_dir.empty() ? DefaultCanaryDir() : a.canary_dir;
  r.reaper_path = ResolveReaper();
  return r;
}

// The output folder must be writable before anything runs: a run is not lost at the end.
bool OutWritable(const std::string& out, std::string& why) {
  std::error_code ec;
  fs::create_directories(out, ec);
  const fs::path probe_file = fs::path(out) / ".sandprobe-write-test";
  std::ofstream test(probe_file);
  if (ec || !test) {
    why = ec ? ": " + ec.message() : "";
    return false;
  }
  test.close();
  fs::remove(probe_file, ec);
  return true;
}

void HandleSignals() {
  process::BecomeSubreaper();  // orphans of a killed sandprobe-reaper come to us, not init
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

}  // namespace

int DoRun(const RunArgs& a) {
  const auto outputs = OutputsOf(a.formats);
  if (!outputs) {
    return SetupError("--format: " + outputs.error(),
                      "use a comma list of " + report::FormatNames());
  }
  const auto tree = home::OpenHome(ResolveHome(a.home));
  if (!tree) return SetupError(tree.error().message, tree.error().hint);
  auto options = home::RunSpecFrom(*tree, RequestOf(a), [](const std::string& w) {
    std::cerr << "sandprobe: warning: " << w << "\n";
  });
  if (!options) return SetupError(options.error().message, options.error().hint);
  if (std::string why; !OutWritable(a.out, why)) {
    return SetupError(fmt::format("--out {}: cannot write there{}", a.out, why),
                      "give --out a folder you can write to");
  }
  HandleSignals();

  const char* no_color = std::getenv("NO_COLOR");
  report::TextOptions text_options;
  text_options.color =
      !a.no_color && isatty(STDOUT_FILENO) && (no_color == nullptr || *no_color == '\0');
  report::TextReporter text(std::cout, text_options);
  Observer observer(outputs->streamed ? &text : nullptr);
  auto matrix = runner::Run(*options, observer, g_cancel);
  if (!matrix && g_cancel.load()) {
    // Ctrl-C during setup (an arm's Prepare, the in-cluster canary's start): an interrupted run
    // (exit 2), not a setup error (exit 3) a CI job would blame on its manifest. Nothing was
    // measured, so there is no report (docs/design.md, "Exit codes").
    std::cerr << "sandprobe: interrupted before any probe ran (" << matrix.error().message
              << "); nothing was measured, no report written\n";
    return 2;
  }
  if (!matrix) return SetupError(matrix.error().message, matrix.error().hint);
  if (outputs->streamed) text.End(*matrix);
  std::cout.flush();

  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) {
    std::cerr << "sandprobe: error: cannot create --out " << a.out << ": " << ec.message() << "\n";
    return kExitSetup;
  }
  if (const int rc = WriteReports(outputs->files, *matrix, a.out, text_options); rc != 0) {
    return rc;
  }
  return core::RunExitCode(*matrix);
}

}  // namespace sandprobe::cli
