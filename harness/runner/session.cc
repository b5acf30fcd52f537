#include "runner/session.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/utsname.h>

#include <algorithm>
#include <ctime>

namespace sandprobe::runner {
namespace {

// "127.0.0.1:8080" -> {"127.0.0.1", "8080"}.
std::pair<std::string, std::string> SplitHostPort(const std::string& hostport) {
  const size_t colon = hostport.rfind(':');
  return {hostport.substr(0, colon), hostport.substr(colon + 1)};
}

}  // namespace

std::expected<std::unique_ptr<Session>, RunError> Session::Open(
    const std::filesystem::path& canary_dir, const std::string& canary_bind,
    uint16_t canary_dns_port, const std::string& canary_bind6) {
  std::string run_id =
      fmt::format("sp-{:%Y%m%dT%H%M%SZ}-{}", fmt::gmtime(std::time(nullptr)), RandomHex(3));
  std::string nonce = RandomHex(8);
  auto secrets = PlantedSecrets::Plant(canary_dir, run_id);
  if (!secrets) return std::unexpected(RunError{secrets.error(), "pass --canary-dir DIR"});
  canary::CanaryOptions options;
  options.dns_port = canary_dns_port;
  options.cloud_credential = CloudCredential(nonce);
  options.http6_bind = canary_bind6.empty() ? "::1" : canary_bind6 == "none" ? "" : canary_bind6;
  options.http6_optional = canary_bind6.empty();
  // The abstract unix canary is named with the nonce (net.abstract-unix derives the same name);
  // the socket file lives in the run's folder, when its path fits a sockaddr_un.
  options.abstract_unix_name = "sandprobe-" + nonce;
  if (const std::string path = (secrets->folder() / "unix.sock").string(); path.size() <= 107) {
    options.unix_socket_path = path;
  }
  auto canaries = canary::CanarySet::Start(canary_bind, nonce, options);
  if (!canaries) {
    return std::unexpected(
        RunError{"cannot start canaries: " + canaries.error(),
                 "pass --canary-bind with a loopback address (and a free --canary-dns-port; "
                 "--canary-bind6: an IPv6 one, or none)"});
  }
  PlantedKeys keys = PlantedKeys::Plant(run_id);
  return std::unique_ptr<Session>(new Session(std::move(run_id), std::move(nonce), canary_bind,
                                              std::move(*secrets), std::move(keys),
                                              std::move(*canaries)));
}

Session::Session(std::string run_id, std::string nonce, std::string bind, PlantedSecrets secrets,
                 PlantedKeys keys, std::unique_ptr<canary::CanarySet> canaries)
    : run_id_(std::move(run_id)),
      nonce_(std::move(nonce)),
      bind_(std::move(bind)),
      secrets_(std::move(secrets)),
      keys_(std::move(keys)),
      fds_(secrets_.folder(), secrets_.token_file()),
      canaries_(std::move(canaries)),
      subs_(secrets_.Substitutions()) {
  subs_.merge(keys_.Substitutions());
  subs_["canary.unix_socket"] = canaries_->unix_socket_path();  // "" when the path was too long
  if (canaries_->unix_socket_path().empty()) {
    unix_note_ =
        "no unix socket canary file: the run folder's path is longer than a unix socket "
        "name may be (107 bytes); pass a shorter --canary-dir";
  }
  subs_["canary.http"] = canaries_->http_address();
  subs_["canary.tcp"] = canaries_->tcp_address();
  subs_["canary.dns"] = canaries_->dns_address();
  subs_["canary.udp"] = canaries_->udp_address();
  subs_["canary.docker"] = canaries_->docker_address();
  subs_["canary.host"] = SplitHostPort(canaries_->http_address()).first;
  subs_["canary.http_port"] = SplitHostPort(canaries_->http_address()).second;
  subs_["canary.tcp_port"] = SplitHostPort(canaries_->tcp_address()).second;
  subs_["canary.dns_port"] = SplitHostPort(canaries_->dns_address()).second;
  subs_["canary.udp_port"] = SplitHostPort(canaries_->udp_address()).second;
  subs_["canary.docker_port"] = SplitHostPort(canaries_->docker_address()).second;
  subs_["canary.http6"] = canaries_->http6_address();  // "" without an IPv6 canary
  subs_["canary.icmp"] = canaries_->icmp_address();    // "" without CAP_NET_RAW
  subs_["canary.loopback_tcp"] = canaries_->loopback_tcp_address();
  subs_["canary.loopback_port"] = SplitHostPort(canaries_->loopback_tcp_address()).second;
  subs_["canary.cloud_sha256"] = Sha256Hex(CloudCredential(nonce_));
  subs_["canary.env_given"] = "";  // SetGivenSecrets, once the arms are open
  struct utsname host {};
  uname(&host);
  subs_["host.kernel_release"] = host.release;  // kernel.boundary compares against it
}

Session::~Session() { Close(); }

std::string Session::nonce_hash() const { return Sha256Hex(nonce_).substr(0, 12); }

std::vector<std::string> Session::SecretValues() const {
  std::vector<std::string> values = secrets_.Values();
  values.push_back(CloudCredential(nonce_));
  for (const auto& [name, value] : given_) values.push_back(value);
  if (!keys_.value().empty()) values.push_back(keys_.value());
  return values;
}

void Session::SetGivenSecrets(std::vector<std::pair<std::string, std::string>> given) {
  std::ranges::sort(given);
  const auto [first, last] = std::ranges::unique(given);
  given.erase(first, last);
  std::string set;
  for (const auto& [name, value] : given)
    set += fmt::format("{}{}={}", set.empty() ? "" : ",", name, Sha256Hex(value));
  subs_["canary.env_given"] = set;
  given_ = std::move(given);
}

std::vector<core::CanaryHit> Session::HitsFor(const std::string& invocation) const {
  std::vector<core::CanaryHit> out;
  for (const canary::Hit& h : canaries_->HitsFor(invocation)) {
    out.push_back({h.kind, h.peer, h.detail, h.unix_ms});
  }
  return out;
}

std::string Session::CanaryNote() const {
  std::string v6 = subs_.at("canary.http6");
  if (v6.empty()) {
    v6 = canaries_->http6_error().empty() ? "no IPv6 canary"
                                          : "no IPv6 canary (" + canaries_->http6_error() +
                                                "): rows aimed at {canary.http6} have no target";
  } else {
    v6 = "http6 " + v6;
  }
  const std::string icmp = canaries_->icmp_address().empty()
                               ? "no icmp canary (" + canaries_->icmp_error() +
                                     "): rows aimed at {canary.icmp} have no target"
                               : "icmp " + canaries_->icmp_address();
  std::string note = fmt::format(
      "canaries listen on {} (http {}, tcp {}, dns {}, docker api {}; {}; {}; loopback tcp {}; "
      "unix sockets: an abstract name and {})",
      bind_, subs_.at("canary.http"), subs_.at("canary.tcp"), subs_.at("canary.dns"),
      subs_.at("canary.docker"), v6, icmp, subs_.at("canary.loopback_tcp"),
      unix_note_.empty() ? subs_.at("canary.unix_socket") : unix_note_);
  if (!keys_.error().empty()) {
    note += fmt::format("; no keyring canary ({}): cred.keyring has no target", keys_.error());
  }
  return note;
}

void Session::Close() {
  canaries_->Stop();
  fds_.Close();
  keys_.Remove();
  secrets_.Remove();
}

}  // namespace sandprobe::runner
