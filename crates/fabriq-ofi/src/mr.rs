//! [`MemoryRegion`]: a buffer fabriq allocates and registers (`fi_mr_reg`),
//! kept alive and registered together.

use std::alloc::Layout;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::domain::{Domain, DomainInner};
use crate::error::{Error, Result};
use crate::info::MrMode;
use crate::sys;

/// Access rights of a registration (`fi_mr(3)`, "access").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access(pub u64);

impl Access {
    /// Local source of sends.
    pub const SEND: Access = Access(sys::FI_SEND);
    /// Local target of receives.
    pub const RECV: Access = Access(sys::FI_RECV);
    /// Local target of RMA reads.
    pub const READ: Access = Access(sys::FI_READ);
    /// Local source of RMA writes.
    pub const WRITE: Access = Access(sys::FI_WRITE);
    /// Remote peers may read it.
    pub const REMOTE_READ: Access = Access(sys::FI_REMOTE_READ);
    /// Remote peers may write it.
    pub const REMOTE_WRITE: Access = Access(sys::FI_REMOTE_WRITE);
}

impl std::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

/// Alignment of registered buffers (a memory page).
pub const BUF_ALIGN: usize = 4096;

/// A zeroed, page-aligned heap allocation, accessed only through raw
/// pointers (parts of it are handed to the provider and to `Page`s).
struct RawBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl RawBuf {
    fn new(len: usize) -> Result<Self> {
        let layout = Layout::from_size_align(len.max(1), BUF_ALIGN)
            .map_err(|e| Error::Invalid(format!("buffer of {len} bytes: {e}")))?;
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or(Error::Fi {
            call: "alloc",
            code: libc::ENOMEM,
            msg: sys::strerror(libc::ENOMEM),
        })?;
        Ok(RawBuf { ptr, layout })
    }
}

impl Drop for RawBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in new() with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// The opaque descriptor of a registration (`fi_mr_desc`), passed with
/// every data transfer (required under `FI_MR_LOCAL`, harmless otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Desc(pub(crate) *mut c_void);

// SAFETY: a descriptor is an opaque token the provider hands out; passing
// it between threads is allowed (FI_THREAD_SAFE domain).
unsafe impl Send for Desc {}
// SAFETY: as above.
unsafe impl Sync for Desc {}

/// A registered buffer. The buffer lives exactly as long as the
/// registration: `fi_close(mr)` runs before the memory is freed, and the
/// domain stays open until then.
pub struct MemoryRegion {
    ptr: NonNull<sys::fid_mr>,
    desc: Desc,
    key: u64,
    // Dropped after Drop::drop closed the registration (field order).
    buf: RawBuf,
    len: usize,
    pub(crate) domain: Arc<DomainInner>,
}

// SAFETY: FI_THREAD_SAFE domain; the buffer is only reached through raw
// pointers whose exclusive use is arranged by the owner (PagePool).
unsafe impl Send for MemoryRegion {}
// SAFETY: as above; &MemoryRegion gives out no references into the buffer.
unsafe impl Sync for MemoryRegion {}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        // SAFETY: we own the registration; the buffer is freed after this
        // (field drop), the domain after that.
        let ret = unsafe { sys::fabriq_ofi_close_mr(self.ptr.as_ptr()) };
        if ret != 0 {
            tracing::warn!(error = %Error::from_code("fi_close(mr)", -ret), "closing MR");
        }
    }
}

impl MemoryRegion {
    /// Allocates `len` zeroed, page-aligned bytes and registers them with
    /// `access`. Honours the domain's mr_mode: without `FI_MR_PROV_KEY` a
    /// key unique in the domain is requested; with it the provider's key is
    /// read back. `FI_MR_ENDPOINT` domains are refused (binding is not
    /// implemented; fabriq's hints do not accept such providers).
    pub fn alloc(domain: &Domain, len: usize, access: Access) -> Result<Self> {
        let mode = domain.inner.mr_mode();
        if mode.contains(MrMode::ENDPOINT) {
            return Err(Error::Invalid(format!(
                "provider {:?} needs FI_MR_ENDPOINT registrations, which fabriq-ofi does not bind",
                domain.info().provider()
            )));
        }
        let buf = RawBuf::new(len)?;
        let requested_key = if mode.contains(MrMode::PROV_KEY) {
            0
        } else {
            domain.inner.next_key()
        };
        let mut ptr = std::ptr::null_mut();
        // SAFETY: buf covers len bytes and outlives the registration (see
        // Drop); ptr receives a handle we own.
        let ret = unsafe {
            sys::fabriq_ofi_mr_reg(
                domain.inner.ptr.as_ptr(),
                buf.ptr.as_ptr().cast(),
                len,
                access.0,
                requested_key,
                &mut ptr,
            )
        };
        sys::check("fi_mr_reg", ret as isize)?;
        let ptr = NonNull::new(ptr).ok_or(Error::Invalid("fi_mr_reg returned NULL".into()))?;
        // SAFETY: ptr is an open registration.
        let (desc, key) = unsafe {
            (
                sys::fabriq_ofi_mr_desc(ptr.as_ptr()),
                sys::fabriq_ofi_mr_key(ptr.as_ptr()),
            )
        };
        Ok(MemoryRegion {
            ptr,
            desc: Desc(desc),
            key,
            buf,
            len,
            domain: domain.inner.clone(),
        })
    }

    /// The local descriptor for data transfers.
    pub fn desc(&self) -> Desc {
        self.desc
    }

    /// The remote key (for RMA by peers).
    pub fn key(&self) -> u64 {
        self.key
    }

    /// Registered length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length registration.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Start of the buffer. Writing through it is the caller's business
    /// (`PagePool` hands out disjoint pages).
    pub fn as_ptr(&self) -> *mut u8 {
        self.buf.ptr.as_ptr()
    }

    /// The address a peer uses for RMA at `offset` into this region: the
    /// virtual address under `FI_MR_VIRT_ADDR`, the offset otherwise.
    pub fn rma_addr(&self, offset: usize) -> u64 {
        if self.domain.mr_mode().contains(MrMode::VIRT_ADDR) {
            self.as_ptr() as u64 + offset as u64
        } else {
            offset as u64
        }
    }
}

impl std::fmt::Debug for MemoryRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryRegion")
            .field("len", &self.len)
            .field("key", &self.key)
            .finish()
    }
}
