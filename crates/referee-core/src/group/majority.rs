//! `majority_vote:` label-free reward (TTRL-style): 1 for agreeing with the group's most common
//! extracted answer, 0 otherwise.

use super::compile::Checks;
use super::scored;
use crate::compile::Compiler;
use crate::result::ScoreResult;
use schemars::JsonSchema;
use serde::Deserialize;

/// `majority_vote:` the estimator sees agreement with the group's most common answer (TTRL-style
/// test-time RL without labels).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MajoritySpec {
    /// Where the answer is read (template, default `{{sample.output_text}}`).
    #[serde(default)]
    pub answer: Option<String>,
    /// `strict` (default: boxes, answer phrases, `####`, as `math_equiv`), `boxed`, `lenient`,
    /// or `none` (the rendered text, trimmed, is the answer).
    #[serde(default)]
    pub extract: MajorityExtract,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MajorityExtract {
    #[default]
    Strict,
    Boxed,
    Lenient,
    None,
}

#[derive(Debug, Clone)]
pub(super) struct Majority {
    answer: crate::template::Template,
    mode: referee_math::ExtractMode,
}

/// The answer extraction `extract:` names (shared with `crps:`).
pub(super) fn extract_mode(e: MajorityExtract) -> referee_math::ExtractMode {
    match e {
        MajorityExtract::Strict => referee_math::ExtractMode::STRICT,
        MajorityExtract::Boxed => referee_math::ExtractMode::BOXED,
        MajorityExtract::Lenient => referee_math::ExtractMode::LENIENT,
        MajorityExtract::None => referee_math::ExtractMode::Bare,
    }
}

impl Majority {
    /// Compiles `majority_vote:`: the answer template (default `{{sample.output_text}}`).
    pub(super) fn compile(
        m: &MajoritySpec,
        cx: &mut Compiler,
        ck: &mut Checks,
    ) -> Option<Majority> {
        let answer = ck.template(cx, "majority_vote/answer", m.answer.as_deref())?;
        Some(Majority {
            answer,
            mode: extract_mode(m.extract),
        })
    }

    /// The answer's key: the extracted answer's canonical math form when it parses, else its
    /// trimmed text. `None` when there is no answer (no marker, missing field, a `?`).
    fn key(&self, s: &crate::Sample) -> Option<String> {
        let text = self.answer.render(s).ok()?;
        let raw = match self.mode {
            referee_math::ExtractMode::Bare => text.trim().to_string(),
            mode @ referee_math::ExtractMode::Markers { .. } => {
                let e = referee_math::extract(&text, mode)?;
                if e.questioned {
                    return None;
                }
                e.text()
            }
        };
        if raw.is_empty() {
            return None;
        }
        Some(referee_math::parse(&raw).map_or(raw, |p| p.canonical()))
    }

    /// Every scored sample of the group (`idx`), with its position into `rs`: 1 when its answer
    /// is the group's most common one, else 0.
    pub(super) fn values(
        &self,
        rs: &[ScoreResult],
        idx: &[usize],
        samples: &[Option<&crate::Sample>],
    ) -> (Vec<f64>, Vec<usize>) {
        let mut xs = Vec::with_capacity(idx.len());
        let mut pos = Vec::with_capacity(idx.len());
        let keys: Vec<(usize, Option<String>)> = idx
            .iter()
            .filter(|&&i| scored(&rs[i]).is_some())
            .map(|&i| {
                (
                    i,
                    samples.get(i).copied().flatten().and_then(|s| self.key(s)),
                )
            })
            .collect();
        // The most common answer; a tie goes to the answer seen first (deterministic).
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for k in keys.iter().filter_map(|(_, k)| k.as_deref()) {
            match counts.iter_mut().find(|(c, _)| *c == k) {
                Some(c) => c.1 += 1,
                None => counts.push((k, 1)),
            }
        }
        let best = counts
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(std::cmp::Ordering::Greater));
        let best = best.map(|b| b.0);
        for (i, k) in &keys {
            xs.push(f64::from(u8::from(k.is_some() && k.as_deref() == best)));
            pos.push(*i);
        }
        (xs, pos)
    }
}
