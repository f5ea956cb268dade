//! The synchronisation primitives of the cross-thread protocols (the
//! socket's wake-up signal, pipes), from `std`, or from loom when the crate
//! is built with `--cfg loom` so the models in the test suite can explore
//! every interleaving of the real code.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
