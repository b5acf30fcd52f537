// Integration: the kubernetes driver's Prepare -> Execute -> Cleanup against the FAKE API server
// (harness/testing/fake_kube/fake_kube.py, a real HTTPS server on 127.0.0.1 that runs pods as
// local processes and isolates nothing). Real probe scripts (probes/lib/preamble.py + a body) run
// as the Job's `-c` argument. A missing fake or python3 is a failure, never a skip.
//
// What stays here is what a real API server does not do on cue: scripted faults (429, 410 Gone,
// watches cut after N events, a server that hangs, quota, FailedCreate, forbid, gc-delay), scripted
// pod ends (OOMKilled, Evicted), admission answers, the preflight's strict field validation, exact
// request order. What moved to the real cluster (harness/testing/cluster): a deny-all-egress
// policy enforced or not, with minPolicyAge waited (KubeFake.DenyAllEgressPolicyEnforcedOrNot, now
// test_cluster_enforce.py and test_cluster_off.py).
#include "drivers/kubernetes/kubernetes_driver.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/json_field.h"
#include "core/params.h"
#include "drivers/kubernetes/section_testing.h"

namespace sandprobe::drivers {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using kube::After;

const std::string kRoot = SANDPROBE_SOURCE_ROOT;

// One fake API server process for one test.
class FakeKube {
 public:
  explicit FakeKube(const std::vector<std::string>& extra) {
    dir_ = fs::temp_directory_path() / fmt::format("kd-fake-{}-{}", getpid(), counter_++);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::vector<std::string> args = {
        "/usr/bin/python3", kRoot + "/harness/testing/fake_kube/fake_kube.py",
        "--kubeconfig-out", (dir_ / "kubeconfig").string(),
        "--state-dir",      dir_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    std::string line;
    const auto deadline = After(20);
    while (kube::SecondsLeft(deadline) > 0 && line.find('\n') == std::string::npos) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char buf[256];
      const ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, n);
    }
    close(out[0]);
    if (line.starts_with("READY https://")) server_ = line.substr(6, line.find('\n') - 6);
  }
  ~FakeKube() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    fs::remove_all(dir_);
  }
  bool ready() const { return !server_.empty(); }
  std::string kubeconfig() const { return (dir_ / "kubeconfig").string(); }
  // GET /fake/state: every stored object.
  Json State() const {
    auto conn = kube::LoadKubeconfig(kubeconfig(), "");
    auto r = kube::ApiClient(*conn).Send("GET", "/fake/state", "", After(10));
    return r ? r->body : Json();
  }
  // GET /fake/requests: method, path (with the query) and status of each API request.
  Json Requests() const {
    auto conn = kube::LoadKubeconfig(kubeconfig(), "");
    auto r = kube::ApiClient(*conn).Send("GET", "/fake/requests", "", After(10));
    return r ? r->body.value("requests", Json::array()) : Json::array();
  }
  void Script(const Json& body) const {
    auto conn = kube::LoadKubeconfig(kubeconfig(), "");
    kube::ApiClient(*conn).Send("POST", "/fake/script", body.dump(), After(10));
  }
  // Objects of any kind still stored with the run's label.
  std::vector<std::string> Leftovers(const std::string& run) const {
    std::vector<std::string> out;
    const Json state = State();
    const Json objects =
        state.is_object() ? state.value("objects", Json::object()) : Json::object();
    for (auto& [kind, items] : objects.items()) {
      if (!items.is_array()) continue;
      for (const Json& o : items) {
        if (o.value("/metadata/labels/sandprobe.io~1run"_json_pointer, std::string()) == run) {
          out.push_back(kind + "/" + o.value("/metadata/name"_json_pointer, std::string()));
        }
      }
    }
    return out;
  }

 private:
  static inline int counter_ = 0;
  fs::path dir_;
  pid_t pid_ = -1;
  std::string server_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The deployed program for a probe id with the given body.
std::string Script(const std::string& probe, const std::string& body, const Json& params,
                   const std::string& invocation) {
  core::ProbeDescriptor p;
  p.id = probe;
  p.script = body;
  return core::BuildScript(p, ReadFile(kRoot + "/probes/lib/preamble.py"), params, "testnonce",
                           invocation)
      .value();
}

core::Manifest KubeManifest(const std::string& name, const std::string& kubeconfig,
                            Json extra = Json::object()) {
  Json section = {{"kubeconfig", kubeconfig},
                  {"image", "python:3.12-slim"},
                  {"namespace", "sandprobe"},
                  {"podStartTimeout", "20s"}};
  section.merge_patch(extra);
  core::Manifest m = kube::KubeManifestForTest(name, "/test/" + name + ".yaml", section);
  EXPECT_TRUE(m.section.has_value()) << kube::ReadSectionForTest(section, "m.yaml").error();
  return m;
}

std::unique_ptr<Driver> Make(const core::Manifest& m, const std::string& run) {
  auto d = MakeDriver(m, DriverContext{"testnonce", "", 2, run});
  EXPECT_TRUE(d.has_value()) << d.error().message;
  return d ? std::move(*d) : nullptr;
}

const char kOkBody[] = "emit(\"start\")\nresult(\"ok\", \"positive\")\n";

class KubeFake : public ::testing::Test {
 protected:
  std::atomic<bool> cancel_{false};
};

TEST_F(KubeFake, PrepareExecuteCleanupLeavesNothing) {
  FakeKube fake({});
  ASSERT_TRUE(fake.ready()) << "fake_kube.py did not print READY";
  const std::string run = "sp-20250101T000000Z-e2e001";
  auto d = Make(KubeManifest("k8s-open", fake.kubeconfig()), run);
  ASSERT_TRUE(d);
  auto ready = d->Prepare();
  ASSERT_TRUE(ready.has_value()) << ready.error().message;
  EXPECT_FALSE(d->Warnings().empty());  // the image is not pinned by digest
  const core::Observation obs =
      d->Execute({"harness.preflight",
                  "i000aa",
                  Script("harness.preflight", kOkBody, Json::object(), "i000aa"),
                  10,
                  {}},
                 cancel_);
  EXPECT_EQ(obs.ending, core::Ending::kExited) << obs.harness_error;
  EXPECT_EQ(obs.exit_code, 0);
  ASSERT_TRUE(obs.result.has_value()) << obs.stdout_head;
  EXPECT_EQ(core::StringField(*obs.result, "outcome"), "ok");
  EXPECT_EQ(obs.driver_facts.value("node", ""), "fake-node-1");
  EXPECT_EQ(obs.driver_facts.value("terminated_reason", ""), "Completed");
  EXPECT_EQ(obs.driver_facts.value("job_deleted", false), true);
  EXPECT_EQ(obs.driver_facts.value("oom_killed", true), false);
  d->Cleanup();
  EXPECT_TRUE(fake.Leftovers(run).empty())
      << fmt::format("{}", fmt::join(fake.Leftovers(run), " "));
}

// Two arms of one run that name an invocation alike create Jobs of one name, one after the other.
// The real garbage collector deletes a deleted Job's pods after the Job (asynchronously), so the
// second Job's job-name selector still lists the first's pod: measured on a real cluster, the
// second arm took the first's pod (its labels, its exit 137 while being deleted) as its own. The
// driver keeps only pods whose controller ownerReference is the Job it created.
TEST_F(KubeFake, APodOfAnEarlierJobOfTheSameNameIsNotTaken) {
  FakeKube fake({"--fault", "gc-delay=4"});
  ASSERT_TRUE(fake.ready());
  const std::string run = "sp-20250101T000000Z-e2e00g";
  auto first = Make(KubeManifest("k8s-open", fake.kubeconfig()), run);
  auto second = Make(KubeManifest("k8s-other", fake.kubeconfig()), run);
  ASSERT_TRUE(first && second);
  ASSERT_TRUE(first->Prepare().has_value());
  ASSERT_TRUE(second->Prepare().has_value());
  auto execute = [&](Driver& d) {
    return d.Execute({"harness.preflight",
                      "same",
                      Script("harness.preflight", kOkBody, Json::object(), "same"),
                      10,
                      {}},
                     cancel_);
  };
  const core::Observation a = execute(*first);
  ASSERT_EQ(a.ending, core::Ending::kExited) << a.harness_error;
  const Json lingering = fake.State();
  int first_pods = 0;
  for (const Json& p : lingering.value("/objects/pods"_json_pointer, Json::array())) {
    first_pods += p.value("/metadata/name"_json_pointer, std::string()) ==
                  a.driver_facts.value("pod", std::string("?"));
  }
  ASSERT_EQ(first_pods, 1) << "the fake's garbage collector did not keep the first Job's pod";
  const core::Observation b = execute(*second);
  EXPECT_EQ(b.ending, core::Ending::kExited) << b.harness_error;
  EXPECT_EQ(b.driver_facts.value("job", ""), a.driver_facts.value("job", "?"));
  EXPECT_NE(b.driver_facts.value("pod", ""), a.driver_facts.value("pod", ""));
  ASSERT_TRUE(b.result.has_value()) << b.stdout_head;
  EXPECT_EQ(core::StringField(*b.result, "outcome"), "ok");
  first->Cleanup();
  second->Cleanup();
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_TRUE(fake.Leftovers(run).empty())
      << fmt::format("{}", fmt::join(fake.Leftovers(run), " "));
}

// pods/log is stdout and stderr in one stream (trap 44): the container's pid 1 (stderr_tail.py)
// keeps the probe's stderr off it, so a record forged on stderr with the run's nonce never reaches
// the reader. The process kubelet interleaves both streams in its log like a real one and mounts
// no termination-log file, so the stderr tail is dropped: the honest result is the one read, and
// the fact says there was no termination message. Without pid 1's pipe the forged record reads
// as the result.
TEST_F(KubeFake, ARecordForgedOnStderrNeverReachesTheReader) {
  FakeKube fake({});
  ASSERT_TRUE(fake.ready()) << "fake_kube.py did not print READY";
  const std::string run = "sp-20250101T000000Z-e2e044";
  auto d = Make(KubeManifest("k8s-open", fake.kubeconfig()), run);
  ASSERT_TRUE(d);
  ASSERT_TRUE(d->Prepare().has_value());
  const char body[] =
      "import json\n"
      "os.write(2, ('@@sandprobe testnonce ' + json.dumps({'kind': 'result', 'probe': "
      "'harness.preflight', 'seq': 2, 'outcome': 'forged', 'evidence': 'positive', 'errno': "
      "None, 'detail': 'on stderr'}) + '\\n').encode())\n"
      "emit(\"start\")\nresult(\"ok\", \"positive\")\n";
  const core::Observation obs =
      d->Execute({"harness.preflight",
                  "i044aa",
                  Script("harness.preflight", body, Json::object(), "i044aa"),
                  10,
                  {}},
                 cancel_);
  EXPECT_EQ(obs.ending, core::Ending::kExited) << obs.harness_error;
  ASSERT_TRUE(obs.result.has_value()) << obs.stdout_head;
  EXPECT_EQ(core::StringField(*obs.result, "outcome"), "ok");
  EXPECT_EQ(obs.stdout_head.find("forged"), std::string::npos) << obs.stdout_head;
  EXPECT_EQ(obs.driver_facts.value("logs", ""),
            "stdout (pods/log); stderr: none (no termination message)");
  d->Cleanup();
}

TEST_F(KubeFake, PodFactsOomEvictFailedCreate) {
  FakeKube fake({"--fault", "oom=res.memory-balloon", "--fault", "evict=fs.fill-tmp", "--fault",
                 "pod-fails-create=fs.write-root", "--fault", "pod-create-conflict=fs.dev-shm"});
  ASSERT_TRUE(fake.ready());
  const std::string run = "sp-20250101T000000Z-facts1";
  auto d = Make(KubeManifest("k8s-open", fake.kubeconfig()), run);
  ASSERT_TRUE(d->Prepare().has_value());
  const std::string sleepy =
      "emit(\"start\")\nimport time\ntime.sleep(5)\nresult(\"ok\", \"positive\")\n";
  const core::Observation oom =
      d->Execute({"res.memory-balloon",
                  "i010aa",
                  Script("res.memory-balloon", sleepy, Json::object(), "i010aa"),
                  10,
                  {}},
                 cancel_);
  EXPECT_EQ(oom.driver_facts.value("oom_killed", false), true) << oom.driver_facts.dump();
  EXPECT_EQ(oom.ending, core::Ending::kExited);
  EXPECT_EQ(oom.exit_code, 137);
  EXPECT_EQ(oom.records.size(), 1u);  // the start record survived the kill
  const core::Observation evict = d->Execute(
      {"fs.fill-tmp", "i011aa", Script("fs.fill-tmp", sleepy, Json::object(), "i011aa"), 10, {}},
      cancel_);
  EXPECT_EQ(evict.driver_facts.value("evicted", false), true) << evict.driver_facts.dump();
  EXPECT_EQ(evict.driver_facts.value("pod_reason", ""), "Evicted");
  // The kubelet removed the container and its log (the fake does as the real one, trap 59).
  EXPECT_TRUE(evict.records.empty()) << evict.stdout_head;
  EXPECT_EQ(evict.driver_facts.value("logs", ""),
            "stdout with no probe record (pods/log); stderr: none (no termination message)");
  const core::Observation fc =
      d->Execute({"fs.write-root",
                  "i012aa",
                  Script("fs.write-root", kOkBody, Json::object(), "i012aa"),
                  10,
                  {}},
                 cancel_);
  EXPECT_EQ(fc.ending, core::Ending::kHarnessError);
  EXPECT_NE(fc.harness_error.find("FailedCreate"), std::string::npos) << fc.harness_error;
  // The quota's 409 conflict is a race the Job controller retries: the pod comes, the probe runs.
  const core::Observation race = d->Execute(
      {"fs.dev-shm", "i013aa", Script("fs.dev-shm", kOkBody, Json::object(), "i013aa"), 10, {}},
      cancel_);
  EXPECT_EQ(race.ending, core::Ending::kExited) << race.harness_error;
  EXPECT_EQ(race.records.size(), 2u) << race.stdout_head;  // start, result
  d->Cleanup();
  EXPECT_TRUE(fake.Leftovers(run).empty());
}

TEST_F(KubeFake, WatchGoneBrokenStreamsAnd429) {
  FakeKube fake({"--fault", "watch-gone", "--fault", "watch-break-after=1", "--fault",
                 "429=/apis/batch/v1/namespaces/sandprobe/jobs$:1"});
  ASSERT_TRUE(fake.ready());
  const std::string run = "sp-20250101T000000Z-watch1";
  auto d = Make(KubeManifest("k8s-open", fake.kubeconfig()), run);
  ASSERT_TRUE(d->Prepare().has_value());
  const std::string body =
      "emit(\"start\")\nimport time\ntime.sleep(1)\nresult(\"ok\", \"positive\")\n";
  const core::Observation obs = d->Execute(
      {"harness.preflight", "i020aa", Script("x", body, Json::object(), "i020aa"), 10, {}},
      cancel_);
  EXPECT_EQ(obs.ending, core::Ending::kExited) << obs.harness_error;
  ASSERT_TRUE(obs.result.has_value());
  EXPECT_GE(obs.driver_facts.value("pod_relists", 0), 2);
  d->Cleanup();
  EXPECT_TRUE(fake.Leftovers(run).empty());
}

TEST_F(KubeFake, HarnessDeadlineAndCancelDeleteTheJob) {
  FakeKube fake({});
  ASSERT_TRUE(fake.ready());
  const std::string run = "sp-20250101T000000Z-dl0001";
  auto d = Make(KubeManifest("k8s-open", fake.kubeconfig()), run);
  ASSERT_TRUE(d->Prepare().has_value());
  const std::string loop =
      "emit(\"start\")\nimport time\nwhile True:\n    emit(\"progress\", t=1)\n    "
      "time.sleep(0.5)\n";
  const auto t0 = kube::Clock::now();
  const core::Observation dl = d->Execute(
      {"res.cpu-loop", "i030aa", Script("res.cpu-loop", loop, Json::object(), "i030aa"), 2, {}},
      cancel_);
  EXPECT_EQ(dl.ending, core::Ending::kDeadline) << dl.harness_error;
  EXPECT_GE(dl.records.size(), 2u);  // logs read before the delete
  EXPECT_EQ(dl.driver_facts.value("job_deleted", false), true);
  EXPECT_LT(kube::SecondsLeft(t0 + std::chrono::seconds(20)), 20);
  std::thread stopper([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    cancel_ = true;
  });
  const core::Observation ci = d->Execute(
      {"res.cpu-loop", "i031aa", Script("res.cpu-loop", loop, Json::object(), "i031aa"), 30, {}},
      cancel_);
  stopper.join();
  EXPECT_EQ(ci.ending, core::Ending::kInterrupted);
  EXPECT_EQ(ci.driver_facts.value("job_deleted", false), true);
  d->Cleanup();
  EXPECT_TRUE(fake.Leftovers(run).empty());
  // No pod process of ours is left running.
  EXPECT_TRUE(fake.State().value("/objects/pods"_json_pointer, Json::array()).empty());
}

TEST_F(KubeFake, QuotaAndAHangingServerAreHarnessErrorsNotVerdicts) {
  FakeKube fake({"--fault", "quota-jobs=0"});
  ASSERT_TRUE(fake.ready());
  const std::string run = "sp-20250101T000000Z-quota1";
  auto d = Make(KubeManifest("k8s-open", fake.kubeconfig(), {{"podStartTimeout", "3s"}}), run);
  ASSERT_TRUE(d->Prepare().has_value());
  const core::Observation q = d->Execute(
      {"net.dns", "i040aa", Script("net.dns", kOkBody, Json::object(), "i040aa"), 10, {}}, cancel_);
  EXPECT_EQ(q.ending, core::Ending::kHarnessError);
  EXPECT_NE(q.harness_error.find("quota"), std::string::npos) << q.harness_error;
  fake.Script({{"faults", {"hang-after=0"}}});
  const auto t0 = kube::Clock::now();
  const core::Observation h = d->Execute(
      {"net.dns", "i041aa", Script("net.dns", kOkBody, Json::object(), "i041aa"), 5, {}}, cancel_);
  EXPECT_EQ(h.ending, core::Ending::kHarnessError);
  EXPECT_LT(std::chrono::duration<double>(kube::Clock::now() - t0).count(), 90);
}

TEST_F(KubeFake, AdmissionDryRun) {
  struct Case {
    std::string mode, outcome;
    int status;
  };
  for (const Case& c : {Case{"admit", "admitted", 201}, Case{"warn", "admitted", 201},
                        Case{"webhook-403", "rejected", 403}, Case{"psa-403", "rejected", 403},
                        Case{"vap-422", "rejected", 422}}) {
    FakeKube fake({"--admission", c.mode});
    ASSERT_TRUE(fake.ready());
    const std::string run = "sp-20250101T000000Z-adm001";
    auto d = Make(
        KubeManifest("k8s-gvisor", fake.kubeconfig(),
                     {{"jobTemplate",
                       {{"spec", {{"template", {{"spec", {{"runtimeClassName", "gvisor"}}}}}}}}}}),
        run);
    ASSERT_TRUE(d->Prepare().has_value());
    Invocation inv{"platform.runtime-class", "i050aa", "print('never run')", 10, {}};
    inv.deploy = core::Deploy::kHarnessAdmission;  // probe.yaml deploy: harness-admission
    const core::Observation obs = d->Execute(inv, cancel_);
    ASSERT_TRUE(obs.result.has_value()) << c.mode << ": " << obs.harness_error;
    EXPECT_EQ(core::StringField(*obs.result, "outcome"), c.outcome) << c.mode;
    EXPECT_EQ(obs.driver_facts.value("admission_status", 0), c.status) << c.mode;
    if (c.mode == "warn") {
      EXPECT_FALSE(core::StringField(*obs.result, "warning").empty());
    }
    d->Cleanup();
    EXPECT_TRUE(fake.Leftovers(run).empty());  // a dry run stores nothing
  }
}

TEST_F(KubeFake, SchedulableNodesAndClientCertificates) {
  FakeKube fake({"--nodes", "n1,n2:unschedulable,n3:tainted,n4", "--auth", "client-cert"});
  ASSERT_TRUE(fake.ready());
  auto conn = kube::LoadKubeconfig(fake.kubeconfig(), "");
  ASSERT_TRUE(conn.has_value()) << conn.error();
  EXPECT_FALSE(conn->client_key_pem.empty());
  auto nodes = ListSchedulableNodes(kube::ApiClient(*conn), "");
  ASSERT_TRUE(nodes.has_value()) << nodes.error();
  EXPECT_EQ(*nodes, (std::vector<std::string>{"n1", "n4"}));
  const std::string run = "sp-20250101T000000Z-node01";
  auto d = Make(KubeManifest("k8s-open", fake.kubeconfig()), run);
  ASSERT_TRUE(d->Prepare().has_value());
  Invocation inv{"x", "i060aa", Script("x", kOkBody, Json::object(), "i060aa"), 10, {}};
  inv.node = "n4";
  const core::Observation obs = d->Execute(inv, cancel_);
  EXPECT_EQ(obs.driver_facts.value("node", ""), "n4") << obs.harness_error;
  d->Cleanup();
}

TEST_F(KubeFake, SetupErrorsNameTheProblem) {
  FakeKube fake({});
  ASSERT_TRUE(fake.ready());
  auto d = Make(KubeManifest("k8s-open", fake.kubeconfig(), {{"namespace", "absent"}}), "sp-x");
  auto r = d->Prepare();
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("namespace absent does not exist"), std::string::npos)
      << r.error().message;
  auto bad = Make(KubeManifest("k8s-open", "/nonexistent/kubeconfig"), "sp-x");
  auto r2 = bad->Prepare();
  ASSERT_FALSE(r2.has_value());
  EXPECT_NE(r2.error().message.find("kubeconfig /nonexistent/kubeconfig"), std::string::npos);
  // A wrong token is a credentials problem, not a server that does not answer.
  std::ifstream in(fake.kubeconfig());
  std::stringstream text;
  text << in.rdbuf();
  std::string kc = text.str();
  const size_t at = kc.find("token: ");
  ASSERT_NE(at, std::string::npos) << "the fake's kubeconfig carries a bearer token";
  kc.replace(at, kc.find('\n', at) - at, "token: wrong-token-for-the-test");
  const std::string wrong = ::testing::TempDir() + "/kubeconfig-wrong-token";
  std::ofstream(wrong) << kc;
  auto unauthorized = Make(KubeManifest("k8s-open", wrong), "sp-x");
  auto r3 = unauthorized->Prepare();
  ASSERT_FALSE(r3.has_value());
  EXPECT_NE(r3.error().message.find("refused the credentials"), std::string::npos)
      << r3.error().message;
  EXPECT_EQ(r3.error().message.find("wrong-token-for-the-test"), std::string::npos);
  unauthorized->Cleanup();  // nothing was submitted: returns without calling the API server
}

// A jobTemplate field the API server does not know is refused by the preflight dry run: a setup
// error (the run's exit code 3; the runner prefixes "arm <name> (<manifest>): ") naming the
// field, and nothing created. The field is far from every name in the loader's table, so the load
// lets it through (a newer Kubernetes may have it; a near miss such as containerz is refused on
// load, kube_section_test): the server decides.
TEST_F(KubeFake, JobTemplateTypoIsRefusedAtPreflightAndNothingIsCreated) {
  FakeKube fake({});
  ASSERT_TRUE(fake.ready());
  const std::string run = "sp-20250101T000000Z-strict";
  const Json typo = {{"spec", {{"template", {{"spec", {{"quantumPlacement", Json::array()}}}}}}}};
  auto d = Make(KubeManifest("k8s-typo", fake.kubeconfig(),
                             {{"networkPolicy", "deny-all-egress"}, {"jobTemplate", typo}}),
                run);
  ASSERT_TRUE(d);
  auto r = d->Prepare();
  ASSERT_FALSE(r.has_value()) << "a jobTemplate typo passed the preflight";
  EXPECT_TRUE(r.error().message.starts_with(
      "kubernetes.jobTemplate.spec.template.spec.quantumPlacement: the API server "
      "https://127.0.0.1:"))
      << r.error().message;
  EXPECT_NE(r.error().message.find("HTTP 400 BadRequest: Job in version \"v1\" cannot be handled "
                                   "as a Job: strict decoding error: unknown field "
                                   "\"spec.template.spec.quantumPlacement\""),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().hint.find("nothing was created"), std::string::npos) << r.error().hint;
  d->Cleanup();
  // Nothing stored, not even the arm's NetworkPolicy: the one Job request was the dry run.
  EXPECT_TRUE(fake.Leftovers(run).empty())
      << fmt::format("{}", fmt::join(fake.Leftovers(run), " "));
  const Json state = fake.State();
  for (const char* kind : {"jobs", "pods", "networkpolicies"}) {
    EXPECT_TRUE(state.value("objects", Json::object()).value(kind, Json::array()).empty()) << kind;
  }
  std::vector<std::string> posts;
  for (const Json& req : fake.Requests()) {
    if (req.value("method", "") == "POST") posts.push_back(req.value("path", ""));
  }
  EXPECT_EQ(posts,
            (std::vector<std::string>{
                "/apis/batch/v1/namespaces/sandprobe/jobs?dryRun=All&fieldValidation=Strict"}));
}

// RBAC without create on jobs: the preflight dry run (the same verb) is the first to hear it.
TEST_F(KubeFake, PreflightWithoutCreateOnJobsIsAnRbacSetupError) {
  FakeKube fake({"--fault", "forbid=/jobs\\?dryRun=All"});
  ASSERT_TRUE(fake.ready());
  auto d = Make(KubeManifest("k8s-rbac", fake.kubeconfig()), "sp-20250101T000000Z-rbac01");
  ASSERT_TRUE(d);
  auto r = d->Prepare();
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("does not let the driver create Jobs in namespace sandprobe"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("cannot create resource \"jobs\""), std::string::npos);
  EXPECT_NE(r.error().hint.find("ci/kubernetes/rbac.yaml"), std::string::npos);
  d->Cleanup();
}

// An API server older than 1.25 ignores fieldValidation: the dry run passes and the arm says so.
TEST_F(KubeFake, PreflightOnAServerOlderThan125Warns) {
  FakeKube fake({"--version-string", "v1.24.17"});
  ASSERT_TRUE(fake.ready());
  // A field far from every name in the loader's table passes the load (a newer Kubernetes may
  // have it): only the server's strict dry run could refuse it, and this server does not check.
  const Json newer = {{"spec", {{"template", {{"spec", {{"quantumPlacement", Json::array()}}}}}}}};
  auto d = Make(KubeManifest("k8s-old", fake.kubeconfig(), {{"jobTemplate", newer}}),
                "sp-20250101T000000Z-old124");
  ASSERT_TRUE(d);
  auto r = d->Prepare();
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const std::vector<std::string> w = d->Warnings();
  EXPECT_TRUE(std::ranges::any_of(w, [](const std::string& s) {
    return s.find("v1.24.17 (older than 1.25): it ignores fieldValidation=Strict") !=
           std::string::npos;
  })) << fmt::format("{}", fmt::join(w, "\n"));
  d->Cleanup();
}

}  // namespace
}  // namespace sandprobe::drivers
