//! The matrix as Markdown (docs/compat.md) and as a summary for the
//! terminal. The text depends only on the verdicts, never on timings or
//! error texts of expected failures, so regenerating it with the same
//! results gives the same file.

use std::fmt::Write;

use crate::adapter::Transport;
use crate::expect::{Why, EXPECTED};
use crate::matrix::{has_fabric, transports, Column, Outcome, Run, COLUMNS};
use crate::scenario::{Fabric, Scenario};

/// A column of the report: the runs of one matrix column on the fabric
/// transports (`ofi+tcp`, `ofi+shm`), or on the others. The fabriq-fabriq
/// column shows as two: its tcp/ipc/inproc runs and its fabric runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// The matrix column.
    pub column: Column,
    /// The fabric transports, or the others.
    pub fabric: bool,
}

impl View {
    /// Its heading, e.g. `fabriq-fabriq` or `fabriq-fabriq ofi`.
    pub fn name(self) -> String {
        if self.fabric {
            format!("{} ofi", self.column.name())
        } else {
            self.column.name()
        }
    }

    /// Whether `t` belongs to this view.
    fn shows(self, t: Transport) -> bool {
        t.is_fabric() == self.fabric
    }
}

/// The report's columns, in order: each matrix column, the fabriq-fabriq
/// one followed by its fabric runs.
pub fn views() -> Vec<View> {
    let mut v = Vec::new();
    for column in COLUMNS {
        v.push(View {
            column,
            fabric: false,
        });
        if has_fabric(column) {
            v.push(View {
                column,
                fabric: true,
            });
        }
    }
    v
}

/// The distinct reasons for scenarios not to run on the fabric, in
/// scenario order (note `f1` is the first).
fn fabric_reasons(scenarios: &[Scenario]) -> Vec<&'static str> {
    let mut reasons = Vec::new();
    for s in scenarios {
        if let Fabric::Excluded(r) = s.fabric {
            if !reasons.contains(&r) {
                reasons.push(r);
            }
        }
    }
    reasons
}

/// The note number of a scenario's fabric exclusion, if excluded.
fn fabric_note(scenarios: &[Scenario], s: &Scenario) -> Option<usize> {
    match s.fabric {
        Fabric::Runs => None,
        Fabric::Excluded(r) => fabric_reasons(scenarios)
            .iter()
            .position(|x| *x == r)
            .map(|n| n + 1),
    }
}

/// What one cell shows for one transport.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Pass,
    /// Expected non-pass, with its note number.
    Expected(usize),
    /// Listed as flaky, with its note number (either outcome).
    Flaky(usize),
    /// Listed as an intermittent failure (either outcome).
    Intermittent(usize),
    /// Failed although it should pass.
    Fail,
    /// Passed although listed as an expected failure.
    Xpass(usize),
}

fn mark(r: &Run) -> Mark {
    let note = r.expected.map(|e| {
        EXPECTED
            .iter()
            .position(|x| std::ptr::eq(x, e))
            .unwrap_or(0)
            + 1
    });
    match (&r.outcome, r.expected, note) {
        (_, Some(e), Some(n)) if e.why == Why::Flaky => Mark::Flaky(n),
        (_, Some(e), Some(n)) if e.intermittent => Mark::Intermittent(n),
        (Outcome::Pass, None, _) => Mark::Pass,
        (Outcome::Pass, Some(_), Some(n)) => Mark::Xpass(n),
        (Outcome::Fail(_), Some(_), Some(n)) => Mark::Expected(n),
        _ => Mark::Fail,
    }
}

fn mark_text(m: Mark) -> String {
    match m {
        Mark::Pass => "pass".into(),
        Mark::Expected(n) => format!("xfail [{n}]"),
        Mark::Flaky(n) => format!("flaky [{n}]"),
        Mark::Intermittent(n) => format!("intermittent [{n}]"),
        Mark::Fail => "**FAIL**".into(),
        Mark::Xpass(n) => format!("**XPASS** [{n}]"),
    }
}

/// One cell: the transports grouped by mark, e.g. `pass: tcp ipc`.
fn cell(runs: &[&Run]) -> String {
    if runs.is_empty() {
        return "—".into();
    }
    let mut groups: Vec<(Mark, Vec<Transport>)> = Vec::new();
    for r in runs {
        let m = mark(r);
        match groups.iter_mut().find(|(g, _)| *g == m) {
            Some((_, ts)) => ts.push(r.transport),
            None => groups.push((m, vec![r.transport])),
        }
    }
    groups
        .iter()
        .map(|(m, ts)| {
            let names: Vec<&str> = ts.iter().map(|t| t.name()).collect();
            format!("{}: {}", mark_text(*m), names.join(" "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Counts per report column ([`views`]): (cells run, all pass, with
/// expected non-passes, with unexpected results, not applicable: one
/// implementation only, or excluded from the fabric).
pub fn column_counts(scenarios: &[Scenario], runs: &[Run]) -> Vec<(String, [usize; 5])> {
    views()
        .into_iter()
        .map(|v| {
            let mut n = [0usize; 5];
            for (i, s) in scenarios.iter().enumerate() {
                if !runs.iter().any(|r| r.scenario == i) {
                    continue; // not selected in this run
                }
                let cell: Vec<&Run> = runs
                    .iter()
                    .filter(|r| r.scenario == i && r.column == v.column && v.shows(r.transport))
                    .collect();
                if !transports(s, v.column).iter().any(|&t| v.shows(t)) {
                    n[4] += 1;
                    continue;
                }
                if cell.is_empty() {
                    continue;
                }
                n[0] += 1;
                let marks: Vec<Mark> = cell.iter().map(|r| mark(r)).collect();
                if marks
                    .iter()
                    .any(|m| matches!(m, Mark::Fail | Mark::Xpass(_)))
                {
                    n[3] += 1;
                } else if marks.iter().all(|m| *m == Mark::Pass) {
                    n[1] += 1;
                } else {
                    n[2] += 1;
                }
            }
            (v.name(), n)
        })
        .collect()
}

/// The whole document: `preamble`, the matrix, the notes, the scenario
/// list, `appendix`.
pub fn markdown(scenarios: &[Scenario], runs: &[Run], preamble: &str, appendix: &str) -> String {
    let mut out = String::new();
    out.push_str(preamble.trim_end());
    out.push_str("\n\n## Matrix\n\n");
    out.push_str(
        "Columns name the implementation of side A (usually the binder) and side B \
         (usually the connecter). `fabriq-fabriq ofi` is fabriq on both sides over the \
         fabric transports `ofi+tcp` and `ofi+shm` (libzmq has no fabric, so no other \
         column has them). A cell lists the transports each verdict applies to; \
         `xfail [n]` is an expected non-pass explained in note n below, `—` means the \
         scenario exercises one implementation only, so the mixed columns do not apply, \
         and `excluded [fn]` that the scenario does not apply to the fabric, for reason \
         fn under \"Not run on the fabric\".\n\n",
    );
    let views = views();
    out.push_str("| scenario |");
    for v in &views {
        let _ = write!(out, " {} |", v.name());
    }
    out.push_str("\n|---|");
    for _ in &views {
        out.push_str("---|");
    }
    out.push('\n');
    for (i, s) in scenarios.iter().enumerate() {
        let _ = write!(out, "| `{}` |", s.name);
        for v in &views {
            let cell_runs: Vec<&Run> = runs
                .iter()
                .filter(|r| r.scenario == i && r.column == v.column && v.shows(r.transport))
                .collect();
            let text = match fabric_note(scenarios, s) {
                Some(f) if v.fabric && cell_runs.is_empty() => format!("excluded [f{f}]"),
                _ => cell(&cell_runs),
            };
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }

    out.push_str("\n### Summary\n\n");
    out.push_str(
        "| column | cells run | pass | expected non-pass | unexpected | not applicable |\n",
    );
    out.push_str("|---|---|---|---|---|---|\n");
    for (name, n) in column_counts(scenarios, runs) {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} |",
            n[0], n[1], n[2], n[3], n[4]
        );
    }
    let total: usize = runs.len();
    let _ = writeln!(
        out,
        "\n{} scenarios, {} runs (scenario × column × transport).",
        scenarios.len(),
        total
    );

    out.push_str("\n## Expected non-passes\n\n");
    if EXPECTED.is_empty() {
        out.push_str("None.\n");
    }
    for (n, e) in EXPECTED.iter().enumerate() {
        let cols = match e.cols {
            crate::expect::Cols::Only(c) => c.name(),
            crate::expect::Cols::FabriqA => "fabriq as side A".into(),
            crate::expect::Cols::FabriqB => "fabriq as side B".into(),
            crate::expect::Cols::AnyFabriq => "every column with fabriq".into(),
            crate::expect::Cols::LibzmqA => "libzmq as side A".into(),
            crate::expect::Cols::LibzmqB => "libzmq as side B".into(),
        };
        let ts = if e.transports.is_empty() {
            "all transports".to_string()
        } else {
            e.transports
                .iter()
                .map(|t| t.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "{}. **{}{}** — {}; {}; {}: {}",
            n + 1,
            e.why.name(),
            if e.intermittent { ", intermittent" } else { "" },
            e.scenarios
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", "),
            cols,
            ts,
            e.reason
        );
    }

    out.push_str("\n## Not run on the fabric\n\n");
    out.push_str(
        "Every scenario runs on `ofi+tcp` and `ofi+shm` in the fabriq-fabriq column \
         unless it is listed here (`fabric: Fabric::Excluded(reason)` in its definition, \
         `compat-tests/src/scenario/`).\n\n",
    );
    for (n, reason) in fabric_reasons(scenarios).iter().enumerate() {
        let names: Vec<String> = scenarios
            .iter()
            .filter(|s| s.fabric == Fabric::Excluded(reason))
            .map(|s| format!("`{}`", s.name))
            .collect();
        let _ = writeln!(out, "- **f{}** — {}: {}.", n + 1, names.join(", "), reason);
    }

    let unexpected: Vec<&Run> = runs.iter().filter(|r| !r.as_expected()).collect();
    if !unexpected.is_empty() {
        out.push_str("\n## Unexpected results of this run\n\n");
        for r in unexpected {
            let what = match &r.outcome {
                Outcome::Pass => "passed although listed as an expected failure".to_string(),
                Outcome::Fail(e) => e.replace('\n', " "),
            };
            let _ = writeln!(
                out,
                "- `{}` {} {}: {}",
                scenarios[r.scenario].name,
                r.column.name(),
                r.transport.name(),
                what
            );
        }
    }

    out.push_str("\n## Scenarios\n\n| scenario | checks | transports |\n|---|---|---|\n");
    for s in scenarios {
        let mut ts: Vec<String> = s.transports.iter().map(|t| t.name().to_string()).collect();
        match fabric_note(scenarios, s) {
            None => ts.extend(crate::adapter::FABRIC.iter().map(|t| t.name().to_string())),
            Some(f) => ts.push(format!("(not ofi: f{f})")),
        }
        let one = if s.sides == crate::scenario::Sides::One {
            " (one implementation)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "| `{}` | {}{} | {} |",
            s.name,
            s.about,
            one,
            ts.join(" ")
        );
    }
    out.push('\n');
    out.push_str(appendix.trim_end());
    out.push('\n');
    out
}
