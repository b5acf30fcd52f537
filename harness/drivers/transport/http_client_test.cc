// The HTTP client core against in-process servers on 127.0.0.1 (httplib, raw sockets for a reset
// and a hang, a raw AF_UNIX listener) and an httplib::SSLServer with a CA made in memory.
#include "drivers/transport/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "drivers/kubernetes/certs_testing.h"
#include "drivers/transport/http_server_testing.h"

namespace sandprobe::drivers::transport {
namespace {

using http_test::RawListener;
using http_test::Running;
using http_test::TcpListener;

constexpr char kSecret[] = "tok-SECRET-never-printed";

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

HttpRequest Get(const std::string& url, double seconds = 5) {
  HttpRequest r;
  r.url = url;
  r.deadline = After(seconds);
  return r;
}

TEST(HttpClientTest, StatusHeadersBodyAndRequestHeaders) {
  Running<httplib::Server> s;
  s.server().Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
    res.status = req.get_header_value("X-Test") == "yes" ? 201 : 400;
    res.set_header("Warning", "299 - \"one\"");
    res.headers.emplace("Warning", "299 - \"two\"");
    res.set_header("Retry-After", "2");
    res.set_content(req.body, "application/json");
  });
  s.server().Get("/missing", [](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content("no such thing", "text/plain");
  });
  s.Start();
  HttpRequest post = Get(s.Url("http", "/echo"));
  post.method = "POST";
  post.body = R"({"a":1})";
  post.headers = {{"X-Test", "yes"}, {"Content-Type", "application/json"}};
  auto r = Send(post);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, R"({"a":1})");
  EXPECT_EQ(r->HeaderValues("warning").size(), 2u);
  EXPECT_DOUBLE_EQ(r->RetryAfterSeconds(), 2);
  auto missing = Send(Get(s.Url("http", "/missing")));
  ASSERT_TRUE(missing);  // a status is an answer, not a transport error
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, "no such thing");
  EXPECT_DOUBLE_EQ(missing->RetryAfterSeconds(), 0);
}

TEST(HttpClientTest, StreamsOnly2xxBodiesAndStopsWhenAsked) {
  Running<httplib::Server> s;
  s.server().Get("/stream", [](const httplib::Request& req, httplib::Response& res) {
    if (req.has_param("fail")) res.status = 500;
    res.set_chunked_content_provider("text/plain", [](size_t, httplib::DataSink& sink) {
      for (int i = 0; i < 5; ++i) {
        const std::string line = "line " + std::to_string(i) + "\n";
        if (!sink.write(line.data(), line.size())) return false;
      }
      sink.done();
      return true;
    });
  });
  s.Start();
  std::string seen;
  HttpRequest req = Get(s.Url("http", "/stream"));
  req.on_body = [&](std::string_view chunk) {
    seen += chunk;
    return true;
  };
  auto r = Send(req);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(seen, "line 0\nline 1\nline 2\nline 3\nline 4\n");
  EXPECT_TRUE(r->body.empty());
  EXPECT_FALSE(r->stopped);
  req.on_body = [](std::string_view) { return false; };
  auto stopped = Send(req);
  ASSERT_TRUE(stopped);
  EXPECT_TRUE(stopped->stopped);
  EXPECT_EQ(stopped->status, 200);
  seen.clear();
  req = Get(s.Url("http", "/stream?fail=1"));
  req.on_body = [&](std::string_view chunk) {
    seen += chunk;
    return true;
  };
  auto failed = Send(req);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 500);
  EXPECT_TRUE(seen.empty());
  EXPECT_NE(failed->body.find("line 4"), std::string::npos);
}

TEST(HttpClientTest, BodyCapIsAnErrorOrACut) {
  Running<httplib::Server> s;
  http_test::ServeOverCapBodies(s.server(), "GET", "text/plain");
  s.Start();
  const struct {
    const char* path;
    uint64_t announced;  // Content-Length over the cap, or 0: found while reading
    const char* says;
  } cases[] = {{"/sized", 5000, "5000-byte answer"}, {"/chunked", 0, "more than 4096 bytes"}};
  for (const auto& c : cases) {
    HttpRequest req = Get(s.Url("http", c.path));
    req.max_body = 4096;
    auto r = Send(req);
    ASSERT_FALSE(r) << c.path;
    EXPECT_EQ(r.error().kind, TransportFailure::kTooBig);
    EXPECT_EQ(r.error().announced_bytes, c.announced);
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
  }
  HttpRequest chunked = Get(s.Url("http", "/chunked"));
  chunked.max_body = 4096;
  chunked.over_cap_is_error = false;
  auto cut = Send(chunked);
  ASSERT_TRUE(cut) << cut.error().message;
  EXPECT_EQ(cut->body, std::string(4096, 'y'));
}

TEST(HttpClientTest, RefusedResetHangCancelAndIdleAreDistinctErrors) {
  int port = 0;
  ::close(TcpListener(&port));  // nobody listens there any more
  HttpRequest refused = Get("http://127.0.0.1:" + std::to_string(port) + "/x");
  refused.headers = {{"Authorization", std::string("Bearer ") + kSecret}};
  auto r = Send(refused);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, TransportFailure::kConnect);
  EXPECT_TRUE(r.error().Transient());
  EXPECT_NE(r.error().message.find("could not connect"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find(kSecret), std::string::npos);

  int reset_port = 0;
  RawListener reset(TcpListener(&reset_port), "RST");
  auto rst = Send(Get("http://127.0.0.1:" + std::to_string(reset_port) + "/x"));
  ASSERT_FALSE(rst);
  EXPECT_EQ(rst.error().kind, TransportFailure::kReset);
  EXPECT_NE(rst.error().message.find("closed or was reset"), std::string::npos)
      << rst.error().message;

  int hang_port = 0;
  RawListener hang(TcpListener(&hang_port), "");
  const std::string url = "http://127.0.0.1:" + std::to_string(hang_port) + "/x";
  auto t0 = Clock::now();
  auto late = Send(Get(url, 0.6));
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().kind, TransportFailure::kDeadline);
  EXPECT_GE(Since(t0), 0.55);
  EXPECT_LT(Since(t0), 1.5);

  std::atomic<bool> cancel{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  HttpRequest cancellable = Get(url, 30);
  cancellable.cancel = &cancel;
  t0 = Clock::now();
  auto cancelled = Send(cancellable);
  stopper.join();
  ASSERT_FALSE(cancelled);
  EXPECT_EQ(cancelled.error().kind, TransportFailure::kCancelled);
  EXPECT_LT(Since(t0), 1.0);

  HttpRequest idle = Get(url, 30);
  idle.idle_timeout_s = 0.3;
  t0 = Clock::now();
  auto quiet = Send(idle);
  ASSERT_FALSE(quiet);
  EXPECT_EQ(quiet.error().kind, TransportFailure::kTimeout);
  EXPECT_TRUE(quiet.error().Transient());
  EXPECT_LT(Since(t0), 1.5);

  auto bad = Send(Get("ftp://127.0.0.1/x"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, TransportFailure::kInvalid);
}

TEST(HttpClientTest, UnixSocket) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("sp-transport-" + std::to_string(::getpid())))
          .string();
  ::unlink(path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ::listen(fd, 8);
  {
    RawListener daemon(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK");
    HttpRequest req = Get("http://localhost/_ping");
    req.unix_socket = path;
    auto r = Send(req);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "OK");
  }
  ::unlink(path.c_str());
  HttpRequest gone = Get("http://localhost/_ping");
  gone.unix_socket = path;
  auto r = Send(gone);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, TransportFailure::kConnect);
  EXPECT_NE(r.error().message.find("could not connect to the unix socket " + path),
            std::string::npos)
      << r.error().message;
}

struct Pki {
  kube::testing::KeyPair ca, server, client, other_ca;
  Pki() {
    kube::testing::Make(ca, "test-ca", nullptr, nullptr);
    kube::testing::Make(server, "127.0.0.1", &ca, "IP:127.0.0.1");
    kube::testing::Make(client, "sandprobe", &ca, nullptr, true);
    kube::testing::Make(other_ca, "other-ca", nullptr, nullptr);
  }
};

TEST(HttpClientTest, TlsTrustAndClientCertificatesFromMemory) {
  static Pki pki;
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, pki.ca.cert);
  Running<httplib::SSLServer> s(pki.server.cert, pki.server.key, store);
  s.server().Get("/v", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  s.Start();
  HttpRequest req = Get(s.Url("https", "/v"));
  req.tls.ca_pem = pki.ca.cert_pem;
  req.tls.client_cert_pem = pki.client.cert_pem;
  req.tls.client_key_pem = pki.client.key_pem;
  auto ok = Send(req);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->status, 200);

  HttpRequest untrusted = req;
  untrusted.tls.ca_pem = pki.other_ca.cert_pem;
  auto r = Send(untrusted);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, TransportFailure::kTlsTrust);
  EXPECT_FALSE(r.error().Transient());
  EXPECT_NE(r.error().message.find("certificate"), std::string::npos) << r.error().message;
  untrusted.tls.insecure_skip_verify = true;
  EXPECT_TRUE(Send(untrusted));

  HttpRequest bad_key = req;
  bad_key.tls.client_key_pem = "garbage";
  auto k = Send(bad_key);
  ASSERT_FALSE(k);
  EXPECT_EQ(k.error().kind, TransportFailure::kTlsSetup);
  EXPECT_NE(k.error().message.find("not readable PEM"), std::string::npos) << k.error().message;
  EXPECT_EQ(k.error().message.find("garbage"), std::string::npos);

  HttpRequest bad_ca = req;
  bad_ca.tls.ca_pem = "not a certificate";
  auto c = Send(bad_ca);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().kind, TransportFailure::kTlsSetup) << c.error().message;

  HttpRequest anonymous = req;
  anonymous.tls.client_cert_pem.clear();
  anonymous.tls.client_key_pem.clear();
  EXPECT_FALSE(Send(anonymous));  // the server asks for a client certificate
}

// reuse_connection keeps a connection per thread and TLS identity; without it every call has its
// own. The server answers with the client's port: one port = one connection.
TEST(HttpClientTest, KeepsAConnectionOnlyWhenAskedAndPerTlsIdentity) {
  Running<httplib::Server> s;
  s.server().set_keep_alive_timeout(1);  // an idle kept connection is closed by the server
  s.server().Get("/port", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(std::to_string(req.remote_port), "text/plain");
  });
  s.Start();
  auto port = [&](bool reuse, const std::string& cert = "") {
    HttpRequest r = Get(s.Url("http", "/port"));
    r.reuse_connection = reuse;
    r.tls.client_cert_pem = cert;  // not used over http, but part of the identity
    auto res = Send(r);
    EXPECT_TRUE(res) << res.error().message;
    return res ? res->body : std::string("error");
  };
  const std::string first = port(true);
  EXPECT_EQ(port(true), first);           // kept
  EXPECT_NE(port(true, "other"), first);  // another identity: another connection
  EXPECT_EQ(port(true), first);           // and the first one still kept
  EXPECT_NE(port(false), first);          // not asked: a connection of its own
  std::string other_thread;
  std::thread([&] { other_thread = port(true); }).join();
  EXPECT_NE(other_thread, first);                                // kept per thread
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // the server closes it
  const std::string after = port(true);  // libcurl replaces the dead connection
  EXPECT_NE(after, "error");
  EXPECT_NE(after, first);
  EXPECT_EQ(port(true), after);
  // A call stopped mid-answer closes its connection: the next kept call is whole, on another.
  HttpRequest stopped = Get(s.Url("http", "/port"));
  stopped.reuse_connection = true;
  stopped.on_body = [](std::string_view) { return false; };
  auto st = Send(stopped);
  ASSERT_TRUE(st) << st.error().message;
  EXPECT_TRUE(st->stopped);
  const std::string next = port(true);
  EXPECT_NE(next, "error");
  EXPECT_NE(next, after);
  CloseKeptConnections();
  EXPECT_NE(port(true), next);  // closed: a new one
}

TEST(HttpClientTest, QueryEscape) {
  EXPECT_EQ(QueryEscape("sandprobe.io/run=sp-1"), "sandprobe.io%2Frun%3Dsp-1");
  EXPECT_EQ(QueryEscape(R"({"label":["a b"]})"), "%7B%22label%22%3A%5B%22a%20b%22%5D%7D");
  EXPECT_EQ(QueryEscape("AZaz09-_.~"), "AZaz09-_.~");
  EXPECT_EQ(QueryEscape(""), "");
}

}  // namespace
}  // namespace sandprobe::drivers::transport
