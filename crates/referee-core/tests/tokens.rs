//! Token spans of step rewards with a real tokenizer: a byte-level BPE (GPT-2/Qwen/Llama-3's
//! kind) trained here, saved as `tokenizer.json`, loaded the way the shells load it.

use referee_core::input::InputMapping;
use referee_core::steps::tokens::Tokenizer;
use referee_core::{score, Options, Program, Rows, ScoreResult};
use serde_json::{json, Value};
use std::sync::Arc;
use tokenizers::models::bpe::{BpeTrainer, BPE};
use tokenizers::models::TrainerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::AddedToken;

const EOS: &str = "<|eos|>";

/// The two families of decoders trainers meet: byte-level BPE (GPT-2, Qwen, Llama 3), whose
/// tokens split characters into bytes, and SentencePiece-style Metaspace (Llama 2, Mistral),
/// whose tokens carry `▁` for spaces and drop the first one when decoding.
#[derive(Clone, Copy, Debug)]
enum Kind {
    ByteLevel,
    /// Byte-level with no merges: one token per byte, so every multi-byte char spans tokens.
    Bytes,
    Metaspace,
}

const TEXT: &str =
    "Step 1: 3 + 4 = 7 café\n\nStep 2: 7 * 2 = 14 🙂 wrong.\n\nStep 3: 答案 is 14, crêpes.";

/// A small BPE with one special token, trained on step-shaped text.
fn trained(kind: Kind) -> tokenizers::Tokenizer {
    let mut t = tokenizers::Tokenizer::new(BPE::default());
    match kind {
        Kind::ByteLevel | Kind::Bytes => {
            // As GPT-2, Qwen and Llama 3 are configured: no space put before the text.
            let bl = ByteLevel::default().add_prefix_space(false);
            t.with_pre_tokenizer(Some(bl));
            t.with_decoder(Some(bl));
        }
        Kind::Metaspace => {
            let m = Metaspace::new('▁', PrependScheme::First, true);
            t.with_pre_tokenizer(Some(m.clone()));
            t.with_decoder(Some(m));
        }
    }
    let mut b = BpeTrainer::builder()
        .vocab_size(if let Kind::Bytes = kind { 257 } else { 420 })
        .min_frequency(1)
        .show_progress(false)
        .special_tokens(vec![AddedToken::from(EOS, true)]);
    if let Kind::ByteLevel | Kind::Bytes = kind {
        b = b.initial_alphabet(ByteLevel::alphabet().into_iter().collect());
    }
    let mut trainer: TrainerWrapper = b.build().into();
    let corpus = [
        "Step 1: 3 + 4 = 7.\n\nStep 2: 7 * 2 = 14.",
        "Step 3: so the answer is 14. The café serves crêpes.",
        "First, we add the numbers. Then we multiply them.",
        // Metaspace has no byte fallback here: every char the tests write is in its alphabet.
        TEXT,
        "Step 1: 3 + 4 = 8.",
    ];
    t.train(&mut trainer, corpus.iter()).expect("trains");
    t
}

fn saved(dir: &std::path::Path, kind: Kind) -> (tokenizers::Tokenizer, Arc<Tokenizer>) {
    let t = trained(kind);
    let path = dir.join(format!("{kind:?}.json"));
    t.save(&path, false).expect("saves");
    let loaded = Tokenizer::from_file(&path).expect("loads");
    (t, Arc::new(loaded))
}

fn program() -> Program {
    Program::compile(&json!({
        "type": "each_step",
        "name": "steps",
        "steps": {"split": "paragraphs"},
        "grader": {"type": "regex", "pattern": "wrong", "mode": "forbid"},
        "aggregate": "min",
    }))
    .expect("compiles")
}

fn run(rows: Vec<Value>, tok: Option<Arc<Tokenizer>>) -> Vec<ScoreResult> {
    let opts = Options {
        tokenizer: tok,
        ..Options::default()
    };
    score(
        &program(),
        Rows::Values(rows),
        &InputMapping::default(),
        &opts,
    )
    .results()
}

fn ids(t: &tokenizers::Tokenizer, text: &str) -> Vec<u32> {
    let mut ids = t.encode(text, false).expect("encodes").get_ids().to_vec();
    ids.push(t.token_to_id(EOS).expect("eos"));
    ids
}

fn spans(r: &ScoreResult) -> Vec<(usize, usize, Option<usize>, Option<usize>)> {
    r.step_rewards
        .as_ref()
        .expect("step rewards")
        .iter()
        .map(|s| (s.start, s.end, s.token_start, s.token_end))
        .collect()
}

#[test]
fn completion_ids_place_each_step_on_the_tokens_that_hold_it() {
    for kind in [Kind::ByteLevel, Kind::Bytes, Kind::Metaspace] {
        placed_on_tokens(kind);
    }
}

fn placed_on_tokens(kind: Kind) {
    let dir = tempdir();
    let (t, tok) = saved(&dir, kind);
    // Multi-byte chars (é, ê, an emoji, CJK) are split across byte-level tokens, and the ids end
    // with a special token that decoding skips, as trainers decode completions.
    let text = TEXT;
    let ids = ids(&t, text);
    let r = &run(
        vec![json!({"sample": {"output_text": text, "completion_ids": ids}})],
        Some(tok),
    )[0];
    assert_eq!(r.token_error, None);
    assert_eq!(r.reward, Some(0.0), "the second step says wrong");
    let sp = spans(r);
    assert_eq!(sp.len(), 3);
    // How many chars of the text a prefix of the ids gives: a char whose bytes are not all
    // there yet (decoded as U+FFFD) does not count.
    let prefix = |k: usize| {
        let p = t.decode(&ids[..k], true).unwrap();
        p.chars()
            .zip(text.chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    // The first step ends in "é", whose two bytes are two tokens here: the step ends on the
    // second, not on the first (which decodes to a U+FFFD that already counts one char).
    let first_end = sp[0].3.unwrap();
    let raw = t.decode(&ids[..first_end - 1], true).unwrap();
    if let Kind::Bytes = kind {
        assert!(raw.ends_with('\u{FFFD}'), "{raw:?}");
    }
    for (start, end, a, b) in &sp {
        let (a, b) = (a.expect("token_start"), b.expect("token_end"));
        // The step's last token is the first whose prefix reaches the step's end, and its first
        // token the one holding the step's first char.
        assert!(
            prefix(b) >= *end && prefix(b - 1) < *end,
            "{kind:?} {start}..{end} → {a}..{b}"
        );
        assert!(
            prefix(a) <= *start && prefix(a + 1) > *start,
            "{start}..{end} → {a}..{b}"
        );
        let covered = t.decode(&ids[a..b], true).unwrap();
        let step: String = text.chars().skip(*start).take(end - start).collect();
        assert!(covered.contains(step.trim()), "{covered:?} ⊉ {step:?}");
    }
    // Steps in order, not overlapping: each step's tokens start at or after the last one's end
    // (a token may hold the end of one step and the blank line after it).
    for w in sp.windows(2) {
        assert!(w[1].2 >= w[0].3.map(|e| e - 1));
    }
    let json = serde_json::to_value(r.with_id(None, None)).unwrap();
    let first = &json["step_rewards"][0];
    assert!(
        first["token_start"].is_u64() && first["token_end"].is_u64(),
        "{json}"
    );
}

#[test]
fn token_offsets_place_steps_without_a_tokenizer() {
    let text = "ab cd\n\nef wrong";
    // Tokens "ab", " cd", "\n\n", "ef", " wrong".
    let offsets = json!([[0, 2], [2, 5], [5, 7], [7, 9], [9, 15]]);
    let r = &run(
        vec![json!({"sample": {"output_text": text, "token_offsets": offsets}})],
        None,
    )[0];
    assert_eq!(r.token_error, None);
    assert_eq!(
        spans(r),
        vec![(0, 5, Some(0), Some(2)), (7, 15, Some(3), Some(5))]
    );
}

#[test]
fn tokens_that_cannot_be_placed_say_why_and_keep_the_reward() {
    let dir = tempdir();
    let (t, tok) = saved(&dir, Kind::ByteLevel);
    let text = "Step 1: 3 + 4 = 7.\n\nStep 2: done.";
    let other = ids(&t, "Step 1: 3 + 4 = 8.\n\nStep 2: done.");
    let rows = vec![
        json!({"id": "other", "sample": {"output_text": text, "completion_ids": other}}),
        json!({"id": "vocab", "sample": {"output_text": text, "completion_ids": [1, 999_999]}}),
        json!({"id": "plain", "sample": {"output_text": text}}),
        json!({"id": "both", "sample": {"output_text": text, "completion_ids": [1], "token_offsets": [[0, 1]]}}),
        json!({"id": "neg", "sample": {"output_text": text, "completion_ids": [1, -3]}}),
    ];
    let rs = run(rows, Some(tok));
    let want_reward = Some(1.0);
    assert_eq!(rs[0].reward, want_reward);
    let e = rs[0].token_error.as_deref().unwrap();
    assert!(e.contains("first differ at char 16"), "{e}");
    assert!(spans(&rs[0]).iter().all(|s| s.2.is_none() && s.3.is_none()));
    assert!(rs[1].token_error.as_deref().unwrap().contains("999999"));
    assert_eq!(rs[1].reward, want_reward);
    // No tokens given: nothing to place, nothing to say.
    assert_eq!(
        (rs[2].reward, rs[2].token_error.as_deref()),
        (want_reward, None)
    );
    // Malformed token fields are the row's input error, with the field's path.
    for r in &rs[3..] {
        assert_eq!(r.reason(), Some("invalid_row"));
    }
    assert!(message(&rs[3]).contains("both given"));
    assert!(message(&rs[4]).contains("sample.`completion_ids[1]`"));
    // Ids without a tokenizer: said, never guessed.
    let r = &run(
        vec![json!({"sample": {"output_text": text, "completion_ids": ids(&t, text)}})],
        None,
    )[0];
    assert!(r.token_error.as_deref().unwrap().contains("no tokenizer"));
}

#[test]
fn trl_rows_carry_completion_ids_at_the_top_and_keep_them_out_of_item() {
    let dir = tempdir();
    let (t, tok) = saved(&dir, Kind::ByteLevel);
    let text = "Step 1: add.\n\nStep 2: multiply.";
    let rows = vec![json!({"prompt": "q", "completion": text, "completion_ids": ids(&t, text)})];
    let m = InputMapping::default();
    let s = m.sample(rows[0].clone()).unwrap();
    assert!(s.item.get("completion_ids").is_none());
    let r = &run(rows, Some(tok))[0];
    assert_eq!(r.token_error, None);
    assert!(spans(r).iter().all(|s| s.3.is_some()));
}

fn message(r: &ScoreResult) -> String {
    match &r.status {
        referee_core::Status::Error(f) => f.message.clone(),
        other => panic!("not an error: {other:?}"),
    }
}

fn tempdir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "referee-tokens-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}
