"""A tiny seccomp filter compiler for tests: a classic BPF program that answers EPERM to the
named system calls and allows every other, in the raw form bubblewrap's `--seccomp FD` reads
(an array of struct sock_filter). Stdlib only; the architectures the probe image runs on.

    open(path, "wb").write(deny(["connect"]))     # then: bwrap --seccomp 9 ... 9<path

Calls of another architecture's ABI are allowed (the filter checks the audit arch first) and
x32 calls (nr >= 0x40000000 on x86_64) are refused outright, so the filter cannot be sidestepped
through them.
"""
import platform
import struct

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SYSCALLS = {
    "x86_64": {"connect": 42, "sendto": 44, "io_uring_setup": 425, "io_uring_enter": 426,
               "io_uring_register": 427},
    "aarch64": {"connect": 203, "sendto": 206, "io_uring_setup": 425, "io_uring_enter": 426,
                "io_uring_register": 427},
}
LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
RET_ALLOW, RET_EPERM = 0x7FFF0000, 0x00050000 | 1
X32_BIT = 0x40000000


def deny(names, machine=None):
    """The filter refusing `names` with EPERM -> bytes (8 per instruction)."""
    machine = machine or platform.machine()
    numbers = [SYSCALLS[machine][n] for n in names]
    prog = [(LD_W_ABS, 0, 0, 4)]  # seccomp_data.arch
    rest = 3 + 2 * len(numbers)  # jump from the arch check over the rest to the final allow
    prog.append((JEQ_K, 0, rest, AUDIT_ARCH[machine]))  # another ABI: allow
    prog.append((LD_W_ABS, 0, 0, 0))  # seccomp_data.nr
    prog.append((JGE_K, 0, 1, X32_BIT))
    prog.append((RET_K, 0, 0, RET_EPERM))
    for nr in numbers:
        prog.append((JEQ_K, 0, 1, nr))
        prog.append((RET_K, 0, 0, RET_EPERM))
    prog.append((RET_K, 0, 0, RET_ALLOW))
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


# `sh -c` opening the filter file on fd 9 for bubblewrap: prefix + [path, "bwrap", "--seccomp",
# "9", ...]. The harness's command driver has no way to pass a descriptor, a shell does.
FD9_SHELL = ["sh", "-c", 'exec 9<"$0"; exec "$@"']
