// `sandprobe list`, `sandprobe explain PROBE` and `sandprobe validate [--daemon] FILE...`.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "cli/paths.h"
#include "config/config.h"
#include "core/params.h"
#include "drivers/registry.h"
#include "home/home.h"
#include "report/escape.h"
#include "runner/plan.h"

namespace sandprobe::cli {

void AddList(CLI::App& app, ListArgs& a) {
  CLI::App* list = app.add_subcommand("list", "List the probes in the tree");
  list->add_option("--home", a.home, "sandprobe tree with probes/");
  CLI::App* explain = app.add_subcommand("explain", "Explain one probe: what, parameters, rules");
  explain->add_option("probe", a.probe, "probe id, e.g. net.dns")->required();
  explain->add_option("--home", a.home, "sandprobe tree with probes/");
}

void AddValidate(CLI::App& app, ValidateArgs& a) {
  CLI::App* v = app.add_subcommand(
      "validate", "Check manifests, suites, probe descriptors and expectations files");
  v->add_option("files", a.files, "YAML files")->required();
  v->add_option("--home", a.home, "sandprobe tree with probes/ (to check suites' probe ids)");
  v->add_flag("--daemon", a.daemon,
              "also ask the daemon each manifest names (docker: GET /version) and warn on fields "
              "its API version does not have");
}

int DoList(const ListArgs& a, bool explain) {
  auto probes = home::LoadProbes(ResolveHome(a.home));
  if (!probes) {
    std::cerr << "sandprobe: error: " << probes.error().message << "\n";
    return kExitSetup;
  }
  if (!explain) {
    size_t w = 0, lw = 0;
    for (const auto& p : *probes) w = std::max(w, p.id.size());
    for (const auto& p : *probes) lw = std::max(lw, p.label.size());
    for (const auto& p : *probes) {
      std::cout << fmt::format("{:<{}}  {:<{}}  {}\n", p.id, w, p.label, lw,
                               p.drivers == std::vector<std::string>{"all"}
                                   ? std::string("all drivers")
                                   : fmt::format("{} only", fmt::join(p.drivers, ", ")));
    }
    return 0;
  }
  auto it = std::ranges::find(*probes, a.probe, &core::ProbeDescriptor::id);
  if (it == probes->end()) {
    std::cerr << "sandprobe: error: no probe '" << a.probe << "' (see `sandprobe list`)\n";
    return kExitSetup;
  }
  const core::ProbeDescriptor& p = *it;
  std::cout << fmt::format("{}  ({})\n\n{}\n\n", p.id, p.label, p.description);
  std::cout << fmt::format("applies to:       {}\n", fmt::join(p.drivers, ", "));
  std::cout << fmt::format("needs a control:  {}\n", p.requires_control ? "yes" : "no");
  if (p.deploy == core::Deploy::kHarnessAdmission) {
    std::cout << "deployed:         by the harness, as an admission request (probe.py not run)\n";
  }
  if (p.Needs(core::Need::kPlantedEnv)) {
    std::cout << "needs:            the planted env canary (no proof where it cannot be planted)\n";
  }
  if (p.Needs(core::Need::kLiveCanary)) {
    std::cout << "needs:            a live unix socket canary (a refusal is no proof unless the "
                 "harness's listener accepted a connection right after the call)\n";
  }
  if (!p.claim.empty()) {
    std::cout << fmt::format(
        "judged:           only against a claim (parameter {}); without it the row is reported, "
        "not judged (SKIP)\n",
        p.claim);
  }
  std::cout << fmt::format("descriptor:       {}\n\nparameters:\n", p.source_path);
  for (const auto& [name, spec] : p.params) {
    std::string sized;
    if (core::IsClaimLimit(spec.from_limit)) {
      sized = fmt::format(" (the candidate's limits.{} claim)", spec.from_limit);
    } else if (!spec.from_limit.empty()) {
      sized = fmt::format(" (sized {} x limits.{}{})", spec.factor, spec.from_limit,
                          spec.unit.empty() ? "" : " in " + spec.unit);
    }
    std::cout << fmt::format("  {} = {}{}\n      {}\n", name, spec.default_value.dump(), sized,
                             spec.description);
  }
  std::cout << "\nclassification (result outcome -> exposure):\n";
  for (const auto& [outcome, e] : p.classify.outcomes) {
    std::cout << fmt::format("  {:<20} {}\n", outcome, core::ToString(e));
  }
  std::cout << fmt::format("  {:<20} {}\n", "(killed by sandbox)",
                           core::ToString(p.classify.killed));
  std::cout << fmt::format("  {:<20} {}\n", "(timed out)", core::ToString(p.classify.timed_out));
  std::cout << fmt::format("  {:<20} {}\n", "(sandbox crashed)",
                           core::ToString(p.classify.crashed));
  std::cout << fmt::format("  {:<20} {}\n", "(harness deadline)",
                           core::ToString(p.classify.deadline));
  std::cout << fmt::format(
      "  {:<20} {}{}\n", "(canary hit)", core::ToString(p.classify.canary_hit),
      p.classify.canary_hit_kinds.empty()
          ? ""
          : fmt::format(" (hits of kind {} only)", fmt::join(p.classify.canary_hit_kinds, ", ")));
  if (p.classify.exceeds) {
    std::cout << fmt::format("  {:<20} exposed when any record's {} is over param {}\n",
                             "(over the claim)", p.classify.exceeds->field,
                             p.classify.exceeds->param);
  }
  if (p.classify.fact) {
    std::cout << fmt::format("  {:<20} driver fact {}: > 0 {}, 0 {}\n", "(driver fact)",
                             p.classify.fact->fact, core::ToString(p.classify.fact->above_zero),
                             core::ToString(p.classify.fact->zero));
  }
  if (p.classify.still_running) {
    std::cout << fmt::format(
        "  {:<20} exposed when the heartbeat to param {} is logged after the call ended, or the "
        "driver counts survivors; a stop that neither a survivors count nor a heartbeat heard "
        "while it ran confirms is contained on the sandbox's word\n",
        "(still running)", p.classify.still_running->param);
  }
  if (p.classify.quiet_after_call) {
    std::cout << fmt::format(
        "  {:<20} {} (absence) when the driver waited after the call and nothing reached the "
        "canary of param {}\n",
        "(quiet after call)", core::ToString(p.classify.quiet_after_call->exposure),
        p.classify.quiet_after_call->param);
  }
  return 0;
}

namespace {

// Every mistake a loader found in one file (ConfigError::more), in the file's order: by line and
// column, those of no known place first.
void AddAll(const config::ConfigError& error, std::vector<std::string>& errors) {
  std::vector<config::ConfigError> all = error.All();
  std::ranges::stable_sort(all, {}, [](const config::ConfigError& e) {
    return std::pair{e.line, e.column};
  });
  for (const config::ConfigError& e : all) errors.push_back(e.ToString());
}

}  // namespace

// Each file is checked as far as it reads: every mistake found is one `error` line (file:line:col:
// field: message), and a file with any is counted once.
int DoValidate(const ValidateArgs& a) {
  int bad = 0;
  auto probes =
      home::LoadProbes(ResolveHome(a.home));  // optional: suites are checked when it loads
  for (const std::string& file : a.files) {
    auto kind = config::DetectKind(file);
    std::vector<std::string> errors;
    std::string note;
    std::vector<std::string> warnings;
    if (!kind) {
      AddAll(kind.error(), errors);
    } else if (*kind == "manifest") {
      auto m = drivers::LoadManifest(file);
      if (!m) {
        AddAll(m.error(), errors);
      } else if (auto d = drivers::MakeDriver(*m, {}); !d) {
        errors.push_back(fmt::format("{}: {} ({})", file, d.error().message, d.error().hint));
      } else if (!m->control.empty()) {
        auto control = home::FindControl(*m, ResolveHome(a.home));
        if (!control) {
          errors.push_back(control.error());
        } else if (auto c = drivers::LoadManifest(*control); !c) {
          for (const config::ConfigError& e : c.error().All()) {
            errors.push_back(fmt::format("control {}: {}", control->string(), e.ToString()));
          }
        } else if (c->name == m->name) {
          errors.push_back(
              fmt::format("{}: control '{}' has the candidate's own name", file, c->name));
        } else {
          note = fmt::format(", control {}", control->string());
        }
      }
      const drivers::DriverKind* k = drivers::Registry().Find(m ? m->driver : "");
      if (errors.empty() && a.daemon && k != nullptr && k->check_live) {
        auto live = k->check_live(*m);
        if (live) {
          warnings = std::move(*live);
        } else {
          errors.push_back(live.error());
        }
      }
    } else if (*kind == "suite") {
      // With the probe tree, the entries are checked against it in the same pass.
      auto s = probes ? config::LoadSuite(file, *probes) : config::LoadSuite(file);
      if (!s) {
        AddAll(s.error(), errors);
      } else if (probes) {
        std::map<std::string, std::string> examples;
        for (std::string_view key : runner::kPlaceholders) examples[std::string(key)] = "1";
        for (std::string_view key : runner::kArmPlaceholders) examples[std::string(key)] = "1";
        for (const auto& e : s->entries) {
          auto p = std::ranges::find(*probes, e.probe, &core::ProbeDescriptor::id);
          if (p == probes->end()) {
            errors.push_back(fmt::format("{}: probe '{}' is not in the probe tree", file, e.probe));
          } else if (auto r = core::ResolveParams(*p, e.params, {}, examples); !r) {
            errors.push_back(fmt::format("{}: {}", file, r.error()));
          }
        }
      }
    } else if (*kind == "expectations") {
      auto list = config::LoadExpectations(file);
      const std::string today = fmt::format("{:%Y-%m-%d}", fmt::gmtime(std::time(nullptr)));
      if (!list) {
        AddAll(list.error(), errors);
      } else {
        note = fmt::format(", {} known FAIL(s)", list->size());
        for (const core::Expectation& e : *list) {
          if (probes &&
              std::ranges::find(*probes, e.probe, &core::ProbeDescriptor::id) == probes->end()) {
            errors.push_back(fmt::format("{}: probe: unknown probe id '{}'", e.source, e.probe));
            continue;
          }
          if (e.expires < today) {
            warnings.push_back(
                fmt::format("{}: {} expired {} (UTC today is {}): the row fails the "
                            "gate again",
                            e.source, e.probe, e.expires, today));
          }
        }
      }
    } else if (std::filesystem::path(file).filename() != "probe.yaml") {
      errors.push_back(fmt::format(
          "{}: a probe descriptor must be named probe.yaml, beside its probe.py", file));
    } else {
      auto p = config::LoadProbe(std::filesystem::path(file).parent_path());
      if (!p) AddAll(p.error(), errors);
    }
    if (errors.empty()) {
      std::cout << fmt::format("ok     {} ({}{})\n", file, kind.value_or("?"),
                               report::TerminalText(note, 2000));
      for (const std::string& w : warnings) {
        std::cout << fmt::format("warn   {}\n", report::TerminalText(w, 2000));
      }
      // What a manifest's kind could not check without the sandbox, and what checks it later.
      if (kind && *kind == "manifest") {
        for (const std::string& n : drivers::Registry().ManifestNotes(file))
          std::cout << fmt::format("note   {}\n", report::TerminalText(n, 2000));
      }
    } else {
      for (const std::string& e : errors) {
        std::cout << fmt::format("error  {}\n", report::TerminalText(e, 2000));
      }
      ++bad;
    }
  }
  return bad == 0 ? 0 : kExitSetup;
}

}  // namespace sandprobe::cli
