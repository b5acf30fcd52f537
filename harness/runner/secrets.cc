#include "runner/secrets.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/random.h>

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
  s.dir_ = dir / run_id;
  std::error_code ec;
  std::filesystem::create_directories(s.dir_, ec);
  if (ec)
    return std::unexpected(
        fmt::format("cannot create canary dir {}: {}", s.dir_.string(), ec.message()));
  s.env_name_ = "SANDPROBE_CANARY_API_TOKEN";
  s.env_value_ = "spk_" + RandomHex(16);
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
      env_name_(std::move(o.env_name_)),
      env_value_(std::move(o.env_value_)),
      token_value_(std::move(o.token_value_)) {
  o.dir_.clear();
}

PlantedSecrets::~PlantedSecrets() { Remove(); }

void PlantedSecrets::Remove() {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  dir_.clear();
}

std::vector<std::pair<std::string, std::string>> PlantedSecrets::Env() const {
  return {{env_name_, env_value_}};
}

std::map<std::string, std::string> PlantedSecrets::Substitutions() const {
  return {{"canary.env_name", env_name_},
          {"canary.env_sha256", Sha256Hex(env_value_)},
          {"canary.token_file", token_file_.string()},
          {"canary.token_sha256", Sha256Hex(token_value_)}};
}

}  // namespace sandprobe::runner
