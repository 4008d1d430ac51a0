//! Fuzz and property tests for `referee-math`: never panic, always bounded, and well-formed
//! answers compare as themselves.
//!
//! - (a) random LaTeX-ish strings as gold and as answer: no panic, each call under a time budget
//!   (the slowest call is printed; run with `--nocapture` to see it);
//! - (b) generated well-formed integers, fractions, decimals and expressions: `x` against
//!   `\boxed{x}` is Correct, against `\boxed{x + 1}` Wrong;
//! - (c) deterministic hostile inputs (power towers, 5,000-deep nesting, huge factorials, 1 MB
//!   completions, `\boxed{` repeated 100k times): fast, never a panic, never Correct unless both
//!   sides are the same expression. The megabyte cases of the exploit corpus
//!   (`fixtures/exploits/math_equiv.yaml`, family 10) live here.
//!
//! Budgets are for debug builds on a loaded machine; a call over budget is re-timed twice and
//! the fastest of the three counts, so one scheduling hiccup does not fail the suite.
//! `REFEREE_FUZZ_BUDGET_SCALE=2` doubles every budget; `PROPTEST_CASES` / `PROPTEST_RNG_SEED`
//! are honoured as usual.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use referee_math::{Answer, ExtractMode, Gold, Options, Status, Verdict, Verifier};
use std::cell::RefCell;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Shared helpers

fn budget(ms: u64) -> Duration {
    let scale = std::env::var("REFEREE_FUZZ_BUDGET_SCALE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(1.0);
    Duration::from_secs_f64(ms as f64 / 1000.0 * scale)
}

/// Runs `verify`; when it is over `limit` (but not hopelessly, under 5x), re-runs it twice and
/// keeps the fastest time (the verdicts must agree: the verifier is deterministic).
fn timed(v: &Verifier, gold: &str, answer: &str, limit: Duration) -> (Verdict, Duration) {
    let t = Instant::now();
    let verdict = v.verify(Gold(gold), Answer(answer));
    let mut best = t.elapsed();
    if best > limit && best < limit * 5 {
        for _ in 0..2 {
            let t = Instant::now();
            let again = v.verify(Gold(gold), Answer(answer));
            best = best.min(t.elapsed());
            assert_eq!(
                again.status,
                verdict.status,
                "non-deterministic verdict for gold {} / answer {}",
                show(gold),
                show(answer)
            );
        }
    }
    (verdict, best)
}

/// Longest wait for one hostile call before it is reported as a hang (and left running).
const HANG: Duration = Duration::from_secs(5);

/// [`timed`] on a worker thread, so a hang is reported instead of stalling the suite; `None`
/// when the call did not return within [`HANG`].
fn timed_guarded(
    v: &Verifier,
    gold: String,
    answer: String,
    limit: Duration,
) -> Option<(Verdict, Duration)> {
    let v = v.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(timed(&v, &gold, &answer, limit));
    });
    rx.recv_timeout(HANG).ok()
}

/// A short, escaped rendering of a possibly huge input for failure messages.
fn show(s: &str) -> String {
    const KEEP: usize = 160;
    if s.len() <= KEEP {
        return format!("{s:?}");
    }
    let mut head = KEEP / 2;
    while !s.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = s.len() - KEEP / 2;
    while !s.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{:?}..<{} bytes>..{:?}",
        &s[..head],
        s.len() - head - (s.len() - tail),
        &s[tail..]
    )
}

fn describe(v: &Verdict) -> String {
    let opt = |o: Option<String>| o.unwrap_or_else(|| "-".to_string());
    format!(
        "status {}, side {:?}, extracted {}, gold_form {}, answer_form {}, detail {:?}",
        v.status.as_str(),
        v.side,
        opt(v.extracted.as_ref().map(|e| show(&format!("{e:?}")))),
        opt(v.gold_form.as_deref().map(show)),
        opt(v.answer_form.as_deref().map(show)),
        v.detail
    )
}

fn verifiers() -> Vec<(&'static str, Verifier)> {
    let with = |extract| {
        Verifier::new(Options {
            extract,
            ..Options::default()
        })
    };
    vec![
        ("strict", Verifier::new(Options::default())),
        ("lenient", with(ExtractMode::LENIENT)),
        ("bare", with(ExtractMode::Bare)),
    ]
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        // Keep regressions out of the source tree; print the failing input instead.
        failure_persistence: None,
        max_shrink_iters: 1024,
        ..Config::default()
    })
}

#[test]
fn verifier_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Verifier>();
}

// ---------------------------------------------------------------------------------------------
// (a) Random LaTeX-ish strings: no panic, bounded time

const TOKENS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "9",
    "10",
    "1000",
    r"\frac{",
    r"\dfrac{",
    r"\sqrt",
    r"\sqrt{",
    r"\sqrt[",
    "^",
    "^{",
    "_",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    "{,}",
    ".",
    "-",
    "+",
    "*",
    "/",
    "!",
    r"\boxed{",
    r"\fbox{",
    r"\pi",
    "x",
    "y",
    "e",
    "i",
    "=",
    "<",
    ">",
    r"\le",
    r"\ge",
    r"\infty",
    r"\cup",
    r"\pm",
    r"\cdot",
    r"\times",
    r"\begin{pmatrix}",
    r"\begin{bmatrix}",
    "&",
    r"\\",
    r"\end{pmatrix}",
    r"\end{bmatrix}",
    "%",
    r"\%",
    r"^\circ",
    "°",
    r"\text{",
    r"\mathrm{",
    r"\left(",
    r"\right)",
    r"\{",
    r"\}",
    "$",
    " ",
    "\n",
    " or ",
    " and ",
    "The answer is ",
    "Answer: ",
    "#### ",
    "−",
    "１２",
    "３",
    r"\!",
    r"\,",
    "e3",
    r"\binom{",
    r"\ln",
    r"\sin",
    "|",
    "52_8",
    "10000!",
];

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => prop::sample::select(TOKENS).prop_map(String::from),
        3 => "[0-9]{1,8}",
        1 => any::<char>().prop_map(|c| c.to_string()),
        1 => prop::sample::select(&['０', '１', '５', '９', '．', '，', '−', '–', '—', '∞', '√', 'π', '×', '÷', '²', '½', '\u{200b}', '\u{feff}', '\u{0301}'][..])
            .prop_map(|c| c.to_string()),
    ]
}

fn latexish() -> impl Strategy<Value = String> {
    prop::collection::vec(token(), 0..48).prop_map(|v| v.concat())
}

struct Slowest {
    time: Duration,
    what: String,
}

#[test]
fn random_latexish_inputs_never_panic_and_stay_fast() {
    let limit = budget(50);
    let verifiers = verifiers();
    let slowest = RefCell::new(Slowest {
        time: Duration::ZERO,
        what: String::new(),
    });
    let calls = RefCell::new(0u64);
    let result = runner(256).run(&(latexish(), latexish()), |(g, a)| {
        let boxed = format!(r"\boxed{{{a}}}");
        for (mode, v) in &verifiers {
            for (gold, answer) in [(&g, &a), (&g, &boxed), (&a, &g)] {
                let (verdict, took) = timed(v, gold, answer, limit);
                *calls.borrow_mut() += 1;
                {
                    let mut s = slowest.borrow_mut();
                    if took > s.time {
                        s.time = took;
                        s.what = format!("[{mode}] gold {} / answer {}", show(gold), show(answer));
                    }
                }
                prop_assert!(
                    took <= limit,
                    "[{mode}] took {took:?} (> {limit:?}) on gold {} / answer {}: {}",
                    show(gold),
                    show(answer),
                    describe(&verdict)
                );
                prop_assert_eq!(
                    verdict.reward(),
                    if verdict.status == Status::Correct {
                        1.0
                    } else {
                        0.0
                    }
                );
            }
        }
        Ok(())
    });
    let s = slowest.into_inner();
    eprintln!(
        "random inputs: {} verify calls, slowest {:?}: {}",
        calls.into_inner(),
        s.time,
        s.what
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// (b) Well-formed answers compare as themselves, and not as themselves plus one

/// Adds one to a string of decimal digits.
fn inc_digits(s: &str) -> String {
    let mut d: Vec<u8> = s.bytes().collect();
    let mut i = d.len();
    loop {
        if i == 0 {
            d.insert(0, b'1');
            break;
        }
        i -= 1;
        if d[i] == b'9' {
            d[i] = b'0';
        } else {
            d[i] += 1;
            break;
        }
    }
    String::from_utf8(d).unwrap()
}

fn frac(num: i64, den: i64) -> String {
    if num < 0 {
        format!(r"-\frac{{{}}}{{{den}}}", -num)
    } else {
        format!(r"\frac{{{num}}}{{{den}}}")
    }
}

/// `(x, x + 1)`, both written as literals.
fn literal_and_successor() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        (-10_000i64..10_000).prop_map(|n| (n.to_string(), (n + 1).to_string())),
        any::<i64>().prop_map(|n| (n.to_string(), (i128::from(n) + 1).to_string())),
        "[1-9][0-9]{0,40}".prop_map(|s| {
            let t = inc_digits(&s);
            (s, t)
        }),
        (-50i64..50, 2i64..50).prop_map(|(a, b)| (frac(a, b), frac(a + b, b))),
        (0u32..1000, "[0-9]{1,4}")
            .prop_map(|(i, f)| (format!("{i}.{f}"), format!("{}.{f}", i + 1))),
    ]
}

/// Expressions with `x`, `\pi` and surds, small enough that `e` and `e + 1` differ clearly in
/// floating point wherever they are evaluated.
fn expression() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (1u32..10).prop_map(|n| n.to_string()),
        Just("x".to_string()),
        Just(r"\pi".to_string()),
        (2u32..30).prop_map(|k| format!(r"\sqrt{{{k}}}")),
    ];
    leaf.prop_recursive(3, 8, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) + ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) - ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!(r"({a}) \cdot ({b})")),
            (inner.clone(), 2u32..10).prop_map(|(a, k)| format!(r"\frac{{{a}}}{{{k}}}")),
            inner.clone().prop_map(|a| format!("({a})^{{2}}")),
            inner.prop_map(|a| format!("-({a})")),
        ]
    })
}

fn expect_status(
    v: &Verifier,
    gold: &str,
    answer: &str,
    want: Status,
) -> Result<(), TestCaseError> {
    let verdict = v.verify(Gold(gold), Answer(answer));
    prop_assert!(
        verdict.status == want,
        "gold {} / answer {}: want {}, got {}",
        show(gold),
        show(answer),
        want.as_str(),
        describe(&verdict)
    );
    Ok(())
}

#[test]
fn literals_equal_themselves_and_not_their_successor() {
    let v = Verifier::new(Options::default());
    let result = runner(256).run(&literal_and_successor(), |(x, next)| {
        expect_status(&v, &x, &format!(r"\boxed{{{x}}}"), Status::Correct)?;
        expect_status(&v, &x, &format!(r"The answer is ${x}$."), Status::Correct)?;
        expect_status(&v, &x, &format!(r"\boxed{{{next}}}"), Status::Wrong)?;
        expect_status(&v, &next, &format!(r"\boxed{{{x}}}"), Status::Wrong)?;
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn expressions_equal_themselves_and_not_themselves_plus_one() {
    let v = Verifier::new(Options::default());
    let result = runner(256).run(&expression(), |e| {
        expect_status(&v, &e, &format!(r"\boxed{{{e}}}"), Status::Correct)?;
        expect_status(&v, &e, &format!(r"\boxed{{({e}) + 1}}"), Status::Wrong)?;
        expect_status(
            &v,
            &format!("({e}) + 1"),
            &format!(r"\boxed{{{e}}}"),
            Status::Wrong,
        )?;
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// (c) Hostile inputs: fast, no panic, never a false Correct

struct Hostile {
    name: &'static str,
    gold: String,
    answer: String,
    /// Statuses accepted; empty means "any" (gold and answer are the same expression, so even
    /// Correct is fine).
    allowed: &'static [Status],
}

/// Answer-side trouble against a simple gold.
const ANSWER_SIDE: &[Status] = &[
    Status::TooComplex,
    Status::Wrong,
    Status::NoAnswer,
    Status::UnparseableAnswer,
];
/// Gold-side trouble: the gold may also be reported unreadable.
const GOLD_SIDE: &[Status] = &[
    Status::TooComplex,
    Status::Wrong,
    Status::NoAnswer,
    Status::UnparseableAnswer,
    Status::UnparseableGold,
];
const ANY: &[Status] = &[];

/// Marker-free filler with numbers and inline math, `bytes` long (cut at a sentence).
fn filler(bytes: usize) -> String {
    const SENTENCES: [&str; 4] = [
        "We consider the case n = 12 and compute $3 \\cdot 4 = 12$, which is consistent. ",
        "Next, substituting x = 7 gives $x^2 - 49 = 0$, so nothing changes here. ",
        "The sum over k from 1 to 10 of k is 55, and $\\frac{55}{5} = 11$ as before. ",
        "Checking the boundary (0, 1] once more shows 3 cases and 41 subcases overall. ",
    ];
    let mut s = String::with_capacity(bytes + 128);
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(SENTENCES[i % SENTENCES.len()]);
        i += 1;
    }
    s
}

fn nested(open: &str, inner: &str, close: &str, n: usize) -> String {
    let mut s = String::with_capacity(n * (open.len() + close.len()) + inner.len());
    s.push_str(&open.repeat(n));
    s.push_str(inner);
    s.push_str(&close.repeat(n));
    s
}

fn hostile_cases() -> Vec<Hostile> {
    let h = |name, gold: &str, answer: String, allowed| Hostile {
        name,
        gold: gold.to_string(),
        answer,
        allowed,
    };
    let tower = r"9^{9^{9^9}}";
    let issue65 = r"\dfrac{5^{(5^{(5^{(5^5)})}-4)}-5}{16}";
    let titan = r"(2003^{2002^{2001}})";
    let mb_number = "9".repeat(1_000_000);
    let braces = nested("{", "1", "}", 5000);
    let sqrts = nested(r"\sqrt{", "2", "}", 5000);
    let boxes_closed = nested(r"\boxed{", "1", "}", 100_000);
    let mut v = vec![
        // Power towers and huge evaluations, answer side.
        h("power tower", "1", format!(r"\boxed{{{tower}}}"), ANSWER_SIDE),
        h(
            "power tower vs a neighbouring tower",
            tower,
            r"\boxed{9^{9^{9^8}}}".to_string(),
            GOLD_SIDE,
        ),
        h("power tower vs itself", tower, format!(r"\boxed{{{tower}}}"), ANY),
        h("power tower as gold", tower, r"\boxed{1}".to_string(), GOLD_SIDE),
        h("Math-Verify issue 65", "1", format!(r"\boxed{{{issue65}}}"), ANSWER_SIDE),
        h("issue 65 vs itself", issue65, format!(r"\boxed{{{issue65}}}"), ANY),
        h("issue 65 as gold", issue65, r"\boxed{0}".to_string(), GOLD_SIDE),
        h("TorchTitan power chain", "7", format!(r"\boxed{{{titan}}}"), ANSWER_SIDE),
        h(
            "TorchTitan power chain, unbalanced, unmarked",
            "7",
            r"the last digit of (2003^{2002^{2001}} is".to_string(),
            ANSWER_SIDE,
        ),
        h(
            "TorchTitan power chain, unbalanced, lenient-looking",
            "7",
            r"\boxed{(2003^{2002^{2001}}}".to_string(),
            ANSWER_SIDE,
        ),
        h("10000!", "1", r"\boxed{10000!}".to_string(), ANSWER_SIDE),
        h("10000!!", "1", r"\boxed{10000!!}".to_string(), ANSWER_SIDE),
        h("10000! as gold", r"10000!", r"\boxed{10000! + 1}".to_string(), GOLD_SIDE),
        h("10000! vs itself", r"10000!", r"\boxed{10000!}".to_string(), ANY),
        h(
            "cancelling huge powers",
            "1",
            r"\boxed{10^{10^{10}} - 10^{10^{10}} + 1}".to_string(),
            ANSWER_SIDE,
        ),
        h("huge exponent literal", "1", r"\boxed{1.5e999999999}".to_string(), ANSWER_SIDE),
        h(
            "huge scientific exponent",
            "1",
            r"\boxed{1.5 \times 10^{999999999}}".to_string(),
            ANSWER_SIDE,
        ),
        // Deep nesting.
        h("5000 nested braces", "2", format!(r"\boxed{{{braces}}}"), ANSWER_SIDE),
        h("5000 nested braces as gold", &braces, r"\boxed{2}".to_string(), GOLD_SIDE),
        h("5000 nested braces vs itself", &braces, format!(r"\boxed{{{braces}}}"), ANY),
        h("5000 unclosed braces", "2", format!(r"\boxed{{{}}}", "{".repeat(5000)), ANSWER_SIDE),
        h("5000 unclosed braces, bare", "2", "{".repeat(5000), ANSWER_SIDE),
        h("5000 nested sqrt", "2", format!(r"\boxed{{{sqrts}}}"), ANSWER_SIDE),
        h("5000 nested sqrt as gold", &sqrts, r"\boxed{2}".to_string(), GOLD_SIDE),
        h("5000 unclosed sqrt", "2", format!(r"\boxed{{{}}}", r"\sqrt{".repeat(5000)), ANSWER_SIDE),
        h("5000 nested parentheses", "2", format!(r"\boxed{{{}}}", nested("(", "1", ")", 5000)), ANSWER_SIDE),
        h("5000 nested fractions", "2", format!(r"\boxed{{{}}}", nested(r"\frac{1}{", "2", "}", 5000)), ANSWER_SIDE),
        h("5000 chained powers", "2", format!(r"\boxed{{{}}}", nested("2^{", "2", "}", 5000)), ANSWER_SIDE),
        // Megabyte inputs.
        h("1 MB number, boxed", "1", format!(r"\boxed{{{mb_number}}}"), ANSWER_SIDE),
        h("1 MB number, unmarked", "1", mb_number.clone(), ANSWER_SIDE),
        h("1 MB number as gold", &mb_number, r"\boxed{1}".to_string(), GOLD_SIDE),
        h("1 MB number vs itself", &mb_number, format!(r"\boxed{{{mb_number}}}"), ANY),
        h(
            "1 MB number vs itself plus one digit",
            &mb_number,
            format!(r"\boxed{{{mb_number}9}}"),
            GOLD_SIDE,
        ),
        h(
            "early Minerva line, 1 MB of filler, later different box",
            "42",
            format!(
                "Final Answer: The final answer is $42$. I hope it is correct.\n{}\nOn reflection: \\boxed{{41}}",
                filler(1_000_000)
            ),
            ANSWER_SIDE,
        ),
        h(
            "gold boxed early, 1 MB of filler, later different box",
            "42",
            format!(r"\boxed{{42}} {} \boxed{{41}}", filler(1_000_000)),
            ANSWER_SIDE,
        ),
        h(
            "1 MB of filler with no marker",
            "12",
            filler(1_000_000),
            ANSWER_SIDE,
        ),
        h(
            "1 MB of filler ending in a hedge",
            "42",
            format!(r"{} \boxed{{41}} \boxed{{42}}", filler(1_000_000)),
            ANSWER_SIDE,
        ),
    ];
    // 1 MB of `\text{` and of unicode, both sides.
    v.push(h(
        "1 MB of \\text{",
        "1",
        r"\text{".repeat(170_000),
        ANSWER_SIDE,
    ));
    v.push(h(
        "1 MB of full-width digits",
        "1",
        "９".repeat(340_000),
        ANSWER_SIDE,
    ));
    // Last: the slowest kind so far, so a hang does not slow the cases above.
    v.extend([
        h(
            "100k opening boxes",
            "1",
            r"\boxed{".repeat(100_000),
            ANSWER_SIDE,
        ),
        h("100k nested boxes", "2", boxes_closed, ANSWER_SIDE),
        h(
            "100k back-to-back boxes",
            "2",
            r"\boxed{1}".repeat(100_000),
            ANSWER_SIDE,
        ),
    ]);
    v
}

#[test]
fn hostile_inputs_are_fast_and_never_falsely_correct() {
    let limit = budget(100);
    let v = Verifier::new(Options::default());
    let mut failures = String::new();
    let mut times: Vec<(Duration, &str)> = Vec::new();
    for c in hostile_cases() {
        let Some((verdict, took)) = timed_guarded(&v, c.gold, c.answer, limit) else {
            let _ = writeln!(failures, "- {}: no verdict after {HANG:?} (hang?)", c.name);
            times.push((HANG, c.name));
            continue;
        };
        times.push((took, c.name));
        if took > limit {
            let _ = writeln!(
                failures,
                "- {}: took {took:?} (> {limit:?}); {}",
                c.name,
                describe(&verdict)
            );
        }
        if !c.allowed.is_empty() && !c.allowed.contains(&verdict.status) {
            let _ = writeln!(
                failures,
                "- {}: status {} not in {:?}; {}",
                c.name,
                verdict.status.as_str(),
                c.allowed.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                describe(&verdict)
            );
        }
    }
    times.sort_by_key(|t| std::cmp::Reverse(t.0));
    eprintln!(
        "hostile inputs, slowest first: {:?}",
        &times[..times.len().min(6)]
    );
    assert!(failures.is_empty(), "hostile inputs:\n{failures}");
}

/// The megabyte completions that must still be read: the box at the end is the answer.
#[test]
fn megabyte_completions_still_find_the_final_box() {
    let limit = budget(100);
    let v = Verifier::new(Options::default());
    let cases = [
        (
            "1 MB of filler, box at the end",
            format!(r"{} So the answer is $\boxed{{42}}$.", filler(1_000_000)),
        ),
        (
            "1 MB of filler, wrong box early, right box at the end",
            format!(r"\boxed{{41}} {} \boxed{{42}}", filler(1_000_000)),
        ),
        (
            "2 MB of filler (over the scan window), box at the end",
            format!(r"{} \boxed{{42}}", filler(2_000_000)),
        ),
        (
            "1 MB of filler, Minerva line at the end",
            format!(
                "{}\nFinal Answer: The final answer is $42$. I hope it is correct.",
                filler(1_000_000)
            ),
        ),
    ];
    let mut failures = String::new();
    for (name, answer) in cases {
        let Some((verdict, took)) = timed_guarded(&v, "42".into(), answer, limit) else {
            let _ = writeln!(failures, "- {name}: no verdict after {HANG:?} (hang?)");
            continue;
        };
        eprintln!("{name}: {took:?}, {}", verdict.status.as_str());
        if verdict.status != Status::Correct || took > limit {
            let _ = writeln!(failures, "- {name}: took {took:?}; {}", describe(&verdict));
        }
    }
    // A box beyond the documented scan window (the last `max_completion_bytes`) is not seen.
    let buried = format!(r"\boxed{{42}} {}", filler(2_000_000));
    let (verdict, took) = timed_guarded(&v, "42".into(), buried, limit).expect("returns");
    if !matches!(verdict.status, Status::NoAnswer | Status::TooComplex) || took > limit {
        let _ = writeln!(
            failures,
            "- box 2 MB before the end (outside the scan window): took {took:?}; {}",
            describe(&verdict)
        );
    }
    assert!(failures.is_empty(), "megabyte completions:\n{failures}");
}

/// One verifier shared by threads gives the same verdicts as on one thread (no global state,
/// no signals).
#[test]
fn shared_verifier_across_threads_is_consistent() {
    let v = Verifier::new(Options::default());
    let pairs: Vec<(&str, String)> = vec![
        ("1", r"\boxed{9^{9^{9^9}}}".to_string()),
        (
            r"\frac{1}{2}",
            r"so the answer is $\boxed{0.5}$".to_string(),
        ),
        ("53607", r"\boxed{53608}".to_string()),
        ("2", format!(r"\boxed{{{}}}", nested("{", "1", "}", 5000))),
        ("42", format!(r"{} \boxed{{42}}", filler(100_000))),
    ];
    let single: Vec<Status> = pairs
        .iter()
        .map(|(g, a)| v.verify(Gold(g), Answer(a)).status)
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    pairs
                        .iter()
                        .map(|(g, a)| v.verify(Gold(g), Answer(a)).status)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().expect("no panic in a worker"), single);
        }
    });
}
