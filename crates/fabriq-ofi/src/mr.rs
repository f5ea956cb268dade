//! [`MemoryRegion`]: a buffer fabriq allocates and registers (`fi_mr_reg`),
//! kept alive and registered together.

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

/// A zeroed, page-aligned anonymous mapping, accessed only through raw
/// pointers (parts of it are handed to the provider and to `Page`s).
/// `mmap` rather than the heap: the kernel's pages are zero already and
/// are only backed when first touched, where an aligned `alloc_zeroed`
/// wrote every byte (a 32 MiB page pool cost about a fifth of opening an
/// ofi+tcp endpoint, and its whole size in RSS at once).
///
/// The buffer sits between two inaccessible guard pages (`PROT_NONE`):
/// an overrun faults instead of reaching a neighbour, and the kernel
/// cannot merge the buffer with an adjacent anonymous mapping (a glibc
/// arena, another pool), so `/proc/PID/smaps` shows it as a mapping of
/// its own, of exactly its size (docs/reliability.md, the slow growth).
struct RawBuf {
    ptr: NonNull<u8>,
    len: usize,
    /// Set when the registration covering it could not be closed: the
    /// mapping then stays (the provider may still write it).
    leaked: bool,
}

impl RawBuf {
    fn new(len: usize) -> Result<Self> {
        let len = len.max(1).div_ceil(BUF_ALIGN) * BUF_ALIGN;
        let mapped = len
            .checked_add(2 * BUF_ALIGN)
            .ok_or_else(|| Error::Invalid("registered buffer size overflows".into()))?;
        // SAFETY: a fresh private anonymous mapping, inaccessible for now;
        // no address hint, no file. The result is checked for MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        let ptr = base.cast::<u8>().wrapping_add(BUF_ALIGN);
        // SAFETY: ptr..ptr+len lies inside the mapping just made (one guard
        // page on each side of it).
        if unsafe { libc::mprotect(ptr.cast(), len, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
            let e = os_error("mprotect");
            // SAFETY: the mapping made above, not handed out.
            unsafe { libc::munmap(base, mapped) };
            return Err(e);
        }
        let ptr = NonNull::new(ptr).ok_or(Error::Invalid("mmap returned NULL".into()))?;
        tracing::debug!(
            address = ?ptr,
            bytes = len,
            "registered buffer mapped between guard pages"
        );
        Ok(RawBuf {
            ptr,
            len,
            leaked: false,
        })
    }
}

fn os_error(call: &'static str) -> Error {
    let code = std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::ENOMEM);
    Error::Fi {
        call,
        code,
        msg: sys::strerror(code),
    }
}

impl Drop for RawBuf {
    fn drop(&mut self) {
        if self.leaked {
            return;
        }
        // SAFETY: mapped in new() with a guard page before ptr and one
        // after ptr+len; unmapped once, guards included.
        unsafe {
            libc::munmap(
                self.ptr.as_ptr().wrapping_sub(BUF_ALIGN).cast(),
                self.len + 2 * BUF_ALIGN,
            );
        }
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
        // SAFETY: we own the registration and close it once, here; the
        // buffer is freed after this (field drop), the domain after that.
        if let Err(error) = unsafe { crate::close::mr(self.ptr) } {
            // The provider may still use the memory: it stays mapped.
            self.buf.leaked = true;
            crate::close::leaked("registered buffer", self.buf.len, &error);
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
        let buf = RawBuf::new(len)?;
        // SAFETY: buf covers len bytes and outlives the registration (see
        // Drop and the field order).
        let (ptr, desc, key) = unsafe { register(&domain.inner, buf.ptr.as_ptr(), len, access)? };
        Ok(MemoryRegion {
            ptr,
            desc,
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

/// Registers `len` bytes at `buf` with `access` in `domain`, honouring its
/// mr_mode as [`MemoryRegion::alloc`] does.
///
/// # Safety
/// `buf..buf+len` must stay allocated until the returned registration is
/// closed.
unsafe fn register(
    domain: &Arc<DomainInner>,
    buf: *const u8,
    len: usize,
    access: Access,
) -> Result<(NonNull<sys::fid_mr>, Desc, u64)> {
    let mode = domain.mr_mode();
    if mode.contains(MrMode::ENDPOINT) {
        return Err(Error::Invalid(format!(
            "provider {:?} needs FI_MR_ENDPOINT registrations, which fabriq-ofi does not bind",
            domain.info.provider()
        )));
    }
    let prov_key = mode.contains(MrMode::PROV_KEY);
    let mut ptr = std::ptr::null_mut();
    let mut tries = 0;
    loop {
        let requested_key = if prov_key {
            0
        } else {
            random_key(domain.info.mr_key_size())?
        };
        // SAFETY: the caller keeps buf..buf+len allocated for the
        // registration's life; ptr receives a handle we own.
        let ret = unsafe {
            sys::fabriq_ofi_mr_reg(
                domain.ptr.as_ptr(),
                buf.cast(),
                len,
                access.0,
                requested_key,
                &mut ptr,
            )
        };
        tries += 1;
        // A key already in use in the domain (FI_ENOKEY): draw another.
        if -ret == sys::FI_ENOKEY && !prov_key && tries < KEY_TRIES {
            continue;
        }
        sys::check("fi_mr_reg", ret as isize)?;
        break;
    }
    let ptr = NonNull::new(ptr).ok_or(Error::Invalid("fi_mr_reg returned NULL".into()))?;
    // SAFETY: ptr is an open registration.
    let (desc, key) = unsafe {
        (
            sys::fabriq_ofi_mr_desc(ptr.as_ptr()),
            sys::fabriq_ofi_mr_key(ptr.as_ptr()),
        )
    };
    Ok((ptr, Desc(desc), key))
}

/// Registration attempts with fresh random keys before a key collision
/// (`FI_ENOKEY`) is reported.
const KEY_TRIES: u32 = 8;

/// A key for `fi_mr_reg` when the provider does not pick keys (no
/// `FI_MR_PROV_KEY`): drawn from the OS's randomness, of the domain's
/// `mr_key_size` bytes (8 when it says more or nothing). A peer that was
/// not told the key cannot guess it: keys are the only thing standing
/// between remote-readable memory and any node that reaches the endpoint.
fn random_key(key_size: usize) -> Result<u64> {
    let mut bytes = [0u8; 8];
    getrandom::getrandom(&mut bytes).map_err(|e| Error::Fi {
        call: "getrandom",
        code: e.raw_os_error().unwrap_or(libc::EIO),
        msg: e.to_string(),
    })?;
    let key = u64::from_ne_bytes(bytes);
    Ok(match key_size {
        1..=7 => key & ((1u64 << (8 * key_size)) - 1),
        _ => key,
    })
}

/// Bytes the application owns, registered for peers to read (`fi_read`)
/// straight from their memory: a rendezvous send. The bytes are kept
/// alive, unchanged (`Bytes` is immutable), until the registration is
/// dropped.
pub struct Lent {
    ptr: NonNull<sys::fid_mr>,
    key: u64,
    // Dropped after Drop::drop closed the registration (field order).
    bytes: bytes::Bytes,
    domain: Arc<DomainInner>,
}

// SAFETY: FI_THREAD_SAFE domain; the bytes are immutable and shared.
unsafe impl Send for Lent {}
// SAFETY: as above.
unsafe impl Sync for Lent {}

impl Lent {
    /// Registers `bytes` for remote reads by peers of `domain`.
    pub fn new(domain: &Domain, bytes: bytes::Bytes) -> Result<Self> {
        // SAFETY: `bytes` is moved into the result, which closes the
        // registration (Drop) before dropping them (field order).
        let (ptr, _, key) = unsafe {
            register(
                &domain.inner,
                bytes.as_ptr(),
                bytes.len(),
                Access::REMOTE_READ,
            )?
        };
        Ok(Lent {
            ptr,
            key,
            bytes,
            domain: domain.inner.clone(),
        })
    }

    /// The key a peer reads with.
    pub fn key(&self) -> u64 {
        self.key
    }

    /// Bytes lent.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// True when nothing is lent.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The address a peer reads the first byte at: the virtual address
    /// under `FI_MR_VIRT_ADDR`, 0 (an offset) otherwise.
    pub fn rma_addr(&self) -> u64 {
        if self.domain.mr_mode().contains(MrMode::VIRT_ADDR) {
            self.bytes.as_ptr() as u64
        } else {
            0
        }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        // SAFETY: we own the registration and close it once, here; the
        // bytes outlive it (field drop order).
        if let Err(error) = unsafe { crate::close::mr(self.ptr) } {
            // Peers may still read the bytes: they are never released.
            let bytes = std::mem::take(&mut self.bytes);
            crate::close::leaked("lent bytes", bytes.len(), &error);
            std::mem::forget(bytes);
        }
    }
}

impl std::fmt::Debug for Lent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lent")
            .field("len", &self.bytes.len())
            .field("key", &self.key)
            .finish()
    }
}

/// What a completed read filled: a registered buffer, handed out as
/// [`bytes::Bytes`] without a copy by [`ReadBuffer::into_bytes`]. Taken
/// from a [`ReadPool`], it goes back there when dropped.
pub struct ReadBuffer {
    // Always Some until Drop.
    mr: Option<MemoryRegion>,
    len: usize,
    /// Where the bytes start in the region (< a page).
    offset: usize,
    home: std::sync::Weak<ReadPoolInner>,
}

/// Registered buffers to read into, kept for reuse: a fresh allocation
/// per read costs a page fault and a zeroed page per 4 KiB, and on
/// hardware providers a registration (pinning) each time.
#[derive(Clone)]
pub struct ReadPool {
    inner: Arc<ReadPoolInner>,
}

#[doc(hidden)]
pub struct ReadPoolInner {
    domain: Domain,
    free: std::sync::Mutex<Vec<MemoryRegion>>,
    max_bytes: usize,
    max_len: usize,
}

impl ReadPool {
    /// A default for [`ReadPool::new`]'s `max_len`: 4 GiB.
    pub const DEFAULT_MAX_LEN: usize = 1 << 32;

    /// A pool for `domain` that keeps at most `max_bytes` of free buffers
    /// and hands out buffers of at most `max_len` bytes: the length of a
    /// rendezvous read comes from the peer, and the buffer is mapped and
    /// registered before a byte arrives.
    pub fn new(domain: &Domain, max_bytes: usize, max_len: usize) -> Self {
        ReadPool {
            inner: Arc::new(ReadPoolInner {
                domain: domain.clone(),
                free: std::sync::Mutex::new(Vec::new()),
                max_bytes,
                max_len,
            }),
        }
    }

    /// The longest buffer [`ReadPool::get`] hands out.
    pub fn max_len(&self) -> usize {
        self.inner.max_len
    }

    /// A registered buffer of `len` bytes, its first byte at the start
    /// of a page: [`ReadPool::get_placed`] with `like` 0.
    pub fn get(&self, len: usize) -> Result<ReadBuffer> {
        self.get_placed(len, 0)
    }

    /// A registered buffer of `len` bytes whose first byte lies where
    /// `like`'s does within a 4096-byte page (`like % 4096`): pass the
    /// address the bytes are read from, and source and destination agree
    /// in their alignment, which the kernel's and the CPU's copies need
    /// to run at full speed (shm's reads of 1 MiB: 7.5-7.8k against
    /// 5.1-5.4k messages a second when they disagreed by 16 bytes).
    ///
    /// A kept buffer of the same size class is reused, else a new one is
    /// made: `len` rounded up to a power of two (at least a page), plus a
    /// page of room for the offset. A `len` of 0 or over
    /// [`ReadPool::max_len`] is refused ([`Error::Invalid`]) before
    /// anything is allocated; only `like`'s low 12 bits count.
    pub fn get_placed(&self, len: usize, like: u64) -> Result<ReadBuffer> {
        let max = self.inner.max_len;
        if len == 0 || len > max {
            return Err(Error::Invalid(format!(
                "a read of {len} bytes: reads are of 1 to {max} bytes"
            )));
        }
        let size = len
            .max(BUF_ALIGN)
            .checked_next_power_of_two()
            .and_then(|class| class.checked_add(BUF_ALIGN))
            .ok_or_else(|| Error::Invalid(format!("a read of {len} bytes: size overflows")))?;
        // < BUF_ALIGN: the buffer holds offset + len <= size bytes.
        let offset = (like % BUF_ALIGN as u64) as usize;
        let kept = {
            let mut free = self.inner.free.lock().unwrap_or_else(|p| p.into_inner());
            free.iter()
                .position(|mr| mr.len() == size)
                .map(|i| free.swap_remove(i))
        };
        let mr = match kept {
            Some(mr) => mr,
            None => MemoryRegion::alloc(&self.inner.domain, size, Access::READ)?,
        };
        Ok(ReadBuffer {
            mr: Some(mr),
            len,
            offset,
            home: Arc::downgrade(&self.inner),
        })
    }
}

impl std::fmt::Debug for ReadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadPool").finish_non_exhaustive()
    }
}

impl Drop for ReadBuffer {
    fn drop(&mut self) {
        let (Some(mr), Some(home)) = (self.mr.take(), self.home.upgrade()) else {
            return;
        };
        let mut free = home.free.lock().unwrap_or_else(|p| p.into_inner());
        let kept: usize = free.iter().map(MemoryRegion::len).sum();
        if kept + mr.len() <= home.max_bytes {
            free.push(mr);
        }
    }
}

impl ReadBuffer {
    fn mr(&self) -> &MemoryRegion {
        self.mr.as_ref().expect("a live buffer")
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the bytes start.
    pub(crate) fn ptr(&self) -> *mut u8 {
        // offset < a page <= the region's length: inside the region.
        self.mr().as_ptr().wrapping_add(self.offset)
    }

    /// Bytes of registered memory from [`ReadBuffer::ptr`] on (at least
    /// `len`).
    pub(crate) fn capacity(&self) -> usize {
        self.mr().len() - self.offset
    }

    pub(crate) fn desc(&self) -> Desc {
        self.mr().desc()
    }

    pub(crate) fn domain(&self) -> &Arc<DomainInner> {
        &self.mr().domain
    }

    /// The bytes, as `Bytes` over the registered memory (no copy); the
    /// registration is closed when the last slice is dropped.
    pub fn into_bytes(self) -> bytes::Bytes {
        bytes::Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for ReadBuffer {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the region holds at least offset + len initialised bytes
        // (zeroed when allocated, then read into; get_placed sizes it so);
        // only a completed read is handed out, so the provider no longer
        // writes them, and nothing else can (we own the region until it
        // goes back to its pool).
        unsafe { std::slice::from_raw_parts(self.ptr(), self.len) }
    }
}

impl std::fmt::Debug for ReadBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadBuffer")
            .field("len", &self.len)
            .finish()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The `/proc/self/maps` lines as (start, end, permissions).
    fn maps() -> Vec<(usize, usize, String)> {
        std::fs::read_to_string("/proc/self/maps")
            .expect("/proc/self/maps")
            .lines()
            .map(|line| {
                let mut fields = line.split_whitespace();
                let range = fields.next().unwrap();
                let perms = fields.next().unwrap().to_string();
                let (a, b) = range.split_once('-').unwrap();
                (
                    usize::from_str_radix(a, 16).unwrap(),
                    usize::from_str_radix(b, 16).unwrap(),
                    perms,
                )
            })
            .collect()
    }

    #[test]
    fn a_buffer_is_a_mapping_of_its_own_between_guard_pages() {
        // Two buffers made one after the other: without the guards the
        // kernel would place them side by side and merge them into one
        // mapping.
        let bufs: Vec<RawBuf> = (0..2).map(|_| RawBuf::new(5 * 4096 + 1).unwrap()).collect();
        let maps = maps();
        for buf in &bufs {
            assert_eq!(buf.len, 6 * 4096, "rounded up to whole pages");
            let start = buf.ptr.as_ptr() as usize;
            let i = maps
                .iter()
                .position(|m| m.0 == start)
                .expect("the buffer starts a mapping");
            assert_eq!(maps[i].1, start + buf.len, "and ends one");
            assert!(maps[i].2.starts_with("rw"), "{:?}", maps[i]);
            assert_eq!(maps[i - 1].1, start, "a mapping right before it");
            assert_eq!(maps[i - 1].2, "---p", "inaccessible");
            assert_eq!(maps[i + 1].0, start + buf.len, "and right after it");
            assert_eq!(maps[i + 1].2, "---p", "inaccessible");
            // SAFETY: the buffer is ours, RW, buf.len bytes.
            let bytes = unsafe { std::slice::from_raw_parts_mut(buf.ptr.as_ptr(), buf.len) };
            assert!(bytes.iter().all(|&b| b == 0), "zeroed");
            bytes.fill(0xA5);
        }
    }

    #[test]
    fn random_keys_fit_the_domains_key_size() {
        for size in 1..=7 {
            for _ in 0..64 {
                assert!(random_key(size).unwrap() < 1 << (8 * size), "{size}");
            }
        }
        // 0 (unspecified), 8 and more: 64 bits. 32 draws that all fit in
        // 56 bits happen once in 2^256.
        for size in [0, 8, 16] {
            let keys: Vec<u64> = (0..32).map(|_| random_key(size).unwrap()).collect();
            assert!(keys.iter().any(|&k| k >= 1 << 56), "{size}: {keys:x?}");
        }
    }

    /// The shm provider's first RDM info and a domain of it.
    #[cfg(fabriq_ofi_libfabric)]
    fn shm_domain() -> (crate::Info, Domain) {
        let info = crate::getinfo(&crate::Hints::new().provider("shm"))
            .unwrap()
            .remove(0);
        let domain = Domain::open_info(&info).unwrap();
        (info, domain)
    }

    #[cfg(fabriq_ofi_libfabric)]
    #[test]
    fn read_buffers_are_placed_like_their_source_and_reused_by_size_class() {
        let (_info, domain) = shm_domain();
        let pool = ReadPool::new(&domain, 16 << 20, 1 << 20);
        // Only the low 12 bits of the source address count.
        for (like, offset) in [
            (0u64, 0usize),
            (16, 16),
            (0x7f00_1234_5fff, 4095),
            (u64::MAX, 4095),
        ] {
            for len in [1usize, 4096, 1 << 20] {
                let buf = pool.get_placed(len, like).unwrap();
                assert_eq!(buf.ptr() as usize % 4096, offset, "{like:#x}, {len}");
                assert_eq!(buf.len(), len);
                assert!(buf.capacity() >= len, "{like:#x}, {len}");
                assert_eq!(buf.as_ref().len(), len);
            }
        }
        // A buffer given back is the next one of its size class, at the
        // offset the next read asks for.
        let first = pool.get_placed(1 << 20, 40).unwrap();
        let region = first.mr().as_ptr() as usize;
        drop(first);
        let again = pool.get_placed(600_000, 4000).unwrap();
        assert_eq!(again.mr().as_ptr() as usize, region, "reused");
        assert_eq!(again.ptr() as usize, region + 4000);
        assert!(again.capacity() >= 600_000);
        // Another class gets a buffer of its own.
        let small = pool.get_placed(100, 0).unwrap();
        assert_ne!(small.mr().as_ptr() as usize, region);
        assert!(pool.get_placed((1 << 20) + 1, 0).is_err(), "over max_len");
        assert!(pool.get_placed(0, 0).is_err(), "empty");
    }

    #[cfg(fabriq_ofi_libfabric)]
    #[test]
    fn a_read_longer_than_its_buffer_is_refused() {
        let (info, domain) = shm_domain();
        let mut ep = crate::PagedEndpoint::open(&domain, &info, Default::default()).unwrap();
        let pool = ReadPool::new(&domain, 1 << 20, 1 << 20);
        let mut buf = pool.get(100).unwrap();
        buf.len = buf.capacity() + 1;
        let refused = ep
            .read(buf, crate::FiAddr(1), 0, 1, 0)
            .expect_err("a read past its buffer was posted");
        let text = refused.error.to_string();
        // A page for 100 bytes, and a page of room for the offset.
        assert!(text.contains("into a buffer of 8192"), "{text}");
        assert_eq!(ep.sends_in_flight(), 0);
    }
}
