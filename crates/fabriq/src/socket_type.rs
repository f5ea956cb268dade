//! The socket types, named as in the zmq crate, and their ZMTP names.

use SocketType::*;

/// Socket types, named as in the zmq crate.
#[allow(clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SocketType {
    /// Exclusive pair.
    PAIR,
    /// Publisher.
    PUB,
    /// Subscriber.
    SUB,
    /// Requester.
    REQ,
    /// Replier.
    REP,
    /// Asynchronous requester.
    DEALER,
    /// Asynchronous replier with routing.
    ROUTER,
    /// Pipeline sink.
    PULL,
    /// Pipeline source.
    PUSH,
    /// Publisher that sees subscriptions.
    XPUB,
    /// Subscriber with subscriptions as messages.
    XSUB,
    /// Raw TCP peers (tcp and ipc endpoints): messages are `[routing id,
    /// data]`, `[id, ""]` when a peer connects or goes away; sending
    /// `[id, data]` writes the bytes, `[id, ""]` closes the connection. See
    /// docs/api.md.
    ///
    /// ```
    /// use std::io::Write;
    ///
    /// let ctx = fabriq::Context::new();
    /// let stream = ctx.socket(fabriq::STREAM).unwrap();
    /// stream.set_rcvtimeo(5000).unwrap();
    /// stream.bind("tcp://127.0.0.1:*").unwrap();
    /// let endpoint = stream.get_last_endpoint().unwrap().unwrap();
    /// let mut peer = std::net::TcpStream::connect(&endpoint["tcp://".len()..]).unwrap();
    /// let notice = stream.recv_multipart(0).unwrap();
    /// assert!(notice[1].is_empty());
    /// peer.write_all(b"x").unwrap();
    /// assert_eq!(stream.recv_multipart(0).unwrap(), [notice[0].clone(), b"x".to_vec()]);
    /// ```
    STREAM,
    // ---- libzmq's draft socket types: extras, not in the zmq crate 0.10
    // (see docs/api.md, "Draft sockets"). All are single-part.
    /// Draft (extra): replies to CLIENTs by routing id
    /// ([`Message::routing_id`](crate::Message::routing_id)).
    SERVER,
    /// Draft (extra): single-part requester, load-balanced over SERVERs.
    CLIENT,
    /// Draft (extra): publishes to the DISHes that joined a message's
    /// group ([`Message::set_group`](crate::Message::set_group)).
    RADIO,
    /// Draft (extra): receives the groups it joined ([`Socket::join`](crate::Socket::join)).
    DISH,
    /// Draft (extra): single-part pipeline sink, fed by SCATTERs.
    GATHER,
    /// Draft (extra): single-part pipeline source, to GATHERs.
    SCATTER,
    /// Draft (extra): single-part exclusive pair.
    CHANNEL,
    /// Draft (extra): SERVER's routing in both directions, plus
    /// [`Socket::connect_peer`](crate::Socket::connect_peer), which connects and returns the new peer's
    /// routing id. Talks to PEERs only.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let a = ctx.socket(fabriq::PEER).unwrap();
    /// a.set_rcvtimeo(5000).unwrap();
    /// a.bind("tcp://127.0.0.1:*").unwrap();
    /// let endpoint = a.get_last_endpoint().unwrap().unwrap();
    /// let b = ctx.socket(fabriq::PEER).unwrap();
    /// b.set_rcvtimeo(5000).unwrap();
    /// let to_a = b.connect_peer(&endpoint).unwrap();
    /// let mut hello = fabriq::Message::from("hello");
    /// hello.set_routing_id(to_a).unwrap();
    /// b.send(hello, 0).unwrap();
    /// let got = a.recv_msg(0).unwrap();
    /// let mut reply = fabriq::Message::from("hi");
    /// reply.set_routing_id(got.routing_id().unwrap()).unwrap();
    /// a.send(reply, 0).unwrap();
    /// assert_eq!(&b.recv_msg(0).unwrap()[..], b"hi");
    /// ```
    PEER,
    /// Draft (extra): raw UDP datagrams over `udp://` (bind only). Each
    /// message is two frames, the peer's `"IP:PORT"` (`"[IP]:PORT"` for
    /// IPv6, with the `ipv6` option) and the body; a send gives the address
    /// frame with `SNDMORE`. See docs/api.md.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let a = ctx.socket(fabriq::DGRAM).unwrap();
    /// a.set_rcvtimeo(5000).unwrap();
    /// a.bind("udp://127.0.0.1:0").unwrap();
    /// let at = a.get_last_endpoint().unwrap().unwrap();
    /// let b = ctx.socket(fabriq::DGRAM).unwrap();
    /// b.bind("udp://127.0.0.1:0").unwrap();
    /// b.send(&at["udp://".len()..], fabriq::SNDMORE).unwrap();
    /// b.send("ping", 0).unwrap();
    /// let from = a.recv_bytes(0).unwrap();
    /// assert!(from.starts_with(b"127.0.0.1:"));
    /// assert_eq!(a.recv_bytes(0).unwrap(), b"ping");
    /// ```
    DGRAM,
}

impl SocketType {
    /// The type's ZMTP name.
    pub(crate) fn to_zmtp(self) -> Option<fabriq_zmtp::SocketType> {
        use fabriq_zmtp::SocketType as Z;
        Some(match self {
            PAIR => Z::Pair,
            PUB => Z::Pub,
            SUB => Z::Sub,
            REQ => Z::Req,
            REP => Z::Rep,
            DEALER => Z::Dealer,
            ROUTER => Z::Router,
            PULL => Z::Pull,
            PUSH => Z::Push,
            XPUB => Z::XPub,
            XSUB => Z::XSub,
            SERVER => Z::Server,
            CLIENT => Z::Client,
            RADIO => Z::Radio,
            DISH => Z::Dish,
            GATHER => Z::Gather,
            SCATTER => Z::Scatter,
            CHANNEL => Z::Channel,
            PEER => Z::Peer,
            DGRAM => Z::Dgram,
            STREAM => Z::Stream,
        })
    }
}

impl From<fabriq_zmtp::SocketType> for SocketType {
    fn from(t: fabriq_zmtp::SocketType) -> Self {
        use fabriq_zmtp::SocketType as Z;
        match t {
            Z::Pair => PAIR,
            Z::Pub => PUB,
            Z::Sub => SUB,
            Z::Req => REQ,
            Z::Rep => REP,
            Z::Dealer => DEALER,
            Z::Router => ROUTER,
            Z::Pull => PULL,
            Z::Push => PUSH,
            Z::XPub => XPUB,
            Z::XSub => XSUB,
            Z::Stream => STREAM,
            Z::Server => SERVER,
            Z::Client => CLIENT,
            Z::Radio => RADIO,
            Z::Dish => DISH,
            Z::Gather => GATHER,
            Z::Scatter => SCATTER,
            Z::Channel => CHANNEL,
            Z::Peer => PEER,
            Z::Dgram => DGRAM,
        }
    }
}
