//! Run summaries: counts, mean reward, mean of each component, statuses by reason. In the core
//! so the CLI, the server and Python report the same numbers.

use crate::program::{ResultStatus, ScoreResult};
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
    pub fn add(&mut self, r: &ScoreResult) {
        self.samples += 1;
        match &r.status {
            ResultStatus::Ok => self.ok += 1,
            ResultStatus::NotApplicable => self.not_applicable += 1,
            ResultStatus::Error(f) => {
                self.errors += 1;
                *self.reasons.entry(f.reason.to_string()).or_default() += 1;
            }
        }
        if let Some(v) = r.reward {
            self.reward_sum += v;
            self.rewarded += 1;
            self.mean_reward = Some(self.reward_sum / self.rewarded as f64);
        }
        for (name, v) in &r.components {
            let c = self.components.entry(name.to_string()).or_default();
            if let Some(v) = v {
                c.sum += v;
                c.count += 1;
                c.mean = Some(c.sum / c.count as f64);
            }
        }
    }
}
