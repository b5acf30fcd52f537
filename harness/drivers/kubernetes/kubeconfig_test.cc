// Kubeconfig and in-cluster parsing: every field the driver reads, and errors that name the file
// and the field without printing key or token material.
#include "drivers/kubernetes/kubeconfig.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "core/params.h"

namespace sandprobe::drivers::kube {
namespace {

namespace fs = std::filesystem;

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("kd-kubeconfig-{}-{}", getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  // A kubeconfig with two contexts; `user` is the users[0].user body.
  std::string Config(const std::string& cluster, const std::string& user,
                     const std::string& current = "main") {
    return Write("config", fmt::format(R"(apiVersion: v1
kind: Config
current-context: {}
clusters:
- name: c1
  cluster:
{}
- name: c2
  cluster:
    server: https://10.0.0.2:6443/
contexts:
- name: main
  context: {{cluster: c1, user: u1, namespace: probes}}
- name: other
  context: {{cluster: c2, user: u1}}
users:
- name: u1
  user:
{}
)",
                                       current, cluster, user));
  }
  fs::path dir_;
};

const std::string kPemA = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";

TEST_F(KubeconfigTest, InlineDataAndToken) {
  const std::string path = Config(
      fmt::format("    server: https://127.0.0.1:6443\n    certificate-authority-data: {}",
                  core::Base64Encode(kPemA)),
      fmt::format("    client-certificate-data: {}\n    client-key-data: {}\n    token: abc\n",
                  core::Base64Encode("CERT"), core::Base64Encode("KEY")));
  auto c = LoadKubeconfig(path, "");
  ASSERT_TRUE(c.has_value()) << c.error();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, kPemA);
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_EQ(c->token, "abc");
  EXPECT_EQ(c->namespace_name, "probes");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  EXPECT_TRUE(c->warnings.empty());
  EXPECT_EQ(c->source, fmt::format("kubeconfig {}, context main", path));
}

TEST_F(KubeconfigTest, RelativeFilesResolveAgainstTheKubeconfigDirectory) {
  Write("pki/ca.crt", kPemA);
  Write("pki/client.crt", "CERTFILE");
  Write("pki/client.key", "KEYFILE");
  Write("pki/token", "tok-from-file\n");
  const std::string path =
      Config("    server: https://127.0.0.1:6443\n    certificate-authority: pki/ca.crt",
             "    client-certificate: pki/client.crt\n    client-key: " +
                 (dir_ / "pki/client.key").string() + "\n    tokenFile: pki/token\n");
  auto c = LoadKubeconfig(path, "");
  ASSERT_TRUE(c.has_value()) << c.error();
  EXPECT_EQ(c->ca_pem, kPemA);
  EXPECT_EQ(c->client_cert_pem, "CERTFILE");
  EXPECT_EQ(c->client_key_pem, "KEYFILE");
  EXPECT_EQ(c->token, "tok-from-file");  // trailing newline trimmed
}

TEST_F(KubeconfigTest, ExplicitContextAndInsecureWarning) {
  const std::string path = Config(
      "    server: https://127.0.0.1:6443\n    insecure-skip-tls-verify: true", "    token: abc\n");
  auto c = LoadKubeconfig(path, "");
  ASSERT_TRUE(c.has_value()) << c.error();
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_NE(c->warnings[0].find("clusters[0].cluster.insecure-skip-tls-verify"), std::string::npos);
  auto other = LoadKubeconfig(path, "other");
  ASSERT_TRUE(other.has_value()) << other.error();
  EXPECT_EQ(other->server, "https://10.0.0.2:6443");  // trailing slash dropped
  EXPECT_EQ(other->namespace_name, "");
  EXPECT_TRUE(other->warnings.empty());
}

TEST_F(KubeconfigTest, ErrorsNameTheFileAndTheFieldButNoSecret) {
  const std::string secret = "s3cr3t-token-value";
  const std::string path =
      Config("    server: https://127.0.0.1:6443", "    token: " + secret +
                                                       "\n    client-key: missing.key\n"
                                                       "    client-certificate: missing.crt\n");
  auto c = LoadKubeconfig(path, "");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().find(fmt::format("kubeconfig {}: users[0].user.client-certificate: file not "
                                       "found",
                                       path)),
            std::string::npos)
      << c.error();
  EXPECT_EQ(c.error().find(secret), std::string::npos);
}

TEST_F(KubeconfigTest, FieldErrors) {
  struct Case {
    std::string cluster, user, context, want;
  };
  const std::string ok = "    server: https://127.0.0.1:6443";
  const std::vector<Case> cases = {
      {ok, "    token: a\n", "nope",
       "context: names contexts 'nope', which contexts does not list"},
      {"    insecure-skip-tls-verify: true", "    token: a\n", "",
       "clusters[0].cluster.server: missing"},
      {"    server: http://127.0.0.1:8080", "    token: a\n", "", "only https:// servers"},
      {ok + "\n    certificate-authority-data: '@@@'", "    token: a\n", "",
       "clusters[0].cluster.certificate-authority-data: not valid base64"},
      {ok + "\n    certificate-authority: nowhere.crt", "    token: a\n", "",
       "clusters[0].cluster.certificate-authority: file not found"},
      {ok, "    client-certificate-data: " + core::Base64Encode("C") + "\n", "",
       "users[0].user: client-certificate and client-key must be given together"},
      {ok, "    tokenFile: no-such-token\n", "", "users[0].user.tokenFile: file not found"},
      // An endless file is refused at 4 MiB, not read until memory runs out.
      {ok, "    tokenFile: /dev/zero\n", "", "users[0].user.tokenFile: over 4 MiB"},
      {ok + "\n    certificate-authority: /dev/zero", "    token: a\n", "",
       "clusters[0].cluster.certificate-authority: over 4 MiB"},
      {ok, "    exec: {command: aws}\n", "", "users[0].user.exec: not supported"},
      {ok + "\n    tls-server-name: x", "    token: a\n", "", "tls-server-name: not supported"},
  };
  for (const Case& c : cases) {
    auto r = LoadKubeconfig(Config(c.cluster, c.user), c.context);
    ASSERT_FALSE(r.has_value()) << c.want;
    EXPECT_NE(r.error().find(c.want), std::string::npos) << r.error() << "\nwant: " << c.want;
    EXPECT_TRUE(r.error().starts_with("kubeconfig " + (dir_ / "config").string()));
  }
  auto missing = LoadKubeconfig((dir_ / "absent").string(), "");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().find("cannot read"), std::string::npos);
  auto bad = LoadKubeconfig(Write("bad", "a: [1,\n"), "");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().find("not valid YAML"), std::string::npos);
  auto no_current = LoadKubeconfig(Write("nocur", "apiVersion: v1\nclusters: []\n"), "");
  ASSERT_FALSE(no_current.has_value());
  EXPECT_NE(no_current.error().find("current-context: not set"), std::string::npos);
}

TEST_F(KubeconfigTest, InCluster) {
  Write("sa/token", "sa-token\n");
  Write("sa/ca.crt", kPemA);
  Write("sa/namespace", "jobs\n");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  auto getenv = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    return it == env.end() ? std::nullopt : std::optional(it->second);
  };
  auto c = ResolveConnection(
      {.kubeconfig = "in-cluster", .context = "", .in_cluster_root = (dir_ / "sa").string()},
      getenv);
  ASSERT_TRUE(c.has_value()) << c.error();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token, "sa-token");
  EXPECT_EQ(c->ca_pem, kPemA);
  EXPECT_EQ(c->namespace_name, "jobs");
  EXPECT_EQ(c->source, "in-cluster");
  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  EXPECT_EQ(LoadInCluster((dir_ / "sa").string(), getenv)->server, "https://[fd00::1]:443");
  env.erase("KUBERNETES_SERVICE_HOST");
  auto none = LoadInCluster((dir_ / "sa").string(), getenv);
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  env["KUBERNETES_SERVICE_HOST"] = "10.96.0.1";
  auto no_token = LoadInCluster((dir_ / "elsewhere").string(), getenv);
  ASSERT_FALSE(no_token.has_value());
  EXPECT_NE(no_token.error().find("elsewhere/token: cannot read"), std::string::npos);
}

TEST_F(KubeconfigTest, ResolveOrder) {
  const std::string path = Config("    server: https://127.0.0.1:1", "    token: a\n");
  Write("home/.kube/config",
        "apiVersion: v1\ncurrent-context: x\ncontexts: [{name: x, context: "
        "{cluster: h}}]\nclusters: [{name: h, cluster: {server: "
        "'https://home:1'}}]\n");
  std::map<std::string, std::string> env = {{"HOME", (dir_ / "home").string()}};
  auto getenv = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    return it == env.end() ? std::nullopt : std::optional(it->second);
  };
  EXPECT_EQ(ResolveConnection({}, getenv)->server, "https://home:1");
  env["KUBECONFIG"] = path + ":/other/config";
  EXPECT_EQ(ResolveConnection({}, getenv)->server, "https://127.0.0.1:1");
  ClusterChoice named;
  named.kubeconfig = (dir_ / "home/.kube/config").string();
  EXPECT_EQ(ResolveConnection(named, getenv)->server, "https://home:1");
  ClusterChoice other;
  other.context = "other";
  EXPECT_EQ(ResolveConnection(other, getenv)->server, "https://10.0.0.2:6443");
}

TEST(DescribeSecret, LengthAndHashPrefixOnly) {
  const std::string d = DescribeSecret("hunter2");
  EXPECT_EQ(d, "7 bytes, sha256 f52fbd32b2b3");
  EXPECT_EQ(d.find("hunter2"), std::string::npos);
}

}  // namespace
}  // namespace sandprobe::drivers::kube
