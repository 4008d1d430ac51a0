//! Runs one program in the sandbox, for poking at it by hand:
//! `cargo run --release -p referee-sandbox --example smoke -- '<code>' [python|cpp|c] [runs]`.
//! Stdin of every run is `3 4`; prints the first three outputs and the time for all runs.

use referee_core::exec::{Job, Limits, Run, Sandbox};
use std::sync::Arc;

fn main() {
    let pool = match referee_sandbox::Pool::start(&referee_sandbox::Config::default()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("the sandbox cannot start here: {e}");
            std::process::exit(2);
        }
    };
    let mut args = std::env::args().skip(1);
    let src = args
        .next()
        .unwrap_or_else(|| "a, b = map(int, input().split())\nprint(a + b)\n".into());
    let language = args.next().unwrap_or_else(|| "python".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let job = Job {
        language: language.into(),
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
    let elapsed = t.elapsed();
    match r {
        Ok(outs) => {
            for o in outs.iter().take(3) {
                println!(
                    "{:?} stdout={:?} stderr={:?} result={:?} cpu_ms={} wall_ms={}",
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
    println!("{n} runs in {elapsed:?}");
}
