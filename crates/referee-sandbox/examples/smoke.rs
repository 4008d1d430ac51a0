//! Runs one program in the sandbox: `smoke <code> [language] [runs]` (a developer's tool).
use referee_core::exec::{Job, Limits, Run, Sandbox};
use std::sync::Arc;
fn usage() -> String {
    let pid = std::process::id();
    (0..2)
        .map(|i| {
            std::fs::read_to_string(format!(
                "/sys/fs/cgroup/memory/referee-{pid}/slot-{i}/memory.usage_in_bytes"
            ))
            .unwrap_or_default()
            .trim()
            .to_string()
        })
        .collect::<Vec<_>>()
        .join(" ")
}
fn main() {
    let pool = referee_sandbox::Pool::start(&referee_sandbox::Config::default()).unwrap();
    let mut args = std::env::args().skip(1);
    let src = args
        .next()
        .unwrap_or("a,b=map(int,input().split())\nprint(a+b)\n".into());
    let lang = args.next().unwrap_or("python".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let job = Job {
        language: lang.into(),
        source: src.into(),
        runs: (0..n)
            .map(|_| Run::Stdio {
                stdin: Arc::from(&b"3 4\n"[..]),
            })
            .collect(),
        limits: Limits::default(),
    };
    let t = std::time::Instant::now();
    let r = futures::executor::block_on(pool.execute(job));
    let el = t.elapsed();
    match r {
        Ok(v) => {
            for o in v.iter().take(3) {
                println!(
                    "{:?} out={:?} err={:?} res={:?} cpu={} wall={}",
                    o.end,
                    String::from_utf8_lossy(&o.stdout),
                    o.stderr_tail,
                    o.result
                        .as_ref()
                        .map(|r| String::from_utf8_lossy(r).to_string()),
                    o.cpu_ms,
                    o.wall_ms
                );
            }
        }
        Err(e) => println!("job failed: {e:?}"),
    }
    println!("{n} runs in {el:?}");
    for ms in [0, 20, 100, 500] {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        println!("usage after +{ms}ms: {}", usage());
    }
}
