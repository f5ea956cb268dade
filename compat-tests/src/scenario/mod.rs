//! The scenarios, grouped by pattern, and what they share.
//!
//! A scenario is written once against [`crate::adapter`] and runs on a
//! [`Pair`]: side A (usually the binder) on one implementation, side B
//! (usually the connecter) on the same or the other one.

use std::time::{Duration, Instant};

use crate::adapter::{Ctx, Impl, Kind, Res, Sock, Transport};

pub mod dealer_router;
pub mod endpoint;
pub mod heartbeat;
pub mod hwm;
pub mod lifecycle;
pub mod message;
pub mod monitor;
pub mod pubsub;
pub mod pushpull;
pub mod reqrep;
pub mod xpub;

/// What a scenario returns: `Err` says what went wrong.
pub type Outcome = Result<(), String>;

/// The two sides of a run. Sides on the same implementation share one
/// context (so inproc works); otherwise each has its own.
pub struct Pair {
    /// Implementation of side A (usually the binder).
    pub a: Impl,
    /// Implementation of side B (usually the connecter).
    pub b: Impl,
    ctx_a: Ctx,
    ctx_b: Ctx,
}

impl Pair {
    /// Contexts for `a` and `b`.
    pub fn new(a: Impl, b: Impl) -> Pair {
        let ctx_a = Ctx::new(a);
        let ctx_b = if a == b { ctx_a.clone() } else { Ctx::new(b) };
        Pair { a, b, ctx_a, ctx_b }
    }

    /// A socket on side A.
    pub fn a(&self, kind: Kind) -> Res<Sock> {
        self.ctx_a.socket(kind)
    }

    /// A socket on side B.
    pub fn b(&self, kind: Kind) -> Res<Sock> {
        self.ctx_b.socket(kind)
    }

    /// Side A's context.
    pub fn ctx_a(&self) -> &Ctx {
        &self.ctx_a
    }

    /// Side B's context.
    pub fn ctx_b(&self) -> &Ctx {
        &self.ctx_b
    }
}

/// Which columns a scenario runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sides {
    /// Both sides take part: every column.
    Two,
    /// Only side A's implementation is exercised: the mixed columns are
    /// skipped.
    One,
}

/// Whether a scenario runs on the fabric transports (`ofi+tcp`,
/// `ofi+shm`), which exist in the fabriq-fabriq column only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fabric {
    /// It runs on both fabric transports.
    Runs,
    /// It does not apply to the fabric, for this reason (shown in
    /// docs/compat.md). Scenarios that share a reason share the text.
    Excluded(&'static str),
}

/// Why an inproc-only scenario does not run on the fabric.
pub const FABRIC_NOT_INPROC: &str = "inproc-only behaviour (a connect before the bind, \
    one pipe shared by both sockets, an endpoint that is a name): a fabric endpoint is a \
    network connection, like tcp://, and the tcp/ipc counterparts of the scenario run on it";
/// Why an ipc-only scenario does not run on the fabric.
pub const FABRIC_NOT_IPC: &str = "checks ipc:// socket files (the ipc://* wildcard names a \
    path); a fabric endpoint's address is a TCP HOST:PORT, and its wildcard bind is checked \
    by last_endpoint_tcp_wildcard";
/// Why a scenario that uses no endpoint does not run on the fabric.
pub const FABRIC_NO_ENDPOINT: &str = "binds and connects nothing (socket options, or a \
    socket without peers): a fabric run would repeat its tcp run call for call";

/// One scenario.
pub struct Scenario {
    /// Unique name (the matrix row).
    pub name: &'static str,
    /// What it checks, one line.
    pub about: &'static str,
    /// The transports it runs on (inproc only where both sides are one
    /// implementation); the fabric transports are added by `fabric`.
    pub transports: &'static [Transport],
    /// Whether the mixed columns apply.
    pub sides: Sides,
    /// Whether it also runs on the fabric transports (fabriq-fabriq
    /// only), or why not.
    pub fabric: Fabric,
    /// The scenario.
    pub run: fn(&Pair, Transport) -> Outcome,
}

/// tcp, ipc and inproc.
pub const ALL: &[Transport] = &[Transport::Tcp, Transport::Ipc, Transport::Inproc];
/// tcp and ipc.
pub const WIRE: &[Transport] = &[Transport::Tcp, Transport::Ipc];
/// tcp only.
pub const TCP: &[Transport] = &[Transport::Tcp];
/// inproc only.
pub const INPROC: &[Transport] = &[Transport::Inproc];

/// Every scenario, in matrix order.
pub fn all() -> Vec<Scenario> {
    let mut v = Vec::new();
    v.extend(reqrep::scenarios());
    v.extend(pushpull::scenarios());
    v.extend(dealer_router::scenarios());
    v.extend(pubsub::scenarios());
    v.extend(xpub::scenarios());
    v.extend(hwm::scenarios());
    v.extend(lifecycle::scenarios());
    v.extend(heartbeat::scenarios());
    v.extend(monitor::scenarios());
    v.extend(endpoint::scenarios());
    v.extend(message::scenarios());
    v
}

/// Returns `Err(format!(...))` from the scenario unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// Returns an error unless `left == right`, showing both.
#[macro_export]
macro_rules! ensure_eq {
    ($left:expr, $right:expr, $($fmt:tt)+) => {
        let (l, r) = (&$left, &$right);
        if l != r {
            return Err(format!("{}: got {:?}, expected {:?}", format!($($fmt)+), l, r));
        }
    };
}

/// Binds `binder` to a fresh endpoint on `t`, connects `connecter` to it
/// and returns the endpoint.
pub fn link(t: Transport, binder: &Sock, connecter: &Sock) -> Res<String> {
    let endpoint = binder.bind_any(t)?;
    connecter.connect(&endpoint)?;
    Ok(endpoint)
}

/// A point in time `ms` from now.
pub fn deadline(ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(ms)
}

/// Receives one single-frame message as text.
pub fn recv_text(s: &Sock) -> Result<String, String> {
    let parts = s.recv_parts(0)?;
    ensure!(parts.len() == 1, "expected one frame, got {parts:?}");
    Ok(String::from_utf8_lossy(&parts[0]).into_owned())
}

/// Expects nothing to arrive on `s` within `ms`.
pub fn expect_silence(s: &Sock, ms: i64, what: &str) -> Outcome {
    if let Some(m) = s.recv_within(ms)? {
        return Err(format!("{what}: unexpected message {}", show(&m)));
    }
    Ok(())
}

/// A short printable form of a message (for error texts).
pub fn show(parts: &[Vec<u8>]) -> String {
    let frames: Vec<String> = parts
        .iter()
        .map(|p| {
            if p.len() > 32 {
                format!("<{} bytes>", p.len())
            } else {
                format!("{:?}", String::from_utf8_lossy(p))
            }
        })
        .collect();
    format!("[{}]", frames.join(", "))
}

/// Makes sure `sub` (a SUB or XSUB already subscribed to what it needs,
/// or an XSUB that sent its subscription frames) is known at `publisher`:
/// subscribes to `SYNC`, publishes `SYNC` until one arrives, then
/// `SYNC-END`, and reads up to it. Subscriptions travel in order, so those
/// made before are in effect afterwards.
pub fn sync_subscriber(publisher: &Sock, sub: &Sock) -> Outcome {
    if sub.kind() == Kind::XSub {
        sub.send(b"\x01SYNC", 0)?;
    } else {
        sub.set_subscribe(b"SYNC")?;
    }
    let end = deadline(5000);
    loop {
        publisher.send(b"SYNC", 0)?;
        if sub.poll_in(20)? {
            break;
        }
        ensure!(
            Instant::now() < end,
            "subscription did not reach the publisher within 5 s"
        );
    }
    publisher.send(b"SYNC-END", 0)?;
    loop {
        let m = sub.recv_parts(0)?;
        if m == [b"SYNC-END".to_vec()] {
            return Ok(());
        }
        ensure!(
            m == [b"SYNC".to_vec()],
            "while syncing: unexpected {}",
            show(&m)
        );
    }
}
