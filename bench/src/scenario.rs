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
    /// PUSH -> PULL throughput with CURVE (the PULL side is the CURVE
    /// server), tcp only. libzmq here is Debian's `libzmq5` loaded at run
    /// time ([`crate::syszmq`]): the `zmq` crate's libzmq has no CURVE.
    Curve,
    /// CURVE handshakes per second: a client connects a new CURVE REQ
    /// socket, completes one request/reply with the CURVE REP server, closes
    /// it, and starts again; each completed round is one handshake.
    #[serde(rename = "curve-handshake")]
    CurveHandshake,
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
    /// fabriq over libfabric's tcp provider (`tcp;ofi_rxm`): a TCP control
    /// connection, messages in registered pages over an RDM endpoint.
    #[serde(rename = "ofi+tcp")]
    #[value(name = "ofi+tcp", alias = "ofi-tcp")]
    OfiTcp,
    /// fabriq over libfabric's shm provider (shared memory).
    #[serde(rename = "ofi+shm")]
    #[value(name = "ofi+shm", alias = "ofi-shm")]
    OfiShm,
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
    /// libfabric's own `fi_pingpong` on the same provider: the fabric's
    /// floor (see [`crate::pingpong`]).
    #[serde(rename = "fi_pingpong")]
    FiPingpong,
}

impl Impl {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Libzmq => "libzmq",
            Impl::Fabriq => "fabriq",
            Impl::Omq => "omq",
            Impl::Raw => "raw",
            Impl::FiPingpong => "fi_pingpong",
        }
    }

    /// Busy threads of one process of this implementation (inproc: of the
    /// whole worker, both sides): the application thread(s) plus the
    /// library's I/O thread (libzmq, fabriq and omq each run one by default).
    pub fn threads(self, transport: Transport, receivers: usize) -> usize {
        let io = match self {
            Impl::Raw | Impl::FiPingpong => 0,
            Impl::Libzmq | Impl::Fabriq | Impl::Omq => 1,
        };
        match transport {
            Transport::Inproc => 1 + receivers + io,
            _ => 1 + io,
        }
    }
}

/// A trial's place in a repetition: A B C A' C' floor for the ZeroMQ
/// transports, B R B' P for the fabric ones.
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
    /// Fabric scenarios: fabriq over the same host's ordinary transport
    /// (`ipc://` for ofi+shm, `tcp://` for ofi+tcp), the reference that
    /// has no fabric in it.
    R,
    /// Fabric scenarios: fabriq over the fabric again, the B'/B noise band.
    B2,
    /// Fabric scenarios: `fi_pingpong` on the same provider, the floor.
    Pingpong,
}

impl Slot {
    /// The implementation in this slot.
    pub fn implementation(self) -> Impl {
        match self {
            Slot::A | Slot::A2 => Impl::Libzmq,
            Slot::B | Slot::B2 | Slot::R => Impl::Fabriq,
            Slot::C | Slot::C2 => Impl::Omq,
            Slot::Floor => Impl::Raw,
            Slot::Pingpong => Impl::FiPingpong,
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
            Pattern::Curve => "curve",
            Pattern::CurveHandshake => "curve-handshake",
        }
    }

    /// Whether the pattern runs the CURVE mechanism (both sides).
    pub fn is_curve(self) -> bool {
        matches!(self, Pattern::Curve | Pattern::CurveHandshake)
    }

    /// Whether the pattern is a client and a server exchanging requests
    /// and replies (REQ/REP; the handshake scenario's rounds), timed by
    /// the client, rather than a stream timed by its receivers.
    pub fn is_request_reply(self) -> bool {
        matches!(self, Pattern::Reqrep | Pattern::CurveHandshake)
    }
}

impl Transport {
    /// Short name (also the endpoint scheme).
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Ipc => "ipc",
            Transport::Inproc => "inproc",
            Transport::OfiTcp => "ofi+tcp",
            Transport::OfiShm => "ofi+shm",
        }
    }

    /// The ZeroMQ transports (libzmq, fabriq, omq and the raw floor).
    pub const ZMQ: [Transport; 3] = [Transport::Tcp, Transport::Ipc, Transport::Inproc];

    /// The fabric transports (fabriq only; `--fabric`), shm first.
    pub const FABRIC: [Transport; 2] = [Transport::OfiShm, Transport::OfiTcp];

    /// Whether this is an `ofi+` transport (a fabric scenario).
    pub fn is_fabric(self) -> bool {
        matches!(self, Transport::OfiTcp | Transport::OfiShm)
    }

    /// The libfabric provider of a fabric transport, as `fi_pingpong -p`
    /// and `ofi+PROVIDER://` name it.
    pub fn provider(self) -> Option<&'static str> {
        match self {
            Transport::OfiTcp => Some("tcp"),
            Transport::OfiShm => Some("shm"),
            _ => None,
        }
    }

    /// The ordinary transport a fabric transport is compared with (the R
    /// slot): what the same two processes would use without a fabric.
    pub fn reference(self) -> Option<Transport> {
        match self {
            Transport::OfiTcp => Some(Transport::Tcp),
            Transport::OfiShm => Some(Transport::Ipc),
            _ => None,
        }
    }
}

/// How fabriq's fabric engine is configured in a fabric scenario.
///
/// This is the place for the engine's modes as they land: each variant
/// becomes its own scenario (`pushpull/ofi+shm/65536` for the default,
/// e.g. `pushpull/ofi+shm+unbuffered/65536` later), listed in
/// [`FABRIC_VARIANTS`], and [`crate::zmqlike::fabric_tune`] sets the
/// socket options of that variant on the fabriq sockets of the fabric
/// trials (B and B'; never on R, which has no fabric).
///
/// Not measured as variants yet: a flush interval (`set_fabric_flush_us`)
/// and the page geometry (`set_fabric_page_size`, `set_fabric_page_count`).
/// `fi_pingpong` busy-polls, so a spinning variant is the fair comparison
/// with the P column; the default (blocking) one is compared with the
/// blocking R column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FabricVariant {
    /// The engine's defaults (buffered pages, no spinning).
    #[default]
    Default,
    /// Each message sent at once in its own page(s)
    /// (`set_fabric_buffered(false)`).
    Unbuffered,
    /// Blocking calls spin for up to [`SPIN_US`] µs before they sleep
    /// (`set_spin_us`), as `fi_pingpong` busy-polls.
    Spin,
    /// The engine's defaults over ofi+shm with the provider's CMA turned
    /// off (`FI_SHM_DISABLE_CMA=1` in the environment of every process of
    /// the trial, fabriq's, the floor's and fi_pingpong's), as where the
    /// kernel does not let one process `process_vm_readv` another (Yama's
    /// `ptrace_scope`, containers): sends over 4 KiB then go through the
    /// provider's segment buffers. ofi+shm only.
    NoCma,
    /// The engine's defaults, the sender sending its payload by
    /// reference (`Message::from(Bytes)`, fabriq's zero-copy send) instead
    /// of from a `&[u8]` copied into each message: the same work as the
    /// streaming floor F, which sends from its own buffers. Applies to
    /// fabriq's sending side, in the B and R trials alike (libzmq, omq
    /// and the floors send as they always do). PUSH/PULL only, in full
    /// and smoke runs (not the demo's quick run).
    #[serde(rename = "zc")]
    ZeroCopy,
    /// Not a fabric mode: REQ/REP over tcp and ipc with busy-polling
    /// receives, [`BUSY_US`] µs before sleeping, in fabriq
    /// (`set_spin_us`) and omq (`Options::recv_spin`, the 50 µs of its
    /// BENCHMARKS.md). libzmq 4.3.4 has no such mode (4.3.5's draft
    /// `ZMQ_BUSY_POLL` sets the kernel's `SO_BUSY_POLL`, which does
    /// nothing on loopback) and runs as usual.
    Busy,
}

/// How long the [`FabricVariant::Busy`] variant's receives spin, in µs.
pub const BUSY_US: i32 = 50;

/// How long the [`FabricVariant::Spin`] variant spins, in µs: long enough
/// that a spell outlasts a peer's preemption, as fi_pingpong and the spin
/// floor never sleep. With 200 µs, a spinner whose peer was descheduled
/// for longer slept, and its wake-up put it on its waker's CPU when the
/// other was busy: both spinners then shared one CPU, each spinning its
/// whole spell before the other could answer (about 228 µs a hop instead
/// of 2; bench/notes/fabric.md, "Stop 41").
pub const SPIN_US: i32 = 20_000;

impl FabricVariant {
    /// The suffix of the transport in a scenario key (`""` for the default).
    pub fn suffix(self) -> &'static str {
        match self {
            FabricVariant::Default => "",
            FabricVariant::Unbuffered => "+unbuffered",
            FabricVariant::Spin => "+spin",
            FabricVariant::NoCma => "+nocma",
            FabricVariant::Busy => "+busy",
            FabricVariant::ZeroCopy => "+zc",
        }
    }

    /// In words, for the table's legend.
    pub fn describe(self) -> &'static str {
        match self {
            FabricVariant::Default => "engine defaults (buffered pages, no spinning)",
            FabricVariant::Unbuffered => {
                "unbuffered: each message sent at once (set_fabric_buffered(false))"
            }
            FabricVariant::Spin => {
                "spin: blocking calls spin 20 ms before sleeping (set_spin_us(20000))"
            }
            FabricVariant::NoCma => {
                "nocma: engine defaults over ofi+shm with FI_SHM_DISABLE_CMA=1 (every process of the trial)"
            }
            FabricVariant::Busy => {
                "busy: receives spin 50 us before sleeping (fabriq set_spin_us(50), omq recv_spin 50 us; libzmq as usual)"
            }
            FabricVariant::ZeroCopy => {
                "zc: engine defaults, fabriq's sender sends its payload by reference (Message::from(Bytes)), as the floor sends from its own buffers (PUSH/PULL, full and smoke runs)"
            }
        }
    }

    /// What the variant sets in the environment of each process of a
    /// trial (libfabric reads it when it loads a provider).
    pub fn env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            FabricVariant::NoCma => &[("FI_SHM_DISABLE_CMA", "1")],
            _ => &[],
        }
    }

    /// Whether the variant is run on `transport`.
    pub fn applies_to(self, transport: Transport) -> bool {
        self != FabricVariant::NoCma || transport == Transport::OfiShm
    }
}

/// The fabric variants every fabric scenario is run in, in order (where
/// [`FabricVariant::applies_to`] its transport). Add the engine's modes
/// here as they land (see [`FabricVariant`]).
pub const FABRIC_VARIANTS: &[FabricVariant] = &[
    FabricVariant::Default,
    FabricVariant::Unbuffered,
    FabricVariant::Spin,
    FabricVariant::NoCma,
    FabricVariant::ZeroCopy,
];

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
    /// How fabriq's fabric engine is set up (fabric scenarios only).
    #[serde(default)]
    pub variant: FabricVariant,
}

impl Scenario {
    /// A stable key, e.g. `pushpull/tcp/64` or `pubsub4/tcp/64`.
    pub fn key(&self) -> String {
        let p = match self.pattern {
            Pattern::Pubsub => format!("pubsub{}", self.subs),
            p => p.name().to_string(),
        };
        format!(
            "{p}/{}{}/{}",
            self.transport.name(),
            self.variant.suffix(),
            self.size
        )
    }

    /// The scenario a trial in `slot` runs: the R slot of a fabric scenario
    /// runs the same pattern, size and counts over the reference transport.
    pub fn for_slot(&self, slot: Slot) -> Scenario {
        let mut sc = self.clone();
        if slot == Slot::R {
            if let Some(t) = self.transport.reference() {
                sc.transport = t;
                sc.variant = FabricVariant::Default;
            }
        }
        sc
    }

    /// Whether this is a throughput scenario (else latency / rounds).
    pub fn is_throughput(&self) -> bool {
        !self.pattern.is_request_reply()
    }

    /// The slots run in each repetition, in order: A B C A' C' floor
    /// (omq's C and C' where `omq` is asked for; omq has every pattern and
    /// transport of this bench).
    ///
    /// Fabric scenarios: B (fabriq over the fabric), R (fabriq over the
    /// reference transport), B' (fabriq over the fabric again: the noise
    /// band, with `calibration`) and `fi_pingpong` (with `floor`; the runner
    /// leaves it out when fi_pingpong is not installed).
    pub fn slots(&self, floor: bool, calibration: bool, omq: bool) -> Vec<Slot> {
        if self.transport.is_fabric() {
            let mut slots = vec![Slot::B, Slot::R];
            if calibration {
                slots.push(Slot::B2);
            }
            if floor {
                slots.push(Slot::Pingpong);
                slots.push(Slot::Floor);
            }
            return slots;
        }
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
        // The raw floor has no encryption: no floor for CURVE.
        if floor && self.transport != Transport::Inproc && !self.pattern.is_curve() {
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
    if transport.is_fabric() {
        return fabric_estimated_rate(pattern, transport, size);
    }
    let base = match pattern {
        Pattern::CurveHandshake => return 800.0,
        Pattern::Curve => {
            return match size {
                0..=64 => 500_000.0,
                65..=256 => 350_000.0,
                257..=1024 => 180_000.0,
                _ => 4.0e8 / size as f64,
            }
        }
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

/// Rough fabriq rates over the fabric on this VM, for counts only. shm is
/// polled every 1 ms by the engine (no wait descriptors in libfabric 1.17),
/// so a round trip costs about 2 ms there.
fn fabric_estimated_rate(pattern: Pattern, transport: Transport, size: usize) -> f64 {
    match (pattern, transport) {
        (Pattern::Reqrep, Transport::OfiShm) => 800.0,
        (Pattern::Reqrep, _) => 5_000.0,
        _ => match size {
            0..=256 => 1_000_000.0,
            257..=4096 => 200_000.0,
            _ => 1.0e9 / size as f64,
        },
    }
}

/// Default sizes per pattern and mode.
fn default_sizes(mode: Mode, pattern: Pattern, transport: Transport) -> Vec<usize> {
    if pattern.is_curve() {
        return match (mode, pattern, transport) {
            (_, Pattern::CurveHandshake, Transport::Tcp) => vec![64],
            (Mode::Quick, Pattern::Curve, Transport::Tcp) => vec![64, 1024, 65536],
            (_, Pattern::Curve, Transport::Tcp) => vec![64, 256, 1024, 16384, 65536],
            _ => vec![],
        };
    }
    if transport.is_fabric() {
        return match (mode, pattern) {
            // Fan-out (NetIO's main use) in full runs: 1, 4 and 16
            // subscribers.
            (Mode::Quick, Pattern::Pubsub) => vec![],
            (Mode::Smoke, Pattern::Pubsub) => vec![64],
            (Mode::Full, Pattern::Pubsub) => vec![64, 65536],
            (_, Pattern::Reqrep) => vec![64],
            (Mode::Quick, Pattern::Pushpull) => vec![64, 65536, 1 << 20],
            (_, Pattern::Pushpull) => vec![64, 65536, 256 * 1024, 1 << 20],
            (_, Pattern::Curve | Pattern::CurveHandshake) => vec![],
        };
    }
    match (mode, pattern) {
        (Mode::Quick, Pattern::Pushpull) => match transport {
            Transport::Tcp => vec![64, 1024, 65536],
            Transport::Inproc => vec![64],
            Transport::Ipc | Transport::OfiTcp | Transport::OfiShm => vec![],
        },
        (Mode::Quick, Pattern::Reqrep) => match transport {
            Transport::Tcp => vec![1],
            _ => vec![],
        },
        (Mode::Quick, Pattern::Pubsub) => vec![],
        (_, Pattern::Curve | Pattern::CurveHandshake) => vec![],
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

/// The transports a run covers: `--transport`'s list, plus the fabric
/// ones with `--fabric`; with neither, the ZeroMQ transports.
pub fn selected_transports(args: &RunArgs) -> Vec<Transport> {
    let mut out: Vec<Transport> = args.transport.clone();
    if args.fabric {
        out.extend(Transport::FABRIC);
    }
    if out.is_empty() {
        out.extend(Transport::ZMQ);
    }
    out
}

/// The scenarios a run measures, in order: the ZeroMQ transports' (pattern
/// by pattern, as before), then the fabric transports' (transport by
/// transport, so each fabric table is one block).
///
/// The CURVE patterns run only when `--pattern` names them (they need
/// Debian's `libzmq5` at run time), over tcp only, and the handshake
/// scenario always has its one size (64 B), whatever `--sizes` says.
pub fn plan(args: &RunArgs) -> Vec<Scenario> {
    let mode = args.mode();
    let trial_secs = args.trial_secs.unwrap_or(match mode {
        Mode::Full => 0.4,
        Mode::Quick => 0.35,
        Mode::Smoke => 0.0,
    });
    let selected = selected_transports(args);
    let patterns = [
        Pattern::Pushpull,
        Pattern::Pubsub,
        Pattern::Reqrep,
        Pattern::Curve,
        Pattern::CurveHandshake,
    ];
    let wanted =
        |p: &Pattern| args.pattern.contains(p) || (args.pattern.is_empty() && !p.is_curve());
    let mut cells: Vec<(Pattern, Transport, FabricVariant)> = Vec::new();
    for pattern in patterns.into_iter().filter(wanted) {
        for transport in Transport::ZMQ {
            if selected.contains(&transport) {
                cells.push((pattern, transport, FabricVariant::Default));
            }
        }
    }
    // The busy-polling profile of REQ/REP (full runs only).
    if mode == Mode::Full && wanted(&Pattern::Reqrep) {
        for transport in [Transport::Tcp, Transport::Ipc] {
            if selected.contains(&transport) {
                cells.push((Pattern::Reqrep, transport, FabricVariant::Busy));
            }
        }
    }
    for transport in Transport::FABRIC {
        if !selected.contains(&transport) {
            continue;
        }
        // Without CMA and by reference in full and smoke runs only: the
        // demo's quick run stays short.
        for &variant in FABRIC_VARIANTS
            .iter()
            .filter(|v| v.applies_to(transport))
            .filter(|v| {
                !matches!(v, FabricVariant::NoCma | FabricVariant::ZeroCopy) || mode != Mode::Quick
            })
        {
            for pattern in patterns
                .into_iter()
                .filter(wanted)
                .filter(|p| !p.is_curve())
                // PUB/SUB in the engine's default mode only.
                .filter(|p| *p != Pattern::Pubsub || variant == FabricVariant::Default)
                // By reference: streams, where the copy is the cost.
                .filter(|p| *p == Pattern::Pushpull || variant != FabricVariant::ZeroCopy)
            {
                cells.push((pattern, transport, variant));
            }
        }
    }
    let mut out = Vec::new();
    for (pattern, transport, variant) in cells {
        let sizes = if pattern == Pattern::CurveHandshake
            || (pattern.is_curve() && transport != Transport::Tcp)
        {
            default_sizes(mode, pattern, transport)
        } else if args.sizes.is_empty() && variant == FabricVariant::Busy {
            vec![1]
        } else if args.sizes.is_empty() {
            default_sizes(mode, pattern, transport)
        } else {
            args.sizes.clone()
        };
        let subs_list = match pattern {
            Pattern::Pubsub if !args.subs.is_empty() => args.subs.clone(),
            // Smoke runs check that fan-out works, once.
            Pattern::Pubsub if transport.is_fabric() && mode == Mode::Smoke => vec![4],
            Pattern::Pubsub if transport.is_fabric() => vec![1, 4, 16],
            Pattern::Pubsub => vec![1, 4],
            _ => vec![1],
        };
        for &subs in &subs_list {
            for &size in &sizes {
                let size = size.max(1);
                let (count, warm) = if mode == Mode::Smoke && args.trial_secs.is_none() {
                    match pattern {
                        Pattern::Reqrep | Pattern::CurveHandshake => (40, 5),
                        _ => (if size > 65536 { 20 } else { 300 }, 10),
                    }
                } else {
                    // Subscribers share one CPU: each gets a share of it.
                    let rate = estimated_rate(pattern, transport, size) / subs.max(1) as f64;
                    let count = (rate * trial_secs).round() as u64;
                    let count = count.clamp(20, 20_000_000);
                    let warm = match pattern {
                        Pattern::Reqrep | Pattern::CurveHandshake => (count / 10).clamp(10, 1000),
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
                    variant,
                });
            }
        }
    }
    out
}
