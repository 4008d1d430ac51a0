//! `crps:` numeric predictions scored as a distribution: the group's predictions form an
//! empirical distribution scored against the target with the continuous ranked probability
//! score, and each rollout is credited leave-one-out.

use super::compile::Checks;
use super::majority::{extract_mode, MajorityExtract};
use super::scored;
use crate::compile::Compiler;
use crate::result::ScoreResult;
use schemars::JsonSchema;
use serde::Deserialize;

/// `crps:` the group's predictions form an empirical distribution scored against the target
/// with the continuous ranked probability score; each rollout is credited with how much the
/// group's CRPS gets worse without it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CrpsSpec {
    /// Where the prediction is read (template, default `{{sample.output_text}}`).
    #[serde(default)]
    pub prediction: Option<String>,
    /// The observed value (template), e.g. `{{item.answer}}`.
    pub target: String,
    /// How the prediction is found in the text: `strict` (default), `boxed`, `lenient`, or
    /// `none` (the whole rendered text).
    #[serde(default)]
    pub extract: MajorityExtract,
}

#[derive(Debug, Clone)]
pub(super) struct Crps {
    prediction: crate::template::Template,
    target: crate::template::Template,
    mode: referee_math::ExtractMode,
}

/// A number from text: the extracted answer (per `mode`), without thousands separators or `$`.
fn number_in(text: &str, mode: referee_math::ExtractMode) -> Option<f64> {
    let raw = match mode {
        referee_math::ExtractMode::Bare => text.trim().to_string(),
        mode @ referee_math::ExtractMode::Markers { .. } => {
            let e = referee_math::extract(text, mode)?;
            if e.questioned || e.parts.len() != 1 {
                return None; // a hedge is not a prediction
            }
            e.text()
        }
    };
    let cleaned: String = raw
        .chars()
        .filter(|c| !matches!(c, ',' | '$' | ' '))
        .collect();
    cleaned.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// CRPS of the empirical distribution of `xs` at `y`: `E|X − y| − ½ E|X − X'|` (lower is better).
pub fn crps(xs: &[f64], y: f64) -> f64 {
    let n = xs.len() as f64;
    let a = xs.iter().map(|x| (x - y).abs()).sum::<f64>() / n;
    let mut b = 0.0;
    for x in xs {
        for z in xs {
            b += (x - z).abs();
        }
    }
    a - b / (2.0 * n * n)
}

impl Crps {
    /// Compiles `crps:`: the prediction (default `{{sample.output_text}}`) and target templates.
    pub(super) fn compile(c: &CrpsSpec, cx: &mut Compiler, ck: &mut Checks) -> Option<Crps> {
        let prediction = ck.template(cx, "crps/prediction", c.prediction.as_deref());
        let target = ck.template(cx, "crps/target", Some(&c.target));
        Some(Crps {
            prediction: prediction?,
            target: target?,
            mode: extract_mode(c.extract),
        })
    }

    /// Every scored sample of the group (`idx`) whose target parses, with its position into
    /// `rs`: its leave-one-out CRPS credit, or the group's lowest credit (at most 0) when it
    /// has no single number.
    pub(super) fn values(
        &self,
        rs: &[ScoreResult],
        idx: &[usize],
        samples: &[Option<&crate::Sample>],
    ) -> (Vec<f64>, Vec<usize>) {
        let mut xs = Vec::with_capacity(idx.len());
        let mut pos = Vec::with_capacity(idx.len());
        // (index, prediction) of the scored samples whose target parses.
        let mut preds: Vec<(usize, Option<f64>)> = Vec::with_capacity(idx.len());
        let mut target = None;
        for &i in idx {
            let Some(s) = samples.get(i).copied().flatten() else {
                continue;
            };
            if scored(&rs[i]).is_none() {
                continue;
            }
            let Some(y) = self
                .target
                .render(s)
                .ok()
                .and_then(|t| number_in(&t, referee_math::ExtractMode::Bare))
            else {
                continue;
            };
            target = Some(y);
            let x = self
                .prediction
                .render(s)
                .ok()
                .and_then(|t| number_in(&t, self.mode));
            preds.push((i, x));
        }
        let Some(y) = target else {
            return (xs, pos);
        };
        let vals: Vec<f64> = preds.iter().filter_map(|p| p.1).collect();
        let whole = if vals.is_empty() { 0.0 } else { crps(&vals, y) };
        let mut rest = Vec::with_capacity(vals.len());
        let mut credits = Vec::with_capacity(preds.len());
        let mut k = 0;
        for (_, x) in &preds {
            credits.push(x.map(|_| {
                rest.clear();
                rest.extend(
                    vals.iter()
                        .enumerate()
                        .filter(|(j, _)| *j != k)
                        .map(|(_, v)| *v),
                );
                k += 1;
                if rest.is_empty() {
                    0.0
                } else {
                    crps(&rest, y) - whole
                }
            }));
        }
        // No number is a wrong answer: the group's lowest credit, never a neutral 0.
        let worst = credits
            .iter()
            .flatten()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let worst = if worst.is_finite() {
            worst.min(0.0)
        } else {
            0.0
        };
        for ((i, _), cr) in preds.iter().zip(credits) {
            xs.push(cr.unwrap_or(worst));
            pos.push(*i);
        }
        (xs, pos)
    }
}
