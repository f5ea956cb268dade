//! Which engine a connection gets: the data path (byte stream, fabric or
//! udp datagrams) by the socket type, and what the socket's thread may
//! write for it. The one place that decides [`SocketWrites`] for every
//! engine.

use std::sync::Arc;
use std::time::Instant;

use fabriq_zmtp::{Connection, SocketType};
use mio::Token;

use crate::options::Options;
use crate::spin::Spin;
use crate::transport::{DataPath, Poller, Stream};

use super::fabric::FabricEngine;
use super::raw::RawEngine;
use super::udp::UdpEngine;
use super::{Engine, SocketWrites, StreamEngine};

/// What an engine is made for: a transport's connection, or a udp
/// socket (which has none).
pub(crate) enum Conn {
    /// A connected byte stream (for the fabric, its control channel).
    Stream(Box<dyn Stream>),
    /// A udp socket that bind or connect opened ([`DataPath::Datagram`]).
    Datagram(std::net::UdpSocket),
}

/// What the socket's thread may write for a connection of `socket_type`:
/// lock-step REQ and REP write each message when the wire is idle,
/// subscribers never (the session records their subscriptions), every
/// other type when its pipe to the peer is full.
pub(crate) fn socket_writes(socket_type: SocketType) -> SocketWrites {
    match socket_type {
        SocketType::Req | SocketType::Rep => SocketWrites::WhenIdle,
        t if t.is_subscriber() => SocketWrites::Never,
        _ => SocketWrites::WhenFull,
    }
}

/// What the socket's thread may write for a fabric connection: as
/// [`socket_writes`], and also every message queued while the wire is
/// idle for a socket that spins (its thread is up anyway) or sends
/// unbuffered (nothing to coalesce: each message is its own page).
pub(crate) fn fabric_writes(socket_type: SocketType, opts: &Options) -> SocketWrites {
    match socket_writes(socket_type) {
        SocketWrites::WhenFull if opts.spin_us > 0 || !opts.fabric.buffered => {
            SocketWrites::WhenIdle
        }
        writes => writes,
    }
}

/// The engine for `conn` of a `socket_type` socket with `opts`, on
/// `data_path`. A fabric engine joins (or opens) its I/O thread's node
/// through `poller`; a udp engine registers its socket with it.
#[allow(clippy::too_many_arguments)] // what a connection starts from
pub(crate) fn make_engine(
    data_path: &DataPath,
    socket_type: SocketType,
    conn: Conn,
    opts: &Options,
    spin: &Arc<Spin>,
    token: Token,
    poller: &mut Poller<'_>,
    now: Instant,
) -> Result<Box<dyn Engine>, String> {
    match (data_path, conn) {
        (DataPath::Stream, Conn::Stream(stream)) if socket_type == SocketType::Stream => {
            Ok(Box::new(RawEngine::new(stream, socket_writes(socket_type))))
        }
        (DataPath::Stream, Conn::Stream(stream)) => {
            let config = opts.zmtp_config(socket_type);
            let conn = Connection::new(config, now).map_err(|e| e.to_string())?;
            let writes = socket_writes(socket_type);
            Ok(Box::new(StreamEngine::new(stream, conn, writes)))
        }
        (DataPath::Fabric { provider }, Conn::Stream(stream)) => {
            let engine = FabricEngine::start(
                stream,
                opts.zmtp_config(socket_type),
                provider.as_deref(),
                fabric_writes(socket_type, opts),
                opts,
                spin,
                token,
                poller,
                now,
            )?;
            Ok(Box::new(engine))
        }
        (DataPath::Datagram { framing, dirs }, Conn::Datagram(socket)) => {
            let engine = UdpEngine::new(socket, *framing, *dirs, token, poller)
                .map_err(|e| format!("cannot register the udp socket: {e}"))?;
            Ok(Box::new(engine))
        }
        (DataPath::Datagram { .. }, Conn::Stream(_)) => {
            Err("a connection on the udp data path".into())
        }
        (_, Conn::Datagram(_)) => Err("a udp socket on a connection's data path".into()),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// What the socket's thread writes is decided here for every engine:
    /// a fabric socket that spins or sends unbuffered writes each message
    /// while the wire is idle, as REQ and REP do; subscribers never, even
    /// spinning.
    #[test]
    fn what_the_sockets_thread_writes_is_decided_here() {
        let plain = Options::default();
        let spinning = Options {
            spin_us: 50,
            ..Options::default()
        };
        let mut unbuffered = Options::default();
        unbuffered.fabric.buffered = false;
        assert_eq!(socket_writes(SocketType::Push), SocketWrites::WhenFull);
        assert_eq!(socket_writes(SocketType::Stream), SocketWrites::WhenFull);
        assert_eq!(socket_writes(SocketType::Req), SocketWrites::WhenIdle);
        assert_eq!(socket_writes(SocketType::Sub), SocketWrites::Never);
        assert_eq!(socket_writes(SocketType::XSub), SocketWrites::Never);
        assert_eq!(
            fabric_writes(SocketType::Push, &plain),
            SocketWrites::WhenFull
        );
        for opts in [&spinning, &unbuffered] {
            assert_eq!(
                fabric_writes(SocketType::Push, opts),
                SocketWrites::WhenIdle
            );
            assert_eq!(fabric_writes(SocketType::Pub, opts), SocketWrites::WhenIdle);
            assert_eq!(fabric_writes(SocketType::Sub, opts), SocketWrites::Never);
            assert_eq!(fabric_writes(SocketType::Rep, opts), SocketWrites::WhenIdle);
        }
    }
}
