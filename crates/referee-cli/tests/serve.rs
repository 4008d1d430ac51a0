//! `referee serve` as a real process on loopback: start-up line, the endpoints over a socket,
//! a bad spec refusing to start, and SIGTERM finishing cleanly.

mod common;

use common::{fault, post, root, serve};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// What an init system sends to stop a service.
fn sigterm(pid: u32) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
}

#[test]
fn serves_registered_specs_over_a_real_socket_and_stops_on_sigterm() {
    let mut srv = serve(&[
        "--spec",
        "default=examples/gsm8k/spec.yaml",
        "--spec-dir",
        "examples/r1-format",
    ]);
    let (s, v) = post(
        &srv.addr,
        "/get_reward",
        &json!({"query": ["Q: 48 + 24? A: #### 72", "Q: 48 + 24? A: #### 71"],
                "prompts": ["Q: 48 + 24? A: ", "Q: 48 + 24? A: "],
                "labels": ["72", "72"]}),
    );
    // The gsm8k spec reads item.ground_truth; OpenRLHF rows carry `label`: a stated error. OpenRLHF
    // needs numbers, so the reward is 0.0 with the error flag, never `null`.
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["rewards"], json!([0.0, 0.0]), "{v}");
    assert_eq!(v["extra_logs"]["referee_error"], json!([1.0, 1.0]));
    let (s, v) = post(
        &srv.addr,
        "/v1/score",
        &json!({"program": "default", "samples": [
            {"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": "48 + 24?"}],
             "reward_model": {"style": "rule", "ground_truth": "72"}, "response": "#### 72"}]}),
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["results"][0]["components"]["correct"], 1.0, "{v}");
    let (s, v) = post(
        &srv.addr,
        "/v1/score",
        &json!({"program": "spec", "samples": []}),
    );
    assert_eq!(s, 200, "the --spec-dir spec is registered by its stem: {v}");
    let (s, _) = post(
        &srv.addr,
        "/v1/score",
        &json!({"program": "missing", "samples": []}),
    );
    assert_eq!(s, 404);
    // verl's custom reward function from examples/serve, against this server.
    let out = Command::new("python3")
        .current_dir(root().join("examples/serve"))
        .env("REFEREE_URL", format!("http://{}", srv.addr))
        .args([
            "-c",
            "import json, verl_reward as v; print(json.dumps([v.compute_score('openai/gsm8k', '#### 72', '72'), v.compute_score_batch(['a', 'a'], ['#### 3', '#### 4'], ['3', '3'])]))",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["score"], 1.0, "{v}");
    assert_eq!(v[0]["status"], "ok");
    assert_eq!(v[1][0]["correct"], 1.0, "{v}");
    assert_eq!(v[1][1]["correct"], 0.0, "{v}");
    sigterm(srv.proc.0.id());
    let status = srv.proc.0.wait().unwrap();
    assert!(status.success(), "graceful shutdown exits 0: {status:?}");
}

#[test]
fn a_spec_that_does_not_compile_stops_start_up_with_its_errors() {
    let out = Command::new(assert_cmd::cargo::cargo_bin("referee"))
        .current_dir(root())
        .args([
            "serve",
            "--port",
            "0",
            "--spec",
            "fixtures/specs/broken.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/grader/normalise"), "{err}");
}

#[test]
fn idle_connections_and_clients_that_vanish_mid_request_do_not_stop_the_server() {
    let mut srv = serve(&["--spec", "default=examples/gsm8k/spec.yaml"]);
    // Hundreds of connections that never send anything.
    let idle: Vec<TcpStream> = (0..600)
        .map(|_| TcpStream::connect(&srv.addr).unwrap())
        .collect();
    // Clients that send half a request, or announce a large body and leave.
    for i in 0..50 {
        let mut s = TcpStream::connect(&srv.addr).unwrap();
        if i % 2 == 0 {
            let _ = s.write_all(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: applic");
        } else {
            let _ = s.write_all(
                b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n{\"program\": \"default\", \"samples\": [",
            );
        }
        drop(s);
    }
    // Malformed JSON gets a 400, and real requests are still answered.
    let mut s = TcpStream::connect(&srv.addr).unwrap();
    write!(s, "POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\n{{oops").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    for _ in 0..20 {
        let (s, v) = post(
            &srv.addr,
            "/v1/score",
            &json!({"program": "default", "samples": [
                {"data_source": "gsm8k", "response": "#### 5", "reward_model": {"ground_truth": "5"}}]}),
        );
        assert_eq!(
            (s, v["results"][0]["components"]["correct"].clone()),
            (200, json!(1.0))
        );
    }
    drop(idle);
    assert!(
        srv.proc.0.try_wait().unwrap().is_none(),
        "the server is still running"
    );
}

fn judge_spec(dir: &std::path::Path, base_url: &str) -> PathBuf {
    let p = dir.join("judge.yaml");
    std::fs::write(
        &p,
        format!(
            "judges: {{default: {{base_url: \"{base_url}\", model: m, max_retries: 0, timeout_ms: 5000}}}}\n\
             judge_cache: {{backend: off}}\n\
             grader: {{type: score_model, steps: false, input: [{{role: user, content: \"{{{{sample.output_text}}}}\"}}]}}\n"
        ),
    )
    .unwrap();
    p
}

fn judged(addr: &str, text: &str) -> (u16, Value) {
    post(
        addr,
        "/v1/score",
        &json!({"program": "default", "samples": [{"item": {}, "sample": {"output_text": text}}]}),
    )
}

#[test]
fn a_dying_judge_backend_fails_samples_with_a_reason_and_the_server_keeps_serving() {
    let dir = std::env::temp_dir().join(format!("referee-serve-judge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut judge = fault(&["--mode", "ok", "--content", "{\"result\": 0.75}"]);
    let spec = judge_spec(&dir, &judge.1);
    let srv = serve(&["--spec", &format!("default={}", spec.display())]);
    let (s, v) = judged(&srv.addr, "Paris is the capital of France.");
    assert_eq!(
        (s, v["results"][0]["reward"].clone()),
        (200, json!(0.75)),
        "{v}"
    );
    let _ = judge.0 .0.kill();
    let _ = judge.0 .0.wait();
    let (s, v) = judged(&srv.addr, "Lyon is the capital of France.");
    assert_eq!(s, 200, "{v}");
    let r = &v["results"][0];
    assert_eq!(
        (
            r["status"].clone(),
            r["reason"].clone(),
            r["reward"].clone()
        ),
        (json!("error"), json!("judge_connection"), Value::Null),
        "{v}"
    );
    let (s, _) = post(
        &srv.addr,
        "/v1/score",
        &json!({"spec": "{type: const, value: 1}", "samples": [{"item": {}, "sample": {"output_text": "x"}}]}),
    );
    assert_eq!(s, 200, "rule specs are still served");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sigterm_finishes_the_requests_in_flight_before_exiting() {
    let dir = std::env::temp_dir().join(format!("referee-serve-drain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let judge = fault(&[
        "--mode",
        "ok",
        "--delay",
        "1.0",
        "--content",
        "{\"result\": 1}",
    ]);
    let spec = judge_spec(&dir, &judge.1);
    let mut srv = serve(&["--spec", &format!("default={}", spec.display())]);
    let addr = srv.addr.clone();
    let inflight = std::thread::spawn(move || judged(&addr, "Paris is the capital of France."));
    std::thread::sleep(std::time::Duration::from_millis(300));
    sigterm(srv.proc.0.id());
    let (s, v) = inflight.join().unwrap();
    assert_eq!(
        (s, v["results"][0]["reward"].clone()),
        (200, json!(1.0)),
        "{v}"
    );
    assert!(srv.proc.0.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn every_request_is_logged_as_one_json_line() {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("referee"))
        .current_dir(root())
        .args([
            "serve",
            "--port",
            "0",
            "--spec",
            "default=examples/gsm8k/spec.yaml",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    let addr = v["listening"]
        .as_str()
        .unwrap()
        .trim_start_matches("http://")
        .to_string();
    let (s, _) = post(
        &addr,
        "/v1/score",
        &json!({"program": "nope", "samples": []}),
    );
    assert_eq!(s, 404);
    sigterm(child.id());
    let out = child.wait_with_output().unwrap();
    let logs: Vec<Value> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let req = logs
        .iter()
        .find(|l| l["target"] == "referee::request")
        .unwrap_or_else(|| panic!("no request log in {logs:?}"));
    assert_eq!(req["fields"]["endpoint"], "/v1/score");
    assert_eq!(req["fields"]["status"], 404);
    assert_eq!(req["fields"]["method"], "POST");
    assert!(req["fields"]["ms"].as_f64().is_some());
}

#[test]
fn a_slow_judge_request_does_not_hold_up_rule_requests() {
    let dir = std::env::temp_dir().join(format!("referee-serve-slow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let judge = fault(&[
        "--mode",
        "ok",
        "--delay",
        "2.0",
        "--content",
        "{\"result\": 1}",
    ]);
    let spec = judge_spec(&dir, &judge.1);
    let srv = serve(&[
        "--spec",
        &format!("default={}", spec.display()),
        "--max-in-flight",
        "4",
    ]);
    let addr = srv.addr.clone();
    let slow = std::thread::spawn(move || judged(&addr, "Paris is the capital of France."));
    std::thread::sleep(std::time::Duration::from_millis(200));
    let t = std::time::Instant::now();
    let (s, v) = post(
        &srv.addr,
        "/v1/score",
        &json!({"spec": "{type: const, value: 1}", "samples": [{"item": {}, "sample": {"output_text": "x"}}]}),
    );
    assert_eq!((s, v["results"][0]["reward"].clone()), (200, json!(1.0)));
    assert!(
        t.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        t.elapsed()
    );
    let (s, v) = slow.join().unwrap();
    assert_eq!(
        (s, v["results"][0]["reward"].clone()),
        (200, json!(1.0)),
        "{v}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn get_text(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn metrics_show_sandbox_runs_in_flight() {
    let dir = std::env::temp_dir().join(format!("referee-serve-sbx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("slow.yaml");
    std::fs::write(
        &spec,
        "type: python\nname: slow\nsource: |\n  import time\n  def grade(sample, item):\n      time.sleep(1.5)\n      return 1.0\n",
    )
    .unwrap();
    let srv = serve(&["--spec", &format!("default={}", spec.display())]);
    let addr = srv.addr.clone();
    let job = std::thread::spawn(move || {
        post(
            &addr,
            "/v1/score",
            &json!({"program": "default", "samples": [{"item": {}, "sample": {"output_text": "x"}}]}),
        )
    });
    std::thread::sleep(std::time::Duration::from_millis(800));
    let during = get_text(&srv.addr, "/metrics");
    let (s, v) = job.join().unwrap();
    assert_eq!(
        (s, v["results"][0]["reward"].clone()),
        (200, json!(1.0)),
        "{v}"
    );
    let after = get_text(&srv.addr, "/metrics");
    assert!(
        during.contains("referee_sandbox_runs_in_flight 1"),
        "{during}"
    );
    assert!(
        after.contains("referee_sandbox_runs_in_flight 0"),
        "{after}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
