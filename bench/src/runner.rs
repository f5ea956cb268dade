//! The orchestrator: plans the run, starts the workers of each trial,
//! interleaves A (libzmq), B (fabriq), C (omq), A' (libzmq again), C' (omq
//! again) and the floor in every repetition, places the workers
//! ([`crate::placement`]), and writes the table, the JSON and the plots.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::{Mode, RunArgs};
use crate::machine::Machine;
use crate::placement::{CpuSets, Placement, Side};
use crate::results::{Metrics, Results, RunConfig, ScenarioResult, Trial, SCHEMA};
use crate::scenario::{plan, Pattern, Scenario, Slot, Transport};
use crate::worker::{Role, WorkerReport, WorkerSpec};

/// What every trial of a run shares.
struct RunContext {
    exe: PathBuf,
    self_args: Vec<String>,
    placement: Placement,
    perf: bool,
    deadline: Duration,
    stall_ms: u64,
    scratch: PathBuf,
    /// The fabric floor's program, or why there is none.
    fi_pingpong: Result<PathBuf, String>,
    /// The target length of a trial (sizes fi_pingpong's runs).
    trial_secs: f64,
    smoke: bool,
    /// fi_pingpong's one-way time by scenario key, from the repetition
    /// before (sizes the next one's iterations).
    pingpong_us: std::cell::RefCell<std::collections::HashMap<String, f64>>,
    /// The run's CURVE keys (when it has CURVE scenarios).
    curve: Option<crate::security::CurveKeys>,
}

impl RunContext {
    /// The slots of `sc` this run runs: the scenario's, less fi_pingpong
    /// where it is not installed.
    fn slots(&self, sc: &Scenario, args: &RunArgs) -> Vec<Slot> {
        sc.slots(!args.no_floor, !args.no_calibration, !args.no_omq)
            .into_iter()
            .filter(|s| *s != Slot::Pingpong || self.fi_pingpong.is_ok())
            .collect()
    }
}

/// Which table a scenario's rows belong to: the ZeroMQ one, or the
/// fabric one of its transport.
fn table_of(sc: &Scenario) -> Option<Transport> {
    sc.transport.is_fabric().then_some(sc.transport)
}

fn table_header(table: Option<Transport>) -> String {
    match table {
        None => crate::table::header(),
        Some(t) => format!("\n{}", crate::table::fabric_header(t)),
    }
}

/// Runs the benchmark the arguments describe.
pub fn run(self_args: &[&str], args: &RunArgs) -> Result<(), String> {
    let started = Instant::now();
    let mode = args.mode();
    let scenarios = plan(args);
    if scenarios.is_empty() {
        return Err("the filters select no scenario".into());
    }
    let placement = Placement::new(args.pin, crate::sys::allowed_cpus());
    let (sender_cpu, receiver_cpu) = placement.side_cpus();
    let pinning = placement.describe();
    let omq = !args.no_omq;
    let perf = if args.no_perf {
        Err("not available: disabled (--no-perf)".to_string())
    } else {
        crate::sys::probe_perf().map_err(|e| format!("not available: {e}"))
    };
    let deadline = args.deadline.unwrap_or(match mode {
        Mode::Full => 120.0,
        Mode::Quick | Mode::Smoke => 60.0,
    });
    let scratch = std::env::temp_dir().join(format!("fabriq-bench-{}", std::process::id()));
    let fabric = scenarios.iter().any(|s| s.transport.is_fabric());
    let fi_pingpong = crate::pingpong::locate(args.fi_pingpong.as_deref());
    let fi_pingpong_text = match (&fi_pingpong, fabric) {
        (_, false) => String::new(),
        (Ok(p), true) => format!(
            "{} (libfabric {})",
            p.display(),
            crate::pingpong::libfabric_version(p).unwrap_or_else(|| "version unknown".into())
        ),
        (Err(e), true) => e.clone(),
    };
    let ctx = RunContext {
        exe: std::env::current_exe().map_err(|e| format!("own executable: {e}"))?,
        self_args: self_args.iter().map(|s| s.to_string()).collect(),
        placement,
        perf: perf.is_ok(),
        deadline: Duration::from_secs_f64(deadline),
        stall_ms: 5000,
        scratch,
        fi_pingpong,
        trial_secs: args.trial_secs.unwrap_or(match mode {
            Mode::Full => 0.4,
            Mode::Quick => 0.35,
            Mode::Smoke => 0.0,
        }),
        smoke: mode == Mode::Smoke && args.trial_secs.is_none(),
        pingpong_us: Default::default(),
        curve: if scenarios.iter().any(|s| s.pattern.is_curve()) {
            Some(crate::security::CurveKeys::generate()?)
        } else {
            None
        },
    };
    if ctx.perf {
        std::fs::create_dir_all(&ctx.scratch).map_err(|e| format!("scratch dir: {e}"))?;
    }
    let machine = Machine::describe();
    let mut results = Results {
        schema: SCHEMA,
        machine,
        config: RunConfig {
            mode,
            command_line: std::env::args().collect(),
            note: args.note.clone(),
            placement: ctx.placement.effective_name().to_string(),
            sender_cpu,
            receiver_cpu,
            pinning: pinning.clone(),
            perf: perf
                .clone()
                .map(|()| "available".to_string())
                .unwrap_or_else(|e| e),
            calibration: !args.no_calibration,
            omq,
            floor: !args.no_floor,
            fi_pingpong: fi_pingpong_text.clone(),
            deadline_s: deadline,
            wall_s: 0.0,
        },
        scenarios: Vec::new(),
    };
    let m = &results.machine;
    println!(
        "fabriq-bench ({mode:?} mode): fabriq {} ({}) vs libzmq {} vs omq.rs {} vs raw floor; {}, {} CPUs, kernel {}, {} build",
        m.fabriq, m.git_commit, m.libzmq, m.omq, m.cpu_model, m.cpus_online, m.kernel, m.build_profile
    );
    println!(
        "placement: {pinning}; instructions/msg: {}",
        results.config.perf
    );
    if scenarios.iter().any(|s| !s.transport.is_fabric()) {
        println!(
            "each repetition: A = libzmq, B = fabriq, C = omq.rs, A' = libzmq again (A'/A = noise band), \
             C' = omq again (C'/C = omq's noise band), floor = raw stream; \
             figures are medians (min-max) over repetitions, ratios are medians of per-repetition ratios"
        );
    }
    if scenarios.iter().any(|s| s.pattern.is_curve()) {
        println!(
            "CURVE scenarios (curve = PUSH/PULL, PULL the CURVE server; curve-handshake = a new CURVE \
             REQ socket per round: connect, one request/reply, close; rounds/s = handshakes/s): \
             A = Debian's libzmq5 ({}) loaded at run time in its worker only (the zmq crate's \
             libzmq has no CURVE), C = omq.rs with its curve feature; no raw floor",
            crate::syszmq::SONAME
        );
    }
    if fabric {
        println!(
            "fabric scenarios, each repetition: B = fabriq over ofi+PROVIDER ({}), R = fabriq over \
             the host's own transport (ipc for shm, tcp for tcp), B' = the fabric again (B'/B = noise band), \
             P = fi_pingpong on the provider (busy-polling ping-pong, one message in flight; \
             msg/s = one-way transfers/s, MB/s both directions; CPU and RSS of its whole processes); \
             latency is one-way (half the round trip); figures are medians (min-max) over repetitions, \
             ratios are medians of per-repetition ratios",
            crate::scenario::FABRIC_VARIANTS
                .iter()
                .map(|v| v.describe())
                .collect::<Vec<_>>()
                .join("; ")
        );
        println!("fabric floor: {fi_pingpong_text}");
    }
    if m.build_profile == "debug" {
        println!("warning: debug build: figures mean nothing (use --release)");
    }

    let total: u64 = scenarios
        .iter()
        .map(|s| (s.reps * ctx.slots(s, args).len()) as u64)
        .sum();
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} trials, eta {eta} {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let mut failures = 0usize;
    let mut table: Option<Option<Transport>> = None;
    let mut notes_shown: Vec<String> = Vec::new();
    for sc in &scenarios {
        let key = sc.key();
        if table != Some(table_of(sc)) {
            table = Some(table_of(sc));
            bar.suspend(|| println!("{}", table_header(table_of(sc))));
        }
        bar.set_message(key.clone());
        let mut trials = Vec::new();
        for rep in 0..sc.reps {
            for slot in ctx.slots(sc, args) {
                let trial = run_trial(&ctx, sc, slot, rep);
                if !trial.ok {
                    failures += 1;
                    let err = trial.error.as_deref().unwrap_or("?");
                    bar.suspend(|| eprintln!("{key} rep {rep} {slot:?}: error: {err}"));
                }
                trials.push(trial);
                bar.inc(1);
            }
        }
        let result = ScenarioResult {
            key,
            scenario: sc.clone(),
            trials,
        };
        let lines = if sc.transport.is_fabric() {
            crate::table::fabric_rows(&result, crate::table::no_pingpong(&results))
        } else {
            crate::table::rows(&result)
        };
        bar.suspend(|| {
            for line in lines {
                println!("{line}");
            }
        });
        // What each side's sockets ran (CURVE), once per distinct line.
        let notes = if sc.pattern.is_curve() {
            crate::table::security_notes(&result)
        } else {
            Vec::new()
        };
        for note in notes {
            if !notes_shown.contains(&note) {
                bar.suspend(|| println!("    {note}"));
                notes_shown.push(note);
            }
        }
        results.scenarios.push(result);
        results.config.wall_s = started.elapsed().as_secs_f64();
        // Saved after every scenario, so an interrupted run keeps its data.
        results.save(&args.out)?;
    }
    bar.finish_and_clear();
    let failed_pins: Vec<String> = results
        .scenarios
        .iter()
        .flat_map(|s| &s.trials)
        .flat_map(|t| &t.workers)
        .filter(|w| w.pinning.starts_with("pinning failed"))
        .map(|w| w.pinning.clone())
        .collect();
    if let Some(first) = failed_pins.first() {
        results.config.pinning = format!(
            "{}; but {} worker(s) could not be pinned ({first})",
            results.config.pinning,
            failed_pins.len()
        );
        println!("warning: {}", results.config.pinning);
    }
    let _ = std::fs::remove_dir_all(&ctx.scratch);
    results.config.wall_s = started.elapsed().as_secs_f64();
    results.save(&args.out)?;
    println!();
    for line in crate::table::aa_band(&results) {
        println!("{line}");
    }
    println!(
        "results: {} ({} scenarios, {} trials, {:.1} s)",
        args.out.display(),
        results.scenarios.len(),
        total,
        results.config.wall_s
    );
    if !args.no_plots {
        let dir = args
            .out
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        match crate::plot::write_all(&results, &dir) {
            Ok(files) if !files.is_empty() => println!("plots: {}", files.join(", ")),
            Ok(_) => {}
            Err(e) => eprintln!("plots: error: {e}"),
        }
    }
    if failures > 0 {
        return Err(format!(
            "{failures} trial(s) failed (see errors above and in the JSON)"
        ));
    }
    Ok(())
}

/// One running worker process.
struct WorkerProc {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    perf_file: Option<PathBuf>,
}

impl WorkerProc {
    fn spawn(ctx: &RunContext, spec: &WorkerSpec, name: String) -> Result<WorkerProc, String> {
        let spec_json = serde_json::to_string(spec).map_err(|e| e.to_string())?;
        let mut worker_args: Vec<String> = ctx.self_args.clone();
        worker_args.push("worker".into());
        worker_args.push(spec_json);
        let (mut cmd, perf_file) = if ctx.perf {
            let file = ctx.scratch.join(format!(
                "perf-{}-{}.txt",
                std::process::id(),
                PERF_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ));
            let mut cmd = Command::new("perf");
            cmd.args(["stat", "-x,", "-e", "instructions", "-o"])
                .arg(&file)
                .arg("--")
                .arg(&ctx.exe)
                .args(&worker_args);
            (cmd, Some(file))
        } else {
            let mut cmd = Command::new(&ctx.exe);
            cmd.args(&worker_args);
            (cmd, None)
        };
        cmd.envs(spec.scenario.variant.env().iter().copied());
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{name}: spawn {}: {e}", ctx.exe.display()))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err_pipe = child.stderr.take().expect("piped stderr");
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut s = sink.lock().expect("stderr lock");
                if s.len() < 16 * 1024 {
                    s.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        });
        Ok(WorkerProc {
            name,
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            perf_file,
        })
    }

    fn stderr_tail(&self) -> String {
        // Give the reader a moment to collect a dying worker's last words.
        std::thread::sleep(Duration::from_millis(20));
        let s = self.stderr.lock().expect("stderr lock");
        let tail: Vec<&str> = s.lines().rev().take(3).collect();
        if tail.is_empty() {
            String::new()
        } else {
            format!(
                " (stderr: {})",
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )
        }
    }

    fn next_line(&mut self, deadline: Instant, waiting_for: &str) -> Result<String, String> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "{}: deadline passed waiting for {waiting_for}: killed{}",
                self.name,
                self.stderr_tail()
            )),
            Err(RecvTimeoutError::Disconnected) => Err(format!(
                "{}: exited while we waited for {waiting_for}{}",
                self.name,
                self.stderr_tail()
            )),
        }
    }

    /// Waits for a line starting with `prefix`; a report line instead
    /// means the worker failed, and says why.
    fn expect(&mut self, prefix: &str, deadline: Instant) -> Result<String, String> {
        let line = self.next_line(deadline, prefix)?;
        if let Some(rest) = line.strip_prefix(prefix) {
            return Ok(rest.trim().to_string());
        }
        if line.starts_with('{') {
            if let Ok(report) = serde_json::from_str::<WorkerReport>(&line) {
                return Err(format!(
                    "{}: {}",
                    self.name,
                    report.error.unwrap_or_else(|| "ended early".into())
                ));
            }
        }
        Err(format!("{}: expected {prefix}, got {line:?}", self.name))
    }

    fn tell(&mut self, command: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("{}: cannot send {command}: {e}", self.name))
    }

    /// Reads the final report and waits for the exit.
    fn report(&mut self, deadline: Instant) -> Result<WorkerReport, String> {
        let line = self.next_line(deadline, "the report")?;
        let mut report: WorkerReport = serde_json::from_str(&line)
            .map_err(|e| format!("{}: bad report {line:?}: {e}", self.name))?;
        if !report.ok {
            return Err(format!(
                "{}: {}{}",
                self.name,
                report.error.unwrap_or_default(),
                self.stderr_tail()
            ));
        }
        self.stdin = None;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() > deadline => {
                    return Err(format!("{}: did not exit after its report", self.name))
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => return Err(format!("{}: wait: {e}", self.name)),
            }
        }
        if let Some(file) = &self.perf_file {
            report.instructions = crate::sys::read_perf_file(file);
            let _ = std::fs::remove_file(file);
        }
        Ok(report)
    }
}

impl Drop for WorkerProc {
    fn drop(&mut self) {
        // Only our own child: killed if still running (a failed trial).
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

static PERF_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Runs one trial: one implementation, one repetition of a scenario.
fn run_trial(ctx: &RunContext, sc: &Scenario, slot: Slot, rep: usize) -> Trial {
    let start = Instant::now();
    let implementation = slot.implementation();
    let failed = |error: String, wall_s: f64| Trial {
        rep,
        slot,
        implementation,
        ok: false,
        error: Some(error),
        metrics: None,
        workers: Vec::new(),
        wall_s,
        log: Vec::new(),
    };
    if slot == Slot::Pingpong {
        let result = run_pingpong(ctx, sc);
        let wall_s = start.elapsed().as_secs_f64();
        return match result {
            Ok(o) => Trial {
                rep,
                slot,
                implementation,
                ok: true,
                error: None,
                metrics: Some(o.metrics(sc)),
                workers: Vec::new(),
                wall_s,
                log: o.log,
            },
            Err(e) => failed(e, wall_s),
        };
    }
    // R runs the fabric scenario over the reference transport.
    let sc = &sc.for_slot(slot);
    let result = run_workers(ctx, sc, slot);
    let wall_s = start.elapsed().as_secs_f64();
    match result {
        Ok(workers) => {
            let metrics = metrics(sc, &workers);
            Trial {
                rep,
                slot,
                implementation,
                ok: true,
                error: None,
                metrics: Some(metrics),
                workers,
                wall_s,
                log: Vec::new(),
            }
        }
        Err(error) => failed(error, wall_s),
    }
}

/// One fi_pingpong trial on the scenario's provider and size.
fn run_pingpong(ctx: &RunContext, sc: &Scenario) -> Result<crate::pingpong::Outcome, String> {
    let exe = ctx.fi_pingpong.as_ref().map_err(|e| e.clone())?;
    let provider = sc
        .transport
        .provider()
        .ok_or_else(|| format!("{} has no libfabric provider", sc.transport.name()))?;
    let key = sc.key();
    let measured = ctx.pingpong_us.borrow().get(&key).copied();
    let iters = crate::pingpong::iterations(provider, sc.size, ctx.trial_secs, ctx.smoke, measured);
    let mut sets = ctx
        .placement
        .assign(&[(Side::Receiving, 1), (Side::Sending, 1)]);
    let client = sets.pop().unwrap_or_default();
    let server = sets.pop().unwrap_or_default();
    let outcome = crate::pingpong::run(
        exe,
        provider,
        sc.size,
        iters,
        Instant::now() + ctx.deadline,
        &server,
        &client,
        sc.variant.env(),
    )?;
    ctx.pingpong_us
        .borrow_mut()
        .insert(key, outcome.row.usec_per_xfer);
    Ok(outcome)
}

fn spec(
    ctx: &RunContext,
    sc: &Scenario,
    slot: Slot,
    role: Role,
    endpoints: Vec<String>,
    cpus: CpuSets,
) -> WorkerSpec {
    WorkerSpec {
        role,
        implementation: slot.implementation(),
        scenario: sc.clone(),
        endpoints,
        cpus: cpus.process,
        cpus_peer: cpus.peer_threads,
        stall_ms: ctx.stall_ms,
        curve: if sc.pattern.is_curve() {
            ctx.curve.clone()
        } else {
            None
        },
    }
}

/// Starts the workers of one trial, drives the go/done protocol, and
/// returns their reports (the sending side first).
fn run_workers(ctx: &RunContext, sc: &Scenario, slot: Slot) -> Result<Vec<WorkerReport>, String> {
    let deadline = Instant::now() + ctx.deadline;
    let implementation = slot.implementation();
    let imp = implementation.name();
    let receivers = match sc.pattern {
        Pattern::Pubsub => sc.subs,
        _ => 1,
    };
    let threads = implementation.threads(sc.transport, receivers);
    if sc.transport == Transport::Inproc {
        let cpus = ctx.placement.assign(&[(Side::Sending, threads)]).remove(0);
        let spec = spec(ctx, sc, slot, Role::Inproc, Vec::new(), cpus);
        let mut w = WorkerProc::spawn(ctx, &spec, format!("{imp} inproc worker"))?;
        return Ok(vec![w.report(deadline)?]);
    }
    let reqrep = sc.pattern.is_request_reply();
    let (bind_role, connect_role) = if reqrep {
        (Role::Server, Role::Client)
    } else {
        (Role::Receiver, Role::Sender)
    };
    // The binders (receivers / servers) first, the connecting side last.
    let procs: Vec<(Side, usize)> = (0..receivers)
        .map(|_| (Side::Receiving, threads))
        .chain([(Side::Sending, threads)])
        .collect();
    let mut sets = ctx.placement.assign(&procs);
    let conn_cpus = sets.pop().unwrap_or_default();
    let mut binders = Vec::new();
    let mut endpoints = Vec::new();
    for (i, cpus) in sets.into_iter().enumerate() {
        let spec = spec(ctx, sc, slot, bind_role, Vec::new(), cpus);
        let mut w = WorkerProc::spawn(
            ctx,
            &spec,
            format!("{imp} {bind_role:?} {i}").to_lowercase(),
        )?;
        endpoints.push(w.expect("BOUND ", deadline)?);
        binders.push(w);
    }
    let spec = spec(ctx, sc, slot, connect_role, endpoints, conn_cpus);
    let mut conn = WorkerProc::spawn(ctx, &spec, format!("{imp} {connect_role:?}").to_lowercase())?;
    let mut reports = Vec::new();
    let binders_done = (|| {
        if !reqrep {
            for b in &mut binders {
                b.expect("READY", deadline)?;
            }
            conn.tell("go")?;
        }
        for b in &mut binders {
            reports.push(b.report(deadline)?);
        }
        Ok::<(), String>(())
    })();
    if let Err(e) = binders_done {
        // A binder that gave up waiting often did so because the
        // connecting side failed first: say what it said, if it did.
        return Err(match conn.report(Instant::now() + PEER_LAST_WORDS) {
            Err(why) if !why.contains("deadline passed") => format!("{e}; {why}"),
            _ => e,
        });
    }
    if !reqrep {
        conn.tell("done")?;
    }
    reports.insert(0, conn.report(deadline)?);
    Ok(reports)
}

/// How long a failed trial waits for the connecting side's own report,
/// to name its error beside the binder's.
const PEER_LAST_WORDS: Duration = Duration::from_secs(2);

/// PUB/SUB to several receiver processes: the rate at which every one of
/// them got every message, from the first timed message any received to
/// the last one the slowest received. (The mean of each receiver's own
/// rate, each clocked from its own first message, rewarded a publisher
/// that serves its subscribers one after another: each got its messages
/// fast, in its own window. Inproc subscribers, threads of one process,
/// report rates only and keep the mean.)
fn fan_out_rate(sc: &Scenario, workers: &[WorkerReport]) -> Option<f64> {
    if sc.pattern != Pattern::Pubsub {
        return None;
    }
    let spans: Vec<(f64, f64)> = workers
        .iter()
        .filter(|w| w.role == Role::Receiver)
        .map(|w| w.outcome.span)
        .collect::<Option<_>>()?;
    if spans.len() < 2 {
        return None;
    }
    let start = spans.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
    let end = spans.iter().map(|s| s.1).fold(0.0, f64::max);
    let timed = sc.count.saturating_sub(1).max(1) as f64;
    Some(timed / (end - start).max(1e-9))
}

/// The trial's figures from its workers' reports.
fn metrics(sc: &Scenario, workers: &[WorkerReport]) -> Metrics {
    let rates: Vec<f64> = workers
        .iter()
        .flat_map(|w| match w.role {
            Role::Receiver => vec![w.outcome.rate],
            Role::Inproc if !w.outcome.per_receiver_rates.is_empty() => {
                w.outcome.per_receiver_rates.clone()
            }
            Role::Client | Role::Inproc => vec![w.outcome.rate],
            Role::Sender | Role::Server => Vec::new(),
        })
        .collect();
    let msg_per_s = match fan_out_rate(sc, workers) {
        Some(rate) => rate,
        None if rates.is_empty() => 0.0,
        None => rates.iter().sum::<f64>() / rates.len() as f64,
    };
    let latency = workers.iter().find_map(|w| w.outcome.latency.clone());
    let cpu_s: f64 = workers
        .iter()
        .map(|w| w.outcome.usage.user_s + w.outcome.usage.sys_s)
        .sum();
    let instructions: Option<u64> = workers.iter().map(|w| w.instructions).sum();
    Metrics {
        messages: sc.count,
        msg_per_s,
        mb_per_s: msg_per_s * sc.size as f64 / 1e6,
        per_receiver_msg_per_s: rates,
        one_way_us: None,
        latency,
        cpu_s,
        cpu_us_per_msg: cpu_s / sc.count as f64 * 1e6,
        peak_rss_kb: workers.iter().map(|w| w.maxrss_kb).max().unwrap_or(0),
        instructions_per_msg: instructions.map(|i| i as f64 / sc.count as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{FabricVariant, Transport};
    use crate::worker::Outcome;

    fn report(role: Role, span: Option<(f64, f64)>, rate: f64) -> WorkerReport {
        WorkerReport {
            role,
            ok: true,
            error: None,
            outcome: Outcome {
                rate,
                span,
                ..Outcome::default()
            },
            maxrss_kb: 0,
            pinning: String::new(),
            instructions: None,
            security: None,
        }
    }

    fn pubsub(subs: usize) -> Scenario {
        Scenario {
            pattern: Pattern::Pubsub,
            transport: Transport::Ipc,
            size: 64,
            subs,
            count: 1001,
            warm: 10,
            reps: 1,
            variant: FabricVariant::Default,
        }
    }

    /// Subscribers served one after the other each see a fast stream in
    /// their own window; the fan-out's rate is over all of them at once.
    #[test]
    fn a_fan_out_is_timed_from_the_first_subscriber_start_to_the_last_end() {
        let sc = pubsub(2);
        let workers = [
            report(Role::Sender, None, 0.0),
            report(Role::Receiver, Some((100.0, 101.0)), 1000.0),
            report(Role::Receiver, Some((101.0, 102.0)), 1000.0),
        ];
        let m = metrics(&sc, &workers);
        assert!((m.msg_per_s - 500.0).abs() < 1e-6, "{}", m.msg_per_s);
        assert_eq!(m.per_receiver_msg_per_s, [1000.0, 1000.0]);
        // Without spans (inproc threads) the mean of the rates stays.
        let workers = [
            report(Role::Receiver, None, 1000.0),
            report(Role::Receiver, None, 3000.0),
        ];
        assert!((metrics(&sc, &workers).msg_per_s - 2000.0).abs() < 1e-6);
        // One subscriber: its own rate.
        let workers = [report(Role::Receiver, Some((0.0, 10.0)), 100.0)];
        assert!((metrics(&pubsub(1), &workers).msg_per_s - 100.0).abs() < 1e-6);
    }
}
