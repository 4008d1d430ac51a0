//! Run summaries: counts, mean reward, mean of each component, statuses by reason. In the core
//! so the CLI, the server and Python report the same numbers.

use crate::{ScoreResult, Status};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Default, Clone, Serialize)]
pub struct Summary {
    pub samples: usize,
    pub ok: usize,
    pub not_applicable: usize,
    pub errors: usize,
    /// Mean over the samples that have a reward.
    pub mean_reward: Option<f64>,
    /// Per component, the mean over the samples where it has a value.
    pub components: BTreeMap<String, ComponentStat>,
    /// Error counts by reason.
    pub reasons: BTreeMap<String, usize>,
    /// Judge calls, cache hits and tokens over the run (only for specs with model graders).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<crate::judge::Usage>,
    /// The group stage's diagnostics (only for specs with a `group:` section).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<crate::group::GroupReport>,
    #[serde(skip)]
    reward_sum: f64,
    #[serde(skip)]
    rewarded: usize,
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct ComponentStat {
    pub mean: Option<f64>,
    pub count: usize,
    #[serde(skip)]
    sum: f64,
}

impl Summary {
    /// Folds another partial summary into this one (summaries are built per chunk in parallel).
    pub fn merge(&mut self, o: Summary) {
        self.samples += o.samples;
        self.ok += o.ok;
        self.not_applicable += o.not_applicable;
        self.errors += o.errors;
        self.reward_sum += o.reward_sum;
        self.rewarded += o.rewarded;
        self.mean_reward = (self.rewarded > 0).then(|| self.reward_sum / self.rewarded as f64);
        for (k, v) in o.reasons {
            *self.reasons.entry(k).or_default() += v;
        }
        if let Some(u) = o.judge {
            self.judge.get_or_insert_with(Default::default).add(&u);
        }
        if let Some(g) = o.group {
            self.add_group(g);
        }
        for (k, c) in o.components {
            let mine = self.components.entry(k).or_default();
            mine.sum += c.sum;
            mine.count += c.count;
            mine.mean = (mine.count > 0).then(|| mine.sum / mine.count as f64);
        }
    }

    /// Folds one batch's group-stage diagnostics in.
    pub fn add_group(&mut self, g: crate::group::GroupReport) {
        match &mut self.group {
            Some(mine) => mine.merge(g),
            None => self.group = Some(g),
        }
    }

    pub fn add(&mut self, r: &ScoreResult) {
        self.samples += 1;
        match &r.status {
            Status::Ok => self.ok += 1,
            Status::NotApplicable => self.not_applicable += 1,
            Status::Error(f) => {
                self.errors += 1;
                *self.reasons.entry(f.reason.to_string()).or_default() += 1;
            }
        }
        if let Some(u) = &r.usage {
            self.judge.get_or_insert_with(Default::default).add(u);
        }
        if let Some(v) = r.reward {
            self.reward_sum += v;
            self.rewarded += 1;
            self.mean_reward = Some(self.reward_sum / self.rewarded as f64);
        }
        for (name, v) in &r.components {
            // Look up before inserting: the key is allocated once per run, not per sample.
            if !self.components.contains_key(&**name) {
                self.components
                    .insert(name.to_string(), ComponentStat::default());
            }
            let c = self.components.get_mut(&**name).expect("inserted above");
            if let Some(v) = v {
                c.sum += v;
                c.count += 1;
                c.mean = Some(c.sum / c.count as f64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Program, Sample};

    #[test]
    fn merge_equals_adding_everything() {
        let p = Program::compile_str("{type: contains, name: k, keywords: [a]}").unwrap();
        let results: Vec<ScoreResult> = ["a", "b", "aa", "", "xa"]
            .iter()
            .map(|t| p.score(&Sample::new(*t, serde_json::json!({}))))
            .chain([ScoreResult::input_error("invalid_json", "x".into())])
            .collect();
        let mut whole = Summary::default();
        for r in &results {
            whole.add(r);
        }
        let (mut a, mut b) = (Summary::default(), Summary::default());
        for r in &results[..2] {
            a.add(r);
        }
        for r in &results[2..] {
            b.add(r);
        }
        a.merge(b);
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            serde_json::to_value(&whole).unwrap()
        );
        assert_eq!(whole.samples, 6);
        assert_eq!(whole.errors, 1);
        assert_eq!(whole.mean_reward, Some(0.6));
        assert_eq!(whole.components["k"].count, 5);
    }
}
