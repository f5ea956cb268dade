//! fabriq-bench: fabriq measured side by side with libzmq, with omq.rs and
//! with a raw byte-stream floor, in one run, interleaved.
//!
//! One library, two front doors: the `fabriq-bench` binary and the
//! `fabriq bench` subcommand both call [`main`]. A run re-executes the
//! current executable as hidden `worker` processes (one per side, unpinned
//! unless `--pin` says otherwise), collects one JSON line from each, and writes a table
//! on stdout, every raw trial to a JSON file and SVG plots beside it.
//! `report` turns such a JSON file into `docs/performance.md`.
//!
//! Modules, by what they hold:
//! * [`cli`]: the command line;
//! * [`scenario`]: what is measured (patterns, transports, sizes, counts);
//! * [`runner`]: the orchestrator: spawns workers, interleaves A B C A' C' floor
//!   (fabric scenarios: B R B' fi_pingpong floor);
//! * [`placement`]: which CPUs each worker process may use (`--pin`);
//! * [`worker`]: the worker processes' entry point and protocol;
//! * [`zmqlike`]: libzmq, fabriq and omq sides (one source, one timing loop);
//! * [`omqzmq`]: omq.rs's blocking API in the `zmq` crate's shape;
//! * [`security`]: CURVE keys and each library's CURVE socket options;
//! * [`syszmq`]: the system's libzmq5 (with CURVE), loaded at run time;
//! * [`raw`]: the raw TCP / Unix-stream floor;
//! * [`pingpong`]: the fabric's spinning ping-pong floor, libfabric's
//!   `fi_pingpong`;
//! * [`fifloor`]: the fabric's own floor through fabriq-ofi (streaming,
//!   and a ping-pong that waits the way fabriq waits);
//! * [`sys`]: CPU affinity, rusage, perf;
//! * [`stats`]: medians, per-pair ratios, the A/A band;
//! * [`results`]: the JSON results file;
//! * [`machine`]: the machine description;
//! * [`table`]: the stdout table;
//! * [`plot`]: SVG plots;
//! * [`report`]: writes `docs/performance.md`.

#![warn(missing_docs)]

pub mod cli;
pub mod fifloor;
pub mod machine;
pub mod omqzmq;
pub mod pingpong;
pub mod placement;
pub mod plot;
pub mod raw;
pub mod report;
pub mod results;
pub mod runner;
pub mod scenario;
pub mod security;
pub mod stats;
pub mod sys;
pub mod syszmq;
pub mod table;
pub mod worker;
pub mod zmqlike;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

/// Runs the bench command line.
///
/// `self_args` are the arguments that make the current executable run the
/// bench again (empty for `fabriq-bench`, `["bench"]` for `fabriq`): workers
/// are started as `current_exe self_args... worker SPEC`. `args` are the
/// arguments after them, starting with the program name as clap expects.
pub fn main<I, T>(self_args: &[&str], args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match cli::BenchCli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Some(cli::Sub::Worker { spec }) => return worker::main(&spec),
        Some(cli::Sub::Report(args)) => report::run(&args),
        None => runner::run(self_args, &cli.run),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fabriq-bench: error: {e}");
            ExitCode::from(1)
        }
    }
}
