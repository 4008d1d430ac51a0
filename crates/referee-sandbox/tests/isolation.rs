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
