# Referee sandbox zygote: a warm Python interpreter that forks one isolated process per test.
#
# Started by the Rust parent (slot.rs) inside fresh user, mount, network, IPC and UTS namespaces,
# as root of that user namespace (an unprivileged uid on the host). It builds a minimal read-only
# root, becomes PID 1 of its own PID namespace, pre-imports common modules, then serves requests.
#
# Requests are served by native code (native.c, a shared object the parent sends at start as a
# sealed memfd). A request is a batch: up to 16 tests of one job (one sample's code). Per batch
# the zygote clones B straight into new PID, mount, IPC and UTS namespaces. B is PID 1 of the
# batch's namespace: still in C, it mounts a fresh /proc, a private tmpfs at /tmp (the working
# directory) and /dev/shm, drops to uid 1000 (no capabilities), sets hard rlimits, no_new_privs
# and the seccomp filter, returns into Python once to compile the job's code (`precompile`),
# and then forks one process per test, each with only its own descriptors, its own CPU limit
# and OOM score; between two tests B kills every process left in the namespace. A test's
# process returns into Python here (`run_child`), which reads its inputs, reports "setup done"
# and runs the harness. A batch of one test skips B: the test is PID 1 itself. When PID 1 dies
# the kernel kills everything left in its PID namespace. The zygote itself never returns to
# Python while serving: the pages of its heap stay shared with every run and are never copied.
#
# Verdicts are never computed here: the child returns raw stdout/stderr/exit status and, for
# call tests, a JSON value; the Rust parent compares. Expected outputs never enter the sandbox.
#
# Protocol: one SOCK_SEQPACKET socket (fd 0). The start-up exchange is JSON (init, ready); each
# run's request is a fixed binary header (see native.c) with the run's inputs attached as sealed
# memfds, and its reply a fixed binary struct with the stdout, stderr and result memfds. The
# zygote never reads what they hold: every run is cloned from the zygote's memory, so anything it
# had read (an earlier run's output, another item's test code) would be there for the next run.
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
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_SECCOMP = 1, 4, 22
SECCOMP_MODE_FILTER = 2
SYS_pivot_root = 155  # x86_64's; the init frame gives the machine's

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
    init, fds = recv()
    RUN_UID = init.get("run_uid", RUN_UID)
    global NATIVE
    try:
        # Loaded from the memfd before the root changes; the mapping outlives the descriptor.
        NATIVE = ctypes.CDLL("/proc/self/fd/%d" % fds[0])
        NATIVE.referee_serve.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
        NATIVE.referee_batch.argtypes = [ctypes.c_void_p]
        NATIVE.referee_add_filter.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    except Exception as e:
        send({"ready": False, "error": "loading the native loop: %s" % e})
        os._exit(1)
    for fd in fds:
        os.close(fd)
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
        # The run's filters, copied once into the native loop, which loads them in every run.
        for prog in init.get("seccomp", []):
            prog = bytes.fromhex(prog)
            if NATIVE.referee_add_filter(prog, len(prog)) != 0:
                raise ValueError("a run filter the native loop refuses")
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
    info = ChildInfo()
    mode = NATIVE.referee_serve(PROTO.fileno(), RUN_UID, ctypes.byref(info))
    if mode < 0:
        os._exit(0)  # the parent has gone
    if info.leader:
        # B, the batch's init, locked down like its tests: compile the job's code once, so
        # that every test forked next inherits the code object instead of compiling it.
        precompile(mode, info.code_fd)
        mode = NATIVE.referee_batch(ctypes.byref(info))
        if mode < 0:
            os._exit(112)
    run_child(mode, info)


NATIVE = None


class ChildInfo(ctypes.Structure):
    _fields_ = [("json", ctypes.c_void_p), ("json_len", ctypes.c_size_t),
                ("leader", ctypes.c_int32), ("code_fd", ctypes.c_int32)]


PRECOMPILED = None  # (source, file name, code object): the batch's code, compiled by B
PRECOMPILE_MAX = 1 << 20  # bigger sources are compiled by each test, within its own limits


def precompile(mode, fd):
    """In B: the batch's code, compiled once (a failure is left for each test to report)."""
    global PRECOMPILED
    if fd < 0 or MODES.get(mode) not in ("stdio", "call", "assert", "grade", "measure"):
        return
    try:
        if os.fstat(fd).st_size > PRECOMPILE_MAX:
            return
        src = read_fd(fd)
        name = "grader.py" if MODES[mode] == "grade" else "solution.py"
        PRECOMPILED = (src, name, compile(src, name, "exec"))
    except BaseException:
        PRECOMPILED = None


# ---------------------------------------------------------------------------------------------
# One run, in G, after native.c's setup: fds 0-3 are stdin, stdout, stderr and the result, fd 4
# the setup pipe, 5 and 6 what the harness reads later (a compiled binary; the assert harness's
# test and setup code), 7-9 the run's other inputs. The mode numbers and fds match slot.rs.

MODES = {1: "stdio", 2: "call", 3: "assert", 4: "grade", 5: "exec", 6: "compile", 7: "measure"}
INPUTS = {"stdio": (("code", 7),), "call": (("code", 7), ("args", 8)), "assert": (("code", 7),),
          "grade": (("code", 7), ("sample", 8), ("item", 9)), "exec": (), "compile": (("code", 7),),
          "measure": (("code", 7),)}


def run_child(mode, info):
    """Never returns."""
    try:
        PROTO.detach()  # its descriptor is closed; never close what now sits at that number
        name = MODES[mode]
        raw = ctypes.string_at(info.json, info.json_len) if info.json_len else b""
        req = json.loads(raw) if raw else {}
        data = {key: read_fd(fd) for key, fd in INPUTS[name]}
        os.closerange(7, 10)
        os.write(4, b"s")  # setup done: from here on, whatever happens is the run's doing
        os.close(4)
    except BaseException as e:
        try:
            os.write(2, ("sandbox setup failed: %r\n" % (e,)).encode())
        except BaseException:
            pass
        os._exit(112)
    HARNESS[name](req, data)
    os._exit(0)


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
