//! [`Fabric`]: the top-level libfabric object (`fi_fabric`).

use std::ptr::NonNull;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::info::Info;
use crate::sys;

pub(crate) struct FabricInner {
    pub(crate) ptr: NonNull<sys::fid_fabric>,
}

// SAFETY: fabriq requests FI_THREAD_SAFE domains; the fabric object may be
// used and closed from any thread.
unsafe impl Send for FabricInner {}
// SAFETY: as above; fi_trywait takes the fabric from any thread.
unsafe impl Sync for FabricInner {}

impl Drop for FabricInner {
    fn drop(&mut self) {
        // SAFETY: every child (domain) holds an Arc to us, so all of them
        // are closed by now; we own the handle.
        let ret = unsafe { sys::fabriq_ofi_close_fabric(self.ptr.as_ptr()) };
        if ret != 0 {
            tracing::warn!(error = %Error::from_code("fi_close(fabric)", -ret), "closing fabric");
        }
    }
}

/// An open fabric. Cheap to clone; closed when the last clone and the last
/// child (domain) are gone.
#[derive(Clone)]
pub struct Fabric {
    pub(crate) inner: Arc<FabricInner>,
}

impl Fabric {
    /// Opens the fabric described by `info` (`fi_fabric`).
    pub fn open(info: &Info) -> Result<Self> {
        sys::ensure_available()?;
        let mut ptr = std::ptr::null_mut();
        // SAFETY: info is valid; ptr receives a handle we own.
        let ret = unsafe { sys::fabriq_ofi_fabric(info.as_ptr(), &mut ptr) };
        sys::check("fi_fabric", ret as isize)?;
        let ptr = NonNull::new(ptr).ok_or(Error::Invalid("fi_fabric returned NULL".into()))?;
        Ok(Fabric {
            inner: Arc::new(FabricInner { ptr }),
        })
    }
}

impl std::fmt::Debug for Fabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fabric").finish_non_exhaustive()
    }
}
