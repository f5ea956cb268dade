//! Runs every scenario in every column on every transport that applies,
//! in parallel on a small pool, each run with a time limit.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::adapter::{Impl, Transport, FABRIC};
use crate::expect::{self, Expected};
use crate::scenario::{Fabric, Pair, Scenario, Sides};

/// One column of the matrix: the implementation of side A and of side B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Column {
    /// Side A (usually the binder).
    pub a: Impl,
    /// Side B (usually the connecter).
    pub b: Impl,
}

impl Column {
    /// `A-B`, e.g. `fabriq-libzmq`.
    pub fn name(self) -> String {
        format!("{}-{}", self.a.name(), self.b.name())
    }

    /// Both sides on one implementation.
    pub fn is_pure(self) -> bool {
        self.a == self.b
    }
}

/// libzmq on both sides.
pub const LIBZMQ_LIBZMQ: Column = Column {
    a: Impl::Libzmq,
    b: Impl::Libzmq,
};
/// fabriq on both sides.
pub const FABRIQ_FABRIQ: Column = Column {
    a: Impl::Fabriq,
    b: Impl::Fabriq,
};
/// fabriq on side A, libzmq on side B.
pub const FABRIQ_LIBZMQ: Column = Column {
    a: Impl::Fabriq,
    b: Impl::Libzmq,
};
/// libzmq on side A, fabriq on side B.
pub const LIBZMQ_FABRIQ: Column = Column {
    a: Impl::Libzmq,
    b: Impl::Fabriq,
};

/// The columns, in report order.
pub const COLUMNS: [Column; 4] = [LIBZMQ_LIBZMQ, FABRIQ_FABRIQ, FABRIQ_LIBZMQ, LIBZMQ_FABRIQ];

/// What one run (scenario, column, transport) did.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// It passed.
    Pass,
    /// It failed, saying why.
    Fail(String),
}

/// One run and its verdict against the expectations.
#[derive(Clone, Debug)]
pub struct Run {
    /// Scenario index in [`crate::scenario::all`].
    pub scenario: usize,
    /// Column.
    pub column: Column,
    /// Transport.
    pub transport: Transport,
    /// What happened.
    pub outcome: Outcome,
    /// The expectation, if the run is listed as an expected non-pass.
    pub expected: Option<&'static Expected>,
    /// How long it took (printed by the runner, never in the report).
    pub took: Duration,
}

impl Run {
    /// Whether the run agrees with the expectations: passes if not listed,
    /// fails if listed (either for flaky ones).
    pub fn as_expected(&self) -> bool {
        match (&self.outcome, self.expected) {
            (_, Some(e)) if e.either_outcome() => true,
            (Outcome::Pass, None) => true,
            (Outcome::Fail(_), Some(_)) => true,
            _ => false,
        }
    }
}

/// Whether a column has the fabric transports: fabriq on both sides only,
/// since libzmq has no fabric.
pub fn has_fabric(c: Column) -> bool {
    c == FABRIQ_FABRIQ
}

/// The transports a scenario runs on in a column (none: skipped): its own
/// list (inproc only within one implementation), then, in the fabriq-fabriq
/// column, the fabric transports unless the scenario is excluded from them.
pub fn transports(s: &Scenario, c: Column) -> Vec<Transport> {
    if s.sides == Sides::One && !c.is_pure() {
        return Vec::new();
    }
    let mut ts: Vec<Transport> = s
        .transports
        .iter()
        .copied()
        .filter(|&t| t != Transport::Inproc || c.is_pure())
        .collect();
    if has_fabric(c) && s.fabric == Fabric::Runs {
        ts.extend_from_slice(FABRIC);
    }
    ts
}

/// Runs `scenarios` (indices into `all`) on the transports in `only`
/// (empty: every one) on `threads` workers, each run limited to `limit`.
/// Returns the runs in a fixed order.
pub fn run(
    all: &Arc<Vec<Scenario>>,
    selected: &[usize],
    only: &[Transport],
    threads: usize,
    limit: Duration,
) -> Vec<Run> {
    let mut jobs = VecDeque::new();
    for &s in selected {
        for c in COLUMNS {
            for t in transports(&all[s], c) {
                if only.is_empty() || only.contains(&t) {
                    jobs.push_back((s, c, t));
                }
            }
        }
    }
    // Longest first, so the pool does not end on one slow run.
    let slow = [
        "message_64mib",
        "many_peers",
        "pub_hwm_drops",
        "message_sizes",
    ];
    let mut v: Vec<_> = jobs.into_iter().collect();
    v.sort_by_key(|&(s, _, _)| !slow.contains(&all[s].name));
    let jobs = Arc::new(Mutex::new(v.into_iter().collect::<VecDeque<_>>()));
    let results = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    for _ in 0..threads.max(1) {
        let (jobs, results, all) = (jobs.clone(), results.clone(), all.clone());
        workers.push(thread::spawn(move || loop {
            let Some((s, c, t)) = jobs.lock().unwrap().pop_front() else {
                return;
            };
            let start = std::time::Instant::now();
            let outcome = run_one(&all, s, c, t, limit);
            let took = start.elapsed();
            let run = Run {
                scenario: s,
                column: c,
                transport: t,
                outcome,
                expected: expect::lookup(all[s].name, c, t),
                took,
            };
            if !run.as_expected() {
                eprintln!(
                    "UNEXPECTED {} {} {}: {:?}",
                    all[s].name,
                    c.name(),
                    t.name(),
                    run.outcome
                );
            }
            results.lock().unwrap().push(run);
        }));
    }
    for w in workers {
        w.join().expect("matrix worker panicked");
    }
    let mut runs = std::mem::take(&mut *results.lock().unwrap());
    runs.sort_by_key(|r| {
        (
            r.scenario,
            COLUMNS.iter().position(|&c| c == r.column),
            r.transport,
        )
    });
    runs
}

/// Runs one scenario in a thread of its own and waits at most `limit`;
/// a scenario that hangs is abandoned (its thread leaks) and fails.
fn run_one(
    all: &Arc<Vec<Scenario>>,
    s: usize,
    c: Column,
    t: Transport,
    limit: Duration,
) -> Outcome {
    let (tx, rx) = mpsc::channel();
    let all = all.clone();
    let spawned = thread::Builder::new()
        .name(format!("{}:{}:{}", all[s].name, c.name(), t.name()))
        .spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let pair = Pair::new(c.a, c.b);
                (all[s].run)(&pair, t)
            }));
            let outcome = match result {
                Ok(Ok(())) => Outcome::Pass,
                Ok(Err(e)) => Outcome::Fail(e),
                Err(p) => Outcome::Fail(format!(
                    "panicked: {}",
                    p.downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| p.downcast_ref::<&str>().copied())
                        .unwrap_or("?")
                )),
            };
            let _ = tx.send(outcome);
        });
    if let Err(e) = spawned {
        return Outcome::Fail(format!("could not start the scenario thread: {e}"));
    }
    match rx.recv_timeout(limit) {
        Ok(outcome) => outcome,
        Err(_) => Outcome::Fail(format!("timed out after {} s", limit.as_secs())),
    }
}
