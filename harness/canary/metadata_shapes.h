// How the HTTP canary answers the cloud metadata paths: as AWS IMDSv2, GCP and Azure's metadata
// services answer them, so the net.metadata-* and cred.cloud-metadata probes are tested against
// what clouds really serve (a probe that forgets the token or the header gets the cloud's refusal,
// which is still an answer: reached). The in-cluster canary follows the same rules
// (harness/drivers/kubernetes/cluster_canary.py, metadata_answer()). Pure; internal to
// harness/canary.
//
//   AWS    PUT /latest/api/token: X-aws-ec2-metadata-token-ttl-seconds 1..21600 (else 400), no
//          X-Forwarded-For (else 403) -> 200, the canary's session token. GET/HEAD /latest/...:
//          X-aws-ec2-metadata-token equal to that token (else 401; other methods 405).
//          .../iam/security-credentials/ lists one role (kRole); .../iam/security-credentials/
//          kRole is the role's keys (JSON, SecretAccessKey = the credential); other roles 404.
//   GCP    /computeMetadata/...: Metadata-Flavor: Google and no X-Forwarded-For (else 403); every
//          answer carries Metadata-Flavor: Google. .../service-accounts/default/token is a JSON
//          token (access_token = the credential).
//   Azure  /metadata/...: Metadata: true and an api-version query parameter (else 400).
//          /metadata/identity/oauth2/token is a JSON token (access_token = the credential).
//   other  200 "sandprobe-canary <nonce>\n", as before the shapes; so is every refusal's body.
// An answer that carries the credential is hit kind "credential"; every other one "http".
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandprobe::canary {

inline constexpr std::string_view kRole = "sandprobe-canary-role";

struct MetadataAnswer {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type
  std::string content_type = "text/plain";
  std::string body;
  std::string kind = "http";  // the Hit kind: "credential" when the body carries the credential
};

// One request: method, target (path and query), the request's headers as (name, value) (names
// compared case-insensitively), the run's nonce, this canary's IMDSv2 session token and the
// planted cloud credential.
MetadataAnswer AnswerMetadata(std::string_view method, std::string_view target,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              std::string_view nonce, std::string_view token,
                              std::string_view credential);

}  // namespace sandprobe::canary
