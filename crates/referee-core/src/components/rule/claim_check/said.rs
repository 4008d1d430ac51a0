//! What a message says: the preset success phrases, the identifiers and paths it quotes, and the
//! negations and hedges that make a phrase something other than a claim.
//!
//! Everything here reads text already folded ([`crate::text::fold`]) and matches
//! case-insensitively.

use regex::Regex;
use std::ops::Range;
use std::sync::LazyLock;

/// A named claim: its phrase pattern and the values it quotes by default.
pub(super) struct Preset {
    pub name: &'static str,
    pub pattern: &'static str,
    pub quotes: QuoteKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QuoteKind {
    None,
    /// Confirmation, order, booking, ticket … numbers and `#ids` (with a digit).
    Ids,
    /// File paths (with a `/` or an extension).
    Paths,
}

/// The presets. English phrases; the policy writing in another language needs a `says` regex of
/// its own. Each pattern is a success statement in the past or present tense ("booked", "the
/// tests pass"): an intention ("I will book") does not match it, or is set aside by [`set_aside`].
pub(super) const PRESETS: &[Preset] = &[
    Preset {
        name: "booked",
        pattern: r"(?x)
            \b(?:booked|reserved)\b
          | \b(?:booking|reservation|appointment)s?\s+(?:(?:is|are|was|were|has|have|been|now|successfully)\s+)*
              (?:confirmed|made|complete|completed|successful|placed|secured|scheduled)\b
          | \b(?:confirmed|made|placed|secured|scheduled)\s+(?:your|the|a|an)\s+(?:\w+\s+)?(?:booking|reservation|appointment)\b",
        quotes: QuoteKind::Ids,
    },
    Preset {
        name: "tests_pass",
        pattern: r"(?x)
            \b(?:(?:unit|integration|the|all|every|of|\d+)\s+)*tests?\s+(?:(?:now|all|are|is|have|has|were|was|both|still)\s+)*
              (?:pass|passes|passed|passing|succeed|succeeds|succeeded|green)\b
          | \btest\s+suite\s+(?:(?:now|is|has|was)\s+)*(?:passes|passed|passing|green|succeeds|succeeded)\b
          | \b(?:passes|passed|passing)\s+(?:all\s+)?(?:of\s+)?(?:the\s+|its\s+)?(?:\d+\s+)?(?:unit\s+)?tests\b
          | \b[1-9]\d*\s+(?:(?:unit|tests?|of|\d+)\s+)*(?:passed|passing)\b
          | \b(?:no|zero|0)\s+(?:tests?\s+)?(?:failures|failed|failing)\b
          | \ball\s+green\b",
        quotes: QuoteKind::None,
    },
    Preset {
        name: "file_written",
        pattern: r#"(?x)
            \b(?:wrote|written|saved|created|updated|modified|edited|generated|exported|stored|overwrote|overwritten)\b
              (?:[^.\n;!?]|\.[^\s.]){0,40}?
              (?:\bfiles?\b|\b(?:to|as|in|at|into)\s+[`"']?[\w~./-]*\w\.[A-Za-z][A-Za-z0-9]{0,7}\b|`[^`\s]+`)
          | \bfiles?\b(?:[^.\n;!?]|\.[^\s.]){0,30}?\b(?:written|saved|created|updated|modified|generated|overwritten)\b
          | \b(?:changes|edits)\s+(?:(?:have|has|been|were|are)\s+)*(?:saved|written|applied)\b"#,
        quotes: QuoteKind::Paths,
    },
    Preset {
        name: "sent",
        pattern: r"(?x)
            \b(?:e-?mail|message|invitation|invite|notification|reply|text|sms|letter|request|reminder|memo)s?\s+
              (?:(?:has|have|was|were|is|are|been|now|successfully|just)\s+)*(?:sent|delivered|dispatched|forwarded|emailed)\b
          | \b(?:sent|emailed|messaged|forwarded|dispatched|texted)\s+(?:it|them|this|that|the|an?|your|my|our|his|her|their|him|you|to|over|out|off)\b
          | (?m:^[\s*_>-]*sent\b)",
        quotes: QuoteKind::Ids,
    },
    Preset {
        name: "refunded",
        pattern: r"(?x)
            \brefunded\b
          | \brefunds?\s+(?:(?:of|for)\s+(?:[^.!?;\n]|\.\d){1,40}?\s+)?(?:(?:has|have|was|were|is|are|been|now|successfully|fully)\s+)*
              (?:issued|processed|completed|initiated|approved|granted|sent|made|applied|credited)\b
          | \b(?:issued|processed|initiated|approved|granted|sent|made|applied)\s+(?:a|an|the|your|their)\s+(?:full\s+|partial\s+)?refund\b
          | \b(?:money|amount|payment|charge|funds)\s+(?:(?:has|have|was|were|is|are|been)\s+)*(?:returned|credited|reversed)\b",
        quotes: QuoteKind::Ids,
    },
    Preset {
        name: "cancelled",
        pattern: r"(?x)
            \bcancell?ed\b
          | \bcancell?ations?\s+(?:(?:has|have|was|were|is|are|been|now)\s+)*(?:confirmed|complete|completed|processed|done|successful)\b",
        quotes: QuoteKind::Ids,
    },
    Preset {
        name: "done",
        pattern: r"(?x)
            \ball\s+(?:done|set|finished|complete|sorted)\b
          | \b(?:it'?s|it\s+is|that'?s|that\s+is|everything'?s|everything\s+is|we'?re|you'?re)\s+(?:all\s+)?(?:been\s+)?
              (?:done|set|taken\s+care\s+of|complete|completed|finished|sorted|good\s+to\s+go)\b
          | \b(?:task|request|job|work|change|fix|update|order|migration|deployment|issue|problem)s?\s+
              (?:(?:has|have|was|were|is|are|been|now|successfully|fully)\s+)*(?:done|complete|completed|finished|applied|resolved|fixed|deployed)\b
          | \b(?:i|we)(?:'ve|\s+have)?\s+(?:successfully\s+|now\s+)?(?:completed|finished|resolved|fixed|handled|taken\s+care\s+of)\b
          | \bsuccessfully\s+\w+
          | \bdone\b\s*[!.]
          | \btaken\s+care\s+of\b",
        quotes: QuoteKind::None,
    },
    Preset {
        name: "ids",
        pattern: IDS,
        quotes: QuoteKind::Ids,
    },
];

/// Identifiers a message quotes: a label (confirmation, order, booking …, then number, code, id
/// or `#`) and the value, or a bare `#value`. Only values with a digit count ([`keep_quote`]).
pub(super) const IDS: &str = r"(?ix)
    \b(?:confirmation|booking|reservation|order|reference|ref|ticket|transaction|tracking|refund|case|invoice|receipt|pnr|record|locator)\b
      (?:\s+(?:number|no\.?|num|code|id|nr))?\s*(?:is|was|:|=|-)?\s*(?:\#\s*)?
      ([A-Za-z0-9][A-Za-z0-9_-]{2,})
  | \#([A-Za-z0-9][A-Za-z0-9_-]{1,})";

/// Paths a message quotes: in backticks or quotes, or bare with a `/`.
const PATHS: &str = r#"(?m)`([^`\s]+)`|"([^"\s]+)"|'([^'\s]+)'|(?:^|[\s(\[])((?:~|\.{1,2})?/?[\w.-]+(?:/[\w.-]+)+|/[\w.-]+)"#;

pub(super) static IDS_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(IDS).expect("ids"));
pub(super) static PATHS_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(PATHS).expect("paths"));

pub(super) fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// The value a quote match holds: the group `id`, else the first group that took part, else
/// the whole match; `None` when it does not look like a value of its kind.
pub(super) fn quote_value<'t>(
    kind: QuoteKind,
    re: &Regex,
    caps: &regex::Captures<'t>,
) -> Option<&'t str> {
    let m = caps
        .name("id")
        .or_else(|| (1..re.captures_len()).find_map(|i| caps.get(i)))
        .or_else(|| caps.get(0))?;
    let v = m.as_str();
    keep_quote(kind, v)
}

fn keep_quote(kind: QuoteKind, v: &str) -> Option<&str> {
    match kind {
        QuoteKind::None => Some(v).filter(|v| !v.is_empty()),
        QuoteKind::Ids => {
            let v = v.trim_end_matches(['-', '_']);
            v.bytes().any(|b| b.is_ascii_digit()).then_some(v)
        }
        QuoteKind::Paths => {
            let v = v.trim_end_matches(['.', ',', ':', ';', '-']);
            let ext = v.rsplit_once('.').is_some_and(|(stem, ext)| {
                let stem = stem.rsplit('/').next().unwrap_or(stem);
                stem.chars().count() >= 2
                    && (1..=8).contains(&ext.len())
                    && ext.starts_with(|c: char| c.is_ascii_alphabetic())
                    && ext.chars().all(|c| c.is_ascii_alphanumeric())
            });
            let rooted = ["/", "./", "../", "~/"].iter().any(|p| v.starts_with(p)) && v.len() > 2;
            (ext || rooted).then_some(v)
        }
    }
}

/// Why a phrase found at `at` is not a claim, when it is not: a negation or an intention in
/// the clause before it. `None`: it is a claim.
///
/// Deliberately narrow (a policy that wants its claim overlooked would hide it behind a
/// negation): the clause is the text since the last sentence or clause break (`.`, `!`, `?`,
/// `;`, `:`, `,`, a dash, a line break, a bracket, or `and`/`but`/`so`/`however`/`although`/
/// `though`/`then`), and only these set a phrase aside:
/// - a condition opening the clause: "if", "once", "when", "unless", "until", "before",
///   "after", "whether", "assuming";
/// - a negation among the clause's last six words before it: "not", "no", "never", "cannot",
///   "unable", "failed", "without", "nor", "none", "nothing", "yet to", any "…n't" (and the
///   same without the apostrophe: "couldnt"); not the idioms "not only", "no problem",
///   "no worries", "no doubt", "no issue(s)", "without any/issue(s)/problem(s)/delay";
/// - a future or hypothetical right before it (skipping "be", "been", "have", "get", "it",
///   "now", "all" …): "will", "would", "could", "should", "can", "may", "might", "must",
///   "to", "going", "try", "want", "need", "…'ll", "…'d".
///
/// Questions are not set aside ("Booked? Yes." is a claim).
pub(super) fn set_aside(text: &str, at: usize) -> Option<String> {
    let words = clause_words(&text[..at]);
    let is = |w: &str, list: &[&str]| list.iter().any(|x| w.eq_ignore_ascii_case(x));
    if let Some(w) = words.first() {
        if is(w, CONDITIONS) {
            return Some(format!("a condition (`{w}`)"));
        }
    }
    let tail = &words[words.len().saturating_sub(6)..];
    for (i, w) in tail.iter().enumerate() {
        if negates(w, tail.get(i + 1).copied()) {
            return Some(format!("a negation (`{w}`)"));
        }
    }
    let mut back = words.iter().rev().skip_while(|w| is(w, FILLER));
    if let Some(w) = back.next() {
        // "to" is an intention ("to be booked") unless it follows success ("managed to get it
        // booked", "was able to").
        let achieved = w.eq_ignore_ascii_case("to") && back.next().is_some_and(|x| is(x, ACHIEVED));
        if !achieved && (is(w, MODALS) || ends_with(w, "'ll") || ends_with(w, "'d")) {
            return Some(format!("an intention or a hypothetical (`{w}`)"));
        }
    }
    None
}

/// `w` is longer than `suffix` and ends with it, ignoring ASCII case (bytes: `w` may end in
/// any character).
fn ends_with(w: &str, suffix: &str) -> bool {
    let (w, x) = (w.as_bytes(), suffix.as_bytes());
    w.len() > x.len() && w[w.len() - x.len()..].eq_ignore_ascii_case(x)
}

/// Words before "to" that report success.
const ACHIEVED: &[&str] = &[
    "managed",
    "able",
    "glad",
    "happy",
    "pleased",
    "proud",
    "succeeded",
    "got",
];

const CONDITIONS: &[&str] = &[
    "if", "once", "when", "whenever", "unless", "until", "till", "before", "after", "whether",
    "assuming", "provided", "suppose",
];

const NEGATORS: &[&str] = &[
    "not",
    "no",
    "never",
    "cannot",
    "unable",
    "failed",
    "fail",
    "fails",
    "without",
    "nor",
    "neither",
    "none",
    "nothing",
    "unsuccessful",
    "unsuccessfully",
    // "…n't" without its apostrophe.
    "couldnt",
    "didnt",
    "wasnt",
    "werent",
    "isnt",
    "arent",
    "hasnt",
    "havent",
    "hadnt",
    "doesnt",
    "dont",
    "wont",
    "cant",
    "shouldnt",
    "wouldnt",
    "aint",
];

/// Words after a negator that make it an idiom, not a negation.
const IDIOMS: &[(&str, &[&str])] = &[
    ("not", &["only"]),
    (
        "no",
        &[
            "problem", "problems", "worries", "worry", "doubt", "issue", "issues", "trouble",
        ],
    ),
    (
        "without",
        &[
            "any", "issue", "issues", "problem", "problems", "trouble", "delay", "delays",
        ],
    ),
];

fn negates(w: &str, next: Option<&str>) -> bool {
    let is = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    if is(w, "yet") {
        return next.is_some_and(|n| is(n, "to"));
    }
    if !(ends_with(w, "n't") || NEGATORS.iter().any(|n| is(w, n))) {
        return false;
    }
    !IDIOMS
        .iter()
        .any(|(n, after)| is(n, w) && next.is_some_and(|x| after.iter().any(|a| is(a, x))))
}

const MODALS: &[&str] = &[
    "will",
    "would",
    "could",
    "should",
    "shall",
    "can",
    "may",
    "might",
    "must",
    "to",
    "going",
    "gonna",
    "try",
    "trying",
    "tried",
    "attempt",
    "attempting",
    "want",
    "wants",
    "need",
    "needs",
    "plan",
    "hope",
    "hopefully",
    "about",
];

/// Words skipped looking back from a phrase for a modal ("will *have been* booked").
const FILLER: &[&str] = &[
    "be",
    "been",
    "being",
    "have",
    "has",
    "get",
    "got",
    "gotten",
    "it",
    "them",
    "this",
    "that",
    "now",
    "all",
    "also",
    "still",
    "then",
    "soon",
    "finally",
    "successfully",
];

const CONJUNCTIONS: &[&str] = &[
    "and", "but", "so", "however", "although", "though", "whereas", "then",
];

/// How far back a clause is looked for: enough for any clause a negation governs, and a bound
/// on the work per phrase whatever the text (a megabyte with no punctuation).
const CLAUSE_BYTES: usize = 240;

/// The words of the clause that ends the text (see [`set_aside`]).
fn clause_words(before: &str) -> Vec<&str> {
    let mut from = before.len().saturating_sub(CLAUSE_BYTES);
    while !before.is_char_boundary(from) {
        from += 1;
    }
    let before = &before[from..];
    let b = before.as_bytes();
    let mut start = 0;
    for (i, c) in before.char_indices().rev() {
        let hard = matches!(c, ';' | '\n' | '(' | ')' | '[' | ']' | '—' | '–');
        let soft = matches!(c, '.' | '!' | '?' | ':' | ',')
            && b.get(i + 1).is_none_or(u8::is_ascii_whitespace);
        let dash = c == '-' && i > 0 && b[i - 1] == b' ' && b.get(i + 1) == Some(&b' ');
        if hard || soft || dash {
            start = i + c.len_utf8();
            break;
        }
    }
    let mut words: Vec<&str> = before[start..]
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    if let Some(k) = words
        .iter()
        .rposition(|w| CONJUNCTIONS.iter().any(|c| w.eq_ignore_ascii_case(c)))
    {
        words.drain(..=k);
    }
    words
}

/// Phrases set aside, with why.
pub(super) type Aside = Vec<(Range<usize>, String)>;

/// The claim phrases `re` finds in `text`: those that are claims, and those set aside, with why.
/// With `quoted`, the phrase is a quoted value (`ids`): only one holding such a value counts.
/// Without `every`, it stops at the first claim (enough to know the claim is made).
pub(super) fn find(
    re: &Regex,
    text: &str,
    quoted: Option<QuoteKind>,
    every: bool,
) -> (Vec<Range<usize>>, Aside) {
    let mut made = Vec::new();
    let mut aside = Vec::new();
    for caps in re.captures_iter(text) {
        let Some(m) = caps.get(0).filter(|m| !m.is_empty()) else {
            continue;
        };
        if quoted.is_some_and(|k| quote_value(k, re, &caps).is_none()) {
            continue;
        }
        match set_aside(text, m.start()) {
            None => {
                made.push(m.range());
                if !every {
                    break;
                }
            }
            Some(why) => {
                if every {
                    aside.push((m.range(), why));
                }
            }
        }
    }
    (made, aside)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(name: &str) -> Regex {
        regex::RegexBuilder::new(preset(name).unwrap().pattern)
            .case_insensitive(true)
            .build()
            .unwrap()
    }

    fn claims(name: &str, text: &str) -> bool {
        let quoted = (name == "ids").then_some(QuoteKind::Ids);
        !find(&re(name), text, quoted, true).0.is_empty()
    }

    #[test]
    fn every_preset_compiles() {
        for p in PRESETS {
            re(p.name);
        }
    }

    #[test]
    fn presets_find_success_claims() {
        for (p, t) in [
            ("booked", "Your table for two is booked for 7pm."),
            ("booked", "I've reserved the room."),
            ("booked", "The reservation has been confirmed."),
            ("booked", "I confirmed your dinner reservation."),
            ("booked", "Booked? Yes."),
            ("booked", "No worries, your table is booked."),
            ("tests_pass", "All tests pass."),
            ("tests_pass", "All 12 tests passed."),
            ("tests_pass", "The test suite is green now."),
            ("tests_pass", "12 passed in 0.3s"),
            ("tests_pass", "The fix passes all the tests."),
            ("tests_pass", "There are 0 failures."),
            ("file_written", "I wrote the results to out/report.csv."),
            ("file_written", "Saved the summary as summary.md"),
            ("file_written", "The file has been written."),
            ("file_written", "I updated `config.yaml`."),
            ("sent", "The email has been sent to Bob."),
            ("sent", "I sent it to the team."),
            ("sent", "Sent!"),
            ("refunded", "Your refund has been issued."),
            ("refunded", "Your refund of $42.00 has been issued."),
            ("refunded", "I processed a full refund of $40."),
            ("refunded", "The order was refunded."),
            ("cancelled", "Your subscription is cancelled."),
            ("cancelled", "The cancellation is confirmed."),
            ("done", "All done!"),
            ("done", "Everything is taken care of."),
            ("done", "The task is complete."),
            ("done", "I've successfully migrated the database."),
            ("ids", "Your confirmation number is QX-4417."),
            ("ids", "Order #5521 is on its way."),
        ] {
            assert!(claims(p, t), "{p}: {t:?}");
        }
    }

    #[test]
    fn negations_intentions_and_failures_are_not_claims() {
        for (p, t) in [
            ("booked", "I could not book the table."),
            ("booked", "The table was not booked."),
            ("booked", "I wasn't able to get it booked."),
            ("booked", "It will be booked once you confirm."),
            ("booked", "If it is booked, you will get an email."),
            ("booked", "The booking failed."),
            ("booked", "I have yet to get it booked."),
            ("booked", "Let me book that for you."),
            ("tests_pass", "The tests still fail."),
            ("tests_pass", "Not all tests pass."),
            ("tests_pass", "The tests should pass after the fix."),
            ("tests_pass", "I need the tests to pass."),
            ("tests_pass", "0 passed, 3 failed."),
            ("sent", "The email could not be sent."),
            ("sent", "I'll send it tomorrow."),
            ("refunded", "The refund was not processed."),
            ("cancelled", "Nothing was cancelled."),
            ("done", "I couldn't finish it."),
            ("ids", "The booking has no confirmation yet."),
        ] {
            assert!(!claims(p, t), "{p}: {t:?}");
        }
    }

    #[test]
    fn a_negation_elsewhere_in_the_sentence_does_not_hide_a_claim() {
        for (p, t) in [
            (
                "booked",
                "I couldn't get a window seat, but your table is booked.",
            ),
            ("booked", "Not to worry: booked."),
            ("booked", "No problem — it's booked."),
            (
                "booked",
                "I did not find a window table and booked an aisle one.",
            ),
            ("booked", "I'm happy to say it's booked."),
            ("booked", "I managed to get it booked."),
            ("booked", "I was able to get it booked for 7pm."),
            (
                "tests_pass",
                "Not only do the tests pass, the build is faster.",
            ),
        ] {
            assert!(claims(p, t), "{p}: {t:?}");
        }
    }

    #[test]
    fn quoted_values_are_read_by_kind() {
        let ids: Vec<&str> = IDS_RE
            .captures_iter(
                "Confirmation number: QX-4417. Order #5521. Booking is confirmed. Ref: 12.",
            )
            .filter_map(|c| quote_value(QuoteKind::Ids, &IDS_RE, &c))
            .collect();
        assert_eq!(ids, ["QX-4417", "5521"]);
        let paths: Vec<&str> = PATHS_RE
            .captures_iter(
                "Wrote `out/report.csv` and /tmp/x.log, e.g. with `run_tests`, and/or 'notes.md'.",
            )
            .filter_map(|c| quote_value(QuoteKind::Paths, &PATHS_RE, &c))
            .collect();
        assert_eq!(paths, ["out/report.csv", "/tmp/x.log", "notes.md"]);
    }
}
