// sandprobe: adversarial conformance tests for sandboxes that run untrusted code.
//
// Exit codes (docs/design.md): 0 every required probe PASS or SKIP; 1 a required FAIL; 2 no FAIL
// but a required INCONCLUSIVE or ERROR, or an interrupted run; 3 usage, manifest or setup error.
// `diff`: 0 no regression, 1 a regression, 3 unreadable input. `report`: 0, or 3.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "sandprobe: deploys hostile probes through a candidate sandbox and a control arm, and "
      "renders a pass/fail matrix"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sandprobe 0.1.0");
  sandprobe::cli::RunArgs run;
  sandprobe::cli::ListArgs list;
  sandprobe::cli::ValidateArgs validate;
  sandprobe::cli::AddRun(app, run);
  sandprobe::cli::AddList(app, list);
  sandprobe::cli::AddValidate(app, validate);
  sandprobe::cli::CleanupArgs cleanup;
  sandprobe::cli::AddCleanup(app, cleanup);
  sandprobe::cli::RenderArgs render;
  sandprobe::cli::AddRender(app, render);
  sandprobe::cli::ReportArgs report;
  sandprobe::cli::AddReport(app, report);
  sandprobe::cli::DiffArgs diff;
  sandprobe::cli::AddDiff(app, diff);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return sandprobe::cli::kExitSetup;
  }
  if (app.got_subcommand("run")) return sandprobe::cli::DoRun(run);
  if (app.got_subcommand("list")) return sandprobe::cli::DoList(list, false);
  if (app.got_subcommand("explain")) return sandprobe::cli::DoList(list, true);
  if (app.got_subcommand("validate")) return sandprobe::cli::DoValidate(validate);
  if (app.got_subcommand("cleanup")) return sandprobe::cli::DoCleanup(cleanup);
  if (app.got_subcommand("render")) return sandprobe::cli::DoRender(render);
  if (app.got_subcommand("report")) return sandprobe::cli::DoReport(report);
  if (app.got_subcommand("diff")) return sandprobe::cli::DoDiff(diff);
  return sandprobe::cli::kExitSetup;
}
