//! `/metrics` in Prometheus's text format: requests and their latency by endpoint, samples by
//! status and error reason, judge calls, cache hits and tokens, scoring requests and sandbox
//! runs in flight.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use referee_core::ScoreResult;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub endpoint: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabel {
    pub endpoint: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabels {
    pub status: String,
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: String,
}

type HistogramCtor = fn() -> Histogram;

pub struct Metrics {
    registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub latency: Family<EndpointLabel, Histogram, HistogramCtor>,
    pub samples: Family<StatusLabels, Counter>,
    pub judge: Family<KindLabel, Counter>,
    pub in_flight: Gauge,
    pub sandbox_runs: Gauge,
}

fn latency_histogram() -> Histogram {
    // 0.25 ms to ~8 s.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 16))
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("referee");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "HTTP requests by endpoint and status",
            requests.clone(),
        );
        let latency = Family::<EndpointLabel, Histogram, HistogramCtor>::new_with_constructor(
            latency_histogram as HistogramCtor,
        );
        registry.register(
            "request_duration_seconds",
            "Time from request to response",
            latency.clone(),
        );
        let samples = Family::<StatusLabels, Counter>::default();
        registry.register(
            "samples",
            "Samples scored, by status and error reason",
            samples.clone(),
        );
        let judge = Family::<KindLabel, Counter>::default();
        registry.register(
            "judge",
            "Judge calls, cache hits, failures and tokens (kind label)",
            judge.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "scoring_in_flight",
            "Scoring requests admitted (running or waiting for a slot)",
            in_flight.clone(),
        );
        let sandbox_runs = Gauge::default();
        registry.register(
            "sandbox_runs_in_flight",
            "Sandbox runs executing or waiting for a slot",
            sandbox_runs.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            samples,
            judge,
            in_flight,
            sandbox_runs,
        }
    }

    /// Counts a batch's results: statuses by reason, and the judge usage they carry.
    pub fn results<'a>(&self, rs: impl IntoIterator<Item = &'a ScoreResult>) {
        for r in rs {
            let labels = StatusLabels {
                status: r.status.as_str().to_string(),
                reason: r.reason().unwrap_or("").to_string(),
            };
            self.samples.get_or_create(&labels).inc();
            if let Some(u) = &r.usage {
                for (kind, n) in [
                    ("calls", u.judge_calls),
                    ("cache_hits", u.cache_hits),
                    ("errors", u.judge_errors),
                    ("prompt_tokens", u.prompt_tokens),
                    ("completion_tokens", u.completion_tokens),
                ] {
                    if n > 0 {
                        self.judge
                            .get_or_create(&KindLabel { kind: kind.into() })
                            .inc_by(n);
                    }
                }
            }
        }
    }

    pub fn encode(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}
