//! fabriq-ofi: the libfabric (OFI) boundary of fabriq.
//!
//! All of fabriq's `unsafe` fabric code lives in this crate. libfabric's
//! data-path calls are `static inline` functions in its headers, so a small
//! C shim (`csrc/shim.c`, built by `build.rs` with `cc`) exports each one
//! fabriq needs as `fabriq_ofi_*`; [`sys`] declares them with opaque
//! pointer types. Rust never mirrors a libfabric struct.
//!
//! libfabric is opened at run time, by the first entry point called
//! ([`getinfo`], [`Fabric::open`], [`available`]), not linked: a program
//! that never uses a fabric never loads it nor its providers' libraries
//! (on Debian one of these sleeps 0.2 s in its constructor), and runs on
//! a machine without libfabric installed. `FABRIQ_OFI_LIBRARY` names the
//! file to open instead of `libfabric.so.1`.
//!
//! Built without libfabric (pkg-config does not find its headers, or
//! `FABRIQ_OFI_DISABLE=1` at build time), or run where the library cannot
//! be opened, the crate still works and every entry point returns
//! [`Error::Unavailable`], saying which case it is.
//!
//! # Objects and closing order
//!
//! [`getinfo`] gives [`Info`]s; from one, [`Fabric::open`] then
//! [`Domain::open`]; in a domain: [`CompletionQueue`], [`AddressVector`],
//! [`MemoryRegion`] / [`PagePool`], and [`Endpoint`]. Each child holds an
//! `Arc` to its parents and each endpoint to the CQs and AV bound to it, so
//! drops close in the order libfabric needs: endpoint, then its CQs/AV,
//! then registrations, then the domain, then the fabric.
//!
//! # The ownership rule for posted buffers
//!
//! A buffer handed to the provider (`fi_recv`, `fi_send`) must stay
//! allocated, registered and untouched until its completion is read. Safe
//! code gets this by construction:
//!
//! - [`PagedEndpoint::post_recv`] and [`PagedEndpoint::send`] take a
//!   [`Page`] **by value**. The endpoint keeps it in a slot, next to the
//!   32-byte operation context it passes to the provider, and gives it
//!   back only in the [`Event`] of its completion (or in the
//!   [`PostError`] when the post is refused).
//! - A page holds its pool's registration alive, so a posted page is
//!   always registered.
//! - Dropping a `PagedEndpoint` closes the endpoint *first*
//!   (`fi_endpoint(3)`: outstanding operations are then discarded), and
//!   only then frees the slots, so pages return to their pool after the
//!   provider has let go of them.
//! - The raw posts, [`Endpoint::post_recv_raw`] / [`Endpoint::send_raw`],
//!   are `unsafe fn`s whose contract is the rule above.
//!
//! A received page becomes `bytes::Bytes` without a copy
//! ([`Page::into_bytes`]); the page returns to its pool when the last
//! slice is dropped.
//!
//! # Progress
//!
//! [`Info::data_progress`] says whether the provider progresses on its own.
//! tcp (`tcp;ofi_rxm`) and shm are manual for data on libfabric 1.17:
//! nothing moves unless someone reads the CQ. A [`PagedEndpoint`] has one
//! CQ for its sends and receives, so each [`PagedEndpoint::poll`] drives
//! the provider once (on tcp each read is an `epoll_wait`); a reader that
//! polls makes progress; a reactor sleeps on [`PagedEndpoint::wait_fd`]
//! after [`PagedEndpoint::try_wait`] said it may, and polls when there is
//! no wait fd.
//!
//! # libfabric versions
//!
//! fabriq requests API version 1.9 and uses only what libfabric 2.x keeps:
//! mr_mode bits (never `FI_MR_BASIC`/`FI_MR_SCALABLE` or `FI_LOCAL_MR`),
//! CQ-level wait fds (no wait sets or poll sets), `FI_CONTEXT2`-sized
//! contexts. See `docs/fabric.md`.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod av;
mod close;
pub mod cq;
pub mod domain;
pub mod endpoint;
pub mod error;
pub mod fabric;
pub mod info;
pub mod mr;
pub mod paged;
pub mod pool;
pub mod shared;
#[allow(non_camel_case_types, clippy::missing_safety_doc)]
pub mod sys;

pub use av::{AddressVector, FiAddr};
pub use cq::{Completion, CompletionQueue, CqFormat, Wait};
pub use domain::Domain;
pub use endpoint::{CqBind, Endpoint};
pub use error::{CompletionError, CompletionErrorKind, Error, Result};
pub use fabric::Fabric;
pub use info::{getinfo, runtime_version, Caps, EpType, Hints, Info, MrMode, Progress};
pub use mr::{Access, Desc, Lent, MemoryRegion, ReadBuffer, ReadPool};
pub use paged::{Event, PagedConfig, PagedEndpoint, PiecesPostError, PostError, ReadPostError};
pub use pool::{Page, PagePool};
pub use shared::{Count, SharedCounter};

/// True when libfabric can be used: this build has it compiled in and
/// the library opens at run time. The first call (or the first fabric
/// call of any kind) opens it; until then a program that never touches a
/// fabric does not load libfabric or its providers' libraries at all.
pub fn available() -> bool {
    sys::ensure_available().is_ok()
}

/// True when this build has libfabric compiled in (its headers were found
/// at build time), whether or not the library opens at run time.
pub const fn compiled_in() -> bool {
    sys::AVAILABLE
}
