//! Medians, spreads and per-repetition ratios.

use serde::{Deserialize, Serialize};

use crate::results::{Metrics, ScenarioResult};
use crate::scenario::Slot;

/// A median with its min and max.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// How many values.
    pub n: usize,
}

/// Median, min and max of `values` (None when empty).
pub fn spread(values: &[f64]) -> Option<Spread> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Spread {
        median,
        min: v[0],
        max: v[n - 1],
        n,
    })
}

/// A figure of a trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Messages per second per receiver (higher is better).
    MsgPerS,
    /// Payload MB/s per receiver (higher is better).
    MbPerS,
    /// Round trip median, µs (lower is better).
    P50,
    /// Round trip 99th percentile, µs.
    P99,
    /// Round trip 99.9th percentile, µs.
    P999,
    /// CPU µs per message, all workers (lower is better).
    CpuPerMsg,
    /// Peak RSS, MiB, largest worker (lower is better).
    PeakRss,
    /// Instructions per message (lower is better).
    InstrPerMsg,
    /// Mean one-way time, µs: fi_pingpong's `usec/xfer`, or half the mean
    /// round trip (lower is better).
    OneWayMean,
    /// Half the round trip's median, µs.
    OneWayP50,
    /// Half the round trip's 99th percentile, µs.
    OneWayP99,
}

impl Metric {
    /// Label with unit.
    pub fn label(self) -> &'static str {
        match self {
            Metric::MsgPerS => "msg/s",
            Metric::MbPerS => "MB/s",
            Metric::P50 => "p50 us",
            Metric::P99 => "p99 us",
            Metric::P999 => "p99.9 us",
            Metric::CpuPerMsg => "CPU us/msg",
            Metric::PeakRss => "RSS MiB",
            Metric::InstrPerMsg => "instr/msg",
            Metric::OneWayMean => "1-way mean us",
            Metric::OneWayP50 => "1-way p50 us",
            Metric::OneWayP99 => "1-way p99 us",
        }
    }

    /// The figure in a trial's metrics.
    pub fn value(self, m: &Metrics) -> Option<f64> {
        let us = |ns: u64| ns as f64 / 1000.0;
        match self {
            Metric::MsgPerS => Some(m.msg_per_s),
            Metric::MbPerS => Some(m.mb_per_s),
            Metric::P50 => m.latency.as_ref().map(|l| us(l.p50_ns)),
            Metric::P99 => m.latency.as_ref().map(|l| us(l.p99_ns)),
            Metric::P999 => m.latency.as_ref().map(|l| us(l.p999_ns)),
            Metric::CpuPerMsg => Some(m.cpu_us_per_msg),
            Metric::PeakRss => Some(m.peak_rss_kb as f64 / 1024.0),
            Metric::InstrPerMsg => m.instructions_per_msg,
            Metric::OneWayMean => m
                .one_way_us
                .or_else(|| m.latency.as_ref().map(|l| l.mean_ns / 2000.0)),
            Metric::OneWayP50 => m.latency.as_ref().map(|l| us(l.p50_ns) / 2.0),
            Metric::OneWayP99 => m.latency.as_ref().map(|l| us(l.p99_ns) / 2.0),
        }
    }
}

/// One metric of one scenario, summarised.
#[derive(Debug, Clone, Default)]
pub struct MetricSummary {
    /// libzmq (A).
    pub a: Option<Spread>,
    /// fabriq (B).
    pub b: Option<Spread>,
    /// omq (C).
    pub c: Option<Spread>,
    /// libzmq again (A').
    pub a2: Option<Spread>,
    /// omq again (C').
    pub c2: Option<Spread>,
    /// Raw floor.
    pub floor: Option<Spread>,
    /// B/A per repetition.
    pub b_over_a: Option<Spread>,
    /// A'/A per repetition: the noise band.
    pub a2_over_a: Option<Spread>,
    /// B/C per repetition: fabriq against omq.
    pub b_over_c: Option<Spread>,
    /// C'/C per repetition: omq's own noise band.
    pub c2_over_c: Option<Spread>,
    /// B/floor per repetition.
    pub b_over_floor: Option<Spread>,
    /// Fabric scenarios: fabriq over the reference transport (R).
    pub r: Option<Spread>,
    /// Fabric scenarios: fabriq over the fabric again (B').
    pub b2: Option<Spread>,
    /// Fabric scenarios: fi_pingpong (P).
    pub p: Option<Spread>,
    /// B/R per repetition: the fabric against fabriq's own ipc / tcp.
    pub b_over_r: Option<Spread>,
    /// B'/B per repetition: the fabric's noise band.
    pub b2_over_b: Option<Spread>,
    /// B/P per repetition: the fabric against fi_pingpong.
    pub b_over_p: Option<Spread>,
}

/// Per-repetition values of a slot (None where the trial failed).
fn values(sr: &ScenarioResult, slot: Slot, metric: Metric) -> Vec<Option<f64>> {
    (0..sr.scenario.reps)
        .map(|rep| {
            sr.trials
                .iter()
                .find(|t| t.rep == rep && t.slot == slot && t.ok)
                .and_then(|t| t.metrics.as_ref())
                .and_then(|m| metric.value(m))
        })
        .collect()
}

fn ratios(x: &[Option<f64>], y: &[Option<f64>]) -> Vec<f64> {
    x.iter()
        .zip(y)
        .filter_map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) if *y > 0.0 => Some(x / y),
            _ => None,
        })
        .collect()
}

/// Summarises `metric` over a scenario's trials.
pub fn summarize(sr: &ScenarioResult, metric: Metric) -> MetricSummary {
    let a = values(sr, Slot::A, metric);
    let b = values(sr, Slot::B, metric);
    let c = values(sr, Slot::C, metric);
    let a2 = values(sr, Slot::A2, metric);
    let c2 = values(sr, Slot::C2, metric);
    let floor = values(sr, Slot::Floor, metric);
    let r = values(sr, Slot::R, metric);
    let b2 = values(sr, Slot::B2, metric);
    let p = values(sr, Slot::Pingpong, metric);
    let flat = |v: &[Option<f64>]| spread(&v.iter().flatten().copied().collect::<Vec<_>>());
    MetricSummary {
        a: flat(&a),
        b: flat(&b),
        c: flat(&c),
        a2: flat(&a2),
        c2: flat(&c2),
        floor: flat(&floor),
        b_over_a: spread(&ratios(&b, &a)),
        a2_over_a: spread(&ratios(&a2, &a)),
        b_over_c: spread(&ratios(&b, &c)),
        c2_over_c: spread(&ratios(&c2, &c)),
        b_over_floor: spread(&ratios(&b, &floor)),
        r: flat(&r),
        b2: flat(&b2),
        p: flat(&p),
        b_over_r: spread(&ratios(&b, &r)),
        b2_over_b: spread(&ratios(&b2, &b)),
        b_over_p: spread(&ratios(&b, &p)),
    }
}

/// Failed trials of a scenario.
pub fn errors(sr: &ScenarioResult) -> usize {
    sr.trials.iter().filter(|t| !t.ok).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(spread(&[3.0, 1.0, 2.0]).unwrap().median, 2.0);
        let s = spread(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.5, 1.0, 4.0, 4));
        assert!(spread(&[]).is_none());
    }
}
