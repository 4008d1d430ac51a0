//! Compiling the `group:` section: the spec parsed, every field checked and every problem
//! reported with its path under `/group`; each mode compiles its own part in its file, the rule
//! that at most one mode replaces the value the estimator sees is checked here.

use super::crps::Crps;
use super::hero::Hero;
use super::listwise::Listwise;
use super::majority::Majority;
use super::pow3r::Pow3r;
use super::{combine, tie_break, Combine, Estimator, GroupStage, GroupStageSpec};
use crate::compile::Compiler;
use crate::template::Template;
use serde_json::Value;
use std::sync::Arc;

/// The section's checks: each failed one is reported at once at `/group/<field>`, and the
/// section does not compile when any failed.
pub(super) struct Checks {
    bad: bool,
}

impl Checks {
    pub(super) fn check(&mut self, cx: &mut Compiler, field: &str, ok: bool, msg: &str) {
        if !ok {
            self.bad = true;
            cx.error(format!("/group/{field}"), None, msg);
        }
    }

    /// The template at `field`: `{{sample.output_text}}` when not given, `None` (every parse
    /// error reported) when it does not parse.
    pub(super) fn template(
        &mut self,
        cx: &mut Compiler,
        field: &str,
        src: Option<&str>,
    ) -> Option<Template> {
        match src {
            None => Some(Template::output_text()),
            Some(src) => match Template::parse(src) {
                Ok(t) => Some(t),
                Err(es) => {
                    for e in es {
                        self.check(cx, field, false, &e);
                    }
                    None
                }
            },
        }
    }
}

/// The message for a name that is no component: the closest name, and every named component.
pub(super) fn unknown_component(name: &str, names: &[Arc<str>]) -> String {
    let known: Vec<&str> = names.iter().map(|n| &**n).collect();
    format!(
        "no component is named `{name}`{}; named components: {}",
        crate::compile::did_you_mean(name, &known),
        if known.is_empty() {
            "none".to_string()
        } else {
            known.join(", ")
        }
    )
}

impl GroupStage {
    /// Compiles the section; `names` are the program's component names in spec order. Every
    /// problem is reported with its path under `/group`.
    pub fn compile(v: &Value, names: &[Arc<str>], cx: &mut Compiler) -> Option<GroupStage> {
        let spec = match serde_path_to_error::deserialize::<_, GroupStageSpec>(v) {
            Ok(s) => s,
            Err(e) => {
                let inner = e.path().to_string();
                let p = if inner == "." {
                    "/group".to_string()
                } else {
                    format!("/group/{}", inner.replace('.', "/"))
                };
                cx.error(p, None, e.into_inner().to_string());
                return None;
            }
        };
        let mut ck = Checks { bad: false };
        ck.check(
            cx,
            "epsilon",
            spec.epsilon.is_finite() && spec.epsilon >= 0.0,
            "must be a finite number ≥ 0",
        );
        ck.check(
            cx,
            "flat_tolerance",
            spec.flat_tolerance.is_finite() && spec.flat_tolerance >= 0.0,
            "must be a finite number ≥ 0",
        );
        ck.check(
            cx,
            "pass_threshold",
            spec.pass_threshold.is_finite(),
            "must be a finite number",
        );
        let weights = combine::weights(&spec, names, cx, &mut ck);
        let sum_then_normalize = spec.combine == Combine::SumThenNormalize;
        let mut hero = None;
        if let Some(h) = &spec.hero {
            hero = Hero::compile(h, names, cx, &mut ck);
            ck.check(
                cx,
                "hero",
                sum_then_normalize,
                "`hero` replaces the reward the estimator sees; it cannot be combined with `normalize_then_sum`",
            );
        }
        let mut majority = None;
        if let Some(m) = &spec.majority_vote {
            ck.check(
                cx,
                "majority_vote",
                spec.hero.is_none() && sum_then_normalize,
                "`majority_vote` replaces the reward the estimator sees; it cannot be combined with `hero` or `normalize_then_sum`",
            );
            majority = Majority::compile(m, cx, &mut ck);
        }
        let mut crps = None;
        if let Some(c) = &spec.crps {
            ck.check(
                cx,
                "crps",
                spec.hero.is_none() && spec.majority_vote.is_none() && sum_then_normalize,
                "`crps` replaces the reward the estimator sees; it cannot be combined with `hero`, `majority_vote` or `normalize_then_sum`",
            );
            crps = Crps::compile(c, cx, &mut ck);
        }
        let mut pow3r = None;
        if let Some(pw) = &spec.pow3r {
            ck.check(
                cx,
                "pow3r",
                spec.hero.is_none()
                    && spec.majority_vote.is_none()
                    && spec.crps.is_none()
                    && sum_then_normalize,
                "`pow3r` replaces the reward the estimator sees; it cannot be combined with `hero`, `majority_vote`, `crps` or `normalize_then_sum`",
            );
            pow3r = Some(Pow3r::compile(pw, names, cx, &mut ck));
        }
        let mut listwise = None;
        if let Some(l) = &spec.listwise {
            ck.check(
                cx,
                "listwise",
                spec.hero.is_none()
                    && spec.majority_vote.is_none()
                    && spec.crps.is_none()
                    && spec.pow3r.is_none()
                    && sum_then_normalize,
                "`listwise` replaces the reward the estimator sees; it cannot be combined with `hero`, `majority_vote`, `crps`, `pow3r` or `normalize_then_sum`",
            );
            let at = crate::compile::At {
                path: "/group/listwise".into(),
                kind: "listwise",
            };
            listwise = Listwise::compile(l, &at, cx).map(Arc::new);
            listwise.as_ref()?;
        }
        let mut tie = None;
        if let Some(t) = &spec.tie_break {
            ck.check(
                cx,
                "tie_break",
                spec.advantage != Estimator::None && sum_then_normalize,
                "`tie_break` spreads the reward the estimator sees: it needs an `advantage` other than `none` and `combine: sum_then_normalize`",
            );
            tie = tie_break::TieBreak::compile(t, cx).map(Arc::new);
            tie.as_ref()?;
        }
        if ck.bad {
            return None;
        }
        Some(GroupStage {
            estimator: spec.advantage,
            epsilon: spec.epsilon,
            combine: spec.combine,
            weights,
            pass_threshold: spec.pass_threshold,
            flat_tolerance: spec.flat_tolerance,
            hero,
            majority,
            crps,
            listwise,
            tie_break: tie,
            pow3r,
        })
    }
}
