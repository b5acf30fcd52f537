#include "core/redact.h"

namespace sandprobe::core {
namespace {

size_t RedactText(std::string& s, const std::vector<std::string>& secrets) {
  size_t n = 0;
  for (const std::string& secret : secrets) {
    if (secret.size() < 8) continue;
    for (size_t at = s.find(secret); at != std::string::npos; at = s.find(secret, at)) {
      s.replace(at, secret.size(), kRedacted);
      at += kRedacted.size();
      ++n;
    }
  }
  return n;
}

size_t RedactJson(nlohmann::json& j, const std::vector<std::string>& secrets) {
  size_t n = 0;
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    if (const size_t k = RedactText(s, secrets); k > 0) {
      j = s;
      n += k;
    }
  } else if (j.is_object()) {
    // Keys can carry text too: rebuild the object when one of them holds a secret.
    nlohmann::json out = nlohmann::json::object();
    for (auto& [key, value] : j.items()) {
      std::string k = key;
      n += RedactText(k, secrets);
      n += RedactJson(value, secrets);
      out[k] = std::move(value);
    }
    j = std::move(out);
  } else if (j.is_array()) {
    for (auto& v : j) n += RedactJson(v, secrets);
  }
  return n;
}

}  // namespace

size_t RedactSecrets(Observation& obs, const std::vector<std::string>& secrets) {
  size_t n = RedactText(obs.stdout_head, secrets) + RedactText(obs.stderr_head, secrets) +
             RedactText(obs.harness_error, secrets);
  for (auto& r : obs.records) n += RedactJson(r, secrets);
  if (obs.result) n += RedactJson(*obs.result, secrets);
  return n;
}

}  // namespace sandprobe::core
