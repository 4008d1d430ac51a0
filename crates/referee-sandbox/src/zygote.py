# Referee sandbox zygote: a warm Python interpreter that forks one isolated process per test.
#
# Started by the Rust parent (slot.rs) inside fresh user, mount, network, IPC and UTS namespaces,
# as root of that user namespace (an unprivileged uid on the host). It builds a minimal read-only
# root, becomes PID 1 of its own PID namespace, pre-imports common modules, then serves requests.
#
# Per request it clones G straight into new PID, mount, IPC and UTS namespaces. G is PID 1 of
# the run's namespace: it mounts a fresh /proc, a private
# tmpfs at /tmp (the working directory) and /dev/shm, drops to uid 1000 (no capabilities), sets
# hard rlimits, no_new_privs and the seccomp filter, and only then touches the untrusted code.
# When G dies the kernel kills everything left in its PID namespace.
#
# Verdicts are never computed here: the child returns raw stdout/stderr/exit status and, for
# call tests, a JSON value; the Rust parent compares. Expected outputs never enter the sandbox.
#
# Protocol (both directions): u32 little-endian header length, JSON header, then the blobs whose
# lengths the header lists under "blobs".
import os, sys, struct, json, ctypes, select, signal, time, resource

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
libc.unshare.argtypes = [ctypes.c_int]
libc.sethostname.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
libc.syscall.restype = ctypes.c_long

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID = 0x20000, 0x4000000, 0x8000000, 0x20000000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS = 1, 4, 22, 38
SECCOMP_MODE_FILTER = 2
SYS_pivot_root = 155  # x86_64 numbers; the init frame gives the machine's
SYS_clone = 56

RUN_UID = 1000
PROTO_IN = PROTO_OUT = -1


def check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def mount(src, tgt, fstype, flags, data=None):
    enc = lambda s: s.encode() if isinstance(s, str) else s
    check(libc.mount(enc(src), enc(tgt), enc(fstype), flags, enc(data)), "mount %s" % tgt)


def bind_ro(src, dst):
    mount(src, dst, None, MS_BIND | MS_REC)
    mount(None, dst, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def read_exact(n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(PROTO_IN, n - len(buf))
        if not chunk:
            os._exit(0)  # the parent closed the pipe: shut down
        buf += chunk
    return bytes(buf)


def read_frame():
    (n,) = struct.unpack("<I", read_exact(4))
    hdr = json.loads(read_exact(n))
    return hdr, [read_exact(k) for k in hdr.get("blobs", [])]


def write_frame(hdr, blobs=()):
    hdr["blobs"] = [len(b) for b in blobs]
    h = json.dumps(hdr).encode()
    data = memoryview(struct.pack("<I", len(h)) + h + b"".join(blobs))
    while data:
        data = data[os.write(PROTO_OUT, data):]


# ---------------------------------------------------------------------------------------------
# Start-up: the root file system and the zygote's own PID namespace.

def build_root(init):
    # The new root is built on a tmpfs mounted over some directory of the (private) old tree;
    # pick one that hides none of the directories still to be bound.
    sources = [src for src, _ in init.get("binds", [])] + ["/usr", "/etc", "/dev"]
    R = next(d for d in ("/mnt", "/srv", "/media", "/opt", "/tmp", "/var")
             if os.path.isdir(d) and not os.path.islink(d)
             and not any(s == d or s.startswith(d + "/") for s in sources))
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", R, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    for d in ("usr", "etc", "dev", "proc", "tmp", ".old"):
        os.mkdir(R + "/" + d)
    bind_ro("/usr", R + "/usr")
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = "/" + name
        if os.path.islink(p):
            os.symlink(os.readlink(p), R + p)
        elif os.path.isdir(p):
            os.mkdir(R + p)
            bind_ro(p, R + p)
    # /etc holds only what the runtimes read; never the host's secrets or configuration.
    with open(R + "/etc/passwd", "w") as f:
        f.write("root:x:0:0:root:/:/usr/sbin/nologin\nsandbox:x:%d:%d::/tmp:/usr/sbin/nologin\n" % (RUN_UID, RUN_UID))
    with open(R + "/etc/group", "w") as f:
        f.write("root:x:0:\nsandbox:x:%d:\n" % RUN_UID)
    with open(R + "/etc/hosts", "w") as f:
        f.write("127.0.0.1 localhost sandbox\n")
    for name in ("ld.so.cache", "localtime"):
        if os.path.exists("/etc/" + name) and not os.path.isdir("/etc/" + name):
            with open(R + "/etc/" + name, "wb") as out, open("/etc/" + name, "rb") as src:
                out.write(src.read())
    if os.path.isdir("/etc/alternatives"):
        os.mkdir(R + "/etc/alternatives")
        bind_ro("/etc/alternatives", R + "/etc/alternatives")
    mount("tmpfs", R + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for dev in ("null", "zero", "full", "random", "urandom"):
        open(R + "/dev/" + dev, "w").close()
        mount("/dev/" + dev, R + "/dev/" + dev, None, MS_BIND)
    os.symlink("/tmp/.shm", R + "/dev/shm")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, R + "/dev/" + name)
    mount(None, R + "/dev", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
    for src, dst in init.get("binds", []):
        target = R + dst
        os.makedirs(target, exist_ok=True)
        bind_ro(src, target)
    return R


def become_init(R, init):
    """Runs in PID 1 of the zygote's PID namespace: mount its /proc and switch root."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    mount("proc", R + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir(R)
    check(libc.syscall(init.get("sys_pivot_root", SYS_pivot_root), b".", b".old"), "pivot_root")
    os.chdir("/")
    check(libc.umount2(b"/.old", MNT_DETACH), "umount old root")
    os.rmdir("/.old")
    mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def main():
    global PROTO_IN, PROTO_OUT, RUN_UID
    PROTO_IN, PROTO_OUT = os.dup(0), os.dup(1)  # dup'd fds are close-on-exec
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    init, _ = read_frame()
    RUN_UID = init.get("run_uid", RUN_UID)
    try:
        R = build_root(init)
    except Exception as e:
        write_frame({"ready": False, "error": "root setup: %s" % e})
        os._exit(1)
    pid = os.fork()
    if pid:
        # Outer process: stays in the host's PID namespace only to wait; the parent kills it at
        # shutdown and its death kills PID 1 below (PDEATHSIG), which kills every run.
        os.close(PROTO_IN)
        os.close(PROTO_OUT)
        while True:
            try:
                _, st = os.waitpid(pid, 0)
                os._exit(os.waitstatus_to_exitcode(st) & 0xFF)
            except InterruptedError:
                continue
    try:
        become_init(R, init)
        for m in init.get("preload", []):
            try:
                __import__(m)
            except Exception:
                pass
        global SECCOMP
        SECCOMP = [bytes.fromhex(p) for p in init.get("seccomp", [])]
        # The zygote's own filter: everything no run (and no zygote) ever needs. Every run
        # inherits it; the zygote has CAP_SYS_ADMIN in its namespace, so needs no no_new_privs.
        for prog in init.get("seccomp_zygote", []):
            load_seccomp(bytes.fromhex(prog))
        # Dispositions every run should start with, set once here (runs inherit them): Python
        # ignores SIGPIPE and SIGXFSZ and handles SIGINT, a plain program does none of that.
        for sig in (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        global SYS_clone
        SYS_clone = init.get("sys_clone", SYS_clone)
    except Exception as e:
        write_frame({"ready": False, "error": "zygote start: %s" % e})
        os._exit(1)
    # Objects that exist now are never collected: the collector then leaves their pages alone
    # in the forked runs, which saves copy-on-write faults on every run.
    import gc
    gc.collect()
    gc.freeze()
    write_frame({"ready": True, "pid": os.getpid(), "python": sys.version.split()[0]})
    serve()


SECCOMP = []


def serve():
    while True:
        req, blobs = read_frame()
        try:
            resp, out = run(req, blobs)
        except Exception as e:  # a bug here must not take the slot down silently
            resp, out = {"end": "error", "message": "zygote: %r" % (e,)}, []
        write_frame(resp, out)


# ---------------------------------------------------------------------------------------------
# One run.

def memfd(name, data=b""):
    fd = os.memfd_create(name, 0)
    if data:
        os.write(fd, data)
        os.lseek(fd, 0, 0)
    return fd


def read_memfd(fd, limit, tail=False):
    size = os.fstat(fd).st_size
    if tail and size > limit:
        os.lseek(fd, size - limit, 0)
        return os.read(fd, limit)
    os.lseek(fd, 0, 0)
    chunks, left = [], min(size, limit)
    while left > 0:
        b = os.read(fd, min(left, 1 << 20))
        if not b:
            break
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks)


def run(req, blobs):
    lim = req["limits"]
    fds = {
        "in": memfd("stdin", blobs[1] if len(blobs) > 1 else b""),
        "out": memfd("stdout"),
        "err": memfd("stderr"),
        "res": memfd("result"),
    }
    # G tells us on this pipe that its setup is done, then closes it before it touches untrusted
    # code. So "the sandbox failed" is known from a channel the run cannot write: a run that dies
    # (or prints "setup failed") after that point is the run's own failure.
    sr, sw = os.pipe()
    t0 = time.monotonic()
    # clone(2) straight into the run's new PID, mount, IPC and UTS namespaces: one process
    # creation per test (os.fork + unshare + fork costs two, and Python's after-fork hooks).
    # The zygote is single-threaded and ctypes drops the GIL around the call, so the child
    # resumes in a consistent interpreter.
    g = libc.syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | signal.SIGCHLD, 0, 0, 0, 0)
    if g == 0:
        try:
            os.close(sr)
            os.close(PROTO_IN)
            os.close(PROTO_OUT)
            child_g(req, blobs, fds, sw)
        except BaseException as e:
            try:
                os.write(2, ("sandbox setup failed: %r\n" % (e,)).encode())
            except BaseException:
                pass
        os._exit(112)
    os.close(sw)
    os.close(fds["in"])
    if g < 0:
        e = ctypes.get_errno()
        os.close(sr)
        for k in ("out", "err", "res"):
            os.close(fds[k])
        return {"end": "error", "message": "clone: %s" % os.strerror(e)}, []
    pidfd = os.pidfd_open(g)
    deadline = t0 + lim["wall_ms"] / 1000.0
    timed_out = False
    # Wait for G to exit (when it does, the kernel kills everything left in its namespace), or
    # for the wall clock.
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            os.kill(g, signal.SIGKILL)
            break
        ready, _, _ = select.select([pidfd], [], [], left)
        if ready:
            break
    while True:
        try:
            _, st, ru = os.wait4(g, 0)
            break
        except InterruptedError:
            continue
    os.close(pidfd)
    wall_us = int((time.monotonic() - t0) * 1e6)
    os.set_blocking(sr, False)
    try:
        setup_ok = os.read(sr, 1) == b"s"
    except BlockingIOError:
        setup_ok = False
    os.close(sr)
    resp = {"wall_us": wall_us, "cpu_us": int((ru.ru_utime + ru.ru_stime) * 1e6), "maxrss_kb": ru.ru_maxrss}
    if not setup_ok and not timed_out:
        resp["end"] = "setup_failed"
    elif os.WIFEXITED(st):
        resp["end"], resp["code"] = "exited", os.WEXITSTATUS(st)
    else:
        resp["end"], resp["signal"] = "signaled", os.WTERMSIG(st)
    if timed_out:
        resp["timed_out"] = True
    cap = lim["output_bytes"]
    out = [
        read_memfd(fds["out"], cap + 1),
        read_memfd(fds["err"], 4096, tail=True),
        read_memfd(fds["res"], max(cap, 64 << 20) + 1),
    ]
    resp["stdout_size"] = os.fstat(fds["out"]).st_size
    resp["stderr_size"] = os.fstat(fds["err"]).st_size
    for k in ("out", "err", "res"):
        os.close(fds[k])
    return resp, out


def child_g(req, blobs, fds, setup_w):
    """PID 1 of the run: isolate, restrict, then run the untrusted code. Never returns."""
    lim = req["limits"]
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
          "mode=0700,uid=%d,gid=%d,size=%d" % (RUN_UID, RUN_UID, lim["disk_bytes"]))
    os.mkdir("/tmp/.shm", 0o1777)  # /dev/shm links here: POSIX shared memory is per run too
    os.chmod("/tmp/.shm", 0o1777)
    libc.sethostname(b"sandbox", 7)
    os.chdir("/tmp")
    fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
    os.write(fd, b"1000")  # the zygote runs at -1000 (or 0): the run is what the OOM killer takes
    os.close(fd)
    for fd, target in (("in", 0), ("out", 1), ("err", 2), ("res", 3)):
        os.dup2(fds[fd], target)
    os.dup2(setup_w, 4)
    os.closerange(5, 65536)
    cpu = max(1, -(-lim["cpu_ms"] // 1000))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_bytes"], lim["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_NPROC, (lim["processes"], lim["processes"]))
    if lim.get("address_space_bytes"):
        a = lim["address_space_bytes"]
        resource.setrlimit(resource.RLIMIT_AS, (a, a))
    os.setgroups([])
    os.setresgid(RUN_UID, RUN_UID, RUN_UID)
    os.setresuid(RUN_UID, RUN_UID, RUN_UID)  # leaves root of the namespace: all capabilities go
    # Die with the zygote; set after the uid change, which clears it. (Had the zygote died
    # before this line, the write on the setup pipe below fails and the run ends there.)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    for prog in SECCOMP:
        load_seccomp(prog)
    os.environ.clear()
    os.environ.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
                       "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"})
    os.write(4, b"s")  # setup done: from here on, whatever happens is the run's doing
    os.close(4)
    HARNESS[req["mode"]](req, blobs)
    os._exit(0)


class SockFilterProg(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load_seccomp(prog):
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = SockFilterProg(len(prog) // 8, ctypes.addressof(buf))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0), "seccomp")


# ---------------------------------------------------------------------------------------------
# Harnesses: what G does once it is locked down. `blobs[0]` is the code, `blobs[1]` stdin.

HARNESS = {}  # filled by harness.py, appended to this file
