// A run's session: its identity (run id, nonce), the canary secrets planted for it, the canary
// listeners, and the "{name}" placeholders suites fill from them. Closing it (Close() or the
// destructor, so on every exit path of runner::Run) stops the canaries and removes the planted
// secrets.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "canary/canary.h"
#include "core/observation.h"
#include "runner/host_canaries.h"
#include "runner/run.h"
#include "runner/secrets.h"

namespace sandprobe::runner {

class Session {
 public:
  // Draws the run id ("sp-<UTC yyyymmddThhmmssZ>-<6 hex>") and a 16-hex nonce, plants the canary
  // secrets under `canary_dir`/<run id> and starts the canaries on `canary_bind` (an IPv4
  // address), the DNS canary on `canary_dns_port` (UDP and TCP; 0: kernel-chosen) and the IPv6
  // HTTP canary on `canary_bind6`: "" for ::1 when the host has it (else the run goes on
  // without, and the note says why), "none" for no IPv6 canary, or an address that must bind.
  // The HTTP canaries serve CloudCredential(nonce) on the metadata credential paths. Errors:
  // RunError naming what failed, with a hint (--canary-dir, --canary-bind, --canary-bind6);
  // nothing is left behind.
  static std::expected<std::unique_ptr<Session>, RunError> Open(
      const std::filesystem::path& canary_dir, const std::string& canary_bind,
      uint16_t canary_dns_port = 0, const std::string& canary_bind6 = "");
  ~Session();  // Close()
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& run_id() const { return run_id_; }
  const std::string& nonce() const { return nonce_; }
  // The run's canary folder (absolute), locked while the run lives (PlantedSecrets::folder).
  std::string run_folder() const { return secrets_.folder().string(); }
  // The first 12 hex characters of sha256(nonce): what reports carry instead of the nonce.
  std::string nonce_hash() const;
  // Every placeholder of kPlaceholders (plan.h) -> its value for this run.
  const std::map<std::string, std::string>& substitutions() const { return subs_; }
  // The planted environment, {name, value} (drivers::Invocation::extra_env); the first entry is
  // the canary variable a probe's `canary_name` parameter names.
  std::vector<std::pair<std::string, std::string>> Env() const { return secrets_.Env(); }
  // The keyring canary for the session keyring of each launch (drivers::Invocation::session_keys).
  std::vector<std::pair<std::string, std::string>> SessionKeys() const {
    return keys_.SessionKeys();
  }
  // The planted descriptor canaries (drivers::Invocation::planted_fds); the local baseline alone
  // hands them on.
  std::vector<int> PlantedFds() const { return fds_.fds(); }
  // True when the unix socket canaries accept a connection now (canary::CanarySet::UnixListening).
  bool UnixCanariesListening() const { return canaries_->UnixListening(); }
  // The planted values, the canary cloud credential, the keyring canary's payload and the arms'
  // given secrets, for core::RedactSecrets.
  std::vector<std::string> SecretValues() const;
  // The secrets the arms' own configurations give their sandboxes (drivers::Driver::
  // GivenSecrets), {name, value}: fills canary.env_given ("NAME=<hex sha256>", comma-separated,
  // sorted, one entry per distinct pair; "" when none) and adds the values to SecretValues().
  // Call once, before any probe runs (not thread-safe against readers).
  void SetGivenSecrets(std::vector<std::pair<std::string, std::string>> given);
  // Canary hits carrying `invocation` (readable after Close()).
  std::vector<core::CanaryHit> HitsFor(const std::string& invocation) const;
  size_t dropped_hits() const { return canaries_->dropped_hits(); }
  // The run note naming where the canaries listen.
  std::string CanaryNote() const;
  // Idempotent: stops the canaries (no port listens afterwards), removes the planted secrets.
  void Close();

 private:
  Session(std::string run_id, std::string nonce, std::string bind, PlantedSecrets secrets,
          PlantedKeys keys, std::unique_ptr<canary::CanarySet> canaries);

  std::string run_id_, nonce_, bind_;
  PlantedSecrets secrets_;
  PlantedKeys keys_;
  PlantedDescriptors fds_;
  std::unique_ptr<canary::CanarySet> canaries_;
  std::string unix_note_;  // why there is no unix socket canary file, "" when there is
  std::map<std::string, std::string> subs_;
  std::vector<std::pair<std::string, std::string>> given_;  // SetGivenSecrets
};

}  // namespace sandprobe::runner
