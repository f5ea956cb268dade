//! The copy budget: what fabriq may copy per message, in user space.
//!
//! fabriq counts every copy of message bytes on its data paths when built
//! with the `copy-count` feature ([`fabriq::copies`]). This crate holds
//! the budget those counts are checked against, per transport and message
//! size; `tests/budget.rs` sends real messages over real sockets and
//! compares. The rules are the zero-copy claims of docs/performance.md:
//!
//! - **inproc** copies nothing: a message moves between threads by
//!   reference.
//! - **tcp and ipc, sending**: a body under the encoder's by-reference
//!   threshold (8 KiB) is copied once into the write batch, which is what
//!   lets many small messages leave in one `write`; a larger body is
//!   written from its own memory (`writev`), never copied.
//! - **tcp and ipc, receiving**: a body of at most
//!   [`INLINE_MAX`] bytes is copied once into its
//!   message, which holds it inline (that copy replaces two atomic
//!   reference-count changes on the read buffer); larger frames are cut
//!   out of the read buffer without a copy, and the only copy is the start of a frame that had not
//!   wholly arrived when the buffer had to grow: at most the frame and at
//!   most one read chunk (64 KiB) per message; then a frame of up to 1 MiB
//!   is read into a buffer of its final size. A larger frame's buffer
//!   grows with what arrived (a peer announcing 2^63 bytes must send
//!   them), so its first megabyte is moved once more.
//! - **fabric, buffered**: messages up to a page (64 KiB) are copied once
//!   into a registered page (the NetIO coalescing) and received from it
//!   without a copy (a frame straddling two pages is gathered once);
//!   larger bodies are lent to the peer, which reads them by RMA into
//!   their final buffer: no copy.
//! - **from a slice**: `send(&[u8])` copies the bytes once into memory the
//!   message owns, as `zmq_send` does; `send(Message)`, `send(Vec<u8>)`
//!   and `send(Bytes)` copy nothing.

use fabriq::copies::{Copies, Site};

/// What one run moved: messages of `size` bytes, `count` of them.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// The message size in bytes.
    pub size: usize,
    /// How many messages were sent and received.
    pub count: u64,
}

/// A transport, as far as its copies go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// `inproc://`.
    Inproc,
    /// `tcp://` or `ipc://`: a byte stream and the ZMTP encoder/decoder.
    Stream,
    /// `ofi+PROVIDER://`, buffered (the default): registered pages.
    Fabric,
}

/// The encoder's by-reference threshold (`fabriq_zmtp::encoder`).
pub const BY_REF_THRESHOLD: usize = 8 * 1024;
/// A connection's read chunk (`fabriq_zmtp::connection`).
pub const READ_CHUNK: usize = 64 * 1024;
/// Frames of up to this many body bytes are read into a buffer of their
/// final size once their header has arrived.
pub const WHOLE_FRAME: usize = 1 << 20;

/// The largest body a received message holds inline.
pub use fabriq::copies::INLINE_MAX;

/// The default fabric page (`fabric_page_size`): larger bodies are lent.
pub const FABRIC_PAGE: usize = 64 * 1024;

/// Bodies at least this long that fit a page go uncopied, as the tail of
/// the page holding their header, over providers that send a page and
/// bytes after it as one message (tcp and shm do): `TAIL_MIN` in the
/// fabric engine's `tx.rs`.
pub const FABRIC_TAIL_MIN: usize = 16 * 1024;

/// At most what a lent body's descriptor (its RDV frame) puts in a page.
pub const RDV_DESCRIPTOR: u64 = 64;

/// A budget broken: the site, what was counted, what was allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overrun {
    /// Where the copies happened.
    pub site: Site,
    /// Bytes counted there.
    pub counted: u64,
    /// Bytes the budget allows there.
    pub allowed: u64,
    /// Whether the budget is exact (`counted` must equal `allowed`).
    pub exact: bool,
}

/// Checks what one run of `send(Message)` / `recv(&mut Message)` counted
/// against the budget of `path`. Returns every site out of budget.
///
/// ```
/// use fabriq_copy_budget::{check, Path, Run};
///
/// // Nothing counted is within every budget but the exact ones.
/// let none = fabriq::copies::Copies::default();
/// let run = Run { size: 64, count: 10 };
/// assert!(check(Path::Inproc, run, &none).is_empty());
/// assert!(!check(Path::Stream, run, &none).is_empty()); // 640 B into the batch
/// ```
pub fn check(path: Path, run: Run, counted: &Copies) -> Vec<Overrun> {
    let n = run.size as u64;
    let messages = run.count;
    let mut rules: Vec<(Site, u64, bool)> = vec![(Site::FromSlice, 0, true), (Site::Api, 0, true)];
    match path {
        Path::Inproc => {
            for site in [
                Site::Batch,
                Site::Page,
                Site::Regrow,
                Site::Gather,
                Site::Inline,
            ] {
                rules.push((site, 0, true));
            }
        }
        Path::Stream => {
            let batch = if run.size < BY_REF_THRESHOLD {
                n * messages
            } else {
                0
            };
            rules.push((Site::Batch, batch, true));
            rules.push((Site::Page, 0, true));
            // The start of a frame moved when the buffer grew: at most the
            // frame and at most one read chunk; beyond WHOLE_FRAME, once
            // more at most WHOLE_FRAME (the buffer grows with what arrived).
            let first = n.min(READ_CHUNK as u64 + 9);
            let regrow = if run.size <= WHOLE_FRAME {
                first * messages
            } else {
                (first + WHOLE_FRAME as u64 + 9) * messages
            };
            rules.push((Site::Regrow, regrow, false));
            rules.push((Site::Gather, 0, true));
            // Small bodies are copied out of the read buffer into their
            // message, exactly once.
            let inline = if run.size <= INLINE_MAX {
                n * messages
            } else {
                0
            };
            rules.push((Site::Inline, inline, true));
        }
        Path::Fabric => {
            // Headers are copied with the bodies: 9 bytes at most each.
            // Bodies larger than a page are lent (read by RMA): only the
            // loan's descriptor goes into a page (35 bytes and a header).
            if run.size > FABRIC_PAGE {
                rules.push((Site::Page, RDV_DESCRIPTOR * messages, false));
            } else if run.size >= FABRIC_TAIL_MIN {
                // Sent as page tails: only the headers are copied. A body
                // that found no free page waits in the encoder and is
                // copied into a page later, so up to a quarter may be.
                rules.push((Site::Page, (n + 9) * messages / 4, false));
            } else {
                rules.push((Site::Page, (n + 9) * messages, false));
            }
            rules.push((Site::Batch, 0, true));
            rules.push((Site::Regrow, 0, true));
            // Frames are delivered as slices of their pages.
            rules.push((Site::Inline, 0, true));
            // A frame that straddles two pages is gathered: at most once.
            rules.push((Site::Gather, (n + 9) * messages, false));
        }
    }
    rules
        .into_iter()
        .filter_map(|(site, allowed, exact)| {
            let got = counted.at(site);
            let bad = if exact { got != allowed } else { got > allowed };
            bad.then_some(Overrun {
                site,
                counted: got,
                allowed,
                exact,
            })
        })
        .collect()
}
