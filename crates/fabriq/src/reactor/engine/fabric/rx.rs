//! The receiving side of one fabric connection, as a state machine with
//! no libfabric and no clock in it: which received pages are this
//! connection's, which of those the peer was allowed to send, and the
//! order they are taken in (sealed pages opened on the way).
//!
//! # Attribution
//!
//! Every socket of an I/O thread shares its node's endpoint, and anyone
//! who learns the endpoint's address can send to it. A page therefore
//! counts as this connection's only if
//!
//! 1. the connection's handshake (and ZAP) completed: before that it has
//!    no [`Inbox::source`] and claims nothing;
//! 2. the provider's source address for the page (`FI_SOURCE`, where the
//!    provider reports one) is the address the authenticated peer
//!    announced in its READY; and
//! 3. the page's CQ data, minus our random 64-bit token (sent only in our
//!    READY, to that peer), is a sequence number within the credits we
//!    granted.
//!
//! A page that fails 1-3 is not ours ([`Claim::NotMine`]): the node
//! offers it to its other connections, and drops it if none claims it.
//! A page from the peer's address stamped with our token (to within
//! 2^32) that breaks the protocol (sent twice, or beyond its credits)
//! ends the connection ([`Claim::Refused`]): only the authenticated peer
//! knows the token.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;

use super::seal::{self, Opener};

/// A received page's buffer, as the receive path needs it (a registered
/// page of the node's pool; plain memory in the tests).
pub(crate) trait PageBuf {
    /// The bytes the page holds.
    fn filled_mut(&mut self) -> &mut [u8];
    /// The page, frozen: frames decoded from it are slices of it.
    fn freeze(self) -> Bytes;
}

/// What [`Inbox::claim`] did with a page.
#[derive(Debug)]
pub(crate) enum Claim<P> {
    /// Not this connection's: offer it to the others (or drop it).
    NotMine(P),
    /// Kept, to be taken in order.
    Taken,
    /// The peer broke the protocol with it: the page was dropped and the
    /// connection ends (see [`Inbox::failed`]).
    Refused,
}

/// The receiving side of one connection. See the module documentation.
#[derive(Debug)]
pub(crate) struct Inbox<P> {
    /// Our token: the peer stamps each page with `token + seq`.
    token: u64,
    /// The handshake completed; `Some(Some(addr))` when the node knows
    /// the peer's source address, `Some(None)` when the provider reports
    /// none (then only the token attributes a page).
    source: Option<Option<u64>>,
    /// The sequence number taken next (the pages before it were taken).
    next: u64,
    /// Pages the peer may still send: granted and not arrived yet.
    allowance: u32,
    /// Received pages by sequence number, until taken in order.
    arrived: BTreeMap<u64, P>,
    /// The connection encrypts: its pages are sealed.
    sealed: bool,
    /// The opener for the peer's pages, once its KEY came (until then
    /// sealed pages wait in `arrived`, unread).
    opener: Option<Opener>,
    /// Why the connection must end, once it must.
    failed: Option<String>,
}

impl<P: PageBuf> Inbox<P> {
    /// The receiving side of a connection whose peer stamps its pages
    /// with `token`; `sealed` if they are sealed (`fabric_encrypt`). It
    /// claims nothing until [`Inbox::authenticate`].
    pub(crate) fn new(token: u64, sealed: bool) -> Inbox<P> {
        Inbox {
            token,
            source: None,
            next: 0,
            allowance: 0,
            arrived: BTreeMap::new(),
            sealed,
            opener: None,
            failed: None,
        }
    }

    /// Our token, which the peer stamps its pages with (and names the
    /// connection by when it passes us its count of spinners).
    pub(crate) fn token(&self) -> u64 {
        self.token
    }

    /// The handshake (and ZAP) completed with a peer whose fabric address
    /// the node knows as `source` (`None` if the provider reports no
    /// source addresses): from now on its pages are claimed.
    pub(crate) fn authenticate(&mut self, source: Option<u64>) {
        self.source = Some(source);
    }

    /// Lets the peer send `pages` more pages (recorded before it can see
    /// the grant).
    pub(crate) fn grant(&mut self, pages: u32) {
        self.allowance = self.allowance.saturating_add(pages);
    }

    /// Pages the peer may still send.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn allowance(&self) -> u32 {
        self.allowance
    }

    /// Offers a received page stamped with `data`, from `src` (`None`:
    /// the provider did not say).
    pub(crate) fn claim(&mut self, data: u64, src: Option<u64>, page: P) -> Claim<P> {
        let Some(source) = self.source else {
            return Claim::NotMine(page);
        };
        if let (Some(src), Some(peer)) = (src, source) {
            if src != peer {
                return Claim::NotMine(page);
            }
        }
        let seq = data.wrapping_sub(self.token);
        let ahead = seq.wrapping_sub(self.next);
        let open = self.arrived.len() as u64 + u64::from(self.allowance);
        if ahead >= open {
            // Beyond the credits but stamped with our token (within 2^32
            // pages of it): only the peer knows the token, so it is the
            // peer breaking the protocol (a forger hits this range once in
            // 2^32 guesses, and with source addresses it must also send
            // from the peer's address). Otherwise it is someone else's
            // page, or a forgery.
            if ahead < 1 << 32 && self.failed.is_none() {
                self.fail(format!(
                    "the peer sent fabric page {seq} beyond the credits it was granted"
                ));
                return Claim::Refused;
            }
            // Before what was taken: a page sent again.
            let behind = self.next.wrapping_sub(seq);
            if (1..=1 << 32).contains(&behind) && self.failed.is_none() {
                self.fail(format!("the peer sent fabric page {seq} twice"));
                return Claim::Refused;
            }
            return Claim::NotMine(page);
        }
        if self.failed.is_some() {
            return Claim::Refused;
        }
        if self.arrived.contains_key(&seq) {
            self.fail(format!("the peer sent fabric page {seq} twice"));
            return Claim::Refused;
        }
        self.allowance -= 1;
        self.arrived.insert(seq, page);
        Claim::Taken
    }

    /// Takes the key the peer seals its pages with (its `KEY` command):
    /// only one, and only on a connection that encrypts.
    pub(crate) fn set_key(&mut self, key: &[u8]) -> Result<(), String> {
        if !self.sealed {
            return Err("the peer sent a page key (it encrypts the fabric data path, fabric_encrypt) and this socket does not: refused".into());
        }
        if self.opener.is_some() {
            return Err("the peer sent a second page key".into());
        }
        self.opener = Some(Opener::new(key)?);
        Ok(())
    }

    /// Moves the pages that are next in order to `out` (a sealed page
    /// opened first; it waits while the key has not come). Returns why
    /// the connection must end, if it must.
    pub(crate) fn take_in_order(&mut self, out: &mut VecDeque<Bytes>) -> Option<String> {
        while self.failed.is_none() {
            let Some(mut page) = self.arrived.remove(&self.next) else {
                break;
            };
            let bytes = if self.sealed {
                // No key yet: the page waits (the KEY command and the
                // pages take different paths).
                let Some(opener) = self.opener.as_mut() else {
                    self.arrived.insert(self.next, page);
                    break;
                };
                if let Err(why) = opener.open(page.filled_mut()) {
                    // Nothing of it is delivered; the page goes back to the
                    // pool and the connection ends.
                    self.fail(why);
                    break;
                }
                // The frames start after the seal: still a slice of the
                // page, uncopied.
                page.freeze().slice(seal::OVERHEAD..)
            } else {
                page.freeze()
            };
            out.push_back(bytes);
            self.next = self.next.wrapping_add(1);
        }
        self.failed.clone()
    }

    /// The sequence number taken next: how many pages were taken.
    pub(crate) fn taken(&self) -> u64 {
        self.next
    }

    /// Records why the connection must end (the first reason stays).
    pub(crate) fn fail(&mut self, why: String) {
        self.failed.get_or_insert(why);
    }

    /// Why the connection must end, if it must.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    impl PageBuf for Vec<u8> {
        fn filled_mut(&mut self) -> &mut [u8] {
            self
        }
        fn freeze(self) -> Bytes {
            Bytes::from(self)
        }
    }

    const TOKEN: u64 = 0x9e37_79b9_7f4a_7c15;
    const PEER: u64 = 7;

    fn inbox(allowance: u32) -> Inbox<Vec<u8>> {
        let mut inbox = Inbox::new(TOKEN, false);
        inbox.authenticate(Some(PEER));
        inbox.grant(allowance);
        inbox
    }

    fn page(seq: u64) -> Vec<u8> {
        seq.to_be_bytes().to_vec()
    }

    fn taken(inbox: &mut Inbox<Vec<u8>>) -> Vec<u64> {
        let mut out = VecDeque::new();
        assert_eq!(inbox.take_in_order(&mut out), None);
        out.iter()
            .map(|b| u64::from_be_bytes(b[..8].try_into().unwrap()))
            .collect()
    }

    /// Pages complete in any order and are taken in sequence order, each
    /// once, within the credits granted.
    #[test]
    fn pages_are_taken_in_order_once_and_within_the_credits_granted() {
        let mut inbox = inbox(4);
        for seq in [1, 0, 3] {
            let claim = inbox.claim(TOKEN.wrapping_add(seq), Some(PEER), page(seq));
            assert!(matches!(claim, Claim::Taken));
        }
        assert_eq!(taken(&mut inbox), [0, 1]);
        assert!(matches!(
            inbox.claim(TOKEN.wrapping_add(2), Some(PEER), page(2)),
            Claim::Taken
        ));
        assert_eq!(taken(&mut inbox), [2, 3]);
        assert_eq!(inbox.allowance(), 0);
        // A fifth page was never granted.
        assert!(matches!(
            inbox.claim(TOKEN.wrapping_add(4), Some(PEER), page(4)),
            Claim::Refused
        ));
        assert!(inbox.failed().unwrap().contains("beyond the credits"));
    }

    #[test]
    fn a_page_sent_again_after_it_was_taken_ends_the_connection() {
        let mut inbox = inbox(4);
        assert!(matches!(
            inbox.claim(TOKEN, Some(PEER), page(0)),
            Claim::Taken
        ));
        assert_eq!(taken(&mut inbox), [0]);
        assert!(matches!(
            inbox.claim(TOKEN, Some(PEER), page(0)),
            Claim::Refused
        ));
        assert!(inbox.failed().unwrap().contains("twice"));
    }

    #[test]
    fn a_page_sent_twice_ends_the_connection() {
        let mut inbox = inbox(4);
        assert!(matches!(
            inbox.claim(TOKEN.wrapping_add(1), Some(PEER), page(1)),
            Claim::Taken
        ));
        assert!(matches!(
            inbox.claim(TOKEN.wrapping_add(1), Some(PEER), page(1)),
            Claim::Refused
        ));
        assert!(inbox.failed().unwrap().contains("twice"));
    }

    /// Nothing is claimed before the handshake completed, whatever the
    /// page says (credits come only after it).
    #[test]
    fn nothing_is_claimed_before_the_handshake() {
        let mut inbox: Inbox<Vec<u8>> = Inbox::new(TOKEN, false);
        inbox.grant(4);
        assert!(matches!(
            inbox.claim(TOKEN, Some(PEER), page(0)),
            Claim::NotMine(_)
        ));
        assert!(matches!(
            inbox.claim(TOKEN, None, page(0)),
            Claim::NotMine(_)
        ));
        assert!(inbox.failed().is_none());
    }

    /// A page from another address is not ours even with the right token
    /// and sequence number, and does not end the connection.
    #[test]
    fn a_page_from_another_address_is_not_claimed() {
        let mut inbox = inbox(4);
        assert!(matches!(
            inbox.claim(TOKEN, Some(PEER + 1), page(0)),
            Claim::NotMine(_)
        ));
        assert!(inbox.failed().is_none());
        assert!(matches!(
            inbox.claim(TOKEN, Some(PEER), page(0)),
            Claim::Taken
        ));
    }

    /// Without source addresses, a page with a wrong token is someone
    /// else's and a walk over tokens ends nothing.
    #[test]
    fn wrong_tokens_are_not_claimed_and_end_nothing() {
        let mut inbox: Inbox<Vec<u8>> = Inbox::new(TOKEN, false);
        inbox.authenticate(None);
        inbox.grant(4);
        for guess in (0..10_000u64).chain([TOKEN - (1 << 33), TOKEN + (1 << 32), TOKEN + (1 << 40)])
        {
            assert!(matches!(
                inbox.claim(guess, None, page(0)),
                Claim::NotMine(_)
            ));
        }
        assert!(inbox.failed().is_none());
        assert_eq!(inbox.allowance(), 4);
    }

    /// Sealed pages wait for the key, are opened in order, and a tampered
    /// one ends the connection without delivering anything of it.
    #[test]
    fn sealed_pages_wait_for_the_key_and_a_tampered_one_ends_it() {
        let (mut sealer, key) = seal::Sealer::generate();
        let sealed = |sealer: &mut seal::Sealer, text: &[u8]| {
            let mut page = vec![0u8; seal::OVERHEAD];
            page.extend_from_slice(text);
            sealer.seal(&mut page).unwrap();
            page
        };
        let mut inbox: Inbox<Vec<u8>> = Inbox::new(TOKEN, true);
        inbox.authenticate(Some(PEER));
        inbox.grant(4);
        let first = sealed(&mut sealer, b"first");
        assert!(matches!(
            inbox.claim(TOKEN, Some(PEER), first),
            Claim::Taken
        ));
        let mut out = VecDeque::new();
        assert_eq!(inbox.take_in_order(&mut out), None);
        assert!(out.is_empty(), "no key yet");
        inbox.set_key(&key[..]).unwrap();
        assert!(inbox.set_key(&key[..]).is_err(), "a second key");
        assert_eq!(inbox.take_in_order(&mut out), None);
        assert_eq!(out.pop_front().unwrap(), &b"first"[..]);
        let mut second = sealed(&mut sealer, b"second");
        let last = second.len() - 1;
        second[last] ^= 1;
        assert!(matches!(
            inbox.claim(TOKEN + 1, Some(PEER), second),
            Claim::Taken
        ));
        assert!(inbox.take_in_order(&mut out).is_some());
        assert!(out.is_empty());
    }
}
