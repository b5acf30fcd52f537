"""Shared by the real-cluster tests (ctest label cluster): starts and stops the one-node cluster of
ci/cluster (docs/cluster.md) and checks what it leaves behind and what leaves the machine.

The cluster is real: kube-apiserver, kubelet, containerd and runc, kube-proxy, CoreDNS and
kube-router built from upstream sources, in a network namespace with no route off the machine.
Every probe target is inside it (the run's in-cluster canary, the API server's Service); none is
169.254.169.254 or any address outside the namespace. `EgressWatch` captures on the host's
default-route interface for the cluster's addresses and must see no packet.
"""
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import e2e_util as u  # noqa: E402

CLUSTER = os.path.join(u.HOME, "ci", "cluster")
STATE = os.environ.get("SANDPROBE_CLUSTER_STATE", "/var/lib/sandprobe-cluster")
ADMIN_KUBECONFIG = os.path.join(STATE, "admin.kubeconfig")
SA_KUBECONFIG = os.path.join(STATE, "sandprobe.kubeconfig")
NETNS = "sandprobe-cluster"
# The cluster's own address ranges (ci/cluster/lib.sh): the host's link and node 2's, every
# node's pods, Services.
CLUSTER_NETS = ["10.251.0.0/30", "10.251.1.0/30", "10.252.0.0/16", "10.253.0.0/24",
                "fd00:251::/64", "fd00:252::/56", "fd00:253::/112"]  # --ip-family dual's too
NODE = "sandprobe-node"
NODE2 = "sandprobe-node2"
NS = "sandprobe"
RUN_LABEL = "sandprobe.io/run"


def lib_value(name):
    """A variable of ci/cluster/lib.sh, as the scripts see it."""
    return subprocess.run(["bash", "-c", 'source "$0"; echo "${!1}"',
                           os.path.join(CLUSTER, "lib.sh"), name],
                          capture_output=True, text=True, check=True).stdout.strip()


def bin_dir():
    """The built binaries (ci/cluster/build; at once when built, which ci/test does first)."""
    return subprocess.run([os.path.join(CLUSTER, "build")], capture_output=True, text=True,
                          check=True, timeout=7200).stdout.strip()


class Cluster:
    """ci/cluster/up with `args` on start(), ci/cluster/down on stop() (which asserts that
    nothing was left behind). One per test module: the cluster takes about a minute to start."""

    def __init__(self, *args):
        self.args = list(args)
        self.kube = os.path.join(bin_dir(), "kube")
        self.up_log = ""
        self.down_log = ""

    def start(self):
        t0 = time.monotonic()
        res = subprocess.run([os.path.join(CLUSTER, "up")] + self.args, capture_output=True,
                             text=True, timeout=600, stdin=subprocess.DEVNULL)
        self.up_log = res.stderr
        self.up_s = time.monotonic() - t0
        if res.returncode != 0:
            raise AssertionError("ci/cluster/up %s failed (exit %d):\n%s" % (
                " ".join(self.args), res.returncode, res.stderr[-6000:]))
        self.kubeconfig = res.stdout.strip().splitlines()[-1]
        with open(os.path.join("/run/sandprobe-cluster", "server-version")) as f:
            self.server_version = f.read().strip()
        return self

    def stop(self):
        """-> (exit status, stderr) of ci/cluster/down."""
        res = subprocess.run([os.path.join(CLUSTER, "down")], capture_output=True, text=True,
                             timeout=300, stdin=subprocess.DEVNULL)
        self.down_log = res.stderr
        return res.returncode, res.stderr

    APISERVER_PID = "/run/sandprobe-cluster/pids/kube-apiserver"

    def kill_apiserver(self):
        """SIGKILL to kube-apiserver (its pid as `up` recorded it); keeps its command line for
        restart_apiserver()."""
        with open(self.APISERVER_PID) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            self.apiserver_argv = [a.decode() for a in f.read().split(b"\0") if a]
        os.kill(pid, 9)
        for _ in range(100):
            if not os.path.exists("/proc/%d" % pid):
                break
            time.sleep(0.1)

    def restart_apiserver(self, timeout=120):
        """Starts kube-apiserver again as `up` did (the cluster's namespaces, its own session,
        the pid file `down` reads) and waits until it answers /readyz and cluster DNS answers
        for a Service created after it (wait_dns_sees_new_services)."""
        log = open(os.path.join(STATE, "logs", "kube-apiserver.log"), "ab")
        self.apiserver = subprocess.Popen(  # kept: it runs until ci/cluster/down
            ["nsenter", "--net=/run/netns/" + NETNS, "--mount=/run/sandprobe-cluster/mnt/ns",
             "--", "setsid", "sh", "-c", 'echo $$ > "$0"; exec "$@"', self.APISERVER_PID]
            + self.apiserver_argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        end = time.monotonic() + timeout
        while self.kubectl("get", "--raw", "/readyz", check=False, timeout=10).returncode != 0:
            if time.monotonic() > end:
                raise AssertionError("kube-apiserver did not come back within %d s" % timeout)
            time.sleep(1)
        self.wait_dns_sees_new_services()

    def wait_dns_sees_new_services(self, timeout=180):
        """Creates a Service and waits until cluster DNS answers its name with its ClusterIP,
        then deletes it. After an API server outage CoreDNS's watch comes back on its own
        backoff: measured here, a Service created after an outage of 1 s or 60 s resolved 40-85 s
        after /readyz answered (CoreDNS reconnected within 30 s, served the Service later), and
        a run in that window finds its canary's name NXDOMAIN in every arm (control included:
        INCONCLUSIVE, as it should be, but not the cluster the next test means to ask)."""
        name = "sandprobe-resync-%d" % os.getpid()
        self.kubectl("-n", NS, "create", "service", "clusterip", name, "--tcp=80:80")
        try:
            ip = self.get("-n", NS, "service", name)["spec"]["clusterIP"]
            argv = ["nsenter", "--net=/run/netns/" + NETNS, sys.executable,
                    os.path.join(CLUSTER, "dns_query.py"), lib_value("DNS_SERVICE_IP"),
                    "%s.%s.svc.cluster.local" % (name, NS), ip]
            t0 = time.monotonic()
            while subprocess.run(argv, capture_output=True, timeout=30).returncode != 0:
                if time.monotonic() - t0 > timeout:
                    raise AssertionError("cluster DNS did not answer for a new Service within "
                                         "%d s of the API server's restart" % timeout)
                time.sleep(0.5)
            print("[cluster] DNS answered for a new Service %.1f s after the API server was "
                  "back" % (time.monotonic() - t0), file=sys.stderr)
        finally:
            self.kubectl("-n", NS, "delete", "service", name, "--ignore-not-found", check=False)

    def env(self, kubeconfig=None, **extra):
        return dict(extra, KUBECONFIG=kubeconfig or self.kubeconfig)

    @contextlib.contextmanager
    def apiserver_stopped(self):
        """kube-apiserver stopped (SIGSTOP: it accepts connections and answers nothing, a hung
        server) for the body of the with statement, then running again (SIGCONT) and answering
        /readyz. Its open connections survive, so no client needs to reconnect."""
        with open(self.APISERVER_PID) as f:
            pid = int(f.read().strip())
        os.kill(pid, signal.SIGSTOP)
        try:
            yield pid
        finally:
            os.kill(pid, signal.SIGCONT)
            end = time.monotonic() + 60
            while self.kubectl("get", "--raw", "/readyz", check=False,
                               timeout=10).returncode != 0:
                if time.monotonic() > end:
                    raise AssertionError("kube-apiserver did not answer within 60 s of SIGCONT")
                time.sleep(0.5)
            self.wait_nodes_ready()

    def wait_nodes_ready(self, timeout=120):
        """Every node Ready and without the controller's unreachable/not-ready taints: a stopped
        API server misses the kubelets' leases, and once it runs again the node lifecycle
        controller may mark the nodes Unknown and taint them for a while."""
        end = time.monotonic() + timeout
        while True:
            bad = []
            for n in self.get("nodes")["items"]:
                ready = [k["status"] for k in n["status"].get("conditions", [])
                         if k["type"] == "Ready"]
                taints = [t["key"] for t in n["spec"].get("taints", [])
                          if t["key"].startswith("node.kubernetes.io/")]
                if ready != ["True"] or taints:
                    bad.append("%s Ready=%s taints=%s" % (n["metadata"]["name"], ready, taints))
            if not bad:
                return
            if time.monotonic() > end:
                raise AssertionError("nodes not Ready within %d s: %s" % (timeout, bad))
            time.sleep(1)

    def kubectl(self, *args, check=True, kubeconfig=None, timeout=60, input=None):
        res = subprocess.run([self.kube, "kubectl", "--kubeconfig",
                              kubeconfig or self.kubeconfig] + list(args),
                             capture_output=True, text=True, timeout=timeout, input=input)
        if check and res.returncode != 0:
            raise AssertionError("kubectl %s: %s" % (" ".join(args), res.stderr[-2000:]))
        return res

    def get(self, *args):
        return json.loads(self.kubectl("get", "-o", "json", *args).stdout)

    def objects_of_run(self, run_id, namespace=NS):
        """["job/<name>", "pod/<name>", …] labelled with the run, in `namespace`."""
        items = self.get("-n", namespace, "jobs,pods,services,networkpolicies",
                         "-l", "%s=%s" % (RUN_LABEL, run_id))["items"]
        return sorted("%s/%s" % (i["kind"].lower(), i["metadata"]["name"]) for i in items)

    def wait_objects_gone(self, run_id, timeout=60, namespace=NS):
        """Pods of a deleted Job terminate in the background: wait for them, then -> the list
        left (empty when all went)."""
        end = time.monotonic() + timeout
        while True:
            left = self.objects_of_run(run_id, namespace)
            if not left or time.monotonic() > end:
                return left
            time.sleep(1)


def default_route_interface():
    out = subprocess.run(["ip", "-j", "route", "show", "default"], capture_output=True,
                         text=True, check=True).stdout
    routes = json.loads(out or "[]")
    return routes[0]["dev"] if routes else None


class EgressWatch:
    """tcpdump on the host's default-route interface for any packet from or to the cluster's
    address ranges (and for the metadata address, which nothing may aim at). `count()` stops it
    and returns how many it saw: the tests require 0."""

    def __init__(self, path):
        self.dev = default_route_interface()
        self.path = path
        nets = " or ".join("net %s" % n for n in CLUSTER_NETS + ["169.254.169.254/32"])
        self.proc = None
        if self.dev:
            self.proc = subprocess.Popen(
                ["tcpdump", "-i", self.dev, "-n", "-U", "-w", path, nets],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(1)  # the capture is armed before the first probe

    def count(self):
        if self.proc is None:
            raise AssertionError("no default route: nothing to watch (the test cannot show "
                                 "that nothing left)")
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=20)
        m = re.search(r"(\d+) packets? captured", err.decode())
        if not m:
            raise AssertionError("tcpdump did not report a count: %s" % err.decode()[-500:])
        res = subprocess.run(["tcpdump", "-n", "-r", self.path], capture_output=True, text=True)
        self.lines = res.stdout.splitlines()
        return int(m.group(1))


def run_objects_anywhere():
    """["<namespace>/<kind>/<name>", …]: every Job, Pod, Service and NetworkPolicy labelled with
    any run (sandprobe.io/run), in every namespace."""
    items = Fixture.shared.cluster.get("--all-namespaces", "jobs,pods,services,networkpolicies",
                                       "-l", RUN_LABEL)["items"]
    return sorted("%s/%s/%s" % (i["metadata"].get("namespace", ""), i["kind"].lower(),
                                i["metadata"]["name"]) for i in items)


# A TCP and UDP echo server for canaries a test stands up itself (a host-network service on the
# node's address, the policy-fields peers): argv = address, TCP ports, UDP ports (comma lists,
# either may be ""), seconds to live. "SANDPROBE <rest>" -> "SANDPROBE-ECHO <rest>", as the
# harness's echo canaries answer; it prints every line it got (the test's own record of who
# reached it) and READY once every port listens.
ECHO_SERVER = r"""
import socket, sys, threading
LOCK = threading.Lock()
def say(*parts):  # one write per line: print() from threads interleaves its pieces
    with LOCK:
        sys.stdout.write(" ".join(map(str, parts)) + "\n")
        sys.stdout.flush()
def serve(conn, port):
    with conn:
        conn.settimeout(5)
        try:
            line = conn.recv(512).split(b"\n")[0].decode("latin-1")
        except OSError:
            return
        say("tcp", port, line)
        if line.startswith("SANDPROBE "):
            conn.sendall(("SANDPROBE-ECHO %s\n" % line[10:]).encode())
def tcp(srv, port):
    while True:
        threading.Thread(target=serve, args=(srv.accept()[0], port), daemon=True).start()
def udp(s, port):
    while True:
        data, peer = s.recvfrom(512)
        line = data.split(b"\n")[0].decode("latin-1")
        say("udp", port, line)
        if line.startswith("SANDPROBE "):
            s.sendto(("SANDPROBE-ECHO %s\n" % line[10:]).encode(), peer)
for p in filter(None, sys.argv[2].split(",")):
    srv = socket.create_server((sys.argv[1], int(p)))
    threading.Thread(target=tcp, args=(srv, int(p)), daemon=True).start()
for p in filter(None, sys.argv[3].split(",")):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((sys.argv[1], int(p)))
    threading.Thread(target=udp, args=(s, int(p)), daemon=True).start()
say("READY")
threading.Event().wait(float(sys.argv[4]))
"""


class Fixture:
    """A started cluster with its egress capture and a temporary folder, for test modules.

    One cluster start per configuration: run_modules.py starts one (`Fixture.start_shared`) and
    every module that asks for the same ci/cluster/up arguments (`Fixture.for_module`) uses it; a
    module run alone (python3 -m unittest test_cluster_x) starts its own. A shared cluster is
    stopped once, by the runner, after the last module; each module's `done()` then checks that no
    object of any run is left in any namespace."""

    shared = None  # the runner's Fixture, if any
    current = None  # the Fixture of the module whose tests run now

    def __init__(self, up_args, owned):
        self.up_args = tuple(up_args)
        self.owned = owned
        self.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-cluster-")
        try:
            self.cluster = Cluster(*up_args).start()
        except BaseException:
            self.tmp.cleanup()
            raise
        self.watch = EgressWatch(os.path.join(self.tmp.name, "egress.pcap"))

    @classmethod
    def start_shared(cls, *up_args):
        cls.shared = cls(up_args, owned=False)
        return cls.shared

    @classmethod
    def for_module(cls, *up_args):
        """A module's setUpModule: -> the Fixture its tests use (also Fixture.current)."""
        if cls.shared is None:
            cls.current = cls(up_args, owned=True)
        elif cls.shared.up_args != tuple(up_args):
            raise AssertionError("this module wants ci/cluster/up %s, the runner started %s" % (
                " ".join(up_args), " ".join(cls.shared.up_args)))
        else:
            cls.current = cls.shared
        return cls.current

    def done(self):
        """A module's end: its own cluster is stopped (stop()); on the shared one, no Job, Pod,
        Service or NetworkPolicy of any run may be left (waits up to 60 s for pods being
        deleted). The namespaces and RBAC objects a test makes are its class cleanup's to delete."""
        if self.owned:
            self.stop()
            return
        end = time.monotonic() + 60
        left = run_objects_anywhere()
        while left and time.monotonic() < end:
            time.sleep(1)
            left = run_objects_anywhere()
        if left:
            raise AssertionError("the module left objects of its runs on the shared cluster: %s"
                                 % left)

    def stop(self):
        """Counts the egress capture, runs ci/cluster/down (always, even when the count fails);
        raises if a packet left, the count failed, or down left something behind."""
        try:
            packets = self.watch.count() if self.watch else None
        finally:
            rc, err = self.cluster.stop()
            self.tmp.cleanup()
        if packets:
            raise AssertionError("%d packet(s) of the cluster on the default route: %s" % (
                packets, self.watch.lines[:10]))
        if rc != 0:
            raise AssertionError("ci/cluster/down left something behind:\n" + err[-3000:])
