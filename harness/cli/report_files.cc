#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli/commands.h"

namespace sandprobe::cli {
namespace {

namespace fs = std::filesystem;

// `content` to `path` through `path`.tmp and a rename, so a reader never sees half a report, and
// says so on stderr. false: the file could not be written.
bool WriteFile(const fs::path& path, const std::string& content) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) return false;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return false;
  std::cerr << "sandprobe: wrote " << path.string() << "\n";
  return true;
}

}  // namespace

int WriteReports(std::span<const report::Format* const> formats, const core::Matrix& m,
                 const fs::path& dir, const report::TextOptions& text) {
  for (const report::Format* f : formats) {
    std::string content = f->render(m, text);
    if (f->render_full != nullptr) {
      const fs::path full_path = dir / f->full_file;
      std::string full = f->render_full(m);
      if (full != content) {
        if (!WriteFile(full_path, full)) {
          return SetupError(fmt::format("cannot write {}", full_path.string()));
        }
      } else {
        std::error_code ec;
        fs::remove(full_path, ec);  // an older run's: it would not belong to this file
      }
    }
    const fs::path path = dir / f->file;
    if (!WriteFile(path, content)) return SetupError(fmt::format("cannot write {}", path.string()));
  }
  return 0;
}

}  // namespace sandprobe::cli
