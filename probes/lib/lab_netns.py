"""A network namespace the test makes itself, with a veth pair (v0 10.253.0.2/24, v1 10.253.0.1/24)
and a default route via 10.253.0.1: the lateral-movement probes' gateway and own-subnet paths
run in it, so their traffic never leaves the namespace (traffic rule). Needs root (CI is root);
fails, never skips, without it. Gone when its holder process ends: nothing to clean up after."""
import os
import subprocess
import time

GATEWAY = "10.253.0.1"
OWN = "10.253.0.2"
SETUP = ("ip link set lo up && ip link add v0 type veth peer name v1 && ip link set v0 up && "
         "ip link set v1 up && ip addr add %s/24 dev v0 && ip addr add %s/24 dev v1 && "
         "ip route add default via %s dev v0" % (OWN, GATEWAY, GATEWAY))

# A one-connection-at-a-time TCP echo canary in the namespace: "SANDPROBE <n> <i>" -> echo.
ECHO_SERVER = r'''
import socket, sys
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((sys.argv[1], 0)); srv.listen(8)
print(srv.getsockname()[1], flush=True)
while True:
    c, _ = srv.accept()
    line = c.makefile("rb").readline(512)
    if line.startswith(b"SANDPROBE "):
        c.sendall(b"SANDPROBE-ECHO " + line[len(b"SANDPROBE "):])
    c.close()
'''


class LabNetns:
    """with LabNetns() as ns: ns.prefix runs a command inside; ns.echo_canary(addr) -> port."""

    def __enter__(self):
        self.holder = subprocess.Popen(["unshare", "-n", "sleep", "120"])
        self.prefix = ["nsenter", "-t", str(self.holder.pid), "-n"]
        self.servers = []
        mine = os.readlink("/proc/self/ns/net")
        for _ in range(100):  # never set up before unshare has moved the holder out of ours
            try:
                if os.readlink("/proc/%d/ns/net" % self.holder.pid) != mine:
                    break
            except OSError:
                pass
            time.sleep(0.02)
        else:
            self.__exit__()
            raise AssertionError("unshare -n did not make a network namespace (root needed)")
        out = subprocess.run(self.prefix + ["sh", "-c", SETUP], capture_output=True, text=True)
        if out.returncode != 0:
            self.__exit__()
            raise AssertionError("lab netns set-up failed: %s" % out.stderr)
        return self

    def echo_canary(self, address):
        server = subprocess.Popen(self.prefix + ["python3", "-c", ECHO_SERVER, address],
                                  stdout=subprocess.PIPE, text=True)
        self.servers.append(server)
        return int(server.stdout.readline())

    def __exit__(self, *exc):
        for p in self.servers + [self.holder]:
            p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()
