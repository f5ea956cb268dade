//! Socket options: storage, defaults (libzmq's) and validation.
//!
//! Options are read when they matter, as in libzmq: HWMs and identity when
//! a pipe or connection is made, linger when the socket closes, timeouts on
//! each call.

use std::time::Duration;

use std::fmt;

use bytes::Bytes;
use fabriq_zmtp::{CurveKeyPair, CurvePublicKey, CurveSecretKey, MechanismConfig, Properties};
use zeroize::Zeroizing;

use crate::accept_filter::AcceptFilters;
use crate::error::{err, Error, Result};
use crate::inproc::WeakRegistry;
use crate::mechanism::Mechanism;

/// Bytes asked for per read when no large frame is arriving: enough to
/// batch many small messages per system call, small enough that preparing
/// the buffer stays cheap for one small message.
const READ_CHUNK: usize = 16 * 1024;

/// One socket's options. Defaults are libzmq 4.3's.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub sndhwm: i32,
    pub rcvhwm: i32,
    pub linger: i32,
    pub identity: Bytes,
    pub rcvtimeo: i32,
    pub sndtimeo: i32,
    pub reconnect_ivl: i32,
    pub reconnect_ivl_max: i32,
    pub immediate: bool,
    pub conflate: bool,
    pub router_mandatory: bool,
    pub router_handover: bool,
    /// DEALER, ROUTER, REQ: an empty message to each new peer.
    pub probe_router: bool,
    /// `ZMQ_SOCKS_PROXY`: tcp connects go through this SOCKS5 proxy.
    pub socks_proxy: String,
    /// `ZMQ_TCP_ACCEPT_FILTER`, `ZMQ_IPC_FILTER_*`: which peers a
    /// listener keeps (all when empty).
    pub accept_filters: AcceptFilters,
    /// `ZMQ_USE_FD`: binds take this listening socket (-1: none).
    pub use_fd: i32,
    /// `ZMQ_CONNECT_ROUTING_ID`: the routing id a ROUTER or STREAM gives
    /// the peer of its next connect (empty: none; each connect takes it).
    pub connect_routing_id: Bytes,
    /// `ZMQ_STREAM_NOTIFY`: a STREAM delivers an empty message when a
    /// peer connects or goes away.
    pub stream_notify: bool,
    /// `ZMQ_INVERT_MATCHING`: PUB/XPUB send to the peers whose
    /// subscriptions do not match, SUB keeps what does not match.
    pub invert_matching: bool,
    pub req_relaxed: bool,
    pub req_correlate: bool,
    pub maxmsgsize: i64,
    pub heartbeat_ivl: i32,
    pub heartbeat_ttl: i32,
    pub heartbeat_timeout: i32,
    pub handshake_ivl: i32,
    pub connect_timeout: i32,
    pub tcp_keepalive: i32,
    pub tcp_keepalive_cnt: i32,
    pub tcp_keepalive_idle: i32,
    pub tcp_keepalive_intvl: i32,
    pub ipv6: bool,
    /// ZMQ_MULTICAST_LOOP (draft): a udp multicast sender's own host
    /// receives what it sends (IP_MULTICAST_LOOP / IPV6_MULTICAST_LOOP).
    pub multicast_loop: bool,
    pub xpub_verbose: bool,
    pub xpub_verbose_unsubscribe: bool,
    pub xpub_welcome_msg: Option<Bytes>,
    pub xpub_manual: bool,
    pub xpub_nodrop: bool,
    pub sndbuf: i32,
    pub rcvbuf: i32,
    pub backlog: i32,
    pub tos: i32,
    pub affinity: u64,
    pub rate: i32,
    pub recovery_ivl: i32,
    pub multicast_hops: i32,
    pub metadata: Properties,
    /// PLAIN, CURVE and ZAP options.
    pub security: Security,
    /// The fabric data path's options (`ofi+` endpoints).
    pub fabric: FabricOptions,
    /// How long a blocking send or receive reads and writes its
    /// connections on the calling thread before it sleeps, in µs (0: it
    /// sleeps at once).
    pub spin_us: i32,
}

/// How an `ofi+` connection moves messages (docs/fabric.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FabricOptions {
    /// Coalesce messages into pages (true), or send each message at once
    /// in its own page(s).
    pub buffered: bool,
    /// Buffered mode: how long a partly filled page may wait for more
    /// messages, in µs (0: it goes as soon as nothing more is queued).
    pub flush_us: i32,
    /// Bytes per registered page.
    pub page_size: i32,
    /// Registered pages per fabric endpoint.
    pub page_count: i32,
    /// Seal every page (XSalsa20-Poly1305, `reactor/seal.rs`) under a
    /// per-direction key sent inside the CURVE-encrypted control
    /// connection; frames larger than a page are then streamed through
    /// sealed pages instead of lent for RMA reads. Needs CURVE.
    pub encrypt: bool,
}

impl Default for FabricOptions {
    fn default() -> Self {
        FabricOptions {
            buffered: true,
            flush_us: 0,
            page_size: 64 * 1024,
            page_count: 512,
            encrypt: false,
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sndhwm: 1000,
            rcvhwm: 1000,
            linger: -1,
            identity: Bytes::new(),
            rcvtimeo: -1,
            sndtimeo: -1,
            reconnect_ivl: 100,
            reconnect_ivl_max: 0,
            immediate: false,
            conflate: false,
            router_mandatory: false,
            router_handover: false,
            probe_router: false,
            socks_proxy: String::new(),
            accept_filters: AcceptFilters::default(),
            use_fd: -1,
            connect_routing_id: Bytes::new(),
            stream_notify: true,
            invert_matching: false,
            req_relaxed: false,
            req_correlate: false,
            maxmsgsize: -1,
            heartbeat_ivl: 0,
            heartbeat_ttl: 0,
            heartbeat_timeout: -1,
            handshake_ivl: 30_000,
            connect_timeout: 0,
            tcp_keepalive: -1,
            tcp_keepalive_cnt: -1,
            tcp_keepalive_idle: -1,
            tcp_keepalive_intvl: -1,
            ipv6: false,
            multicast_loop: true,
            xpub_verbose: false,
            xpub_verbose_unsubscribe: false,
            xpub_welcome_msg: None,
            xpub_manual: false,
            xpub_nodrop: false,
            sndbuf: -1,
            rcvbuf: -1,
            backlog: 100,
            tos: 0,
            affinity: 0,
            rate: 100,
            recovery_ivl: 10_000,
            multicast_hops: 1,
            metadata: Properties::new(),
            security: Default::default(),
            fabric: FabricOptions::default(),
            spin_us: 0,
        }
    }
}

/// Checks an integer option against its accepted range.
pub(crate) fn in_range(name: &str, value: i32, min: i32, max: i32) -> Result<i32> {
    if value < min || value > max {
        let range = if max == i32::MAX {
            format!("at least {min}")
        } else {
            format!("from {min} to {max}")
        };
        return err(
            Error::EINVAL,
            format!("{name} must be {range}, got {value}"),
        );
    }
    Ok(value)
}

/// Checks a routing id (ZMQ_ROUTING_ID / identity).
pub(crate) fn check_identity(value: &[u8]) -> Result<Bytes> {
    if value.is_empty() || value.len() > 255 {
        return err(
            Error::EINVAL,
            format!("identity must be 1 to 255 bytes, got {}", value.len()),
        );
    }
    if value[0] == 0 {
        return err(
            Error::EINVAL,
            "identity must not start with a zero byte (reserved for generated ids)",
        );
    }
    Ok(Bytes::copy_from_slice(value))
}

/// Milliseconds (with libzmq's "-1 = forever, 0 = none") as a duration.
pub(crate) fn millis(value: i32) -> Option<Duration> {
    (value > 0).then(|| Duration::from_millis(value as u64))
}

impl Options {
    /// The protocol engine's view of these options.
    pub(crate) fn zmtp_config(&self, socket_type: fabriq_zmtp::SocketType) -> fabriq_zmtp::Config {
        let mut c = fabriq_zmtp::Config::new(socket_type);
        c.identity = self.identity.clone();
        c.metadata = self.metadata.clone();
        c.max_msg_size = u64::try_from(self.maxmsgsize).ok();
        c.handshake_ivl = millis(self.handshake_ivl);
        c.heartbeat_ivl = millis(self.heartbeat_ivl);
        c.heartbeat_ttl = millis(self.heartbeat_ttl);
        c.heartbeat_timeout = millis(self.heartbeat_timeout);
        c.read_chunk = READ_CHUNK;
        c.mechanism = self.security.mechanism_config();
        c.authenticate = self.security.consults_zap();
        c
    }

    /// HWM as a queue bound (0 = none).
    pub(crate) fn hwm(value: i32) -> usize {
        usize::try_from(value).unwrap_or(0)
    }
}

/// A socket's security options (set in `security.rs`) and what they mean
/// for a connection, with libzmq 4.3's rules (`plain_server.cpp`,
/// `curve_server.cpp`, `null_mechanism.cpp`).
#[derive(Clone)]
pub(crate) struct Security {
    pub mechanism: Mechanism,
    /// The server role (`ZMQ_PLAIN_SERVER`, `ZMQ_CURVE_SERVER`).
    pub as_server: bool,
    pub plain_username: Vec<u8>,
    pub plain_password: Zeroizing<Vec<u8>>,
    pub curve_public: [u8; 32],
    pub curve_secret: Zeroizing<[u8; 32]>,
    pub curve_server: [u8; 32],
    pub zap_domain: String,
    pub zap_enforce_domain: bool,
    /// The context's inproc names, where the ZAP handler binds (weak: the
    /// registry holds options of bound sockets).
    pub names: WeakRegistry,
}

impl Default for Security {
    fn default() -> Self {
        Security {
            mechanism: Mechanism::ZMQ_NULL,
            as_server: false,
            plain_username: Vec::new(),
            plain_password: Zeroizing::new(Vec::new()),
            curve_public: [0; 32],
            curve_secret: Zeroizing::new([0; 32]),
            curve_server: [0; 32],
            zap_domain: String::new(),
            zap_enforce_domain: false,
            names: WeakRegistry::default(),
        }
    }
}

impl fmt::Debug for Security {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Security")
            .field("mechanism", &self.mechanism)
            .field("as_server", &self.as_server)
            .field("zap_domain", &self.zap_domain)
            .finish_non_exhaustive()
    }
}

impl Security {
    /// The mechanism a new connection runs.
    pub(crate) fn mechanism_config(&self) -> MechanismConfig {
        match (self.mechanism, self.as_server) {
            (Mechanism::ZMQ_PLAIN, true) => MechanismConfig::PlainServer,
            (Mechanism::ZMQ_PLAIN, false) => MechanismConfig::plain_client(
                self.plain_username.clone(),
                self.plain_password.to_vec(),
            ),
            // The server's public key follows from its secret key (libzmq
            // needs only the secret key on a server).
            (Mechanism::ZMQ_CURVE, true) => MechanismConfig::CurveServer {
                keys: CurveKeyPair::from_secret(CurveSecretKey::from_bytes(*self.curve_secret)),
            },
            // A client sends the public key it was given, as libzmq does.
            (Mechanism::ZMQ_CURVE, false) => MechanismConfig::CurveClient {
                server_public: CurvePublicKey(self.curve_server),
                keys: CurveKeyPair {
                    public: CurvePublicKey(self.curve_public),
                    secret: CurveSecretKey::from_bytes(*self.curve_secret),
                },
            },
            _ => MechanismConfig::Null,
        }
    }

    /// Whether the connection stops for a ZAP decision (the session then
    /// asks the handler, or decides as libzmq does without one):
    /// a PLAIN server always; a CURVE server unless `zap_enforce_domain`
    /// is on and no domain is set; NULL when a domain is set.
    pub(crate) fn consults_zap(&self) -> bool {
        match (self.mechanism, self.as_server) {
            (Mechanism::ZMQ_PLAIN, true) => true,
            (Mechanism::ZMQ_CURVE, true) => !self.zap_enforce_domain || !self.zap_domain.is_empty(),
            (Mechanism::ZMQ_NULL, _) => !self.zap_domain.is_empty(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zap_rules() {
        let mut s = Security {
            mechanism: Mechanism::ZMQ_CURVE,
            as_server: true,
            ..Security::default()
        };
        assert!(s.consults_zap());
        s.zap_enforce_domain = true;
        assert!(!s.consults_zap());
        s.zap_domain = "global".into();
        assert!(s.consults_zap());
        s.mechanism = Mechanism::ZMQ_NULL;
        assert!(s.consults_zap());
        s.zap_domain.clear();
        assert!(!s.consults_zap());
        s.mechanism = Mechanism::ZMQ_PLAIN;
        assert!(s.consults_zap());
        s.as_server = false;
        assert!(!s.consults_zap());
    }
}
