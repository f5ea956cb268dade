//! The compat suite: every scenario written once against an adapter over
//! libzmq (the `zmq` crate) and fabriq, run with libzmq on both sides,
//! fabriq on both sides, and each mixed way, on tcp, ipc and (within one
//! implementation) inproc, and with fabriq on both sides also on the
//! fabric transports ofi+tcp and ofi+shm. `tests/matrix.rs` runs it and writes
//! docs/compat.md; `tests/pyzmq.rs` runs fabriq against pyzmq.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod adapter;
pub mod expect;
pub mod matrix;
pub mod report;
pub mod runner;
pub mod scenario;
