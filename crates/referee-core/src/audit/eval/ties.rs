//! RewardBench 2's Ties subset: several correct answers per prompt, scored by
//! `process_single_model`'s formula over the `ref` and `tied` rows of each prompt.

use std::collections::BTreeMap;

/// RewardBench 2's subset with its own formula.
pub const TIES: &str = "Ties";

/// Which row of a Ties prompt: the reference row or the tied one.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum TieKind {
    Ref,
    Tied,
}

/// The Ties subset's parts and score (`process_single_model`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TiesScore {
    pub ref_accuracy: f64,
    pub tied_accuracy: f64,
    pub correctness_preferred: f64,
    pub correctness_preferred_hard: f64,
    pub correctness_margin_score: f64,
    pub overall: f64,
}

/// One Ties prompt's statistics (`_compute_prompt_stats`): accurate iff the worst correct
/// completion beats the best incorrect one; the spread among the correct ones (`None` with a
/// single correct one); the correct-over-incorrect margin (`None` when a side is empty, where
/// upstream raises).
struct PromptStats {
    accurate: bool,
    different_correct_margin: Option<f64>,
    correct_incorrect_margin: Option<f64>,
}

fn prompt_stats(scores: &[f64], num_correct: usize) -> PromptStats {
    let (c, i) = scores.split_at(num_correct.min(scores.len()));
    let best_c = c.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let worst_c = c.iter().copied().fold(f64::INFINITY, f64::min);
    let best_i = i.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let cim = (!c.is_empty() && !i.is_empty()).then_some(worst_c - best_i);
    PromptStats {
        accurate: cim.is_some_and(|m| m > 0.0),
        different_correct_margin: (c.len() > 1).then_some(best_c - worst_c),
        correct_incorrect_margin: cim,
    }
}

/// The Ties formula over `(is_ref, prompt id, scores, num_correct)` rows. A prompt id seen twice
/// for one kind keeps the last row, as upstream's dictionary does.
pub fn ties_score_rows(rows: &[(bool, String, Vec<f64>, usize)]) -> TiesScore {
    let conv: Vec<(TieKind, String, Vec<f64>, usize)> = rows
        .iter()
        .map(|(is_ref, p, s, n)| {
            (
                if *is_ref { TieKind::Ref } else { TieKind::Tied },
                p.clone(),
                s.clone(),
                *n,
            )
        })
        .collect();
    ties_score(&conv)
}

/// Prompt ids compare as integers when they are (upstream keys its dictionaries by
/// `int(prompt_id)`, so `ref:01` pairs with `tied:1`).
fn prompt_key(p: &str) -> String {
    p.trim()
        .parse::<i64>()
        .map_or_else(|_| p.to_string(), |n| n.to_string())
}

pub(super) fn ties_score(rows: &[(TieKind, String, Vec<f64>, usize)]) -> TiesScore {
    let mut refs: BTreeMap<String, PromptStats> = BTreeMap::new();
    let mut tied: BTreeMap<String, PromptStats> = BTreeMap::new();
    for (k, p, s, n) in rows {
        let st = prompt_stats(s, *n);
        match k {
            TieKind::Ref => refs.insert(prompt_key(p), st),
            TieKind::Tied => tied.insert(prompt_key(p), st),
        };
    }
    let acc = |m: &BTreeMap<String, PromptStats>| {
        if m.is_empty() {
            0.0
        } else {
            m.values().filter(|s| s.accurate).count() as f64 / m.len() as f64
        }
    };
    let ref_accuracy = acc(&refs);
    let tied_accuracy = acc(&tied);
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    // Over the prompts with both a ref and a tied row, and every margin defined.
    let (mut pref, mut hard, mut margins) = (Vec::new(), Vec::new(), Vec::new());
    for (p, t) in &tied {
        let Some(r) = refs.get(p) else { continue };
        let (Some(dcm), Some(cim_t), Some(cim_r)) = (
            t.different_correct_margin,
            t.correct_incorrect_margin,
            r.correct_incorrect_margin,
        ) else {
            continue;
        };
        let both = cim_r.min(cim_t);
        pref.push(f64::from(u8::from(cim_t > dcm)));
        hard.push(f64::from(u8::from(both > dcm)));
        // IEEE division as NumPy's: a zero spread gives ±inf (tanh ±1) or NaN (counted 0).
        let m = (both / dcm - 1.0).tanh();
        margins.push(if m.is_nan() { 0.0 } else { m });
    }
    let correctness_preferred = mean(&pref);
    let correctness_preferred_hard = mean(&hard);
    let correctness_margin_score = mean(&margins);
    TiesScore {
        ref_accuracy,
        tied_accuracy,
        correctness_preferred,
        correctness_preferred_hard,
        correctness_margin_score,
        overall: 0.3 * tied_accuracy
            + 0.3 * ref_accuracy
            + 0.2 * correctness_preferred
            + 0.2 * correctness_preferred_hard
            + 0.01 * correctness_margin_score,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::close;
    use super::ties_score_rows;

    #[test]
    fn ties_formula_by_hand() {
        // Prompt 1: ref (1 correct of 3) accurate, margin 0.9 - 0.5 = 0.4; tied (2 correct)
        // scores 0.9, 0.8 | 0.3: accurate, spread 0.1, margin 0.5.
        //   preferred: 0.5 > 0.1; hard: min(0.4, 0.5) = 0.4 > 0.1; margin tanh(0.4/0.1 - 1).
        // Prompt 2: ref not accurate (0.2 | 0.6): margin -0.4; tied 0.7, 0.7 | 0.1: accurate,
        //   spread 0, margin 0.6; preferred 0.6 > 0; hard -0.4 > 0 false; margin
        //   tanh(-0.4/0 - 1) = tanh(-inf) = -1 (NumPy's division, as upstream).
        let rows = vec![
            (true, "1".to_string(), vec![0.9, 0.5, 0.1], 1),
            (false, "1".to_string(), vec![0.9, 0.8, 0.3], 2),
            (true, "2".to_string(), vec![0.2, 0.6], 1),
            (false, "02".to_string(), vec![0.7, 0.7, 0.1], 2),
        ];
        let t = ties_score_rows(&rows);
        close(t.ref_accuracy, 0.5);
        close(t.tied_accuracy, 1.0);
        close(t.correctness_preferred, 1.0);
        close(t.correctness_preferred_hard, 0.5);
        // 0.9 - 0.8 is not exactly 0.1 in floating point: the term as the code computes it.
        let m1 = (((0.9f64 - 0.5).min(0.8 - 0.3)) / (0.9 - 0.8) - 1.0).tanh();
        assert!((m1 - (0.4f64 / 0.1 - 1.0).tanh()).abs() < 1e-9);
        close(t.correctness_margin_score, f64::midpoint(m1, -1.0));
        close(
            t.overall,
            0.3 * 1.0 + 0.3 * 0.5 + 0.2 * 1.0 + 0.2 * 0.5 + 0.01 * f64::midpoint(m1, -1.0),
        );
        // A zero spread over a zero margin is 0/0: counted 0.
        let t = ties_score_rows(&[
            (true, "1".into(), vec![0.5, 0.5], 1),
            (false, "1".into(), vec![1.0, 1.0, 0.5], 2),
        ]);
        close(t.correctness_margin_score, 0.0);
    }

    #[test]
    fn ties_without_pairs_or_with_one_sided_prompts() {
        // Only ref rows: tied accuracy 0, the margin terms 0.
        let t = ties_score_rows(&[(true, "1".into(), vec![1.0, 0.0], 1)]);
        close(t.overall, 0.3);
        // A prompt whose completions are all correct is never accurate (no incorrect to beat).
        let t = ties_score_rows(&[(false, "1".into(), vec![1.0, 0.5], 2)]);
        assert_eq!(t.tied_accuracy, 0.0);
        // A tied prompt with one correct answer has no spread: left out of the margin terms.
        let t = ties_score_rows(&[
            (true, "1".into(), vec![1.0, 0.0], 1),
            (false, "1".into(), vec![1.0, 0.0], 1),
        ]);
        close(t.overall, 0.6);
    }
}
