//! [`AddressVector`]: maps peers' raw fabric addresses to `fi_addr_t`
//! (`fi_av`), for RDM endpoints.

use std::ptr::NonNull;
use std::sync::Arc;

use crate::domain::{Domain, DomainInner};
use crate::error::{Error, Result};
use crate::sys;

/// A peer as the endpoint addresses it (`fi_addr_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FiAddr(pub u64);

impl FiAddr {
    /// `FI_ADDR_UNSPEC`: any source (for receives).
    pub const UNSPEC: FiAddr = FiAddr(sys::FI_ADDR_UNSPEC);
}

/// Longest raw address [`AddressVector::insert`] accepts.
pub const MAX_ADDR_LEN: usize = 255;

pub(crate) struct AvInner {
    pub(crate) ptr: NonNull<sys::fid_av>,
    domain: Arc<DomainInner>,
}

impl AvInner {
    pub(crate) fn domain_inner(&self) -> &Arc<DomainInner> {
        &self.domain
    }
}

// SAFETY: FI_THREAD_SAFE domain (see Hints).
unsafe impl Send for AvInner {}
// SAFETY: as above.
unsafe impl Sync for AvInner {}

impl Drop for AvInner {
    fn drop(&mut self) {
        // SAFETY: endpoints bound to this AV hold an Arc to us, so they are
        // closed by now; the domain outlives us (we hold it).
        let ret = unsafe { sys::fabriq_ofi_close_av(self.ptr.as_ptr()) };
        if ret != 0 {
            tracing::warn!(error = %Error::from_code("fi_close(av)", -ret), "closing AV");
        }
    }
}

/// An address vector of type `FI_AV_TABLE` (addresses are small indices).
#[derive(Clone)]
pub struct AddressVector {
    pub(crate) inner: Arc<AvInner>,
}

impl AddressVector {
    /// Opens an AV sized for about `count` peers (a hint, not a limit).
    pub fn open(domain: &Domain, count: usize) -> Result<Self> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: valid domain; ptr receives a handle we own.
        let ret = unsafe { sys::fabriq_ofi_av_open(domain.inner.ptr.as_ptr(), count, &mut ptr) };
        sys::check("fi_av_open", ret as isize)?;
        let ptr = NonNull::new(ptr).ok_or(Error::Invalid("fi_av_open returned NULL".into()))?;
        Ok(AddressVector {
            inner: Arc::new(AvInner {
                ptr,
                domain: domain.inner.clone(),
            }),
        })
    }

    /// Inserts a peer's raw address (the bytes its `Endpoint::name`
    /// returned) and returns the handle to send to it.
    ///
    /// `fi_av_insert` takes no length: the provider reads as many bytes as
    /// its address format says (a sockaddr, or a NUL-terminated string for
    /// shm). So the bytes are copied into a zeroed 256-byte buffer first: a
    /// short or garbled address from a peer can make the insert fail but
    /// never makes the provider read past our memory.
    pub fn insert(&self, addr: &[u8]) -> Result<FiAddr> {
        if addr.is_empty() || addr.len() > MAX_ADDR_LEN {
            return Err(Error::Invalid(format!(
                "fabric address of {} bytes (expected 1..={MAX_ADDR_LEN})",
                addr.len()
            )));
        }
        let mut buf = [0u8; MAX_ADDR_LEN + 1];
        buf[..addr.len()].copy_from_slice(addr);
        let mut out = sys::FI_ADDR_UNSPEC;
        // SAFETY: buf outlives the call and is large enough for any address
        // format (see above); out receives one fi_addr_t.
        let ret = unsafe {
            sys::fabriq_ofi_av_insert(self.inner.ptr.as_ptr(), buf.as_ptr().cast(), &mut out)
        };
        if ret < 0 {
            return Err(Error::from_code("fi_av_insert", -ret));
        }
        if ret != 1 || out == sys::FI_ADDR_UNSPEC {
            return Err(Error::Fi {
                call: "fi_av_insert",
                code: libc::EINVAL,
                msg: "address rejected by the provider".into(),
            });
        }
        Ok(FiAddr(out))
    }

    /// Removes a peer (`fi_av_remove`).
    pub fn remove(&self, addr: FiAddr) -> Result<()> {
        // SAFETY: valid AV; removing an unknown address is an error return.
        let ret = unsafe { sys::fabriq_ofi_av_remove(self.inner.ptr.as_ptr(), addr.0) };
        sys::check("fi_av_remove", ret as isize)
    }
}
