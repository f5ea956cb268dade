//! Starting a fabric connection: the READY metadata that tells the peer
//! how to reach us, joining (or opening) the I/O thread's node, and, once
//! the handshake is done, learning the peer's fabric fields.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fabriq_zmtp::SocketType;
use mio::Token;

use super::super::{Engine, SocketWrites, StreamEngine};
use super::conn::{Flow, Limits};
use super::node::Node;
use super::seal::Sealer;
use super::tx::Outbox;
use super::wire::{self, PageReader, PeerFabric, KEY};
use super::{addr, wake, FabricEngine};
use crate::options::Options;
use crate::spin::Spin;
use crate::transport::{Demux, Poller};

impl FabricEngine {
    /// The READY metadata that tells the peer how to reach us: our
    /// address, the token to stamp pages with, the window.
    fn metadata(
        node: &Node,
        token: u64,
        limits: &Limits,
        encrypt: bool,
    ) -> Vec<(&'static str, Bytes)> {
        // Without wait descriptors: the doorbell's name, or (without one)
        // an empty value, to be rung over the control connection. (Our
        // count of spinners is not named: `learn_peer` passes it.)
        let doorbell = (!node.cq_waitable).then(|| {
            node.doorbell
                .as_ref()
                .map_or(String::new(), |bell| bell.name.clone())
        });
        let ours = PeerFabric {
            address: node.name.clone(),
            token,
            window: node.window(),
            page: node.page_size,
            read_max: (node.rma && !encrypt).then_some(limits.read_max),
            doorbell,
            encrypt,
        };
        wire::ready_fields(&ours)
    }

    /// An engine for a connected control stream, with its node (made for
    /// this I/O thread on first use) joined to the poller. `writes` is
    /// what the socket's thread may write (`make.rs` decides it).
    #[allow(clippy::too_many_arguments)] // what a connection starts from
    pub(crate) fn start(
        stream: Box<dyn crate::transport::Stream>,
        mut config: fabriq_zmtp::Config,
        provider: Option<&str>,
        writes: SocketWrites,
        opts: &Options,
        spin: &Arc<Spin>,
        token: Token,
        poller: &mut Poller<'_>,
        now: Instant,
    ) -> Result<FabricEngine, String> {
        let local = stream.local_address();
        let fabric = opts.fabric;
        if fabric.encrypt && opts.security.mechanism != crate::Mechanism::ZMQ_CURVE {
            // Bind and connect refuse this already (transport/ofi.rs);
            // never send a page key over a control connection in clear.
            return Err("fabric_encrypt needs CURVE on the control connection".into());
        }
        let node_key = Node::key(provider, &local, &fabric);
        let node: Arc<Node> =
            poller.local(&node_key, || Node::open(provider, Some(&local), &fabric))?;
        let demux: Arc<dyn Demux> = node.clone();
        poller.join(&demux).map_err(|e| e.to_string())?;
        let (key, stamp) = node.add(token, fabric.encrypt)?;
        let peer_counts = node.peer_counts(key);
        let (sealer, page_key) = match fabric.encrypt {
            true => {
                let (sealer, key) = Sealer::generate();
                (Some(sealer), Some(key))
            }
            false => (None, None),
        };
        let max_data = config.max_msg_size;
        let limits = Limits {
            // Never more than the socket takes in one message.
            read_max: max_data.map_or(Limits::default().read_max, |m| {
                m.clamp(1, Limits::default().read_max)
            }),
            ..Limits::default()
        };
        for (name, value) in Self::metadata(&node, stamp, &limits, fabric.encrypt) {
            config
                .metadata
                .push(name, value)
                .map_err(|e| e.to_string())?;
        }
        let socket_type = config.socket_type;
        let publisher = socket_type.is_publisher();
        let alternates = matches!(socket_type, SocketType::Req | SocketType::Rep);
        let conn = fabriq_zmtp::Connection::new(config, now).map_err(|e| e.to_string())?;
        let mut control = StreamEngine::new(stream, conn, SocketWrites::Never);
        control.keep_commands(true);
        let spell = match (&node.spinners, opts.spin_us > 0) {
            (Some(c), true) => Some((spin.clone(), c.clone())),
            _ => None,
        };
        let flush_wait =
            (fabric.flush_us > 0).then(|| Duration::from_micros(fabric.flush_us as u64));
        let mut outbox = Outbox::new(node.page_size, sealer, fabric.buffered, flush_wait);
        outbox.set_tails(node.sends_pieces());
        Ok(FabricEngine {
            control,
            local,
            flow: Flow::new(node.window(), limits),
            outbox,
            node,
            key,
            remote: None,
            fabric,
            eager: writes == SocketWrites::WhenIdle,
            spins: opts.spin_us > 0,
            spell,
            counted_spell: 0,
            peer_counts,
            peer_doorbell: None,
            peer_app_bell: None,
            unrung: false,
            rendezvous: false,
            page_key,
            received: VecDeque::new(),
            pages: PageReader::new(max_data, publisher),
            max_data,
            consumed: 0,
            decoded: Vec::new(),
            subscriber: writes == SocketWrites::Never,
            alternates,
            failed: None,
            retry_at: None,
            again: Default::default(),
            pending_read: None,
            drain_end: None,
            awaits_page: false,
        })
    }

    /// The handshake (and ZAP) completed: reads the peer's fabric fields
    /// from its READY, checks its data address against the control
    /// connection, files it at the node, passes it our count of spinners
    /// (a peer with a doorbell), and grants its first credits.
    pub(super) fn learn_peer(&mut self) -> Result<(), String> {
        let props = &self
            .control
            .peer()
            .ok_or("no peer after the handshake")?
            .properties;
        let peer = wire::parse_peer(props)?;
        let encrypt = self.page_key.is_some() || self.fabric.encrypt;
        if peer.encrypt != encrypt {
            let (peer_does, we_do) = match encrypt {
                true => ("does not", "does"),
                false => ("does", "does not"),
            };
            return Err(format!(
                "the peer {peer_does} encrypt the fabric data path (fabric_encrypt) and this socket {we_do}: refused before any page was sent"
            ));
        }
        addr::check(
            &self.node.provider,
            &self.node.name,
            &peer.address,
            &self.control.peer_address(),
            &self.local,
        )?;
        let remote = self.node.authenticate(self.key, &peer.address)?;
        self.remote = Some(remote);
        self.outbox.set_limit(peer.page.min(self.node.page_size));
        if let Some(name) = peer.doorbell.as_deref().filter(|name| !name.is_empty()) {
            // Now that the peer is authenticated and its address checked:
            // our count of spinners, as a read-only descriptor on its
            // doorbell, for the connection it knows by its token (never
            // a pid or descriptor number in READY).
            self.node.send_counts(name, peer.token);
        }
        self.peer_doorbell = peer.doorbell.clone();
        self.peer_app_bell = peer
            .doorbell
            .as_deref()
            .filter(|name| !name.is_empty())
            .map(wake::app_bell_name);
        // Sealed pages only: a lent frame would be read in clear.
        self.rendezvous = self.node.rma && peer.read_max.is_some() && !encrypt;
        if let Some(key) = self.page_key.take() {
            // Our key goes before any page can (`remote` is set only now),
            // inside CURVE's boxes; the Bytes zeroize it when dropped.
            self.control
                .send_command(KEY, Bytes::from_owner(key))
                .map_err(|e| format!("cannot send the page key: {e}"))?;
        }
        // The first credits, recorded before the CREDIT can reach the peer.
        let share = self.node.share();
        let granted = self.flow.handle_handshake(peer, share);
        self.node.grant(self.key, granted);
        self.send_commands();
        Ok(())
    }
}
