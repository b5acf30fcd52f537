#include "runner/host_canaries.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/keyctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runner/secrets.h"

namespace sandprobe::runner {
namespace {

// Longer than any run; a key a SIGKILLed run left behind expires by itself.
constexpr long kUserKeyTimeoutS = 6 * 3600;

}  // namespace

PlantedKeys PlantedKeys::Plant(const std::string& run_id) {
  PlantedKeys k;
  k.user_description_ = fmt::format("sandprobe:{}:user", run_id);
  k.session_description_ = fmt::format("sandprobe:{}:session", run_id);
  const std::string value = "spkey_" + RandomHex(16);
  const long serial = syscall(SYS_add_key, "user", k.user_description_.c_str(), value.data(),
                              value.size(), KEY_SPEC_USER_KEYRING);
  if (serial < 0) {
    k.error_ = fmt::format("add_key to the user keyring: {}", std::strerror(errno));
    return k;
  }
  k.user_key_ = serial;
  k.value_ = value;
  syscall(SYS_keyctl, KEYCTL_SET_TIMEOUT, serial, kUserKeyTimeoutS);
  return k;
}

bool RemoveLeftoverUserKey(const std::string& run_id) {
  const std::string description = fmt::format("sandprobe:{}:user", run_id);
  const long serial =
      syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, "user", description.c_str(), 0);
  return serial > 0 && syscall(SYS_keyctl, KEYCTL_INVALIDATE, serial) == 0;
}

PlantedKeys::PlantedKeys(PlantedKeys&& o) noexcept
    : user_description_(std::move(o.user_description_)),
      session_description_(std::move(o.session_description_)),
      value_(std::move(o.value_)),
      error_(std::move(o.error_)),
      user_key_(o.user_key_) {
  o.user_key_ = -1;
}

PlantedKeys::~PlantedKeys() { Remove(); }

void PlantedKeys::Remove() {
  if (user_key_ < 0) return;
  if (syscall(SYS_keyctl, KEYCTL_INVALIDATE, user_key_) != 0) {
    syscall(SYS_keyctl, KEYCTL_UNLINK, user_key_, KEY_SPEC_USER_KEYRING);
  }
  user_key_ = -1;
}

std::vector<std::pair<std::string, std::string>> PlantedKeys::SessionKeys() const {
  if (value_.empty()) return {};
  return {{session_description_, value_}};
}

std::map<std::string, std::string> PlantedKeys::Substitutions() const {
  const bool planted = !value_.empty();
  return {{"canary.key_user", planted ? user_description_ : ""},
          {"canary.key_session", planted ? session_description_ : ""},
          {"canary.key_sha256", planted ? Sha256Hex(value_) : ""}};
}

PlantedDescriptors::PlantedDescriptors(const std::filesystem::path& folder,
                                       const std::filesystem::path& file)
    : folder_fd_(open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)),
      file_fd_(open(file.c_str(), O_RDONLY | O_CLOEXEC)) {}

PlantedDescriptors::PlantedDescriptors(PlantedDescriptors&& o) noexcept
    : folder_fd_(o.folder_fd_), file_fd_(o.file_fd_) {
  o.folder_fd_ = o.file_fd_ = -1;
}

std::vector<int> PlantedDescriptors::fds() const {
  if (folder_fd_ < 0 || file_fd_ < 0) return {};
  return {folder_fd_, file_fd_};
}

void PlantedDescriptors::Close() {
  for (int* fd : {&folder_fd_, &file_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

}  // namespace sandprobe::runner
