//! Closing endpoints and registrations, and what follows when `fi_close`
//! fails: the provider may still own the memory the object covers (posted
//! buffers, registered pages, lent bytes), so that memory is leaked, never
//! freed or reused. One warning says so per process; later leaks are
//! logged at debug level (a peer that makes closes fail must not flood the
//! log).

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::sys;

#[cfg(test)]
thread_local! {
    static FAIL_NEXT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes the next close on this thread fail with `EBUSY` without closing
/// anything, as a provider that still holds the object would.
#[cfg(test)]
pub(crate) fn fail_next_close() {
    FAIL_NEXT.with(|f| f.set(true));
}

fn injected_failure() -> bool {
    #[cfg(test)]
    {
        FAIL_NEXT.with(|f| f.replace(false))
    }
    #[cfg(not(test))]
    {
        false
    }
}

/// `fi_close` of an endpoint.
///
/// # Safety
/// `ep` is an open endpoint, closed by no one else, never used again.
pub(crate) unsafe fn endpoint(ep: NonNull<sys::fid_ep>) -> Result<()> {
    if injected_failure() {
        return Err(Error::from_code("fi_close(ep)", libc::EBUSY));
    }
    // SAFETY: per the caller's contract.
    let ret = unsafe { sys::fabriq_ofi_close_ep(ep.as_ptr()) };
    result("fi_close(ep)", ret)
}

/// `fi_close` of a registration.
///
/// # Safety
/// `mr` is an open registration, closed by no one else, never used again.
pub(crate) unsafe fn mr(mr: NonNull<sys::fid_mr>) -> Result<()> {
    if injected_failure() {
        return Err(Error::from_code("fi_close(mr)", libc::EBUSY));
    }
    // SAFETY: per the caller's contract.
    let ret = unsafe { sys::fabriq_ofi_close_mr(mr.as_ptr()) };
    result("fi_close(mr)", ret)
}

fn result(call: &'static str, ret: i32) -> Result<()> {
    match ret {
        0 => Ok(()),
        r => Err(Error::from_code(call, r.wrapping_abs())),
    }
}

static WARNED: AtomicBool = AtomicBool::new(false);

/// Logs that `bytes` of memory covered by `what` are leaked because its
/// close failed with `error`.
pub(crate) fn leaked(what: &'static str, bytes: usize, error: &Error) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            %error,
            what,
            bytes,
            "closing failed: the provider may still use this memory, so it is leaked \
             (further leaks are logged at debug level)"
        );
    } else {
        tracing::debug!(%error, what, bytes, "closing failed: memory leaked");
    }
}

#[cfg(all(test, fabriq_ofi_libfabric))]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use super::fail_next_close;
    use crate::{
        getinfo, Access, Domain, Hints, Info, Lent, MemoryRegion, PagePool, PagedConfig,
        PagedEndpoint,
    };

    fn shm() -> (Info, Domain) {
        let info = getinfo(&Hints::new().provider("shm"))
            .expect("shm")
            .remove(0);
        let domain = Domain::open_info(&info).expect("shm domain");
        (info, domain)
    }

    /// True when this process has a read-write mapping of exactly
    /// `start..end` (tests running in parallel make buffers of other
    /// sizes).
    fn mapped(start: usize, end: usize) -> bool {
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .any(|l| l.starts_with(&format!("{start:x}-{end:x} rw")))
    }

    #[test]
    fn a_registration_that_fails_to_close_keeps_its_memory() {
        let (_, domain) = shm();
        let len = 7 * 4096;
        let mr = MemoryRegion::alloc(&domain, len, Access::SEND | Access::RECV).unwrap();
        let at = mr.as_ptr() as usize;
        assert!(mapped(at, at + len));
        fail_next_close();
        drop(mr);
        assert!(mapped(at, at + len), "the registered buffer was unmapped");
    }

    struct Owner(Vec<u8>, Arc<AtomicBool>);

    impl AsRef<[u8]> for Owner {
        fn as_ref(&self) -> &[u8] {
            &self.0
        }
    }

    impl Drop for Owner {
        fn drop(&mut self) {
            self.1.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn lent_bytes_that_fail_to_close_are_never_released() {
        let (_, domain) = shm();
        let lend = |fail: bool| {
            let released = Arc::new(AtomicBool::new(false));
            let bytes = bytes::Bytes::from_owner(Owner(vec![7; 10_000], released.clone()));
            let lent = Lent::new(&domain, bytes).unwrap();
            if fail {
                fail_next_close();
            }
            drop(lent);
            released.load(std::sync::atomic::Ordering::SeqCst)
        };
        assert!(lend(false), "closed: the bytes go back to their owner");
        assert!(!lend(true), "not closed: the bytes were released");
    }

    /// tcp on loopback, for a test that leaks its endpoint on purpose: a
    /// shm endpoint left open leaves its 16 MiB region in /dev/shm after
    /// the process, a tcp one only a socket the process's exit closes.
    fn tcp() -> (Info, Domain) {
        let hints = Hints::new().provider("tcp").node("127.0.0.1").source(true);
        let info = getinfo(&hints).expect("tcp").remove(0);
        let domain = Domain::open_info(&info).expect("tcp domain");
        (info, domain)
    }

    #[test]
    fn an_endpoint_that_fails_to_close_keeps_its_posted_pages() {
        let (info, domain) = tcp();
        let pool = PagePool::new(&domain, 2, 4096).unwrap();
        let mut ep = PagedEndpoint::open(&domain, &info, PagedConfig::default()).unwrap();
        ep.post_recv(pool.get().unwrap()).unwrap();
        assert_eq!(pool.available(), 1);
        fail_next_close();
        drop(ep);
        assert_eq!(pool.available(), 1, "a posted page went back to its pool");
        // A page that was never posted is not the endpoint's to keep.
        let page = pool.get().unwrap();
        drop(page);
        assert_eq!(pool.available(), 1);
    }
}
