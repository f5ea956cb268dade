//! Socket options: getters and setters in the zmq crate's names, over
//! the socket's `Options` (`options.rs`).

use bytes::Bytes;
use fabriq_zmtp::SocketType as ZmtpType;

use super::{Core, Socket};
use crate::error::{err, fail, Error, Result};
use crate::options::{check_identity, in_range};
use crate::socket_type::SocketType;

impl Socket {
    /// The socket's type.
    pub fn get_socket_type(&self) -> Result<SocketType> {
        Ok(self.shared.socket_type.into())
    }

    /// Whether the socket's type is one libzmq makes thread-safe
    /// (`ZMQ_THREAD_SAFE`: CLIENT, SERVER, RADIO, DISH, SCATTER, GATHER,
    /// PEER, CHANNEL): such a socket can be shared between threads as a
    /// [`crate::ThreadSafeSocket`].
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// assert!(ctx.socket(fabriq::SERVER).unwrap().is_thread_safe().unwrap());
    /// assert!(!ctx.socket(fabriq::ROUTER).unwrap().is_thread_safe().unwrap());
    /// ```
    pub fn is_thread_safe(&self) -> Result<bool> {
        Ok(self.shared.socket_type.is_draft())
    }

    /// The endpoint last bound or connected, with ephemeral ports resolved.
    pub fn get_last_endpoint(&self) -> Result<std::result::Result<String, Vec<u8>>> {
        Ok(Ok(self.core().last_endpoint.clone()))
    }

    /// The routing id (`ZMQ_ROUTING_ID`, also known as identity). On a
    /// STREAM, as in libzmq, the id generated for its newest peer once it
    /// has one (libzmq's test_stream sends to it).
    pub fn get_identity(&self) -> Result<Vec<u8>> {
        let mut core = self.core();
        if self.shared.socket_type == ZmtpType::Stream {
            self.process_commands(&mut core);
            if let Some(id) = core.pattern.last_generated_id() {
                return Ok(id.to_vec());
            }
        }
        Ok(core.opts.identity.to_vec())
    }

    /// Sets the routing id: 1 to 255 bytes, not starting with a zero byte.
    pub fn set_identity(&self, value: &[u8]) -> Result<()> {
        self.core().opts.identity = check_identity(value)?;
        Ok(())
    }

    /// Subscribes a SUB socket to messages starting with `topic`; on an
    /// XPUB with [`Socket::set_xpub_manual`], subscribes the peer whose
    /// subscription message was received last.
    pub fn set_subscribe(&self, topic: &[u8]) -> Result<()> {
        let mut core = self.core();
        self.manual_xpub_check(&core, "subscribe")?;
        self.process_commands(&mut core);
        core.pattern.subscribe(topic, true)
    }

    /// Removes one subscription to `topic` (XPUB_MANUAL: as
    /// [`Socket::set_subscribe`]).
    pub fn set_unsubscribe(&self, topic: &[u8]) -> Result<()> {
        let mut core = self.core();
        self.manual_xpub_check(&core, "unsubscribe")?;
        self.process_commands(&mut core);
        core.pattern.subscribe(topic, false)
    }

    fn manual_xpub_check(&self, core: &Core, what: &str) -> Result<()> {
        if self.shared.socket_type == ZmtpType::XPub && !core.opts.xpub_manual {
            return err(
                Error::EINVAL,
                format!("{what} is an option of SUB sockets, and of XPUB ones with xpub_manual"),
            );
        }
        Ok(())
    }

    /// XPUB: passes every subscription to the application, not only new
    /// topics (`ZMQ_XPUB_VERBOSE`; as in libzmq this also turns
    /// [`Socket::set_xpub_verboser`]'s verbose unsubscriptions off).
    pub fn set_xpub_verbose(&self, value: bool) -> Result<()> {
        self.xpub_only("xpub_verbose")?;
        let opts = &mut self.core().opts;
        opts.xpub_verbose = value;
        opts.xpub_verbose_unsubscribe = false;
        Ok(())
    }

    /// XPUB: passes every unsubscription to the application (fabriq's own
    /// option; libzmq has it only together with verbose subscriptions, as
    /// [`Socket::set_xpub_verboser`]).
    pub fn set_xpub_verbose_unsubscribe(&self, value: bool) -> Result<()> {
        self.xpub_only("xpub_verbose_unsubscribe")?;
        self.core().opts.xpub_verbose_unsubscribe = value;
        Ok(())
    }

    /// XPUB: passes every subscription and every unsubscription to the
    /// application (`ZMQ_XPUB_VERBOSER`; not in the zmq crate).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let xpub = ctx.socket(fabriq::XPUB).unwrap();
    /// xpub.set_xpub_verboser(true).unwrap();
    /// xpub.bind("inproc://verboser-doc").unwrap();
    /// xpub.set_rcvtimeo(5000).unwrap();
    /// let subs: Vec<_> = (0..2).map(|_| ctx.socket(fabriq::SUB).unwrap()).collect();
    /// for s in &subs {
    ///     s.connect("inproc://verboser-doc").unwrap();
    ///     s.set_subscribe(b"t").unwrap();
    ///     assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01t");
    /// }
    /// subs[0].set_unsubscribe(b"t").unwrap();
    /// assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x00t");
    /// ```
    pub fn set_xpub_verboser(&self, value: bool) -> Result<()> {
        self.xpub_only("xpub_verboser")?;
        let opts = &mut self.core().opts;
        opts.xpub_verbose = value;
        opts.xpub_verbose_unsubscribe = value;
        Ok(())
    }

    /// XPUB: subscriptions are the application's to apply
    /// (`ZMQ_XPUB_MANUAL`; not in the zmq crate). Every (un)subscription
    /// is received and none takes effect until the application calls
    /// [`Socket::set_subscribe`] / [`Socket::set_unsubscribe`] on the XPUB,
    /// which apply to the peer whose (un)subscription was received last.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let xpub = ctx.socket(fabriq::XPUB).unwrap();
    /// xpub.set_xpub_manual(true).unwrap();
    /// xpub.bind("inproc://manual-doc").unwrap();
    /// xpub.set_rcvtimeo(5000).unwrap();
    /// let sub = ctx.socket(fabriq::SUB).unwrap();
    /// sub.set_rcvtimeo(5000).unwrap();
    /// sub.connect("inproc://manual-doc").unwrap();
    /// sub.set_subscribe(b"weather").unwrap();
    /// assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01weather");
    /// xpub.send("weather: not delivered, not applied yet", 0).unwrap();
    /// // Apply it for that peer.
    /// xpub.set_subscribe(b"weather").unwrap();
    /// xpub.send("weather: sunny", 0).unwrap();
    /// assert_eq!(sub.recv_bytes(0).unwrap(), b"weather: sunny");
    /// ```
    pub fn set_xpub_manual(&self, value: bool) -> Result<()> {
        self.xpub_only("xpub_manual")?;
        self.core().opts.xpub_manual = value;
        Ok(())
    }

    /// XPUB: a message that a matching subscriber has no room for is
    /// refused with `EAGAIN` (a blocking send waits, up to the send
    /// timeout) instead of being dropped for that subscriber
    /// (`ZMQ_XPUB_NODROP`; not in the zmq crate).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let xpub = ctx.socket(fabriq::XPUB).unwrap();
    /// xpub.set_xpub_nodrop(true).unwrap();
    /// xpub.set_sndhwm(1).unwrap();
    /// xpub.bind("inproc://nodrop-doc").unwrap();
    /// let sub = ctx.socket(fabriq::SUB).unwrap();
    /// sub.set_rcvhwm(1).unwrap();
    /// sub.connect("inproc://nodrop-doc").unwrap();
    /// sub.set_subscribe(b"").unwrap();
    /// xpub.set_rcvtimeo(5000).unwrap();
    /// assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01");
    /// // The subscriber reads nothing: soon there is no room.
    /// let refused = (0..100).any(|_| xpub.send("m", fabriq::DONTWAIT).is_err());
    /// assert!(refused);
    /// ```
    pub fn set_xpub_nodrop(&self, value: bool) -> Result<()> {
        self.xpub_only("xpub_nodrop")?;
        self.core().opts.xpub_nodrop = value;
        Ok(())
    }

    /// XPUB: a message sent to each new subscriber (`None` or an empty
    /// text: none, as in libzmq).
    pub fn set_xpub_welcome_msg(&self, value: Option<&str>) -> Result<()> {
        self.xpub_only("xpub_welcome_msg")?;
        self.core().opts.xpub_welcome_msg = value.map(|v| Bytes::copy_from_slice(v.as_bytes()));
        Ok(())
    }

    fn xpub_only(&self, name: &str) -> Result<()> {
        if self.shared.socket_type != ZmtpType::XPub {
            return err(
                Error::EINVAL,
                format!("{name} is an option of XPUB sockets"),
            );
        }
        Ok(())
    }

    /// Adds an application metadata property sent to peers in the
    /// handshake (`ZMQ_METADATA`); the name must start with `X-`.
    pub fn set_metadata(&self, name: &str, value: &[u8]) -> Result<()> {
        if !name.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("x-")) {
            return err(Error::EINVAL, "metadata property names must start with X-");
        }
        self.core()
            .opts
            .metadata
            .push(name, Bytes::copy_from_slice(value))
            .map_err(|e| fail(Error::EINVAL, e.to_string()))
    }
}
/// Integer options: getter, setter, field, lowest accepted value.
macro_rules! int_options {
    ($( $(#[$doc:meta])* ($get:ident, $set:ident) => $field:ident [$min:expr, $max:expr] ),* $(,)?) => {
        impl Socket {
            $(
                $(#[$doc])*
                pub fn $get(&self) -> Result<i32> {
                    Ok(self.core().opts.$field)
                }

                $(#[$doc])*
                pub fn $set(&self, value: i32) -> Result<()> {
                    self.core().opts.$field = in_range(stringify!($field), value, $min, $max)?;
                    Ok(())
                }
            )*
        }
    };
}

int_options! {
    /// How long pending messages may delay close, in ms (-1: forever).
    (get_linger, set_linger) => linger [-1, i32::MAX],
    /// Receive timeout in ms (-1: forever).
    (get_rcvtimeo, set_rcvtimeo) => rcvtimeo [-1, i32::MAX],
    /// Send timeout in ms (-1: forever).
    (get_sndtimeo, set_sndtimeo) => sndtimeo [-1, i32::MAX],
    /// Reconnect interval in ms (-1: no reconnect).
    (get_reconnect_ivl, set_reconnect_ivl) => reconnect_ivl [-1, i32::MAX],
    /// Maximum reconnect interval in ms for exponential backoff (0: none).
    (get_reconnect_ivl_max, set_reconnect_ivl_max) => reconnect_ivl_max [0, i32::MAX],
    /// Interval between heartbeat PINGs in ms (0: off).
    (get_heartbeat_ivl, set_heartbeat_ivl) => heartbeat_ivl [0, i32::MAX],
    /// TTL announced in PINGs, in ms (rounded down to 100 ms).
    (get_heartbeat_ttl, set_heartbeat_ttl) => heartbeat_ttl [0, 6_553_599],
    /// Time to wait for traffic after a PING, in ms (default -1: the
    /// interval; only 0 and above can be set, as in libzmq).
    (get_heartbeat_timeout, set_heartbeat_timeout) => heartbeat_timeout [0, i32::MAX],
    /// Time allowed for the ZMTP handshake, in ms (0: unlimited).
    (get_handshake_ivl, set_handshake_ivl) => handshake_ivl [0, i32::MAX],
    /// Time allowed for a tcp connect, in ms (0: the OS default).
    (get_connect_timeout, set_connect_timeout) => connect_timeout [0, i32::MAX],
    /// SO_KEEPALIVE (-1: OS default, 0: off, 1: on).
    (get_tcp_keepalive, set_tcp_keepalive) => tcp_keepalive [-1, 1],
    /// TCP_KEEPCNT (-1: OS default).
    (get_tcp_keepalive_cnt, set_tcp_keepalive_cnt) => tcp_keepalive_cnt [-1, i32::MAX],
    /// TCP_KEEPIDLE in s (-1: OS default).
    (get_tcp_keepalive_idle, set_tcp_keepalive_idle) => tcp_keepalive_idle [-1, i32::MAX],
    /// TCP_KEEPINTVL in s (-1: OS default).
    (get_tcp_keepalive_intvl, set_tcp_keepalive_intvl) => tcp_keepalive_intvl [-1, i32::MAX],
    /// SO_SNDBUF in bytes (-1: OS default).
    (get_sndbuf, set_sndbuf) => sndbuf [-1, i32::MAX],
    /// SO_RCVBUF in bytes (-1: OS default).
    (get_rcvbuf, set_rcvbuf) => rcvbuf [-1, i32::MAX],
    /// Listen backlog.
    (get_backlog, set_backlog) => backlog [0, i32::MAX],
    /// IP type-of-service.
    (get_tos, set_tos) => tos [0, i32::MAX],
    /// Multicast rate (recorded; no multicast transport).
    (get_rate, set_rate) => rate [1, i32::MAX],
    /// Multicast recovery interval (recorded; no multicast transport).
    (get_recovery_ivl, set_recovery_ivl) => recovery_ivl [0, i32::MAX],
    /// Multicast hops: the TTL (IPv4) or hop limit (IPv6) of what a RADIO
    /// sends to a `udp://` multicast group (default 1: this network only).
    (get_multicast_hops, set_multicast_hops) => multicast_hops [1, i32::MAX],
    /// fabriq extra: how long a blocking send or receive keeps reading and
    /// writing its connections on the calling thread before it sleeps, in
    /// µs (0, the default: sleep at once). Spinning trades a core for
    /// latency; over `ofi+` endpoints it polls the completion queue as
    /// `fi_pingpong` does. Applies to sockets with up to 8 connections.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let rep = ctx.socket(fabriq::REP).unwrap();
    /// rep.set_spin_us(50).unwrap();
    /// assert_eq!(rep.get_spin_us().unwrap(), 50);
    /// assert!(rep.set_spin_us(-1).is_err());
    /// ```
    (get_spin_us, set_spin_us) => spin_us [0, 10_000_000],
}

/// Options of the fabric data path, `ofi+` endpoints (fabriq extras; see
/// docs/fabric.md). They apply to connections made after they are set.
macro_rules! fabric_int_options {
    ($( $(#[$doc:meta])* ($get:ident, $set:ident) => $field:ident [$min:expr, $max:expr] ),* $(,)?) => {
        impl Socket {
            $(
                $(#[$doc])*
                pub fn $get(&self) -> Result<i32> {
                    Ok(self.core().opts.fabric.$field)
                }

                $(#[$doc])*
                pub fn $set(&self, value: i32) -> Result<()> {
                    self.core().opts.fabric.$field =
                        in_range(concat!("fabric_", stringify!($field)), value, $min, $max)?;
                    Ok(())
                }
            )*
        }
    };
}

fabric_int_options! {
    /// Buffered mode: how long a partly filled page may wait for more
    /// messages before it is sent, in µs (0, the default: it goes as soon
    /// as the socket has nothing more queued).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let push = ctx.socket(fabriq::PUSH).unwrap();
    /// push.set_fabric_flush_us(100).unwrap();
    /// assert_eq!(push.get_fabric_flush_us().unwrap(), 100);
    /// ```
    (get_fabric_flush_us, set_fabric_flush_us) => flush_us [0, 10_000_000],
    /// Bytes per registered page (default 64 KiB; 4 KiB to 64 MiB). A
    /// page is the unit a fabric send carries; peers may differ (a sender
    /// fills at most the receiver's page size).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let push = ctx.socket(fabriq::PUSH).unwrap();
    /// assert_eq!(push.get_fabric_page_size().unwrap(), 65536);
    /// assert!(push.set_fabric_page_size(1000).is_err());
    /// ```
    (get_fabric_page_size, set_fabric_page_size) => page_size [4096, 64 << 20],
    /// Registered pages per fabric endpoint (default 512; at least 16).
    /// A quarter (at most 128) are kept posted for receiving.
    (get_fabric_page_count, set_fabric_page_count) => page_count [16, 1 << 20],
}

impl Socket {
    /// Whether `ofi+` connections coalesce messages into pages (true, the
    /// default) or send each message at once in its own page(s)
    /// (unbuffered: lowest latency, one fabric send per message).
    pub fn is_fabric_buffered(&self) -> Result<bool> {
        Ok(self.core().opts.fabric.buffered)
    }

    /// Chooses the fabric send mode; see [`Socket::is_fabric_buffered`].
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let push = ctx.socket(fabriq::PUSH).unwrap();
    /// push.set_fabric_buffered(false).unwrap();
    /// assert!(!push.is_fabric_buffered().unwrap());
    /// ```
    pub fn set_fabric_buffered(&self, value: bool) -> Result<()> {
        self.core().opts.fabric.buffered = value;
        Ok(())
    }

    /// Whether `ofi+` connections encrypt their data path (false, the
    /// default): see [`Socket::set_fabric_encrypt`].
    pub fn is_fabric_encrypt(&self) -> Result<bool> {
        Ok(self.core().opts.fabric.encrypt)
    }

    /// Encrypts the fabric data path of `ofi+` connections made after
    /// this is set: every page is one XSalsa20-Poly1305 box under a fresh
    /// random key per direction, which each side sends the other inside
    /// the CURVE-encrypted control connection (a `KEY` command) before
    /// its first page. Frames larger than a page are streamed through
    /// sealed pages instead of being read by RMA, so nothing crosses the
    /// fabric in clear. Both peers must set it: a connection between one
    /// that does and one that does not is refused at the handshake.
    ///
    /// It needs CURVE (`set_curve_server(true)` or
    /// `set_curve_serverkey`), whose confidentiality carries the page
    /// keys: `bind` and `connect` of an `ofi+` endpoint on a socket with
    /// this option and the NULL or PLAIN mechanism fail with `EINVAL`,
    /// saying so. Other transports ignore the option (use CURVE there).
    /// Its cost is measured in docs/fabric.md.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let push = ctx.socket(fabriq::PUSH).unwrap();
    /// push.set_fabric_encrypt(true).unwrap();
    /// assert!(push.is_fabric_encrypt().unwrap());
    /// // Without CURVE there is nothing to carry the page keys.
    /// let e = push.connect("ofi+tcp://127.0.0.1:5555").unwrap_err();
    /// assert_eq!(e, fabriq::Error::EINVAL);
    /// ```
    pub fn set_fabric_encrypt(&self, value: bool) -> Result<()> {
        self.core().opts.fabric.encrypt = value;
        Ok(())
    }
}

/// Boolean options.
macro_rules! bool_options {
    ($( $(#[$doc:meta])* ($get:ident, $set:ident) => $field:ident ),* $(,)?) => {
        impl Socket {
            $(
                $(#[$doc])*
                pub fn $get(&self) -> Result<bool> {
                    Ok(self.core().opts.$field)
                }

                $(#[$doc])*
                pub fn $set(&self, value: bool) -> Result<()> {
                    self.core().opts.$field = value;
                    Ok(())
                }
            )*
        }
    };
}

bool_options! {
    /// Queue messages only on completed connections.
    (is_immediate, set_immediate) => immediate,
    /// Keep only the newest message in each queue.
    (is_conflate, set_conflate) => conflate,
    /// Use IPv6 as well as IPv4.
    (is_ipv6, set_ipv6) => ipv6,
    /// Draft (libzmq's `ZMQ_MULTICAST_LOOP`, on by default): whether a
    /// RADIO sending to a `udp://` multicast group also delivers to
    /// receivers on its own host (`IP_MULTICAST_LOOP` /
    /// `IPV6_MULTICAST_LOOP`). Read when the RADIO connects, as libzmq
    /// reads it when its engine starts.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let radio = ctx.socket(fabriq::RADIO).unwrap();
    /// assert!(radio.is_multicast_loop().unwrap());
    /// radio.set_multicast_loop(false).unwrap();
    /// radio.connect("udp://239.0.0.1:5555").unwrap();
    /// ```
    (is_multicast_loop, set_multicast_loop) => multicast_loop,
}

/// Boolean options that only one socket type has (EINVAL elsewhere, as in
/// libzmq).
macro_rules! typed_bool_options {
    ($( $(#[$doc:meta])* ($get:ident, $set:ident) => $field:ident for $ty:ident ),* $(,)?) => {
        impl Socket {
            $(
                $(#[$doc])*
                pub fn $get(&self) -> Result<bool> {
                    Ok(self.core().opts.$field)
                }

                $(#[$doc])*
                pub fn $set(&self, value: bool) -> Result<()> {
                    if self.shared.socket_type != ZmtpType::$ty {
                        return err(
                            Error::EINVAL,
                            format!("{} is an option of {} sockets", stringify!($field), ZmtpType::$ty),
                        );
                    }
                    self.core().opts.$field = value;
                    Ok(())
                }
            )*
        }
    };
}

/// Boolean options of one socket type that libzmq 4.3 can set but not
/// read: the setter answers EINVAL on other socket types, the getter
/// always answers EINVAL (as `zmq_getsockopt` does for them).
macro_rules! write_only_bool_options {
    ($( $(#[$doc:meta])* ($get:ident, $set:ident) => $field:ident for $($ty:ident)|+ ),* $(,)?) => {
        impl Socket {
            $(
                $(#[$doc])*
                ///
                /// The getter fails with `EINVAL`: libzmq 4.3 has no getter
                /// for this option.
                pub fn $get(&self) -> Result<bool> {
                    err(
                        Error::EINVAL,
                        format!("{} cannot be read (libzmq 4.3 has no getter for it)", stringify!($field)),
                    )
                }

                $(#[$doc])*
                pub fn $set(&self, value: bool) -> Result<()> {
                    if !matches!(self.shared.socket_type, $(ZmtpType::$ty)|+) {
                        return err(
                            Error::EINVAL,
                            format!("{} is an option of {} sockets", stringify!($field), stringify!($($ty)|+)),
                        );
                    }
                    self.core().opts.$field = value;
                    Ok(())
                }
            )*
        }
    };
}

write_only_bool_options! {
    /// ROUTER: refuse unroutable messages (EHOSTUNREACH) instead of
    /// dropping them, and say EAGAIN when the peer's pipe is full.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let router = ctx.socket(fabriq::ROUTER).unwrap();
    /// router.set_router_mandatory(true).unwrap();
    /// let sent = router.send_multipart(["nobody", "hello"], fabriq::DONTWAIT);
    /// assert_eq!(sent, Err(fabriq::Error::EHOSTUNREACH));
    /// ```
    (is_router_mandatory, set_router_mandatory) => router_mandatory for Router,
    /// ROUTER: a new peer with a taken identity takes it over.
    (is_router_handover, set_router_handover) => router_handover for Router,
    /// DEALER, ROUTER, REQ: send an empty message to each new peer as soon
    /// as it is attached (`ZMQ_PROBE_ROUTER`), so that a ROUTER learns the
    /// peer's routing id before it says anything.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let router = ctx.socket(fabriq::ROUTER).unwrap();
    /// router.bind("inproc://probe-doc").unwrap();
    /// let dealer = ctx.socket(fabriq::DEALER).unwrap();
    /// dealer.set_identity(b"d1").unwrap();
    /// dealer.set_probe_router(true).unwrap();
    /// dealer.connect("inproc://probe-doc").unwrap();
    /// router.set_rcvtimeo(5000).unwrap();
    /// assert_eq!(router.recv_multipart(0).unwrap(), [b"d1".to_vec(), Vec::new()]);
    /// ```
    (is_probe_router, set_probe_router) => probe_router for Dealer | Router | Req,
}

typed_bool_options! {
    /// REQ: allow a new request before the reply to the previous one.
    (is_req_relaxed, set_req_relaxed) => req_relaxed for Req,
    /// REQ: match replies to requests with a request id.
    (is_req_correlate, set_req_correlate) => req_correlate for Req,
}

impl Socket {
    /// Send high-water mark, in messages per peer (0: none).
    pub fn get_sndhwm(&self) -> Result<i32> {
        Ok(self.core().opts.sndhwm)
    }

    /// Sets the send high-water mark, in messages per peer (0: none). As
    /// in libzmq it applies to the connections the socket has as well as
    /// to later ones (an inproc pipe holds both sides' HWMs); a lower one
    /// keeps what is queued and takes no more until the queue is under
    /// it.
    pub fn set_sndhwm(&self, value: i32) -> Result<()> {
        let mut core = self.core();
        core.opts.sndhwm = in_range("sndhwm", value, 0, i32::MAX)?;
        core.update_hwms(true);
        Ok(())
    }

    /// Receive high-water mark, in messages per peer (0: none).
    pub fn get_rcvhwm(&self) -> Result<i32> {
        Ok(self.core().opts.rcvhwm)
    }

    /// Sets the receive high-water mark, in messages per peer (0: none);
    /// applies to existing connections too, as [`Socket::set_sndhwm`].
    pub fn set_rcvhwm(&self, value: i32) -> Result<()> {
        let mut core = self.core();
        core.opts.rcvhwm = in_range("rcvhwm", value, 0, i32::MAX)?;
        core.update_hwms(false);
        Ok(())
    }

    /// Largest accepted message frame in bytes (-1: no limit).
    pub fn get_maxmsgsize(&self) -> Result<i64> {
        Ok(self.core().opts.maxmsgsize)
    }

    /// Sets the largest accepted frame; a peer sending more is
    /// disconnected.
    pub fn set_maxmsgsize(&self, value: i64) -> Result<()> {
        // Any negative value means no limit, as in libzmq.
        self.core().opts.maxmsgsize = value.max(-1);
        Ok(())
    }

    /// I/O thread affinity (recorded; one I/O thread).
    pub fn get_affinity(&self) -> Result<u64> {
        Ok(self.core().opts.affinity)
    }

    /// Sets the I/O thread affinity (recorded; one I/O thread).
    pub fn set_affinity(&self, value: u64) -> Result<()> {
        self.core().opts.affinity = value;
        Ok(())
    }
}

impl Socket {
    /// The SOCKS5 proxy recorded with [`Socket::set_socks_proxy`] (empty:
    /// none).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let s = ctx.socket(fabriq::DEALER).unwrap();
    /// s.set_socks_proxy(Some("127.0.0.1:1080")).unwrap();
    /// assert_eq!(s.get_socks_proxy().unwrap().unwrap(), "127.0.0.1:1080");
    /// s.set_socks_proxy(None).unwrap();
    /// assert_eq!(s.get_socks_proxy().unwrap().unwrap(), "");
    /// ```
    pub fn get_socks_proxy(&self) -> Result<std::result::Result<String, Vec<u8>>> {
        Ok(Ok(self.core().opts.socks_proxy.clone()))
    }

    /// Sets a SOCKS5 proxy, `HOST:PORT` (`ZMQ_SOCKS_PROXY`; `None` or an
    /// empty text: none): later tcp connects go through it, as libzmq's:
    /// "no authentication", then a CONNECT for the endpoint's address (a
    /// host name is passed for the proxy to resolve).
    pub fn set_socks_proxy(&self, value: Option<&str>) -> Result<()> {
        self.core().opts.socks_proxy = value.unwrap_or("").to_string();
        Ok(())
    }
}
