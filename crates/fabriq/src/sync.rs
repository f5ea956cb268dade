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

/// A mutex without poisoning, for the pipes' data path: every lock of a
/// `std` mutex reads the panic count twice (taking and dropping the
/// guard), about 14 instructions a message on each end of a pipe, for a
/// queue whose data is consistent after any completed operation anyway.
/// `parking_lot`'s; loom's under `--cfg loom` (whose poisoning the models
/// never see: a panic ends the model).
#[cfg(not(loom))]
pub(crate) use parking_lot::{Mutex as PlainMutex, MutexGuard as PlainGuard};

#[cfg(loom)]
pub(crate) use self::loom_plain::{PlainGuard, PlainMutex};

#[cfg(loom)]
mod loom_plain {
    /// loom's mutex with `parking_lot`'s signature.
    #[derive(Debug, Default)]
    pub(crate) struct PlainMutex<T>(loom::sync::Mutex<T>);

    pub(crate) type PlainGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> PlainMutex<T> {
        pub(crate) fn new(value: T) -> Self {
            PlainMutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> PlainGuard<'_, T> {
            self.0.lock().unwrap_or_else(|p| p.into_inner())
        }
    }
}
