// `sandprobe run`: load the suite, candidates and controls, run, stream the text matrix, write
// matrix.md (+ matrix-full.md when the comment is cut), report.json, junit.xml, report.tap and
// report.html, and return the gate's exit code.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

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

bool WriteFile(const fs::path& path, const std::string& content) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) return false;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  return !ec;
}

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
  run->add_option("--out", a.out,
                  "directory for matrix.md (+ matrix-full.md), report.json, junit.xml, report.tap, "
                  "report.html")
      ->capture_default_str();
  run->add_option("--format", a.formats, "comma list of text, markdown, json, junit, tap, html")
      ->capture_default_str();
  run->add_option("--repeat", a.repeat,
                  "run every invocation N times: one leak in N is a FAIL, disagreeing trials are "
                  "marked flaky")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  run->add_option("--expect", a.expect,
                  "expectations YAML: known FAILs accepted with a reason until an expiry date");
  run->add_option("--jobs", a.jobs, "probe invocations in flight at once")
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

int DoRun(const RunArgs& a) {
  const fs::path home = ResolveHome(a.home);
  std::set<std::string> formats;
  for (size_t i = 0; i <= a.formats.size();) {
    const size_t comma = std::min(a.formats.find(',', i), a.formats.size());
    const std::string f = a.formats.substr(i, comma - i);
    if (f != "text" && f != "markdown" && f != "json" && f != "junit" && f != "tap" &&
        f != "html") {
      return SetupError(fmt::format("--format: unknown format '{}'", f),
                        "use a comma list of text, markdown, json, junit, tap, html");
    }
    formats.insert(f);
    i = comma + 1;
  }
  runner::RunOptions opt;
  auto probes = config::LoadProbeTree(home / "probes");
  if (!probes) {
    return SetupError(probes.error().ToString(), "pass --home or set SANDPROBE_HOME to the tree");
  }
  opt.probes = std::move(*probes);
  opt.make_driver = drivers::MakeDriver;
  std::ifstream preamble(home / "probes/lib/preamble.py");
  std::stringstream pre;
  pre << preamble.rdbuf();
  opt.preamble = pre.str();
  if (opt.preamble.empty())
    return SetupError((home / "probes/lib/preamble.py").string() + " is missing");
  auto suite =
      config::LoadSuite(a.suite.empty() ? home / "suites/default.yaml" : fs::path(a.suite));
  if (!suite) return SetupError(suite.error().ToString());
  if (auto r = config::CheckSuiteEntries(*suite, opt.probes); !r) {
    return SetupError(r.error().ToString());
  }
  opt.suite = std::move(*suite);

  std::vector<std::string> sandboxes = a.sandboxes;
  if (sandboxes.empty()) sandboxes.push_back((home / "manifests/bubblewrap.yaml").string());
  std::vector<std::string> control_paths = a.controls;
  for (const std::string& path : sandboxes) {
    auto m = drivers::LoadManifest(path);
    if (!m) return SetupError(m.error().ToString());
    if (a.controls.empty()) {
      if (m->control.empty()) {
        std::cerr << "sandprobe: warning: " << path << " names no control: and no --control was "
                  << "given; its contained rows will be INCONCLUSIVE\n";
      } else {
        auto found = FindControl(*m, home);
        if (!found) return SetupError(found.error(), "give --control MANIFEST");
        control_paths.push_back(found->string());
      }
    }
    opt.candidates.push_back(std::move(*m));
  }
  std::set<std::string> seen;
  for (const std::string& path : control_paths) {
    auto m = drivers::LoadManifest(path);
    if (!m) return SetupError(m.error().ToString());
    if (!seen.insert(m->name).second) continue;  // several candidates may share one control
    opt.controls.push_back(std::move(*m));
  }
  const drivers::ArmOptions arm_options{a.nodes, a.context};
  for (auto* arms : {&opt.candidates, &opt.controls}) {
    if (auto r = drivers::Registry().ExpandArms(*arms, arm_options); !r) {
      return SetupError(r.error(),
                        "check the kubeconfig and the cluster (sandprobe render shows "
                        "what a run would submit)");
    }
  }
  std::vector<core::Expectation> expectations;
  if (!a.expect.empty()) {
    auto loaded = config::LoadExpectations(a.expect);
    if (!loaded) return SetupError(loaded.error().ToString(), "sandprobe validate checks the file");
    expectations = std::move(*loaded);
  }
  opt.jobs = a.jobs;
  opt.repeat = a.repeat;
  opt.expectations = std::move(expectations);
  opt.timing = runner::Timing{a.default_timeout_s, a.grace_s};
  opt.canary_bind = a.canary_bind;
  opt.canary_dns_port = a.canary_dns_port;
  opt.canary_bind6 = a.canary_bind6;
  // Absolute: the token path travels into the probe, which may start in another directory.
  opt.canary_dir = fs::absolute(a.canary_dir.empty() ? DefaultCanaryDir() : a.canary_dir);
  opt.reaper_path = ResolveReaper();

  // The output folder must be writable before anything runs: a run is not lost at the end.
  {
    std::error_code ec;
    fs::create_directories(a.out, ec);
    const fs::path probe_file = fs::path(a.out) / ".sandprobe-write-test";
    std::ofstream test(probe_file);
    if (ec || !test) {
      return SetupError(
          fmt::format("--out {}: cannot write there{}", a.out, ec ? ": " + ec.message() : ""),
          "give --out a folder you can write to");
    }
    test.close();
    fs::remove(probe_file, ec);
  }
  process::BecomeSubreaper();  // orphans of a killed sandprobe-reaper come to us, not init
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const char* no_color = std::getenv("NO_COLOR");
  report::TextOptions text_options;
  text_options.color =
      !a.no_color && isatty(STDOUT_FILENO) && (no_color == nullptr || *no_color == '\0');
  report::TextReporter text(std::cout, text_options);
  Observer observer(formats.contains("text") ? &text : nullptr);
  auto matrix = runner::Run(opt, observer, g_cancel);
  if (!matrix && g_cancel.load()) {
    // Ctrl-C during setup (an arm's Prepare, the in-cluster canary's start): an interrupted run
    // (exit 2), not a setup error (exit 3) a CI job would blame on its manifest. Nothing was
    // measured, so there is no report (docs/design.md, "Exit codes").
    std::cerr << "sandprobe: interrupted before any probe ran (" << matrix.error().message
              << "); nothing was measured, no report written\n";
    return 2;
  }
  if (!matrix) return SetupError(matrix.error().message, matrix.error().hint);
  if (formats.contains("text")) text.End(*matrix);
  std::cout.flush();

  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) {
    std::cerr << "sandprobe: error: cannot create --out " << a.out << ": " << ec.message() << "\n";
    return kExitSetup;
  }
  struct OutputFile {
    const char* format;
    const char* name;
    std::string content;
  };
  std::vector<OutputFile> files;
  const fs::path full_md = fs::path(a.out) / "matrix-full.md";
  if (formats.contains("markdown")) {
    std::string comment = report::RenderMarkdown(*matrix);
    std::string full = report::RenderMarkdownFull(*matrix);
    if (full != comment) {
      files.push_back({"markdown", "matrix-full.md", std::move(full)});
    } else {
      fs::remove(full_md, ec);  // an older run's: it would not belong to this matrix.md
    }
    files.push_back({"markdown", "matrix.md", std::move(comment)});
  }
  const std::pair<const char*, std::string (*)(const core::Matrix&)> renderers[] = {
      {"json", report::RenderJson},
      {"junit", report::RenderJunit},
      {"tap", report::RenderTap},
      {"html", report::RenderHtml}};
  const char* names[] = {"report.json", "junit.xml", "report.tap", "report.html"};
  for (size_t i = 0; i < std::size(renderers); ++i) {
    if (formats.contains(renderers[i].first)) {
      files.push_back({renderers[i].first, names[i], renderers[i].second(*matrix)});
    }
  }
  for (const OutputFile& file : files) {
    const fs::path path = fs::path(a.out) / file.name;
    if (!WriteFile(path, file.content)) {
      std::cerr << "sandprobe: error: cannot write " << path.string() << "\n";
      return kExitSetup;
    }
    std::cerr << "sandprobe: wrote " << path.string() << "\n";
  }
  return core::RunExitCode(*matrix);
}

}  // namespace sandprobe::cli
