//! `fabriq-bench`: fabriq vs libzmq vs a raw floor, interleaved, in one run.
//!
//! `fabriq-bench --quick` (about a minute), `fabriq-bench` (the full run),
//! `fabriq-bench --smoke` (every scenario once, tiny counts),
//! `fabriq-bench report target/bench/results.json` (docs/performance.md).
//! See `fabriq-bench --help`.

fn main() -> std::process::ExitCode {
    fabriq_bench::main(&[], std::env::args_os())
}
