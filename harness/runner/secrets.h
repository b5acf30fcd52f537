// Planted canary secrets: what an unsandboxed script would find. The control arm must see them
// (the probe works); a candidate must not. Values are random per run and never printed: reports
// carry only names, lengths and sha256 prefixes.
#pragma once

#include <expected>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sandprobe::runner {

// The names a real caller's environment carries its secrets under, planted beside the main
// canary with random values: a cloud key, two model API keys, two CI tokens. A sandbox that
// filters its environment by name patterns, or a launcher that keeps what it was given, is
// tested on the names that matter, not only on the harness's own.
inline constexpr std::string_view kRealisticEnvNames[] = {
    "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "CI_JOB_TOKEN"};

class PlantedSecrets {
 public:
  // Writes a canary token file (mode 0600) under `dir`/<run_id> (created, removed by the
  // destructor) and prepares the env var planted in the process that launches each sandbox.
  // The folder holds `.lock`, flock()ed for the run's lifetime: `sandprobe cleanup` leaves a
  // folder alone while a live run holds it (see RunFolderInUse).
  static std::expected<PlantedSecrets, std::string> Plant(const std::filesystem::path& dir,
                                                          const std::string& run_id);
  PlantedSecrets(PlantedSecrets&&) noexcept;
  PlantedSecrets& operator=(PlantedSecrets&&) = delete;
  ~PlantedSecrets();

  // Planted in the launching process's environment: {name, value}, the main canary
  // (SANDPROBE_CANARY_API_TOKEN) first, then kRealisticEnvNames in their order.
  std::vector<std::pair<std::string, std::string>> Env() const;
  // Placeholders for suites: canary.env_name, canary.env_sha256 (the main canary),
  // canary.env_set (every planted variable as "NAME=<hex sha256>", comma-separated, in Env()
  // order), canary.token_file, canary.token_sha256.
  std::map<std::string, std::string> Substitutions() const;
  const std::filesystem::path& token_file() const { return token_file_; }
  // `dir`/<run_id>, absolute: the folder whose .lock says the run is alive (RunFolderInUse).
  const std::filesystem::path& folder() const { return dir_; }
  // The planted values, for redaction from everything that reaches a report.
  std::vector<std::string> Values() const;
  void Remove();  // idempotent

 private:
  PlantedSecrets() = default;
  std::filesystem::path dir_, token_file_;
  std::vector<std::pair<std::string, std::string>> env_;  // Env()
  std::string token_value_;
  int lock_fd_ = -1;
};

// True when a live sandprobe run holds the folder's .lock (flock), so it must not be removed.
bool RunFolderInUse(const std::filesystem::path& run_dir);

// 2n lowercase hex characters from the kernel's random source (getrandom).
std::string RandomHex(size_t n_bytes);
// Lowercase hex sha256 of `data` (OpenSSL EVP).
std::string Sha256Hex(std::string_view data);

// The canary cloud credential the run's canaries serve on the metadata credential paths: 40 hex
// characters derived from the run's nonce, as the in-cluster canary derives it
// (cluster_canary.py cloud_credential()), so it never travels to a cluster. Redacted from every
// report like the planted secrets (Session::SecretValues).
std::string CloudCredential(std::string_view nonce);

}  // namespace sandprobe::runner
