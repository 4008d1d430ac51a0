//! What one node produces for one sample, and the per-sample scoring context.

use serde::Serialize;
use std::borrow::Cow;

/// Why a node could not score. `reason` is a stable `snake_case` code; `message` is for people.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    pub reason: Cow<'static, str>,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Ok,
    /// The node does not apply to this sample (e.g. a routing gate); aggregators skip it.
    NotApplicable,
    Error(Failure),
}

impl Status {
    /// The status as results spell it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NotApplicable => "not_applicable",
            Status::Error(_) => "error",
        }
    }
}

/// One node's result. A failed node's `value` is NaN unless its spec sets `on_error`: a failure
/// is never silently reported as 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub value: f64,
    pub status: Status,
}

impl Outcome {
    pub fn ok(value: f64) -> Self {
        Outcome {
            value,
            status: Status::Ok,
        }
    }
    pub fn bool(b: bool) -> Self {
        Outcome::ok(if b { 1.0 } else { 0.0 })
    }
    pub fn not_applicable() -> Self {
        Outcome {
            value: f64::NAN,
            status: Status::NotApplicable,
        }
    }
    pub fn error(reason: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Outcome {
            value: f64::NAN,
            status: Status::Error(Failure {
                reason: reason.into(),
                message: message.into(),
            }),
        }
    }
    pub fn is_ok(&self) -> bool {
        matches!(self.status, Status::Ok)
    }
    pub fn is_error(&self) -> bool {
        matches!(self.status, Status::Error(_))
    }
    /// A value an aggregator can use: ok, or failed with an `on_error` substitute.
    pub fn usable(&self) -> bool {
        !matches!(self.status, Status::NotApplicable) && self.value.is_finite()
    }
    /// Whether the node "holds" for gates and groups: it has a usable value ≥ `threshold`.
    pub fn holds(&self, threshold: f64) -> bool {
        self.usable() && self.value >= threshold - 1e-9
    }
    pub fn failure(&self) -> Option<&Failure> {
        match &self.status {
            Status::Error(f) => Some(f),
            _ => None,
        }
    }
}

/// Combines the statuses of the children an aggregator used: the first failure wins, so an
/// `on_error` substitute deep in the tree still shows in the sample's status.
#[derive(Debug, Default)]
pub struct StatusAcc {
    failure: Option<Failure>,
}

impl StatusAcc {
    pub fn add(&mut self, o: &Outcome) {
        if self.failure.is_none() {
            if let Status::Error(f) = &o.status {
                self.failure = Some(f.clone());
            }
        }
    }
    pub fn finish(self, value: f64) -> Outcome {
        match self.failure {
            None => Outcome::ok(value),
            Some(f) => Outcome {
                value,
                status: Status::Error(f),
            },
        }
    }
}
