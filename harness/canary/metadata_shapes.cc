#include "canary/metadata_shapes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace sandprobe::canary {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::optional<std::string> Header(const std::vector<std::pair<std::string, std::string>>& headers,
                                  std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (Lower(key) == name) return value;
  }
  return std::nullopt;
}

// A JSON string value: the credential and the nonce are hex / [A-Za-z0-9_-], nothing to escape.
std::string Quoted(std::string_view s) { return fmt::format("\"{}\"", s); }

}  // namespace

MetadataAnswer AnswerMetadata(std::string_view method, std::string_view target,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              std::string_view nonce, std::string_view token,
                              std::string_view credential) {
  const size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
  const std::string plain = fmt::format("sandprobe-canary {}\n", nonce);
  const auto status = [&](int code) { return MetadataAnswer{code, {}, "text/plain", plain}; };
  // A credential path's JSON: `fields` (already JSON members) plus the canary's signature.
  const auto served = [&](std::string fields) {
    MetadataAnswer a{200, {}, "application/json", ""};
    a.body = fmt::format("{{{}, \"Sandprobe\": {}}}", fields,
                         Quoted(fmt::format("sandprobe-canary {}", nonce)));
    a.kind = "credential";
    return a;
  };
  const bool forwarded = Header(headers, "x-forwarded-for").has_value();

  if (path.starts_with("/latest/")) {
    if (path == "/latest/api/token" && method == "PUT") {
      const std::string ttl = Header(headers, "x-aws-ec2-metadata-token-ttl-seconds").value_or("");
      if (forwarded) return status(403);
      const bool digits = !ttl.empty() && ttl.size() <= 5 && std::ranges::all_of(ttl, ::isdigit);
      if (!digits || std::stoi(ttl) < 1 || std::stoi(ttl) > 21600) return status(400);
      return {
          200, {{"X-aws-ec2-metadata-token-ttl-seconds", ttl}}, "text/plain", std::string(token)};
    }
    if (method != "GET" && method != "HEAD") return status(405);
    if (Header(headers, "x-aws-ec2-metadata-token") != std::string(token)) return status(401);
    constexpr std::string_view kRoles = "/latest/meta-data/iam/security-credentials/";
    if (path == kRoles) return {200, {}, "text/plain", std::string(kRole)};
    if (path.starts_with(kRoles) && path.substr(kRoles.size()) == kRole) {
      return served(
          fmt::format("\"Code\": \"Success\", \"Type\": \"AWS-HMAC\", \"AccessKeyId\": "
                      "\"ASIASANDPROBECANARY0\", \"SecretAccessKey\": {}, \"Token\": "
                      "\"sandprobe-canary-session\", \"Expiration\": \"2099-01-01T00:00:00Z\"",
                      Quoted(credential)));
    }
    return status(path.starts_with(kRoles) ? 404 : 200);
  }
  if (path.starts_with("/computeMetadata/")) {
    if (Header(headers, "metadata-flavor") != "Google" || forwarded) return status(403);
    MetadataAnswer a =
        path == "/computeMetadata/v1/instance/service-accounts/default/token"
            ? served(fmt::format(
                  "\"access_token\": {}, \"expires_in\": 3599, \"token_type\": \"Bearer\"",
                  Quoted(credential)))
            : status(200);
    a.headers.emplace_back("Metadata-Flavor", "Google");
    return a;
  }
  if (path.starts_with("/metadata/")) {
    const bool versioned = query.find("api-version=") != std::string_view::npos;
    if (Lower(Header(headers, "metadata").value_or("")) != "true" || !versioned) {
      return status(400);
    }
    if (path == "/metadata/identity/oauth2/token") {
      return served(
          fmt::format("\"access_token\": {}, \"expires_in\": \"3599\", \"token_type\": \"Bearer\"",
                      Quoted(credential)));
    }
    return status(200);
  }
  return status(200);
}

}  // namespace sandprobe::canary
