//! The readable table on stdout (and the number formats the report shares).

use crate::results::{Results, ScenarioResult};
use crate::scenario::{Slot, Transport};
use crate::stats::{errors, summarize, Metric, MetricSummary, Spread};

/// Formats a figure compactly: 3.41M, 612k, 22.1k, 850, 12.3.
pub fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 0.01 || a == 0.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.1e}")
    }
}

/// `median (min-max)` of figures.
pub fn fig(s: Option<Spread>) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{} ({}-{})", num(s.median), num(s.min), num(s.max)),
        Some(s) => num(s.median),
        None => "-".to_string(),
    }
}

/// `median (min-max)` of ratios.
pub fn ratio(s: Option<Spread>) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{:.2} ({:.2}-{:.2})", s.median, s.min, s.max),
        Some(s) => format!("{:.2}", s.median),
        None => "-".to_string(),
    }
}

/// The metrics shown on stdout for a scenario.
pub fn stdout_metrics(sr: &ScenarioResult) -> Vec<Metric> {
    let mut v = if sr.scenario.is_throughput() {
        vec![Metric::MsgPerS, Metric::MbPerS]
    } else if sr.scenario.pattern == crate::scenario::Pattern::CurveHandshake {
        vec![Metric::MsgPerS, Metric::P50, Metric::P99]
    } else {
        vec![Metric::P50, Metric::P99, Metric::P999]
    };
    v.push(Metric::CpuPerMsg);
    v.push(Metric::PeakRss);
    if sr.trials.iter().any(|t| {
        t.metrics
            .as_ref()
            .is_some_and(|m| m.instructions_per_msg.is_some())
    }) {
        v.push(Metric::InstrPerMsg);
    }
    v
}

const W_KEY: usize = 22;
const W_MET: usize = 10;
const W_FIG: usize = 23;
const W_RAT: usize = 17;

/// The table's header line.
pub fn header() -> String {
    format!(
        "{:<W_KEY$} {:<W_MET$} {:>W_FIG$} {:>W_FIG$} {:>W_FIG$} {:>W_FIG$} {:>W_RAT$} {:>W_RAT$} {:>W_RAT$} {:>W_RAT$} {:>W_RAT$}",
        "scenario",
        "metric",
        "A libzmq",
        "B fabriq",
        "C omq",
        "raw floor",
        "B/A",
        "A'/A (noise)",
        "B/C",
        "C'/C (noise)",
        "B/floor"
    )
}

fn row(key: &str, metric: Metric, s: &MetricSummary, omq: bool) -> String {
    let na = |text: String| if omq { text } else { "n/a".to_string() };
    format!(
        "{:<W_KEY$} {:<W_MET$} {:>W_FIG$} {:>W_FIG$} {:>W_FIG$} {:>W_FIG$} {:>W_RAT$} {:>W_RAT$} {:>W_RAT$} {:>W_RAT$} {:>W_RAT$}",
        key,
        match metric {
            Metric::MsgPerS if key.starts_with("curve-handshake") => "hs/s",
            m => m.label(),
        },
        fig(s.a),
        fig(s.b),
        na(fig(s.c)),
        fig(s.floor),
        ratio(s.b_over_a),
        ratio(s.a2_over_a),
        na(ratio(s.b_over_c)),
        na(ratio(s.c2_over_c)),
        ratio(s.b_over_floor)
    )
}

/// Whether the scenario has omq trials (C): else its omq cells say "n/a".
pub fn ran_omq(sr: &ScenarioResult) -> bool {
    sr.trials.iter().any(|t| t.slot == Slot::C)
}

/// The table rows of one scenario.
pub fn rows(sr: &ScenarioResult) -> Vec<String> {
    let mut out: Vec<String> = stdout_metrics(sr)
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let key = if i == 0 { &sr.key } else { "" };
            row(key, m, &summarize(sr, m), ran_omq(sr))
        })
        .collect();
    let n = errors(sr);
    if n > 0 {
        out.push(format!(
            "{:<W_KEY$} {n} failed trial(s): not in the figures",
            ""
        ));
    }
    out
}

/// The metrics of a fabric scenario (stdout and report): latency as
/// one-way times, like fi_pingpong reports them.
pub fn fabric_metrics(sr: &ScenarioResult) -> Vec<Metric> {
    if sr.scenario.is_throughput() {
        vec![
            Metric::MsgPerS,
            Metric::MbPerS,
            Metric::CpuPerMsg,
            Metric::PeakRss,
        ]
    } else {
        vec![
            Metric::OneWayMean,
            Metric::OneWayP50,
            Metric::OneWayP99,
            Metric::CpuPerMsg,
            Metric::PeakRss,
        ]
    }
}

/// The column titles of a fabric table over `t`: B, R, P, F and the
/// ratios, each saying what it compares.
pub fn fabric_columns(t: Transport) -> [String; 8] {
    let reference = t.reference().map(Transport::name).unwrap_or("?");
    let provider = t.provider().unwrap_or("?");
    [
        format!("B fabriq {}", t.name()),
        format!("R fabriq {reference}"),
        format!("P fi_pingpong {provider}"),
        format!("F libfabric {provider}"),
        format!("B/R {}/{reference}", t.name()),
        "B'/B (noise)".to_string(),
        format!("B/P {}/pingpong", t.name()),
        format!("B/F {}/floor", t.name()),
    ]
}

const W_FKEY: usize = 26;
const W_FMET: usize = 13;

/// The header line of a fabric table over `t`.
pub fn fabric_header(t: Transport) -> String {
    let c = fabric_columns(t);
    format!(
        "{:<W_FKEY$} {:<W_FMET$} {:>W_FIG$} {:>W_FIG$} {:>W_FIG$} {:>W_FIG$} {:>W_RAT$} {:>W_RAT$} {:>W_RAT$} {:>W_RAT$}",
        "scenario", "metric", c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
    )
}

/// The table rows of one fabric scenario; `no_pingpong` fills the P
/// cells when fi_pingpong did not run (e.g. "not installed").
pub fn fabric_rows(sr: &ScenarioResult, no_pingpong: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = fabric_metrics(sr)
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let key = if i == 0 { &sr.key } else { "" };
            let s = summarize(sr, m);
            let p = match (s.p, no_pingpong) {
                (None, Some(why)) => why.to_string(),
                (p, _) => fig(p),
            };
            let f = match (s.floor, no_pingpong) {
                (None, Some("not run")) => "not run".to_string(),
                (f, _) => fig(f),
            };
            format!(
                "{:<W_FKEY$} {:<W_FMET$} {:>W_FIG$} {:>W_FIG$} {:>W_FIG$} {:>W_FIG$} {:>W_RAT$} {:>W_RAT$} {:>W_RAT$} {:>W_RAT$}",
                key,
                m.label(),
                fig(s.b),
                fig(s.r),
                p,
                f,
                ratio(s.b_over_r),
                ratio(s.b2_over_b),
                ratio(s.b_over_p),
                ratio(s.b_over_floor)
            )
        })
        .collect();
    let n = errors(sr);
    if n > 0 {
        out.push(format!(
            "{:<W_FKEY$} {n} failed trial(s): not in the figures",
            ""
        ));
    }
    out
}

/// What the fabric tables' P column says when fi_pingpong did not run.
pub fn no_pingpong(results: &Results) -> Option<&str> {
    let c = &results.config;
    if !c.floor {
        Some("not run")
    } else if c.fi_pingpong.starts_with("not installed") {
        Some("not installed")
    } else {
        None
    }
}

/// The smallest and largest per-repetition ratio of a band (A'/A or
/// C'/C, msg/s or p50) over the whole run, if measured.
fn band(results: &Results, pick: fn(&MetricSummary) -> Option<Spread>) -> Option<(f64, f64)> {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for sr in &results.scenarios {
        let metric = if sr.scenario.is_throughput() {
            Metric::MsgPerS
        } else if sr.scenario.transport.is_fabric() {
            Metric::OneWayMean
        } else {
            Metric::P50
        };
        if let Some(s) = pick(&summarize(sr, metric)) {
            lo = lo.min(s.min);
            hi = hi.max(s.max);
        }
    }
    lo.is_finite().then_some((lo, hi))
}

/// The A/A calibrations over the whole run, in words: libzmq's (A'/A, the
/// band for B/A) and omq's (C'/C, the band for B/C).
pub fn aa_band(results: &Results) -> Vec<String> {
    let mut out = Vec::new();
    let zmq = results
        .scenarios
        .iter()
        .any(|s| !s.scenario.transport.is_fabric());
    if zmq {
        out.extend(zmq_bands(results));
    }
    if results
        .scenarios
        .iter()
        .any(|s| s.scenario.transport.is_fabric())
    {
        out.push(match band(results, |s| s.b2_over_b) {
            Some((lo, hi)) => format!(
                "B/B calibration (fabriq over the fabric vs itself, msg/s and one-way mean): \
                 per-repetition ratios {lo:.2}-{hi:.2}; a B/R or B/P ratio inside that band is not a result"
            ),
            None => "B/B calibration (fabric): not measured".to_string(),
        });
    }
    out
}

fn zmq_bands(results: &Results) -> Vec<String> {
    let mut out = Vec::new();
    out.push(match band(results, |s| s.a2_over_a) {
        Some((lo, hi)) => format!(
            "A/A calibration (libzmq vs itself, msg/s and p50): per-repetition ratios {lo:.2}-{hi:.2}; \
             a B/A ratio inside that band is not a result"
        ),
        None => "A/A calibration (libzmq): not measured".to_string(),
    });
    out.push(match band(results, |s| s.c2_over_c) {
        Some((lo, hi)) => format!(
            "C/C calibration (omq vs itself, msg/s and p50): per-repetition ratios {lo:.2}-{hi:.2}; \
             a B/C ratio inside that band is not a result"
        ),
        None => "C/C calibration (omq): not measured".to_string(),
    });
    out
}

/// What the workers of a CURVE scenario's trials said they ran, one line
/// per distinct (implementation, note): the evidence that every side ran
/// CURVE, and which libzmq it was.
pub fn security_notes(sr: &ScenarioResult) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in sr.trials.iter().filter(|t| t.ok) {
        for w in &t.workers {
            let line = format!(
                "{} {}: {}",
                t.implementation.name(),
                format!("{:?}", w.role).to_lowercase(),
                w.security.as_deref().unwrap_or("no mechanism reported")
            );
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}
