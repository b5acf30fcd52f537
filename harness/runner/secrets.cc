#include "runner/secrets.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include <fstream>

namespace sandprobe::runner {

std::string RandomHex(size_t n_bytes) {
  std::string bytes(n_bytes, '\0');
  size_t got = 0;
  while (got < n_bytes) {
    const ssize_t r = getrandom(bytes.data() + got, n_bytes - got, 0);
    if (r > 0) got += r;
  }
  std::string hex;
  for (unsigned char c : bytes) hex += fmt::format("{:02x}", c);
  return hex;
}

std::string CloudCredential(std::string_view nonce) {
  return Sha256Hex("sandprobe-cloud-credential:" + std::string(nonce)).substr(0, 40);
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

std::expected<PlantedSecrets, std::string> PlantedSecrets::Plant(const std::filesystem::path& dir,
                                                                 const std::string& run_id) {
  PlantedSecrets s;
  s.dir_ = std::filesystem::absolute(dir) / run_id;
  std::error_code ec;
  std::filesystem::create_directories(s.dir_, ec);
  if (ec)
    return std::unexpected(
        fmt::format("cannot create canary dir {}: {}", s.dir_.string(), ec.message()));
  s.lock_fd_ = open((s.dir_ / ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (s.lock_fd_ < 0 || flock(s.lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return std::unexpected(fmt::format("cannot lock {}", (s.dir_ / ".lock").string()));
  }
  // Values carry no provider's token format: nothing here is ever printed, and a value that
  // looked like a real key would set off secret scanners on any accidental path.
  s.env_.emplace_back("SANDPROBE_CANARY_API_TOKEN", "spk_" + RandomHex(16));
  for (std::string_view name : kRealisticEnvNames)
    s.env_.emplace_back(std::string(name), "spk_" + RandomHex(20));
  s.token_value_ = "sptok_" + RandomHex(24);
  s.token_file_ = s.dir_ / "token";
  {
    std::ofstream out(s.token_file_, std::ios::binary | std::ios::trunc);
    out << s.token_value_;
    if (!out) return std::unexpected(fmt::format("cannot write {}", s.token_file_.string()));
  }
  std::filesystem::permissions(
      s.token_file_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write, ec);
  return s;
}

PlantedSecrets::PlantedSecrets(PlantedSecrets&& o) noexcept
    : dir_(std::move(o.dir_)),
      token_file_(std::move(o.token_file_)),
      env_(std::move(o.env_)),
      token_value_(std::move(o.token_value_)),
      lock_fd_(o.lock_fd_) {
  o.dir_.clear();
  o.lock_fd_ = -1;
}

PlantedSecrets::~PlantedSecrets() { Remove(); }

void PlantedSecrets::Remove() {
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
  if (lock_fd_ >= 0) {
    close(lock_fd_);  // releases the flock
    lock_fd_ = -1;
  }
}

bool RunFolderInUse(const std::filesystem::path& run_dir) {
  const int fd = open((run_dir / ".lock").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;  // no lock file: not a live run's folder
  const bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  return held;
}

std::vector<std::pair<std::string, std::string>> PlantedSecrets::Env() const { return env_; }

std::vector<std::string> PlantedSecrets::Values() const {
  std::vector<std::string> values;
  for (const auto& [name, value] : env_) values.push_back(value);
  values.push_back(token_value_);
  return values;
}

std::map<std::string, std::string> PlantedSecrets::Substitutions() const {
  std::string set;
  for (const auto& [name, value] : env_)
    set += fmt::format("{}{}={}", set.empty() ? "" : ",", name, Sha256Hex(value));
  return {{"canary.env_name", env_.front().first},
          {"canary.env_sha256", Sha256Hex(env_.front().second)},
          {"canary.env_set", set},
          {"canary.token_file", token_file_.string()},
          {"canary.token_sha256", Sha256Hex(token_value_)}};
}

}  // namespace sandprobe::runner
