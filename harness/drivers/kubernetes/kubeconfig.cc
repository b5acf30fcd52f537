#include "drivers/kubernetes/kubeconfig.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sandprobe::drivers::kube {
namespace {

namespace fs = std::filesystem;

// yaml-cpp 0.7 throws from Type() on a missing key of a const node: check IsDefined() first.
bool IsScalar(const YAML::Node& n) { return n.IsDefined() && n.IsScalar(); }
bool IsMap(const YAML::Node& n) { return n.IsDefined() && n.IsMap(); }
bool IsSequence(const YAML::Node& n) { return n.IsDefined() && n.IsSequence(); }

// Base64 as kubeconfig *-data fields hold it (OpenSSL's decoder; whitespace tolerated).
std::optional<std::string> DecodeBase64(std::string_view text) {
  std::string out(text.size(), '\0');
  EVP_ENCODE_CTX* ctx = EVP_ENCODE_CTX_new();
  EVP_DecodeInit(ctx);
  int n = 0, tail = 0;
  const int rc = EVP_DecodeUpdate(ctx, reinterpret_cast<unsigned char*>(out.data()), &n,
                                  reinterpret_cast<const unsigned char*>(text.data()),
                                  static_cast<int>(text.size()));
  const int fin =
      rc < 0 ? -1 : EVP_DecodeFinal(ctx, reinterpret_cast<unsigned char*>(out.data()) + n, &tail);
  EVP_ENCODE_CTX_free(ctx);
  if (rc < 0 || fin < 0) return std::nullopt;
  out.resize(n + tail);
  return out;
}

struct Reader {
  std::string file;  // the kubeconfig path, for messages
  fs::path dir;      // relative paths resolve against it

  std::string Err(const std::string& field, const std::string& what) const {
    return fmt::format("kubeconfig {}: {}: {}", file, field, what);
  }

  // Finds `name` in a list of {name, <kind>: {...}}; returns the index or an error.
  std::expected<size_t, std::string> Find(const YAML::Node& root, const char* list,
                                          const std::string& name, const std::string& from) const {
    const YAML::Node items = root[list];
    if (IsSequence(items)) {
      for (size_t i = 0; i < items.size(); ++i) {
        if (IsScalar(items[i]["name"]) && items[i]["name"].Scalar() == name) return i;
      }
    }
    return std::unexpected(
        Err(from, fmt::format("names {} '{}', which {} does not list", list, name, list)));
  }

  // A PEM that comes either inline (<key>-data, base64) or from a file (<key>).
  std::expected<std::string, std::string> Material(const YAML::Node& section,
                                                   const std::string& field,
                                                   const std::string& key) const {
    const YAML::Node data = section[key + "-data"];
    if (data.IsDefined() && !data.IsNull()) {
      auto decoded = DecodeBase64(data.Scalar());
      if (!decoded || decoded->empty()) {
        return std::unexpected(Err(field + "." + key + "-data", "not valid base64"));
      }
      return *decoded;
    }
    const YAML::Node path = section[key];
    if (!path.IsDefined() || path.IsNull()) return std::string();
    fs::path p = path.Scalar();
    if (p.is_relative()) p = dir / p;
    auto text = ReadKubeFile(p);
    if (!text) {
      return std::unexpected(
          Err(field + "." + key, fmt::format("{} ({})", text.error(), p.string())));
    }
    return *text;
  }
};

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

constexpr std::streamsize kMaxFileBytes = 4 << 20;
std::expected<std::string, std::string> ReadKubeFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected("file not found or unreadable");
  std::string text;
  char chunk[65536];
  while (in) {
    in.read(chunk, sizeof chunk);
    if (in.bad()) return std::unexpected("file not found or unreadable");  // a directory, EIO
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > static_cast<size_t>(kMaxFileBytes)) {
      return std::unexpected("over 4 MiB: not a kubeconfig, token or certificate");
    }
  }
  return text;
}

std::string DescribeSecret(std::string_view secret) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(secret.data(), secret.size(), md, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < 6 && i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return fmt::format("{} bytes, sha256 {}", secret.size(), hex);
}

std::expected<ClusterConnection, std::string> LoadKubeconfig(const std::string& path,
                                                             const std::string& context) {
  auto text = ReadKubeFile(path);
  if (!text) {
    return std::unexpected(
        fmt::format("kubeconfig {}: cannot read the file: {}", path, text.error()));
  }
  return ParseKubeconfig(*text, path, context);
}

std::expected<ClusterConnection, std::string> ParseKubeconfig(const std::string& text,
                                                              const std::string& path,
                                                              const std::string& context) {
  Reader r{path, fs::path(path).parent_path()};
  YAML::Node loaded;
  try {
    loaded = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return std::unexpected(fmt::format("kubeconfig {}:{}:{}: not valid YAML: {}", path,
                                       e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  const YAML::Node root = loaded;  // const: lookups of absent keys must not insert or throw
  if (!IsMap(root)) return std::unexpected(r.Err("(top level)", "expected a mapping"));
  try {
    std::string ctx_name = context;
    if (ctx_name.empty()) {
      if (!IsScalar(root["current-context"]) || root["current-context"].Scalar().empty()) {
        return std::unexpected(
            r.Err("current-context", "not set; name a context (kubernetes.context)"));
      }
      ctx_name = root["current-context"].Scalar();
    }
    auto ci = r.Find(root, "contexts", ctx_name, context.empty() ? "current-context" : "context");
    if (!ci) return std::unexpected(ci.error());
    const std::string cfield = fmt::format("contexts[{}].context", *ci);
    const YAML::Node ctx = root["contexts"][*ci]["context"];
    if (!IsMap(ctx)) return std::unexpected(r.Err(cfield, "expected a mapping"));
    if (!IsScalar(ctx["cluster"])) return std::unexpected(r.Err(cfield + ".cluster", "missing"));
    auto cl = r.Find(root, "clusters", ctx["cluster"].Scalar(), cfield + ".cluster");
    if (!cl) return std::unexpected(cl.error());
    const std::string clfield = fmt::format("clusters[{}].cluster", *cl);
    const YAML::Node cluster = root["clusters"][*cl]["cluster"];
    if (!IsMap(cluster)) return std::unexpected(r.Err(clfield, "expected a mapping"));

    ClusterConnection c;
    c.source = fmt::format("kubeconfig {}, context {}", path, ctx_name);
    if (IsScalar(ctx["namespace"])) c.namespace_name = ctx["namespace"].Scalar();
    if (!IsScalar(cluster["server"]) || cluster["server"].Scalar().empty()) {
      return std::unexpected(r.Err(clfield + ".server", "missing"));
    }
    c.server = cluster["server"].Scalar();
    while (c.server.ends_with('/')) c.server.pop_back();
    if (!c.server.starts_with("https://")) {
      return std::unexpected(r.Err(
          clfield + ".server", fmt::format("'{}': only https:// servers are supported", c.server)));
    }
    if (cluster["tls-server-name"].IsDefined()) {
      return std::unexpected(r.Err(clfield + ".tls-server-name", "not supported by sandprobe"));
    }
    auto ca = r.Material(cluster, clfield, "certificate-authority");
    if (!ca) return std::unexpected(ca.error());
    c.ca_pem = *ca;
    if (IsScalar(cluster["insecure-skip-tls-verify"]) &&
        cluster["insecure-skip-tls-verify"].as<bool>()) {
      c.insecure_skip_tls_verify = true;
      c.warnings.push_back(fmt::format(
          "kubeconfig {}: {}.insecure-skip-tls-verify: the API server's certificate is NOT "
          "verified",
          path, clfield));
    }

    if (IsScalar(ctx["user"]) && !ctx["user"].Scalar().empty()) {
      auto ui = r.Find(root, "users", ctx["user"].Scalar(), cfield + ".user");
      if (!ui) return std::unexpected(ui.error());
      const std::string ufield = fmt::format("users[{}].user", *ui);
      const YAML::Node user = root["users"][*ui]["user"];
      if (IsMap(user)) {
        auto cert = r.Material(user, ufield, "client-certificate");
        if (!cert) return std::unexpected(cert.error());
        auto key = r.Material(user, ufield, "client-key");
        if (!key) return std::unexpected(key.error());
        c.client_cert_pem = *cert;
        c.client_key_pem = *key;
        if (c.client_cert_pem.empty() != c.client_key_pem.empty()) {
          return std::unexpected(
              r.Err(ufield, "client-certificate and client-key must be given together"));
        }
        if (IsScalar(user["token"])) {
          c.token = Trim(user["token"].Scalar());
        } else if (IsScalar(user["tokenFile"])) {
          fs::path p = user["tokenFile"].Scalar();
          if (p.is_relative()) p = r.dir / p;
          auto tok = ReadKubeFile(p);
          if (!tok) {
            return std::unexpected(
                r.Err(ufield + ".tokenFile", fmt::format("{} ({})", tok.error(), p.string())));
          }
          c.token = Trim(*tok);
        }
        for (const char* unsupported : {"exec", "auth-provider", "username"}) {
          if (user[unsupported].IsDefined() && c.token.empty() && c.client_cert_pem.empty()) {
            return std::unexpected(r.Err(ufield + "." + unsupported,
                                         "not supported by sandprobe: use a token, tokenFile "
                                         "or a client certificate"));
          }
        }
      }
    }
    return c;
  } catch (const YAML::Exception& e) {
    return std::unexpected(fmt::format("kubeconfig {}: {}", path, e.msg));
  }
}

std::expected<ClusterConnection, std::string> LoadInCluster(const std::string& root,
                                                            const EnvLookup& getenv) {
  auto host = getenv("KUBERNETES_SERVICE_HOST");
  auto port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    return std::unexpected(
        "in-cluster: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT are not set (not running "
        "in a pod?)");
  }
  ClusterConnection c;
  c.source = "in-cluster";
  const std::string h = host->find(':') != std::string::npos ? "[" + *host + "]" : *host;
  c.server = fmt::format("https://{}:{}", h, *port);
  const fs::path dir = root;
  auto token = ReadKubeFile(dir / "token");
  if (!token) {
    return std::unexpected(
        fmt::format("in-cluster: {}: cannot read ({})", (dir / "token").string(), token.error()));
  }
  c.token = Trim(*token);
  auto ca = ReadKubeFile(dir / "ca.crt");
  if (!ca) {
    return std::unexpected(
        fmt::format("in-cluster: {}: cannot read ({})", (dir / "ca.crt").string(), ca.error()));
  }
  c.ca_pem = *ca;
  if (auto ns = ReadKubeFile(dir / "namespace")) c.namespace_name = Trim(*ns);
  return c;
}

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::expected<ClusterConnection, std::string> ResolveConnection(const ClusterChoice& choice,
                                                                const EnvLookup& getenv) {
  std::string path = choice.kubeconfig;
  if (path == "in-cluster") return LoadInCluster(choice.in_cluster_root, getenv);
  if (path.empty()) {
    if (auto kc = getenv("KUBECONFIG"); kc && !kc->empty()) {
      path = kc->substr(0, kc->find(':'));  // the first entry; merging is not supported
    } else if (auto home = getenv("HOME"); home && !home->empty()) {
      path = (fs::path(*home) / ".kube" / "config").string();
    } else {
      return std::unexpected("no kubeconfig: set kubernetes.kubeconfig, $KUBECONFIG or $HOME");
    }
  }
  return LoadKubeconfig(path, choice.context);
}

}  // namespace sandprobe::drivers::kube
