//! What the CLI's integration tests share: the repository root, the `referee` binary run from
//! it, scratch directories, and the real processes they start on loopback (`referee serve`,
//! `scripts/fault_server.py`), each killed when dropped. Not every test file uses every helper.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `referee` binary, run from the repository root (the paths in the tests are relative).
pub fn referee() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("referee").unwrap();
    c.current_dir(root());
    c
}

/// A fresh scratch directory named `{prefix}-{name}` under the target's test directory.
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{prefix}-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A child process that is killed (and reaped) when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` with its stdout piped and reads the JSON line it announces itself with.
pub fn announced(cmd: &mut Command) -> (Proc, Value) {
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let v = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    (Proc(child), v)
}

/// A `referee serve` on a free loopback port.
pub struct Server {
    pub proc: Proc,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

pub fn serve(args: &[&str]) -> Server {
    let (proc, v) = announced(
        Command::new(assert_cmd::cargo::cargo_bin("referee"))
            .current_dir(root())
            .args(["serve", "--port", "0"])
            .args(args)
            .stderr(Stdio::null()),
    );
    let addr = v["listening"]
        .as_str()
        .unwrap()
        .trim_start_matches("http://")
        .to_string();
    Server { proc, addr }
}

/// `scripts/fault_server.py` (an OpenAI-compatible judge that misbehaves on request) on a free
/// port; returns it and its base URL.
pub fn fault(args: &[&str]) -> (Proc, String) {
    let (proc, v) = announced(
        Command::new("python3")
            .arg(root().join("scripts/fault_server.py"))
            .args(args),
    );
    (proc, v["base_url"].as_str().unwrap().to_string())
}

/// One HTTP/1.1 request; returns (status, JSON body, or null when the body holds no object).
pub fn send(addr: &str, method: &str, path: &str, body: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    // Bodies come whole or chunked; the JSON object is between the first `{` and the last `}`.
    let json = match (body.find('{'), body.rfind('}')) {
        (Some(a), Some(b)) => serde_json::from_str(&body[a..=b]).unwrap(),
        _ => Value::Null,
    };
    (status, json)
}

pub fn post(addr: &str, path: &str, body: &Value) -> (u16, Value) {
    send(addr, "POST", path, &body.to_string())
}

/// A GET whose body is any JSON value (`common::send` reads objects only).
pub fn get(addr: &str, path: &str) -> Value {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    serde_json::from_str(out.split_once("\r\n\r\n").unwrap().1).unwrap()
}

/// The host:port of a base URL.
pub fn addr(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string()
}
