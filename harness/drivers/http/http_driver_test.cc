// http driver against small in-process servers on 127.0.0.1 (httplib::Server, and raw sockets for
// a reset and a hang): presets, pointers, the token, the timeout marker, the body cap, garbage,
// 5xx, reset, hang -> deadline, Ctrl-C, health before/after and service_died; an output flood
// past http.maxBody read streaming (judged with probes/res/output-flood), and its memory bound.
#include "drivers/http/http_driver.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>

#include "config/config.h"
#include "core/classify.h"
#include "drivers/http/http_section.h"
#include "drivers/transport/http_server_testing.h"

namespace sandprobe::drivers {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr char kNonce[] = "n0nce1234";
constexpr char kToken[] = "tok-3f9a-SECRET-do-not-print";

// The section as a manifest file would give it (JSON is YAML), read as a manifest load reads it.
std::expected<HttpConfig, std::string> ReadSection(const Json& section) {
  auto config = ReadHttpSection("m.yaml", YAML::Load(Json{{"http", section}}.dump()));
  if (!config) return std::unexpected(config.error().ToString());
  return *config;
}

std::string Record(const Json& rec) {
  return std::string("@@sandprobe ") + kNonce + " " + rec.dump();
}

// An httplib server on 127.0.0.1:<any port>, running from construction to the end of the test.
class Service : public http_test::Running<httplib::Server> {
 public:
  Service() { Start(); }
  std::string Url(const std::string& path) const { return Running::Url("http", path); }
};

// A raw TCP listener on 127.0.0.1 that reads a request and then closes at once (reset) or holds
// the connection open without answering (hang) until the test ends.
class RawService {
 public:
  explicit RawService(bool hang, std::function<void()> on_request = {})
      : listener_(http_test::TcpListener(&port_), hang ? "" : "RST", std::move(on_request)) {}
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  int port_ = 0;
  http_test::RawListener listener_;
};

HttpDriver MakeDriver(const Json& section) {
  auto config = ReadSection(section);
  EXPECT_TRUE(config.has_value()) << config.error();
  return HttpDriver(config.value_or(HttpConfig{}), DriverContext{kNonce, "", 1, "sp-test"});
}

Invocation Inv(double deadline_s = 5) {
  Invocation inv;
  inv.probe = "test.probe";
  inv.invocation = "i001ab";
  inv.script = "print(\"hi\")\n# \"quotes\" \\ and \t tabs\n";
  inv.deadline_s = deadline_s;
  return inv;
}

const std::atomic<bool> kNever{false};

TEST(HttpConfigTest, PresetCodeJsonFillsTheShape) {
  auto c = ReadSection({{"url", "http://127.0.0.1:8080/execute"}, {"preset", "code-json"}});
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->stdout_ptr, "/stdout");
  EXPECT_EQ(c->stderr_ptr, "/stderr");
  EXPECT_EQ(c->exit_code_ptr, "/exit_code");
  EXPECT_EQ(c->error_ptr, "/error");
  ASSERT_TRUE(c->timeout);
  EXPECT_EQ(c->timeout->contains.value_or(""), "timed out");
  EXPECT_EQ(c->max_body, 16u << 20);
}

TEST(HttpConfigTest, ErrorsNameTheField) {
  auto bad_preset = ReadSection({{"url", "http://127.0.0.1/x"}, {"preset", "nope"}});
  ASSERT_FALSE(bad_preset);
  EXPECT_NE(bad_preset.error().find("http.preset"), std::string::npos);
  auto no_stdout = ReadSection({{"url", "http://127.0.0.1/x"}, {"body", {{"c", "{script}"}}}});
  ASSERT_FALSE(no_stdout);
  EXPECT_NE(no_stdout.error().find("http.response.stdout"), std::string::npos);
  auto bad_pointer = ReadSection({{"url", "http://127.0.0.1/x"},
                                  {"preset", "code-json"},
                                  {"response", {{"stdout", "stdout"}}}});
  ASSERT_FALSE(bad_pointer);
  EXPECT_NE(bad_pointer.error().find("http.response.stdout"), std::string::npos);
  EXPECT_FALSE(ReadSection({{"url", "ftp://127.0.0.1/x"}, {"preset", "code-json"}}));
}

TEST(HttpDriverTest, BodyTemplateEscapesTheScriptAsJson) {
  HttpDriver d = MakeDriver({{"url", "http://127.0.0.1:1/x"},
                             {"body", {{"input", {{"src", "{script}"}, {"lang", "py"}}}}},
                             {"response", {{"stdout", "/out"}}}});
  const std::string script = Inv().script;
  const Json parsed = Json::parse(d.RequestBody(script).dump());  // the bytes sent, read back
  EXPECT_EQ(parsed["input"]["src"], script);
  EXPECT_EQ(parsed["input"]["lang"], "py");
}

TEST(HttpDriverTest, CodeJsonRoundTripWithHealthChecks) {
  Service s;
  std::string received;
  s.server().Get("/healthz", [](const httplib::Request&, httplib::Response& r) {
    r.set_content("ok", "text/plain");
  });
  s.server().Post("/execute", [&](const httplib::Request& req, httplib::Response& r) {
    received = Json::parse(req.body).value("code", "");
    r.set_content(Json{{"stdout", Record({{"kind", "start"}}) + "\nraw line\n" +
                                      Record({{"kind", "result"}, {"outcome", "ok"}}) + "\n"},
                       {"stderr", "warn\n"},
                       {"exit_code", 3}}
                      .dump(),
                  "application/json");
  });
  HttpDriver d = MakeDriver(
      {{"url", s.Url("/execute")}, {"preset", "code-json"}, {"health", s.Url("/healthz")}});
  ASSERT_TRUE(d.Prepare());
  const core::Observation obs = d.Execute(Inv(), kNever);
  EXPECT_EQ(received, Inv().script);
  EXPECT_EQ(obs.ending, core::Ending::kExited);
  EXPECT_EQ(obs.exit_code, 3);
  ASSERT_TRUE(obs.result);
  EXPECT_EQ((*obs.result)["outcome"], "ok");
  EXPECT_EQ(obs.records.size(), 2u);
  EXPECT_EQ(obs.stderr_head, "warn\n");
  EXPECT_EQ(obs.driver_facts["health_before"], "ok");
  EXPECT_EQ(obs.driver_facts["health_after"], "ok");
  EXPECT_EQ(obs.driver_facts["http_status"], 200);
  EXPECT_FALSE(obs.driver_facts.contains("service_died"));
  EXPECT_FALSE(obs.driver_facts.contains("after_call_wait_s"));  // the probe did not ask
}

TEST(HttpDriverTest, CustomPointersAndASignalledExit) {
  Service s;
  s.server().Post("/run", [](const httplib::Request&, httplib::Response& r) {
    r.set_content(
        Json{{"result", {{"out", Record({{"kind", "start"}}) + "\n"}, {"rc", -9}}}}.dump(),
        "application/json");
  });
  HttpDriver d =
      MakeDriver({{"url", s.Url("/run")},
                  {"body", {{"source", "{script}"}}},
                  {"response", {{"stdout", "/result/out"}, {"exit_code", "/result/rc"}}}});
  const core::Observation obs = d.Execute(Inv(), kNever);
  EXPECT_EQ(obs.ending, core::Ending::kSignaled);
  EXPECT_EQ(obs.signal, 9);
  EXPECT_EQ(obs.records.size(), 1u);
}

// An exit_code that is no process status (INT_MIN was negated as a signal number, undefined
// behaviour; 2^32-1 read as -1 became "killed by signal 1") is said as such and changes nothing.
TEST(HttpDriverTest, AnExitCodeThatIsNoStatusIsSaidNotNegated) {
  HttpDriver d = MakeDriver({{"url", "http://127.0.0.1:1/run"}, {"preset", "code-json"}});
  for (const long long code : {-2147483648LL, 4294967295LL, 256LL, -129LL}) {
    const std::string body = Json{
        {"stdout", Record({{"kind", "start"}}) + "\n"},
        {"stderr", ""},
        {"exit_code", code}}.dump();
    const std::string_view chunks[] = {body};
    const core::Observation obs = d.MapResponse(200, chunks);
    EXPECT_EQ(obs.ending, core::Ending::kExited) << code;
    EXPECT_EQ(obs.signal, 0) << code;
    EXPECT_EQ(obs.exit_code, 0) << code;
    EXPECT_EQ(obs.driver_facts["service_exit_code"], "not an exit status: " + std::to_string(code));
  }
  for (const auto& [code, ending] :
       {std::pair{255, core::Ending::kExited}, std::pair{-9, core::Ending::kSignaled}}) {
    const std::string body =
        Json{{"stdout", Record({{"kind", "start"}}) + "\n"}, {"exit_code", code}}.dump();
    const std::string_view chunks[] = {body};
    EXPECT_EQ(d.MapResponse(200, chunks).ending, ending) << code;
  }
}

TEST(HttpDriverTest, ServiceTimeoutIsReportedLikeGnuTimeout) {
  Service s;
  s.server().Post("/execute", [](const httplib::Request&, httplib::Response& r) {
    r.set_content(R"({"stdout": "", "stderr": "", "exit_code": 1, "error": "execution timed out"})",
                  "application/json");
  });
  HttpDriver d = MakeDriver({{"url", s.Url("/execute")}, {"preset", "code-json"}});
  const core::Observation obs = d.Execute(Inv(), kNever);
  EXPECT_EQ(obs.ending, core::Ending::kExited);
  EXPECT_EQ(obs.exit_code, 124);
  EXPECT_EQ(obs.driver_facts["service_timeout"], true);
  EXPECT_EQ(obs.driver_facts["service_exit_code"], 1);
  EXPECT_NE(obs.driver_facts["service_timeout_source"].get<std::string>().find("/error"),
            std::string::npos);

  // The same service with an exit-code rule instead: {pointer: /exit_code, equals: 1}.
  HttpDriver by_code = MakeDriver({{"url", s.Url("/execute")},
                                   {"preset", "code-json"},
                                   {"timeout", {{"pointer", "/exit_code"}, {"equals", 1}}}});
  EXPECT_EQ(by_code.Execute(Inv(), kNever).exit_code, 124);
}

TEST(HttpDriverTest, TokenIsSentButNeverWritten) {
  Service s;
  std::string auth;
  s.server().Post("/execute", [&](const httplib::Request& req, httplib::Response& r) {
    auth = req.get_header_value("Authorization");
    // A careless service echoes the header in its output and in an error.
    r.status = 500;
    r.set_content("internal error, request had Authorization: " + auth, "text/plain");
  });
  s.server().Post("/echo", [&](const httplib::Request& req, httplib::Response& r) {
    r.set_content(Json{{"stdout", "token is " + req.get_header_value("Authorization")},
                       {"stderr", req.get_header_value("Authorization")},
                       {"error", req.get_header_value("Authorization")}}
                      .dump(),
                  "application/json");
  });
  ::setenv("SANDPROBE_HTTP_TEST_TOKEN", kToken, 1);
  HttpDriver d = MakeDriver({{"url", s.Url("/execute")},
                             {"preset", "code-json"},
                             {"tokenEnv", "SANDPROBE_HTTP_TEST_TOKEN"}});
  ASSERT_TRUE(d.Prepare());
  const core::Observation err = d.Execute(Inv(), kNever);
  EXPECT_EQ(auth, std::string("Bearer ") + kToken);
  EXPECT_EQ(err.ending, core::Ending::kHarnessError);
  EXPECT_NE(err.harness_error.find("HTTP 500"), std::string::npos);
  EXPECT_EQ(err.harness_error.find(kToken), std::string::npos) << err.harness_error;
  EXPECT_NE(err.harness_error.find("[token redacted]"), std::string::npos);

  HttpDriver echo = MakeDriver({{"url", s.Url("/echo")},
                                {"preset", "code-json"},
                                {"tokenEnv", "SANDPROBE_HTTP_TEST_TOKEN"}});
  ASSERT_TRUE(echo.Prepare());
  const core::Observation obs = echo.Execute(Inv(), kNever);
  for (const std::string& text :
       {obs.stdout_head, obs.stderr_head, obs.harness_error, obs.driver_facts.dump()}) {
    EXPECT_EQ(text.find(kToken), std::string::npos) << text;
  }
  ::unsetenv("SANDPROBE_HTTP_TEST_TOKEN");
  HttpDriver unset = MakeDriver({{"url", s.Url("/echo")},
                                 {"preset", "code-json"},
                                 {"tokenEnv", "SANDPROBE_HTTP_TEST_TOKEN"}});
  auto setup = unset.Prepare();
  ASSERT_FALSE(setup);
  EXPECT_NE(setup.error().message.find("SANDPROBE_HTTP_TEST_TOKEN"), std::string::npos);
}

// Filler past the cap, 2xx: read streaming (drivers/http/body_reader.h), and not a JSON object.
TEST(HttpDriverTest, BodyOverTheCapIsAHarnessErrorNamingTheSize) {
  Service s;
  http_test::ServeOverCapBodies(s.server(), "POST", "application/json");
  for (const char* path : {"/sized", "/chunked"}) {
    HttpDriver d = MakeDriver({{"url", s.Url(path)}, {"preset", "code-json"}, {"maxBody", "4Ki"}});
    const core::Observation obs = d.Execute(Inv(), kNever);
    EXPECT_EQ(obs.ending, core::Ending::kHarnessError) << path;
    EXPECT_NE(obs.harness_error.find("4096"), std::string::npos) << obs.harness_error;
  }
}

TEST(HttpDriverTest, GarbageAnd5xxAndMissingStdoutAreOneLineHarnessErrors) {
  Service s;
  s.server().Post("/garbage", [](const httplib::Request&, httplib::Response& r) {
    r.set_content("<html>\nnot json\n</html>", "text/html");
  });
  s.server().Post("/5xx", [](const httplib::Request&, httplib::Response& r) {
    r.status = 502;
    r.set_content("bad gateway", "text/plain");
  });
  s.server().Post("/error", [](const httplib::Request&, httplib::Response& r) {
    r.set_content(R"({"error": "sandbox failed to start"})", "application/json");
  });
  s.server().Post("/shape", [](const httplib::Request&, httplib::Response& r) {
    r.set_content(R"({"output": "x"})", "application/json");
  });
  const std::pair<const char*, const char*> cases[] = {{"/garbage", "not a JSON object"},
                                                       {"/5xx", "HTTP 502"},
                                                       {"/error", "sandbox failed to start"},
                                                       {"/shape", "no string at /stdout"}};
  for (const auto& [path, want] : cases) {
    HttpDriver d = MakeDriver({{"url", s.Url(path)}, {"preset", "code-json"}});
    const core::Observation obs = d.Execute(Inv(), kNever);
    EXPECT_EQ(obs.ending, core::Ending::kHarnessError) << path;
    EXPECT_NE(obs.harness_error.find(want), std::string::npos) << obs.harness_error;
    EXPECT_EQ(obs.harness_error.find('\n'), std::string::npos) << obs.harness_error;
  }
}

TEST(HttpDriverTest, ResetAndRefusedAreHarnessErrors) {
  RawService reset(false);
  HttpDriver d = MakeDriver({{"url", reset.Url("/execute")}, {"preset", "code-json"}});
  const core::Observation obs = d.Execute(Inv(), kNever);
  EXPECT_EQ(obs.ending, core::Ending::kHarnessError);
  EXPECT_NE(obs.harness_error.find("closed or was reset"), std::string::npos) << obs.harness_error;

  // A port nobody listens on: bind one, close it, connect there.
  int port;
  {
    Service gone;
    port = std::stoi(gone.Url("").substr(17));
  }
  HttpDriver refused = MakeDriver(
      {{"url", "http://127.0.0.1:" + std::to_string(port) + "/x"}, {"preset", "code-json"}});
  const core::Observation r = refused.Execute(Inv(), kNever);
  EXPECT_EQ(r.ending, core::Ending::kHarnessError);
  EXPECT_NE(r.harness_error.find("could not connect"), std::string::npos) << r.harness_error;
}

TEST(HttpDriverTest, HangEndsAtTheDeadlineAndCtrlCEndsItSooner) {
  RawService hang(true);
  HttpDriver d = MakeDriver({{"url", hang.Url("/execute")}, {"preset", "code-json"}});
  auto start = Clock::now();
  const core::Observation obs = d.Execute(Inv(0.8), kNever);
  double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(obs.ending, core::Ending::kDeadline);
  EXPECT_EQ(obs.driver_facts["ended_by"], "harness deadline");
  EXPECT_GE(took, 0.75);
  EXPECT_LT(took, 2.5);

  std::atomic<bool> cancel{false};
  std::thread ctrl_c([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  start = Clock::now();
  const core::Observation stopped = d.Execute(Inv(30), cancel);
  took = std::chrono::duration<double>(Clock::now() - start).count();
  ctrl_c.join();
  EXPECT_EQ(stopped.ending, core::Ending::kInterrupted);
  EXPECT_LT(took, 2.0);
}

TEST(HttpDriverTest, UnhealthyServiceIsASetupErrorWithAHint) {
  Service s;
  s.server().Get("/healthz", [](const httplib::Request&, httplib::Response& r) { r.status = 503; });
  HttpDriver d = MakeDriver(
      {{"url", s.Url("/execute")}, {"preset", "code-json"}, {"health", s.Url("/healthz")}});
  auto r = d.Prepare();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("HTTP 503"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().hint.find("http.health"), std::string::npos);
}

TEST(HttpDriverTest, AServiceThatDiesAfterAProbeIsEvidenceAndLaterProbesErrorFast) {
  Service s;
  std::atomic<bool> dead{false};
  s.server().Get("/healthz", [&](const httplib::Request&, httplib::Response& r) {
    r.status = dead ? 500 : 200;
  });
  s.server().Post("/execute", [&](const httplib::Request&, httplib::Response& r) {
    dead = true;  // this evaluation takes the service down, after answering
    r.set_content(Json{{"stdout", Record({{"kind", "start"}}) + "\n"}, {"exit_code", 0}}.dump(),
                  "application/json");
  });
  HttpDriver d = MakeDriver(
      {{"url", s.Url("/execute")}, {"preset", "code-json"}, {"health", s.Url("/healthz")}});
  ASSERT_TRUE(d.Prepare());
  const core::Observation first = d.Execute(Inv(), kNever);
  EXPECT_EQ(first.ending, core::Ending::kExited);
  EXPECT_EQ(first.driver_facts["health_before"], "ok");
  EXPECT_EQ(first.driver_facts["service_died"], true);
  EXPECT_NE(first.driver_facts["health_after"].get<std::string>().find("HTTP 500"),
            std::string::npos);

  Invocation later = Inv();
  later.probe = "test.later";
  const auto start = Clock::now();
  const core::Observation second = d.Execute(later, kNever);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
  EXPECT_EQ(second.ending, core::Ending::kHarnessError);
  EXPECT_NE(second.harness_error.find("test.probe"), std::string::npos) << second.harness_error;
  EXPECT_NE(second.harness_error.find("took the service down"), std::string::npos);
  EXPECT_FALSE(second.driver_facts.contains("service_died"));  // it was already down
}

TEST(HttpDriverTest, ConnectionDroppedByADyingServiceSaysTheProbeTookItDown) {
  Service health;
  std::atomic<bool> dead{false};
  health.server().Get("/healthz", [&](const httplib::Request&, httplib::Response& r) {
    r.status = dead ? 503 : 200;
  });
  RawService dying(false, [&] { dead = true; });  // the evaluation kills it: reset, then 503
  HttpDriver d = MakeDriver({{"url", dying.Url("/execute")},
                             {"preset", "code-json"},
                             {"health", health.Url("/healthz")}});
  ASSERT_TRUE(d.Prepare());
  const core::Observation obs = d.Execute(Inv(), kNever);
  EXPECT_EQ(obs.ending, core::Ending::kHarnessError);
  EXPECT_EQ(obs.driver_facts["service_died"], true);
  EXPECT_TRUE(obs.harness_error.starts_with("the probe took the service down"))
      << obs.harness_error;
  EXPECT_EQ(obs.harness_error.find('\n'), std::string::npos);
}

TEST(HttpDriverTest, AfterCallWaitOnlyForProbesThatAskAndManifestOverrides) {
  Service s;
  s.server().Post("/execute", [](const httplib::Request&, httplib::Response& r) {
    r.set_content(R"({"stdout": "", "exit_code": 0})", "application/json");
  });
  HttpDriver d = MakeDriver({{"url", s.Url("/execute")}, {"preset", "code-json"}});
  Invocation inv = Inv();
  inv.after_call_s = 0.3;
  auto start = Clock::now();
  const core::Observation obs = d.Execute(inv, kNever);
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - start).count(), 0.3);
  EXPECT_DOUBLE_EQ(obs.driver_facts["after_call_wait_s"].get<double>(), 0.3);

  HttpDriver longer =
      MakeDriver({{"url", s.Url("/execute")}, {"preset", "code-json"}, {"afterCall", "0.5s"}});
  EXPECT_DOUBLE_EQ(longer.Execute(inv, kNever).driver_facts["after_call_wait_s"].get<double>(),
                   0.5);
  EXPECT_FALSE(longer.Execute(Inv(), kNever).driver_facts.contains("after_call_wait_s"));
}

}  // namespace
}  // namespace sandprobe::drivers

namespace sandprobe::drivers {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// `text` as the inside of a JSON string (escaped, without the quotes).
std::string Escaped(const std::string& text) {
  const std::string quoted = Json(text).dump();
  return quoted.substr(1, quoted.size() - 2);
}

// The answer of a service that hands back what res.output-flood wrote (probes/res/output-flood/
// probe.py): a start record, `mib` MiB of 1024-byte filler lines, a result record, as the JSON
// string between `before` and `after`. In pieces, so a server can send it without holding it.
struct FloodAnswer {
  std::string head, block, tail;  // block: 64 filler lines, JSON-escaped
  uint64_t blocks = 0;
  uint64_t stdout_bytes = 0;  // the unescaped stdout

  uint64_t BodyBytes() const { return head.size() + blocks * block.size() + tail.size(); }
  std::string Whole() const {
    std::string body = head;
    body.reserve(BodyBytes());
    for (uint64_t i = 0; i < blocks; ++i) body += block;
    return body + tail;
  }
  // Sends it chunked (no Content-Length), 64 KiB at a time.
  void ServeChunked(httplib::Server& server, const std::string& path) const {
    server.Post(path, [this](const httplib::Request&, httplib::Response& r) {
      r.set_chunked_content_provider("application/json", [this](size_t, httplib::DataSink& sink) {
        if (!sink.write(head.data(), head.size())) return false;
        for (uint64_t i = 0; i < blocks; ++i) {
          if (!sink.write(block.data(), block.size())) return false;
        }
        if (!sink.write(tail.data(), tail.size())) return false;
        sink.done();
        return true;
      });
    });
  }
};

FloodAnswer Flood(uint64_t mib, const std::string& before, const std::string& after) {
  const std::string start = Record({{"kind", "start"},
                                    {"probe", "res.output-flood"},
                                    {"seq", 1},
                                    {"total_bytes", mib * kMiB}}) +
                            "\n";
  const std::string line = std::string(1023, 'f') + "\n";
  const std::string result = Record({{"kind", "result"},
                                     {"probe", "res.output-flood"},
                                     {"seq", 2},
                                     {"outcome", "written"},
                                     {"evidence", "absence"},
                                     {"written_bytes", mib * kMiB}}) +
                             "\n";
  FloodAnswer f;
  f.head = before + Escaped(start);
  for (int i = 0; i < 64; ++i) f.block += Escaped(line);
  f.blocks = mib * kMiB / (64 * line.size());
  f.tail = Escaped(result) + after;
  f.stdout_bytes = start.size() + mib * kMiB + result.size();
  return f;
}

core::ProbeDescriptor OutputFloodProbe() {
  auto probe =
      config::LoadProbe(std::filesystem::path(SANDPROBE_SOURCE_ROOT) / "probes/res/output-flood");
  EXPECT_TRUE(probe.has_value()) << (probe ? "" : probe.error().ToString());
  return probe.value_or(core::ProbeDescriptor{});
}

HttpDriver MakeDriverWith(const Json& section, const std::function<void(HttpConfig&)>& edit) {
  auto config = ReadSection(section);
  EXPECT_TRUE(config.has_value()) << config.error();
  HttpConfig c = config.value_or(HttpConfig{});
  edit(c);
  return HttpDriver(c, DriverContext{kNonce, "", 1, "sp-test"});
}

TEST(HttpStreamingTest, AFloodPastTheCapIsCountedParsedAndJudgedDelivered) {
  const FloodAnswer flood =
      Flood(40, R"({"stderr": "warn\n", "stdout": ")", R"(", "exit_code": 0, "error": null})");
  const std::string body = flood.Whole();  // sent with a Content-Length
  Service s;
  s.server().Post("/execute", [&](const httplib::Request&, httplib::Response& r) {
    r.set_content(body, "application/json");
  });
  HttpDriver d =
      MakeDriver({{"url", s.Url("/execute")}, {"preset", "code-json"}, {"maxBody", "1Mi"}});
  core::Observation obs = d.Execute(Inv(30), kNever);
  ASSERT_EQ(obs.ending, core::Ending::kExited) << obs.harness_error;
  EXPECT_EQ(obs.exit_code, 0);
  EXPECT_EQ(obs.driver_facts["service_exit_code"], 0);
  EXPECT_EQ(obs.driver_facts["response_bytes"], body.size());
  EXPECT_EQ(obs.driver_facts["response_streamed"], true);
  EXPECT_NE(obs.driver_facts["note"].get<std::string>().find("1048576"), std::string::npos);
  EXPECT_FALSE(obs.driver_facts.contains("service_error"));
  EXPECT_FALSE(obs.driver_facts.contains("response_not_kept"));
  EXPECT_EQ(obs.stdout_bytes, flood.stdout_bytes);
  EXPECT_GE(obs.stdout_bytes, 40 * kMiB);
  EXPECT_EQ(obs.stderr_head, "warn\n");
  ASSERT_TRUE(obs.result);
  EXPECT_EQ((*obs.result)["outcome"], "written");
  EXPECT_EQ(obs.records.size(), 2u);
  // What the collector kept is its bounded head, not the 40 MiB.
  EXPECT_LE(obs.stdout_head.size(), core::OutputBounds{}.head_bytes);

  obs.params = {{"total_mib", 40}};
  const core::Classification c = core::Classify(OutputFloodProbe(), obs);
  EXPECT_EQ(c.exposure, core::Exposure::kExposed) << c.reason;
  EXPECT_EQ(c.label, "DELIVERED 40 MiB");
}

TEST(HttpStreamingTest, AServiceThatCutsTheOutputIsStillContained) {
  // Cut to 2 MiB (no result record): under the cap it is parsed whole, past it read streaming.
  const FloodAnswer cut = Flood(2, R"({"stdout": ")", R"(", "exit_code": 0})");
  std::string body = cut.head;
  for (uint64_t i = 0; i < cut.blocks; ++i) body += cut.block;
  body += R"(", "exit_code": 0})";
  Service s;
  s.server().Post("/execute", [&](const httplib::Request&, httplib::Response& r) {
    r.set_content(body, "application/json");
  });
  for (const char* cap : {"16Mi", "1Mi"}) {
    HttpDriver d =
        MakeDriver({{"url", s.Url("/execute")}, {"preset", "code-json"}, {"maxBody", cap}});
    core::Observation obs = d.Execute(Inv(), kNever);
    ASSERT_EQ(obs.ending, core::Ending::kExited) << cap << ": " << obs.harness_error;
    EXPECT_EQ(obs.driver_facts.contains("response_streamed"), cap == std::string("1Mi"));
    EXPECT_FALSE(obs.result);
    EXPECT_LT(obs.stdout_bytes, 3 * kMiB);
    obs.params = {{"total_mib", 64}};
    const core::Classification c = core::Classify(OutputFloodProbe(), obs);
    EXPECT_EQ(c.exposure, core::Exposure::kContained) << cap << ": " << c.reason;
    EXPECT_NE(c.label.find("cut"), std::string::npos) << c.label;
  }
}

TEST(HttpStreamingTest, ANestedPointerTimeoutAndErrorReadFromAStreamedBody) {
  const FloodAnswer flood =
      Flood(2,
            R"({"stdout": "decoy", "blob": ")" + std::string(100 << 10, 'b') +
                R"(", "result": {"meta": {"host": "h1"}, "stdout": ")",
            R"(", "stderr": "e\u00e9", "rc": 1, "trace": [1, 2, 3]}, "error": "run timed out"})");
  Service s;
  flood.ServeChunked(s.server(), "/run");
  HttpDriver d = MakeDriver({{"url", s.Url("/run")},
                             {"preset", "code-json"},
                             {"maxBody", "1Mi"},
                             {"response",
                              {{"stdout", "/result/stdout"},
                               {"stderr", "/result/stderr"},
                               {"exit_code", "/result/rc"}}}});
  const core::Observation obs = d.Execute(Inv(), kNever);
  ASSERT_EQ(obs.ending, core::Ending::kExited) << obs.harness_error;
  EXPECT_EQ(obs.exit_code, 124);  // the service's timeout, like GNU timeout
  EXPECT_EQ(obs.driver_facts["service_timeout"], true);
  EXPECT_EQ(obs.driver_facts["service_exit_code"], 1);
  EXPECT_EQ(obs.driver_facts["response_bytes"], flood.BodyBytes());
  EXPECT_EQ(obs.stdout_bytes, flood.stdout_bytes);  // the decoy at /stdout is not counted
  EXPECT_EQ(obs.stderr_head, "e\xC3\xA9");
  ASSERT_TRUE(obs.result);
  EXPECT_EQ(obs.records.size(), 2u);
  EXPECT_EQ(obs.driver_facts["response_not_kept"],
            Json::array({"/blob (larger than 65536 bytes)"}));
}

TEST(HttpStreamingTest, AStreamedBodyThatIsNotJsonOrCutShortIsAHarnessErrorNamingTheSize) {
  Service s;
  auto serve = [&](const std::string& path, std::string head, size_t filler, std::string tail) {
    s.server().Post(path, [=](const httplib::Request&, httplib::Response& r) {
      r.set_chunked_content_provider("application/json", [=](size_t, httplib::DataSink& sink) {
        const std::string x(filler, 'x');
        sink.write(head.data(), head.size());
        sink.write(x.data(), x.size());
        sink.write(tail.data(), tail.size());
        sink.done();
        return true;
      });
    });
  };
  serve("/cut", R"({"stdout": ")", 50000, "");  // ends inside the string
  serve("/after", R"({"stdout": ")", 50000, R"("} {"again": 1})");
  serve("/array", "[", 50000, "]");
  serve("/badvalue", R"({"stdout": ")", 50000, R"(", "exit_code": 0x10})");
  const std::pair<const char*, const char*> cases[] = {
      {"/cut", "the body ended inside the JSON document after 50012 bytes"},
      {"/after", "more after the JSON object at byte 50015, found '{'"},
      {"/array", "expected '{' to open the JSON object at byte 0, found '['"},
      {"/badvalue", "expected ',' or '}' at byte 50029, found 'x'"},  // after the number 0
  };
  for (const auto& [path, want] : cases) {
    HttpDriver d = MakeDriver({{"url", s.Url(path)}, {"preset", "code-json"}, {"maxBody", "4Ki"}});
    const core::Observation obs = d.Execute(Inv(), kNever);
    EXPECT_EQ(obs.ending, core::Ending::kHarnessError) << path;
    EXPECT_NE(obs.harness_error.find(want), std::string::npos) << obs.harness_error;
    EXPECT_NE(obs.harness_error.find("not a JSON object"), std::string::npos) << obs.harness_error;
    EXPECT_NE(obs.harness_error.find("4096"), std::string::npos) << obs.harness_error;
    EXPECT_EQ(obs.harness_error.find('\n'), std::string::npos) << obs.harness_error;
    EXPECT_EQ(obs.stdout_bytes, 0u) << path << ": a broken answer is no evidence";
    EXPECT_EQ(obs.driver_facts["response_streamed"], true);
  }
}

TEST(HttpStreamingTest, ReadingStopsAtTheCeilingAndAtTheDeadline) {
  const FloodAnswer flood = Flood(8, R"({"exit_code": 0, "stdout": ")", R"("})");
  Service s;
  flood.ServeChunked(s.server(), "/execute");
  s.server().Post("/slow", [&](const httplib::Request&, httplib::Response& r) {
    r.set_chunked_content_provider("application/json", [&](size_t, httplib::DataSink& sink) {
      sink.write(flood.head.data(), flood.head.size());
      for (int i = 0; i < 32; ++i) sink.write(flood.block.data(), flood.block.size());  // 2 MiB
      while (!s.release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return false;
    });
  });
  HttpDriver d =
      MakeDriverWith({{"url", s.Url("/execute")}, {"preset", "code-json"}, {"maxBody", "1Mi"}},
                     [](HttpConfig& c) { c.stream_ceiling = 3 * kMiB; });
  const core::Observation obs = d.Execute(Inv(), kNever);
  ASSERT_EQ(obs.ending, core::Ending::kExited) << obs.harness_error;
  EXPECT_EQ(obs.driver_facts["response_ceiling"], 3 * kMiB);
  EXPECT_EQ(obs.driver_facts["response_bytes"], 3 * kMiB);
  EXPECT_EQ(obs.driver_facts["service_exit_code"], 0);  // it came before the stdout
  EXPECT_GT(obs.stdout_bytes, 2 * kMiB);
  EXPECT_LT(obs.stdout_bytes, 3 * kMiB);
  EXPECT_NE(obs.driver_facts["note"].get<std::string>().find("ceiling"), std::string::npos);

  HttpDriver slow =
      MakeDriver({{"url", s.Url("/slow")}, {"preset", "code-json"}, {"maxBody", "1Mi"}});
  const auto start = Clock::now();
  const core::Observation late = slow.Execute(Inv(1), kNever);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 3.0);
  EXPECT_EQ(late.ending, core::Ending::kDeadline);
  EXPECT_EQ(late.driver_facts["response_streamed"], true);
  EXPECT_GE(late.driver_facts["response_bytes"].get<uint64_t>(), 2 * kMiB);
  EXPECT_GE(late.stdout_bytes, 2 * kMiB - 64 * 1024);  // what came before the deadline
  EXPECT_EQ(late.records.size(), 1u);                  // the start record
  s.release = true;
}

// ASan, as gcc says it (__SANITIZE_ADDRESS__) or as clang does (__has_feature).
#if defined(__SANITIZE_ADDRESS__)
#define SANDPROBE_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANDPROBE_UNDER_ASAN 1
#endif
#endif

// 300 MiB streamed with the default 16 MiB cap; exits 0 when all of it was counted and judged
// delivered with a peak RSS far under the body.
[[noreturn]] void StreamA300MiBFloodAndExit() {
  const FloodAnswer flood = Flood(300, R"({"stdout": ")", R"(", "exit_code": 0})");
  auto s = std::make_unique<Service>();
  flood.ServeChunked(s->server(), "/execute");
  HttpDriver d = MakeDriver({{"url", s->Url("/execute")}, {"preset", "code-json"}});
  core::Observation obs = d.Execute(Inv(120), kNever);
  obs.params = {{"total_mib", 300}};
  const core::Classification c = core::Classify(OutputFloodProbe(), obs);
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const long peak_mib = usage.ru_maxrss / 1024;
#if defined(SANDPROBE_UNDER_ASAN)
  const long bound_mib = 1 << 20;  // ASan's shadow memory and quarantine: not measured there
#else
  const long bound_mib = 64;  // measured: about 30 (the 16 MiB kept before streaming starts)
#endif
  std::fprintf(stderr, "stdout_bytes=%llu body=%llu label=%s peak_rss=%ld MiB\n",
               static_cast<unsigned long long>(obs.stdout_bytes),
               static_cast<unsigned long long>(flood.BodyBytes()), c.label.c_str(), peak_mib);
  const bool ok = obs.stdout_bytes == flood.stdout_bytes && obs.result &&
                  c.label == "DELIVERED 300 MiB" && peak_mib < bound_mib;
  std::fprintf(stderr, ok ? "bounded\n" : "NOT OK\n");
  std::_Exit(ok ? 0 : 1);
}

// In a process of its own (a death-test child re-executed by gtest, so ru_maxrss is this call's
// peak, not the test binary's).
TEST(HttpStreamingTest, A300MiBFloodIsReadInBoundedMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(StreamA300MiBFloodAndExit(), ::testing::ExitedWithCode(0), "bounded");
}

}  // namespace
}  // namespace sandprobe::drivers
