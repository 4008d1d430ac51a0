//! Real processes on loopback for the judge tests: llama-server (through
//! `scripts/judge_server.py`), the misbehaving endpoint `scripts/fault_server.py`, and
//! `redis-server`. Each is stopped when its handle drops.

#![allow(dead_code)] // each test binary uses some of these

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts")
}

/// llama-server with the tiny generated model (or SmolLM2 with `model = "smol"`).
pub struct LlamaServer {
    pub pid: u64,
    pub base_url: String,
    pub model: String,
}

impl LlamaServer {
    pub fn start(model: &str) -> LlamaServer {
        LlamaServer::start_with(model, &[])
    }

    /// With more `judge_server.py start` flags (`--embedding`).
    pub fn start_with(model: &str, flags: &[&str]) -> LlamaServer {
        let out = Command::new("python3")
            .arg(scripts().join("judge_server.py"))
            .args(["start", "--model", model])
            .args(flags)
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "judge_server.py start failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(line.lines().last().unwrap_or(""))
            .unwrap_or_else(|e| panic!("bad start line {line:?}: {e}"));
        LlamaServer {
            pid: v["pid"].as_u64().unwrap(),
            base_url: v["base_url"].as_str().unwrap().to_string(),
            model: v["model"].as_str().unwrap().to_string(),
        }
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = Command::new("python3")
            .arg(scripts().join("judge_server.py"))
            .args(["stop", "--pid", &self.pid.to_string()])
            .status();
    }
}

/// A child process that printed one JSON line when ready; killed on drop.
pub struct Proc {
    pub child: Child,
    pub info: Value,
}

impl Proc {
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `scripts/fault_server.py --mode MODE` (see the script for the modes).
pub fn fault_server(mode: &str, extra: &[&str]) -> Proc {
    let mut child = Command::new("python3")
        .arg(scripts().join("fault_server.py"))
        .args(["--mode", mode])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let info: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    Proc { child, info }
}

/// A private `redis-server` on a free loopback port, with no persistence.
pub fn redis_server() -> (Proc, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server is installed (scripts/test.sh installs it from Debian's packages)");
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "redis-server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (
        Proc {
            child,
            info: Value::Null,
        },
        format!("redis://127.0.0.1:{port}/0"),
    )
}
