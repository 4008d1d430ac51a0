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

/// Without cgroups (a machine that has none, or `REFEREE_SANDBOX_CGROUPS=0`) the hard rlimits
/// still bound memory, processes and output.
#[test]
fn rlimits_alone_still_bound_memory_processes_and_output() {
    let pool = Pool::start(&Config {
        slots: 1,
        cgroups: false,
        ..Config::default()
    })
    .unwrap_or_else(|e| panic!("the sandbox cannot start on this machine: {e}"));
    assert!(!pool.uses_cgroups());
    let run = |code: &str| {
        let job = Job {
            language: "python".into(),
            source: code.into(),
            runs: vec![Run::Stdio {
                stdin: Arc::from(&b""[..]),
            }],
            limits: Limits {
                memory_bytes: 128 << 20,
                processes: 8,
                output_bytes: 1 << 20,
                ..Limits::default()
            },
        };
        futures::executor::block_on(pool.execute(job))
            .expect("job ran")
            .remove(0)
    };
    let mem = run("x = bytearray(2 << 30)\nprint('allocated')\n");
    assert!(mem.stderr_tail.contains("MemoryError"), "{mem:?}");
    let forks = run(
        "import os\nn = 0\ntry:\n    while n < 100:\n        if os.fork() == 0:\n            import time; time.sleep(5); os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint(n)\n",
    );
    let n: u32 = String::from_utf8_lossy(&forks.stdout)
        .trim()
        .parse()
        .unwrap();
    assert!(n < 8, "forked {n} processes under a limit of 8");
    // In a batch (two tests of one job on one slot) the init does not count against a test, and
    // the first test's processes are gone before the second starts.
    let job = Job {
        language: "python".into(),
        source: "import os\nn = 0\ntry:\n    while n < 100:\n        if os.fork() == 0:\n            import time; time.sleep(5); os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint(n)\n".into(),
        runs: vec![
            Run::Stdio {
                stdin: Arc::from(&b""[..]),
            };
            2
        ],
        limits: Limits {
            processes: 8,
            ..Limits::default()
        },
    };
    for o in futures::executor::block_on(pool.execute(job)).expect("job ran") {
        let k: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
        assert_eq!(k, n, "each test of a batch gets the same process budget");
    }
    let flood = run("while True:\n    print('x' * 4096)\n");
    assert_eq!(
        flood.end,
        referee_core::exec::RunEnd::OutputLimit,
        "{flood:?}"
    );
}

/// A Referee that was killed leaves its cgroups behind (nothing can remove them from outside a
/// dying process); the next pool to start removes those whose owner is gone.
#[test]
fn a_new_pool_removes_cgroups_left_by_dead_processes() {
    let memory = std::path::Path::new("/sys/fs/cgroup/memory");
    if !memory.is_dir() {
        eprintln!("no cgroup v1 memory hierarchy here; the v2 path is the same code");
        return;
    }
    // Far above any pid this machine hands out.
    let stale = memory.join("referee-4190001-0");
    std::fs::create_dir_all(stale.join("slot-0")).unwrap();
    let pool = Pool::start(&Config {
        slots: 1,
        ..Config::default()
    })
    .unwrap_or_else(|e| panic!("the sandbox cannot start on this machine: {e}"));
    assert!(!stale.exists(), "{} survived a new start", stale.display());
    drop(pool);
}
