#include "core/params.h"

#include <fmt/format.h>

#include <cmath>

namespace sandprobe::core {
namespace {

std::expected<void, std::string> Substitute(nlohmann::json& v,
                                            const std::map<std::string, std::string>& subs) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
      const size_t open = s.find('{', i);
      if (open == std::string::npos) break;
      const size_t close = s.find('}', open);
      if (close == std::string::npos) break;
      const std::string key = s.substr(open + 1, close - open - 1);
      auto it = subs.find(key);
      if (it == subs.end()) {
        return std::unexpected(fmt::format("unknown placeholder '{{{}}}' in '{}'", key, s));
      }
      out += s.substr(i, open - i) + it->second;
      i = close + 1;
    }
    out += s.substr(i);
    v = out;
  } else if (v.is_array() || v.is_object()) {
    for (auto& child : v) {
      if (auto r = Substitute(child, subs); !r) return r;
    }
  }
  return {};
}

}  // namespace

bool IsClaimLimit(std::string_view name) { return name == "noexec" || name == "seccomp"; }

std::optional<nlohmann::json> ClaimValue(const Limits& limits, std::string_view name) {
  if (name == "noexec" && limits.noexec) {
    if (limits.noexec->every_writable) return nlohmann::json(true);
    return nlohmann::json(limits.noexec->paths);
  }
  if (name == "seccomp" && limits.seccomp) return nlohmann::json(ToString(*limits.seccomp));
  return std::nullopt;
}

std::string UnclaimedReason(const ProbeDescriptor& probe, const nlohmann::json& params) {
  if (probe.claim.empty()) return "";
  const auto spec = probe.params.find(probe.claim);
  const std::string limit = spec == probe.params.end() || spec->second.from_limit.empty()
                                ? probe.claim
                                : spec->second.from_limit;
  const nlohmann::json* v =
      params.is_object() && params.contains(probe.claim) ? &params.at(probe.claim) : nullptr;
  const bool claimed = v != nullptr && ((v->is_boolean() && v->get<bool>()) ||
                                        (v->is_string() && !v->get<std::string>().empty()) ||
                                        (v->is_array() && !v->empty()));
  return claimed ? "" : fmt::format("the candidate claims no limits.{}", limit);
}

std::expected<nlohmann::json, std::string> ResolveParams(
    const ProbeDescriptor& probe, const nlohmann::json& overrides, const Limits& limits,
    const std::map<std::string, std::string>& substitutions) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [name, spec] : probe.params) {
    params[name] = spec.default_value;
    if (IsClaimLimit(spec.from_limit)) {
      if (auto claim = ClaimValue(limits, spec.from_limit)) params[name] = *claim;
    } else if (!spec.from_limit.empty()) {
      if (auto limit = limits.Get(spec.from_limit, spec.unit)) {
        params[name] = static_cast<int64_t>(std::ceil(*limit * spec.factor));
      }
    }
  }
  if (overrides.is_object()) {
    for (const auto& [name, value] : overrides.items()) {
      const auto spec = probe.params.find(name);
      if (spec == probe.params.end()) {
        return std::unexpected(fmt::format("probe {} has no parameter '{}'", probe.id, name));
      }
      // An override keeps the default's type; numbers (sizes, counts, seconds) are not negative.
      const nlohmann::json& def = spec->second.default_value;
      const bool same_type =
          (def.is_number() && value.is_number()) || (def.is_string() && value.is_string()) ||
          (def.is_boolean() && value.is_boolean()) || (def.is_array() && value.is_array()) ||
          (def.is_object() && value.is_object()) || def.is_null();
      if (!same_type) {
        return std::unexpected(
            fmt::format("probe {} parameter '{}' must be a {} like its default {}", probe.id, name,
                        def.type_name(), def.dump()));
      }
      if (value.is_number() && value.get<double>() < 0) {
        return std::unexpected(
            fmt::format("probe {} parameter '{}' must not be negative", probe.id, name));
      }
      params[name] = value;
    }
  }
  if (auto r = Substitute(params, substitutions); !r) {
    return std::unexpected(fmt::format("probe {}: {}", probe.id, r.error()));
  }
  return params;
}

std::string ParamsKey(const nlohmann::json& params) {
  // nlohmann::json objects are std::map-ordered, so dump() is canonical.
  return params.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

std::string Base64Encode(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s : {18, 12, 6, 0}) out += kAlphabet[(n >> s) & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t n = uint8_t(in[i]) << 16;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

std::expected<std::string, std::string> BuildScript(const ProbeDescriptor& probe,
                                                    const std::string& preamble,
                                                    const nlohmann::json& params,
                                                    const std::string& nonce,
                                                    const std::string& invocation) {
  const nlohmann::json payload = {
      {"probe", probe.id}, {"nonce", nonce}, {"invocation", invocation}, {"params", params}};
  std::string script = fmt::format("# sandprobe probe {}\n_SANDPROBE = \"{}\"\n", probe.id,
                                   Base64Encode(payload.dump()));
  script += preamble;
  if (!script.ends_with('\n')) script += '\n';
  script += probe.script;
  if (script.size() > kMaxScriptBytes) {
    return std::unexpected(
        fmt::format("probe {}: deployed script is {} bytes, over the 64 KiB cap ({} bytes)",
                    probe.id, script.size(), kMaxScriptBytes));
  }
  return script;
}

}  // namespace sandprobe::core
