#include "drivers/given_secrets.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace sandprobe::drivers {

bool SecretLookingName(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return std::ranges::any_of(
      std::initializer_list<std::string_view>{"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD",
                                              "CREDENTIAL"},
      [&](std::string_view word) { return upper.find(word) != std::string::npos; });
}

std::vector<std::pair<std::string, std::string>> SecretLookingEntries(
    const std::vector<std::string>& env) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& entry : env) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size()) continue;
    std::string name = entry.substr(0, eq);
    if (SecretLookingName(name)) out.emplace_back(std::move(name), entry.substr(eq + 1));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> SecretsInArgv(
    const std::vector<std::string>& argv) {
  std::vector<std::string> env;  // NAME=value entries the line gives
  bool container_cli = false;    // docker/podman seen: -e / --env mean what they say there
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const std::string base = std::filesystem::path(a).filename().string();
    if (base == "docker" || base == "podman") container_cli = true;
    const bool next = i + 1 < argv.size();
    if (a == "--setenv" && i + 2 < argv.size()) {  // bubblewrap: --setenv NAME VALUE
      env.push_back(argv[i + 1] + "=" + argv[i + 2]);
      i += 2;
    } else if (container_cli && (a == "-e" || a == "--env") && next) {
      env.push_back(argv[++i]);
    } else if (container_cli && a.starts_with("--env=")) {
      env.push_back(a.substr(6));
    } else if (container_cli && a.starts_with("-e") && a.size() > 2 && a[2] != '-') {
      env.push_back(a.substr(2));
    }
  }
  return SecretLookingEntries(env);
}

}  // namespace sandprobe::drivers
