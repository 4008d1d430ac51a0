//! One sandbox slot: a zygote process in its own namespaces and cgroup, running one test at a time.
//!
//! The launcher (`spawn`) is the only unsafe code in the crate: `pre_exec` runs in the forked
//! child before `exec`, where only async-signal-safe calls are allowed; every call made there is a
//! raw syscall wrapper (prctl, write, unshare, read, setgroups, setresgid, setresuid) that neither
//! allocates nor takes locks. The zygote's side of a run (clone, setup, wait, reply) is C, in
//! `native.c`; the request and reply between the two are fixed binary structs (`encode_request`,
//! `Reply`), checked field by field on both sides.

use crate::cgroup::SlotGroup;
use crate::Shared;
use nix::sys::socket;
use referee_core::exec::{RunEnd, RunOutput};
use serde_json::{json, Value};
use std::fs;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ZYGOTE: &str = concat!(
    include_str!("zygote.py"),
    include_str!("harness.py"),
    "\nmain()\n"
);

/// The zygote's request loop and a run's setup (native.c), built by build.rs.
const NATIVE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/referee_native.so"));

/// The binary request header and reply (`struct req_hdr`, `struct reply` in native.c).
const REQ_MAGIC: u32 = 0x3251_4652;
const REP_MAGIC: u32 = 0x3250_4652;
const REQ_SIZE: usize = 200;
/// A reply's fixed part (`offsetof(struct reply, recs)`) and one test's record.
const REP_HEAD: usize = 136;
const REC_SIZE: usize = 56;
const MAX_BLOBS: usize = 64;
/// Most tests in one request (one batch: one set of namespaces, one process per test).
pub const MAX_TESTS: usize = 16;
/// The test index of a descriptor every test of the batch gets.
const ALL_TESTS: u8 = 0xff;
/// The zygote's request buffer holds this much JSON after the header.
const JSON_MAX: usize = 65536;

/// Modules every run finds already imported (the set APPS/LiveCodeBench harnesses pre-import).
const PRELOAD: &[&str] = &[
    "string",
    "re",
    "datetime",
    "collections",
    "heapq",
    "bisect",
    "copy",
    "math",
    "random",
    "statistics",
    "itertools",
    "functools",
    "operator",
    "io",
    "typing",
    "fractions",
    "decimal",
    "json",
    "traceback",
    "types",
    "socket",
    "base64",
    "dataclasses",
    "array",
    "string",
    "textwrap",
    "unicodedata",
];

/// A request to the zygote: the header and the run's inputs, each a sealed memfd by name
/// (`code`, `stdin`, `args`, `test`, `setup`, `sample`, `item`, `binary`). The zygote passes
/// them on without reading them (see zygote.py).
pub struct Request {
    pub header: Value,
    pub blobs: Vec<(&'static str, Arc<OwnedFd>)>,
    pub memory_bytes: u64,
    pub processes: u32,
    pub output_bytes: u64,
    pub wall_ms: u64,
}

/// What a run produced, plus its result memfd when the request keeps it (a compiled binary).
pub struct SlotOutput {
    pub out: RunOutput,
    pub result_fd: Option<OwnedFd>,
}

pub struct Zygote {
    child: Child,
    /// SOCK_SEQPACKET to the zygote: one message per header, descriptors attached.
    sock: OwnedFd,
    group: Option<SlotGroup>,
    /// Memory the zygote itself holds, charged to the same group.
    baseline: u64,
    /// Host pid of the serving zygote (PID 1 of its namespace, a child of `child`).
    inner: Option<i32>,
    /// The group's OOM-kill count after the last run: nothing else runs in the group between
    /// two runs, so it is the next run's "before" without reading the file again.
    oom_seen: Option<u64>,
}

impl Zygote {
    pub fn spawn(shared: &Shared, slot: usize) -> Result<Zygote, String> {
        let (ns_root, run_uid_host) = shared.host_ids(slot);
        let (ready_r, ready_w) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
        let (go_r, go_w) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
        let (ready_w_fd, go_r_fd) = (ready_w.as_raw_fd(), go_r.as_raw_fd());

        let (sock, theirs) = socket::socketpair(
            socket::AddressFamily::Unix,
            socket::SockType::SeqPacket,
            None,
            socket::SockFlag::SOCK_CLOEXEC,
        )
        .map_err(|e| format!("socketpair: {e}"))?;
        let mut cmd = Command::new(&shared.python);
        cmd.args(["-I", "-B", "-c", ZYGOTE])
            .env_clear()
            .env("LANG", "C.UTF-8")
            .current_dir("/")
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(if shared.debug {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        #[allow(unsafe_code)]
        // SAFETY: the closure runs in the child between fork and exec and only makes
        // async-signal-safe syscalls on plain integers it captured by value.
        unsafe {
            cmd.pre_exec(move || pre_exec(ready_w_fd, go_r_fd));
        }
        // The parent writes the uid/gid maps once the child has unshared: only a process in the
        // parent namespace with CAP_SETUID may map more than one id.
        let mapper = std::thread::spawn(move || -> Result<(), String> {
            let mut f = fs::File::from(ready_r);
            let mut pid = [0u8; 4];
            f.read_exact(&mut pid)
                .map_err(|e| format!("launcher: {e}"))?;
            let pid = u32::from_ne_bytes(pid);
            let map = format!("0 {ns_root} 1\n1000 {run_uid_host} 1\n");
            fs::write(format!("/proc/{pid}/uid_map"), &map).map_err(|e| format!("uid_map: {e}"))?;
            fs::write(format!("/proc/{pid}/gid_map"), &map).map_err(|e| format!("gid_map: {e}"))?;
            nix::unistd::write(go_w.as_fd(), b"g").map_err(|e| format!("launcher: {e}"))?;
            Ok(())
        });
        let spawned = cmd.spawn();
        drop(ready_w);
        drop(go_r);
        let map_result = mapper
            .join()
            .unwrap_or(Err("launcher thread panicked".into()));
        let mut child =
            spawned.map_err(|e| format!("starting {}: {e}", shared.python.display()))?;
        if let Err(e) = map_result {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        let mut group = None;
        if let Some(v) = shared.cgroups {
            match SlotGroup::create(v, shared.pool_id, slot)
                .and_then(|g| g.add(child.id()).map(|()| g))
            {
                Ok(g) => group = Some(g),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("cgroup: {e}"));
                }
            }
        }
        let mut z = Zygote {
            child,
            sock,
            group,
            baseline: 0,
            inner: None,
            oom_seen: None,
        };
        let binds: Vec<(String, String)> = shared
            .binds
            .iter()
            .map(|p| (p.display().to_string(), p.display().to_string()))
            .collect();
        let init = json!({
            "binds": binds,
            "seccomp_zygote": shared.seccomp.zygote.iter().map(|p| hex(p)).collect::<Vec<_>>(),
            "seccomp": shared.seccomp.run.iter().map(|p| hex(p)).collect::<Vec<_>>(),
            "preload": PRELOAD,
            "run_uid": 1000,
            "sys_pivot_root": libc::SYS_pivot_root,
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let ready = native_memfd()
            .and_then(|native| {
                let bytes = serde_json::to_vec(&init).map_err(|e| e.to_string())?;
                z.send(&bytes, &[native.as_raw_fd()])
            })
            .and_then(|()| z.recv(deadline))
            .and_then(|(b, fds)| {
                serde_json::from_slice::<Value>(&b)
                    .map(|v| (v, fds))
                    .map_err(|e| format!("zygote reply: {e}"))
            })
            .map_err(|e| format!("zygote did not start: {e}"));
        let (hdr, _) = match ready {
            Ok(r) => r,
            Err(e) => {
                z.kill();
                return Err(e);
            }
        };
        if hdr["ready"] != true {
            z.kill();
            return Err(format!(
                "zygote did not start: {}",
                hdr["error"].as_str().unwrap_or("no reason given")
            ));
        }
        if let Some(g) = &z.group {
            z.baseline = g.memory_usage().unwrap_or(0);
        }
        let outer = z.child.id();
        z.inner = fs::read_to_string(format!("/proc/{outer}/task/{outer}/children"))
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|p| p.parse().ok()));
        Ok(z)
    }

    fn send(&mut self, bytes: &[u8], fds: &[RawFd]) -> Result<(), String> {
        let rights = [socket::ControlMessage::ScmRights(fds)];
        let cmsgs: &[socket::ControlMessage] = if fds.is_empty() { &[] } else { &rights };
        socket::sendmsg::<()>(
            self.sock.as_raw_fd(),
            &[std::io::IoSlice::new(bytes)],
            cmsgs,
            socket::MsgFlags::empty(),
            None,
        )
        .map_err(|e| format!("writing to zygote: {e}"))?;
        Ok(())
    }

    /// One reply and its descriptors, with a deadline: the zygote enforces run time itself, this
    /// only guards against a zygote that is itself stuck.
    fn recv(&mut self, deadline: Instant) -> Result<(Vec<u8>, Vec<OwnedFd>), String> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err("zygote stopped answering".into());
            }
            let mut fds = [nix::poll::PollFd::new(
                self.sock.as_fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            let ms = left.as_millis().min(u128::from(u16::MAX)) as u16;
            match nix::poll::poll(&mut fds, ms) {
                Ok(0) | Err(nix::errno::Errno::EINTR) => {}
                Ok(_) => break,
                Err(e) => return Err(format!("poll: {e}")),
            }
        }
        let mut buf = vec![0u8; 1 << 16];
        let mut space = nix::cmsg_space!([RawFd; 3 * MAX_TESTS]);
        let (n, raw) = {
            let mut iov = [std::io::IoSliceMut::new(&mut buf)];
            let msg = socket::recvmsg::<()>(
                self.sock.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                socket::MsgFlags::MSG_CMSG_CLOEXEC,
            )
            .map_err(|e| format!("reading from zygote: {e}"))?;
            let mut raw = Vec::new();
            for c in msg.cmsgs().map_err(|e| format!("zygote reply: {e}"))? {
                if let socket::ControlMessageOwned::ScmRights(fds) = c {
                    raw.extend(fds);
                }
            }
            (msg.bytes, raw)
        };
        #[allow(unsafe_code)]
        // SAFETY: SCM_RIGHTS just installed these descriptors in this process; nothing else
        // owns them.
        let fds: Vec<OwnedFd> = raw
            .into_iter()
            .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
            .collect();
        if n == 0 {
            return Err("zygote exited".into());
        }
        buf.truncate(n);
        Ok((buf, fds))
    }

    /// Runs a batch: the tests of one job, in one set of namespaces, one process per test.
    /// `Err` means the zygote is broken and must be replaced; a test's own failures (crash,
    /// timeout, limits) are an `Ok` output.
    pub fn run(&mut self, reqs: &[Request], keep_result: bool) -> Result<Vec<SlotOutput>, String> {
        let Some(req) = reqs.first() else {
            return Ok(Vec::new());
        };
        self.settle();
        let oom_before = match self.oom_seen {
            Some(n) => n,
            None => self.group.as_ref().map_or(0, SlotGroup::oom_kills),
        };
        if let Some(g) = &mut self.group {
            // The zygote's own pages are charged here too; the run gets its limit on top.
            g.set_memory_limit(self.baseline + req.memory_bytes + (16 << 20))?;
            // The test's processes, the batch's PID 1, and the zygote's two.
            g.set_pids_limit(req.processes + 5);
        }
        let (bytes, fds) = encode_request(reqs)?;
        self.send(&bytes, &fds)?;
        let budget = reqs.iter().map(|r| r.wall_ms + 2_000).sum::<u64>();
        let deadline = Instant::now() + Duration::from_millis(budget) + Duration::from_secs(10);
        let (reply, out) = self.recv(deadline)?;
        let rep = Reply::decode(&reply)?;
        let oom_after = self.group.as_ref().map_or(0, SlotGroup::oom_kills);
        self.oom_seen = Some(oom_after);
        let oom = oom_after > oom_before;
        if rep.end == END_ERROR {
            return Err(format!("zygote error: {}", rep.message));
        }
        if rep.recs.len() != reqs.len() || out.len() != 3 * reqs.len() {
            return Err(format!(
                "zygote error: a reply with {} records and {} descriptors for {} tests",
                rep.recs.len(),
                out.len(),
                reqs.len()
            ));
        }
        let mut out = out.into_iter();
        let mut outputs = Vec::with_capacity(reqs.len());
        for (req, rec) in reqs.iter().zip(&rep.recs) {
            let (Some(out_fd), Some(err_fd), Some(res_fd)) = (out.next(), out.next(), out.next())
            else {
                unreachable!("three descriptors per test, checked above")
            };
            if oom && std::env::var_os("REFEREE_SANDBOX_TRACE").is_some() {
                eprintln!(
                    "OOM in slot: mode {} baseline {} limit {} end {} code {}",
                    req.header["mode"], self.baseline, req.memory_bytes, rec.end, rec.code
                );
            }
            outputs.push(test_output(
                req,
                rec,
                oom,
                &rep.message,
                [out_fd, err_fd, res_fd],
                keep_result,
            )?);
        }
        Ok(outputs)
    }

    /// Waits (briefly) for memory a finished run still holds to be freed: the kernel frees a dead
    /// run's namespaces asynchronously, and the next run must not pay for it.
    fn settle(&self) {
        let Some(g) = &self.group else { return };
        let deadline = Instant::now() + Duration::from_millis(500);
        // Anonymous and tmpfs pages only: page cache a run read in stays charged to the slot but
        // is reclaimable, and waiting on it would slow every later run.
        while g
            .pinned_memory()
            .is_some_and(|u| u > self.baseline + (64 << 20))
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Stops the zygote and every run under it. The serving zygote dies first, while its parent
    /// is alive to reap it: killed the other way round it would be orphaned to the host's init,
    /// which on some machines never reaps.
    pub fn kill(mut self) {
        if let Some(inner) = self.inner {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(inner),
                nix::sys::signal::Signal::SIGKILL,
            );
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(g) = self.group.take() {
            g.remove();
        }
    }
}

const END_EXITED: u32 = 1;
const END_SIGNALED: u32 = 2;
const END_SETUP_FAILED: u32 = 3;
const END_ERROR: u32 = 4;
const END_NOT_RUN: u32 = 5;

/// One test's output from its record and descriptors. `oom`: the slot's group saw an OOM kill
/// during the batch (a test killed by SIGKILL that did not run out of time was that kill).
fn test_output(
    req: &Request,
    rec: &Rec,
    oom: bool,
    message: &str,
    [out_fd, err_fd, res_fd]: [OwnedFd; 3],
    keep_result: bool,
) -> Result<SlotOutput, String> {
    let stdout = read_memfd(&fs::File::from(out_fd), req.output_bytes + 1, false);
    let stderr = read_memfd(&fs::File::from(err_fd), 4096, true);
    let result_cap = req.output_bytes.max(64 << 20) + 1;
    let (result, result_fd) = if keep_result {
        (None, Some(res_fd))
    } else {
        let r = read_memfd(&fs::File::from(res_fd), result_cap, false);
        ((!r.is_empty()).then_some(r), None)
    };
    let stdout_size = rec.stdout_size;
    // stderr shares the file-size cap; a run that fills it flooded its output too.
    let stderr_full = rec.stderr_size
        >= req.header["limits"]["file_bytes"]
            .as_u64()
            .unwrap_or(u64::MAX);
    let signal = rec.code;
    let cpu_ms = rec.cpu_us as f64 / 1000.0;
    let end = match rec.end {
        // A run that filled its output cap hit the output limit, whatever happened next
        // (a program that ignores write errors spins until its time runs out).
        END_EXITED | END_SIGNALED if stdout_size >= req.output_bytes || stderr_full => {
            RunEnd::OutputLimit
        }
        _ if rec.timed_out => RunEnd::Timeout,
        END_EXITED => RunEnd::Exited(rec.code),
        END_SIGNALED => {
            if signal == libc::SIGXCPU
                || (signal == libc::SIGKILL
                    && cpu_ms >= req.header["limits"]["cpu_ms"].as_f64().unwrap_or(f64::MAX))
            {
                RunEnd::Timeout
            } else if signal == libc::SIGXFSZ || stdout_size >= req.output_bytes {
                RunEnd::OutputLimit
            } else if oom && signal == libc::SIGKILL {
                RunEnd::MemoryLimit
            } else {
                RunEnd::Signaled(signal)
            }
        }
        END_SETUP_FAILED => RunEnd::SetupFailed(String::from_utf8_lossy(&stderr).into()),
        END_NOT_RUN => RunEnd::SetupFailed(format!("sandbox failure: {message}")),
        other => return Err(format!("zygote error: unknown end {other}")),
    };
    let stderr_tail = String::from_utf8_lossy(&stderr).into_owned();
    Ok(SlotOutput {
        out: RunOutput {
            end,
            stdout,
            stderr_tail,
            result,
            cpu_ms,
            wall_ms: rec.wall_us as f64 / 1000.0,
        },
        result_fd,
    })
}

/// The zygote's reply (`struct reply` in native.c): a batch's end and one record per test.
struct Reply {
    end: u32,
    message: String,
    recs: Vec<Rec>,
}

/// One test's end (`struct test_rec`).
struct Rec {
    end: u32,
    code: i32,
    timed_out: bool,
    wall_us: u64,
    cpu_us: u64,
    stdout_size: u64,
    stderr_size: u64,
}

impl Reply {
    fn decode(b: &[u8]) -> Result<Reply, String> {
        if b.len() < REP_HEAD || u32_at(b, 0) != REP_MAGIC {
            return Err(format!("zygote reply: {} bytes, not a reply", b.len()));
        }
        let n = u32_at(b, 8) as usize;
        if n > MAX_TESTS || b.len() != REP_HEAD + n * REC_SIZE {
            return Err(format!("zygote reply: {} bytes for {n} tests", b.len()));
        }
        let msg = &b[16..REP_HEAD];
        let msg = &msg[..msg.iter().position(|&c| c == 0).unwrap_or(msg.len())];
        let recs = (0..n)
            .map(|k| {
                let r = &b[REP_HEAD + k * REC_SIZE..REP_HEAD + (k + 1) * REC_SIZE];
                Rec {
                    end: u32_at(r, 0),
                    code: u32_at(r, 4) as i32,
                    timed_out: u32_at(r, 8) != 0,
                    wall_us: u64_at(r, 16),
                    cpu_us: u64_at(r, 24),
                    stdout_size: u64_at(r, 40),
                    stderr_size: u64_at(r, 48),
                }
            })
            .collect();
        Ok(Reply {
            end: u32_at(b, 4),
            message: String::from_utf8_lossy(msg).into_owned(),
            recs,
        })
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The harness number of a mode (`MODES` in zygote.py).
fn mode_number(mode: &str) -> Option<u8> {
    [
        "stdio", "call", "assert", "grade", "exec", "compile", "measure",
    ]
    .iter()
    .position(|m| *m == mode)
    .map(|i| i as u8 + 1)
}

/// Where a run finds each input (`INPUTS` in zygote.py): stdin at 0, what the harness reads only
/// later at 5 and 6, the rest at 7-9 (read, then closed, before the run's code starts).
fn blob_target(name: &str) -> Option<u8> {
    Some(match name {
        "stdin" => 0,
        "binary" | "test" | "verifier" => 5,
        "setup" | "measure_input" => 6,
        "code" => 7,
        "args" | "sample" => 8,
        "item" => 9,
        _ => return None,
    })
}

/// A batch as native.c reads it: the fixed header, then the JSON fields only the tests' Python
/// needs (entry point, check, compiler argv), and the descriptors in header order. The tests of
/// a batch share their mode, limits and JSON; a descriptor every test holds (the same `Arc`:
/// the code, a binary) is sent once, for all of them.
fn encode_request(reqs: &[Request]) -> Result<(Vec<u8>, Vec<RawFd>), String> {
    let Some(req) = reqs.first() else {
        return Err("an empty batch".into());
    };
    if reqs.len() > MAX_TESTS {
        return Err("too many tests for one batch".into());
    }
    let h = &req.header;
    let mode = h["mode"]
        .as_str()
        .and_then(mode_number)
        .ok_or_else(|| format!("unknown mode {}", h["mode"]))?;
    if reqs.iter().any(|r| r.header != *h) {
        return Err("the tests of a batch differ in mode, limits or options".into());
    }
    let mut targets = [0u8; MAX_BLOBS];
    let mut tests = [0u8; MAX_BLOBS];
    let mut fds = Vec::new();
    let shared = |f: &Arc<OwnedFd>| {
        reqs.iter()
            .all(|r| r.blobs.iter().any(|(_, g)| Arc::ptr_eq(f, g)))
    };
    let mut put = |name: &str, fd: &Arc<OwnedFd>, test: u8| -> Result<(), String> {
        let i = fds.len();
        if i == MAX_BLOBS {
            return Err("too many inputs for one batch".into());
        }
        targets[i] = blob_target(name).ok_or_else(|| format!("unknown input {name}"))?;
        tests[i] = test;
        fds.push(fd.as_raw_fd());
        Ok(())
    };
    for (name, fd) in &req.blobs {
        if reqs.len() > 1 && shared(fd) {
            put(name, fd, ALL_TESTS)?;
        }
    }
    for (k, r) in reqs.iter().enumerate() {
        for (name, fd) in &r.blobs {
            if reqs.len() == 1 || !shared(fd) {
                put(name, fd, k as u8)?;
            }
        }
    }
    // stdin is /dev/null when the run has none; the assert harness reads fd 6 (setup) always.
    let null_fds: u16 = 1 | if mode == 3 { 1 << 6 } else { 0 };
    let lim = &h["limits"];
    let num = |k: &str| lim[k].as_u64().unwrap_or(0);
    let mut rest = h.as_object().cloned().unwrap_or_default();
    rest.remove("mode");
    rest.remove("limits");
    rest.retain(|_, v| !v.is_null());
    let json = if rest.is_empty() {
        Vec::new()
    } else {
        serde_json::to_vec(&rest).map_err(|e| e.to_string())?
    };
    if json.len() > JSON_MAX {
        return Err("request header too long".into());
    }
    let mut b = Vec::with_capacity(REQ_SIZE + json.len());
    b.extend_from_slice(&REQ_MAGIC.to_ne_bytes());
    b.extend_from_slice(&[mode, fds.len() as u8, reqs.len() as u8, 0]);
    b.extend_from_slice(&null_fds.to_ne_bytes());
    b.extend_from_slice(&[0u8; 6]);
    for k in [
        "wall_ms",
        "cpu_ms",
        "file_bytes",
        "disk_bytes",
        "processes",
        "address_space_bytes",
    ] {
        b.extend_from_slice(&num(k).to_ne_bytes());
    }
    b.extend_from_slice(&(json.len() as u32).to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&targets);
    b.extend_from_slice(&tests);
    debug_assert_eq!(b.len(), REQ_SIZE);
    b.extend_from_slice(&json);
    Ok((b, fds))
}

/// The native loop as a sealed, executable memfd for the zygote to load.
fn native_memfd() -> Result<OwnedFd, String> {
    use nix::sys::memfd::{memfd_create, MFdFlags};
    // MFD_EXEC (Linux 6.3) keeps it loadable where vm.memfd_noexec makes memfds non-executable
    // by default; older kernels reject the flag and never needed it.
    const MFD_EXEC: libc::c_uint = 0x10;
    let base = MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING;
    let fd = memfd_create(
        c"referee-native",
        base | MFdFlags::from_bits_retain(MFD_EXEC),
    )
    .or_else(|_| memfd_create(c"referee-native", base))
    .map_err(|e| format!("memfd: {e}"))?;
    let mut f = fs::File::from(fd);
    f.write_all(NATIVE).map_err(|e| format!("memfd: {e}"))?;
    let fd = OwnedFd::from(f);
    seal(&fd)?;
    Ok(fd)
}

/// Up to `limit` bytes of a memfd, from its start or (`tail`) its last `limit` bytes.
fn read_memfd(f: &fs::File, limit: u64, tail: bool) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let size = f.metadata().map_or(0, |m| m.len());
    let offset = if tail { size.saturating_sub(limit) } else { 0 };
    let n = size.saturating_sub(offset).min(limit) as usize;
    let mut buf = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match f.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) | Err(_) => break,
            Ok(k) => got += k,
        }
    }
    buf.truncate(got);
    buf
}

/// A sealed memfd holding `data`: readable by every run it is given to, writable by none.
pub fn sealed_memfd(data: &[u8]) -> Result<OwnedFd, String> {
    use nix::sys::memfd::{memfd_create, MFdFlags};
    let fd = memfd_create(
        c"referee-input",
        MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
    )
    .map_err(|e| format!("memfd: {e}"))?;
    let mut f = fs::File::from(fd);
    f.write_all(data).map_err(|e| format!("memfd: {e}"))?;
    // Runs read from the start (fd 0 shares this offset).
    std::io::Seek::rewind(&mut f).map_err(|e| format!("memfd: {e}"))?;
    let fd = OwnedFd::from(f);
    seal(&fd)?;
    Ok(fd)
}

/// Seals a memfd against any change (a compiled binary shared by a job's runs).
pub fn seal(fd: &OwnedFd) -> Result<(), String> {
    use nix::fcntl::{fcntl, FcntlArg, SealFlag};
    fcntl(
        fd,
        FcntlArg::F_ADD_SEALS(
            SealFlag::F_SEAL_SEAL
                | SealFlag::F_SEAL_SHRINK
                | SealFlag::F_SEAL_GROW
                | SealFlag::F_SEAL_WRITE,
        ),
    )
    .map_err(|e| format!("sealing a memfd: {e}"))?;
    Ok(())
}

fn hex(b: &[u8]) -> String {
    use std::fmt::Write as _;
    b.iter()
        .fold(String::with_capacity(b.len() * 2), |mut s, x| {
            let _ = write!(s, "{x:02x}");
            s
        })
}

/// In the child, before exec: die with the parent, never be the OOM killer's choice, enter new
/// user/mount/net/IPC/UTS namespaces (and a PID namespace for the zygote's children), wait for
/// the parent to write the id maps, then become root of the new user namespace.
fn pre_exec(ready_w: i32, go_r: i32) -> std::io::Result<()> {
    use nix::sched::CloneFlags;
    // -1000 also lowers the floor, so runs (which raise themselves to 1000) are always chosen.
    // Best effort: some hosts forbid negative values; the runs at 1000 are chosen first anyway.
    if let Ok(oom) = nix::fcntl::open(
        "/proc/self/oom_score_adj",
        nix::fcntl::OFlag::O_WRONLY,
        nix::sys::stat::Mode::empty(),
    ) {
        let _ = nix::unistd::write(&oom, b"-1000");
    }
    nix::sched::unshare(
        CloneFlags::CLONE_NEWUSER
            | CloneFlags::CLONE_NEWNS
            | CloneFlags::CLONE_NEWNET
            | CloneFlags::CLONE_NEWIPC
            | CloneFlags::CLONE_NEWUTS
            | CloneFlags::CLONE_NEWPID,
    )?;
    #[allow(unsafe_code)]
    // SAFETY: the fds were created by the parent before fork and stay open until exec.
    let (ready, go) = unsafe {
        (
            std::os::fd::BorrowedFd::borrow_raw(ready_w),
            std::os::fd::BorrowedFd::borrow_raw(go_r),
        )
    };
    nix::unistd::write(ready, &std::process::id().to_ne_bytes())?;
    let mut b = [0u8; 1];
    if nix::unistd::read(go, &mut b)? != 1 {
        return Err(std::io::Error::other("launcher gave up"));
    }
    nix::unistd::setgroups(&[])?;
    let root_g = nix::unistd::Gid::from_raw(0);
    let root_u = nix::unistd::Uid::from_raw(0);
    nix::unistd::setresgid(root_g, root_g, root_g)?;
    nix::unistd::setresuid(root_u, root_u, root_u)?;
    // After the uid change, which clears it: die with the parent (a SIGKILLed Referee leaves no
    // zygote behind).
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(header: Value, blobs: &[&'static str]) -> Request {
        Request {
            header,
            blobs: blobs
                .iter()
                .map(|n| (*n, Arc::new(sealed_memfd(b"x").unwrap())))
                .collect(),
            memory_bytes: 1 << 28,
            processes: 8,
            output_bytes: 1 << 20,
            wall_ms: 2000,
        }
    }

    /// The layout native.c's `struct req_hdr` reads (its `_Static_assert`s pin the C side).
    #[test]
    fn request_header_layout() {
        let limits = json!({"wall_ms": 2000, "cpu_ms": 1500, "file_bytes": 1 << 20,
            "disk_bytes": 1 << 24, "processes": 8, "output_bytes": 1 << 20});
        let req = request(
            json!({"mode": "call", "entry_point": "f", "check": null, "limits": limits}),
            &["code", "args"],
        );
        let (b, fds) = encode_request(std::slice::from_ref(&req)).unwrap();
        assert_eq!(fds.len(), 2);
        assert_eq!(u32_at(&b, 0), REQ_MAGIC);
        assert_eq!((b[4], b[5], b[6]), (2, 2, 1)); // mode "call", two descriptors, one test
        assert_eq!(&b[72..76], &[7, 8, 0, 0]); // code at fd 7, args at 8
        assert_eq!(&b[136..138], &[0, 0]); // both for test 0
        assert_eq!(u16::from_ne_bytes([b[8], b[9]]), 1); // stdin from /dev/null
        let limit = |i: usize| u64_at(&b, 16 + 8 * i);
        assert_eq!(
            (0..6).map(limit).collect::<Vec<_>>(),
            [2000, 1500, 1 << 20, 1 << 24, 8, 0]
        );
        let json_len = u32_at(&b, 64) as usize;
        assert_eq!(b.len(), REQ_SIZE + json_len);
        let rest: Value = serde_json::from_slice(&b[REQ_SIZE..]).unwrap();
        assert_eq!(rest, json!({"entry_point": "f"})); // nulls, mode and limits stay out

        // Stdio runs carry no JSON at all; assert runs get /dev/null at fd 6 without setup code.
        let stdio = |code: &Arc<OwnedFd>| {
            let mut r = request(json!({"mode": "stdio", "limits": limits}), &["stdin"]);
            r.blobs.insert(0, ("code", code.clone()));
            r
        };
        let code = Arc::new(sealed_memfd(b"x").unwrap());
        let (b, fds) = encode_request(&[stdio(&code)]).unwrap();
        assert_eq!(
            (b.len(), fds.len(), &b[72..74]),
            (REQ_SIZE, 2, &[7u8, 0][..])
        );
        // A batch: the code once for every test, each test's stdin its own.
        let (b, fds) = encode_request(&[stdio(&code), stdio(&code), stdio(&code)]).unwrap();
        assert_eq!((b[5], b[6], fds.len()), (4, 3, 4));
        assert_eq!(&b[72..76], &[7, 0, 0, 0]);
        assert_eq!(&b[136..140], &[ALL_TESTS, 0, 1, 2]);
        let (b, _) = encode_request(&[request(
            json!({"mode": "assert", "limits": limits}),
            &["code", "test"],
        )])
        .unwrap();
        assert_eq!(u16::from_ne_bytes([b[8], b[9]]), 1 | 1 << 6);

        // Tests of one batch must agree on everything but their inputs.
        let other = request(
            json!({"mode": "stdio", "limits": {"wall_ms": 1}}),
            &["stdin"],
        );
        assert!(encode_request(&[stdio(&code), other]).is_err());
        assert!(encode_request(&[]).is_err());
        assert!(
            encode_request(&[request(json!({"mode": "shell", "limits": limits}), &[])]).is_err()
        );
        assert!(encode_request(&[request(
            json!({"mode": "stdio", "limits": limits}),
            &["env"]
        )])
        .is_err());
    }

    #[test]
    fn reply_decoding() {
        let mut b = vec![0u8; REP_HEAD + 2 * REC_SIZE];
        b[0..4].copy_from_slice(&REP_MAGIC.to_ne_bytes());
        b[8..12].copy_from_slice(&2u32.to_ne_bytes());
        b[16..21].copy_from_slice(b"hello");
        let r1 = REP_HEAD + REC_SIZE;
        b[r1..r1 + 4].copy_from_slice(&END_SIGNALED.to_ne_bytes());
        b[r1 + 4..r1 + 8].copy_from_slice(&9i32.to_ne_bytes());
        b[r1 + 8..r1 + 12].copy_from_slice(&1u32.to_ne_bytes());
        for (i, v) in [1234u64, 567, 89, 10, 11].iter().enumerate() {
            b[r1 + 16 + 8 * i..r1 + 24 + 8 * i].copy_from_slice(&v.to_ne_bytes());
        }
        let r = Reply::decode(&b).unwrap();
        assert_eq!((r.end, r.message.as_str(), r.recs.len()), (0, "hello", 2));
        let t = &r.recs[1];
        assert_eq!((t.end, t.code, t.timed_out), (END_SIGNALED, 9, true));
        assert_eq!(
            (t.wall_us, t.cpu_us, t.stdout_size, t.stderr_size),
            (1234, 567, 10, 11)
        );
        assert!(Reply::decode(&b[..100]).is_err());
        assert!(Reply::decode(&b[..REP_HEAD + REC_SIZE]).is_err()); // one record short
        b[0] ^= 1;
        assert!(Reply::decode(&b).is_err());
    }
}
