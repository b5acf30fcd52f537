"""Docker "kubelet" of the FAKE cluster (`fake_kube.py --kubelet docker`; tests only).

Pods run as REAL containers, wired as a CNI + kubelet + kube-proxy would wire them:
  - pod network: an `--internal` docker network `fake-kube-<instance>` (a free /24 from
    172.31.200.0/24 upward), used only for its bridge and gateway address: containers are started
    with `--network none` and the fake plugs a veth into the bridge itself, assigns the address,
    and routes ONLY the /24 and the service CIDR 10.96.0.0/12 (no default route, so
    169.254.169.254 or any outside address is unreachable: ENETUNREACH; docker's embedded DNS at
    127.0.0.11 (which may forward) is never set up in a pod);
  - one node container per node (`sleep infinity`, cap-drop ALL): its address is the node's
    InternalIP; hostNetwork pods join its netns, never this machine's;
  - each pod = a pause container (`sleep infinity`, cap-drop ALL, read-only, user 65534) holding
    the netns + the app container (`--network container:<pause>`, `--pull never`); before the app
    starts, the pod's rules are installed (kube_netpol.py), re-applied atomically with
    iptables-restore whenever Services, endpoints, policies, pods or the mode change (a 0.25 s
    resync loop; rules applied only when changed):
      * in the pod netns (nsenter): nat OUTPUT kube-proxy DNAT for every Service (ClusterIP:port
        -> endpoint podIP:targetPort, random among endpoints; kubernetes -> gateway:6443,
        kube-dns -> gateway:53), REJECT for Services without endpoints (as kube-proxy), and the
        INGRESS policy chain in filter INPUT (lo, ESTABLISHED,RELATED first; silent DROP);
      * EGRESS on the host side of the pod's veth, like Calico/Cilium/kube-router: the host filter
        table gets FKE-<instance> (jumped to from FORWARD and INPUT for our bridge only:
        ESTABLISHED,RELATED return, anything not for the pod /24 is dropped, then one
        `-m physdev --physdev-in <veth>` jump per pod to its chain FKE-<instance>-<n>). Why not
        the pod's own filter OUTPUT: a DROP there makes sendto() of a denied UDP datagram fail at
        once with EPERM, which no real CNI does (silent loss, TCP connect timing out). Checked
        on this machine: OUTPUT DROP gave EPERM, the host-side DROP gives a timeout;
    IPv6 is disabled in every pod/node netns (no link-local path around the IPv4 filters);
  - pod spec mapping: see DockerKubelet.app_args (user, read-only root, capabilities, privileged,
    no-new-privileges, seccomp, memory/cpu limits, hostPID, pids limit, emptyDir + sizeLimit
    eviction, runtimeClass handler, service account token, resolv.conf); runAsNonRoot is checked
    as the kubelet does (CreateContainerConfigError); a missing image is never pulled
    (ErrImageNeverPull); pod activeDeadlineSeconds -> Failed/DeadlineExceeded.
Limitations (also in CONTRACT.md):
  - only the first container runs, no init containers, no probes, no restarts;
  - emptyDir medium Memory is a tmpfs of sizeLimit (ENOSPC at the limit, no eviction);
  - a terminated pod's pause container is removed at once (its sandbox is torn down), the exited
    app container stays until the pod is deleted;
  - runtime runsc on this machine is configured with `--network=none` (dockerd's runtime args):
    a gVisor pod has ONLY its own loopback (no eth0), so it reaches nothing whatever the policy
    (checked: under deny-all and without a policy alike, connect() -> EHOSTUNREACH); the pod's
    filter rules are not what isolates it, and whether gVisor's netstack (which with
    --network=sandbox talks through a packet socket) would bypass pod-netns iptables could not be
    tested here. /fake/state says so for such pods (`runtimeNote`);
  - dnsPolicy is not read: every pod, hostNetwork ones included, gets the cluster resolv.conf
    (a real hostNetwork pod without ClusterFirstWithHostNet gets the node's; here the node's
    resolver IS the cluster DNS, so the file is the same);
  - hostNetwork pods share the node container's netns: never filtered, never matched by pod
    selectors; the node netns gets the Service DNAT rules (kube-proxy runs on nodes);
  - SIGKILL of the fake leaves its containers and network until the next fake starts (it removes
    objects whose io.sandprobe.fake-kube.pid label names a dead process).
"""
import copy
import json
import os
import shutil
import subprocess
import threading
import time

import kube_netpol
from kube_cluster import parse_quantity, pod_env, selector_matches
from kube_oom import LATE_OOM_WAIT_S, OomEvents
from kube_procs import descendants, proc_table
from kube_store import now_rfc3339

LABEL = "io.sandprobe.fake-kube"
PID_LABEL = "io.sandprobe.fake-kube.pid"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def run(argv, timeout=60, check=True, input=None):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=input)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])}... failed (rc {p.returncode}): "
                           f"{p.stderr.strip()[:500]}")
    return p


def docker(*args, timeout=60, check=True):
    return run(["docker", *args], timeout=timeout, check=check)


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"fake_kube" in f.read()
    except OSError:
        return False


def cleanup_stale(log=lambda m: None):
    """Removes containers/networks of fake instances whose pid label names a dead process."""
    out = docker("ps", "-a", "--filter", f"label={PID_LABEL}", "--format",
                 '{{.ID}} {{.Label "' + PID_LABEL + '"}}', check=False).stdout.split("\n")
    dead = [line.split()[0] for line in out if line.strip() and
            not (len(line.split()) > 1 and line.split()[1].isdigit()
                 and pid_alive(int(line.split()[1])))]
    if dead:
        log(f"removing {len(dead)} containers of dead fake-kube instances")
        docker("rm", "-f", *dead, check=False)
    nets = docker("network", "ls", "-q", "--filter", f"label={PID_LABEL}",
                  check=False).stdout.split()
    for nid in nets:
        info = docker("network", "inspect", "-f", '{{index .Labels "' + PID_LABEL + '"}}', nid,
                      check=False).stdout.strip()
        if not (info.isdigit() and pid_alive(int(info))):
            inst = docker("network", "inspect", "-f", '{{index .Labels "' + LABEL + '"}}', nid,
                          check=False).stdout.strip()
            log(f"removing network {nid} of a dead fake-kube instance {inst}")
            docker("network", "rm", nid, check=False)
            if inst:
                remove_host_chains(inst)


def remove_host_chains(instance, bridge=None):
    """Deletes the jumps to FKE-<instance> from FORWARD/INPUT and every FKE-<instance>* chain."""
    top = f"FKE-{instance}"
    out = run(["iptables", "-w", "20", "-S"], timeout=60, check=False).stdout
    for ln in out.splitlines():
        parts = ln.split()
        if ln.startswith("-A ") and parts[1] in ("FORWARD", "INPUT") and parts[-1] == top:
            run(["iptables", "-w", "20", "-D", *parts[1:]], timeout=60, check=False)
    chains = [ln.split()[1] for ln in out.splitlines() if ln.startswith("-N ")
              and (ln.split()[1] == top or ln.split()[1].startswith(top + "-"))]
    if chains:
        run(["iptables-restore", "-w", "20", "--noflush"], timeout=60, check=False,
            input="*filter\n" + "\n".join([f":{c} - [0:0]" for c in chains] +
                                         [f"-X {c}" for c in chains]) + "\nCOMMIT\n")


def parse_cpu(text):
    text = str(text)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


# kubelet (pkg/kubelet/container): at most 4 KiB of a termination message; the fallback to logs
# takes at most the last 80 lines and 2 KiB.
MAX_TERMINATION_MESSAGE = 4096
MAX_FALLBACK_LINES, MAX_FALLBACK_BYTES = 80, 2048
TERMINATION_LOG = "termination-log"  # the host file in the pod's directory, mounted at the path
DEFAULT_TERMINATION_PATH = "/dev/termination-log"  # the API server's default for the path


def tail_bytes(path, limit):
    """The last `limit` bytes of a file (b"" if it cannot be read)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read(limit)
    except OSError:
        return b""


def termination_message(container, pdir, log_path, exit_code):
    """state.terminated.message as the kubelet fills it: the last 4 KiB of the file mounted at
    terminationMessagePath; with policy FallbackToLogsOnError and an empty file after a failure,
    the log's last 80 lines (at most 2 KiB). Invalid UTF-8 becomes U+FFFD, as Go's JSON encoder
    writes it. None when there is nothing to say."""
    data = b""
    if container.get("terminationMessagePath", DEFAULT_TERMINATION_PATH) and pdir:
        data = tail_bytes(os.path.join(pdir, TERMINATION_LOG), MAX_TERMINATION_MESSAGE)
    if (not data and exit_code != 0 and log_path
            and container.get("terminationMessagePolicy") == "FallbackToLogsOnError"):
        lines = tail_bytes(log_path, 1 << 20).splitlines(keepends=True)[-MAX_FALLBACK_LINES:]
        data = b"".join(lines)[-MAX_FALLBACK_BYTES:]
    return data.decode("utf-8", "replace") or None


class DockerPod:
    """The containers of one pod; kill_tree() is what deletion calls (Cluster.procs)."""

    def __init__(self, kubelet, uid):
        self.kubelet = kubelet
        self.uid = uid
        self.pause = None
        self.app = None
        self.attach = None  # Popen of `docker start -a` (log follower)
        self.chain = None  # host egress chain
        self.pod_ip = None  # address to release once the pause container is gone
        self.app_pid = None
        self.netns_pid = None
        self.killed = False
        self.pdir = None  # the pod's directory on the host (termination-log, container.log)
        self.log_path = None

    @property
    def pid(self):
        return self.app_pid or 0

    def tree(self, table=None, with_marker=False):
        if not self.app_pid:
            return set()
        table = table if table is not None else proc_table()
        return {p for p in descendants(table, {self.app_pid}) if table[p][1] != "Z"}

    def kill_tree(self):
        self.killed = True
        self.kubelet.release_netns(self)
        names = [n for n in (self.app, self.pause) if n]
        if names:
            docker("rm", "-f", *names, check=False, timeout=60)
        if self.pod_ip:
            self.kubelet.release_ip(self.pod_ip)
            self.pod_ip = None
        if self.attach is not None:
            try:
                self.attach.kill()
                self.attach.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass


class DockerKubelet:
    def __init__(self, cluster, instance, state_dir, image, runtime_handlers, pods_limit):
        self.cluster = cluster
        self.instance = instance
        self.state_dir = state_dir
        self.image = image
        self.handlers = runtime_handlers  # RuntimeClass name -> docker runtime
        self.pods_limit = pods_limit
        self.labels = [f"{LABEL}={instance}", f"{PID_LABEL}={os.getpid()}"]
        self.net_name = f"fake-kube-{instance}"
        self.pod_dir = os.path.join(state_dir, "pods")
        os.makedirs(self.pod_dir, exist_ok=True)
        self.lock = threading.Lock()
        self.top_lock = threading.Lock()  # host_top_chain: snapshot + restore as one step
        self.used_ips = set()
        self.veth_n = 0
        self.nodes = {}  # node name -> {"container", "ip", "pid"}
        self.netns = {}  # pod uid -> state dict (pid, ip, applied text, ...)
        self.dns_log = []
        self.dns_lock = threading.Lock()
        self.dns = None
        self.subnet = self.gateway = self.bridge = None
        self.host_jumps = False
        self.stopping = False
        self.oom_events = None  # OomEvents, from start() on

    # ------------------------------------------------------------------ network
    def create_network(self):
        last = ""
        for third in range(200, 255):
            subnet = f"172.31.{third}.0/24"
            p = docker("network", "create", "--internal", "--driver", "bridge", "--subnet",
                       subnet, "--label", self.labels[0], "--label", self.labels[1],
                       self.net_name, check=False)
            if p.returncode == 0:
                nid = p.stdout.strip()
                busy = self.gateway_ports_busy(f"172.31.{third}.1")
                if busy:  # e.g. a TIME_WAIT of an earlier fake's API on this gateway
                    last = f"{subnet}: gateway {busy}"
                    docker("network", "rm", nid, check=False)
                    continue
                self.subnet, self.gateway = subnet, f"172.31.{third}.1"
                self.bridge = "br-" + nid[:12]
                return
            last = p.stderr.strip()
            if "already exists" in last and "network with name" in last:
                raise RuntimeError(f"docker network {self.net_name} already exists")
        raise RuntimeError(f"no free /24 for the pod network: {last}")

    @staticmethod
    def gateway_ports_busy(gateway):
        """Why the fake could not listen on gateway:6443/tcp, :53/tcp, :53/udp, or None."""
        import socket
        for kind, port in ((socket.SOCK_STREAM, 6443), (socket.SOCK_STREAM, 53),
                           (socket.SOCK_DGRAM, 53)):
            s = socket.socket(socket.AF_INET, kind)
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((gateway, port))
            except OSError as e:
                return f"port {port}: {e.strerror}"
            finally:
                s.close()
        return None

    def alloc_ip(self):
        """The lowest free address of the /24 (released ones are reused) and a new veth name."""
        with self.lock:
            free = [n for n in range(2, 255) if n not in self.used_ips]
            if not free:
                raise RuntimeError("pod network full (253 addresses in use)")
            self.used_ips.add(free[0])
            self.veth_n += 1
            return (".".join(self.subnet.split(".")[:3]) + f".{free[0]}",
                    f"fk{self.instance[:6]}{self.veth_n}")

    def release_ip(self, ip):
        with self.lock:
            self.used_ips.discard(int(ip.rsplit(".", 1)[1]))

    def plug(self, pid, ip, veth):
        """veth pair: host end into the bridge, `eth0` into the netns of pid; routes: subnet +
        service CIDR only (no default route); IPv6 off in the netns (no link-local path around
        the IPv4 filters)."""
        run(["nsenter", f"--net=/proc/{pid}/ns/net", "sysctl", "-q", "-w",
             "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"],
            timeout=30)
        run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns",
             str(pid)], timeout=30)
        run(["ip", "link", "set", veth, "master", self.bridge, "up"], timeout=30)
        batch = (f"addr add {ip}/24 dev eth0\nlink set eth0 up\nlink set lo up\n"
                 f"route add {kube_netpol.SERVICE_CIDR} dev eth0\n")
        run(["nsenter", f"--net=/proc/{pid}/ns/net", "ip", "-batch", "-"], input=batch,
            timeout=30)

    def infra_container(self, name, hostname, extra=()):
        argv = ["run", "-d", "--name", name, "--label", self.labels[0], "--label", self.labels[1],
                "--network", "none", "--cap-drop", "ALL", "--pull", "never",
                "--hostname", hostname, *extra, self.image, "sleep", "infinity"]
        cid = docker(*argv).stdout.strip()
        pid = int(docker("inspect", "-f", "{{.State.Pid}}", cid).stdout.strip())
        return cid, pid

    def start(self, node_names):
        """Network, host egress chain, node containers. Returns {node: ip}."""
        self.oom_events = OomEvents(OomEvents.docker_argv(self.labels[0], time.time() - 1))
        self.create_network()
        top = f"FKE-{self.instance}"
        self.host_restore([f":{top} - [0:0]"], check=True)
        for chain in ("FORWARD", "INPUT"):
            run(["iptables", "-w", "20", "-I", chain, "1", "-i", self.bridge, "-j", top],
                timeout=60)
        self.host_jumps = True
        for node in node_names:
            cname = f"fake-kube-{self.instance}-node-{node}"[:120]
            cid, pid = self.infra_container(cname, node)
            ip, veth = self.alloc_ip()
            self.plug(pid, ip, veth)
            self.nodes[node] = {"container": cname, "ip": ip, "pid": pid, "applied": None}
        return {n: v["ip"] for n, v in self.nodes.items()}

    def start_dns(self):
        from kube_dns import ClusterDNS
        self.dns = ClusterDNS(self.gateway, self.lookup, self.dns_log, self.dns_lock)
        threading.Thread(target=self._resync_loop, daemon=True, name="resync").start()

    def lookup(self, name):
        for suffix in (".svc.cluster.local", ".svc"):
            if name.endswith(suffix):
                parts = name[:-len(suffix)].split(".")
                if len(parts) == 2:
                    with self.cluster.store.cond:
                        svc = self.cluster.store.get_locked("services", parts[1], parts[0])
                        if svc is not None:
                            return (svc.get("spec") or {}).get("clusterIP")
        return None

    # ------------------------------------------------------------------ rules
    def _pods_view_locked(self):
        out = []
        for p in self.cluster.store.objects["pods"].values():  # read-only, under the lock
            st = p.get("status") or {}
            out.append({"ns": p["metadata"]["namespace"], "name": p["metadata"]["name"],
                        "uid": p["metadata"]["uid"],
                        "labels": p["metadata"].get("labels") or {},
                        "ip": st.get("podIP") if st.get("phase") == "Running" else None,
                        "hostNetwork": bool(p["spec"].get("hostNetwork")),
                        "node": p["spec"].get("nodeName"), "spec": p["spec"]})
        out.append({"ns": "kube-system", "name": "coredns", "uid": "cluster-dns",
                    "labels": {"k8s-app": "kube-dns"}, "ip": self.gateway, "hostNetwork": False,
                    "node": None, "spec": {"containers": [{"ports": [
                        {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                        {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"}]}]}})
        return out

    def _endpoints(self, pods):
        def endpoints_of(svc, target):
            sel = (svc.get("spec") or {}).get("selector")
            if not sel:
                return []
            eps = []
            for p in pods:
                if p["ns"] != svc["metadata"]["namespace"] or not p["ip"] or \
                        p["uid"] == "cluster-dns":
                    continue
                if not all(p["labels"].get(k) == v for k, v in sel.items()):
                    continue
                port = target
                if isinstance(target, str) and not target.isdigit():
                    port = next((cp["containerPort"] for c in p["spec"]["containers"]
                                 for cp in c.get("ports") or [] if cp.get("name") == target),
                                None)
                    if port is None:
                        continue
                eps.append((p["ip"], int(port)))
            return eps
        return endpoints_of

    def snapshot_locked(self):
        """What every pod's rules are computed from (one pass over the store per resync)."""
        objs = self.cluster.store.objects
        pods = self._pods_view_locked()
        services = sorted(objs["services"].values(),
                          key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"]))
        nat, rejects = kube_netpol.nat_rules(services, self._endpoints(pods), self.gateway)
        return {"pods": pods, "nat": nat, "rejects": rejects,
                "policies": sorted(objs["networkpolicies"].values(), key=lambda o: (
                    o["metadata"]["namespace"], o["metadata"]["name"])),
                "namespaces": {n["metadata"]["name"]: n["metadata"].get("labels") or {}
                               for n in objs["namespaces"].values()}}

    def desired_locked(self, uid, now, snap=None):
        """(rules text, decision dict) for a live pod netns, computed from the store."""
        ent = self.netns[uid]
        snap = snap or self.snapshot_locked()
        pods = snap["pods"]
        me = next((p for p in pods if p["uid"] == uid), None)
        if me is None:
            return None, None
        nat, rejects = snap["nat"], snap["rejects"]
        settings = self.cluster.settings
        mode = settings["network-policy"]
        decision = {"node": me["node"], "podIP": ent["ip"], "hostNetwork": me["hostNetwork"],
                    "runtime": ent.get("runtime")}
        policies = []
        if me["hostNetwork"]:
            decision["filtered"] = False
            decision["why"] = "hostNetwork pod: never filtered (node netns)"
        elif mode == "ignore":
            decision["filtered"] = False
            decision["why"] = "network-policy ignore: policies stored, not enforced"
        elif settings.get("enforce-on") is not None and me["node"] not in settings["enforce-on"]:
            decision["filtered"] = False
            decision["why"] = f"node {me['node']} does not enforce NetworkPolicy"
        elif settings.get("enforce-after") and (
                ent.get("started") is None or now < ent["started"] + settings["enforce-after"]):
            # The pod's first S seconds count from its app container's start (not yet: now).
            until = (ent.get("started") or now) + settings["enforce-after"]
            decision["filtered"] = False
            decision["why"] = (f"enforce-after={settings['enforce-after']}: unfiltered until "
                               f"{until:.3f} (app start + {settings['enforce-after']}s)")
        else:
            delay = settings["policy-delay"]
            allp = snap["policies"]
            policies = [p for p in allp
                        if now - self.cluster.policy_born.get(p["metadata"]["uid"], 0) >= delay]
            decision["filtered"] = True
            young = len(allp) - len(policies)
            decision["why"] = "enforce" + (f" ({young} policies younger than policy-delay "
                                           f"{delay}s not yet applied)" if young else "")
        netns, host, summary, selecting = kube_netpol.filter_rules(
            me, policies, pods, snap["namespaces"], ent["chain"])
        decision["policies"] = selecting
        decision["rules"] = summary
        decision["egressChain"] = f"host filter {ent['chain']} (physdev-in {ent['veth']})"
        text = nat + "\nCOMMIT\n" + "\n".join(netns + rejects) + "\nCOMMIT\n"
        text = (text, "\n".join(host))
        if ent.get("runtime") == "runsc":
            decision["runtimeNote"] = (
                "runtime runsc here runs with --network=none: the gVisor sandbox has only its own "
                "loopback and does not use this netns, so these rules are not what isolates it")
        return text, decision

    def host_restore(self, lines, check=False):
        """iptables-restore --noflush of the fake's own chains in the HOST filter table."""
        return run(["iptables-restore", "-w", "20", "--noflush"],
                   input="*filter\n" + "\n".join(lines) + "\nCOMMIT\n", timeout=60,
                   check=check)

    def host_top_chain(self):
        """FKE-<instance>: established first, nothing but the pod subnet, then one jump per pod
        veth to its egress chain (jumped to from FORWARD and INPUT for our bridge)."""
        top = f"FKE-{self.instance}"
        # One rewrite at a time, each from a snapshot taken inside the same critical section:
        # ":top" flushes the chain, so two pods starting together could otherwise each restore a
        # snapshot without the other, and the later restore drops the earlier pod's jump (that
        # pod then ran unfiltered; seen as a UDP leak under deny-all in e2e.kubernetes).
        with self.top_lock:
            lines = [f":{top} - [0:0]",
                     f"-A {top} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN",
                     f"-A {top} ! -d {self.subnet} -j DROP"]
            # Only pods whose own chain is loaded (apply() ran): a ":chain" line here would flush
            # a chain another thread has just filled (that pod then ran unfiltered, a second
            # race seen as leaks under deny-all), and a jump to a chain not yet made would fail.
            # A pod not listed yet is added by its own call, made right after its apply().
            with self.cluster.store.cond if self.cluster else threading.Lock():
                ents = [e for e in self.netns.values()
                        if e.get("veth") and e.get("applied") is not None]
            for e in ents:
                lines.append(f"-A {top} -m physdev --physdev-in {e['veth']} -j {e['chain']}")
            with self.lock:
                self.host_restore([x for x in lines if x], check=True)

    def drop_host_chains(self, prefix):
        out = run(["iptables", "-w", "20", "-S"], timeout=60, check=False).stdout
        chains = [ln.split()[1] for ln in out.splitlines() if ln.startswith("-N ")
                  and (ln.split()[1] == prefix or ln.split()[1].startswith(prefix + "-"))]
        if chains:
            with self.lock:
                self.host_restore([f":{c} - [0:0]" for c in chains] +
                                  [f"-X {c}" for c in chains])

    def apply(self, uid, text, decision):
        ent = self.netns.get(uid)
        if ent is None:
            return
        text, host = text
        p = run(["nsenter", f"--net=/proc/{ent['pid']}/ns/net", "iptables-restore"], input=text,
                timeout=30, check=False)
        if p.returncode == 0:
            with self.lock:
                p = self.host_restore(host.split("\n"))
        if p.returncode != 0:
            # Fail closed: a ruleset that does not load must not leave the pod unfiltered.
            run(["nsenter", f"--net=/proc/{ent['pid']}/ns/net", "iptables-restore"],
                input="*filter\n:INPUT DROP [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT DROP [0:0]\n"
                      "-A OUTPUT -o lo -j ACCEPT\n-A INPUT -i lo -j ACCEPT\nCOMMIT\n",
                timeout=30, check=False)
            with self.lock:
                self.host_restore([f":{ent['chain']} - [0:0]", f"-A {ent['chain']} -j DROP"])
            decision = dict(decision, error=f"iptables-restore failed: {p.stderr.strip()[:300]}"
                            " (fail closed: all non-loopback traffic dropped)")
        decision["appliedAt"] = time.time()
        ent["applied"] = (text, host)
        ent["decision"] = decision
        with self.cluster.store.cond:
            if self.netns.get(uid) is ent:
                self.cluster.pod_network[ent["key"]] = decision

    def sync_all(self):
        """One resync: node netns DNAT, then every live pod whose rules changed."""
        now = time.time()
        todo = []
        with self.cluster.store.cond:
            snap = self.snapshot_locked()
            for uid, ent in list(self.netns.items()):
                text, decision = self.desired_locked(uid, now, snap)
                if text is not None and (text != ent.get("applied") or decision.get(
                        "filtered") != (ent.get("decision") or {}).get("filtered")):
                    todo.append((uid, text, decision))
        self.sync_nodes(snap["nat"])
        for uid, text, decision in todo:
            if self.stopping:
                return
            try:
                self.apply(uid, text, decision)
            except (RuntimeError, OSError, subprocess.TimeoutExpired, KeyError):
                pass

    def sync_nodes(self, nat):
        """kube-proxy on the nodes: Service DNAT in each node netns (hostNetwork pods use it)."""
        text = nat + "\nCOMMIT\n"
        for info in self.nodes.values():
            if info.get("applied") != text:
                run(["nsenter", f"--net=/proc/{info['pid']}/ns/net", "iptables-restore"],
                    input=text, timeout=30)
                info["applied"] = text

    def _resync_loop(self):
        while not self.stopping:
            time.sleep(0.25)
            try:
                self.sync_all()
            except (RuntimeError, OSError, subprocess.TimeoutExpired, KeyError):
                pass

    # ------------------------------------------------------------------ pods
    def app_args(self, pod, pdir, node):
        spec = pod["spec"]
        c = spec["containers"][0]
        psc = spec.get("securityContext") or {}
        csc = c.get("securityContext") or {}
        args = []
        uid = csc.get("runAsUser", psc.get("runAsUser"))
        gid = csc.get("runAsGroup", psc.get("runAsGroup"))
        if uid is not None:
            args += ["--user", f"{uid}:{gid if gid is not None else 0}"]
        if csc.get("readOnlyRootFilesystem"):
            args.append("--read-only")
        caps = csc.get("capabilities") or {}
        for key, flag in (("drop", "--cap-drop"), ("add", "--cap-add")):
            for cap in caps.get(key) or []:
                cap = str(cap)
                args += [flag, cap[4:] if cap.upper().startswith("CAP_") else cap]
        if csc.get("privileged"):
            args.append("--privileged")
        if csc.get("allowPrivilegeEscalation") is False:
            args += ["--security-opt", "no-new-privileges"]
        seccomp = (csc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp in (None, "Unconfined"):
            args += ["--security-opt", "seccomp=unconfined"]
        limits = (c.get("resources") or {}).get("limits") or {}
        if limits.get("memory") is not None:
            mem = str(parse_quantity(limits["memory"]))
            args += ["--memory", mem, "--memory-swap", mem]
        if limits.get("cpu") is not None:
            args += ["--cpus", f"{parse_cpu(limits['cpu']):.3f}"]
        if spec.get("hostPID"):
            args += ["--pid", "host"]
        if self.pods_limit is not None and self.pods_limit >= 0:
            args += ["--pids-limit", str(self.pods_limit)]
        rc = spec.get("runtimeClassName")
        runtime = None
        if rc:
            runtime = self.handlers.get(rc, rc)
            args += ["--runtime", runtime]
        vols = {v.get("name"): v for v in spec.get("volumes") or []}
        empty = {}
        for m in c.get("volumeMounts") or []:
            v = vols.get(m.get("name"))
            if v is None or "emptyDir" not in v:
                continue
            ed = v["emptyDir"] or {}
            ro = ":ro" if m.get("readOnly") else ""
            if ed.get("medium") == "Memory":
                size = parse_quantity(ed["sizeLimit"]) if ed.get("sizeLimit") else 64 << 20
                args += ["--tmpfs", f"{m['mountPath']}:size={size},mode=1777"]
                continue
            host = os.path.join(pdir, "volumes", v["name"])
            if not os.path.isdir(host):
                os.makedirs(host)
                os.chmod(host, 0o777)
            if ed.get("sizeLimit"):
                empty[v["name"]] = (host, parse_quantity(ed["sizeLimit"]), ed["sizeLimit"])
            args += ["-v", f"{host}:{m['mountPath']}{ro}"]
        tpath = c.get("terminationMessagePath", DEFAULT_TERMINATION_PATH)
        if tpath:  # what the kubelet does: an empty, world-writable host file mounted there
            host = os.path.join(pdir, TERMINATION_LOG)
            open(host, "wb").close()
            os.chmod(host, 0o666)
            args += ["-v", f"{host}:{tpath}"]
        resolv = os.path.join(pdir, "resolv.conf")
        ns = pod["metadata"]["namespace"]
        with open(resolv, "w") as f:
            f.write(f"nameserver 10.96.0.10\nsearch {ns}.svc.cluster.local svc.cluster.local "
                    "cluster.local\noptions ndots:5\n")
        os.chmod(resolv, 0o644)
        args += ["-v", f"{resolv}:/etc/resolv.conf:ro"]
        if spec.get("automountServiceAccountToken") is not False:
            sa = os.path.join(pdir, "serviceaccount")
            os.makedirs(sa, exist_ok=True)
            account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
            for name, data in (("token", self.cluster.sa_token_for(ns, account)),
                               ("ca.crt", open(os.path.join(self.state_dir, "ca.crt")).read()),
                               ("namespace", ns)):
                with open(os.path.join(sa, name), "w") as f:
                    f.write(data)
                os.chmod(os.path.join(sa, name), 0o644)
            os.chmod(sa, 0o755)
            args += ["-v", f"{sa}:{SA_DIR}:ro"]
        return args, empty, runtime

    def env_args(self, pod, node, pod_ip, host_ip):
        env = pod_env(pod, node, pod_ip, host_ip, {
            "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
            "KUBERNETES_SERVICE_PORT_HTTPS": "443"})
        out = []
        for k, v in env.items():
            out += ["-e", f"{k}={v}"]
        return out

    @staticmethod
    def run_as_non_root_refusal(pod, image):
        """The kubelet's runAsNonRoot check: the effective uid (runAsUser, else the image's USER)
        must be a non-zero number. Returns the kubelet's error text or None."""
        spec = pod["spec"]
        c = spec["containers"][0]
        psc, csc = spec.get("securityContext") or {}, c.get("securityContext") or {}
        if not csc.get("runAsNonRoot", psc.get("runAsNonRoot")):
            return None
        uid = csc.get("runAsUser", psc.get("runAsUser"))
        ref = (f'(pod: "{pod["metadata"]["name"]}_{pod["metadata"]["namespace"]}'
               f'({pod["metadata"]["uid"]})", container: {c["name"]})')
        if uid is not None:
            return None if int(uid) != 0 else \
                f"container's runAsUser breaks non-root policy {ref}"
        user = docker("image", "inspect", "-f", "{{.Config.User}}", image,
                      check=False).stdout.strip().split(":")[0]
        if user in ("", "0", "root"):
            return f"container has runAsNonRoot and image will run as root {ref}"
        if not user.isdigit():
            return (f"container has runAsNonRoot and image has non-numeric user ({user}), "
                    f"cannot verify user is non-root {ref}")
        return None

    def image_present(self, image):
        return docker("image", "inspect", "-f", "{{.Id}}", image, check=False).returncode == 0

    def run_pod(self, ns, name, uid, pod, node):
        """The docker kubelet for one pod (its own thread); Cluster._kubelet calls it bound."""
        cl = self.cluster
        c = pod["spec"]["containers"][0]
        image = c["image"]
        def stuck_waiting(reason, message, event_reason, event_message):
            """The container never starts: waiting with `reason`, one Warning event."""
            with cl.store.cond:
                def waiting(st, p):
                    st["containerStatuses"][0]["state"] = {"waiting": {
                        "reason": reason, "message": message}}
                upd = cl._set_status_locked(ns, name, uid, waiting)
                if upd is not None:
                    cl._event_locked(upd, "Warning", event_reason, event_message, "kubelet")

        if not self.image_present(image):
            msg = f'Container image "{image}" is not present with pull policy of Never'
            stuck_waiting("ErrImageNeverPull", msg, "ErrImageNeverPull", msg)
            return
        refusal = self.run_as_non_root_refusal(pod, image)
        if refusal:
            stuck_waiting("CreateContainerConfigError", refusal, "Failed", f"Error: {refusal}")
            return
        short = uid.replace("-", "")[:12]
        pdir = os.path.join(self.pod_dir, uid)
        os.makedirs(pdir, exist_ok=True)
        os.chmod(pdir, 0o755)
        log_path = os.path.join(pdir, "container.log")
        open(log_path, "wb").close()
        dp = DockerPod(self, uid)
        dp.pdir, dp.log_path = pdir, log_path
        key = f"{ns}/{name}"
        with cl.store.cond:
            # Gone already (deleted and removed before this thread got here): make nothing.
            current = cl.store.get_locked("pods", ns, name)
            if (uid in cl.deleting or cl.stopping.is_set() or current is None
                    or current["metadata"]["uid"] != uid):
                return
            cl.workdirs[uid] = (pdir, log_path)
            cl.procs[uid] = dp
        host_net = bool(pod["spec"].get("hostNetwork"))
        nodeinfo = self.nodes[node]
        try:
            args, empty, runtime = self.app_args(pod, pdir, node)
            if host_net:
                pod_ip = nodeinfo["ip"]
                netns_pid = nodeinfo["pid"]
                net = f"container:{nodeinfo['container']}"
            else:
                dp.pause = f"fake-kube-{self.instance}-{short}-pause"
                _, netns_pid = self.infra_container(dp.pause, name[:63], (
                    "--read-only", "--user", "65534:65534",
                    "--label", f"{LABEL}.pod={ns}.{name}"))
                if dp.killed:  # deleted while the pause container was being made
                    dp.kill_tree()
                    return
                pod_ip, veth = self.alloc_ip()
                dp.pod_ip = pod_ip
                self.plug(netns_pid, pod_ip, veth)
                net = f"container:{dp.pause}"
            dp.netns_pid = netns_pid
            ent = {"pid": netns_pid, "ip": pod_ip, "key": key, "runtime": runtime,
                   "started": None, "applied": None}
            if not host_net:
                ent["veth"] = veth
                ent["chain"] = f"FKE-{self.instance}-{veth[len('fk') + 6:]}"
                dp.chain = ent["chain"]
                with cl.store.cond:
                    self.netns[uid] = ent
                    text, decision = self.desired_locked(uid, time.time())
                self.apply(uid, text, decision)
                self.host_top_chain()
            else:
                with cl.store.cond:
                    cl.pod_network[key] = {
                        "node": node, "podIP": pod_ip, "hostNetwork": True, "filtered": False,
                        "why": "hostNetwork pod: never filtered (shares the node container's "
                               "netns)", "policies": [], "rules": []}
            dp.app = f"fake-kube-{self.instance}-{short}-app"
            argv = ["create", "--name", dp.app, "--label", self.labels[0], "--label",
                    self.labels[1], "--label", f"{LABEL}.pod={ns}.{name}",
                    "--network", net, "--pull", "never", *args,
                    *self.env_args(pod, node, pod_ip, nodeinfo["ip"])]
            command = [str(x) for x in c.get("command") or []]
            cargs = [str(x) for x in c.get("args") or []]
            if command:
                argv += ["--entrypoint", command[0], image, *command[1:], *cargs]
            else:
                argv += [image, *cargs]
            if c.get("workingDir"):
                argv[1:1] = ["--workdir", c["workingDir"]]
            docker(*argv)
            if dp.killed:  # deleted while its containers were being made: undo them
                dp.kill_tree()
                return
            with open(log_path, "ab") as log:
                dp.attach = subprocess.Popen(["docker", "start", "-a", dp.app],
                                             stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT)
            started_wall = time.time()
            ent["started"] = started_wall
            info = self.wait_running(dp)
        except (RuntimeError, OSError, subprocess.TimeoutExpired, KeyError) as e:
            msg = str(e)
            with cl.store.cond:
                if cl.procs.get(uid) is not dp:
                    # Deleted while its containers were being made (kill_tree() ran before the
                    # pause container existed, so its `docker rm` missed it): undo them here.
                    # Found by ci/bench/reliability.d/interrupts (Ctrl-C during the canary).
                    gone = True
                else:
                    gone = False
            if gone:
                dp.kill_tree()
                return
            with cl.store.cond:
                if cl.procs.get(uid) is not dp:
                    return
                cl._set_status_locked(ns, name, uid, lambda st, p: cl._terminated(
                    st, p, 128, None, "StartError", msg[:1000], None))
            self.finish(dp)
            return
        if info is None:  # deleted while starting
            return
        dp.app_pid = info.get("Pid") or None
        started = now_rfc3339()
        with cl.store.cond:
            if cl.procs.get(uid) is not dp or cl._set_status_locked(
                    ns, name, uid, lambda st, p: self._running(st, started, pod_ip,
                                                               nodeinfo["ip"])) is None:
                return
        self.watch_pod(ns, name, uid, pod, dp, empty, started, started_wall)

    @staticmethod
    def _running(st, started, pod_ip, host_ip):
        from kube_cluster import Cluster
        Cluster._running(st, started)
        st["podIP"] = pod_ip
        st["podIPs"] = [{"ip": pod_ip}]
        st["hostIP"] = host_ip
        st["hostIPs"] = [{"ip": host_ip}]

    def wait_running(self, dp, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if dp.killed:
                return None
            p = docker("inspect", "-f", "{{json .State}}", dp.app, check=False)
            if p.returncode == 0:
                st = json.loads(p.stdout)
                if st.get("Running") or st.get("Status") in ("exited", "dead"):
                    return st
            time.sleep(0.05)
        raise RuntimeError(f"container {dp.app} did not start within {timeout}s")

    def watch_pod(self, ns, name, uid, pod, dp, empty, started, started_wall):
        cl = self.cluster
        deadline = pod["spec"].get("activeDeadlineSeconds")
        evicted = None
        deadline_hit = False
        last_du = 0.0
        while True:
            if dp.attach.poll() is not None:
                break
            if cl.stopping.is_set() or dp.killed:
                return
            with cl.store.cond:
                if cl.procs.get(uid) is not dp:
                    return
            now = time.monotonic()
            if empty and now - last_du >= 0.2:
                last_du = now
                for vol, (path, limit, text) in empty.items():
                    p = run(["du", "-sb", path], timeout=30, check=False)
                    try:
                        used = int(p.stdout.split()[0])
                    except (IndexError, ValueError):
                        continue
                    if used > limit:
                        evicted = (f'Usage of EmptyDir volume "{vol}" exceeds the limit '
                                   f'"{text}". ')
                        break
            if deadline and time.time() >= started_wall + float(deadline):
                deadline_hit = True
            if evicted or deadline_hit:
                docker("kill", dp.app, check=False, timeout=30)
                try:
                    dp.attach.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    dp.attach.kill()
                break
            time.sleep(0.1)
        p = docker("inspect", dp.app, check=False)
        full = (json.loads(p.stdout) or [{}])[0] if p.returncode == 0 else {}
        st = full.get("State") or {}
        cid, image_id = full.get("Id", dp.app), full.get("Image", "")
        code = st.get("ExitCode", 137 if (evicted or deadline_hit) else 255)
        # OOMKilled as containerd's CRI reports it: the runtime's TaskOOM, before or after the
        # exit (kube_oom.py says why State.OOMKilled alone loses it under load).
        oom = bool(st.get("OOMKilled"))
        if not oom and self.oom_events is not None and full.get("Id"):
            late = code == 137 and not (evicted or deadline_hit)
            oom = self.oom_events.oom_killed(full["Id"], LATE_OOM_WAIT_S if late else 0.0)
        finished = now_rfc3339()
        cname = pod["spec"]["containers"][0]["name"]
        message = termination_message(pod["spec"]["containers"][0], dp.pdir, dp.log_path, code)
        if evicted:
            # The real kubelet removes an evicted pod's containers, and their logs with them,
            # before a reader gets there (measured on ci/cluster: pods/log answered 200 with no
            # probe record).
            open(dp.log_path, "wb").close()
        with cl.store.cond:
            if cl.procs.get(uid) is not dp:
                return
            if oom:
                fn = lambda s, p: cl._terminated(s, p, 137, None, "OOMKilled", message, started,
                                                 finished)
            elif evicted or deadline_hit:
                def fn(s, p):
                    cl._terminated(s, p, 137, None, "Error", message, started, finished)
                    s["phase"] = "Failed"
                    if evicted:
                        s.update(reason="Evicted", message=evicted.strip())
                    else:
                        s.update(reason="DeadlineExceeded", message=(
                            f"Pod was active on the node longer than the specified deadline"))
            else:
                fn = lambda s, p: cl._terminated(s, p, code, None,
                                                 "Completed" if code == 0 else "Error", message,
                                                 started, finished)
            def with_id(s, p, fn=fn):
                fn(s, p)
                cs = s["containerStatuses"][0]
                cs["state"]["terminated"]["containerID"] = f"docker://{cid}"
                cs["containerID"] = f"docker://{cid}"
                cs["imageID"] = image_id
            upd = cl._set_status_locked(ns, name, uid, with_id)
            if upd is not None and evicted:
                cl._event_locked(upd, "Warning", "Evicted", evicted.strip(), "kubelet")
            if upd is not None and deadline_hit:
                cl._event_locked(upd, "Normal", "DeadlineExceeded",
                                 "Pod was active on the node longer than the specified "
                                 "deadline", "kubelet")
        _ = cname
        # The sandbox goes away with the pod's end; the exited app container stays until the
        # pod is deleted (docker rm -f in DockerPod.kill_tree).
        self.finish(dp, keep_app=True)

    def release_netns(self, dp):
        """Forgets the pod's netns: its jump leaves the host top chain, its chains go."""
        with self.cluster.store.cond:
            ent = self.netns.pop(dp.uid, None)
        if getattr(dp, "chain", None) and not self.stopping:
            try:
                self.host_top_chain()
                self.drop_host_chains(dp.chain)
            except (RuntimeError, OSError, subprocess.TimeoutExpired):
                pass
        return ent

    def finish(self, dp, keep_app=False):
        self.release_netns(dp)
        if dp.pause:
            docker("rm", "-f", dp.pause, check=False, timeout=60)
            if dp.pod_ip:
                self.release_ip(dp.pod_ip)
                dp.pod_ip = None
        if not keep_app and dp.app:
            docker("rm", "-f", dp.app, check=False, timeout=60)

    def forget(self, uid):
        with self.cluster.store.cond:
            self.netns.pop(uid, None)

    # ------------------------------------------------------------------ state / shutdown
    def containers(self):
        p = docker("ps", "-a", "--filter", f"label={LABEL}={self.instance}", "--format",
                   "{{json .}}", check=False)
        out = []
        for line in p.stdout.splitlines():
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue
            labels = dict(kv.split("=", 1) for kv in (d.get("Labels") or "").split(",")
                          if "=" in kv)
            pod = labels.get(f"{LABEL}.pod", "")
            out.append({"id": d.get("ID"), "name": d.get("Names"), "state": d.get("State"),
                        "status": d.get("Status"), "image": d.get("Image"),
                        "pod": pod.replace(".", "/", 1) if pod else None})
        return out

    def state(self):
        with self.dns_lock:
            log = list(self.dns_log)
        return {"network": {"name": self.net_name, "subnet": self.subnet,
                            "gateway": self.gateway, "bridge": self.bridge},
                "nodes": {n: {k: v for k, v in info.items() if k != "applied"}
                          for n, info in self.nodes.items()},
                "dns_queries": log}

    def shutdown(self):
        self.stopping = True
        if self.oom_events is not None:
            self.oom_events.close()
        if self.dns is not None:
            self.dns.close()
        ids = docker("ps", "-aq", "--filter", f"label={LABEL}={self.instance}",
                     check=False).stdout.split()
        if ids:
            docker("rm", "-f", *ids, check=False, timeout=120)
        docker("network", "rm", self.net_name, check=False, timeout=60)
        if self.host_jumps:
            remove_host_chains(self.instance, self.bridge)
        shutil.rmtree(self.pod_dir, ignore_errors=True)
