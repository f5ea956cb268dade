//! What is measured: patterns, transports, implementations, sizes, counts.

use serde::{Deserialize, Serialize};

use crate::cli::{Mode, RunArgs};

/// A messaging pattern under test.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// PUSH -> PULL throughput.
    Pushpull,
    /// PUB -> SUB throughput, every subscriber gets every message.
    Pubsub,
    /// REQ <-> REP round trips.
    Reqrep,
}

/// A transport.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Loopback TCP.
    Tcp,
    /// Unix-domain stream sockets.
    Ipc,
    /// Two threads of one process.
    Inproc,
}

/// An implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Impl {
    /// libzmq through the `zmq` crate (the reference).
    Libzmq,
    /// fabriq sockets.
    Fabriq,
    /// omq.rs (the `omq-tokio` crate) through its blocking API: the second
    /// reference.
    Omq,
    /// A plain byte stream: the best a byte mover can do.
    Raw,
}

impl Impl {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Libzmq => "libzmq",
            Impl::Fabriq => "fabriq",
            Impl::Omq => "omq",
            Impl::Raw => "raw",
        }
    }

    /// Busy threads of one process of this implementation (inproc: of the
    /// whole worker, both sides): the application thread(s) plus the
    /// library's I/O thread (libzmq, fabriq and omq each run one by default).
    pub fn threads(self, transport: Transport, receivers: usize) -> usize {
        let io = match self {
            Impl::Raw => 0,
            Impl::Libzmq | Impl::Fabriq | Impl::Omq => 1,
        };
        match transport {
            Transport::Inproc => 1 + receivers + io,
            _ => 1 + io,
        }
    }
}

/// A trial's place in a repetition: A B C A' C' floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Slot {
    /// libzmq, the reference.
    A,
    /// fabriq.
    B,
    /// omq.rs, the second reference.
    C,
    /// libzmq again: the A/A calibration.
    A2,
    /// omq again: omq's own A/A calibration (the noise band of B/C).
    C2,
    /// The raw floor.
    Floor,
}

impl Slot {
    /// The implementation in this slot.
    pub fn implementation(self) -> Impl {
        match self {
            Slot::A | Slot::A2 => Impl::Libzmq,
            Slot::B => Impl::Fabriq,
            Slot::C | Slot::C2 => Impl::Omq,
            Slot::Floor => Impl::Raw,
        }
    }
}

impl Pattern {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Pushpull => "pushpull",
            Pattern::Pubsub => "pubsub",
            Pattern::Reqrep => "reqrep",
        }
    }
}

impl Transport {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Ipc => "ipc",
            Transport::Inproc => "inproc",
        }
    }
}

/// One scenario: a pattern on a transport with one message size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// The pattern.
    pub pattern: Pattern,
    /// The transport.
    pub transport: Transport,
    /// Message size in bytes.
    pub size: usize,
    /// Subscribers (PUB/SUB), else 1.
    pub subs: usize,
    /// Timed messages (throughput) or round trips (REQ/REP).
    pub count: u64,
    /// Warm-up messages or round trips before timing starts.
    pub warm: u64,
    /// Repetitions.
    pub reps: usize,
}

impl Scenario {
    /// A stable key, e.g. `pushpull/tcp/64` or `pubsub4/tcp/64`.
    pub fn key(&self) -> String {
        let p = match self.pattern {
            Pattern::Pubsub => format!("pubsub{}", self.subs),
            p => p.name().to_string(),
        };
        format!("{p}/{}/{}", self.transport.name(), self.size)
    }

    /// Whether this is a throughput scenario (else latency).
    pub fn is_throughput(&self) -> bool {
        self.pattern != Pattern::Reqrep
    }

    /// The slots run in each repetition, in order: A B C A' C' floor
    /// (omq's C and C' where `omq` is asked for; omq has every pattern and
    /// transport of this bench).
    pub fn slots(&self, floor: bool, calibration: bool, omq: bool) -> Vec<Slot> {
        let mut slots = vec![Slot::A, Slot::B];
        if omq {
            slots.push(Slot::C);
        }
        if calibration {
            slots.push(Slot::A2);
            if omq {
                slots.push(Slot::C2);
            }
        }
        if floor && self.transport != Transport::Inproc {
            slots.push(Slot::Floor);
        }
        slots
    }

    /// HWM used for every implementation: libzmq's default for PUSH/PULL
    /// and REQ/REP, none (0) for PUB/SUB so that no subscriber drops (omq,
    /// which clamps 0 to 1, gets its largest queue instead: see
    /// [`crate::omqzmq`]).
    pub fn hwm(&self) -> i32 {
        match self.pattern {
            Pattern::Pubsub => 0,
            _ => 1000,
        }
    }
}

/// Rough libzmq rates on a small VM (messages or round trips per second),
/// used only to size counts so a trial lasts about the target time.
fn estimated_rate(pattern: Pattern, transport: Transport, size: usize) -> f64 {
    let base = match pattern {
        Pattern::Reqrep => {
            return match size {
                0..=4096 => 12_000.0,
                _ => 5_000.0,
            }
        }
        _ => match size {
            0..=8 => 4_000_000.0,
            9..=64 => 3_400_000.0,
            65..=256 => 2_000_000.0,
            257..=1024 => 600_000.0,
            1025..=4096 => 250_000.0,
            _ => 1.4e9 / size as f64,
        },
    };
    match transport {
        Transport::Inproc => base * 2.0,
        _ => base,
    }
}

/// Default sizes per pattern and mode.
fn default_sizes(mode: Mode, pattern: Pattern, transport: Transport) -> Vec<usize> {
    match (mode, pattern) {
        (Mode::Quick, Pattern::Pushpull) => match transport {
            Transport::Tcp => vec![64, 1024, 65536],
            Transport::Inproc => vec![64],
            Transport::Ipc => vec![],
        },
        (Mode::Quick, Pattern::Reqrep) => match transport {
            Transport::Tcp => vec![1],
            _ => vec![],
        },
        (Mode::Quick, Pattern::Pubsub) => vec![],
        (_, Pattern::Pushpull) => vec![8, 64, 256, 1024, 4096, 65536, 1 << 20],
        (_, Pattern::Pubsub) => match transport {
            Transport::Tcp => vec![8, 64, 256, 1024, 65536],
            _ => vec![64, 1024],
        },
        (_, Pattern::Reqrep) => vec![1, 1024, 65536],
    }
}

/// Repetitions the method asks for: 10 for messages up to 256 B, else 5.
pub fn required_reps(size: usize) -> usize {
    if size <= 256 {
        10
    } else {
        5
    }
}

/// The scenarios a run measures, in order.
pub fn plan(args: &RunArgs) -> Vec<Scenario> {
    let mode = args.mode();
    let trial_secs = args.trial_secs.unwrap_or(match mode {
        Mode::Full => 0.4,
        Mode::Quick => 0.35,
        Mode::Smoke => 0.0,
    });
    let patterns = [Pattern::Pushpull, Pattern::Pubsub, Pattern::Reqrep];
    let transports = [Transport::Tcp, Transport::Ipc, Transport::Inproc];
    let mut out = Vec::new();
    for pattern in patterns {
        if !args.pattern.is_empty() && !args.pattern.contains(&pattern) {
            continue;
        }
        for transport in transports {
            if !args.transport.is_empty() && !args.transport.contains(&transport) {
                continue;
            }
            let sizes = if args.sizes.is_empty() {
                default_sizes(mode, pattern, transport)
            } else {
                args.sizes.clone()
            };
            let subs_list = match pattern {
                Pattern::Pubsub if !args.subs.is_empty() => args.subs.clone(),
                Pattern::Pubsub => vec![1, 4],
                _ => vec![1],
            };
            for &subs in &subs_list {
                for &size in &sizes {
                    let size = size.max(1);
                    let (count, warm) = if mode == Mode::Smoke && args.trial_secs.is_none() {
                        match pattern {
                            Pattern::Reqrep => (40, 5),
                            _ => (if size > 65536 { 20 } else { 300 }, 10),
                        }
                    } else {
                        // Subscribers share one CPU: each gets a share of it.
                        let rate = estimated_rate(pattern, transport, size) / subs.max(1) as f64;
                        let count = (rate * trial_secs).round() as u64;
                        let count = count.clamp(20, 20_000_000);
                        let warm = match pattern {
                            Pattern::Reqrep => (count / 10).clamp(10, 1000),
                            _ => (count / 20).clamp(10, 10_000),
                        };
                        (count, warm)
                    };
                    let reps = args.reps.unwrap_or(match mode {
                        Mode::Smoke => 1,
                        Mode::Quick => 5,
                        Mode::Full => required_reps(size),
                    });
                    out.push(Scenario {
                        pattern,
                        transport,
                        size,
                        subs: subs.max(1),
                        count,
                        warm,
                        reps: reps.max(1),
                    });
                }
            }
        }
    }
    out
}
