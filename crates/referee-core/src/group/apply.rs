//! The stage's main loop: the listwise judge's calls first (a group it cannot rank fails its
//! members), then per group the values the estimator sees (each mode's, or the reward), the
//! excluded samples, the pass counts, the flat and singleton flags, the tie-break
//! of a flat group, the advantages and the per-component diagnostics.

use super::advantage::{group_advantages, mean_std};
use super::diagnostics::Acc;
use super::tie_break::Spread;
use super::{
    component, scored, Combine, Estimator, GroupFlag, GroupOutcome, GroupReport, GroupStage,
};
use crate::result::ScoreResult;
use rayon::prelude::*;
use std::sync::Arc;

impl GroupStage {
    /// Writes `group` on every result of `groups` (indices into `results`) and returns the
    /// batch's diagnostics. `names` are the component names, in the order of every result's
    /// `components`.
    /// `samples[i]` is the sample of `results[i]` (`None` for a line that never parsed; may be
    /// empty when no option reads the samples).
    pub fn apply(
        &self,
        results: &mut [ScoreResult],
        groups: &[Vec<usize>],
        names: &[Arc<str>],
        samples: &[Option<&crate::Sample>],
    ) -> GroupReport {
        let k = names.len();
        let (lw, mut notes, lw_report) = self.listwise_groups(results, groups, samples);
        let rs: &[ScoreResult] = results;
        let nts = self.combine == Combine::NormalizeThenSum;
        let batch_std = if self.estimator == Estimator::BatchStd && !nts {
            let all: Vec<f64> = groups
                .iter()
                .flat_map(|idx| self.inputs(rs, idx, samples, &lw).0)
                .collect();
            mean_std(&all).1
        } else {
            0.0
        };
        let comp_batch_std = self.component_batch_std(rs, k);
        let mut spreads = self.tie_breaks(rs, groups, samples, &lw);
        let mut tie_lw = super::listwise::Tally::default();
        for (g, sp) in &mut spreads {
            if let Some(r) = sp.as_mut().and_then(|sp| sp.ranked.take()) {
                tie_lw.ranked(&r);
                for (p, &i) in self
                    .inputs(rs, &groups[*g], samples, &lw)
                    .1
                    .iter()
                    .enumerate()
                {
                    notes.insert(i, super::listwise::member_note(&r, p));
                }
            }
        }
        let (mut outs, acc) = groups
            .par_iter()
            .enumerate()
            .fold(
                || (Vec::new(), Acc::new(k)),
                |(mut outs, mut acc), (g, idx)| {
                    let spread = spreads.get(&g);
                    self.one_group(
                        rs,
                        (samples, &lw),
                        idx,
                        (batch_std, &comp_batch_std),
                        spread,
                        &mut acc,
                        &mut outs,
                    );
                    (outs, acc)
                },
            )
            .reduce(
                || (Vec::new(), Acc::new(k)),
                |(mut a, x), (mut b, y)| {
                    if a.len() < b.len() {
                        std::mem::swap(&mut a, &mut b);
                    }
                    a.append(&mut b);
                    (a, x.merge(&y))
                },
            );
        if nts && self.estimator != Estimator::None {
            // GDPO: the weighted sum of normalised components is whitened over the batch.
            self.whiten(&mut outs);
        }
        for (i, o) in outs {
            if let Some(t) = &mut results[i].trace {
                t.children.push(self.trace(&o, notes.get(&i)));
            }
            results[i].group = Some(o);
        }
        let mut report = acc.into_report(names);
        lw_report.merge(tie_lw).write(&mut report);
        report
    }

    /// The tie-break tournaments of every flat group, their judge calls all in flight at once
    /// (not a group at a time): by group index, `None` for a group whose tournament gave
    /// nothing. Empty without a tie-break.
    fn tie_breaks(
        &self,
        rs: &[ScoreResult],
        groups: &[Vec<usize>],
        samples: &[Option<&crate::Sample>],
        lw: &[Option<f64>],
    ) -> std::collections::HashMap<usize, Option<Spread>> {
        let Some(tb) = self
            .tie_break
            .as_ref()
            .filter(|_| self.estimator != Estimator::None)
        else {
            return std::collections::HashMap::new();
        };
        let flat: Vec<(usize, Option<Vec<&crate::Sample>>)> = groups
            .iter()
            .enumerate()
            .filter_map(|(g, idx)| {
                let (xs, pos) = self.inputs(rs, idx, samples, lw);
                let members = pos.iter().map(|&i| samples.get(i).copied().flatten());
                (xs.len() > 1 && mean_std(&xs).1 <= self.flat_tolerance)
                    .then(|| (g, members.collect()))
            })
            .collect();
        let runs = flat.iter().map(|(g, members)| async move {
            match members {
                Some(m) => (*g, tb.spread(m).await),
                None => (*g, None),
            }
        });
        futures::executor::block_on(futures::future::join_all(runs))
            .into_iter()
            .collect()
    }

    /// `stds`: the batch std and each component's (for the estimators that use them);
    /// `spread`: the tie-break of this group, when it is flat and has one.
    #[allow(clippy::too_many_arguments)]
    fn one_group(
        &self,
        rs: &[ScoreResult],
        (samples, lw): (&[Option<&crate::Sample>], &[Option<f64>]),
        idx: &[usize],
        (batch_std, comp_batch_std): (f64, &[f64]),
        spread: Option<&Option<Spread>>,
        acc: &mut Acc,
        outs: &mut Vec<(usize, GroupOutcome)>,
    ) {
        let has = self.estimator != Estimator::None;
        let (mut xs, pos) = self.inputs(rs, idx, samples, lw);
        // `pos` is a subsequence of `idx`: walk both.
        let mut next = pos.iter().peekable();
        for &i in idx {
            if next.peek() == Some(&&i) {
                next.next();
            } else {
                acc.excluded += 1;
                outs.push((
                    i,
                    GroupOutcome {
                        advantage: None,
                        flag: Some(GroupFlag::Excluded),
                        has_advantage: has,
                        group_reward: None,
                    },
                ));
            }
        }
        let n = xs.len();
        if n == 0 {
            acc.empty_groups += 1;
            return;
        }
        acc.groups += 1;
        // Pass/fail is about the raw reward, whatever the estimator sees.
        let passed = pos
            .iter()
            .filter(|&&i| scored(&rs[i]).is_some_and(|x| x >= self.pass_threshold))
            .count();
        if passed == n {
            acc.all_pass += 1;
        } else if passed == 0 {
            acc.all_fail += 1;
        } else {
            acc.mixed += 1;
        }
        let mut flag = if n == 1 {
            acc.singleton_groups += 1;
            Some(GroupFlag::SingletonGroup)
        } else {
            let (_, std) = mean_std(&xs);
            acc.std_sum += std;
            acc.std_groups += 1;
            (std <= self.flat_tolerance).then(|| {
                acc.flat_groups += 1;
                GroupFlag::FlatGroup
            })
        };
        let mut tied = false;
        if let (Some(spread), Some(GroupFlag::FlatGroup)) = (spread, flag) {
            if let Some(sp) = spread {
                acc.tie_calls += sp.calls;
                acc.tie_failures += sp.failures;
                acc.tie_broken += 1;
                for (x, o) in xs.iter_mut().zip(&sp.offsets) {
                    *x += o;
                }
                flag = Some(GroupFlag::TieBreak);
                tied = true;
            } else {
                acc.tie_unbroken += 1;
            }
        }
        let mut adv = vec![0.0; n];
        if has && n > 1 {
            match self.combine {
                Combine::SumThenNormalize => {
                    group_advantages(self.estimator, &xs, batch_std, self.epsilon, &mut adv);
                    if flag == Some(GroupFlag::FlatGroup) {
                        adv.fill(0.0); // no rounding residue: a flat group carries no signal
                    }
                }
                Combine::NormalizeThenSum => {
                    self.normalize_then_sum(rs, &pos, comp_batch_std, &mut adv);
                }
            }
        }
        for j in 0..k_of(acc) {
            let (mut min, mut max, mut c) = (f64::INFINITY, f64::NEG_INFINITY, 0);
            for &i in &pos {
                if let Some(v) = component(&rs[i], j) {
                    min = min.min(v);
                    max = max.max(v);
                    c += 1;
                }
            }
            acc.component_group(j, min, max, c, self.flat_tolerance);
        }
        for (p, &i) in pos.iter().enumerate() {
            if k_of(acc) > 1 {
                acc.sample_components(|j| component(&rs[i], j));
            }
            outs.push((
                i,
                GroupOutcome {
                    advantage: has.then_some(adv[p]),
                    flag,
                    has_advantage: has,
                    group_reward: (self.hero.is_some()
                        || self.majority.is_some()
                        || self.crps.is_some()
                        || self.pow3r.is_some()
                        || self.listwise.is_some()
                        || tied)
                        .then(|| xs[p]),
                },
            ));
        }
    }

    /// The values the estimator sees for one group, with the positions (into `rs`) of the
    /// samples that have one: the reward of every scored sample, or the value of the mode that
    /// replaces it (`listwise`, from `lw` by result index; `crps`, `pow3r`, `majority_vote`,
    /// `hero`).
    fn inputs(
        &self,
        rs: &[ScoreResult],
        idx: &[usize],
        samples: &[Option<&crate::Sample>],
        lw: &[Option<f64>],
    ) -> (Vec<f64>, Vec<usize>) {
        if self.listwise.is_some() {
            let pos: Vec<usize> = idx
                .iter()
                .copied()
                .filter(|&i| scored(&rs[i]).is_some() && lw.get(i).copied().flatten().is_some())
                .collect();
            return (pos.iter().filter_map(|&i| lw[i]).collect(), pos);
        }
        if let Some(c) = &self.crps {
            return c.values(rs, idx, samples);
        }
        if let Some(p) = &self.pow3r {
            return p.values(rs, idx);
        }
        if let Some(m) = &self.majority {
            return m.values(rs, idx, samples);
        }
        if let Some(h) = &self.hero {
            return h.values(rs, idx);
        }
        let mut xs = Vec::with_capacity(idx.len());
        let mut pos = Vec::with_capacity(idx.len());
        for &i in idx {
            if let Some(v) = scored(&rs[i]) {
                xs.push(v);
                pos.push(i);
            }
        }
        (xs, pos)
    }
}

fn k_of(acc: &Acc) -> usize {
    acc.sat.len()
}
