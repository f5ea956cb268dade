//! `Message`: one frame, shaped like `zmq::Message`, backed by
//! `bytes::Bytes` so frames move between threads and into the socket
//! without copies.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use fabriq_zmtp::copies::{self, Site};
use fabriq_zmtp::{Part, Properties};

use crate::error::{err, Error, Result};

/// One message frame. Multipart messages are several `Message`s, the
/// earlier ones with [`Message::get_more`] set.
///
/// ```
/// use fabriq::Message;
/// let mut m = Message::from("hello");
/// m[0] = b'j';
/// assert_eq!(m.as_str(), Some("jello"));
/// // Zero-copy in and out:
/// let b = bytes::Bytes::from_static(b"shared");
/// let m = Message::from(b.clone());
/// assert_eq!(m.into_bytes().as_ptr(), b.as_ptr());
/// ```
#[derive(Clone, Default)]
pub struct Message {
    data: Data,
    more: bool,
    meta: Option<Arc<Metadata>>,
    /// SERVER's routing id (0: none), as libzmq's `zmq_msg_routing_id`.
    routing_id: u32,
    /// RADIO/DISH group, as libzmq's `zmq_msg_group`.
    group: Option<Bytes>,
}

/// libzmq's `ZMQ_GROUP_MAX_LENGTH`: the longest group, in bytes.
pub const GROUP_MAX_LENGTH: usize = 255;

#[derive(Clone)]
enum Data {
    /// Read-only: inline if small, else a shared handle.
    Shared(Part),
    /// Written through `DerefMut` (or made with a size).
    Owned(BytesMut),
}

impl Default for Data {
    fn default() -> Self {
        Data::Shared(Part::new())
    }
}

/// What a received frame knows about the connection it came from
/// (`zmq_msg_gets`).
#[derive(Debug, Default)]
pub(crate) struct Metadata {
    pub properties: Properties,
    pub peer_address: Option<String>,
    /// The descriptor of the connection (`ZMQ_SRCFD`).
    pub source_fd: Option<i32>,
}

/// The metadata of a pipe's peer that arrives after the pipe was made:
/// a connect's pipe exists before its handshake (libzmq's too), and each
/// handshake, the first and those after reconnects, brings the peer's
/// properties (`Socket-Type`, `User-Id`, `Peer-Address`, ...). The session
/// sets them; the socket's end of the pipe checks one counter per item it
/// reads and takes them when it changed.
#[derive(Debug, Default)]
pub(crate) struct LateMeta {
    generation: std::sync::atomic::AtomicU64,
    value: std::sync::Mutex<Option<Arc<Metadata>>>,
}

impl LateMeta {
    /// Publishes the metadata of a new connection.
    pub(crate) fn set(&self, meta: Option<Arc<Metadata>>) {
        *self.value.lock().unwrap_or_else(|e| e.into_inner()) = meta;
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    /// The metadata, if it changed since generation `seen` (which is
    /// updated).
    #[inline]
    pub(crate) fn changed(&self, seen: &mut u64) -> Option<Option<Arc<Metadata>>> {
        let now = self.generation.load(std::sync::atomic::Ordering::Acquire);
        if now == *seen {
            return None;
        }
        *seen = now;
        Some(self.value.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

impl Message {
    /// An empty message.
    pub fn new() -> Message {
        Message::default()
    }

    /// A message of `len` zero bytes.
    pub fn with_size(len: usize) -> Message {
        Message {
            data: Data::Owned(BytesMut::zeroed(len)),
            ..Message::default()
        }
    }

    /// Same as [`Message::with_size`] (the zmq crate's deprecated name).
    #[deprecated(note = "use `with_size`")]
    pub fn with_capacity(len: usize) -> Message {
        Message::with_size(len)
    }

    /// A copy of `data`.
    #[deprecated(note = "use the `From` trait")]
    pub fn from_slice(data: &[u8]) -> Message {
        Message::from(data)
    }

    /// The contents as UTF-8, if they are.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(self).ok()
    }

    /// Whether more frames of the same message follow this one.
    pub fn get_more(&self) -> bool {
        self.more
    }

    /// A metadata property of the connection the message came from:
    /// `Socket-Type`, `Identity`, `Peer-Address`, an application `X-`
    /// property the peer sent, or what the ZAP handler said about the
    /// peer: `User-Id` and its metadata properties. Names are matched without regard to case.
    pub fn gets<'a>(&'a mut self, property: &str) -> Option<&'a str> {
        let meta = self.meta.as_deref()?;
        if property.eq_ignore_ascii_case("Peer-Address") {
            return meta.peer_address.as_deref();
        }
        meta.properties
            .get(property)
            .and_then(|v| std::str::from_utf8(v).ok())
    }

    /// The file descriptor of the tcp or ipc connection the message came
    /// in on (libzmq's deprecated `ZMQ_SRCFD`), while that connection
    /// lives; `None` for inproc and for messages not received.
    pub fn source_fd(&self) -> Option<i32> {
        self.meta.as_deref()?.source_fd
    }

    /// The frame as `Bytes`, without copying, except for a message of at
    /// most 23 bytes, which is held inline (no allocation of its own) and
    /// copied into a `Bytes` here.
    pub fn into_bytes(self) -> Bytes {
        match self.data {
            Data::Shared(p) if p.is_inline() => {
                copies::count(Site::Api, p.len());
                chunk_copy(&p)
            }
            Data::Shared(p) => p.into_bytes(),
            Data::Owned(b) => b.freeze(),
        }
    }

    /// A cheap handle to the contents (reference counted, no copy; a
    /// message held inline or written to is copied).
    pub fn to_bytes(&self) -> Bytes {
        match &self.data {
            Data::Shared(p) => match p.as_shared() {
                Some(b) => b.clone(),
                None => {
                    copies::count(Site::Api, p.len());
                    chunk_copy(p)
                }
            },
            Data::Owned(b) => {
                copies::count(Site::Api, b.len());
                Bytes::copy_from_slice(b)
            }
        }
    }

    /// The frame as it travels through pipes (no copy).
    pub(crate) fn into_part(self) -> Part {
        match self.data {
            Data::Shared(p) => p,
            Data::Owned(b) => Part::from(b.freeze()),
        }
    }

    /// Takes the frame out (as [`Message::into_part`]), leaving the
    /// message empty with its other fields.
    pub(crate) fn take_part(&mut self) -> Part {
        match std::mem::take(&mut self.data) {
            Data::Shared(p) => p,
            Data::Owned(b) => Part::from(b.freeze()),
        }
    }

    /// Puts a frame taken by [`Message::take_part`] back.
    pub(crate) fn put_part(&mut self, part: Part) {
        self.data = Data::Shared(part);
    }

    pub(crate) fn from_parts(data: Part, more: bool, meta: Option<Arc<Metadata>>) -> Message {
        Message {
            data: Data::Shared(data),
            more,
            meta,
            routing_id: 0,
            group: None,
        }
    }

    /// Draft sockets: the routing id of the CLIENT a SERVER received this
    /// message from, or `None` (libzmq's `zmq_msg_routing_id`, which says
    /// 0 for none). Replying with a message that carries it sends the
    /// reply to that CLIENT.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let server = ctx.socket(fabriq::SERVER).unwrap();
    /// server.bind("inproc://routing-id-doc").unwrap();
    /// let client = ctx.socket(fabriq::CLIENT).unwrap();
    /// client.connect("inproc://routing-id-doc").unwrap();
    /// client.send("hello", 0).unwrap();
    /// let request = server.recv_msg(0).unwrap();
    /// let id = request.routing_id().unwrap();
    /// let mut reply = fabriq::Message::from("world");
    /// reply.set_routing_id(id).unwrap();
    /// server.send(reply, 0).unwrap();
    /// assert_eq!(client.recv_string(0).unwrap().unwrap(), "world");
    /// ```
    pub fn routing_id(&self) -> Option<u32> {
        (self.routing_id != 0).then_some(self.routing_id)
    }

    /// Sets the routing id a SERVER sends this message to
    /// (`zmq_msg_set_routing_id`): `EINVAL` for 0, which libzmq never
    /// gives a peer.
    pub fn set_routing_id(&mut self, routing_id: u32) -> Result<()> {
        if routing_id == 0 {
            return err(Error::EINVAL, "routing id 0 is never a peer's");
        }
        self.routing_id = routing_id;
        Ok(())
    }

    /// Draft sockets: the group a DISH received this message in, or the
    /// one [`Message::set_group`] gave it (`zmq_msg_group`). `None` when
    /// it has none, or when the group a peer sent is not UTF-8 (see
    /// [`Message::group_bytes`]).
    pub fn group(&self) -> Option<&str> {
        self.group
            .as_deref()
            .and_then(|g| std::str::from_utf8(g).ok())
    }

    /// The group as bytes, as it travels on the wire.
    pub fn group_bytes(&self) -> Option<&[u8]> {
        self.group.as_deref()
    }

    /// Sets the group a RADIO publishes this message to
    /// (`zmq_msg_set_group`): `EINVAL` if longer than 255 bytes.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let radio = ctx.socket(fabriq::RADIO).unwrap();
    /// radio.bind("inproc://group-doc").unwrap();
    /// let dish = ctx.socket(fabriq::DISH).unwrap();
    /// dish.connect("inproc://group-doc").unwrap();
    /// dish.join("weather").unwrap();
    /// // inproc joins reach the RADIO when it next sends.
    /// let mut m = fabriq::Message::from("warm");
    /// m.set_group("weather").unwrap();
    /// radio.send(m.clone(), 0).unwrap();
    /// radio.send(m, 0).unwrap();
    /// let got = dish.recv_msg(0).unwrap();
    /// assert_eq!(got.group(), Some("weather"));
    /// assert_eq!(got.as_str(), Some("warm"));
    /// ```
    pub fn set_group(&mut self, group: &str) -> Result<()> {
        if group.len() > GROUP_MAX_LENGTH {
            return err(
                Error::EINVAL,
                "a group is at most 255 bytes (ZMQ_GROUP_MAX_LENGTH)",
            );
        }
        self.group = Some(Bytes::copy_from_slice(group.as_bytes()));
        Ok(())
    }

    pub(crate) fn set_routing_id_raw(&mut self, routing_id: u32) {
        self.routing_id = routing_id;
    }

    pub(crate) fn set_group_raw(&mut self, group: Bytes) {
        self.group = Some(group);
    }

    pub(crate) fn take_group(&mut self) -> Option<Bytes> {
        self.group.take()
    }
}

impl Deref for Message {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.data {
            Data::Shared(p) => p,
            Data::Owned(b) => b,
        }
    }
}

impl DerefMut for Message {
    fn deref_mut(&mut self) -> &mut [u8] {
        if let Data::Shared(p) = &mut self.data {
            if !p.is_inline() {
                // Take the buffer over if we are its only owner, else copy.
                let owned = std::mem::take(p)
                    .into_bytes()
                    .try_into_mut()
                    .unwrap_or_else(|shared| {
                        copies::count(Site::Api, shared.len());
                        BytesMut::from(&shared[..])
                    });
                self.data = Data::Owned(owned);
            }
        }
        match &mut self.data {
            Data::Owned(b) => b,
            // Inline bytes are this message's own: written in place.
            Data::Shared(p) => p.inline_mut().unwrap_or_default(),
        }
    }
}

impl PartialEq for Message {
    fn eq(&self, other: &Message) -> bool {
        self[..] == other[..]
    }
}

impl Eq for Message {}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &self[..])
    }
}

impl From<&[u8]> for Message {
    fn from(data: &[u8]) -> Self {
        let part = match Part::inline(data) {
            Some(inline) => {
                copies::count(Site::FromSlice, data.len());
                inline
            }
            None => Part::from(copy_small(data)),
        };
        Message {
            data: Data::Shared(part),
            ..Message::default()
        }
    }
}

/// Copies of at most this many bytes share a per-thread chunk: eight
/// 4 KiB messages to a chunk. One malloc per 4 KiB message, freed on the
/// receiving thread, contended for glibc's arena lock (futex waits were
/// 11 % of an inproc 4 KiB stream's samples); sharing chunks halved the
/// CPU per message (bench/notes/optimisations.md, #21). 8 KiB was tried
/// too and did not measure.
const SMALL_COPY: usize = 4096;
/// The size of those chunks. Below glibc's 64 KiB consolidation
/// threshold: freeing a 64 KiB chunk (on the receiving thread, for every
/// 16 messages of 4 KiB) made inproc 4 KiB slower than one malloc per
/// message, while 1-2 KiB copies gain 2-3x from sharing chunks.
const COPY_CHUNK: usize = 32 * 1024;

thread_local! {
    static COPY_ARENA: std::cell::RefCell<bytes::BytesMut> =
        std::cell::RefCell::new(bytes::BytesMut::new());
}

/// Copies `data` into a new `Bytes`. Small copies are carved out of a
/// per-thread 32 KiB chunk instead of a heap allocation each: sending
/// messages from slices then costs one allocation per chunk, not one
/// per message. (Messages of up to `INLINE_MAX` bytes need neither:
/// they are held inline, see `fabriq_zmtp::part`.) A chunk is freed once every message cut from it is
/// gone, so a small message kept for long keeps at most 32 KiB alive.
pub(crate) fn copy_small(data: &[u8]) -> Bytes {
    copies::count(Site::FromSlice, data.len());
    chunk_copy(data)
}

/// [`copy_small`] without counting the copy (the caller counts it).
fn chunk_copy(data: &[u8]) -> Bytes {
    if data.is_empty() || data.len() > SMALL_COPY {
        return Bytes::copy_from_slice(data);
    }
    COPY_ARENA.with(|arena| {
        let mut arena = arena.borrow_mut();
        if arena.capacity() < data.len() {
            *arena = bytes::BytesMut::with_capacity(COPY_CHUNK);
        }
        arena.extend_from_slice(data);
        arena.split().freeze()
    })
}

impl<const N: usize> From<&[u8; N]> for Message {
    fn from(data: &[u8; N]) -> Self {
        Message::from(&data[..])
    }
}

impl From<Vec<u8>> for Message {
    fn from(data: Vec<u8>) -> Self {
        Message::from(Bytes::from(data))
    }
}

impl From<Box<[u8]>> for Message {
    fn from(data: Box<[u8]>) -> Self {
        Message::from(Bytes::from(data))
    }
}

impl From<&str> for Message {
    fn from(data: &str) -> Self {
        Message::from(data.as_bytes())
    }
}

impl From<String> for Message {
    fn from(data: String) -> Self {
        Message::from(data.into_bytes())
    }
}

/// Anything that converts into a message converts by reference too (as in
/// the zmq crate), by cloning.
impl<T> From<&T> for Message
where
    T: Into<Message> + Clone,
{
    fn from(v: &T) -> Self {
        v.clone().into()
    }
}

impl From<Bytes> for Message {
    fn from(data: Bytes) -> Self {
        Message {
            data: Data::Shared(Part::from(data)),
            ..Message::default()
        }
    }
}

impl From<BytesMut> for Message {
    fn from(data: BytesMut) -> Self {
        Message {
            data: Data::Owned(data),
            ..Message::default()
        }
    }
}

impl From<Message> for Bytes {
    fn from(msg: Message) -> Self {
        msg.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_copies_are_independent_across_chunks() {
        // Enough copies to cross several chunks, of sizes around the
        // small-copy limit, each checked after all were made.
        let sizes = [1, 7, 64, 255, 1000, 2048, 4095, 4096, 4097, 9000];
        let mut kept = Vec::new();
        for i in 0..2000usize {
            let len = sizes[i % sizes.len()];
            let data: Vec<u8> = (0..len).map(|j| (i + j) as u8).collect();
            kept.push((data.clone(), Message::from(&data[..])));
        }
        for (data, msg) in &kept {
            assert_eq!(&msg[..], &data[..]);
        }
        // Dropping most of them leaves the rest intact.
        let rest: Vec<_> = kept.into_iter().step_by(97).collect();
        for (data, msg) in &rest {
            assert_eq!(&msg[..], &data[..]);
        }
        assert!(Message::from(&b""[..]).is_empty());
    }
}
