// Connection settings for a Kubernetes API server, from a kubeconfig file (read with yaml-cpp) or
// from the in-cluster service account. Key and token material is loaded into memory and never
// printed: messages name files and fields, and DescribeSecret() gives a length and a hash prefix.
//
// Kubeconfig fields read (https://kubernetes.io/docs/reference/config-api/kubeconfig.v1/):
//   current-context; contexts[].context.{cluster,user,namespace};
//   clusters[].cluster.{server, certificate-authority, certificate-authority-data,
//                       insecure-skip-tls-verify, tls-server-name (unsupported: an error)};
//   users[].user.{client-certificate(-data), client-key(-data), token, tokenFile}.
// Relative file paths are resolved against the kubeconfig's own directory (as kubectl does).
#pragma once

#include <expected>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandprobe::drivers::kube {

struct ClusterConnection {
  std::string server;                     // "https://host:port" (no trailing slash)
  std::string ca_pem;                     // PEM CA bundle; "" = the system's trust store
  std::string client_cert_pem;            // PEM client certificate ("" = none)
  std::string client_key_pem;             // PEM private key: secret, never printed
  std::string token;                      // bearer token: secret, never printed
  bool insecure_skip_tls_verify = false;  // WEAKENS: server certificate not verified
  std::string namespace_name;             // the context's namespace, "" when it names none
  std::string source;                     // "kubeconfig /x/config, context ctx" or "in-cluster"
  std::vector<std::string> warnings;      // shown in the report (e.g. insecure-skip-tls-verify)
};

// Reads a kubeconfig. `context` "" = current-context. Errors name the file and the field:
//   "kubeconfig /x/config: users[0].user.client-key: file not found (/x/key.pem)".
std::expected<ClusterConnection, std::string> LoadKubeconfig(const std::string& path,
                                                             const std::string& context);
// The same on the file's text; `path` names it in messages and its folder resolves relative
// paths (the fuzz target feeds it: harness/fuzz).
std::expected<ClusterConnection, std::string> ParseKubeconfig(const std::string& text,
                                                              const std::string& path,
                                                              const std::string& context);

// In-cluster config: <root>/{token,ca.crt,namespace} and KUBERNETES_SERVICE_HOST/PORT read
// through `getenv` (tests pass their own). root is normally kInClusterRoot.
inline constexpr char kInClusterRoot[] = "/var/run/secrets/kubernetes.io/serviceaccount";
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
std::expected<ClusterConnection, std::string> LoadInCluster(const std::string& root,
                                                            const EnvLookup& getenv);

// Where a manifest says its cluster is (the kubernetes: section's kubeconfig, context and
// inClusterRoot fields).
struct ClusterChoice {
  std::string kubeconfig;  // "in-cluster", a path, or "" = $KUBECONFIG's first entry, else
                           // ~/.kube/config
  std::string context;     // "" = the kubeconfig's current-context
  std::string in_cluster_root = kInClusterRoot;  // overridable for tests
};

// The connection a choice names (LoadInCluster or LoadKubeconfig). Errors: no kubeconfig to be
// found, or the loader's.
std::expected<ClusterConnection, std::string> ResolveConnection(const ClusterChoice& choice,
                                                                const EnvLookup& getenv);
EnvLookup ProcessEnv();

// "<n> bytes, sha256 <12 hex>": how a secret may appear in a message.
std::string DescribeSecret(std::string_view secret);

// A file the kubernetes driver reads whole (kubeconfig, token, certificate, key, NetworkPolicy
// YAML), at most 4 MiB: a tokenFile of /dev/zero must not fill memory. -> its bytes | why not
// ("file not found or unreadable", "over 4 MiB: ...").
std::expected<std::string, std::string> ReadKubeFile(const std::filesystem::path& path);

}  // namespace sandprobe::drivers::kube
