// AnswerMetadata as a table: each cloud's refusals (the request a careless probe would send) and
// answers, the credential only on the credential paths, and the rules the in-cluster canary's
// metadata_answer() follows too (harness/drivers/kubernetes/test_cluster_canary.py).
#include "canary/metadata_shapes.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace sandprobe::canary {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

MetadataAnswer Ask(std::string_view method, std::string_view target, const Headers& headers = {}) {
  return AnswerMetadata(method, target, headers, "n0nce", "tok3n", "s3cret-credential");
}

TEST(MetadataShapesTest, StatusTable) {
  const Headers token = {{"X-aws-ec2-metadata-token", "tok3n"}};
  const Headers flavor = {{"Metadata-Flavor", "Google"}};
  const Headers azure = {{"metadata", "True"}};
  const struct {
    std::string method, target;
    Headers headers;
    int status;
    std::string kind;
  } cases[] = {
      // AWS IMDSv2
      {"PUT",
       "/latest/api/token",
       {{"X-aws-ec2-metadata-token-ttl-seconds", "21600"}},
       200,
       "http"},
      {"PUT", "/latest/api/token", {{"x-aws-ec2-metadata-token-ttl-seconds", "60"}}, 200, "http"},
      {"PUT", "/latest/api/token", {}, 400, "http"},
      {"PUT", "/latest/api/token", {{"X-aws-ec2-metadata-token-ttl-seconds", "0"}}, 400, "http"},
      {"PUT",
       "/latest/api/token",
       {{"X-aws-ec2-metadata-token-ttl-seconds", "21601"}},
       400,
       "http"},
      {"PUT", "/latest/api/token", {{"X-aws-ec2-metadata-token-ttl-seconds", "6O"}}, 400, "http"},
      {"PUT",
       "/latest/api/token",
       {{"X-aws-ec2-metadata-token-ttl-seconds", "60"}, {"X-Forwarded-For", "1.2.3.4"}},
       403,
       "http"},
      {"GET", "/latest/meta-data/", {}, 401, "http"},
      {"GET", "/latest/meta-data/", {{"X-aws-ec2-metadata-token", "other"}}, 401, "http"},
      {"GET", "/latest/meta-data/", token, 200, "http"},
      {"POST", "/latest/meta-data/", token, 405, "http"},
      {"GET", "/latest/meta-data/iam/security-credentials/", token, 200, "http"},
      {"GET", "/latest/meta-data/iam/security-credentials/sandprobe-canary-role", token, 200,
       "credential"},
      {"GET", "/latest/meta-data/iam/security-credentials/sandprobe-canary-role", {}, 401, "http"},
      {"GET", "/latest/meta-data/iam/security-credentials/other", token, 404, "http"},
      {"GET", "/latest/meta-data/ram/security-credentials/", token, 200, "http"},
      // GCP
      {"GET", "/computeMetadata/v1/instance/", {}, 403, "http"},
      {"GET", "/computeMetadata/v1/instance/", {{"Metadata-Flavor", "google"}}, 403, "http"},
      {"GET", "/computeMetadata/v1/instance/", flavor, 200, "http"},
      {"GET", "/computeMetadata/v1/instance/service-accounts/default/token", flavor, 200,
       "credential"},
      {"GET",
       "/computeMetadata/v1/instance/service-accounts/default/token",
       {{"Metadata-Flavor", "Google"}, {"X-Forwarded-For", "1.2.3.4"}},
       403,
       "http"},
      // Azure
      {"GET", "/metadata/instance?api-version=2021-02-01", {}, 400, "http"},
      {"GET", "/metadata/instance", azure, 400, "http"},
      {"GET", "/metadata/instance?api-version=2021-02-01", azure, 200, "http"},
      {"GET", "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=r", azure, 200,
       "credential"},
      // Anything else: the plain canary
      {"GET", "/", {}, 200, "http"},
      {"DELETE", "/version", {}, 200, "http"},
  };
  for (const auto& c : cases) {
    const MetadataAnswer a = Ask(c.method, c.target, c.headers);
    EXPECT_EQ(a.status, c.status) << c.method << " " << c.target;
    EXPECT_EQ(a.kind, c.kind) << c.method << " " << c.target;
    const bool served = a.body.find("s3cret-credential") != std::string::npos;
    EXPECT_EQ(served, c.kind == "credential") << c.method << " " << c.target;
    if (a.status != 200) {
      EXPECT_EQ(a.body, "sandprobe-canary n0nce\n");
    }
  }
}

TEST(MetadataShapesTest, AnswersCarryWhatClientsRead) {
  const MetadataAnswer put =
      Ask("PUT", "/latest/api/token", {{"X-aws-ec2-metadata-token-ttl-seconds", "60"}});
  EXPECT_EQ(put.body, "tok3n");
  EXPECT_EQ(put.headers, (Headers{{"X-aws-ec2-metadata-token-ttl-seconds", "60"}}));
  EXPECT_EQ(Ask("GET", "/latest/meta-data/iam/security-credentials/",
                {{"X-aws-ec2-metadata-token", "tok3n"}})
                .body,
            "sandprobe-canary-role");
  const MetadataAnswer keys = Ask("GET",
                                  "/latest/meta-data/iam/security-credentials/"
                                  "sandprobe-canary-role",
                                  {{"X-aws-ec2-metadata-token", "tok3n"}});
  EXPECT_EQ(keys.content_type, "application/json");
  EXPECT_NE(keys.body.find("\"SecretAccessKey\": \"s3cret-credential\""), std::string::npos);
  EXPECT_NE(keys.body.find("\"Sandprobe\": \"sandprobe-canary n0nce\""), std::string::npos);
  const MetadataAnswer gcp =
      Ask("GET", "/computeMetadata/v1/instance/service-accounts/default/token",
          {{"metadata-flavor", "Google"}});
  EXPECT_NE(gcp.body.find("\"access_token\": \"s3cret-credential\""), std::string::npos);
  EXPECT_EQ(gcp.headers, (Headers{{"Metadata-Flavor", "Google"}}));
  EXPECT_EQ(Ask("GET", "/computeMetadata/v1/instance/", {{"Metadata-Flavor", "Google"}}).headers,
            (Headers{{"Metadata-Flavor", "Google"}}));
  EXPECT_TRUE(Ask("GET", "/computeMetadata/v1/", {}).headers.empty());  // a refusal: no flavor
}

}  // namespace
}  // namespace sandprobe::canary
