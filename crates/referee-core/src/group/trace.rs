//! The group stage's node in an explained result's trace: what it wrote and why.

use super::{GroupFlag, GroupOutcome, GroupStage};

impl GroupStage {
    /// The stage's node in an explained result's trace: what it wrote and why.
    /// `extra`: the listwise judge's note and detail for this member, when it ranked it.
    pub(super) fn trace(
        &self,
        o: &GroupOutcome,
        extra: Option<&super::listwise::Note>,
    ) -> crate::node::Trace {
        let est = serde_json::to_value(self.estimator).unwrap_or_default();
        let est = est.as_str().unwrap_or("?");
        let mut note = match o.advantage {
            Some(a) if o.has_advantage => format!("{est} advantage {a:.4}"),
            _ if o.has_advantage => "no advantage".to_string(),
            _ => "advantages off".to_string(),
        };
        if let Some(g) = o.group_reward {
            let _ =
                std::fmt::Write::write_fmt(&mut note, format_args!(" from group_reward {g:.4}"));
        }
        match o.flag {
            Some(GroupFlag::Excluded) => {
                note.push_str(
                    "; excluded: failed or no reward, not part of the group's statistics",
                );
            }
            Some(GroupFlag::SingletonGroup) => {
                note.push_str("; the only scored sample of its group");
            }
            Some(GroupFlag::FlatGroup) => note.push_str("; flat group: every reward equal"),
            Some(GroupFlag::TieBreak) => note.push_str(
                "; tie-break: flat group spread by a judged pairwise tournament (Bradley–Terry)",
            ),
            None => {}
        }
        let mut detail = serde_json::json!({
            "advantage": o.advantage,
            "group_flag": o.flag.map(GroupFlag::as_str),
            "group_reward": o.group_reward,
        });
        if let Some((n, d)) = extra {
            note.push_str("; ");
            note.push_str(n);
            detail["listwise"] = d.clone();
        }
        crate::node::Trace {
            kind: "group",
            name: None,
            path: "/group".into(),
            value: o.advantage,
            status: if o.flag == Some(GroupFlag::Excluded) {
                "error"
            } else {
                "ok"
            },
            reason: None,
            note: Some(note),
            detail: Some(detail),
            children: Vec::new(),
        }
    }
}
