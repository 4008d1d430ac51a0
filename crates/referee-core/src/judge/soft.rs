//! Soft verdicts: where a server returns `top_logprobs`, a verdict can be the probability mass
//! the judge put on each label instead of the one label it sampled, which separates rollouts
//! that a hard label ties (the flat GRPO groups). Both shapes servers send are read: OpenAI's
//! chat `{"content": [{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]}` (vLLM,
//! SGLang, llama-server, also for completions) and the legacy completions shape
//! `{"tokens": [...], "token_logprobs": [...], "top_logprobs": [{"token": logprob}]}`
//! (llama-cpp-python, older servers).
use serde_json::Value;

/// One generated position: the token chosen and its top alternatives `(token, logprob)`.
pub type Position = (String, Vec<(String, f64)>);

/// Every generated position, in order.
pub fn positions(logprobs: &Value) -> Option<Vec<Position>> {
    if let Some(content) = logprobs.get("content").and_then(Value::as_array) {
        return content
            .iter()
            .map(|p| {
                let token = p.get("token")?.as_str()?.to_string();
                let alts = p
                    .get("top_logprobs")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| {
                                Some((
                                    x.get("token")?.as_str()?.to_string(),
                                    x.get("logprob")?.as_f64()?,
                                ))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Some((token, alts))
            })
            .collect();
    }
    let tokens = logprobs.get("tokens")?.as_array()?;
    let tops = logprobs.get("top_logprobs")?.as_array()?;
    tokens
        .iter()
        .zip(tops)
        .map(|(t, top)| {
            let alts = top
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                        .collect()
                })
                .unwrap_or_default();
            Some((t.as_str()?.to_string(), alts))
        })
        .collect()
}

/// A token as a label: surrounding whitespace and quotes dropped, lower-cased (`" Yes"`,
/// `"yes"` and `"\"yes"` are the same verdict).
pub fn norm(token: &str) -> String {
    token
        .trim_matches(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .to_lowercase()
}

/// At the first position whose chosen token is one of `labels` (normalised), the
/// probability of each label among that position's alternatives, renormalised over the
/// labels (alternatives that normalise to the same label add up). `None` when no position
/// chose a label, or its alternatives hold none (then only the hard label is known).
/// Labels must be single tokens; a multi-token label never matches a position.
pub fn label_distribution(logprobs: &Value, labels: &[&str]) -> Option<Vec<f64>> {
    label_distribution_after(logprobs, "", labels)
}

/// [`label_distribution`] at the first label position after the generated text contains
/// `marker` (e.g. `"result"`, so digits in a verdict's reasoning are not taken for its score).
pub fn label_distribution_after(
    logprobs: &Value,
    marker: &str,
    labels: &[&str],
) -> Option<Vec<f64>> {
    let wanted: Vec<String> = labels.iter().map(|l| norm(l)).collect();
    let positions = positions(logprobs)?;
    let mut seen = String::new();
    let start = if marker.is_empty() {
        0
    } else {
        positions.iter().position(|(t, _)| {
            seen.push_str(t);
            seen.contains(marker)
        })? + 1
    };
    let (_, alts) = positions[start..]
        .iter()
        .find(|(t, _)| wanted.contains(&norm(t)))?;
    let mut mass = vec![0.0; wanted.len()];
    for (tok, lp) in alts {
        if let Some(i) = wanted.iter().position(|w| *w == norm(tok)) {
            if lp.is_finite() {
                mass[i] += lp.exp();
            }
        }
    }
    let total: f64 = mass.iter().sum();
    (total > 0.0).then(|| mass.iter().map(|m| m / total).collect())
}

/// The expected value of a score whose labels are `(token, value)` pairs (`("1", 1.0)` …
/// `("5", 5.0)`), under [`label_distribution`].
pub fn expected_score(logprobs: &Value, scale: &[(&str, f64)]) -> Option<f64> {
    expected_score_after(logprobs, "", scale)
}

/// [`expected_score`] after `marker` (see [`label_distribution_after`]).
pub fn expected_score_after(logprobs: &Value, marker: &str, scale: &[(&str, f64)]) -> Option<f64> {
    let labels: Vec<&str> = scale.iter().map(|(l, _)| *l).collect();
    let p = label_distribution_after(logprobs, marker, &labels)?;
    Some(p.iter().zip(scale).map(|(p, (_, v))| p * v).sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chat_shape() {
        let lp = json!({"content": [
            {"token": "{\"", "logprob": -0.01, "top_logprobs": [{"token": "{\"", "logprob": -0.01}]},
            {"token": " Yes", "logprob": -0.4, "top_logprobs": [
                {"token": " Yes", "logprob": -0.4}, {"token": "yes", "logprob": -2.0},
                {"token": " No", "logprob": -1.5}, {"token": "Maybe", "logprob": -3.0}]}]});
        let p = label_distribution(&lp, &["yes", "no"]).unwrap();
        let (y, n) = ((-0.4f64).exp() + (-2.0f64).exp(), (-1.5f64).exp());
        assert!((p[0] - y / (y + n)).abs() < 1e-12 && (p[1] - n / (y + n)).abs() < 1e-12);
        assert!(label_distribution(&lp, &["true", "false"]).is_none());
    }

    #[test]
    fn legacy_completions_shape_and_expected_scores() {
        let lp = json!({"tokens": ["4"], "token_logprobs": [-0.2],
                        "top_logprobs": [{"4": -0.2, "5": -1.9, "3": -2.5, "x": -4.0}]});
        let scale = [("1", 1.0), ("2", 2.0), ("3", 3.0), ("4", 4.0), ("5", 5.0)];
        let e = expected_score(&lp, &scale).unwrap();
        let (p3, p4, p5) = ((-2.5f64).exp(), (-0.2f64).exp(), (-1.9f64).exp());
        let want = (3.0 * p3 + 4.0 * p4 + 5.0 * p5) / (p3 + p4 + p5);
        assert!((e - want).abs() < 1e-12);
        assert!(e > 3.0 && e < 5.0);
    }

    #[test]
    fn labels_are_read_after_the_marker() {
        let pos = |t: &str, alts: &[(&str, f64)]| {
            json!({"token": t, "logprob": alts[0].1, "top_logprobs":
                alts.iter().map(|(a, l)| json!({"token": a, "logprob": l})).collect::<Vec<_>>()})
        };
        let lp = json!({"content": [
            pos("{\"steps\": \"", &[("{\"steps\": \"", 0.0)]),
            pos("2", &[("2", -0.1), ("3", -2.0)]),
            pos("\", \"result", &[("\", \"result", 0.0)]),
            pos("\": ", &[("\": ", 0.0)]),
            pos("4", &[("4", -0.5), ("5", -1.0)]),
        ]});
        let p = label_distribution_after(&lp, "result", &["4", "5", "2"]).unwrap();
        assert!(p[2] == 0.0 && p[0] > p[1], "{p:?}");
        assert!(label_distribution(&lp, &["4", "5", "2"]).unwrap()[2] > 0.5);
    }

    #[test]
    fn no_logprobs_no_soft_verdict() {
        assert!(label_distribution(&json!({}), &["yes"]).is_none());
        assert!(label_distribution(&json!({"content": []}), &["yes"]).is_none());
    }
}
