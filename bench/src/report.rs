//! `report`: docs/performance.md from a results JSON: machine, method,
//! the full table with the A/A band, the plots, the targets (MET / MISSED
//! / NOT MEASURED) and the hand-written optimisation history.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::cli::{Mode, ReportArgs};
use crate::results::{Results, ScenarioResult};
use crate::scenario::{Pattern, Transport};
use crate::stats::{errors, summarize, Metric, MetricSummary};
use crate::table::{fig, ratio};

/// Runs `report`.
pub fn run(args: &ReportArgs) -> Result<(), String> {
    let results = Results::load(&args.results)?;
    let out_dir = args
        .out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let plots = args.plots.clone().unwrap_or_else(|| out_dir.join("perf"));
    let files = crate::plot::write_all(&results, &plots)?;
    let rel = relative(&plots, &out_dir);
    let notes = std::fs::read_to_string(&args.notes).ok();
    let fabric_notes = std::fs::read_to_string(&args.fabric_notes).ok();
    let mut text = render(&results, &files, &rel, notes.as_deref(), &args.results);
    text.push_str(&render_fabric(&results, fabric_notes.as_deref()));
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("create {}: {e}", out_dir.display()))?;
    std::fs::write(&args.out, text).map_err(|e| format!("write {}: {e}", args.out.display()))?;
    println!(
        "wrote {} and {} plot(s) in {}",
        args.out.display(),
        files.len(),
        plots.display()
    );
    Ok(())
}

/// `plots` relative to `base` when it is inside it, else as given.
fn relative(plots: &Path, base: &Path) -> String {
    plots
        .strip_prefix(base)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| plots.display().to_string())
}

/// What a target compares fabriq with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reference {
    /// B/A, with A'/A as the noise band.
    Libzmq,
    /// B/C, with C'/C as the noise band.
    Omq,
    /// B/floor (the raw byte stream), with A'/A as the noise band.
    Floor,
}

/// A target: a scope of scenarios, a metric, a ratio and a bound.
struct Target {
    text: &'static str,
    metric: Metric,
    reference: Reference,
    at_least: bool,
    bound: f64,
    scope: fn(&ScenarioResult) -> bool,
}

/// PUSH/PULL and PUB/SUB (any subscriber count) over tcp or ipc, in a
/// range of sizes (NULL mechanism: not the CURVE scenarios).
fn stream_rows(s: &ScenarioResult, sizes: std::ops::RangeInclusive<usize>) -> bool {
    let sc = &s.scenario;
    matches!(sc.pattern, Pattern::Pushpull | Pattern::Pubsub)
        && matches!(sc.transport, Transport::Tcp | Transport::Ipc)
        && sizes.contains(&sc.size)
}

/// REQ/REP over tcp and ipc, as users run it by default (not the busy
/// variant, which has its own rows).
fn reqrep(s: &ScenarioResult) -> bool {
    s.scenario.pattern == Pattern::Reqrep
        && matches!(s.scenario.transport, Transport::Tcp | Transport::Ipc)
        && s.scenario.variant == crate::scenario::FabricVariant::Default
}

/// Every scenario of the libzmq-compatible transports (the fabric ones
/// have no libzmq or omq side).
fn zmq_rows(s: &ScenarioResult) -> bool {
    matches!(
        s.scenario.transport,
        Transport::Tcp | Transport::Ipc | Transport::Inproc
    )
}

/// Issue 12's targets, then issue 13's CURVE ones: medians of
/// per-repetition ratios, same run.
const TARGETS: &[Target] = &[
    Target {
        text: "PUSH/PULL and PUB/SUB over tcp and ipc, 8 B-1 MiB: >= omq msg/s",
        metric: Metric::MsgPerS,
        reference: Reference::Omq,
        at_least: true,
        bound: 1.0,
        scope: |s| stream_rows(s, 8..=1 << 20),
    },
    Target {
        text: "PUSH/PULL and PUB/SUB over tcp and ipc, 8-256 B: >= 2.0x libzmq msg/s",
        metric: Metric::MsgPerS,
        reference: Reference::Libzmq,
        at_least: true,
        bound: 2.0,
        scope: |s| stream_rows(s, 8..=256),
    },
    Target {
        text: "PUSH/PULL and PUB/SUB over tcp and ipc, 64 KiB-1 MiB: >= 0.85x the raw floor",
        metric: Metric::MsgPerS,
        reference: Reference::Floor,
        at_least: true,
        bound: 0.85,
        scope: |s| stream_rows(s, 65536..=1 << 20),
    },
    Target {
        text: "REQ/REP round trip p50 over tcp and ipc: <= 0.8x libzmq's time",
        metric: Metric::P50,
        reference: Reference::Libzmq,
        at_least: false,
        bound: 0.8,
        scope: reqrep,
    },
    Target {
        text: "REQ/REP round trip p99 over tcp and ipc: <= 0.8x libzmq's time",
        metric: Metric::P99,
        reference: Reference::Libzmq,
        at_least: false,
        bound: 0.8,
        scope: reqrep,
    },
    Target {
        text: "REQ/REP round trip p50 over tcp and ipc: <= omq's time",
        metric: Metric::P50,
        reference: Reference::Omq,
        at_least: false,
        bound: 1.0,
        scope: reqrep,
    },
    Target {
        text: "REQ/REP round trip p99 over tcp and ipc: <= omq's time",
        metric: Metric::P99,
        reference: Reference::Omq,
        at_least: false,
        bound: 1.0,
        scope: reqrep,
    },
    Target {
        text: "inproc PUSH/PULL and PUB/SUB, 8-1024 B: >= 2.0x libzmq msg/s",
        metric: Metric::MsgPerS,
        reference: Reference::Libzmq,
        at_least: true,
        bound: 2.0,
        scope: |s| {
            let sc = &s.scenario;
            sc.is_throughput() && sc.transport == Transport::Inproc && (8..=1024).contains(&sc.size)
        },
    },
    Target {
        text: "CPU per message <= libzmq's (every scenario)",
        metric: Metric::CpuPerMsg,
        reference: Reference::Libzmq,
        at_least: false,
        bound: 1.0,
        scope: zmq_rows,
    },
    Target {
        text: "CPU per message <= omq's (every scenario)",
        metric: Metric::CpuPerMsg,
        reference: Reference::Omq,
        at_least: false,
        bound: 1.0,
        scope: zmq_rows,
    },
    Target {
        text: "peak RSS not above libzmq's (every scenario)",
        metric: Metric::PeakRss,
        reference: Reference::Libzmq,
        at_least: false,
        bound: 1.0,
        scope: zmq_rows,
    },
    Target {
        text: "CURVE PUSH/PULL over tcp, 64 B-64 KiB: >= libzmq msg/s (libzmq5 with CURVE)",
        metric: Metric::MsgPerS,
        reference: Reference::Libzmq,
        at_least: true,
        bound: 1.0,
        scope: |s| s.scenario.pattern == Pattern::Curve && (64..=65536).contains(&s.scenario.size),
    },
    Target {
        text: "CURVE handshakes per second over tcp: >= libzmq's (libzmq5 with CURVE)",
        metric: Metric::MsgPerS,
        reference: Reference::Libzmq,
        at_least: true,
        bound: 1.0,
        scope: |s| s.scenario.pattern == Pattern::CurveHandshake,
    },
];

/// Evaluates one target: (status, evidence).
fn evaluate(t: &Target, results: &Results) -> (String, String) {
    let mut rows = Vec::new();
    let mut aa = Vec::new();
    for sr in results.scenarios.iter().filter(|s| (t.scope)(s)) {
        let s = summarize(sr, t.metric);
        let (r, band) = match t.reference {
            Reference::Libzmq => (s.b_over_a, s.a2_over_a),
            Reference::Omq => (s.b_over_c, s.c2_over_c),
            Reference::Floor => (s.b_over_floor, s.a2_over_a),
        };
        if let Some(r) = r {
            rows.push((sr.key.clone(), r.median));
        }
        if let Some(band) = band {
            aa.push((band.min, band.max));
        }
    }
    if rows.is_empty() {
        return (
            "NOT MEASURED".into(),
            "no scenario of this scope in these results".into(),
        );
    }
    let meets = |x: f64| {
        if t.at_least {
            x >= t.bound
        } else {
            x <= t.bound
        }
    };
    let met = rows.iter().filter(|(_, r)| meets(*r)).count();
    let worst = rows
        .iter()
        .cloned()
        .reduce(|a, b| {
            let a_worse = if t.at_least { a.1 <= b.1 } else { a.1 >= b.1 };
            if a_worse {
                a
            } else {
                b
            }
        })
        .expect("non-empty");
    let mut evidence = format!(
        "{met} of {} scenario(s) meet it; worst {}: {:.2}x",
        rows.len(),
        worst.0,
        worst.1
    );
    if !aa.is_empty() {
        let lo = aa.iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
        let hi = aa.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
        let band = if t.reference == Reference::Omq {
            "C'/C"
        } else {
            "A/A"
        };
        let _ = write!(evidence, "; {band} band in scope {lo:.2}-{hi:.2}");
        if t.metric != Metric::PeakRss && worst.1 >= lo && worst.1 <= hi {
            evidence.push_str(" (worst case inside the noise band)");
        }
    }
    let status = if met == rows.len() { "MET" } else { "MISSED" };
    (status.into(), evidence)
}

fn metrics_for(sr: &ScenarioResult) -> Vec<Metric> {
    let mut v = if sr.scenario.is_throughput() {
        vec![Metric::MsgPerS, Metric::MbPerS]
    } else if sr.scenario.pattern == Pattern::CurveHandshake {
        vec![Metric::MsgPerS, Metric::P50, Metric::P99, Metric::P999]
    } else {
        vec![Metric::P50, Metric::P99, Metric::P999, Metric::MsgPerS]
    };
    v.extend([Metric::CpuPerMsg, Metric::PeakRss]);
    if sr.trials.iter().any(|t| {
        t.metrics
            .as_ref()
            .is_some_and(|m| m.instructions_per_msg.is_some())
    }) {
        v.push(Metric::InstrPerMsg);
    }
    v
}

/// A metric's label in the report (a rate of rounds has its own name).
fn label(pattern: Pattern, metric: Metric) -> &'static str {
    match (pattern, metric) {
        (Pattern::Reqrep, Metric::MsgPerS) => "round trips/s",
        (Pattern::CurveHandshake, Metric::MsgPerS) => "handshakes/s",
        (_, m) => m.label(),
    }
}

fn row(out: &mut String, key: &str, label: &str, s: &MetricSummary, omq: bool, errs: usize) {
    let na = |text: String| if omq { text } else { "n/a".to_string() };
    let _ = writeln!(
        out,
        "| {key} | {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        fig(s.a),
        fig(s.b),
        na(fig(s.c)),
        fig(s.floor),
        ratio(s.b_over_a),
        ratio(s.a2_over_a),
        na(ratio(s.b_over_c)),
        na(ratio(s.c2_over_c)),
        ratio(s.b_over_floor),
        if errs > 0 {
            errs.to_string()
        } else {
            String::new()
        }
    );
}

/// The Markdown text.
pub fn render(
    results: &Results,
    plots: &[String],
    plot_dir: &str,
    notes: Option<&str>,
    source: &Path,
) -> String {
    let m = &results.machine;
    let c = &results.config;
    let mut o = String::new();
    let _ = writeln!(o, "# fabriq performance\n");
    let _ = writeln!(
        o,
        "<!-- Generated by `fabriq-bench report {}`; edit bench/notes/optimisations.md, not this file. -->\n",
        source.display()
    );
    // `pinning` starts with the mode's name (see Placement::describe).
    let words = c
        .pinning
        .strip_prefix(&format!("{}: ", c.placement))
        .unwrap_or(&c.pinning);
    let _ = writeln!(
        o,
        "**placement: {}** ({words}); references: libzmq {}, {}.\n",
        c.placement,
        m.libzmq,
        if c.omq {
            format!("omq.rs ({})", m.omq)
        } else {
            "omq.rs not run".to_string()
        }
    );
    if c.mode != Mode::Full {
        let _ = writeln!(
            o,
            "> **Preliminary: a {:?} run** (fewer scenarios, repetitions or shorter trials \
             than the full run). Treat every figure below as indicative only.\n",
            c.mode
        );
    }
    let short: Vec<&str> = results
        .scenarios
        .iter()
        .filter(|s| s.scenario.reps < crate::scenario::required_reps(s.scenario.size))
        .map(|s| s.key.as_str())
        .collect();
    if c.mode == Mode::Full && !short.is_empty() {
        let _ = writeln!(
            o,
            "> **Preliminary:** {} of {} scenarios ran fewer repetitions than the method asks \
             (10 for messages up to 256 B, 5 above).\n",
            short.len(),
            results.scenarios.len()
        );
    }
    if let Some(note) = &c.note {
        let _ = writeln!(o, "> **Note:** {note}\n");
    }
    if m.build_profile != "release" {
        let _ = writeln!(
            o,
            "> **Warning:** a {} build was measured.\n",
            m.build_profile
        );
    }
    let _ = writeln!(o, "## Machine\n");
    let _ = writeln!(o, "| | |\n|---|---|");
    for (k, v) in [
        ("date (UTC)", m.date.clone()),
        ("CPU", m.cpu_model.clone()),
        (
            "CPUs online / usable",
            format!("{} / {:?}", m.cpus_online, m.cpus),
        ),
        ("kernel", m.kernel.clone()),
        ("rustc", m.rustc.clone()),
        ("build", m.build_profile.clone()),
        ("libzmq (zmq crate)", m.libzmq.clone()),
        (
            "omq.rs",
            if c.omq {
                m.omq.clone()
            } else {
                "not run".to_string()
            },
        ),
        ("fabriq", format!("{} at {}", m.fabriq, m.git_commit)),
        ("placement", c.pinning.clone()),
        ("instructions per message", c.perf.clone()),
        (
            "mode / wall time",
            format!("{:?} / {:.0} s", c.mode, c.wall_s),
        ),
        ("command", c.command_line.join(" ")),
    ] {
        let _ = writeln!(o, "| {k} | {} |", v.replace('|', "\\|"));
    }
    let _ = writeln!(o, "\n## Method\n");
    let _ = writeln!(
        o,
        "One run measures everything side by side. Each repetition runs, in this order, \
         **A** = libzmq (the `zmq` crate), **B** = fabriq, **C** = omq.rs (`omq-tokio`, its \
         blocking API), **A'** = libzmq again, **C'** = omq again, and the \
         **raw floor** (a plain TCP stream on loopback for tcp, a Unix stream socket for ipc: \
         the sender writes the messages' bytes in 256 KiB writes, the receiver counts bytes / size; \
         REQ/REP's floor is a ping-pong of the same sizes). Each side is its own process \
         (placement: {}), started by re-executing the bench binary; inproc runs both sides as \
         threads of one process, placed the same way. libzmq, fabriq and omq run the *same* \
         source (one macro, one timing loop, three crates; omq through an adapter in the \
         `zmq` crate's shape): `send(&[u8])` and `recv(&mut Message)`, linger 0, HWM 1000 for \
         PUSH/PULL, 0 (unbounded) for PUB/SUB so no subscriber drops (omq clamps 0 to 1, so it \
         gets its largest queue, 2^20 messages, and its PUB waits instead of dropping: \
         `xpub_nodrop`; see bench/notes/omq.md).\n",
        c.pinning
    );
    let _ = writeln!(
        o,
        "- Warm-up: the sender sends warm-up messages until every receiver has seen one and \
         the runner says go; receivers start the clock at the first timed message and must \
         receive exactly the timed count with the right size, else the trial is an error \
         (a receiver that waits 5 s for the next timed message reports the rest as lost, \
         and a trial whose workers have not finished after {:.0} s is killed and is an error).\n\
         - Throughput is per receiver; PUB/SUB to subscriber processes: the rate at which every \
         subscriber got every message, from the first timed message any received to the last one \
         the slowest received (inproc subscribers, threads of one process: the mean of their own \
         rates); MB/s is payload bytes (1e6).\n\
         - Latency: REQ/REP round trips after warm-up, hdrhistogram, p50 / p99 / p99.9 in us.\n\
         - CPU us/msg = user+sys seconds of all workers (getrusage, over each one's timed \
         section) per million messages; RSS = the largest worker's own peak (VmHWM: its \
         ru_maxrss would count the runner's memory too, which Linux carries across `execve`).\n\
         - Instructions per message (where `perf stat -e instructions` works): whole worker \
         processes, start-up and warm-up included, divided by the timed messages.\n\
         - Figures are medians (min-max) over repetitions; ratios are medians (min-max) of \
         per-repetition ratios B/A, A'/A (the **A/A calibration**: libzmq against itself, \
         the noise band), B/C, C'/C (omq against itself: the noise band of B/C) and B/floor. \
         A B/A inside the A/A band, or a B/C inside the C/C band, is not a result. \
         n/a: omq did not run in that scenario.\n\
         - Higher is better for msg/s and MB/s; lower for latency, CPU and RSS.\n",
        c.deadline_s
    );
    let _ = writeln!(o, "{}\n", crate::table::aa_band(results).join(" "));

    let _ = writeln!(o, "## Results\n");
    let _ = writeln!(
        o,
        "| scenario | metric | A libzmq | B fabriq | C omq | raw floor | B/A | A'/A | B/C | C'/C | B/floor | errors |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for sr in results
        .scenarios
        .iter()
        .filter(|s| !s.scenario.transport.is_fabric())
    {
        let errs = errors(sr);
        for (i, metric) in metrics_for(sr).into_iter().enumerate() {
            let key = if i == 0 {
                format!(
                    "{} ({} msgs x {} reps)",
                    sr.key, sr.scenario.count, sr.scenario.reps
                )
            } else {
                String::new()
            };
            row(
                &mut o,
                &key,
                label(sr.scenario.pattern, metric),
                &summarize(sr, metric),
                crate::table::ran_omq(sr),
                if i == 0 { errs } else { 0 },
            );
        }
    }
    let curve: Vec<&ScenarioResult> = results
        .scenarios
        .iter()
        .filter(|s| s.scenario.pattern.is_curve())
        .collect();
    if !curve.is_empty() {
        let _ = writeln!(
            o,
            "\nCURVE rows (`curve/...`: PUSH/PULL, the PULL side the CURVE server; \
             `curve-handshake/...`: each round a new CURVE REQ socket connects, completes one \
             request/reply of the size shown and closes, so handshakes/s counts completed rounds, CPU us/msg is per handshake and \
             p50 is one round): libzmq is Debian's libzmq5 loaded at run time in its own \
             worker (the `zmq` crate's libzmq has no CURVE), omq runs with its `curve` \
             feature, and there is no raw floor. What each side's sockets reported:\n"
        );
        let mut notes: Vec<String> = Vec::new();
        for sr in &curve {
            for n in crate::table::security_notes(sr) {
                if !notes.contains(&n) {
                    notes.push(n);
                }
            }
        }
        for n in notes {
            let _ = writeln!(o, "- {n}");
        }
    }
    let failed: Vec<String> = results
        .scenarios
        .iter()
        .flat_map(|sr| {
            sr.trials.iter().filter(|t| !t.ok).map(move |t| {
                format!(
                    "- {} rep {} {:?}: {}",
                    sr.key,
                    t.rep,
                    t.slot,
                    t.error.as_deref().unwrap_or("?")
                )
            })
        })
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(
            o,
            "\nFailed trials (not in the figures):\n\n{}",
            failed.join("\n")
        );
    }

    let _ = writeln!(o, "\n## Plots\n");
    if plots.is_empty() {
        let _ = writeln!(o, "No plots: too few sizes in these results.");
    }
    for p in plots {
        let _ = writeln!(o, "![{p}]({plot_dir}/{p})\n");
    }

    let _ = writeln!(o, "## Targets\n");
    let _ = writeln!(
        o,
        "Each target is judged on the median per-repetition ratio of every scenario in its \
         scope in these results: MET only if all of them meet it. NOT MEASURED means this \
         run had no scenario in scope.\n"
    );
    let _ = writeln!(o, "| target | status | evidence |\n|---|---|---|");
    for t in TARGETS {
        let (status, evidence) = evaluate(t, results);
        let _ = writeln!(o, "| {} | **{status}** | {evidence} |", t.text);
    }

    let _ = writeln!(o, "\n## What each optimisation bought\n");
    let _ = writeln!(
        o,
        "<!-- Hand-written: kept verbatim from bench/notes/optimisations.md. -->\n"
    );
    match notes {
        Some(n) => {
            let _ = writeln!(o, "{}", n.trim_end());
        }
        None => {
            let _ = writeln!(o, "_No notes yet (bench/notes/optimisations.md)._");
        }
    }
    o
}

/// The "Fabric" section: the hand-written notes (`bench/notes/fabric.md`:
/// the measured table with its commit, date and command), then the fabric
/// scenarios of these results, if any, in the fabric layout.
pub fn render_fabric(results: &Results, notes: Option<&str>) -> String {
    let fabric: Vec<&ScenarioResult> = results
        .scenarios
        .iter()
        .filter(|s| s.scenario.transport.is_fabric())
        .collect();
    if fabric.is_empty() && notes.is_none() {
        return String::new();
    }
    let mut o = String::new();
    let _ = writeln!(o, "\n## Fabric\n");
    let _ = writeln!(
        o,
        "<!-- Hand-written part: kept verbatim from bench/notes/fabric.md. -->\n"
    );
    if let Some(n) = notes {
        let _ = writeln!(o, "{}\n", n.trim_end());
    }
    if fabric.is_empty() {
        return o;
    }
    let _ = writeln!(o, "### Fabric scenarios of these results\n");
    let _ = writeln!(
        o,
        "fi_pingpong: {}. {}\n",
        if results.config.fi_pingpong.is_empty() {
            "unrecorded"
        } else {
            &results.config.fi_pingpong
        },
        crate::table::aa_band(results)
            .last()
            .cloned()
            .unwrap_or_default()
    );
    let no_p = crate::table::no_pingpong(results);
    let mut last = None;
    for sr in fabric {
        let t = sr.scenario.transport;
        if last != Some(t) {
            last = Some(t);
            let c = crate::table::fabric_columns(t);
            let _ = writeln!(
                o,
                "\n| scenario | metric | {} | {} | {} | {} | {} | {} | {} | {} | errors |\n\
                 |---|---|---|---|---|---|---|---|---|---|---|",
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
            );
        }
        let errs = errors(sr);
        for (i, metric) in crate::table::fabric_metrics(sr).into_iter().enumerate() {
            let s = summarize(sr, metric);
            let key = if i == 0 {
                format!(
                    "{} ({} msgs x {} reps)",
                    sr.key, sr.scenario.count, sr.scenario.reps
                )
            } else {
                String::new()
            };
            let p = match (s.p, no_p) {
                (None, Some(why)) => why.to_string(),
                (p, _) => fig(p),
            };
            let f = fig(s.floor);
            let _ = writeln!(
                o,
                "| {key} | {} | {} | {} | {p} | {f} | {} | {} | {} | {} | {} |",
                metric.label(),
                fig(s.b),
                fig(s.r),
                ratio(s.b_over_r),
                ratio(s.b2_over_b),
                ratio(s.b_over_p),
                ratio(s.b_over_floor),
                if i == 0 && errs > 0 {
                    errs.to_string()
                } else {
                    String::new()
                }
            );
        }
    }
    o
}
