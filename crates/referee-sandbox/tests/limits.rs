//! The pool's concurrency limit is real: with N slots, never more than N runs are alive at once,
//! however many jobs and tests are queued, and N of them do run side by side.

use referee_core::exec::{Job, Limits, Run, Sandbox};
use referee_sandbox::{Config, Pool};
use std::sync::Arc;

#[test]
fn no_more_runs_alive_than_slots_and_all_slots_used() {
    let slots = 2;
    let pool = Pool::start(&Config {
        slots,
        ..Config::default()
    })
    .unwrap_or_else(|e| panic!("the sandbox cannot start on this machine: {e}"));
    // Each run prints when it started and ended on the machine-wide monotonic clock.
    let code = "import time\nt = time.monotonic()\ntime.sleep(0.25)\nprint(t, time.monotonic())\n";
    let jobs: Vec<_> = (0..4)
        .map(|_| {
            pool.execute(Job {
                language: "python".into(),
                source: code.into(),
                runs: (0..3)
                    .map(|_| Run::Stdio {
                        stdin: Arc::from(&b""[..]),
                    })
                    .collect(),
                limits: Limits::default(),
            })
        })
        .collect();
    let mut spans = Vec::new();
    for j in jobs {
        for out in futures::executor::block_on(j).expect("job ran") {
            let text = String::from_utf8(out.stdout).unwrap();
            let v: Vec<f64> = text
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            assert_eq!(v.len(), 2, "run printed {text:?} ({:?})", out.end);
            spans.push((v[0], v[1]));
        }
    }
    assert_eq!(spans.len(), 12);
    let most = spans
        .iter()
        .map(|&(s, _)| spans.iter().filter(|&&(a, b)| a <= s && s < b).count())
        .max()
        .unwrap();
    assert!(
        most <= slots,
        "{most} runs were alive at once with {slots} slots"
    );
    assert_eq!(most, slots, "the slots did not run side by side");
}
