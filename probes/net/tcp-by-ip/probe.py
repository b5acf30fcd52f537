# net.tcp-by-ip: raw TCP to an IP:port without any name lookup. Reached only when application
# bytes carrying the nonce come back (the TCP echo canary), because proxies and user-space network
# stacks accept a SYN locally: connect() succeeding alone proves nothing.
#
# transport [io_uring] makes the same exchange without the connect/send/recv system calls: the
# operations go through an io_uring submission queue (IORING_OP_CONNECT, SEND, RECV), which the
# kernel executes on the task's behalf. A seccomp filter that refuses connect() but lets
# io_uring_setup through does not see them (docs/traps.md).

TARGET = PARAMS.get("target", "{canary.tcp}")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))
TRANSPORT = PARAMS.get("transport", ["socket"])


class Uring:
    """A minimal io_uring over ctypes and mmap: one operation at a time, waited for with a
    deadline. x86_64 and aarch64 share the syscall numbers (425 setup, 426 enter)."""
    SETUP, ENTER = 425, 426
    OP_CONNECT, OP_SEND, OP_RECV = 16, 26, 27
    OFF_SQ_RING, OFF_CQ_RING, OFF_SQES = 0, 0x8000000, 0x10000000
    FEAT_SINGLE_MMAP, ENTER_GETEVENTS = 1, 1

    def __init__(self):
        import ctypes, mmap, struct
        self.ct, self.st = ctypes, struct
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.syscall.restype = ctypes.c_long
        self.params = ctypes.create_string_buffer(120)  # struct io_uring_params
        fd = self.libc.syscall(ctypes.c_long(self.SETUP), ctypes.c_uint(4), self.params)
        if fd < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), "io_uring_setup")
        self.fd = fd
        p = struct.unpack_from("<10I", self.params, 0)
        sq_entries, cq_entries, features = p[0], p[1], p[5]
        sq = struct.unpack_from("<7I", self.params, 40)   # head tail mask entries flags dropped array
        cq = struct.unpack_from("<6I", self.params, 80)   # head tail mask entries overflow cqes
        self.sq_off, self.cq_off, self.sq_entries = sq, cq, sq_entries
        sq_size, cq_size = sq[6] + sq_entries * 4, cq[5] + cq_entries * 16
        prot, flags = mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | getattr(
            mmap, "MAP_POPULATE", 0)
        if features & self.FEAT_SINGLE_MMAP:
            size = max(sq_size, cq_size)
            self.sq_ring = self.cq_ring = mmap.mmap(fd, size, flags, prot, offset=self.OFF_SQ_RING)
        else:
            self.sq_ring = mmap.mmap(fd, sq_size, flags, prot, offset=self.OFF_SQ_RING)
            self.cq_ring = mmap.mmap(fd, cq_size, flags, prot, offset=self.OFF_CQ_RING)
        self.sqes = mmap.mmap(fd, sq_entries * 64, flags, prot, offset=self.OFF_SQES)
        self.keep = []  # buffers the kernel may still point at

    def u32(self, ring, off):
        return self.st.unpack_from("<I", ring, off)[0]

    def submit(self, opcode, fd, addr=0, length=0, off=0, op_flags=0):
        """Queues one operation, enters the kernel and waits for its completion -> res
        (>= 0, or -errno), or raises TimeoutError (the thread is left waiting)."""
        tail, mask = self.u32(self.sq_ring, self.sq_off[1]), self.u32(self.sq_ring, self.sq_off[2])
        index = tail & mask
        sqe = self.st.pack("<BBHiQQIIQHHiQQ", opcode, 0, 0, fd, off, addr, length, op_flags,
                           tail + 1, 0, 0, 0, 0, 0)
        self.sqes[index * 64:(index + 1) * 64] = sqe
        self.st.pack_into("<I", self.sq_ring, self.sq_off[6] + index * 4, index)
        self.st.pack_into("<I", self.sq_ring, self.sq_off[1], tail + 1)
        n = self.libc.syscall(self.ct.c_long(self.ENTER), self.ct.c_uint(self.fd),
                              self.ct.c_uint(1), self.ct.c_uint(1),
                              self.ct.c_uint(self.ENTER_GETEVENTS), None, self.ct.c_size_t(0))
        if n < 0:
            raise OSError(self.ct.get_errno(), os.strerror(self.ct.get_errno()), "io_uring_enter")
        head = self.u32(self.cq_ring, self.cq_off[0])
        cmask = self.u32(self.cq_ring, self.cq_off[2])
        _, res, _ = self.st.unpack_from("<QiI", self.cq_ring, self.cq_off[5] + (head & cmask) * 16)
        self.st.pack_into("<I", self.cq_ring, self.cq_off[0], head + 1)
        return res

    def buffer(self, data_or_size):
        b = self.ct.create_string_buffer(data_or_size)
        self.keep.append(b)
        return b, self.ct.addressof(b)


def uring_echo(host, port, timeout):
    """tcp_echo's exchange through io_uring -> (outcome, evidence, errno, detail, facts)."""
    import threading
    facts = dict(transport="io_uring", connected=False)
    box = {}

    def exchange():
        ring = Uring()
        facts["io_uring_setup"] = "allowed"
        v6 = ":" in host  # sockaddr_in6 (28 bytes) for an IPv6 literal, else sockaddr_in (16)
        family = socket.AF_INET6 if v6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)  # socket() only: no connect()
        box["sock"] = sock
        sa = socket.inet_pton(family, host)
        packed = (ring.st.pack("<HHI16sI", family, socket.htons(port), 0, sa, 0) if v6 else
                  ring.st.pack("<HH4s8x", family, socket.htons(port), sa))
        _, addr = ring.buffer(packed)
        res = ring.submit(Uring.OP_CONNECT, sock.fileno(), addr=addr, off=len(packed))
        if res in (-22, -95):  # EINVAL, EOPNOTSUPP: this io_uring has no connect (gVisor's)
            box["no_op"] = errno_name(OSError(-res, ""))
            return
        facts["connect_res"] = res
        if res < 0:
            raise OSError(-res, os.strerror(-res))
        # A connect the network refused can complete with 0 and leave the error on the socket
        # (seen with an ICMP net-unreachable): the socket's own error says whether it connected.
        pending = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if pending:
            raise OSError(pending, os.strerror(pending))
        facts["connected"] = True
        line = ("SANDPROBE %s %s\n" % (NONCE, INVOCATION)).encode()
        _, out = ring.buffer(line)
        res = ring.submit(Uring.OP_SEND, sock.fileno(), addr=out, length=len(line))
        if res < 0:
            raise OSError(-res, os.strerror(-res))
        reply = b""
        while b"\n" not in reply and len(reply) < 4096:
            buf, where = ring.buffer(4096)
            res = ring.submit(Uring.OP_RECV, sock.fileno(), addr=where, length=4096)
            if res <= 0:
                break
            reply += buf.raw[:res]
        box["reply"] = reply

    def run():
        try:
            exchange()
        except BaseException as exc:  # reported below, whatever it was
            box["exc"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout + 0.5)  # the connect is bounded by the timeout as the socket path's is
    if worker.is_alive():
        return ("blocked", "absence", "ETIMEDOUT", "no completion within the timeout", facts)
    exc = box.get("exc")
    if exc is not None:
        if getattr(exc, "filename", None) == "io_uring_setup" or "io_uring_setup" not in facts:
            facts["io_uring_setup"] = errno_name(exc)
            if errno_name(exc) in ("EPERM", "ENOSYS", "EACCES"):
                return ("blocked", "positive", errno_name(exc),
                        "io_uring_setup refused: no io_uring here", facts)
            return ("error", "absence", errno_name(exc), "io_uring set-up failed: %s" % exc, facts)
        if not facts["connected"]:
            return net_failure(exc, host) + (facts,)
        return ("no_echo", "absence", errno_name(exc), "connected, but no nonce came back", facts)
    if "no_op" in box:
        facts["io_uring_connect"] = box["no_op"]
        return ("blocked", "positive", box["no_op"],
                "this io_uring does not implement IORING_OP_CONNECT", facts)
    reply = box.get("reply", b"")
    facts.update(reply_bytes=len(reply),
                 canary_echo=("SANDPROBE-ECHO %s %s" % (NONCE, INVOCATION)).encode() in reply)
    if NONCE.encode() in reply:
        return "reached", "positive", None, "the far end sent the nonce back (io_uring)", facts
    return "no_echo", "absence", None, "connected, but no nonce came back", facts


def io_uring_disabled():
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def exchange(transport):
    if transport == "io_uring":
        out = uring_echo(host, port, TIMEOUT_S)
        out[4]["io_uring_disabled"] = io_uring_disabled()
        return out
    if transport == "socket":
        return tcp_echo(host, port, TIMEOUT_S)
    return "error", "absence", "EINVAL", "unknown transport %r" % str(transport)[:32], {}


host, port = split_hostport(TARGET, 80)
# One transport, or several in turn (the most exposed decides: a filter must stop every path).
ALL = TRANSPORT if isinstance(TRANSPORT, list) else [TRANSPORT]
emit("start", target=TARGET, transport=TRANSPORT)
tried = []
for t in ALL:
    o = exchange(t)
    tried.append(dict(transport=t, outcome=o[0], evidence=o[1], errno=o[2], detail=o[3],
                      facts=o[4]))
RANK = ["reached", "refused", "no_echo", "error", "blocked"]
best = min(tried, key=lambda t: RANK.index(t["outcome"]) if t["outcome"] in RANK else 3)
evidence = best["evidence"]
if best["outcome"] == "blocked" and any(t["evidence"] != "positive" for t in tried):
    evidence = "absence"
detail = best["detail"]
if len(tried) > 1:
    detail = "; ".join("%s: %s%s" % (t["transport"], t["outcome"], " (%s)" % t["errno"]
                                      if t["errno"] else "") for t in tried)
extra = dict(best["facts"])
if len(tried) > 1:
    extra["transports"] = tried
result(best["outcome"], evidence, best["errno"], detail, target=TARGET, **extra)
