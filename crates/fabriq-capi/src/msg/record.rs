//! A message's record (`Inner`: the fabriq `Message` and the C strings
//! handed out for it), the per-thread pool of records, and the per-thread
//! chunks `zmq_msg_init_size` cuts small messages from.

use std::ffi::{c_char, CString};

use bytes::BytesMut;
use fabriq::Message;

/// What a non-empty message holds.
pub(super) struct Inner {
    pub(super) msg: Message,
    /// C strings handed out by `zmq_msg_gets` and `zmq_msg_group`, alive
    /// as long as the message is.
    pub(super) strings: Vec<(String, CString)>,
}

thread_local! {
    /// Records of closed messages, reused by this thread's next ones: a
    /// message in a send or receive loop then costs no allocation for its
    /// record. The boxes themselves are what is reused (each is the
    /// allocation a `zmq_msg_t` points to), hence `Vec<Box<_>>`.
    #[allow(clippy::vec_box)]
    static POOL: std::cell::RefCell<Vec<Box<Inner>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Data of at most this many bytes comes out of a per-thread chunk.
pub(crate) const SMALL: usize = 4096;
/// The size of those chunks.
pub(crate) const CHUNK: usize = 32 * 1024;

thread_local! {
    /// The rest of this thread's current chunk (`zeroed`).
    static ARENA: std::cell::RefCell<BytesMut> = std::cell::RefCell::new(BytesMut::new());
}

/// What `zeroed` copies its zero bytes from: a copy of at most `SMALL`
/// bytes is cheaper than `BytesMut::resize`'s generic fill.
static ZEROS: [u8; SMALL] = [0; SMALL];

/// `size` zero bytes of a message's own (`zmq_msg_init_size`). Up to
/// `SMALL` bytes are cut from a per-thread chunk of `CHUNK` bytes rather
/// than allocated each: a stream of small messages then costs one
/// allocation per chunk, not one per message, and the receiving thread
/// frees a chunk once, when the last message cut from it goes, instead of
/// every message's allocation one by one (a `malloc` on the sending thread
/// and a `free` on the receiving one were 47 % of `inproc_thr`'s time at
/// 64 B). The price: a small message kept long keeps up to 32 KiB alive,
/// as fabriq's own copies of small slices do (`Message::from(&[u8])`).
#[inline]
pub(super) fn zeroed(size: usize) -> BytesMut {
    if size == 0 || size > SMALL {
        return BytesMut::zeroed(size);
    }
    ARENA
        .try_with(|a| {
            let mut a = a.borrow_mut();
            if a.capacity() < size {
                *a = BytesMut::with_capacity(CHUNK);
            }
            a.extend_from_slice(&ZEROS[..size]);
            a.split()
        })
        .unwrap_or_else(|_| BytesMut::zeroed(size))
}

/// How many records a thread keeps.
const POOL_MAX: usize = 32;

impl Inner {
    pub(super) fn new(msg: Message) -> Box<Inner> {
        let reused = POOL.try_with(|p| p.borrow_mut().pop()).ok().flatten();
        match reused {
            Some(mut b) => {
                b.msg = msg;
                b
            }
            None => Box::new(Inner {
                msg,
                strings: Vec::new(),
            }),
        }
    }

    /// Frees a record's message (its data, its free callback) and keeps
    /// the record for reuse.
    fn release(mut b: Box<Inner>) {
        b.msg = Message::new();
        b.strings.clear();
        let _ = POOL.try_with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < POOL_MAX {
                p.push(b);
            }
        });
    }

    pub(super) fn cached(&mut self, key: &str, value: &str) -> *const c_char {
        if let Some((_, c)) = self
            .strings
            .iter()
            .find(|(k, c)| k == key && c.as_bytes() == value.as_bytes())
        {
            return c.as_ptr();
        }
        let c = CString::new(value.replace('\0', "")).unwrap_or_default();
        let p = c.as_ptr();
        self.strings.push((key.to_string(), c));
        p
    }
}

/// Releases a message's record, if it has one.
#[inline]
pub(super) fn release(b: Option<Box<Inner>>) {
    if let Some(b) = b {
        Inner::release(b);
    }
}
