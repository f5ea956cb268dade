//! Every expected non-pass of the matrix, in one table, each with its
//! reason. A cell listed here that passes is an error too (unless
//! [`Why::Flaky`]), so the table stays true.

use crate::adapter::Transport;
use crate::matrix::Column;

/// Why a cell is expected not to pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// libzmq itself does not do what its documentation or spec tests
    /// say (evidence in the reason).
    LibzmqDefect,
    /// Passes or fails from run to run (evidence in the reason). Either
    /// outcome is accepted.
    Flaky,
    /// fabriq differs from libzmq on purpose.
    Deliberate,
    /// fabriq does not implement this (yet).
    NotImplemented,
    /// A fabriq bug found by this suite, for the lead to fix; the
    /// expectation flips when it is fixed.
    FabriqBug,
}

impl Why {
    /// Name used in the report.
    pub fn name(self) -> &'static str {
        match self {
            Why::LibzmqDefect => "libzmq defect",
            Why::Flaky => "flaky",
            Why::Deliberate => "deliberate difference",
            Why::NotImplemented => "not implemented in fabriq",
            Why::FabriqBug => "fabriq bug",
        }
    }
}

/// Which columns an expectation covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cols {
    /// One column.
    Only(Column),
    /// Every column in which fabriq plays side A.
    FabriqA,
    /// Every column in which fabriq plays side B.
    FabriqB,
    /// Every column in which fabriq takes part.
    AnyFabriq,
}

impl Cols {
    fn covers(self, c: Column) -> bool {
        match self {
            Cols::Only(x) => x == c,
            Cols::FabriqA => c.a == crate::adapter::Impl::Fabriq,
            Cols::FabriqB => c.b == crate::adapter::Impl::Fabriq,
            Cols::AnyFabriq => c.a == crate::adapter::Impl::Fabriq || c.b == crate::adapter::Impl::Fabriq,
        }
    }
}

/// One expected non-pass.
#[derive(Clone, Copy, Debug)]
pub struct Expected {
    /// Scenario name.
    pub scenario: &'static str,
    /// Columns covered.
    pub cols: Cols,
    /// Transports covered (empty: all).
    pub transports: &'static [Transport],
    /// Kind.
    pub why: Why,
    /// The reason, with evidence.
    pub reason: &'static str,
}

/// The table.
pub const EXPECTED: &[Expected] = &[];

/// The expectation for one run, if any.
pub fn lookup(scenario: &str, column: Column, t: Transport) -> Option<&'static Expected> {
    EXPECTED.iter().find(|e| {
        e.scenario == scenario
            && e.cols.covers(column)
            && (e.transports.is_empty() || e.transports.contains(&t))
    })
}
