// Canaries the harness plants in kernel objects of the host rather than in files or listeners:
// a key in the user keyring (cred.keyring; its twin in each launch's session keyring is planted
// by process::RunProcess) and open descriptors on the run's canary folder and token file
// (fs.inherited-fds). Values are random per run and never printed: reports carry key
// descriptions, lengths and sha256 prefixes only (docs/probes.md, cred.keyring and
// fs.inherited-fds).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sandprobe::runner {

// The keyring canary: one random payload, planted under two descriptions,
// "sandprobe:<run id>:user" in the caller's user keyring (here, for the run's life, with a
// kernel timeout as a backstop after a SIGKILL) and "sandprobe:<run id>:session" in the new
// session keyring of every process the harness launches a sandbox from (SessionKeys()).
class PlantedKeys {
 public:
  // Never fails: when the kernel refuses (no keyrings, a seccomp filter around the harness),
  // error() says why and the placeholders are empty, so the probe has no canary (unknown).
  static PlantedKeys Plant(const std::string& run_id);
  PlantedKeys(PlantedKeys&&) noexcept;
  PlantedKeys& operator=(PlantedKeys&&) = delete;
  ~PlantedKeys();

  // {description, payload} for process::ProcessSpec::session_keys; empty without a canary.
  std::vector<std::pair<std::string, std::string>> SessionKeys() const;
  // canary.key_user, canary.key_session (descriptions), canary.key_sha256 ("" without).
  std::map<std::string, std::string> Substitutions() const;
  std::string value() const { return value_; }
  const std::string& error() const { return error_; }
  void Remove();  // invalidates the user keyring key; idempotent

 private:
  PlantedKeys() = default;
  std::string user_description_, session_description_, value_, error_;
  long user_key_ = -1;  // the key's serial in the user keyring, -1 = none
};

// Invalidates the user keyring canary a run left behind ("sandprobe:<run id>:user", e.g. after a
// SIGKILL; its kernel timeout would end it within 6 h): true when there was one. For `sandprobe
// cleanup`, which calls it only for runs whose folder is not held by a live run.
bool RemoveLeftoverUserKey(const std::string& run_id);

// Read-only descriptors (close-on-exec in the harness) on the run's canary folder (a directory
// outside every sandbox's root) and on the planted token file: what an agent's subprocess that
// keeps its parent's descriptors receives. Only the local baseline hands them on.
class PlantedDescriptors {
 public:
  PlantedDescriptors() = default;
  PlantedDescriptors(const std::filesystem::path& folder, const std::filesystem::path& file);
  PlantedDescriptors(PlantedDescriptors&&) noexcept;
  PlantedDescriptors& operator=(PlantedDescriptors&&) = delete;
  ~PlantedDescriptors() { Close(); }

  // The open descriptors, directory first; empty when opening failed.
  std::vector<int> fds() const;
  void Close();  // idempotent

 private:
  int folder_fd_ = -1, file_fd_ = -1;
};

}  // namespace sandprobe::runner
