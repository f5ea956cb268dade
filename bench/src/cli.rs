//! The bench command line (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const AFTER_HELP: &str = "\
Modes:
  --quick   about a minute: PUSH/PULL tcp 64 B, 1 KiB, 64 KiB, REQ/REP tcp 1 B,
            PUSH/PULL inproc 64 B; 5 interleaved repetitions of short trials
  (none)    the full run: PUSH/PULL 8 B..1 MiB and PUB/SUB (1 and 4
            subscribers) and REQ/REP 1 B, 1 KiB, 64 KiB over tcp, ipc, inproc;
            >= 5 repetitions (>= 10 for messages <= 256 B); about 10-15 minutes
  --smoke   every scenario and implementation once with tiny counts (CI)

Fabric (--fabric, or --transport ofi+shm / ofi+tcp; not in the default run):
  ofi+shm and ofi+tcp: REQ/REP 64 B (one-way latency = half the round trip)
  and PUSH/PULL 64 B, 64 KiB, 256 KiB, 1 MiB (quick: 64 B, 64 KiB, 1 MiB),
  and in full runs PUB/SUB 64 B and 64 KiB to 1, 4 and 16 subscribers.
  Each repetition runs B = fabriq over the fabric, R = fabriq over the same
  host's own transport (ipc:// for ofi+shm, tcp:// for ofi+tcp), B' = the
  fabric again (B'/B = noise band), P = libfabric's fi_pingpong on the
  same provider (a busy-polling ping-pong, one message in flight; its MB/s
  counts both directions) and F = libfabric itself through fabriq-ofi, no
  framing: streams keep 64 sends in flight and busy-poll (fi_rdm_bw's
  shape), ping-pongs wait the way fabriq waits (CQ wait fds, or a doorbell
  socket where the provider has none) or spin in the spin variant. No
  fi_pingpong on PATH (or at --fi-pingpong): the P column says not installed.

CURVE (--pattern curve,curve-handshake; only when named; tcp only):
  curve            PUSH/PULL with CURVE (PULL = server), 64 B, 256 B, 1 KiB,
                   16 KiB, 64 KiB (quick: 64 B, 1 KiB, 64 KiB; --sizes applies)
  curve-handshake  handshakes per second: each round a new CURVE REQ socket
                   connects, does one 64 B request/reply, closes
  A and A' are Debian's libzmq5 (4.3.4 with libsodium) loaded at run time in
  the worker playing libzmq (the zmq crate's libzmq has no CURVE): install it
  with `apt-get install -y libzmq5`, else those trials fail saying so. C is
  omq.rs with its curve feature. No raw floor. Keys: two fresh pairs per run.

Each repetition runs libzmq (A), fabriq (B), omq.rs (C), libzmq again (A',
the A/A calibration), omq again (C', omq's own A/A) and the raw floor, each
side in its own process. Placement: unpinned by default (every process free
to run on any CPU, as users run); --pin spread | split-core | same-core.

Examples:
  fabriq-bench --quick
  fabriq-bench --pattern pushpull --transport tcp --sizes 64,1024 --reps 10
  fabriq-bench --pattern curve,curve-handshake --reps 5
  fabriq-bench --out /tmp/r.json && fabriq-bench report /tmp/r.json
  fabriq-bench --quick --pin split-core   # one core per side (the old default)
  fabriq bench --quick          # the same, through the fabriq CLI
  fabriq bench --fabric         # the fabric scenarios (ofi+shm, ofi+tcp)
  fabriq bench --fabric --quick --transport ofi+shm";

/// `fabriq-bench`: fabriq vs libzmq vs omq.rs vs a raw byte-stream floor.
#[derive(Debug, Parser)]
#[command(
    name = "fabriq-bench",
    version,
    about = "fabriq vs libzmq vs omq.rs vs a raw floor: throughput, latency, CPU and memory, interleaved",
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true
)]
pub struct BenchCli {
    /// `report` or the hidden worker; none runs the benchmark.
    #[command(subcommand)]
    pub command: Option<Sub>,
    /// Options of a benchmark run.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Sub {
    /// Regenerate docs/performance.md (and its plots) from a results JSON.
    Report(ReportArgs),
    /// Internal: one side of a trial (started by the runner).
    #[command(hide = true)]
    Worker {
        /// The worker's spec, as JSON.
        spec: String,
    },
}

/// Run size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every scenario, tiny counts, one repetition.
    Smoke,
    /// A representative subset, short trials (about a minute).
    Quick,
    /// Everything.
    Full,
}

/// Where the worker processes may run (CPU affinity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pin {
    /// No affinity set: every process free to run on any CPU, as users run
    /// (the default).
    #[value(alias = "none")]
    Unpinned,
    /// Each process gets a set of CPUs of its own, one per busy thread (two
    /// for a libzmq, fabriq or omq side: the application thread and the I/O
    /// thread), when the CPUs suffice for every process of the trial; else
    /// every process gets all usable CPUs. Never one core for a
    /// multi-threaded process.
    Spread,
    /// Explicitly one core per side: every thread of the sending/client
    /// process (its I/O thread too) on the first usable CPU, every thread
    /// of the receiving/server processes on the second (the old `split`).
    #[value(alias = "split")]
    SplitCore,
    /// Explicitly one core for everything: every thread of every process on
    /// the first usable CPU (the single-core latency picture; the old `same`).
    #[value(alias = "same")]
    SameCore,
}

impl Pin {
    /// The mode's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Pin::Unpinned => "unpinned",
            Pin::Spread => "spread",
            Pin::SplitCore => "split-core",
            Pin::SameCore => "same-core",
        }
    }
}

/// Options of a benchmark run.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Quick mode: a representative subset in about a minute.
    #[arg(long, conflicts_with = "smoke")]
    pub quick: bool,
    /// Smoke mode: every scenario and implementation once, tiny counts.
    #[arg(long)]
    pub smoke: bool,
    /// Only these patterns (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_name = "PATTERN")]
    pub pattern: Vec<crate::scenario::Pattern>,
    /// Only these transports (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_name = "TRANSPORT")]
    pub transport: Vec<crate::scenario::Transport>,
    /// Add the fabric scenarios (ofi+shm, ofi+tcp against fabriq's ipc /
    /// tcp and fi_pingpong); alone, only those run. The same as adding
    /// `--transport ofi+shm,ofi+tcp`.
    #[arg(long)]
    pub fabric: bool,
    /// The fi_pingpong to run as the fabric floor (default: `fi_pingpong`
    /// on PATH).
    #[arg(long, value_name = "PATH")]
    pub fi_pingpong: Option<PathBuf>,
    /// Message sizes in bytes, replacing the mode's list (e.g. 64,1024).
    #[arg(long, value_delimiter = ',', value_name = "BYTES")]
    pub sizes: Vec<usize>,
    /// PUB/SUB subscriber counts, replacing the mode's list (e.g. 1,4).
    #[arg(long, value_delimiter = ',', value_name = "N")]
    pub subs: Vec<usize>,
    /// Repetitions (interleaved A B A' floor); default: the mode's.
    #[arg(long, value_name = "N")]
    pub reps: Option<usize>,
    /// Target duration of one trial in seconds (sets the message counts).
    #[arg(long, value_name = "SECONDS")]
    pub trial_secs: Option<f64>,
    /// Skip the raw floor (and fi_pingpong in fabric scenarios).
    #[arg(long)]
    pub no_floor: bool,
    /// Skip the A' (libzmq vs libzmq) and C' (omq vs omq) calibration
    /// trials, and B' (the fabric again) in fabric scenarios.
    #[arg(long)]
    pub no_calibration: bool,
    /// Skip omq.rs (C and C').
    #[arg(long)]
    pub no_omq: bool,
    /// Placement: `unpinned` (default) sets no affinity; `spread` gives
    /// each process its own CPUs, one per busy thread, when there are enough,
    /// else all of them; `split-core` puts all threads of the sending/client
    /// process on one CPU and those of the receiving/server processes on
    /// another; `same-core` puts every thread of every process on one CPU.
    #[arg(long, value_enum, default_value_t = Pin::Unpinned, value_name = "MODE")]
    pub pin: Pin,
    /// Kill a trial's workers after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub deadline: Option<f64>,
    /// Where to write the results JSON (plots go beside it).
    #[arg(long, value_name = "PATH", default_value = "target/bench/results.json")]
    pub out: PathBuf,
    /// Do not write SVG plots.
    #[arg(long)]
    pub no_plots: bool,
    /// Do not count instructions with `perf stat` even where it works.
    #[arg(long)]
    pub no_perf: bool,
    /// A note stored with the results and shown by `report`.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
}

impl RunArgs {
    /// The mode the flags select.
    pub fn mode(&self) -> Mode {
        if self.smoke {
            Mode::Smoke
        } else if self.quick {
            Mode::Quick
        } else {
            Mode::Full
        }
    }
}

/// Options of `report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// The results JSON of a run.
    pub results: PathBuf,
    /// The Markdown file to write.
    #[arg(long, default_value = "docs/performance.md")]
    pub out: PathBuf,
    /// Directory for the plots (default: `perf/` beside --out).
    #[arg(long)]
    pub plots: Option<PathBuf>,
    /// The hand-written "What each optimisation bought" section, included verbatim.
    #[arg(long, default_value = "bench/notes/optimisations.md")]
    pub notes: PathBuf,
    /// The hand-written part of the "Fabric" section, included verbatim.
    #[arg(long, default_value = "bench/notes/fabric.md")]
    pub fabric_notes: PathBuf,
}
