//! What a run sees from the inside, checked fact by fact: who it is, what it may do, what
//! exists around it. The exploit corpus shows the hacks fail; this shows why.

use referee_core::exec::{Job, Limits, Run, RunEnd, Sandbox};
use referee_sandbox::{Config, Pool};
use serde_json::Value;
use std::sync::Arc;

const PROBE: &str = r#"
import os, json, socket, ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def err(f):
    try:
        r = f()
        return "ok" if r in (None, 0) or not isinstance(r, int) or r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
status = {l.split(":")[0]: l.split(":", 1)[1].strip() for l in open("/proc/self/status")}
def write(p):
    with open(p, "w") as f:
        f.write("x")
facts = {
    "uid": os.getuid(), "gid": os.getgid(), "pid": os.getpid(),
    "cap_eff": status["CapEff"], "no_new_privs": status["NoNewPrivs"], "seccomp": status["Seccomp"],
    "pids_visible": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "root": sorted(os.listdir("/")),
    "cwd": os.getcwd(),
    "env": sorted(os.environ),
    "hostname": os.uname().nodename,
    "net_devices": sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]),
    "inet_socket": err(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
    "inet6_socket": err(lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)),
    "netlink_socket": err(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)),
    "unix_socketpair": err(lambda: socket.socketpair()),
    "unshare_user": err(lambda: libc.unshare(0x10000000)),
    "unshare_net": err(lambda: libc.unshare(0x40000000)),
    "mount_tmpfs": err(lambda: libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None)),
    "ptrace_attach_1": err(lambda: libc.ptrace(16, 1, 0, 0)),
    "write_usr": err(lambda: write("/usr/x")),
    "write_root": err(lambda: write("/x")),
    "write_tmp": err(lambda: write("/tmp/x")),
    "write_dev_shm": err(lambda: write("/dev/shm/x")),
    "kill_1": err(lambda: os.kill(1, 0)),
    "etc": sorted(os.listdir("/etc")),
}
print(json.dumps(facts))
"#;

#[test]
fn a_run_is_alone_unprivileged_and_offline() {
    let pool = Pool::start(&Config::default())
        .unwrap_or_else(|e| panic!("the sandbox cannot start on this machine: {e}"));
    let job = Job {
        language: "python".into(),
        source: PROBE.into(),
        runs: vec![Run::Stdio {
            stdin: Arc::from(&b""[..]),
        }],
        limits: Limits::default(),
    };
    let out = futures::executor::block_on(pool.execute(job))
        .expect("job ran")
        .remove(0);
    assert_eq!(
        out.end,
        RunEnd::Exited(0),
        "probe failed: {}",
        out.stderr_tail
    );
    let f: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
    assert_eq!(f["uid"], 1000);
    assert_eq!(f["gid"], 1000);
    // A job of one test runs as PID 1 of its own namespaces (a batch of several tests has an
    // init that forks each: see the next test).
    assert_eq!(f["pid"], 1, "the run is PID 1 of its own namespace");
    assert_eq!(
        f["pids_visible"],
        serde_json::json!([1]),
        "no other process is visible"
    );
    assert_eq!(s("cap_eff"), "0000000000000000", "no capabilities");
    assert_eq!(s("no_new_privs"), "1");
    assert_eq!(s("seccomp"), "2", "a seccomp filter is loaded");
    let allowed = [
        "art", "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr",
    ];
    for d in f["root"].as_array().unwrap() {
        let d = d.as_str().unwrap();
        assert!(allowed.contains(&d), "/{d} is visible in the sandbox");
    }
    assert_eq!(s("cwd"), "/tmp");
    assert_eq!(
        f["env"],
        serde_json::json!([
            "HOME",
            "LANG",
            "PATH",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONHASHSEED",
            "TMPDIR"
        ]),
        "the environment is scrubbed"
    );
    assert_eq!(s("hostname"), "sandbox");
    assert_eq!(
        f["net_devices"],
        serde_json::json!(["lo"]),
        "no network interface but loopback"
    );
    for k in [
        "inet_socket",
        "inet6_socket",
        "netlink_socket",
        "unshare_user",
        "unshare_net",
        "mount_tmpfs",
        "ptrace_attach_1",
    ] {
        assert_eq!(s(k), "EPERM", "{k} must be refused");
    }
    assert_eq!(s("unix_socketpair"), "ok");
    assert_eq!(s("write_usr"), "EROFS");
    assert_eq!(s("write_root"), "EROFS");
    assert_eq!(s("write_tmp"), "ok");
    assert_eq!(s("write_dev_shm"), "ok");
    let etc_allowed = [
        "alternatives",
        "group",
        "hosts",
        "ld.so.cache",
        "localtime",
        "passwd",
    ];
    for n in f["etc"].as_array().unwrap() {
        let n = n.as_str().unwrap();
        assert!(
            etc_allowed.contains(&n),
            "/etc/{n} is visible in the sandbox"
        );
    }
}

/// What one test of a batch might do to its batch's init (B, PID 1) and to the tests after it.
const SABOTEUR: &str = r#"
import os, sys, json, signal, errno, time
def err(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
step = sys.stdin.read().strip()
if step == "attack":
    facts = {
        "read_mem_1": err(lambda: open("/proc/1/mem", "rb").read(1)),
        "list_fd_1": err(lambda: os.listdir("/proc/1/fd")),
        "environ_1": err(lambda: open("/proc/1/environ", "rb").read()),
    }
    for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP, signal.SIGSEGV):
        try:
            os.kill(1, sig)
        except OSError:
            pass
    # A daemon that would outlive this test and spoil the next ones.
    if os.fork() == 0:
        os.setsid()
        while True:
            try:
                os.kill(1, signal.SIGKILL)
            except OSError:
                pass
            time.sleep(0.01)
    with open("/tmp/left-behind", "w") as f:
        f.write("x")
    time.sleep(0.2)
    print(json.dumps(facts))
else:
    print(json.dumps({"pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
                      "files": sorted(os.listdir("/tmp"))}))
"#;

#[test]
fn a_test_cannot_reach_its_batch_or_outlive_itself() {
    // One slot: the three runs are one batch, run one after another under the same init.
    let pool = Pool::start(&Config {
        slots: 1,
        ..Config::default()
    })
    .unwrap_or_else(|e| panic!("the sandbox cannot start on this machine: {e}"));
    let run = |s: &str| Run::Stdio {
        stdin: Arc::from(s.as_bytes()),
    };
    let job = Job {
        language: "python".into(),
        source: SABOTEUR.into(),
        runs: vec![run("attack"), run("look"), run("look")],
        limits: Limits::default(),
    };
    let outs = futures::executor::block_on(pool.execute(job)).expect("job ran");
    for o in &outs {
        assert_eq!(o.end, RunEnd::Exited(0), "{}", o.stderr_tail);
    }
    let f: Value = serde_json::from_slice(&outs[0].stdout).unwrap();
    // The init (native.c's B) is not dumpable, so hidepid=2 hides it from the tests.
    for k in ["read_mem_1", "list_fd_1", "environ_1"] {
        assert_eq!(f[k], "ENOENT", "{k}: the init is not even visible");
    }
    for o in &outs[1..] {
        let f: Value = serde_json::from_slice(&o.stdout).unwrap();
        // The daemon is gone and the init survived every signal: the next test ran, and is
        // the only process it can see.
        assert_eq!(f["pids"].as_array().unwrap().len(), 1, "{f}");
        // The working directory is the batch's: a file a test leaves is seen by the next test
        // of the same job (never by another job's), and cannot change a verdict, which is
        // computed outside from each test's own output.
        assert_eq!(f["files"], serde_json::json!([".shm", "left-behind"]));
    }
}
