//! ZMTP socket types: their wire names and which pairs may talk.

use std::fmt;

/// The socket types of ZMTP 3.x (RFC 23/37 and libzmq's `zmq.h`).
///
/// ```
/// use fabriq_zmtp::SocketType;
/// assert_eq!(SocketType::from_name(b"DEALER"), Some(SocketType::Dealer));
/// assert!(SocketType::Req.is_compatible(SocketType::Router));
/// assert!(!SocketType::Pub.is_compatible(SocketType::Pull));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SocketType {
    /// Exclusive pair.
    Pair,
    /// Publisher.
    Pub,
    /// Subscriber.
    Sub,
    /// Requester (strict send/recv alternation).
    Req,
    /// Replier (strict recv/send alternation).
    Rep,
    /// Asynchronous requester.
    Dealer,
    /// Asynchronous replier with identity routing.
    Router,
    /// Pipeline sink.
    Pull,
    /// Pipeline source.
    Push,
    /// Publisher that sees subscriptions.
    XPub,
    /// Subscriber that sends subscriptions as messages.
    XSub,
    /// Draft: replier to CLIENTs, single-part, replies by routing id.
    Server,
    /// Draft: single-part requester to SERVERs.
    Client,
    /// Draft: group publisher to DISHes.
    Radio,
    /// Draft: group subscriber (JOIN/LEAVE) to RADIOs.
    Dish,
    /// Draft: single-part pipeline sink.
    Gather,
    /// Draft: single-part pipeline source.
    Scatter,
    /// Draft: peer-to-peer with routing ids.
    Peer,
    /// Draft: single-part exclusive pair.
    Channel,
    /// Raw TCP (libzmq's `ZMQ_STREAM`): speaks no ZMTP, so it never takes
    /// part in a handshake and is not in [`SocketType::ALL`].
    Stream,
    /// Draft: raw UDP datagrams (libzmq's `ZMQ_DGRAM`), each message
    /// `[address, body]`; speaks no ZMTP either, so it is not in
    /// [`SocketType::ALL`].
    Dgram,
}

impl SocketType {
    /// Every ZMTP socket type, in libzmq's numbering order (the draft
    /// types last; libzmq's STREAM, 11, and DGRAM, 18, are not ZMTP types).
    pub const ALL: [SocketType; 19] = [
        SocketType::Pair,
        SocketType::Pub,
        SocketType::Sub,
        SocketType::Req,
        SocketType::Rep,
        SocketType::Dealer,
        SocketType::Router,
        SocketType::Pull,
        SocketType::Push,
        SocketType::XPub,
        SocketType::XSub,
        SocketType::Server,
        SocketType::Client,
        SocketType::Radio,
        SocketType::Dish,
        SocketType::Gather,
        SocketType::Scatter,
        SocketType::Peer,
        SocketType::Channel,
    ];

    /// The name sent in the `Socket-Type` property.
    pub fn name(self) -> &'static str {
        match self {
            SocketType::Pair => "PAIR",
            SocketType::Pub => "PUB",
            SocketType::Sub => "SUB",
            SocketType::Req => "REQ",
            SocketType::Rep => "REP",
            SocketType::Dealer => "DEALER",
            SocketType::Router => "ROUTER",
            SocketType::Pull => "PULL",
            SocketType::Push => "PUSH",
            SocketType::XPub => "XPUB",
            SocketType::XSub => "XSUB",
            SocketType::Stream => "STREAM",
            SocketType::Dgram => "DGRAM",
            SocketType::Server => "SERVER",
            SocketType::Client => "CLIENT",
            SocketType::Radio => "RADIO",
            SocketType::Dish => "DISH",
            SocketType::Gather => "GATHER",
            SocketType::Scatter => "SCATTER",
            SocketType::Peer => "PEER",
            SocketType::Channel => "CHANNEL",
        }
    }

    /// Parses a `Socket-Type` value. Like libzmq, names are matched exactly
    /// (upper case).
    pub fn from_name(name: &[u8]) -> Option<SocketType> {
        SocketType::ALL
            .into_iter()
            .find(|t| t.name().as_bytes() == name)
    }

    /// libzmq's numeric constant (`ZMQ_PAIR` = 0 ... `ZMQ_XSUB` = 10,
    /// the drafts `ZMQ_SERVER` = 12 ... `ZMQ_CHANNEL` = 20).
    pub fn to_raw(self) -> i32 {
        if self == SocketType::Stream {
            return 11; // ZMQ_STREAM
        }
        if self == SocketType::Dgram {
            return 18; // ZMQ_DGRAM
        }
        let i = SocketType::ALL
            .iter()
            .position(|t| *t == self)
            .expect("every type is in ALL") as i32;
        match i {
            0..=10 => i,
            // SERVER..SCATTER are 12..17 (11 is STREAM), PEER and CHANNEL
            // 19 and 20 (18 is DGRAM).
            11..=16 => i + 1,
            _ => i + 2,
        }
    }

    /// The socket type for libzmq's numeric constant.
    pub fn from_raw(raw: i32) -> Option<SocketType> {
        SocketType::ALL.into_iter().find(|t| t.to_raw() == raw)
    }

    /// Whether this is one of libzmq's draft socket types (built only
    /// with `--enable-drafts` there).
    #[inline]
    pub fn is_draft(self) -> bool {
        // A match, not `to_raw() >= 12`: this is asked on every send.
        use SocketType::*;
        matches!(
            self,
            Server | Client | Radio | Dish | Gather | Scatter | Peer | Channel
        )
    }

    /// Whether this type sends and receives single-part messages only
    /// (every draft type).
    pub fn is_single_part(self) -> bool {
        self.is_draft()
    }

    /// Whether this type uses RADIO/DISH groups: JOIN and LEAVE commands
    /// instead of SUBSCRIBE and CANCEL, each message preceded by its group
    /// frame on the wire.
    pub fn uses_groups(self) -> bool {
        matches!(self, SocketType::Radio | SocketType::Dish)
    }

    /// Whether a socket of this type may complete a handshake with a peer
    /// of type `peer` (the table of RFC 37, as libzmq enforces it).
    pub fn is_compatible(self, peer: SocketType) -> bool {
        use SocketType::*;
        match self {
            Pair => peer == Pair,
            Pub | XPub => matches!(peer, Sub | XSub),
            Sub | XSub => matches!(peer, Pub | XPub),
            Req => matches!(peer, Rep | Router),
            Rep => matches!(peer, Req | Dealer),
            Dealer => matches!(peer, Rep | Dealer | Router),
            Router => matches!(peer, Req | Dealer | Router),
            Pull => peer == Push,
            Push => peer == Pull,
            Stream | Dgram => false,
            Server => peer == Client,
            Client => peer == Server,
            Radio => peer == Dish,
            Dish => peer == Radio,
            Gather => peer == Scatter,
            Scatter => peer == Gather,
            Peer => peer == Peer,
            Channel => peer == Channel,
        }
    }

    /// Whether this type announces an `Identity` property in READY
    /// (libzmq does so for REQ, DEALER and ROUTER).
    pub fn sends_identity(self) -> bool {
        matches!(
            self,
            SocketType::Req | SocketType::Dealer | SocketType::Router
        )
    }

    /// Whether this type receives subscriptions (PUB, XPUB) or joins
    /// (RADIO).
    pub fn is_publisher(self) -> bool {
        matches!(self, SocketType::Pub | SocketType::XPub | SocketType::Radio)
    }

    /// Whether this type sends subscriptions (SUB, XSUB) or joins (DISH).
    pub fn is_subscriber(self) -> bool {
        matches!(self, SocketType::Sub | SocketType::XSub | SocketType::Dish)
    }
}

impl fmt::Display for SocketType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_numbers_match_libzmq() {
        assert_eq!(SocketType::Pair.to_raw(), 0);
        assert_eq!(SocketType::Router.to_raw(), 6);
        assert_eq!(SocketType::XSub.to_raw(), 10);
        for t in SocketType::ALL {
            assert_eq!(SocketType::from_raw(t.to_raw()), Some(t));
            assert_eq!(SocketType::from_name(t.name().as_bytes()), Some(t));
        }
        assert_eq!(SocketType::from_raw(11), None);
        assert_eq!(SocketType::Server.to_raw(), 12);
        assert_eq!(SocketType::Dish.to_raw(), 15);
        assert_eq!(SocketType::Scatter.to_raw(), 17);
        assert_eq!(SocketType::from_raw(18), None);
        assert_eq!(SocketType::Peer.to_raw(), 19);
        assert_eq!(SocketType::Channel.to_raw(), 20);
        assert_eq!(SocketType::from_raw(21), None);
        for t in SocketType::ALL {
            assert_eq!(t.is_draft(), t.to_raw() >= 12, "{t}");
        }
        assert_eq!(SocketType::from_raw(-1), None);
        assert_eq!(SocketType::from_name(b"pub"), None);
    }

    #[test]
    fn compatibility_is_symmetric() {
        for a in SocketType::ALL {
            for b in SocketType::ALL {
                assert_eq!(a.is_compatible(b), b.is_compatible(a), "{a} vs {b}");
            }
        }
    }
}
