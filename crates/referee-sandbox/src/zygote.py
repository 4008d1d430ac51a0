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
# Protocol: one SOCK_SEQPACKET socket (fd 0). Each message is a JSON header with file
# descriptors attached: a request brings sealed memfds holding the code, stdin and the run's
# other inputs; a reply returns the stdout, stderr and result memfds. The zygote never reads
# what they hold: every run is cloned from the zygote's memory, so anything it had read (an
# earlier run's output, another item's test code) would be there for the next run to find.
import os, sys, struct, json, ctypes, select, signal, time, resource, socket, fcntl

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
PROTO = None  # the socket to the Rust parent


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


def recv():
    """A header and its descriptors; exits when the parent has gone."""
    try:
        data, fds, _, _ = socket.recv_fds(PROTO, 1 << 20, 16)
    except OSError:
        os._exit(0)
    if not data:
        os._exit(0)
    return json.loads(data), fds


def send(hdr, fds=()):
    socket.send_fds(PROTO, [json.dumps(hdr).encode()], list(fds))


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
    global PROTO, RUN_UID
    PROTO = socket.socket(fileno=os.dup(0))  # dup'd fds are close-on-exec
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    init, _ = recv()
    RUN_UID = init.get("run_uid", RUN_UID)
    try:
        R = build_root(init)
    except Exception as e:
        send({"ready": False, "error": "root setup: %s" % e})
        os._exit(1)
    pid = os.fork()
    if pid:
        # Outer process: stays in the host's PID namespace only to wait; the parent kills it at
        # shutdown and its death kills PID 1 below (PDEATHSIG), which kills every run.
        PROTO.close()
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
        # The run's filters, made into ready sock_fprog structures once.
        SECCOMP = [fprog(bytes.fromhex(p)) for p in init.get("seccomp", [])]
        # The zygote's own filter: everything no run (and no zygote) ever needs. Every run
        # inherits it; the zygote has CAP_SYS_ADMIN in its namespace, so needs no no_new_privs.
        for prog in init.get("seccomp_zygote", []):
            load_seccomp(bytes.fromhex(prog))
        # Dispositions every run should start with, set once here (runs inherit them): Python
        # ignores SIGPIPE and SIGXFSZ and handles SIGINT, a plain program does none of that.
        for sig in (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        # No cap on the digits of an int read or printed: Python 3.11 refuses over 4,300, which
        # fails correct big-number answers and lets a completion that is one huge number make
        # json.loads raise in the harness (an error row instead of a score).
        sys.set_int_max_str_digits(0)
        # What every run would otherwise set for itself, done once: each run's new UTS
        # namespace copies this host name, and runs inherit the environment, no supplementary
        # groups (the launcher dropped them) and these limits.
        libc.sethostname(b"sandbox", 7)
        os.environ.clear()
        os.environ.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
                           "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"})
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        global SYS_clone
        SYS_clone = init.get("sys_clone", SYS_clone)
    except Exception as e:
        send({"ready": False, "error": "zygote start: %s" % e})
        os._exit(1)
    global STDIO
    STDIO = make_stdio()
    # Objects that exist now are never collected: the collector then leaves their pages alone
    # in the forked runs, which saves copy-on-write faults on every run.
    import gc
    gc.collect()
    gc.freeze()
    send({"ready": True, "pid": os.getpid(), "python": sys.version.split()[0]})
    serve()


SECCOMP = []


def serve():
    while True:
        req, fds = recv()
        try:
            resp, out = run(req, fds)
        except Exception as e:  # a bug here must not take the slot down silently
            resp, out = {"end": "error", "message": "zygote: %r" % (e,)}, []
        for fd in fds:
            os.close(fd)
        send(resp, out)
        for fd in out:
            os.close(fd)


# ---------------------------------------------------------------------------------------------
# One run.

def memfd(name):
    # Sealable, so the parent can freeze a compiled binary before sharing it among runs.
    return os.memfd_create(name, os.MFD_ALLOW_SEALING)


def run(req, blobs):
    """One run. `blobs` are the request's descriptors, named by the header's "blob_names"."""
    lim = req["limits"]
    names = req.get("blob_names", [])
    fds = {
        "in": os.dup(blobs[names.index("stdin")]) if "stdin" in names else os.open("/dev/null", os.O_RDONLY),
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
            PROTO.close()
            child_g(req, dict(zip(names, blobs)), fds, sw)
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
    resp["stdout_size"] = os.fstat(fds["out"]).st_size
    resp["stderr_size"] = os.fstat(fds["err"]).st_size
    return resp, [fds["out"], fds["err"], fds["res"]]


def read_fd(fd):
    """All of a (sealed) memfd, from the start."""
    size = os.fstat(fd).st_size
    chunks, off = [], 0
    while off < size:
        b = os.pread(fd, min(size - off, 1 << 20), off)
        if not b:
            break
        chunks.append(b)
        off += len(b)
    return b"".join(chunks)


def child_g(req, blobs, fds, setup_w):
    """PID 1 of the run: isolate, restrict, then run the untrusted code. Never returns."""
    lim = req["limits"]
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
          "mode=0700,uid=%d,gid=%d,size=%d" % (RUN_UID, RUN_UID, lim["disk_bytes"]))
    os.mkdir("/tmp/.shm", 0o1777)  # /dev/shm links here: POSIX shared memory is per run too
    os.chmod("/tmp/.shm", 0o1777)
    os.chdir("/tmp")
    fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
    os.write(fd, b"1000")  # the zygote runs at -1000 (or 0): the run is what the OOM killer takes
    os.close(fd)
    # The run's inputs: read now, before the descriptors are closed. Some stay open from fd 5:
    # a compiled binary (executed by descriptor), or the assert harness's test and setup code,
    # which the harness reads only after the solution's process is forked (and has closed them).
    kept = {"exec": ["binary"], "assert": ["test", "setup"]}.get(req["mode"], [])
    data = {}
    for name, fd in blobs.items():
        if name != "stdin" and name not in kept:
            data[name] = read_fd(fd)
    # stdin, stdout, stderr, result, setup pipe, then the kept inputs, become fds 0, 1, 2, ...;
    # moved out of the way first, since any of them may sit where another must go.
    wanted = [fds["in"], fds["out"], fds["err"], fds["res"], setup_w]
    wanted += [blobs[n] if n in blobs else os.open("/dev/null", os.O_RDONLY) for n in kept]
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 128) for fd in wanted]  # under RLIMIT_NOFILE (256)
    for target, fd in enumerate(high):
        os.dup2(fd, target)
    os.closerange(len(high), 65536)
    cpu = max(1, -(-lim["cpu_ms"] // 1000))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_bytes"], lim["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (lim["processes"], lim["processes"]))
    if lim.get("address_space_bytes"):
        a = lim["address_space_bytes"]
        resource.setrlimit(resource.RLIMIT_AS, (a, a))
    os.setresgid(RUN_UID, RUN_UID, RUN_UID)
    os.setresuid(RUN_UID, RUN_UID, RUN_UID)  # leaves root of the namespace: all capabilities go
    # Die with the zygote; set after the uid change, which clears it. (Had the zygote died
    # before this line, the write on the setup pipe below fails and the run ends there.)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    for buf, prog in SECCOMP:
        check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0), "seccomp")
    os.write(4, b"s")  # setup done: from here on, whatever happens is the run's doing
    os.close(4)
    HARNESS[req["mode"]](req, data)
    os._exit(0)


class SockFilterProg(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def fprog(prog):
    """A filter as a `struct sock_fprog` (with the buffer it points into, kept alive)."""
    buf = ctypes.create_string_buffer(prog, len(prog))
    return buf, SockFilterProg(len(prog) // 8, ctypes.addressof(buf))


def load_seccomp(prog):
    _, f = fprog(prog)
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(f), 0, 0), "seccomp")


# ---------------------------------------------------------------------------------------------
# Harnesses: what G does once it is locked down: see harness.py.

HARNESS = {}  # filled by harness.py, appended to this file
