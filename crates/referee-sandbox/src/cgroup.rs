//! One cgroup per sandbox slot: memory, process count and CPU share set from outside, on cgroup v2
//! when it is mounted with the controllers, else on the v1 hierarchies (as on this kind of VM).
//! The zygote lives in its slot's cgroup and every run inherits it; runs are serial per slot, so
//! the counters before and after a run are that run's. Removed when the slot stops; groups left
//! by a process that died are removed at the next start.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const ROOT: &str = "/sys/fs/cgroup";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Which cgroup interface this machine offers to us, if any.
pub fn detect() -> Option<Version> {
    let root = Path::new(ROOT);
    if let Ok(c) = fs::read_to_string(root.join("cgroup.controllers")) {
        let has = |n: &str| c.split_whitespace().any(|x| x == n);
        if has("memory") && has("pids") && writable(root) {
            return Some(Version::V2);
        }
        return None;
    }
    if root.join("memory").is_dir() && root.join("pids").is_dir() && writable(&root.join("memory"))
    {
        return Some(Version::V1);
    }
    None
}

fn writable(p: &Path) -> bool {
    nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// `referee-<pid>-<pool>`: unique per pool, and the pid says whether its owner still lives.
fn group_name(pool: u32) -> String {
    format!("referee-{}-{pool}", std::process::id())
}

/// The directories of one slot's group (one per v1 controller, one in v2).
#[derive(Debug)]
pub struct SlotGroup {
    version: Version,
    dirs: Vec<PathBuf>,
    memory_limit: u64,
    /// The pids limit last written (0: none yet): most runs ask for the same one.
    pids_limit: u32,
    /// memory.stat and the OOM counter's file, kept open: both are read around every run, and
    /// a read from offset 0 regenerates them, without a path lookup and an open each time.
    stat_file: Option<fs::File>,
    oom_file: Option<fs::File>,
}

/// The whole of a cgroup file, generated afresh (a read from offset 0 restarts it).
fn read_from_start(f: &fs::File) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 8192];
    let mut n = 0;
    loop {
        if n == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read_at(&mut buf[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(_) => return None,
        }
    }
    buf.truncate(n);
    String::from_utf8(buf).ok()
}

impl SlotGroup {
    pub fn create(version: Version, pool: u32, slot: usize) -> Result<SlotGroup, String> {
        let name = format!("{}/slot-{slot}", group_name(pool));
        let dirs: Vec<PathBuf> = match version {
            Version::V1 => ["memory", "pids", "cpu"]
                .iter()
                .map(|c| Path::new(ROOT).join(c).join(&name))
                .filter(|d| d.parent().and_then(Path::parent).is_some_and(Path::is_dir))
                .collect(),
            Version::V2 => {
                let top = Path::new(ROOT).join(group_name(pool));
                mkdir(&top)?;
                // Controllers must be enabled on the way down for the slot to have the files.
                let _ = fs::write(
                    Path::new(ROOT).join("cgroup.subtree_control"),
                    "+memory +pids +cpu",
                );
                let _ = fs::write(top.join("cgroup.subtree_control"), "+memory +pids +cpu");
                vec![Path::new(ROOT).join(&name)]
            }
        };
        for d in &dirs {
            if let Some(p) = d.parent() {
                mkdir(p)?;
            }
            mkdir(d)?;
        }
        let mut g = SlotGroup {
            version,
            dirs,
            memory_limit: 0,
            pids_limit: 0,
            stat_file: None,
            oom_file: None,
        };
        if let Some(d) = g.dir("memory").cloned() {
            g.stat_file = fs::File::open(d.join("memory.stat")).ok();
            g.oom_file = fs::File::open(d.join(g.oom_file_name())).ok();
        }
        // One CPU per slot: a run that starts threads cannot take the machine from the others.
        match version {
            Version::V1 => {
                if let Some(cpu) = g.dir("cpu") {
                    let _ = fs::write(cpu.join("cpu.cfs_period_us"), "100000");
                    let _ = fs::write(cpu.join("cpu.cfs_quota_us"), "100000");
                }
            }
            Version::V2 => {
                let _ = fs::write(g.dirs[0].join("cpu.max"), "100000 100000");
            }
        }
        Ok(g)
    }

    fn dir(&self, controller: &str) -> Option<&PathBuf> {
        match self.version {
            Version::V2 => self.dirs.first(),
            Version::V1 => self.dirs.iter().find(|d| {
                d.parent().and_then(Path::parent).and_then(Path::file_name)
                    == Some(controller.as_ref())
            }),
        }
    }

    /// Moves a process (and so its future children) into the group.
    pub fn add(&self, pid: u32) -> Result<(), String> {
        for d in &self.dirs {
            fs::write(d.join("cgroup.procs"), pid.to_string())
                .map_err(|e| format!("{}: {e}", d.display()))?;
        }
        Ok(())
    }

    pub fn memory_usage(&self) -> Option<u64> {
        let (d, f) = match self.version {
            Version::V1 => (self.dir("memory")?, "memory.usage_in_bytes"),
            Version::V2 => (self.dir("memory")?, "memory.current"),
        };
        fs::read_to_string(d.join(f)).ok()?.trim().parse().ok()
    }

    /// Memory no reclaim can take back: anonymous pages and tmpfs/shm (page cache is not
    /// counted: the kernel frees it under pressure).
    pub fn pinned_memory(&self) -> Option<u64> {
        let stat = match &self.stat_file {
            Some(f) => read_from_start(f)?,
            None => fs::read_to_string(self.dir("memory")?.join("memory.stat")).ok()?,
        };
        let keys: &[&str] = match self.version {
            Version::V1 => &["rss", "shmem"],
            Version::V2 => &["anon", "shmem"],
        };
        Some(
            stat.lines()
                .filter_map(|l| l.split_once(' '))
                .filter(|(k, _)| keys.contains(k))
                .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
                .sum(),
        )
    }

    pub fn set_memory_limit(&mut self, bytes: u64) -> Result<(), String> {
        if bytes == self.memory_limit {
            return Ok(());
        }
        let d = self.dir("memory").ok_or("no memory controller")?.clone();
        let files: &[&str] = match self.version {
            Version::V1 => &["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"],
            Version::V2 => &["memory.max", "memory.swap.max"],
        };
        for (i, f) in files.iter().enumerate() {
            let p = d.join(f);
            if i > 0 && !p.exists() {
                continue;
            }
            let v = if i > 0 && self.version == Version::V2 {
                "0".to_string()
            } else {
                bytes.to_string()
            };
            fs::write(&p, v).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        self.memory_limit = bytes;
        Ok(())
    }

    pub fn set_pids_limit(&mut self, n: u32) {
        if n == self.pids_limit {
            return;
        }
        if let Some(d) = self.dir("pids") {
            if fs::write(d.join("pids.max"), n.to_string()).is_ok() {
                self.pids_limit = n;
            }
        }
    }

    /// How many times the OOM killer has acted in this group.
    pub fn oom_kills(&self) -> u64 {
        let text = match &self.oom_file {
            Some(f) => read_from_start(f),
            None => self
                .dir("memory")
                .and_then(|d| fs::read_to_string(d.join(self.oom_file_name())).ok()),
        };
        text.and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("oom_kill ")
                    .and_then(|v| v.trim().parse().ok())
            })
        })
        .unwrap_or(0)
    }

    fn oom_file_name(&self) -> &'static str {
        match self.version {
            Version::V1 => "memory.oom_control",
            Version::V2 => "memory.events",
        }
    }

    /// Kills whatever is left in the group, waits for it to empty, then removes it. Called after
    /// the zygote was killed: its runs die with its PID namespace, but a big namespace takes a
    /// moment to tear down, and nothing may outlive the pool.
    pub fn remove(mut self) {
        self.stat_file = None;
        self.oom_file = None;
        let deadline = Instant::now() + Duration::from_secs(10);
        for d in &self.dirs {
            loop {
                let procs = fs::read_to_string(d.join("cgroup.procs")).unwrap_or_default();
                if procs.trim().is_empty() || Instant::now() > deadline {
                    break;
                }
                if self.version == Version::V2 {
                    let _ = fs::write(d.join("cgroup.kill"), "1");
                } else {
                    for pid in procs
                        .split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok())
                    {
                        let _ = nix::sys::signal::kill(
                            nix::unistd::Pid::from_raw(pid),
                            nix::sys::signal::Signal::SIGKILL,
                        );
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = fs::remove_dir(d);
        }
    }
}

/// Removes this process's top-level groups (after every slot was removed).
pub fn remove_top(version: Version, pool: u32) {
    for d in tops(version, &group_name(pool)) {
        let _ = fs::remove_dir(d);
    }
}

fn tops(version: Version, name: &str) -> Vec<PathBuf> {
    match version {
        Version::V1 => ["memory", "pids", "cpu"]
            .iter()
            .map(|c| Path::new(ROOT).join(c).join(name))
            .collect(),
        Version::V2 => vec![Path::new(ROOT).join(name)],
    }
}

/// Removes groups left behind by Referee processes that no longer exist.
pub fn reap_stale(version: Version) {
    let parents: Vec<PathBuf> = match version {
        Version::V1 => ["memory", "pids", "cpu"]
            .iter()
            .map(|c| Path::new(ROOT).join(c))
            .collect(),
        Version::V2 => vec![PathBuf::from(ROOT)],
    };
    for p in parents {
        let Ok(rd) = fs::read_dir(&p) else { continue };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            // `referee-<pid>-<pool>`: the owner's pid comes first.
            let Some(pid) = name
                .strip_prefix("referee-")
                .and_then(|s| s.split('-').next())
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            if let Ok(slots) = fs::read_dir(e.path()) {
                for s in slots.flatten() {
                    if s.path().is_dir() {
                        let _ = fs::remove_dir(s.path());
                    }
                }
            }
            let _ = fs::remove_dir(e.path());
        }
    }
}

fn mkdir(p: &Path) -> Result<(), String> {
    match fs::create_dir(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("{}: {e}", p.display())),
    }
}
