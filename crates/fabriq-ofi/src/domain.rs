//! [`Domain`]: one NIC / provider instance (`fi_domain`).

use std::ptr::NonNull;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fabric::{Fabric, FabricInner};
use crate::info::{Info, MrMode};
use crate::sys;

pub(crate) struct DomainInner {
    pub(crate) ptr: NonNull<sys::fid_domain>,
    pub(crate) fabric: Arc<FabricInner>,
    pub(crate) info: Info,
}

// SAFETY: fabriq requests FI_THREAD_SAFE (see Hints): the provider
// serialises access to the domain and the objects opened from it.
unsafe impl Send for DomainInner {}
// SAFETY: as above.
unsafe impl Sync for DomainInner {}

impl Drop for DomainInner {
    fn drop(&mut self) {
        // SAFETY: endpoints, CQs, AVs and MRs hold an Arc to us, so they
        // are closed by now. The fabric Arc is dropped after this body,
        // i.e. the domain closes before its fabric.
        let ret = unsafe { sys::fabriq_ofi_close_domain(self.ptr.as_ptr()) };
        if ret != 0 {
            tracing::warn!(error = %Error::from_code("fi_close(domain)", -ret), "closing domain");
        }
    }
}

impl DomainInner {
    pub(crate) fn mr_mode(&self) -> MrMode {
        self.info.mr_mode()
    }
}

/// An open domain. Cheap to clone; keeps its fabric open.
#[derive(Clone)]
pub struct Domain {
    pub(crate) inner: Arc<DomainInner>,
}

impl Domain {
    /// Opens the domain described by `info` on `fabric` (`fi_domain`).
    /// `info` is kept: endpoints, registrations and pools follow its
    /// mr_mode and progress model.
    ///
    /// A domain that is not thread safe is refused
    /// ([`Error::Unsupported`]): its handles are shared between threads.
    pub fn open(fabric: &Fabric, info: &Info) -> Result<Self> {
        info.check_required(false)?;
        let info = info.clone();
        let mut ptr = std::ptr::null_mut();
        // SAFETY: fabric and info are valid; ptr receives a handle we own.
        let ret =
            unsafe { sys::fabriq_ofi_domain(fabric.inner.ptr.as_ptr(), info.as_ptr(), &mut ptr) };
        sys::check("fi_domain", ret as isize)?;
        let ptr = NonNull::new(ptr).ok_or(Error::Invalid("fi_domain returned NULL".into()))?;
        Ok(Domain {
            inner: Arc::new(DomainInner {
                ptr,
                fabric: fabric.inner.clone(),
                info,
            }),
        })
    }

    /// Opens the fabric and then the domain for `info`.
    pub fn open_info(info: &Info) -> Result<Self> {
        let fabric = Fabric::open(info)?;
        Self::open(&fabric, info)
    }

    /// The info this domain was opened with.
    pub fn info(&self) -> &Info {
        &self.inner.info
    }
}

impl std::fmt::Debug for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Domain")
            .field("provider", &self.inner.info.provider())
            .field("domain", &self.inner.info.domain_name())
            .finish()
    }
}
