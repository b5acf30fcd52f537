#include <iostream>
#include <string>

#include "cli/commands.h"
#include "report/escape.h"

namespace sandprobe::cli {

int SetupError(const std::string& message, const std::string& hint) {
  std::cerr << "sandprobe: error: " << report::TerminalText(message, 2000) << "\n";
  if (!hint.empty()) std::cerr << "  hint: " << report::TerminalText(hint, 400) << "\n";
  return kExitSetup;
}

}  // namespace sandprobe::cli
