//! The `matrix` test's main: runs the matrix, prints it, writes
//! docs/compat.md and says whether every cell is as expected.
//!
//! Environment:
//! - `FABRIQ_COMPAT_FILTER=a,b`: only scenarios whose name contains one
//!   of these (docs/compat.md is then left alone);
//! - `FABRIQ_COMPAT_TRANSPORTS=ofi+tcp,ofi+shm`: only runs on these
//!   transports (docs/compat.md is then left alone);
//! - `FABRIQ_COMPAT_THREADS=N`: pool size (default 4);
//! - `FABRIQ_COMPAT_VERBOSE=1`: also print why each expected non-pass
//!   failed this time;
//! - `FABRIQ_COMPAT_TIMES=FILE`: write every run's time to FILE (tab
//!   separated: scenario, column, transport, seconds).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::adapter::{scratch_dir, Transport};
use crate::expect::EXPECTED;
use crate::matrix::{self, transports, COLUMNS};
use crate::report;
use crate::scenario;

/// Time limit of one run (scenario × column × transport).
pub const RUN_LIMIT: Duration = Duration::from_secs(30);

/// Runs the matrix; returns the process exit code (0: all as expected).
pub fn main() -> i32 {
    // ipc://* makes its files under TMPDIR in both libraries (libzmq in
    // the current directory when TMPDIR is unset): keep them in the
    // scratch directory, which is removed at the end.
    let scratch = scratch_dir().clone();
    std::env::set_var("TMPDIR", &scratch);

    let all = Arc::new(scenario::all());
    let mut problems = check_table(&all);

    let filter: Vec<String> = std::env::var("FABRIQ_COMPAT_FILTER")
        .ok()
        .filter(|f| !f.is_empty())
        .map(|f| f.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let selected: Vec<usize> = (0..all.len())
        .filter(|&i| filter.is_empty() || filter.iter().any(|f| all[i].name.contains(f.as_str())))
        .collect();
    let mut only = Vec::new();
    for name in std::env::var("FABRIQ_COMPAT_TRANSPORTS")
        .unwrap_or_default()
        .split(',')
        .filter(|n| !n.is_empty())
    {
        match Transport::ALL.iter().find(|t| t.name() == name) {
            Some(&t) => only.push(t),
            None => problems.push(format!(
                "FABRIQ_COMPAT_TRANSPORTS: unknown transport {name:?} (known: {})",
                Transport::ALL.map(|t| t.name()).join(", ")
            )),
        }
    }
    let threads = std::env::var("FABRIQ_COMPAT_THREADS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4);

    let start = Instant::now();
    let runs = matrix::run(&all, &selected, &only, threads, RUN_LIMIT);
    let took = start.elapsed();

    println!(
        "compat matrix: {} scenarios, {} runs on {threads} threads in {:.1} s",
        selected.len(),
        runs.len(),
        took.as_secs_f64()
    );
    for (name, n) in report::column_counts(&all, &runs) {
        println!(
            "  {name:18} cells {:3}  pass {:3}  expected non-pass {:2}  unexpected {:2}  n/a {:2}",
            n[0], n[1], n[2], n[3], n[4]
        );
    }
    // Where the time goes: the sum of run times per transport (runs
    // overlap on the pool) and the slowest runs.
    let mut per_transport = String::new();
    for t in Transport::ALL {
        let of_t: Vec<_> = runs.iter().filter(|r| r.transport == t).collect();
        if !of_t.is_empty() {
            let sum: f64 = of_t.iter().map(|r| r.took.as_secs_f64()).sum();
            per_transport.push_str(&format!("  {} {} runs {sum:.1} s", t.name(), of_t.len()));
        }
    }
    println!("  run time per transport:{per_transport}");
    let mut slowest: Vec<_> = runs.iter().collect();
    slowest.sort_by_key(|r| std::cmp::Reverse(r.took));
    let slowest: Vec<String> = slowest
        .iter()
        .take(8)
        .map(|r| {
            format!(
                "{} {} {} {:.1} s",
                all[r.scenario].name,
                r.column.name(),
                r.transport.name(),
                r.took.as_secs_f64()
            )
        })
        .collect();
    println!("  slowest: {}", slowest.join(", "));
    if let Some(path) = std::env::var_os("FABRIQ_COMPAT_TIMES") {
        let mut tsv = String::from("scenario\tcolumn\ttransport\tseconds\n");
        for r in &runs {
            tsv.push_str(&format!(
                "{}\t{}\t{}\t{:.3}\n",
                all[r.scenario].name,
                r.column.name(),
                r.transport.name(),
                r.took.as_secs_f64()
            ));
        }
        if let Err(e) = std::fs::write(&path, tsv) {
            problems.push(format!("writing {}: {e}", PathBuf::from(path).display()));
        }
    }
    if std::env::var_os("FABRIQ_COMPAT_VERBOSE").is_some() {
        for r in runs.iter().filter(|r| r.as_expected()) {
            if let matrix::Outcome::Fail(e) = &r.outcome {
                println!(
                    "  expected non-pass {} {} {}: {e}",
                    all[r.scenario].name,
                    r.column.name(),
                    r.transport.name()
                );
            }
        }
    }
    for r in runs.iter().filter(|r| !r.as_expected()) {
        problems.push(format!(
            "{} {} {}: {}",
            all[r.scenario].name,
            r.column.name(),
            r.transport.name(),
            match &r.outcome {
                matrix::Outcome::Pass => "passed, but is listed as an expected failure".into(),
                matrix::Outcome::Fail(e) => format!("failed: {e}"),
            }
        ));
    }

    if filter.is_empty() && only.is_empty() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let read =
            |name: &str| std::fs::read_to_string(dir.join("doc").join(name)).unwrap_or_default();
        let doc = report::markdown(&all, &runs, &read("preamble.md"), &read("appendix.md"));
        let path = dir.join("../docs/compat.md");
        if std::fs::read_to_string(&path).ok().as_deref() != Some(doc.as_str()) {
            if let Err(e) = std::fs::write(&path, doc) {
                problems.push(format!("writing {}: {e}", path.display()));
            } else {
                println!("wrote {}", path.display());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);

    if problems.is_empty() {
        println!("every cell as expected");
        0
    } else {
        println!("\n{} problem(s):", problems.len());
        for p in &problems {
            println!("  {p}");
        }
        1
    }
}

/// Entries of the expectation table that name no scenario, or cover no
/// run, are mistakes.
fn check_table(all: &[scenario::Scenario]) -> Vec<String> {
    let mut problems = Vec::new();
    for e in EXPECTED {
        for &name in e.scenarios {
            let Some(s) = all.iter().find(|s| s.name == name) else {
                problems.push(format!("expectation for unknown scenario {name}"));
                continue;
            };
            let covers_a_run = COLUMNS.iter().any(|&c| {
                transports(s, c).iter().any(|&t| {
                    crate::expect::lookup(s.name, c, t).is_some_and(|x| std::ptr::eq(x, e))
                })
            });
            if !covers_a_run {
                problems.push(format!("expectation for {name} covers no run"));
            }
        }
    }
    problems
}
