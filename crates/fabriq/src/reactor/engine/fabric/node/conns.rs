//! The connections a node files pages under: adding one with its random
//! token, authenticating its peer, its page key, its credits and window,
//! and removing it.

use super::*;

impl Node {
    /// A new connection, filed under a local key, with a fresh random
    /// token the peer is to stamp its pages with (and sealed pages if
    /// `sealed`). Returns the key and the token.
    pub(crate) fn add(&self, token: Token, sealed: bool) -> Result<(u32, u64), String> {
        let stamp = random_token().map_err(|e| format!("no randomness for a token: {e}"))?;
        let mut s = self.lock();
        let key = s.next_key;
        s.next_key = s.next_key.wrapping_add(1).max(1);
        s.conns.insert(
            key,
            NodeConn {
                token,
                inbox: Inbox::new(stamp, sealed),
                peer: None,
                in_flight: 0,
                failed: None,
                read: None,
                counts: Arc::default(),
            },
        );
        Ok((key, stamp))
    }

    /// The cell where the count of spinners `key`'s peer passes us goes
    /// ([`Node::drain_bell`]); the engine reads it when it rings, without
    /// the node's lock. Empty, and never filled, for a key not filed.
    pub(crate) fn peer_counts(&self, key: u32) -> Arc<OnceLock<SharedCounter>> {
        self.lock()
            .conns
            .get(&key)
            .map(|c| c.counts.clone())
            .unwrap_or_default()
    }

    /// The handshake of `key` completed with a peer at fabric `address`:
    /// the address goes into the address vector, and the connection
    /// claims that peer's pages from now on. Returns the peer's handle.
    pub(crate) fn authenticate(&self, key: u32, address: &[u8]) -> Result<FiAddr, String> {
        let mut s = self.lock();
        let addr = s.ep.insert_peer(address).map_err(|e| e.to_string())?;
        // A connection to this very endpoint (two sockets of one context)
        // cannot be told apart by source: its pages arrive without one,
        // like a stranger's, and are claimed by token and sequence alone.
        let source = (s.ep_reports_sources() && s.ep.own_entry() != Some(addr)).then_some(addr.0);
        let c = s.conns.get_mut(&key).ok_or("no such connection")?;
        c.peer = Some(addr);
        c.inbox.authenticate(source);
        s.by_peer.entry(addr).or_default().push(key);
        Ok(addr)
    }

    /// Takes the key the peer of `key` seals its pages with.
    pub(crate) fn set_key(&self, key: u32, page_key: &[u8]) -> Result<(), String> {
        let mut s = self.lock();
        let c = s.conns.get_mut(&key).ok_or("no such connection")?;
        c.inbox.set_key(page_key)
    }

    /// Forgets a connection.
    pub(crate) fn remove(&self, key: u32) {
        let mut s = self.lock();
        let Some(c) = s.conns.remove(&key) else {
            return;
        };
        s.page_waiters.retain(|t| *t != c.token);
        s.wanting.retain(|k| *k != key);
        if let Some(addr) = c.peer {
            if let Some(keys) = s.by_peer.get_mut(&addr) {
                keys.retain(|k| *k != key);
                if keys.is_empty() {
                    s.by_peer.remove(&addr);
                    // No connection speaks for that address any more: its
                    // pages arrive without a source from now on (and are
                    // dropped) until a handshake inserts it again. Our own
                    // entry stays.
                    if s.ep.own_entry() != Some(addr) {
                        if let Err(e) = s.ep.remove_peer(addr) {
                            tracing::debug!("cannot retire a fabric peer: {e}");
                        }
                    }
                }
            }
        }
    }

    /// Lets `key`'s peer send `pages` more pages (what we grant it in
    /// each CREDIT, recorded before the peer can see it).
    pub(crate) fn grant(&self, key: u32, pages: u32) {
        if let Some(c) = self.lock().conns.get_mut(&key) {
            c.inbox.grant(pages);
        }
    }

    /// The window of one connection: an equal share of the receives kept
    /// posted (at least one page, at most [`WINDOW`]).
    pub(crate) fn share(&self) -> u32 {
        let s = self.lock();
        let conns = s.conns.len().max(1) as u32;
        (s.posted as u32 / conns).clamp(1, self.window)
    }

    /// The most pages one peer may ever hold in flight to us.
    pub(crate) fn window(&self) -> u32 {
        self.window
    }
}

/// A random nonzero 64-bit token.
fn random_token() -> std::io::Result<u64> {
    loop {
        let mut b = [0u8; 8];
        getrandom::getrandom(&mut b).map_err(std::io::Error::other)?;
        let t = u64::from_ne_bytes(b);
        if t != 0 {
            return Ok(t);
        }
    }
}
