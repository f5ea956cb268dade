//! The results file: every trial, raw, plus the machine and the run's
//! configuration. `report` reads it back.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::cli::Mode;
use crate::machine::Machine;
use crate::scenario::{Impl, Scenario, Slot};
use crate::worker::{Latency, WorkerReport};

/// Version of this file's layout (2: omq's C and C' trials, `placement`).
pub const SCHEMA: u32 = 2;

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    /// Layout version.
    pub schema: u32,
    /// Where it ran.
    pub machine: Machine,
    /// How it ran.
    pub config: RunConfig,
    /// What it measured, in run order.
    pub scenarios: Vec<ScenarioResult>,
}

/// How a run was configured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunConfig {
    /// smoke, quick or full.
    pub mode: Mode,
    /// The command line.
    pub command_line: Vec<String>,
    /// A free-text note (`--note`), e.g. "preliminary".
    pub note: Option<String>,
    /// The placement mode: `unpinned` (the default), `spread`,
    /// `split-core` or `same-core` (see [`crate::placement`]).
    #[serde(default = "unrecorded")]
    pub placement: String,
    /// The one CPU of sending / client sides in the `*-core` modes (inproc:
    /// the sending thread).
    pub sender_cpu: Option<usize>,
    /// The one CPU of receiving / server sides in the `*-core` modes
    /// (inproc: the receiving threads).
    pub receiver_cpu: Option<usize>,
    /// The placement in words (and whether pinning failed anywhere).
    pub pinning: String,
    /// Instructions per message: "available" or why not.
    pub perf: String,
    /// Whether the A' (and, with omq, C') calibration ran.
    pub calibration: bool,
    /// Whether omq.rs (C, C') ran.
    #[serde(default)]
    pub omq: bool,
    /// Whether the raw floor ran.
    pub floor: bool,
    /// The fabric floor: the fi_pingpong used (and libfabric's version), or
    /// why there is none ("not installed: ..."); empty in runs without
    /// fabric scenarios.
    #[serde(default)]
    pub fi_pingpong: String,
    /// Seconds after which a trial's workers were killed.
    pub deadline_s: f64,
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
}

/// One scenario's trials.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioResult {
    /// e.g. `pushpull/tcp/64`.
    pub key: String,
    /// What was measured.
    pub scenario: Scenario,
    /// Every trial, in run order.
    pub trials: Vec<Trial>,
}

/// One trial: one implementation, one repetition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    /// Repetition, from 0.
    pub rep: usize,
    /// A, B, C, A2, C2 or Floor.
    pub slot: Slot,
    /// The implementation in that slot.
    pub implementation: Impl,
    /// Whether it produced a figure.
    pub ok: bool,
    /// Why not.
    pub error: Option<String>,
    /// The figures (when ok).
    pub metrics: Option<Metrics>,
    /// Each worker's own report.
    pub workers: Vec<WorkerReport>,
    /// Wall time of the trial including process start, seconds.
    pub wall_s: f64,
    /// What an external tool (fi_pingpong) was run with and printed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
}

/// The figures of one trial.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Metrics {
    /// Timed messages per receiver (round trips for REQ/REP).
    pub messages: u64,
    /// Messages per second per receiver (PUB/SUB to subscriber
    /// processes: every subscriber's every message over the span from the
    /// first timed message to the slowest subscriber's last; inproc: the
    /// mean of the subscribers' rates); round trips per second for
    /// REQ/REP.
    pub msg_per_s: f64,
    /// Payload megabytes (1e6) per second per receiver.
    pub mb_per_s: f64,
    /// Each receiver's rate (PUB/SUB: each subscriber's).
    pub per_receiver_msg_per_s: Vec<f64>,
    /// Round-trip times (REQ/REP).
    pub latency: Option<Latency>,
    /// Mean one-way time in microseconds, where the trial measured it
    /// directly (fi_pingpong's `usec/xfer`); else half the mean round trip.
    #[serde(default)]
    pub one_way_us: Option<f64>,
    /// User + system CPU seconds of all workers over their timed sections.
    pub cpu_s: f64,
    /// CPU microseconds per message (= CPU seconds per million messages).
    pub cpu_us_per_msg: f64,
    /// Largest peak RSS of the workers, KiB.
    pub peak_rss_kb: u64,
    /// Instructions per message, whole worker processes (perf stat).
    pub instructions_per_msg: Option<f64>,
}

/// `placement` of a results file older than the field.
fn unrecorded() -> String {
    "unrecorded (an older results file: see pinning)".to_string()
}

impl Results {
    /// Writes the file (creating its directory).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("write {}: {e}", path.display()))
    }

    /// Reads a file written by [`Results::save`].
    pub fn load(path: &Path) -> Result<Results, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("parse {}: {e}", path.display()))
    }
}
