// Test-only: a throwaway CA and leaf certificates made in memory with OpenSSL (EC P-256), for
// httplib::SSLServer instances on 127.0.0.1 and for kubeconfig fixtures. Never used by sandprobe.
#pragma once

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <string>

namespace sandprobe::drivers::kube::testing {

struct KeyPair {
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  std::string cert_pem, key_pem;
  KeyPair() = default;
  KeyPair(const KeyPair&) = delete;
  KeyPair& operator=(const KeyPair&) = delete;
  ~KeyPair() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

inline std::string ToPem(X509* cert) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(b, &data);
  std::string out(data, n);
  BIO_free(b);
  return out;
}

inline std::string ToPem(EVP_PKEY* key) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(b, &data);
  std::string out(data, n);
  BIO_free(b);
  return out;
}

inline void AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// issuer == nullptr: a self-signed CA. Otherwise a leaf signed by issuer; san e.g.
// "IP:127.0.0.1"; client: extendedKeyUsage clientAuth instead of serverAuth.
inline void Make(KeyPair& out, const char* cn, const KeyPair* issuer, const char* san,
                 bool client = false) {
  out.key = EVP_EC_gen("P-256");
  out.cert = X509_new();
  X509_set_version(out.cert, 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(out.cert), ++serial);
  X509_gmtime_adj(X509_getm_notBefore(out.cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(out.cert), 3600 * 24);
  X509_set_pubkey(out.cert, out.key);
  X509_NAME* name = X509_get_subject_name(out.cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(out.cert, issuer != nullptr ? X509_get_subject_name(issuer->cert) : name);
  X509* issuer_cert = issuer != nullptr ? issuer->cert : out.cert;
  if (issuer == nullptr) {
    AddExt(out.cert, issuer_cert, NID_basic_constraints, "critical,CA:TRUE");
    AddExt(out.cert, issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    AddExt(out.cert, issuer_cert, NID_basic_constraints, "critical,CA:FALSE");
    AddExt(out.cert, issuer_cert, NID_ext_key_usage, client ? "clientAuth" : "serverAuth");
    if (san != nullptr) AddExt(out.cert, issuer_cert, NID_subject_alt_name, san);
  }
  X509_sign(out.cert, issuer != nullptr ? issuer->key : out.key, EVP_sha256());
  out.cert_pem = ToPem(out.cert);
  out.key_pem = ToPem(out.key);
}

}  // namespace sandprobe::drivers::kube::testing
