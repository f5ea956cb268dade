//! libzmq's C ABI over fabriq: built as `libzmq.so.5` (see `scripts/capi`
//! and docs/capi.md), so that C, C++ and Python programs written for
//! libzmq 4.3 run on fabriq unchanged. `include/zmq.h` declares what this
//! crate exports, with libzmq's constants and struct layouts.
//!
//! Every entry point sets `errno` and returns libzmq's failure value on
//! bad input (null or closed handles, wrong option sizes), never panics
//! into C (`util::guard`), and checks its handles' tags before use.

#![warn(missing_docs)]

pub mod ctx;
pub mod draft;
pub mod iov;
pub mod misc;
pub mod msg;
pub mod options;
pub mod poll;
pub mod poller;
pub mod socket;
pub mod timers;
pub mod util;
pub mod wait;
