//! Worker processes: one side of a trial, started by the runner as
//! `EXE [bench] worker SPEC_JSON`.
//!
//! Protocol on the worker's stdout, one line each: `BOUND ENDPOINT` once a
//! receiving side is bound, `READY` once it has received warm-up traffic,
//! and finally the [`WorkerReport`] as one JSON line. A sending side reads
//! `go` (start the timed messages) and `done` (every receiver has them
//! all: close) from stdin.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::scenario::{Impl, Scenario, Transport};
use crate::sys::{pin_current_thread, Usage};

/// What a worker does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Sends the messages (PUSH, PUB, raw writer); connects.
    Sender,
    /// Receives and counts them (PULL, SUB, raw reader); binds.
    Receiver,
    /// Sends requests and times round trips (REQ); connects.
    Client,
    /// Answers requests (REP); binds.
    Server,
    /// Both sides as threads of this one process (inproc).
    Inproc,
}

/// Everything a worker needs, passed as one JSON argument.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// What this worker does.
    pub role: Role,
    /// Which implementation.
    pub implementation: Impl,
    /// The scenario.
    pub scenario: Scenario,
    /// Endpoints to connect to (sending sides).
    pub endpoints: Vec<String>,
    /// CPUs this process may run on (inproc: the sending thread); empty:
    /// no affinity set (unpinned).
    pub cpus: Vec<usize>,
    /// CPUs of the receiving threads of an inproc worker; empty: inherited.
    pub cpus_peer: Vec<usize>,
    /// A receiver that waits this long for the next timed message reports
    /// the messages as lost (the handshake client: the longest wait for
    /// a round's reply).
    pub stall_ms: u64,
    /// The keys of a CURVE scenario (none in the others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<crate::security::CurveKeys>,
}

/// Round-trip time percentiles, nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Fastest.
    pub min_ns: u64,
    /// Slowest.
    pub max_ns: u64,
    /// Mean.
    pub mean_ns: f64,
    /// (percentile, value) points for CDF plots.
    pub points: Vec<(f64, u64)>,
}

/// Percentiles kept for plots.
pub const LATENCY_POINTS: &[f64] = &[
    0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 100.0,
];

impl Latency {
    /// Summarises a histogram of nanoseconds.
    pub fn from_histogram(h: &Histogram<u64>) -> Latency {
        Latency {
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            min_ns: h.min(),
            max_ns: h.max(),
            mean_ns: h.mean(),
            points: LATENCY_POINTS
                .iter()
                .map(|&p| (p, h.value_at_quantile(p / 100.0)))
                .collect(),
        }
    }
}

/// A new histogram for round-trip times in nanoseconds (1 ns .. 100 s).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds")
}

/// What one side measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Timed messages (or round trips) handled.
    pub messages: u64,
    /// Timed payload bytes handled.
    pub bytes: u64,
    /// Duration of the timed section, seconds.
    pub elapsed_s: f64,
    /// Messages (round trips) per second over the timed section.
    pub rate: f64,
    /// CPU used over the timed section (this process, all threads).
    pub usage: Usage,
    /// Round trips (clients).
    pub latency: Option<Latency>,
    /// Each subscriber's (receiving thread's) rate, inproc.
    pub per_receiver_rates: Vec<f64>,
    /// Receivers: when the timed section started (the first timed
    /// message) and ended, wall-clock seconds since the epoch, so that a
    /// fan-out's rate can be taken over all its receivers at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<(f64, f64)>,
}

/// The wall clock, seconds since the epoch (comparable between the
/// processes of a trial, which share the host's clock).
pub fn wall_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Outcome {
    /// The outcome of a sending side: `sc.count` messages of `sc.size`
    /// bytes sent in `elapsed_s`, the CPU `usage` meanwhile.
    pub fn sent(sc: &Scenario, elapsed_s: f64, usage: Usage) -> Outcome {
        Outcome {
            messages: sc.count,
            bytes: sc.count * sc.size as u64,
            elapsed_s,
            rate: sc.count as f64 / elapsed_s,
            usage,
            ..Outcome::default()
        }
    }

    /// The outcome of a REQ/REP side: `sc.count` round trips timed from
    /// `start`, the CPU used since `before`, and (clients) the latencies.
    pub fn round_trips(
        sc: &Scenario,
        start: Instant,
        before: &Usage,
        latency: Option<Latency>,
    ) -> Outcome {
        let elapsed_s = start.elapsed().as_secs_f64();
        let usage = Usage::now().since(before);
        Outcome {
            messages: sc.count,
            bytes: 2 * sc.count * sc.size as u64,
            elapsed_s,
            rate: sc.count as f64 / elapsed_s,
            usage,
            latency,
            ..Outcome::default()
        }
    }
}

/// A REQ-style client: `sc.warm` untimed round trips, then `sc.count`
/// timed ones, each recorded in a histogram. `round_trip` sends one
/// request and waits for (and checks) its reply.
pub fn time_round_trips(
    sc: &Scenario,
    mut round_trip: impl FnMut() -> Result<(), String>,
) -> Result<Outcome, String> {
    let mut hist = new_histogram();
    let mut before = Usage::now();
    let mut start = Instant::now();
    for i in 0..sc.warm + sc.count {
        if i == sc.warm {
            before = Usage::now();
            start = Instant::now();
        }
        let t0 = Instant::now();
        round_trip()?;
        let rtt = t0.elapsed().as_nanos() as u64;
        if i >= sc.warm {
            hist.record(rtt.max(1))
                .map_err(|e| format!("histogram: {e}"))?;
        }
    }
    Ok(Outcome::round_trips(
        sc,
        start,
        &before,
        Some(Latency::from_histogram(&hist)),
    ))
}

/// One worker's report: its last line on stdout.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerReport {
    /// What it did.
    pub role: Role,
    /// Whether it did it; else `error` says why.
    pub ok: bool,
    /// What went wrong.
    pub error: Option<String>,
    /// Measurements (default when not ok).
    pub outcome: Outcome,
    /// Peak RSS of the whole process, KiB.
    pub maxrss_kb: u64,
    /// How the process was pinned.
    pub pinning: String,
    /// Instructions of the whole process (perf stat), filled by the runner.
    #[serde(default)]
    pub instructions: Option<u64>,
    /// What the worker's sockets ran, in CURVE scenarios: the library and
    /// the mechanism its sockets report (e.g. `libzmq 4.3.4 from
    /// /usr/lib/x86_64-linux-gnu/libzmq.so.5 (zmq_has("curve") = 1),
    /// CURVE server (ZMQ_MECHANISM = 2)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<String>,
}

/// How a side synchronises with the others: through the runner (stdio) or
/// through the other threads of an inproc worker.
pub trait Gate: Sync {
    /// A receiving side is bound at `endpoint`.
    fn bound(&self, endpoint: &str);
    /// A receiving side has seen warm-up traffic.
    fn ready(&self);
    /// Whether the timed section may start (non-blocking). Errors when the
    /// runner has gone away.
    fn go(&self) -> Result<bool, String>;
    /// Waits until every receiver has all messages.
    fn wait_done(&self) -> Result<(), String>;
}

/// The runner's gate: lines on stdout, commands on stdin.
pub struct StdioGate {
    commands: Mutex<Receiver<String>>,
}

impl StdioGate {
    /// Starts reading commands from stdin.
    pub fn new() -> StdioGate {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line.trim().to_string()).is_err() {
                    break;
                }
            }
        });
        StdioGate {
            commands: Mutex::new(rx),
        }
    }

    fn say(line: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

impl Default for StdioGate {
    fn default() -> Self {
        StdioGate::new()
    }
}

impl Gate for StdioGate {
    fn bound(&self, endpoint: &str) {
        StdioGate::say(&format!("BOUND {endpoint}"));
    }

    fn ready(&self) {
        StdioGate::say("READY");
    }

    fn go(&self) -> Result<bool, String> {
        let rx = self.commands.lock().expect("gate lock");
        match rx.try_recv() {
            Ok(cmd) if cmd == "go" => Ok(true),
            Ok(cmd) => Err(format!("unexpected command {cmd:?} before go")),
            Err(mpsc::TryRecvError::Empty) => Ok(false),
            Err(mpsc::TryRecvError::Disconnected) => Err("runner went away".into()),
        }
    }

    fn wait_done(&self) -> Result<(), String> {
        let rx = self.commands.lock().expect("gate lock");
        match rx.recv_timeout(Duration::from_secs(3600)) {
            Ok(cmd) if cmd == "done" => Ok(()),
            Ok(cmd) => Err(format!("unexpected command {cmd:?} instead of done")),
            Err(RecvTimeoutError::Timeout) => Err("no done from the runner".into()),
            Err(RecvTimeoutError::Disconnected) => Err("runner went away".into()),
        }
    }
}

/// The endpoint a receiving side binds (`index`: which receiver).
pub fn bind_endpoint(transport: Transport, index: usize) -> String {
    match transport {
        Transport::Tcp => "tcp://127.0.0.1:*".to_string(),
        Transport::Ipc => "ipc://*".to_string(),
        Transport::Inproc => format!("inproc://fabriq-bench-{}-{index}", std::process::id()),
        Transport::OfiTcp | Transport::OfiShm => format!("{}://127.0.0.1:*", transport.name()),
    }
}

/// Sleep between warm-up bursts while waiting for `go`.
pub const WARM_PAUSE: Duration = Duration::from_millis(1);

/// Messages per warm-up burst: at most 100, at most ~256 KiB.
pub fn warm_burst(size: usize) -> u64 {
    (256 * 1024 / size.max(1)).clamp(1, 100) as u64
}

/// Diagnostics for a worker that misbehaves: with `FABRIQ_LOG` set (a
/// tracing filter such as `fabriq=debug`), fabriq's events go to the
/// worker's stderr, which the runner keeps beside the trial's error.
fn log_to_stderr() {
    let Ok(filter) = std::env::var("FABRIQ_LOG") else {
        return;
    };
    let filter = match tracing_subscriber::EnvFilter::try_new(&filter) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("fabriq-bench worker: FABRIQ_LOG={filter:?} is not a filter: {e}");
            return;
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_thread_names(true)
        .try_init();
}

/// The worker entry point: runs the spec, prints the report, exits.
pub fn main(spec_json: &str) -> ExitCode {
    log_to_stderr();
    let spec: WorkerSpec = match serde_json::from_str(spec_json) {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("fabriq-bench worker: bad spec: {e}");
            return ExitCode::from(2);
        }
    };
    let pinning = match spec.cpus.as_slice() {
        [] => "not pinned".to_string(),
        cpus => match pin_current_thread(cpus) {
            Ok(()) => format!("cpus {cpus:?}"),
            Err(e) => format!("pinning failed: {e}"),
        },
    };
    if let Some(keys) = spec.curve.clone() {
        crate::security::install(keys);
    }
    let gate = StdioGate::new();
    let result = run_role(&spec, &gate);
    let (ok, error, outcome) = match result {
        Ok(outcome) => (true, None, outcome),
        Err(e) => (false, Some(e), Outcome::default()),
    };
    let report = WorkerReport {
        role: spec.role,
        ok,
        error,
        outcome,
        maxrss_kb: Usage::now().maxrss_kb,
        pinning,
        instructions: None,
        security: crate::security::noted(),
    };
    let line = serde_json::to_string(&report).expect("report serialises");
    StdioGate::say(&line);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn run_role(spec: &WorkerSpec, gate: &StdioGate) -> Result<Outcome, String> {
    use crate::zmqlike::{fabriq, libzmq, libzmq_curve, omq};
    let curve = spec.scenario.pattern.is_curve();
    match (spec.implementation, spec.role) {
        // The zmq crate's libzmq has no CURVE: the system's libzmq5, loaded
        // in this process only, plays libzmq (and the zmq crate is never
        // used in this process).
        (Impl::Libzmq, Role::Inproc) if curve => Err("no inproc CURVE scenario".into()),
        (Impl::Libzmq, role) if curve => libzmq_curve::process(spec, role, gate),
        (Impl::Raw, role) if spec.scenario.transport.is_fabric() => {
            crate::fifloor::run(spec, role, gate)
        }
        (Impl::Raw, Role::Sender) => crate::raw::sender(spec, gate),
        (Impl::Raw, Role::Receiver) => crate::raw::receiver(spec, gate),
        (Impl::Raw, Role::Client) => crate::raw::client(spec),
        (Impl::Raw, Role::Server) => crate::raw::server(spec, gate),
        (Impl::Raw, Role::Inproc) => Err("the raw floor has no inproc variant".into()),
        (Impl::FiPingpong, _) => Err("fi_pingpong is run by the runner, not a worker".into()),
        (Impl::Libzmq, Role::Inproc) => libzmq::inproc(spec),
        (Impl::Fabriq, Role::Inproc) => fabriq::inproc(spec),
        (Impl::Omq, Role::Inproc) => omq::inproc(spec),
        (Impl::Libzmq, role) => libzmq::process(spec, role, gate),
        (Impl::Fabriq, role) => fabriq::process(spec, role, gate),
        (Impl::Omq, role) => omq::process(spec, role, gate),
    }
}
