//! The soak (issue 15, item 5): four streams between two network
//! namespaces (`common/netns.rs`) for `FABRIQ_SOAK_SECONDS` (default 120,
//! what `cargo test` runs; `scripts/soak MINUTES` runs longer), with a
//! fault every 30 s, and every `fabriq` process's resident memory, open
//! descriptors and threads sampled once a second.
//!
//! Streams, each paced at about 100 messages/s, every socket with
//! heartbeats (`--heartbeat-ivl 200 --heartbeat-timeout 1000
//! --reconnect-ivl 100`):
//!
//! - `push-pull-tcp`: PUSH in b to PULL in a, tcp;
//! - `push-pull-ofi`: PUSH in b to PULL in a, ofi+tcp;
//! - `pub-sub-tcp`: PUB in a to SUB in b, tcp;
//! - `req-rep-tcp`: REQ in a (`--req-relaxed --req-correlate`) to REP in
//!   b, tcp, one request at a time (a request unanswered after 3 s is
//!   counted lost and the next one sent).
//!
//! Faults, in turn, the first at 15 s: the veth down for 4 s; 3 % of the
//! packets entering each namespace dropped for 10 s (nftables); the tcp
//! PULL killed (SIGKILL) and started again on the same port; the REP
//! frozen (SIGSTOP) for 3 s, then SIGCONT.
//!
//! Checked at the end:
//!
//! - every stream delivered in order, nothing twice;
//! - a message lost only where its pattern allows it (the windows of
//!   `faults.rs`): for PUSH/PULL, sent from 1 s before a fault that kills
//!   its connection (link down, its PULL killed) until the fault was
//!   detected (at most `DETECT` after it) or ended; for PUB/SUB and
//!   REQ/REP, from 1 s before such a fault until 2 s after its end (PUB
//!   drops for a SUB it cannot reach until it has subscribed again; a
//!   request in a dead connection is gone). Nothing may be lost to packet
//!   loss (TCP retransmits), nor outside the windows;
//! - every stream delivered again after each fault, and after the last;
//! - resident memory, descriptors and threads flat: per process role, the
//!   median over the last third of the run against the median over the
//!   third right after warm-up, which ends 5 s after the first fault has
//!   recovered (see `WARMUP`; tolerances at `RSS_SLACK_KB`).
//!
//! Figures go to stderr (`soak: ...`, `--nocapture`) and to
//! `target/soak/` (or `$FABRIQ_SOAK_DIR`): `samples.csv` (t, role, pid,
//! rss_kb, fds, threads), `faults.csv`, `summary.txt` and `soak.svg`.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::netns::{port_of, signal_pid, wait_until, Host, Hosts};
use common::{number_in, Proc, WAIT};

/// The options of every socket: a PING every 200 ms, a peer silent for
/// 1 s dropped, a lost connection tried again every 100 ms.
const HEARTBEATS: [&str; 6] = [
    "--heartbeat-ivl",
    "200",
    "--heartbeat-timeout",
    "1000",
    "--reconnect-ivl",
    "100",
];

/// Warm-up: no sample before this long after the first fault (the link
/// down) has recovered counts for flatness. The first reconnection of the
/// ofi+tcp PULL takes about 34 MB more resident memory, once (86 -> 121 MB
/// at the first link down, then flat through the later ones: see the
/// long run in docs/reliability.md); so the baseline is taken after one.
const WARMUP: f64 = 5.0;
/// The first fault, then one every `CADENCE`.
const FIRST_FAULT: f64 = 15.0;
const CADENCE: f64 = 30.0;
/// Time left after the last fault's start, so that its recovery shows.
const AFTER_LAST: f64 = 14.0;

/// Messages per tick and the tick: about 100 messages/s per stream.
const BATCH: u32 = 5;
const TICK: Duration = Duration::from_millis(50);
/// A request unanswered this long is counted lost.
const REPLY_WAIT: Duration = Duration::from_secs(3);
/// A fault that kills a connection is detected within this (heartbeat
/// timeout 1 s plus slack for the loaded machine); PUSH holds what is
/// sent after.
const DETECT: f64 = 2.5;

/// Flatness: the median of the last third may exceed that of the third
/// after warm-up by at most max(RSS_SLACK_KB, RSS_SLACK_PCT %) of
/// resident memory, FD_SLACK descriptors and THREAD_SLACK threads.
/// Why: between those medians RSS moved by at most 0.3 MB in the 2-minute
/// runs recorded, up to 1.0 MB in 15 minutes (a slow growth, open: see
/// docs/reliability.md), so 2 MB (10 % for the 120 MB ofi+tcp processes)
/// is clear of that, and still catches a leak of 32 kB/s
/// (about 320 bytes per message at 100/s) in the 2-minute run, whose
/// medians are about 64 s apart, and of 4 kB/s in a 15-minute run.
/// Descriptors and threads did not move at all; the slack of 2 and 1
/// covers a reconnection in progress at a sample (medians hide most).
const RSS_SLACK_KB: u64 = 2048;
const RSS_SLACK_PCT: u64 = 10;
const FD_SLACK: u64 = 2;
const THREAD_SLACK: u64 = 1;

/// Seconds since the start of the soak.
#[derive(Clone, Copy)]
struct Clock(Instant);

impl Clock {
    fn now(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

/// What one stream did: the send time of each message (its number is the
/// index) and the numbers received, in order.
#[derive(Default)]
struct Record {
    sent_at: Vec<f64>,
    received: Vec<u32>,
    /// The receive time of each entry of `received`.
    received_at: Vec<f64>,
    /// Anything out of order, repeated or unexpected.
    violations: Vec<String>,
}

impl Record {
    fn got(&mut self, n: u32, t: f64) {
        if let Some(&prev) = self.received.last() {
            if n <= prev {
                self.violations
                    .push(format!("{n} after {prev} at {t:.2} s"));
            }
        }
        if n as usize >= self.sent_at.len() {
            self.violations.push(format!("{n} never sent"));
        }
        self.received.push(n);
        self.received_at.push(t);
    }
}

type Shared = Arc<Mutex<Record>>;

/// The fabriq processes now running: role -> pid.
type Pids = Arc<Mutex<BTreeMap<&'static str, u32>>>;

/// One message line of a stream.
fn message(prefix: &str, i: u32) -> String {
    format!("{prefix} {i:07} {}", "x".repeat(64))
}

fn with_heartbeats<'a>(args: &[&'a str]) -> Vec<&'a str> {
    args.iter().copied().chain(HEARTBEATS).collect()
}

/// What the fault thread asks of a stream worker.
enum Ask {
    /// Kill the receiver (SIGKILL) and start it again on the same port;
    /// answer when it is bound.
    KillRestart(Sender<()>),
}

/// A one-way stream (PUSH/PULL or PUB/SUB): `sender` in one namespace
/// reads stdin, `receiver` in the other prints. Sends `BATCH` lines per
/// `TICK` until `stop`, then waits (bounded) for the last one.
#[allow(clippy::too_many_arguments)]
fn one_way(
    prefix: &'static str,
    receiver_role: &'static str,
    receiver_host: &Host,
    receiver_args: Vec<String>,
    mut receiver: Proc,
    mut sender: Proc,
    sender_host: &Host,
    record: Shared,
    pids: Pids,
    asks: Receiver<Ask>,
    stop: &AtomicBool,
    clock: Clock,
) -> (Proc, Proc) {
    let mut next = 0u32;
    let mut tick = Instant::now();
    let mut read_from_receiver = 0usize;
    let take = |line: &str, record: &Shared| {
        let n = number_in(line, prefix);
        record.lock().unwrap().got(n, clock.now());
    };
    loop {
        if let Ok(Ask::KillRestart(done)) = asks.try_recv() {
            let port = port_of(&receiver_args[2]);
            signal_pid(receiver.pid(), "KILL");
            let finished = receiver.finish();
            for line in &finished.stdout[read_from_receiver..] {
                take(line, &record);
            }
            wait_until(
                "the sender sees the killed receiver's connection close",
                WAIT,
                || sender_host.established(port).is_empty(),
                || format!("{:#?}", sender_host.connections()),
            );
            let args: Vec<&str> = receiver_args.iter().map(String::as_str).collect();
            receiver = receiver_host.fabriq(receiver_role, &args);
            assert_eq!(receiver.bound(""), receiver_args[2]);
            pids.lock().unwrap().insert(receiver_role, receiver.pid());
            read_from_receiver = 0;
            let _ = done.send(());
        }
        let stopping = stop.load(Ordering::Relaxed);
        if !stopping && Instant::now() >= tick {
            for _ in 0..BATCH {
                record.lock().unwrap().sent_at.push(clock.now());
                sender.send_line(&message(prefix, next));
                next += 1;
            }
            tick += TICK;
        }
        if stopping {
            // Everything sent has arrived (or is lost: the last message
            // was sent long after the last fault, so it must arrive).
            let last = next - 1;
            let deadline = Instant::now() + WAIT;
            while record.lock().unwrap().received.last() != Some(&last) {
                let left = deadline.saturating_duration_since(Instant::now());
                match receiver.line_within(left) {
                    Some(line) => take(&line, &record),
                    None => break,
                }
            }
            return (sender, receiver);
        }
        let left = tick.saturating_duration_since(Instant::now());
        if let Some(line) = receiver.line_within(left) {
            read_from_receiver += 1;
            take(&line, &record);
        }
    }
}

/// REQ/REP: one request at a time, the next when the reply came or after
/// `REPLY_WAIT`, at most one per `TICK / BATCH`.
fn req_rep(req: &mut Proc, record: Shared, stop: &AtomicBool, clock: Clock) {
    let spacing = TICK / BATCH;
    let mut n = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let sent = Instant::now();
        record.lock().unwrap().sent_at.push(clock.now());
        req.send_line(&message("request", n));
        // One reply, or none within REPLY_WAIT (lost).
        if let Some(line) = req.line_within(REPLY_WAIT) {
            let got = number_in(&line, "request");
            let mut rec = record.lock().unwrap();
            if got != n {
                rec.violations
                    .push(format!("reply to {got} while waiting for {n}"));
            }
            rec.got(got, clock.now());
        }
        n += 1;
        let wait = spacing.saturating_sub(sent.elapsed());
        if !wait.is_zero() {
            // Pacing: no event to wait for.
            thread::sleep(wait);
        }
    }
}

/// The faults, in turn.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    Loss,
    LinkDown,
    KillPull,
    FreezeRep,
}

/// The link goes down first: its reconnection is part of the warm-up
/// (see `WARMUP`).
const FAULTS: [Fault; 4] = [
    Fault::LinkDown,
    Fault::Loss,
    Fault::KillPull,
    Fault::FreezeRep,
];

/// One fault as it happened.
struct Injected {
    fault: Fault,
    start: f64,
    end: f64,
    /// When every stream had delivered a message sent after `end`.
    recovered: f64,
    detail: String,
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::Loss => "loss 3% 10 s",
            Fault::LinkDown => "link down 4 s",
            Fault::KillPull => "SIGKILL+restart tcp PULL",
            Fault::FreezeRep => "SIGSTOP 3 s REP",
        }
    }

    /// Whether this fault may cost `stream` messages, and until when
    /// (given the fault's start and end).
    fn window(self, stream: &str, start: f64, end: f64) -> Option<(f64, f64)> {
        let push_pull = stream.starts_with("push-pull");
        let kills_connection = match self {
            Fault::Loss => false,
            Fault::LinkDown => true,
            Fault::KillPull => stream == "push-pull-tcp",
            Fault::FreezeRep => stream == "req-rep-tcp",
        };
        if !kills_connection {
            return None;
        }
        if push_pull {
            Some((start - 1.0, end.min(start + DETECT)))
        } else {
            Some((start - 1.0, end + 2.0))
        }
    }
}

/// One sample of one process.
struct Sample {
    t: f64,
    role: &'static str,
    pid: u32,
    rss_kb: u64,
    fds: u64,
    threads: u64,
}

/// Reads VmRSS and Threads from /proc/PID/status and counts
/// /proc/PID/fd; None once the process is gone.
fn sample(pid: u32) -> Option<(u64, u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    let rss = field("VmRSS:")?;
    let threads = field("Threads:")?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some((rss, fds, threads))
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn out_dir() -> PathBuf {
    let dir = std::env::var_os("FABRIQ_SOAK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/soak"));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

#[test]
fn soak() {
    let seconds: f64 = std::env::var("FABRIQ_SOAK_SECONDS")
        .ok()
        .map(|s| s.parse().expect("FABRIQ_SOAK_SECONDS: a number of seconds"))
        .unwrap_or(120.0);
    assert!(
        seconds >= FIRST_FAULT + 3.0 * CADENCE + AFTER_LAST,
        "FABRIQ_SOAK_SECONDS={seconds}: at least {} s, for every fault once",
        FIRST_FAULT + 3.0 * CADENCE + AFTER_LAST
    );
    let hosts = Hosts::new();
    let (a, b) = (&hosts.a, &hosts.b);
    let pids: Pids = Arc::default();
    let stop = AtomicBool::new(false);
    let clock = Clock(Instant::now());

    // The receivers bind in a (PULL) or b (REP), the PUB in a.
    let start_pull = |role: &'static str, scheme: &str| {
        let bind = format!("{scheme}://{}:*", a.ip);
        let pull = a.fabriq(role, &with_heartbeats(&["pull", "--bind", &bind]));
        let ep = pull.bound("");
        pids.lock().unwrap().insert(role, pull.pid());
        let push_role = if scheme == "tcp" {
            "push-tcp"
        } else {
            "push-ofi"
        };
        let push = b.fabriq(push_role, &with_heartbeats(&["push", "--connect", &ep]));
        pids.lock().unwrap().insert(push_role, push.pid());
        let args: Vec<String> = with_heartbeats(&["pull", "--bind", &ep])
            .iter()
            .map(|s| s.to_string())
            .collect();
        (pull, push, args)
    };
    let (pull_tcp, push_tcp, pull_tcp_args) = start_pull("pull-tcp", "tcp");
    let (pull_ofi, push_ofi, pull_ofi_args) = start_pull("pull-ofi", "ofi+tcp");
    let publisher = a.fabriq(
        "pub-tcp",
        &with_heartbeats(&["pub", "--bind", &format!("tcp://{}:*", a.ip)]),
    );
    let pub_ep = publisher.bound("");
    let sub = b.fabriq("sub-tcp", &with_heartbeats(&["sub", "--connect", &pub_ep]));
    let rep = b.fabriq(
        "rep-tcp",
        &with_heartbeats(&["rep", "--bind", &format!("tcp://{}:*", b.ip)]),
    );
    let rep_ep = rep.bound("");
    let mut req = a.fabriq(
        "req-tcp",
        &with_heartbeats(&[
            "req",
            "--connect",
            &rep_ep,
            "--req-relaxed",
            "--req-correlate",
        ]),
    );
    for (role, p) in [
        ("pub-tcp", &publisher),
        ("sub-tcp", &sub),
        ("rep-tcp", &rep),
        ("req-tcp", &req),
    ] {
        pids.lock().unwrap().insert(role, p.pid());
    }

    let streams = [
        "push-pull-tcp",
        "push-pull-ofi",
        "pub-sub-tcp",
        "req-rep-tcp",
    ];
    let records: BTreeMap<&str, Shared> = streams.iter().map(|s| (*s, Shared::default())).collect();
    let samples: Mutex<Vec<Sample>> = Mutex::new(Vec::new());
    let mut injected: Vec<Injected> = Vec::new();
    let (ask_tcp, asks_tcp) = mpsc::channel();
    let (_ask_ofi, asks_ofi) = mpsc::channel();
    let (_ask_pub, asks_pub) = mpsc::channel();

    thread::scope(|scope| {
        let stop = &stop;
        let pids2 = pids.clone();
        let samples = &samples;
        scope.spawn(move || {
            // The sampler: once a second, every fabriq process.
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let t = clock.now();
                let now: Vec<(&'static str, u32)> = pids2
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|(r, p)| (*r, *p))
                    .collect();
                for (role, pid) in now {
                    if let Some((rss_kb, fds, threads)) = sample(pid) {
                        samples.lock().unwrap().push(Sample {
                            t,
                            role,
                            pid,
                            rss_kb,
                            fds,
                            threads,
                        });
                    }
                }
                next += Duration::from_secs(1);
                // The sampling cadence is a timer.
                thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        });
        let workers = vec![
            {
                let (rec, pids) = (records["push-pull-tcp"].clone(), pids.clone());
                scope.spawn(move || {
                    one_way(
                        "line",
                        "pull-tcp",
                        a,
                        pull_tcp_args,
                        pull_tcp,
                        push_tcp,
                        b,
                        rec,
                        pids,
                        asks_tcp,
                        stop,
                        clock,
                    )
                })
            },
            {
                let (rec, pids) = (records["push-pull-ofi"].clone(), pids.clone());
                scope.spawn(move || {
                    one_way(
                        "line",
                        "pull-ofi",
                        a,
                        pull_ofi_args,
                        pull_ofi,
                        push_ofi,
                        b,
                        rec,
                        pids,
                        asks_ofi,
                        stop,
                        clock,
                    )
                })
            },
            {
                let (rec, pids) = (records["pub-sub-tcp"].clone(), pids.clone());
                let args = vec!["sub".into(), "--connect".into(), pub_ep.clone()];
                // The SUB is never restarted; `one_way` wants its args anyway.
                scope.spawn(move || {
                    one_way(
                        "message", "sub-tcp", b, args, sub, publisher, a, rec, pids, asks_pub,
                        stop, clock,
                    )
                })
            },
        ];
        let req_worker = {
            let rec = records["req-rep-tcp"].clone();
            let req = &mut req;
            scope.spawn(move || req_rep(req, rec, stop, clock))
        };

        // The faults, on the clock.
        let received = |stream: &str| records[stream].lock().unwrap().received.len();
        let mut k = 0;
        loop {
            let at = FIRST_FAULT + CADENCE * k as f64;
            if at + AFTER_LAST > seconds {
                break;
            }
            thread::sleep(Duration::from_secs_f64((at - clock.now()).max(0.0)));
            let fault = FAULTS[k % FAULTS.len()];
            let start = clock.now();
            let mut detail = String::new();
            match fault {
                Fault::Loss => {
                    a.drop_incoming(3);
                    b.drop_incoming(3);
                    thread::sleep(Duration::from_secs(10));
                    let (dropped, seen) = (a.dropped() + b.dropped(), a.incoming() + b.incoming());
                    assert!(
                        dropped > 0,
                        "the loss rule dropped nothing of {seen} packets"
                    );
                    detail = format!("{dropped} of {seen} packets dropped");
                    a.clear_drops();
                    b.clear_drops();
                }
                Fault::LinkDown => {
                    a.set_link(false);
                    thread::sleep(Duration::from_secs(4));
                    a.set_link(true);
                }
                Fault::KillPull => {
                    let (tx, rx) = mpsc::channel();
                    ask_tcp.send(Ask::KillRestart(tx)).unwrap();
                    rx.recv_timeout(WAIT * 2)
                        .expect("the PULL killed and started again");
                }
                Fault::FreezeRep => {
                    signal_pid(rep.pid(), "STOP");
                    thread::sleep(Duration::from_secs(3));
                    signal_pid(rep.pid(), "CONT");
                }
            }
            let end = clock.now();
            // Recovered: every stream has received a message sent after
            // the end of the fault.
            let sent_after_end = |stream: &str| {
                let rec = records[stream].lock().unwrap();
                rec.received
                    .iter()
                    .rev()
                    .any(|&n| rec.sent_at[n as usize] > end)
            };
            wait_until(
                &format!("every stream delivers after {}", fault.name()),
                WAIT,
                || streams.iter().all(|s| sent_after_end(s)),
                || {
                    streams
                        .iter()
                        .map(|s| format!("{s}: {} received", received(s)))
                        .collect::<Vec<_>>()
                        .join("\n")
                },
            );
            let recovered = clock.now();
            eprintln!(
                "soak: {:.1} s {} until {:.1} s, all streams delivering again at {:.1} s {detail}",
                start,
                fault.name(),
                end,
                recovered
            );
            injected.push(Injected {
                fault,
                start,
                end,
                recovered,
                detail,
            });
            k += 1;
        }
        thread::sleep(Duration::from_secs_f64((seconds - clock.now()).max(0.0)));
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            let (sender, receiver) = w.join().expect("a stream worker panicked");
            let mut sender = sender;
            sender.close_stdin();
            drop(sender.finish());
            drop(receiver);
        }
        req_worker.join().expect("the REQ worker panicked");
    });
    let end_of_run = clock.now();

    // ---- counts and losses --------------------------------------------
    let mut summary = String::new();
    let mut failures: Vec<String> = Vec::new();
    let last_end = injected.last().map(|f| f.end).unwrap_or(0.0);
    for stream in streams {
        let rec = records[stream].lock().unwrap();
        let sent = rec.sent_at.len();
        let got: std::collections::HashSet<u32> = rec.received.iter().copied().collect();
        // PUB/SUB: what was published before the subscription arrived is
        // not a loss.
        let first = if stream == "pub-sub-tcp" {
            rec.received.first().copied().unwrap_or(0)
        } else {
            0
        };
        let mut allowed = 0;
        let mut lost_outside: Vec<(u32, f64)> = Vec::new();
        for n in first..sent as u32 {
            if got.contains(&n) {
                continue;
            }
            let t = rec.sent_at[n as usize];
            if injected.iter().any(|f| {
                f.fault
                    .window(stream, f.start, f.end)
                    .is_some_and(|(from, to)| from <= t && t <= to)
            }) {
                allowed += 1;
            } else {
                lost_outside.push((n, t));
            }
        }
        let after_last = rec
            .received
            .iter()
            .filter(|&&n| rec.sent_at[n as usize] > last_end)
            .count();
        let line = format!(
            "{stream}: sent {sent} received {} lost {} (all within fault windows: {}), \
             {} before the subscription, {after_last} received of those sent after the \
             last fault, {} order/duplicate violations",
            rec.received.len(),
            allowed + lost_outside.len(),
            lost_outside.is_empty(),
            first,
            rec.violations.len()
        );
        eprintln!("soak: {line}");
        writeln!(summary, "{line}").unwrap();
        if !lost_outside.is_empty() {
            failures.push(format!(
                "{stream}: {} lost outside the fault windows, first {:?}",
                lost_outside.len(),
                &lost_outside[..lost_outside.len().min(10)]
            ));
        }
        if !rec.violations.is_empty() {
            failures.push(format!(
                "{stream}: {:?}",
                &rec.violations[..rec.violations.len().min(10)]
            ));
        }
        if after_last == 0 {
            failures.push(format!("{stream}: nothing delivered after the last fault"));
        }
    }

    // ---- flatness -------------------------------------------------------
    let samples = samples.into_inner().unwrap();
    let warm = injected.first().map_or(0.0, |f| f.recovered) + WARMUP;
    let third = (end_of_run - warm) / 3.0;
    let (early, late) = ((warm, warm + third), (end_of_run - third, end_of_run));
    let roles: Vec<&str> = pids.lock().unwrap().keys().copied().collect();
    writeln!(
        summary,
        "flatness: medians over {:.0}-{:.0} s against {:.0}-{:.0} s",
        early.0, early.1, late.0, late.1
    )
    .unwrap();
    for role in roles {
        let of = |(from, to): (f64, f64), f: fn(&Sample) -> u64| {
            median(
                samples
                    .iter()
                    .filter(|s| s.role == role && s.t >= from && s.t <= to)
                    .map(f)
                    .collect(),
            )
        };
        let all = |f: fn(&Sample) -> u64| {
            samples
                .iter()
                .filter(|s| s.role == role)
                .map(f)
                .max()
                .unwrap_or(0)
        };
        // The trend after warm-up, by least squares: kB per minute.
        let points: Vec<(f64, f64)> = samples
            .iter()
            .filter(|s| s.role == role && s.t >= warm)
            .map(|s| (s.t, s.rss_kb as f64))
            .collect();
        let slope = slope_per_minute(&points);
        let rss = (of(early, |s| s.rss_kb), of(late, |s| s.rss_kb));
        let fds = (of(early, |s| s.fds), of(late, |s| s.fds));
        let threads = (of(early, |s| s.threads), of(late, |s| s.threads));
        let line = format!(
            "{role}: RSS {} -> {} kB (max {}, trend {slope:+.0} kB/min), fds {} -> {} (max {}), \
             threads {} -> {} (max {})",
            rss.0,
            rss.1,
            all(|s| s.rss_kb),
            fds.0,
            fds.1,
            all(|s| s.fds),
            threads.0,
            threads.1,
            all(|s| s.threads)
        );
        eprintln!("soak: {line}");
        writeln!(summary, "{line}").unwrap();
        let rss_slack = RSS_SLACK_KB.max(rss.0 * RSS_SLACK_PCT / 100);
        if rss.0 == 0 || rss.1 > rss.0 + rss_slack {
            failures.push(format!(
                "{role}: RSS grew {} -> {} kB (slack {rss_slack})",
                rss.0, rss.1
            ));
        }
        if fds.1 > fds.0 + FD_SLACK {
            failures.push(format!("{role}: descriptors grew {} -> {}", fds.0, fds.1));
        }
        if threads.1 > threads.0 + THREAD_SLACK {
            failures.push(format!(
                "{role}: threads grew {} -> {}",
                threads.0, threads.1
            ));
        }
    }

    // ---- files ------------------------------------------------------------
    let dir = out_dir();
    let mut csv = String::from("t,role,pid,rss_kb,fds,threads\n");
    for s in &samples {
        writeln!(
            csv,
            "{:.1},{},{},{},{},{}",
            s.t, s.role, s.pid, s.rss_kb, s.fds, s.threads
        )
        .unwrap();
    }
    std::fs::write(dir.join("samples.csv"), csv).unwrap();
    let mut faults_csv = String::from("fault,start,end,recovered,detail\n");
    for f in &injected {
        writeln!(
            faults_csv,
            "{},{:.2},{:.2},{:.2},{}",
            f.fault.name(),
            f.start,
            f.end,
            f.recovered,
            f.detail
        )
        .unwrap();
    }
    std::fs::write(dir.join("faults.csv"), faults_csv).unwrap();
    writeln!(
        summary,
        "{:.0} s, {} faults, {} failures",
        end_of_run,
        injected.len(),
        failures.len()
    )
    .unwrap();
    for f in &failures {
        writeln!(summary, "FAILED {f}").unwrap();
    }
    std::fs::write(dir.join("summary.txt"), &summary).unwrap();
    std::fs::write(dir.join("soak.svg"), plot(&samples, &injected, end_of_run)).unwrap();
    eprintln!("soak: files in {}", dir.display());
    assert!(failures.is_empty(), "soak failed:\n{}", failures.join("\n"));
}

/// The least-squares slope of `points` (seconds, kB), per minute.
fn slope_per_minute(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(x, y), p| (x + p.0 / n, y + p.1 / n));
    let (sxy, sxx) = points.iter().fold((0.0, 0.0), |(sxy, sxx), p| {
        (sxy + (p.0 - mx) * (p.1 - my), sxx + (p.0 - mx) * (p.0 - mx))
    });
    if sxx == 0.0 {
        0.0
    } else {
        60.0 * sxy / sxx
    }
}

/// A panel of the plot: its title and the value it shows.
type Panel = (&'static str, fn(&Sample) -> f64);

/// Three panels (RSS in MB, descriptors, threads) against time, one line
/// per process role, fault windows shaded: a small SVG written by hand.
fn plot(samples: &[Sample], injected: &[Injected], end: f64) -> String {
    const W: f64 = 900.0;
    const PANEL: f64 = 220.0;
    const LEFT: f64 = 70.0;
    const RIGHT: f64 = 150.0;
    const TOP: f64 = 30.0;
    const GAP: f64 = 50.0;
    const COLORS: [&str; 8] = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    ];
    let panels: [Panel; 3] = [
        ("RSS (MB)", |s| s.rss_kb as f64 / 1024.0),
        ("open descriptors", |s| s.fds as f64),
        ("threads", |s| s.threads as f64),
    ];
    let mut roles: Vec<&str> = samples.iter().map(|s| s.role).collect();
    roles.sort_unstable();
    roles.dedup();
    let h = TOP + 3.0 * (PANEL + GAP);
    let pw = W - LEFT - RIGHT;
    let x = |t: f64| LEFT + pw * t / end.max(1.0);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{h}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" \
         fill=\"white\"/>\n<text x=\"{LEFT}\" y=\"18\" font-size=\"14\">fabriq soak: {:.0} s, \
         {} faults (shaded), every fabriq process sampled once a second</text>\n",
        end,
        injected.len()
    );
    for (i, (title, value)) in panels.iter().enumerate() {
        let y0 = TOP + i as f64 * (PANEL + GAP) + 10.0;
        let max = samples.iter().map(value).fold(1.0, f64::max) * 1.1;
        let y = |v: f64| y0 + PANEL - PANEL * v / max;
        for f in injected {
            writeln!(
                svg,
                "<rect x=\"{:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{PANEL}\" fill=\"#eee\"/>",
                x(f.start),
                (x(f.end) - x(f.start)).max(1.0)
            )
            .unwrap();
        }
        writeln!(
            svg,
            "<rect x=\"{LEFT}\" y=\"{y0:.1}\" width=\"{pw}\" height=\"{PANEL}\" fill=\"none\" \
             stroke=\"black\"/>\n<text x=\"{LEFT}\" y=\"{:.1}\">{title}</text>",
            y0 - 4.0
        )
        .unwrap();
        for tick in 0..=4 {
            let v = max * tick as f64 / 4.0;
            writeln!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v:.0}</text>",
                LEFT - 6.0,
                y(v) + 4.0
            )
            .unwrap();
        }
        for tick in 0..=5 {
            let t = end * tick as f64 / 5.0;
            writeln!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{t:.0} s</text>",
                x(t),
                y0 + PANEL + 16.0
            )
            .unwrap();
        }
        for (c, role) in roles.iter().enumerate() {
            let points: Vec<String> = samples
                .iter()
                .filter(|s| s.role == *role)
                .map(|s| format!("{:.1},{:.1}", x(s.t), y(value(s))))
                .collect();
            writeln!(
                svg,
                "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>",
                COLORS[c % COLORS.len()],
                points.join(" ")
            )
            .unwrap();
            if i == 0 {
                writeln!(
                    svg,
                    "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{}\">{role}</text>",
                    W - RIGHT + 10.0,
                    y0 + 14.0 + 16.0 * c as f64,
                    COLORS[c % COLORS.len()]
                )
                .unwrap();
            }
        }
    }
    svg.push_str("</svg>\n");
    svg
}
