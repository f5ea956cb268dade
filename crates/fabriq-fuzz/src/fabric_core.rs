//! The fabric connection's sans-IO core, as a hostile peer reaches it:
//! the READY fields and the check of the data address they announce
//! ([`fabric_ready`]), and the control side of a connection driven by the
//! peer's commands and by time ([`fabric_flow`]).

use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fabriq::fuzzing::{
    check_fabric_address, parse_control, parse_peer, ready_fields, Control, Effect, Flow, Limits,
    PeerFabric, Rdv, FIN_WAIT, MAX_ADDRESS, MAX_NAME, MAX_WINDOW,
};
use fabriq_zmtp::Properties;

// ---- READY fields and the data address ------------------------------------

const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;

/// The READY fields a fabric peer may send (and three others: the
/// spinner count's place and the id, which older peers sent, and the
/// socket type).
const FIELDS: [&str; 10] = [
    "X-Fabriq-Ofi-Address",
    "X-Fabriq-Ofi-Token",
    "X-Fabriq-Ofi-Window",
    "X-Fabriq-Ofi-Page",
    "X-Fabriq-Ofi-Doorbell",
    "X-Fabriq-Ofi-Rma",
    "X-Fabriq-Ofi-Spinners",
    "X-Fabriq-Ofi-Encrypt",
    "X-Fabriq-Ofi-Id",
    "Socket-Type",
];

/// IPs of a control connection's ends, as the engine gets them (text).
const IPS: [&str; 9] = [
    "127.0.0.1",
    "127.0.0.2",
    "10.0.0.1",
    "::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "fe80::1",
    "",
    "not an ip",
];

fn sockaddr_in(ip: [u8; 4], port: u16) -> Vec<u8> {
    let mut a = AF_INET.to_ne_bytes().to_vec();
    a.extend_from_slice(&port.to_be_bytes());
    a.extend_from_slice(&ip);
    a.extend_from_slice(&[0; 8]);
    a
}

fn sockaddr_in6(ip: Ipv6Addr, port: u16) -> Vec<u8> {
    let mut a = AF_INET6.to_ne_bytes().to_vec();
    a.extend_from_slice(&port.to_be_bytes());
    a.extend_from_slice(&[0; 4]);
    a.extend_from_slice(&ip.octets());
    a.extend_from_slice(&[0; 4]);
    a
}

/// A node's provider and own address: IPv4 and IPv6 socket addresses
/// (tcp, verbs over IPoIB, sockets), an shm name, a psm2-like blob.
fn own_address(sel: u8) -> (&'static str, Vec<u8>) {
    match sel % 6 {
        0 => ("tcp;ofi_rxm", sockaddr_in([127, 0, 0, 1], 4000)),
        1 => ("tcp;ofi_rxm", sockaddr_in6(Ipv6Addr::LOCALHOST, 4000)),
        2 => ("shm", b"fi_shm://1234".to_vec()),
        3 => ("psm2", vec![7; 24]),
        4 => ("verbs;ofi_rxm", sockaddr_in([10, 0, 0, 1], 7000)),
        _ => (
            "sockets",
            sockaddr_in6(Ipv4Addr::LOCALHOST.to_ipv6_mapped(), 4000),
        ),
    }
}

/// The family and IP of exactly one `sockaddr_in` (16 bytes) or
/// `sockaddr_in6` (28 bytes) as libfabric holds them.
fn sockaddr(a: &[u8]) -> Option<(u16, IpAddr)> {
    let family = u16::from_ne_bytes(a.get(..2)?.try_into().ok()?);
    match (family, a.len()) {
        (AF_INET, 16) => Some((family, IpAddr::from(<[u8; 4]>::try_from(&a[4..8]).ok()?))),
        (AF_INET6, 28) => Some((family, IpAddr::from(<[u8; 16]>::try_from(&a[8..24]).ok()?))),
        _ => None,
    }
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// The check of a peer's data address against the model of what the
/// provider does with it: its address vector reads an address in the form
/// of the node's own, as many bytes as that form has (fabriq-ofi pads a
/// shorter one with zeros). An address passes exactly when the provider
/// would send to the control connection's peer IP (at least as many bytes
/// as ours: the address vector reads nothing of ours in them); for shm,
/// exactly when the control connection runs within the host; where our
/// own address names no IP, always.
fn check_address(sel: u8, peer_sel: u8, local_sel: u8, announced: &[u8]) {
    let (provider, own) = own_address(sel);
    let peer = IPS[usize::from(peer_sel) % IPS.len()];
    let local = IPS[usize::from(local_sel) % IPS.len()];
    let verdict = check_fabric_address(provider, &own, announced, peer, local);
    let peer_ip = peer.parse::<IpAddr>().ok().map(canonical);
    let local_ip = local.parse::<IpAddr>().ok().map(canonical);
    let expected = if provider == "shm" {
        matches!((peer_ip, local_ip), (Some(p), Some(l)) if p == l || p.is_loopback())
    } else if let Some((family, _)) = sockaddr(&own) {
        let mut read = announced.to_vec();
        read.resize(own.len(), 0);
        let used = sockaddr(&read)
            .filter(|(f, _)| *f == family)
            .map(|(_, ip)| canonical(ip));
        announced.len() >= own.len() && used.is_some() && used == peer_ip
    } else {
        true
    };
    assert_eq!(
        verdict.is_ok(),
        expected,
        "{provider} node {own:?}, control {peer:?}/{local:?}, announced {announced:?}: {verdict:?}"
    );
}

/// Whether `name` is a doorbell name READY may carry.
fn good_name(name: &str) -> bool {
    name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b":._-".contains(&c))
}

/// Checks what `parse_peer` accepted: every field within its bounds, and
/// announcing it again gives it back.
fn check_peer(peer: &PeerFabric) {
    assert!(!peer.address.is_empty() && peer.address.len() <= MAX_ADDRESS);
    assert_ne!(peer.token, 0);
    assert!((1..=MAX_WINDOW).contains(&peer.window));
    assert!((64..=1 << 30).contains(&peer.page));
    assert!(peer.read_max.map_or(true, |n| n > 0));
    if let Some(name) = &peer.doorbell {
        assert!(good_name(name), "{name:?}");
    }
    let mut props = Properties::new();
    for (name, value) in ready_fields(peer) {
        props.push(name, value).expect("a valid property");
    }
    assert_eq!(
        parse_peer(&props).as_ref(),
        Ok(peer),
        "READY does not round-trip"
    );
}

fn take<'a>(input: &mut &'a [u8], n: usize) -> &'a [u8] {
    let n = n.min(input.len());
    let (head, tail) = input.split_at(n);
    *input = tail;
    head
}

fn byte(input: &mut &[u8]) -> u8 {
    take(input, 1).first().copied().unwrap_or(0)
}

/// A fabric peer's READY fields (`reactor/engine/fabric/wire.rs`) and the
/// check of the data address they announce against the control
/// connection (`.../fabric/addr.rs`).
///
/// Input: `[mode, rest...]`, `mode % 3`:
///
/// - 0, properties: `rest` is records `[field, len, value[len]]`, the
///   field one of the READY names by `field % 10`. What `parse_peer`
///   accepts is within its bounds and round-trips through `ready_fields`
///   (what fabriq announces itself).
/// - 1, fields: `[flags, address_len, token(8), window(4), page(4),
///   rma(8), doorbell_len, bytes...]` (big endian; `flags` bit 0
///   encrypt, 1 an RMA size, 2 a doorbell; the address and doorbell are
///   the next bytes). Announced with `ready_fields`, they parse back as
///   they were exactly when each is within its bounds, and are refused
///   otherwise.
/// - 2, the address check: `[node, peer_ip, local_ip, announced...]`
///   (see `check_address` for the rule, from what the provider does).
pub fn fabric_ready(data: &[u8]) {
    let Some((&mode, mut rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => {
            let mut props = Properties::new();
            while !rest.is_empty() {
                let field = FIELDS[usize::from(byte(&mut rest)) % FIELDS.len()];
                let len = usize::from(byte(&mut rest));
                let value = take(&mut rest, len);
                props
                    .push(field, Bytes::copy_from_slice(value))
                    .expect("a valid property");
            }
            if let Ok(peer) = parse_peer(&props) {
                check_peer(&peer);
            }
        }
        1 => {
            let flags = byte(&mut rest);
            let address_len = usize::from(byte(&mut rest)) * 2;
            let mut u64_of = |n: usize| {
                let mut b = [0u8; 8];
                let got = take(&mut rest, n);
                b[8 - got.len()..].copy_from_slice(got);
                u64::from_be_bytes(b)
            };
            let token = u64_of(8);
            let window = u64_of(4) as u32;
            let page = u64_of(4) as usize;
            let rma = u64_of(8);
            let doorbell_len = usize::from(byte(&mut rest));
            let address = take(&mut rest, address_len).to_vec();
            let Ok(doorbell) = String::from_utf8(take(&mut rest, doorbell_len).to_vec()) else {
                return;
            };
            let ours = PeerFabric {
                address,
                token,
                window,
                page,
                doorbell: (flags & 4 != 0).then_some(doorbell),
                read_max: (flags & 2 != 0).then_some(rma),
                encrypt: flags & 1 != 0,
            };
            let valid = !ours.address.is_empty()
                && ours.address.len() <= MAX_ADDRESS
                && ours.token != 0
                && (1..=MAX_WINDOW).contains(&ours.window)
                && (64..=1 << 30).contains(&ours.page)
                && ours.read_max.map_or(true, |n| n > 0)
                && ours.doorbell.as_deref().map_or(true, good_name);
            let mut props = Properties::new();
            for (name, value) in ready_fields(&ours) {
                props.push(name, value).expect("a valid property");
            }
            match parse_peer(&props) {
                Ok(peer) => {
                    assert!(valid, "fields out of bounds accepted: {ours:?}");
                    assert_eq!(peer, ours);
                }
                Err(why) => assert!(!valid, "valid fields refused ({why}): {ours:?}"),
            }
        }
        _ => {
            let [node, peer, local, announced @ ..] = rest else {
                return;
            };
            check_address(*node, *peer, *local, announced);
        }
    }
}

// ---- the control side of a connection ----------------------------------------

/// A [`Flow`] and a model of what it must do, driven as the fabric engine
/// drives it (`reactor/engine/fabric/mod.rs`): lending only what
/// `may_lend` allows, sending only with a credit, one rendezvous read at a
/// time, and ending the connection at the first error.
struct FlowRun {
    flow: Flow<u32>,
    limits: Limits,
    /// Our window (the most a grant may let the peer hold).
    window: u32,
    now: Instant,
    /// The peer's window, RMA size and token, once handshaken.
    peer: Option<(u32, Option<u64>, u64)>,
    credits: u32,
    sent: u64,
    /// Pages the peer may send: granted and not consumed.
    outstanding: u32,
    consumed_since_grant: u32,
    /// Lent frames by id: length, due time, the frame's tag.
    loans: BTreeMap<u32, (usize, Instant, u32)>,
    next_tag: u32,
    reading: Option<(u32, bool)>,
    peer_fin: Option<u64>,
    drain_until: Option<Instant>,
    /// Commands the flow must have queued, in order.
    out: VecDeque<(&'static [u8], Vec<u8>)>,
}

impl FlowRun {
    fn cap_check(&self) {
        let bytes: usize = self.loans.values().map(|l| l.0).sum();
        assert_eq!(self.flow.lent_bytes(), bytes, "lent bytes");
        assert_eq!(self.flow.lent_frames(), self.loans.len(), "lent frames");
        assert!(bytes <= self.limits.lent_bytes, "lent bytes over the cap");
        assert!(
            self.loans.len() <= self.limits.lent_frames,
            "lent frames over the cap"
        );
        assert_eq!(
            self.flow.may_send(),
            self.peer.is_some() && self.credits > 0
        );
        if let Some((window, ..)) = self.peer {
            assert!(self.credits <= window, "credits over the peer's window");
        }
        assert!(self.outstanding <= self.window, "a grant beyond our window");
        assert_eq!(self.flow.reading(), self.reading);
        assert_eq!(self.flow.draining(), self.drain_until.is_some());
        let due = self.loans.values().map(|l| l.1).min();
        let timeout = [due, self.drain_until].into_iter().flatten().min();
        assert_eq!(self.flow.poll_timeout(), timeout);
    }

    /// One operation; false once the connection ends.
    fn step(&mut self, op: u8, input: &mut &[u8]) -> bool {
        // After the control connection ended only timers run.
        if self.drain_until.is_some() && !matches!(op % 12, 8 | 11) {
            return true;
        }
        match op % 12 {
            0 => self.handshake(input),
            1 => return self.command(input),
            2 => self.lend(input),
            3 => self.send(),
            4 => {
                let n = u32::from(byte(input)).min(self.outstanding);
                self.flow.consumed(n);
                self.outstanding -= n;
                self.consumed_since_grant += n;
            }
            5 => self.grant(input),
            6 => return self.rdv(input),
            7 => {
                let want = self.reading.take().map(|(id, more)| {
                    self.out.push_back((b"RDVDONE", id.to_be_bytes().to_vec()));
                    more
                });
                assert_eq!(self.flow.read_done(), want);
            }
            8 => return self.time(input),
            9 => {
                let drains = self.peer_fin.is_some() && self.peer.is_some();
                assert_eq!(self.flow.handle_control_end(self.now), drains);
                if !drains {
                    return false;
                }
                self.drain_until = Some(self.now + FIN_WAIT);
            }
            10 => {
                let got = self.flow.poll_command();
                let want = self.out.pop_front();
                assert_eq!(
                    got.as_ref().map(|(n, b)| (*n, &b[..])),
                    want.as_ref().map(|(n, b)| (*n, &b[..])),
                    "commands"
                );
                if let (Some(cmd), true) = (got, byte(input) & 1 != 0) {
                    self.flow.unpoll_command(cmd);
                    self.out.push_front(want.expect("the same"));
                }
            }
            _ => {
                let arg = byte(input);
                if arg & 1 == 0 && self.drain_until.is_none() {
                    // Our FIN, last: the connection is being closed.
                    self.flow.close();
                    self.out
                        .push_back((b"FIN", self.sent.to_be_bytes().to_vec()));
                    return false;
                }
                let taken = u64::from(arg >> 1);
                assert_eq!(
                    self.flow.fin_complete(taken),
                    self.peer_fin.map_or(true, |n| taken >= n)
                );
            }
        }
        true
    }

    fn handshake(&mut self, input: &mut &[u8]) {
        let window = u32::from(u16::from_be_bytes([byte(input), byte(input)])).clamp(1, MAX_WINDOW);
        let flags = byte(input);
        let rma = u64::from(byte(input)) << 12 | 1;
        let share = u32::from(byte(input));
        let token = u64::from(u16::from_be_bytes([byte(input), byte(input)])) << 48 | 0x5eed;
        if self.peer.is_some() {
            return; // the engine learns its peer once
        }
        let read_max = (flags & 1 != 0).then_some(rma);
        let peer = PeerFabric {
            address: vec![1, 2, 3],
            token,
            window,
            page: 4096,
            doorbell: None,
            read_max,
            encrypt: false,
        };
        let give = self.flow.handle_handshake(peer, share);
        assert_eq!(give, share.min(self.window));
        if give > 0 {
            self.out.push_back((b"CREDIT", give.to_be_bytes().to_vec()));
        }
        self.peer = Some((window, read_max, token));
        self.outstanding = give;
        self.consumed_since_grant = 0;
    }

    fn command(&mut self, input: &mut &[u8]) -> bool {
        let sel = byte(input);
        let len = usize::from(byte(input) % 13);
        let body = take(input, len);
        let (name, body): (&[u8], &[u8]) = match sel % 5 {
            0 => (b"CREDIT", body),
            1 => (b"FIN", body),
            2 => (b"RING", body),
            3 => (b"RDVDONE", body),
            _ => match body.iter().position(|b| *b == 0) {
                Some(i) => (&body[..i], &body[i + 1..]),
                None => (body, &[]),
            },
        };
        let Some(control) = parse_control(name, body) else {
            return true; // ignored, as libzmq ignores unknown commands
        };
        let got = self.flow.handle_command(control);
        match control {
            Control::Ring => assert_eq!(got, Ok(Effect::Ring)),
            Control::Credit(n) => {
                let window = self.peer.map_or(0, |p| p.0);
                let credits = self.credits.saturating_add(n);
                if credits > window {
                    assert!(got.is_err(), "{n} credits beyond a window of {window}");
                    return false;
                }
                assert_eq!(got, Ok(Effect::None));
                self.credits = credits;
            }
            Control::RdvDone(id) => {
                assert_eq!(got, Ok(Effect::None));
                self.loans.remove(&id);
            }
            Control::Fin(n) => {
                assert_eq!(got, Ok(Effect::None));
                self.peer_fin = Some(n);
            }
        }
        true
    }

    fn lend(&mut self, input: &mut &[u8]) {
        let len = usize::from(u16::from_be_bytes([byte(input), byte(input)])) << 4;
        let bytes: usize = self.loans.values().map(|l| l.0).sum();
        let frames_full = self.loans.len() >= self.limits.lent_frames;
        let full = frames_full || bytes >= self.limits.lend_window;
        assert_eq!(self.flow.lending_full(), full);
        let may = self
            .peer
            .is_some_and(|(_, read_max, _)| read_max.is_some_and(|m| len as u64 <= m))
            && !frames_full
            && bytes + len <= self.limits.lent_bytes;
        assert_eq!(self.flow.may_lend(len), may, "may_lend({len})");
        if !may {
            return;
        }
        let tag = self.next_tag;
        self.next_tag += 1;
        let id = self.flow.lend(tag, len, self.now);
        let due = self.now + self.limits.lend_for;
        assert!(
            self.loans.insert(id, (len, due, tag)).is_none(),
            "lent id {id} twice"
        );
    }

    fn send(&mut self) {
        let Some((_, _, token)) = self.peer.filter(|_| self.credits > 0) else {
            return;
        };
        assert_eq!(self.flow.stamp(), token.wrapping_add(self.sent));
        self.flow.sent();
        self.credits -= 1;
        self.sent += 1;
    }

    fn grant(&mut self, input: &mut &[u8]) {
        let share = u32::from(byte(input));
        let force = byte(input) & 1 != 0;
        let got = self.flow.poll_grant(share, force);
        let held = self.outstanding;
        let s = share.min(self.window);
        let want = (self.peer.is_some()
            && self.consumed_since_grant > 0
            && held < s
            && (force || held <= s / 2))
            .then(|| s - held);
        assert_eq!(got, want, "grant of share {share} holding {held}");
        if let Some(give) = want {
            self.out.push_back((b"CREDIT", give.to_be_bytes().to_vec()));
            self.outstanding = s;
            self.consumed_since_grant = 0;
        }
    }

    fn rdv(&mut self, input: &mut &[u8]) -> bool {
        let id = u32::from(byte(input));
        let sel = byte(input);
        let more = byte(input) & 1 != 0;
        let max = byte(input);
        if self.reading.is_some() {
            return true; // frames after a rendezvous wait for its read
        }
        let read_max = self.limits.read_max;
        let len = match sel % 8 {
            0 => 0,
            1 => 1,
            2 => read_max,
            3 => read_max.saturating_add(1),
            4 => 1 << 63,
            5 => u64::MAX,
            6 => (1 << 63) + 1,
            _ => u64::from(sel) << 8,
        };
        let max_data = match max % 3 {
            0 => None,
            1 => Some(read_max / 2),
            _ => Some(u64::from(max) << 10),
        };
        let rdv = Rdv {
            id,
            len,
            addr: 0,
            key: 0x5eed,
            more,
        };
        let got = self.flow.handle_rdv(&rdv, max_data);
        let cap = max_data.map_or(read_max, |m| m.min(read_max));
        if self.peer.is_none() || len == 0 || len > cap {
            assert!(
                got.is_err(),
                "a rendezvous of {len} bytes (cap {cap}) taken"
            );
            return false;
        }
        assert_eq!(got.ok(), usize::try_from(len).ok());
        self.reading = Some((id, more));
        true
    }

    fn time(&mut self, input: &mut &[u8]) -> bool {
        let ms = u64::from(u16::from_be_bytes([byte(input), byte(input)])) * 4;
        self.now += Duration::from_millis(ms);
        let got = self.flow.handle_timeout(self.now);
        if self.drain_until.is_some_and(|t| t <= self.now) {
            assert!(got.is_err(), "the drain outlived its deadline");
            self.drain_until = None;
            return false;
        }
        let now = self.now;
        let overdue = self.loans.values().filter(|l| l.1 <= now).count();
        if overdue > 0 {
            assert!(got.is_err(), "{overdue} frames lent past their time");
            self.loans.retain(|_, l| l.1 > now);
            self.cap_check();
            return false;
        }
        assert_eq!(got, Ok(()));
        true
    }

    /// The connection ends: every lent frame comes back, and the commands
    /// queued are the model's.
    fn finish(mut self) {
        let mut back = self.flow.release_all();
        back.sort_unstable();
        let want: Vec<u32> = self.loans.values().map(|l| l.2).collect();
        let mut want = want;
        want.sort_unstable();
        assert_eq!(back, want, "released frames");
        self.loans.clear();
        assert_eq!(self.flow.lent_bytes(), 0);
        assert_eq!(self.flow.lent_frames(), 0);
        while let Some((name, body)) = self.flow.poll_command() {
            let (n, b) = self
                .out
                .pop_front()
                .expect("a command the model did not queue");
            assert_eq!((name, &body[..]), (n, &b[..]));
        }
        assert!(self.out.is_empty(), "commands not queued: {:?}", self.out);
    }
}

/// The control side of one fabric connection (`Flow`,
/// `reactor/engine/fabric/conn.rs`), driven by a hostile peer's commands
/// and by time, against a model.
///
/// Input: `[window, caps, lent_kib4, lend_s, read_kib4, ops...]`: our
/// window `% 65` pages, at most `caps % 8 + 1` frames lent, `lent_kib4 *
/// 4096` bytes lent, for `lend_s % 60 + 1` s, rendezvous reads of at most
/// `read_kib4 * 4096` bytes. Each op is a byte `% 12` and its arguments:
/// 0 the handshake (peer window u16, flags (bit 0: it reads by RMA), its
/// RMA size, our share, token); 1 a command from the peer (`[name, len,
/// body]`, the name CREDIT, FIN, RING, RDVDONE or raw up to a NUL, parsed
/// by `parse_control`); 2 lend a frame (u16 * 16 bytes) if `may_lend`
/// allows; 3 send a page if a credit allows; 4 pages consumed; 5 a grant
/// (`poll_grant`: share, force); 6 a rendezvous frame from the peer (id,
/// length class, more, MAXMSGSIZE class); 7 its read done; 8 time passes
/// (u16 * 4 ms) and the timers run; 9 the control connection ends; 10 a
/// command taken (and put back if the argument is odd); 11 our FIN (the
/// end) or `fin_complete`.
///
/// Checked after each op: lent bytes and frames equal the model's and
/// stay within the caps; the peer's credits never exceed its window and a
/// page is sent only with one, stamped with its token plus its sequence
/// number; our grants never let the peer hold more than our window;
/// `may_lend`, `poll_grant`, `handle_rdv` (lengths bounded by the cap and
/// MAXMSGSIZE, 2^63 and u64::MAX refused), the timers (a frame lent past
/// its time, a drain past FIN_WAIT, end the connection) and the commands
/// queued (CREDIT, RDVDONE, FIN, in order) agree with the model. At the
/// end every lent frame comes back.
pub fn fabric_flow(data: &[u8]) {
    let [window, caps, lent_kib4, lend_s, read_kib4, ops @ ..] = data else {
        return;
    };
    let window = u32::from(*window % 65);
    let limits = Limits {
        lent_frames: usize::from(caps % 8) + 1,
        lent_bytes: usize::from(*lent_kib4) << 12,
        // Under the bytes cap, so that both bounds are reached.
        lend_window: usize::from(*lent_kib4) << 11,
        lend_for: Duration::from_secs(u64::from(lend_s % 60) + 1),
        read_max: u64::from(*read_kib4) << 12,
    };
    let mut run = FlowRun {
        flow: Flow::new(window, limits),
        limits,
        window,
        now: Instant::now(),
        peer: None,
        credits: 0,
        sent: 0,
        outstanding: 0,
        consumed_since_grant: 0,
        loans: BTreeMap::new(),
        next_tag: 0,
        reading: None,
        peer_fin: None,
        drain_until: None,
        out: VecDeque::new(),
    };
    let mut input = ops;
    while let Some((&op, rest)) = input.split_first() {
        input = rest;
        let open = run.step(op, &mut input);
        run.cap_check();
        if !open {
            break;
        }
    }
    run.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An honest exchange reaches every part of the flow: the handshake,
    /// credits, pages, a grant, a frame lent and returned, a rendezvous
    /// read, the peer's FIN and the drain's deadline.
    #[test]
    fn an_honest_flow_passes_the_model() {
        let mut ops = vec![
            32, 3, 64, 2, 64, // window 32, 4 frames, 256 KiB, 3 s, reads up to 256 KiB
            0, 0, 8, 1, 16, 16, 0, 7, // handshake: peer window 8, RMA, share 16
            10, 0, // our CREDIT 16
            1, 0, 4, 0, 0, 0, 8, // CREDIT 8
            3, 3, 3, // three pages
            4, 12, 5, 16, 0, 10, 0, // 12 consumed, a grant of 12
            2, 0, 64, // lend 1 KiB
            1, 3, 4, 0, 0, 0, 0, // RDVDONE 0
            2, 0, 64, 8, 0, 250, // lend again, time passes (1 s)
            6, 9, 7, 0, 0, 10, 0, 7, 10, 0, // a rendezvous of 1792 bytes, read, RDVDONE
            1, 1, 8, 0, 0, 0, 0, 0, 0, 0, 3, // FIN 3
            11, 7, 11, 5, // fin_complete(3) and (2)
        ];
        // The loan runs out (2 s more): that ends the connection.
        ops.extend([8, 1, 244]);
        fabric_flow(&ops);
        fabric_flow(&ops[..ops.len() - 3]);
    }

    #[test]
    fn ready_fields_round_trip_and_addresses_follow_the_rule() {
        // A tcp peer announcing itself over a control connection from its IP.
        let mut input = vec![2, 0, 0, 0];
        input.extend(sockaddr_in([127, 0, 0, 1], 9));
        fabric_ready(&input);
        input.push(0);
        fabric_ready(&input);
        let mut short = vec![2, 0, 0, 0];
        short.extend(&sockaddr_in([127, 0, 0, 2], 9)[..8]);
        fabric_ready(&short);
        // Fields.
        let mut fields = vec![1, 0b111, 3];
        fields.extend(7u64.to_be_bytes());
        fields.extend(8u32.to_be_bytes());
        fields.extend(4096u32.to_be_bytes());
        fields.extend(1u64.to_be_bytes());
        fields.push(4);
        fields.extend(b"abcdef");
        fields.extend(b"bell");
        fabric_ready(&fields);
    }
}
