//! The fabric engine's wire formats as plain functions and one small
//! state machine, with no node, endpoint or libfabric in them: how
//! received pages are cut into frames ([`PageReader`]), the rendezvous
//! frame's body ([`Rdv`]), the control-channel commands ([`Control`]) and
//! the fabric fields of a peer's READY ([`PeerFabric`]).
//!
//! The engine (`fabric/mod.rs`) drives them; they are apart so that the fuzz targets
//! (`fuzz/`, through `crate::fuzzing`) reach exactly the code that parses
//! what a fabric peer sends.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use fabriq_zmtp::copies::{self, Site};
use fabriq_zmtp::frame::FrameDecoder;
use fabriq_zmtp::Part;
use fabriq_zmtp::{Command, Multipart, Properties, ProtocolError};

/// The most a receiver reserves up front for a frame that spans pages
/// (larger ones grow as their pages come).
const RESERVE_MAX: usize = 16 << 20;

/// The page-stream command that stands for a message frame the receiver
/// reads from the sender's memory (a rendezvous): body `id` u32, `len`
/// u64, `addr` u64, `key` u64, `more` u8, big endian.
pub(crate) const RDV: &[u8] = b"RDV";
/// The control-channel command that returns credits (body: u32, big
/// endian).
pub(crate) const CREDIT: &[u8] = b"CREDIT";
/// The control-channel command a closing peer sends last: how many pages
/// it sent (u64, big endian), so the receiver takes them all before it
/// ends the connection.
pub(crate) const FIN: &[u8] = b"FIN";
/// The control-channel command that wakes a receiver without wait
/// descriptors (empty body).
pub(crate) const RING: &[u8] = b"RING";
/// The control-channel command a receiver sends when it has read a lent
/// frame (body: the id, u32): the sender lets the memory go.
pub(crate) const RDV_DONE: &[u8] = b"RDVDONE";

/// The control-channel command that carries the sender's page key (body:
/// 32 bytes) when the data path is encrypted; sent once, after the
/// handshake and before the first page, inside CURVE's boxes.
pub(crate) const KEY: &[u8] = b"KEY";

/// READY metadata of a fabric connection.
pub(crate) const PROP_ADDRESS: &str = "X-Fabriq-Ofi-Address";
/// The token the peer stamps its pages with (16 hex digits): its pages'
/// CQ data is the token plus the page's sequence number. Random, and
/// sent only in READY, which goes out after the handshake and ZAP.
pub(crate) const PROP_TOKEN: &str = "X-Fabriq-Ofi-Token";
pub(crate) const PROP_WINDOW: &str = "X-Fabriq-Ofi-Window";
/// The receiver's page size: a sender fills no more of a page.
pub(crate) const PROP_PAGE: &str = "X-Fabriq-Ofi-Page";
/// Present when the receiver's node has no wait descriptor to sleep on:
/// the sender then rings it after sending pages, so it does not wait for
/// its next poll: a datagram to the doorbell named, or (the value empty)
/// a `RING` command on the control connection. The count of spinning
/// sockets a node with a doorbell keeps is not named in READY: it is
/// passed as a descriptor on the peer's doorbell (`wake.rs`).
pub(crate) const PROP_DOORBELL: &str = "X-Fabriq-Ofi-Doorbell";
/// Present when the node can lend memory for RMA reads and read it: the
/// largest frame it reads from a peer's memory (decimal bytes; larger
/// frames come through pages).
pub(crate) const PROP_RMA: &str = "X-Fabriq-Ofi-Rma";
/// `1` when the node seals its pages (`fabric_encrypt`); both sides must
/// agree.
pub(crate) const PROP_ENCRYPT: &str = "X-Fabriq-Ofi-Encrypt";

/// What the page stream carried, one item at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageItem {
    /// A whole message.
    Msg(Multipart),
    /// A subscription (publishers only).
    Subscribe(Bytes),
    /// A cancelled subscription (publishers only).
    Cancel(Bytes),
    /// A frame to read from the sender's memory; the frames after it wait
    /// until it is read and given to [`PageReader::push_part`].
    Rdv(Rdv),
}

/// A rendezvous frame's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rdv {
    /// The sender's id for the lent frame (sent back in `RDVDONE`).
    pub id: u32,
    /// The frame's length.
    pub len: u64,
    /// Its address in the sender's registered memory.
    pub addr: u64,
    /// The memory's remote key.
    pub key: u64,
    /// Whether more frames of its message follow.
    pub more: bool,
}

/// The body of an RDV command's frame: the name (length byte and
/// `RDV`) and the 29 bytes of [`Rdv`].
pub(crate) const RDV_FRAME_LEN: usize = 4 + 29;

impl Rdv {
    /// The command frame's body (name included), as the sender stages it.
    pub fn encode(&self) -> BytesMut {
        let mut fields = BytesMut::with_capacity(RDV_FRAME_LEN - 4);
        fields.extend_from_slice(&self.id.to_be_bytes());
        fields.extend_from_slice(&self.len.to_be_bytes());
        fields.extend_from_slice(&self.addr.to_be_bytes());
        fields.extend_from_slice(&self.key.to_be_bytes());
        fields.extend_from_slice(&[u8::from(self.more)]);
        let mut body = BytesMut::with_capacity(RDV_FRAME_LEN);
        Command::Other {
            name: Bytes::from_static(RDV),
            body: fields.freeze(),
        }
        .encode(&mut body);
        body
    }

    /// Reads the 29 bytes after the command name.
    pub fn decode(rdv: &[u8]) -> Result<Rdv, ProtocolError> {
        let rdv: &[u8; 29] = rdv.try_into().map_err(|_| bad_rdv())?;
        let u64_at = |i: usize| u64::from_be_bytes(rdv[i..i + 8].try_into().expect("8 bytes"));
        Ok(Rdv {
            id: u32::from_be_bytes(rdv[..4].try_into().expect("4 bytes")),
            len: u64_at(4),
            addr: u64_at(12),
            key: u64_at(20),
            more: rdv[28] != 0,
        })
    }
}

/// The error for a rendezvous frame that cannot be read.
pub(crate) fn bad_rdv() -> ProtocolError {
    ProtocolError::MalformedCommand {
        command: "RDV".into(),
        reason: "not a rendezvous this connection can read",
    }
}

/// Frames of an unfinished message that may stay slices of the pages they
/// arrived in; the next one copies them out (and itself), so the count
/// starts again. A page goes back to the node's shared pool of posted
/// receives only when its last slice is dropped, and a frame waits in the
/// message until its last frame arrives: without this bound a peer that
/// starts a message and never ends it (credits come back as its pages are
/// decoded) kept hundreds of pages, one 3-byte frame each, and every
/// other connection of the node starved (the receives could not be
/// posted again). Copied out, the frames cost their own size, as over tcp.
const PINNED_PARTS: usize = 8;

/// Cuts received pages into frames and messages. Frames lying wholly in
/// a page come out as slices of it (up to [`PINNED_PARTS`] per unfinished
/// message); a frame that straddles pages is gathered by copying.
#[derive(Debug)]
pub struct PageReader {
    /// The bytes of a frame that straddles pages.
    straddle: BytesMut,
    decoder: FrameDecoder,
    /// Frames of the message being assembled.
    parts: Multipart,
    /// Which of `parts` are slices of received pages (their indices).
    pinned: Vec<usize>,
    /// Copy every frame out of its page (the node's pool is running low).
    copy_out: bool,
    publisher: bool,
}

impl PageReader {
    /// A reader refusing data frames over `max_data` bytes (MAXMSGSIZE);
    /// a publisher's reader also yields subscriptions.
    pub fn new(max_data: Option<u64>, publisher: bool) -> PageReader {
        PageReader {
            straddle: BytesMut::new(),
            decoder: FrameDecoder::new(max_data, 64 * 1024),
            parts: Multipart::new(),
            pinned: Vec::new(),
            copy_out: false,
            publisher,
        }
    }

    /// From now on, copy frames out of their pages (`true`) or keep them
    /// as slices (`false`, zero-copy). For a node whose pool runs low: its
    /// pages are held by messages the application has not read yet, and
    /// while no receive can be posted, tcp;ofi_rxm keeps whatever arrives
    /// in buffers of its own, without limit (a peer sending past its
    /// credits grew a PULL by 800 MB, docs/reliability.md). Copied, a page
    /// goes back to the pool as soon as it is decoded.
    pub fn set_copy_out(&mut self, copy_out: bool) {
        self.copy_out = copy_out;
    }

    /// Whether a frame that straddles pages is partly gathered.
    pub fn straddling(&self) -> bool {
        !self.straddle.is_empty()
    }

    /// Adds a frame read by rendezvous (a buffer of its own, not a page);
    /// returns the message it completes.
    pub fn push_part(&mut self, data: Bytes, more: bool) -> Option<Multipart> {
        self.parts.push(Part::from(data));
        self.end_of_part(more)
    }

    /// Adds a frame that is a slice of a received page; returns the
    /// message it completes. See [`PINNED_PARTS`].
    fn push_page_part(&mut self, data: Bytes, more: bool) -> Option<Multipart> {
        if more && self.pinned.len() == PINNED_PARTS {
            for i in self.pinned.drain(..) {
                let part = &mut self.parts[i];
                copies::count(Site::Gather, part.len());
                *part = Part::copy_from_slice(part);
            }
            copies::count(Site::Gather, data.len());
            self.parts.push(Part::copy_from_slice(&data));
            return None;
        }
        self.pinned.push(self.parts.len());
        self.parts.push(Part::from(data));
        self.end_of_part(more)
    }

    fn end_of_part(&mut self, more: bool) -> Option<Multipart> {
        if more {
            return None;
        }
        self.pinned.clear();
        Some(std::mem::take(&mut self.parts))
    }

    /// The next item of the page stream, taking pages from the front of
    /// `received` (and counting each page taken whole in `consumed`), or
    /// `None` when the pages run out.
    pub fn next(
        &mut self,
        received: &mut VecDeque<Bytes>,
        consumed: &mut u32,
    ) -> Result<Option<PageItem>, ProtocolError> {
        loop {
            let from_page = self.straddle.is_empty();
            let frame = if from_page {
                let Some(front) = received.front_mut() else {
                    return Ok(None);
                };
                match self.decoder.decode_bytes(front)? {
                    Some(f) => {
                        if front.is_empty() {
                            received.pop_front();
                            *consumed += 1;
                        }
                        f
                    }
                    None => {
                        // A frame straddles pages: gather it.
                        let rest = received.pop_front().expect("front");
                        self.start_straddle(&rest);
                        *consumed += 1;
                        continue;
                    }
                }
            } else {
                match self.decoder.decode(&mut self.straddle)? {
                    Some(f) => f,
                    None => {
                        let Some(next) = received.pop_front() else {
                            return Ok(None);
                        };
                        self.straddle.extend_from_slice(&next);
                        copies::count(Site::Gather, next.len());
                        *consumed += 1;
                        continue;
                    }
                }
            };
            if from_page && !self.copy_out && !frame.command && !frame.more && self.parts.is_empty()
            {
                // The common case, a one-frame message in a page: no
                // pinned parts to count.
                return Ok(Some(PageItem::Msg(Multipart::from_buf_and_len(
                    [Part::from(frame.data), Part::new()],
                    1,
                ))));
            }
            if frame.command && frame.data.get(1..1 + RDV.len()) == Some(RDV) && frame.data[0] == 3
            {
                return Rdv::decode(&frame.data[4..]).map(|r| Some(PageItem::Rdv(r)));
            }
            if frame.command {
                let item = match Command::decode(&frame.data)? {
                    Command::Subscribe(t) if self.publisher => PageItem::Subscribe(t),
                    Command::Cancel(t) if self.publisher => PageItem::Cancel(t),
                    _ => continue,
                };
                return Ok(Some(item));
            }
            let msg = if from_page && self.copy_out {
                copies::count(Site::Gather, frame.data.len());
                // (Inline when small: no allocation of its own.)
                self.parts.push(Part::copy_from_slice(&frame.data));
                self.end_of_part(frame.more)
            } else if from_page {
                self.push_page_part(frame.data, frame.more)
            } else {
                self.push_part(frame.data, frame.more)
            };
            if let Some(msg) = msg {
                return Ok(Some(PageItem::Msg(msg)));
            }
        }
    }

    /// Starts gathering a frame that continues in the next page: reserves
    /// its whole size when the header says it (up to [`RESERVE_MAX`]).
    fn start_straddle(&mut self, rest: &[u8]) {
        let size = fabriq_zmtp::frame::frame_len(rest).and_then(|n| usize::try_from(n).ok());
        self.straddle
            .reserve(size.unwrap_or(0).clamp(rest.len(), RESERVE_MAX));
        self.straddle.extend_from_slice(rest);
        copies::count(Site::Gather, rest.len());
    }
}

/// A command the peer sent on the control channel that the fabric
/// engine acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// The peer sent pages: read the completion queue.
    Ring,
    /// More pages we may send.
    Credit(u32),
    /// The peer has read the lent frame with this id.
    RdvDone(u32),
    /// The peer is closing after sending this many pages.
    Fin(u64),
}

/// Reads a control-channel command; `None` for one the engine ignores
/// (another name, or a body that is not the count it needs: 4 bytes, 8
/// for FIN).
pub fn parse_control(name: &[u8], body: &[u8]) -> Option<Control> {
    if name == RING {
        return Some(Control::Ring);
    }
    if name == FIN {
        let n = <[u8; 8]>::try_from(body).map(u64::from_be_bytes).ok()?;
        return Some(Control::Fin(n));
    }
    let n = <[u8; 4]>::try_from(body).map(u32::from_be_bytes).ok()?;
    match name {
        CREDIT => Some(Control::Credit(n)),
        RDV_DONE => Some(Control::RdvDone(n)),
        _ => None,
    }
}

/// The longest fabric address READY may carry, in bytes (libfabric's
/// addresses are a few dozen bytes: a sockaddr, a shm name, a GID).
pub const MAX_ADDRESS: usize = 256;
/// The largest window a peer may announce, in pages.
pub const MAX_WINDOW: u32 = 1 << 16;
/// The longest doorbell name READY may carry.
pub const MAX_NAME: usize = 128;

/// The fabric side of a peer, from its READY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerFabric {
    /// Its fabric endpoint's address (raw bytes for `fi_av_insert`).
    pub address: Vec<u8>,
    /// The token to stamp our pages with (plus their sequence numbers).
    pub token: u64,
    /// The pages it lets us have in flight.
    pub window: u32,
    /// Its page size (at least 64).
    pub page: usize,
    /// Its doorbell, if it wants one rung (empty: over the control
    /// connection).
    pub doorbell: Option<String>,
    /// It can lend memory and read it (RMA): the largest frame it reads
    /// from our memory.
    pub read_max: Option<u64>,
    /// It seals its pages and expects ours sealed (`fabric_encrypt`).
    pub encrypt: bool,
}

/// Reads the peer's fabric address, token, window and page size from its
/// READY properties, each bounded: an address of at most
/// [`MAX_ADDRESS`] bytes, a nonzero token, a window of 1 to
/// [`MAX_WINDOW`] pages, a page of 64 bytes to 1 GiB, names of at most
/// [`MAX_NAME`] characters from `[A-Za-z0-9:._-]`.
pub fn parse_peer(props: &Properties) -> Result<PeerFabric, String> {
    let text = |name: &str| -> Result<String, String> {
        let v = props.get(name).ok_or_else(|| {
            if name == PROP_TOKEN && props.get("X-Fabriq-Ofi-Id").is_some() {
                format!("the peer speaks an older fabric protocol (no {name}): upgrade it")
            } else {
                format!("the peer sent no {name}: not a fabriq fabric peer")
            }
        })?;
        String::from_utf8(v.to_vec()).map_err(|_| format!("a malformed {name}"))
    };
    let name = |prop: &str| -> Result<Option<String>, String> {
        let Some(v) = props.get(prop) else {
            return Ok(None);
        };
        let ok = v.len() <= MAX_NAME
            && v.iter()
                .all(|c| c.is_ascii_alphanumeric() || b":._-".contains(c));
        match ok {
            true => Ok(Some(String::from_utf8_lossy(v).into_owned())),
            false => Err(format!("a malformed {prop}")),
        }
    };
    let address = text(PROP_ADDRESS)?;
    if address.is_empty() || address.len() > 2 * MAX_ADDRESS {
        return Err("a malformed fabric address".into());
    }
    let address = unhex(&address).ok_or("a malformed fabric address")?;
    let token = text(PROP_TOKEN)?;
    let token = (token.len() == 16)
        .then(|| u64::from_str_radix(&token, 16).ok())
        .flatten()
        .filter(|t| *t != 0)
        .ok_or("a malformed fabric token")?;
    let window: u32 = text(PROP_WINDOW)?
        .parse()
        .ok()
        .filter(|w| (1..=MAX_WINDOW).contains(w))
        .ok_or("a malformed fabric window")?;
    let page: usize = text(PROP_PAGE)?
        .parse()
        .ok()
        .filter(|p| (64..=1 << 30).contains(p))
        .ok_or("a malformed fabric page size")?;
    let read_max = match props.get(PROP_RMA) {
        None => None,
        Some(_) => Some(
            text(PROP_RMA)?
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or("a malformed fabric RMA size")?,
        ),
    };
    // (An older peer's `X-Fabriq-Ofi-Spinners`, where its count of
    // spinners was, is ignored: it is rung every time.)
    Ok(PeerFabric {
        address,
        token,
        window,
        page,
        doorbell: name(PROP_DOORBELL)?,
        read_max,
        encrypt: props.get(PROP_ENCRYPT).is_some_and(|v| &v[..] == b"1"),
    })
}

/// The READY properties that announce `ours`, as [`parse_peer`] reads them
/// back: the address (hex), token (16 hex digits), window and page size,
/// and each optional field that is set (`X-Fabriq-Ofi-Encrypt: 1`, the
/// RMA size, the doorbell, its value empty to be rung over the control
/// connection).
pub fn ready_fields(ours: &PeerFabric) -> Vec<(&'static str, Bytes)> {
    let mut props = vec![
        (PROP_ADDRESS, Bytes::from(hex(&ours.address))),
        (PROP_TOKEN, Bytes::from(format!("{:016x}", ours.token))),
        (PROP_WINDOW, Bytes::from(ours.window.to_string())),
        (PROP_PAGE, Bytes::from(ours.page.to_string())),
    ];
    if ours.encrypt {
        props.push((PROP_ENCRYPT, Bytes::from_static(b"1")));
    }
    if let Some(n) = ours.read_max {
        props.push((PROP_RMA, Bytes::from(n.to_string())));
    }
    if let Some(name) = &ours.doorbell {
        props.push((PROP_DOORBELL, Bytes::from(name.clone())));
    }
    props
}

/// Lowercase hex, as READY carries the fabric address.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Whether `part` points into one of `pages`.
    fn in_pages(part: &[u8], pages: &[Bytes]) -> bool {
        let p = part.as_ptr() as usize;
        pages.iter().any(|page| {
            let start = page.as_ptr() as usize;
            (start..start + page.len()).contains(&p)
        })
    }

    #[test]
    fn an_unfinished_message_holds_at_most_pinned_parts_of_its_pages() {
        let mut reader = PageReader::new(None, false);
        let mut received = VecDeque::new();
        let mut consumed = 0;
        // 30 pages, each one frame of the same message; a 31st ends it.
        let pages: Vec<Bytes> = (0..31u8)
            .map(|i| {
                let more = u8::from(i < 30);
                Bytes::from(vec![more, 1, i])
            })
            .collect();
        for (i, page) in pages.iter().enumerate() {
            received.push_back(page.clone());
            let item = reader.next(&mut received, &mut consumed).unwrap();
            let held = reader.parts.iter().filter(|p| in_pages(p, &pages)).count();
            assert!(held <= PINNED_PARTS, "{held} frames still in their pages");
            if i < 30 {
                assert!(item.is_none());
                assert_eq!(reader.parts.len(), i + 1);
            } else {
                let Some(PageItem::Msg(msg)) = item else {
                    panic!("the last frame ends the message: {item:?}");
                };
                let bodies: Vec<u8> = msg.iter().map(|p| p[0]).collect();
                assert_eq!(
                    bodies,
                    (0..31).collect::<Vec<u8>>(),
                    "every frame, in order"
                );
            }
        }
        assert_eq!(consumed, 31);
        // A short message stays zero-copy.
        let page = Bytes::from_static(b"\x01\x01a\x00\x01b");
        received.push_back(page.clone());
        let Some(PageItem::Msg(msg)) = reader.next(&mut received, &mut consumed).unwrap() else {
            panic!("a two-frame message");
        };
        assert!(msg.iter().all(|p| in_pages(p, std::slice::from_ref(&page))));
    }

    #[test]
    fn one_frame_messages_are_page_slices_unless_the_pool_runs_low() {
        let mut reader = PageReader::new(None, false);
        let mut page = vec![0u8, 3, 7, 7, 7];
        page.extend_from_slice(&[0, 24]);
        page.extend_from_slice(&[8; 24]);
        let page = Bytes::from(page);
        let mut received = VecDeque::from([page.clone()]);
        let mut consumed = 0;
        let next = |reader: &mut PageReader, received: &mut VecDeque<Bytes>, consumed: &mut u32| {
            match reader.next(received, consumed).unwrap() {
                Some(PageItem::Msg(msg)) => msg,
                other => panic!("a message: {other:?}"),
            }
        };
        let small = next(&mut reader, &mut received, &mut consumed);
        assert_eq!((small.len(), &small[0][..]), (1, &[7u8; 3][..]));
        assert!(in_pages(&small[0], std::slice::from_ref(&page)), "no copy");
        let large = next(&mut reader, &mut received, &mut consumed);
        assert_eq!((large.len(), &large[0][..]), (1, &[8u8; 24][..]));
        assert!(in_pages(&large[0], std::slice::from_ref(&page)), "no copy");
        assert_eq!(consumed, 1);
        // A node whose pool runs low copies them out.
        reader.set_copy_out(true);
        received.push_back(page.clone());
        for body in [&[7u8; 3][..], &[8; 24]] {
            let copied = next(&mut reader, &mut received, &mut consumed);
            assert_eq!((copied.len(), &copied[0][..]), (1, body));
            assert!(!in_pages(&copied[0], std::slice::from_ref(&page)));
        }
        assert_eq!(consumed, 2);
    }
}
