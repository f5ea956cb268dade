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
    /// Raw TCP (libzmq's `ZMQ_STREAM`): speaks no ZMTP, so it never takes
    /// part in a handshake and is not in [`SocketType::ALL`].
    Stream,
}

impl SocketType {
    /// Every ZMTP socket type, in libzmq's numbering order.
    pub const ALL: [SocketType; 11] = [
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
        }
    }

    /// Parses a `Socket-Type` value. Like libzmq, names are matched exactly
    /// (upper case).
    pub fn from_name(name: &[u8]) -> Option<SocketType> {
        SocketType::ALL
            .into_iter()
            .find(|t| t.name().as_bytes() == name)
    }

    /// libzmq's numeric constant (`ZMQ_PAIR` = 0 ... `ZMQ_XSUB` = 10).
    pub fn to_raw(self) -> i32 {
        if self == SocketType::Stream {
            return 11; // ZMQ_STREAM
        }
        SocketType::ALL
            .iter()
            .position(|t| *t == self)
            .expect("every type is in ALL") as i32
    }

    /// The socket type for libzmq's numeric constant.
    pub fn from_raw(raw: i32) -> Option<SocketType> {
        usize::try_from(raw)
            .ok()
            .and_then(|i| SocketType::ALL.get(i).copied())
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
            Stream => false,
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

    /// Whether this type receives subscriptions (PUB, XPUB).
    pub fn is_publisher(self) -> bool {
        matches!(self, SocketType::Pub | SocketType::XPub)
    }

    /// Whether this type sends subscriptions (SUB, XSUB).
    pub fn is_subscriber(self) -> bool {
        matches!(self, SocketType::Sub | SocketType::XSub)
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
