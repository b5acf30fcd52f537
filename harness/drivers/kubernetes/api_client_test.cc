// The API client against a real httplib::SSLServer on 127.0.0.1 with a CA made in memory:
// TLS trust, bearer token, client certificates, Status errors, 429 Retry-After, quota 403
// back-pressure, watch streams (events, 410 Gone, a broken stream) and a server that hangs.
#include "drivers/kubernetes/api_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

#include "drivers/kubernetes/certs_testing.h"

namespace sandprobe::drivers::kube {
namespace {

using Json = nlohmann::json;

struct Pki {
  testing::KeyPair ca, server, client, other_ca;
  Pki() {
    testing::Make(ca, "test-ca", nullptr, nullptr);
    testing::Make(server, "127.0.0.1", &ca, "IP:127.0.0.1");
    testing::Make(client, "sandprobe", &ca, nullptr, true);
    testing::Make(other_ca, "other-ca", nullptr, nullptr);
  }
};

Pki& pki() {
  static Pki p;
  return p;
}

std::string Status(int code, const std::string& reason, const std::string& message) {
  return Json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
              {"code", code},     {"reason", reason},   {"message", message}}
      .dump();
}

class ApiClientTest : public ::testing::Test {
 protected:
  void Start(bool client_auth = false) {
    X509_STORE* store = nullptr;
    if (client_auth) {
      store = X509_STORE_new();
      X509_STORE_add_cert(store, pki().ca.cert);
    }
    server_ = std::make_unique<httplib::SSLServer>(pki().server.cert, pki().server.key, store);
    Routes(*server_);
    port_ = server_->bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  void TearDown() override {
    release_ = true;
    transport::CloseKeptConnections();  // else a kept connection holds a server worker for 5 s
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  ClusterConnection Conn() {
    ClusterConnection c;
    c.server = "https://127.0.0.1:" + std::to_string(port_);
    c.ca_pem = pki().ca.cert_pem;
    c.token = "test-token";
    c.source = "test";
    return c;
  }

  void Routes(httplib::SSLServer& s) {
    s.Get("/version", [](const httplib::Request& req, httplib::Response& res) {
      if (req.get_header_value("Authorization") != "Bearer test-token") {
        res.status = 401;
        res.set_content(Status(401, "Unauthorized", "Unauthorized"), "application/json");
        return;
      }
      res.set_content(R"({"major":"1","minor":"31","gitVersion":"v1.31.0"})", "application/json");
    });
    s.Get("/limited", [this](const httplib::Request&, httplib::Response& res) {
      if (hits_.fetch_add(1) < 1) {
        res.status = 429;
        res.set_header("Retry-After", "1");
        res.set_content(Status(429, "TooManyRequests", "slow down"), "application/json");
        return;
      }
      res.set_content("{}", "application/json");
    });
    s.Post("/jobs", [this](const httplib::Request& req, httplib::Response& res) {
      if (hits_.fetch_add(1) < 2) {
        res.status = 403;
        res.set_content(Status(403, "Forbidden",
                               "jobs.batch \"x\" is forbidden: exceeded quota: sandprobe-rate, "
                               "requested: count/jobs.batch=1, used: count/jobs.batch=4, limited: "
                               "count/jobs.batch=4"),
                        "application/json");
        return;
      }
      res.status = 201;
      res.set_content(req.body, "application/json");
    });
    s.Post("/quota-conflict", [this](const httplib::Request& req, httplib::Response& res) {
      if (hits_.fetch_add(1) < 1) {
        res.status = 409;
        res.set_content(Status(409, "Conflict",
                               "Operation cannot be fulfilled on resourcequotas "
                               "\"sandprobe-rate-limit\": the object has been modified; please "
                               "apply your changes to the latest version and try again"),
                        "application/json");
        return;
      }
      res.status = 201;
      res.set_content(req.body, "application/json");
    });
    s.Post("/conflict", [this](const httplib::Request&, httplib::Response& res) {
      hits_.fetch_add(1);
      res.status = 409;
      res.set_content(Status(409, "AlreadyExists", "jobs.batch \"x\" already exists"),
                      "application/json");
    });
    s.Post("/always-quota", [this](const httplib::Request&, httplib::Response& res) {
      hits_.fetch_add(1);
      res.status = 403;
      res.set_content(Status(403, "Forbidden", "exceeded quota: q"), "application/json");
    });
    s.Post("/forbidden", [this](const httplib::Request&, httplib::Response& res) {
      hits_.fetch_add(1);
      res.status = 403;
      res.set_header("Warning", "299 - \"would violate PodSecurity\"");
      res.set_content(
          Status(403, "Forbidden", "admission webhook \"deny.example\" denied the request: no"),
          "application/json");
    });
    s.Post("/invalid", [](const httplib::Request&, httplib::Response& res) {
      res.status = 422;
      res.set_content(Status(422, "Invalid", "Job.batch \"x\" is invalid: spec.template"),
                      "application/json");
    });
    s.Post("/warn", [](const httplib::Request&, httplib::Response& res) {
      res.status = 201;
      res.set_header("Warning", "299 - \"would violate PodSecurity \\\"restricted\\\"\"");
      res.set_content("{}", "application/json");
    });
    s.Get("/hang", [this](const httplib::Request&, httplib::Response& res) {
      while (!release_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      res.set_content("{}", "application/json");
    });
    // Watch streams: `events` lines, then either the end (done), a 410 ERROR event, or a break.
    s.Get("/watch", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string mode = req.get_param_value("mode");
      res.set_chunked_content_provider(
          "application/json", [this, mode](size_t, httplib::DataSink& sink) {
            for (int i = 0; i < 3; ++i) {
              const std::string ev =
                  Json{{"type", i == 0 ? "ADDED" : "MODIFIED"},
                       {"object",
                        {{"metadata", {{"name", "p"}, {"resourceVersion", std::to_string(i)}}}}}}
                      .dump() +
                  "\n";
              // Split one event across two writes: the client must reassemble lines.
              sink.write(ev.data(), ev.size() / 2);
              sink.write(ev.data() + ev.size() / 2, ev.size() - ev.size() / 2);
            }
            if (mode == "gone") {
              const std::string ev =
                  Json{{"type", "ERROR"},
                       {"object", Json::parse(Status(410, "Expired", "too old resource version"))}}
                      .dump() +
                  "\n";
              sink.write(ev.data(), ev.size());
            }
            if (mode == "break") return false;  // connection closed without the last chunk
            if (mode == "idle") {
              while (!release_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            sink.done();
            return true;
          });
    });
  }

  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> hits_{0};
  std::atomic<bool> release_{false};
};

TEST_F(ApiClientTest, TrustsTheGivenCaAndSendsTheToken) {
  Start();
  ApiClient client(Conn());
  auto r = client.Call("GET", "/version", nullptr, After(5));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->body["gitVersion"], "v1.31.0");
  ClusterConnection wrong = Conn();
  wrong.token = "nope";
  auto denied = ApiClient(wrong).Call("GET", "/version", nullptr, After(5));
  ASSERT_FALSE(denied.has_value());
  EXPECT_EQ(denied.error().code, 401);
  EXPECT_EQ(denied.error().reason, "Unauthorized");
  EXPECT_EQ(denied.error().ToString().find("nope"), std::string::npos);  // token never printed
}

TEST_F(ApiClientTest, RejectsAServerTheCaDidNotSign) {
  Start();
  ClusterConnection c = Conn();
  c.ca_pem = pki().other_ca.cert_pem;
  auto r = ApiClient(c).Call("GET", "/version", nullptr, After(5));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, 0);
  EXPECT_EQ(r.error().attempts, 1);  // a trust failure is not retried
  EXPECT_NE(r.error().message.find("certificate"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find("test-token"), std::string::npos);
  c.insecure_skip_tls_verify = true;  // the weakening the report warns about
  EXPECT_TRUE(ApiClient(c).Call("GET", "/version", nullptr, After(5)).has_value());
}

TEST_F(ApiClientTest, ClientCertificateFromMemory) {
  Start(/*client_auth=*/true);
  ClusterConnection c = Conn();
  c.token.clear();
  auto without = ApiClient(c).Call("GET", "/version", nullptr, After(5));
  ASSERT_FALSE(without.has_value());  // the server requires a client certificate
  c.client_cert_pem = pki().client.cert_pem;
  c.client_key_pem = pki().client.key_pem;
  c.token = "test-token";
  auto with = ApiClient(c).Call("GET", "/version", nullptr, After(5));
  EXPECT_TRUE(with.has_value()) << with.error().ToString();
  c.client_key_pem = "garbage";
  auto bad = ApiClient(c).Call("GET", "/version", nullptr, After(5));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("not readable PEM"), std::string::npos);
  EXPECT_EQ(bad.error().message.find("garbage"), std::string::npos);
}

TEST_F(ApiClientTest, TooManyRequestsWaitsRetryAfter) {
  Start();
  const auto t0 = Clock::now();
  auto r = ApiClient(Conn()).Call("GET", "/limited", nullptr, After(10));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(hits_.load(), 2);
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - t0).count(), 0.95);  // Retry-After: 1
}

TEST_F(ApiClientTest, QuotaForbiddenIsBackPressureNotAnAnswer) {
  Start();
  auto r = ApiClient(Conn()).Call("POST", "/jobs", Json{{"kind", "Job"}}, After(10));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(hits_.load(), 3);
  hits_ = 0;
  // Quota that never clears: bounded by the deadline, reported as quota.
  auto stuck = ApiClient(Conn()).Call("POST", "/always-quota", Json::object(), After(2));
  ASSERT_FALSE(stuck.has_value());
  EXPECT_TRUE(stuck.error().IsQuota());
  EXPECT_TRUE(stuck.error().deadline);
  EXPECT_GE(stuck.error().attempts, 2);
}

// The quota admission's own conflict on the ResourceQuota (409, seen on a real cluster when a
// run created several Jobs at once) is back-pressure: made again, the POST is admitted. Any
// other 409 (the object exists) is an answer, not retried.
TEST_F(ApiClientTest, QuotaConflictIsRetriedAnyOtherConflictIsAnAnswer) {
  Start();
  auto r = ApiClient(Conn()).Call("POST", "/quota-conflict", Json{{"kind", "Job"}}, After(10));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(hits_.load(), 2);
  hits_ = 0;
  auto exists = ApiClient(Conn()).Call("POST", "/conflict", Json::object(), After(5));
  ASSERT_FALSE(exists.has_value());
  EXPECT_EQ(hits_.load(), 1);
  EXPECT_EQ(exists.error().code, 409);
  EXPECT_FALSE(exists.error().IsQuota());
}

TEST_F(ApiClientTest, OtherErrorsAreStatusValues) {
  Start();
  auto f = ApiClient(Conn()).Call("POST", "/forbidden", Json::object(), After(5));
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(hits_.load(), 1);  // not retried
  EXPECT_EQ(f.error().code, 403);
  EXPECT_EQ(f.error().reason, "Forbidden");
  EXPECT_FALSE(f.error().IsQuota());
  EXPECT_NE(f.error().message.find("denied the request"), std::string::npos);
  auto inv = ApiClient(Conn()).Call("POST", "/invalid", Json::object(), After(5));
  ASSERT_FALSE(inv.has_value());
  EXPECT_EQ(inv.error().code, 422);
  EXPECT_EQ(inv.error().reason, "Invalid");
  auto w = ApiClient(Conn()).Call("POST", "/warn", Json::object(), After(5));
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->warning.find("would violate PodSecurity"), std::string::npos);
}

TEST_F(ApiClientTest, AHangingServerMeetsTheDeadline) {
  Start();
  const auto t0 = Clock::now();
  auto r = ApiClient(Conn()).Call("GET", "/hang", nullptr, After(1));
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_FALSE(r.has_value());
  EXPECT_TRUE(r.error().deadline) << r.error().ToString();
  EXPECT_LT(took, 3.0);
  std::atomic<bool> cancel{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  const auto t1 = Clock::now();
  ApiError err;
  const WatchEnd end = ApiClient(Conn()).Watch(
      "/hang", After(30), cancel, [](const std::string&, const Json&) { return true; }, &err, 0.5);
  stopper.join();
  EXPECT_EQ(end, WatchEnd::kCancelled);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t1).count(), 2.0);
}

TEST_F(ApiClientTest, WatchDeliversEventsAndEnds) {
  Start();
  std::atomic<bool> cancel{false};
  std::vector<std::string> seen;
  auto on = [&](const std::string& type, const Json& obj) {
    seen.push_back(type + ":" + obj["metadata"].value("resourceVersion", ""));
    return true;
  };
  ApiClient client(Conn());
  EXPECT_EQ(client.Watch("/watch?mode=done", After(5), cancel, on), WatchEnd::kEnded);
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED:0", "MODIFIED:1", "MODIFIED:2"}));
  seen.clear();
  EXPECT_EQ(client.Watch("/watch?mode=gone", After(5), cancel, on), WatchEnd::kGone);
  EXPECT_EQ(seen.size(), 3u);
  seen.clear();
  EXPECT_EQ(client.Watch("/watch?mode=break", After(5), cancel, on), WatchEnd::kEnded);
  EXPECT_EQ(seen.size(), 3u);  // everything before the break arrived
  seen.clear();
  int n = 0;
  EXPECT_EQ(client.Watch("/watch?mode=done", After(5), cancel,
                         [&](const std::string&, const Json&) { return ++n < 2; }),
            WatchEnd::kStopped);
  EXPECT_EQ(n, 2);
  // A quiet stream returns after the idle read bound, so the caller can re-watch or stop.
  const auto t0 = Clock::now();
  EXPECT_EQ(client.Watch("/watch?mode=idle", After(10), cancel, on, nullptr, 0.5),
            WatchEnd::kEnded);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 3.0);
  EXPECT_EQ(client.Watch("/watch?mode=idle", After(0.8), cancel, on, nullptr, 5),
            WatchEnd::kDeadline);
}

TEST(ApiHelpers, QueryEscape) {
  EXPECT_EQ(QueryEscape("sandprobe.io/run=sp-1"), "sandprobe.io%2Frun%3Dsp-1");
}

}  // namespace
}  // namespace sandprobe::drivers::kube
