//! How a command fails, and the exit status that goes with it.

use std::fmt;

/// A failure that ends the command.
#[derive(Debug)]
pub enum CliError {
    /// The command line asks for something impossible (exit status 2).
    Usage(String),
    /// Something went wrong while running (exit status 1).
    Runtime(String),
}

impl CliError {
    /// The process exit status for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Runtime(_) => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Runtime(m) => f.write_str(m),
        }
    }
}

/// The library's error with the detail it recorded for it, e.g.
/// `Invalid argument: tcp endpoint "tcp://x" has no port`.
pub fn describe(e: fabriq::Error) -> String {
    match fabriq::last_error_detail() {
        Some(detail) if !detail.is_empty() => format!("{}: {detail}", e.message()),
        _ => e.message().to_string(),
    }
}

/// A runtime failure of a library call: `what` failed, with the details.
pub fn runtime(what: &str, e: fabriq::Error) -> CliError {
    CliError::Runtime(format!("{what}: {}", describe(e)))
}

/// How a run that did not fail ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// Everything asked for was done.
    Done,
    /// `--timeout` passed; `unmet` says what was left undone, if anything
    /// that was asked for (a count, a reply, an unsent message).
    TimedOut {
        /// What was left undone.
        unmet: Option<String>,
    },
    /// Ctrl-C.
    Interrupted,
}

impl Ending {
    /// The process exit status.
    pub fn exit_code(&self) -> u8 {
        match self {
            Ending::Done | Ending::TimedOut { unmet: None } => 0,
            Ending::TimedOut { unmet: Some(_) } => 1,
            Ending::Interrupted => 130,
        }
    }
}
