//! [`PagePool`]: N pages of S bytes in one registration. Pages are handed
//! out as owned [`Page`]s and return to the pool when dropped — including
//! when a received page was turned into `bytes::Bytes` and the last slice
//! of it is dropped ([`Page::into_bytes`]).

use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::domain::{Domain, DomainInner};
use crate::error::{Error, Result};
use crate::mr::{Access, Desc, MemoryRegion};

pub(crate) struct PoolInner {
    mr: MemoryRegion,
    page_size: usize,
    count: usize,
    free: Mutex<Vec<u32>>,
}

/// A pool of registered pages (one `fi_mr_reg` for all of them). Cheap to
/// clone; the registration lives until the pool and every page are gone.
#[derive(Clone)]
pub struct PagePool {
    inner: Arc<PoolInner>,
}

impl PagePool {
    /// Registers `count` pages of `page_size` bytes for sends and receives.
    pub fn new(domain: &Domain, count: usize, page_size: usize) -> Result<Self> {
        if count == 0 || page_size == 0 || count > u32::MAX as usize {
            return Err(Error::Invalid(format!(
                "page pool of {count} pages of {page_size} bytes"
            )));
        }
        let total = count
            .checked_mul(page_size)
            .ok_or_else(|| Error::Invalid("page pool size overflows".into()))?;
        let mr = MemoryRegion::alloc(domain, total, Access::SEND | Access::RECV)?;
        Ok(PagePool {
            inner: Arc::new(PoolInner {
                mr,
                page_size,
                count,
                // Reversed so that get() hands out page 0 first.
                free: Mutex::new((0..count as u32).rev().collect()),
            }),
        })
    }

    /// Takes a free page, `None` when all are out.
    pub fn get(&self) -> Option<Page> {
        let index = self.inner.lock_free().pop()?;
        Some(Page {
            pool: self.inner.clone(),
            index,
            len: 0,
        })
    }

    /// Pages currently in the pool.
    pub fn available(&self) -> usize {
        self.inner.lock_free().len()
    }

    /// Number of pages.
    pub fn count(&self) -> usize {
        self.inner.count
    }

    /// Bytes per page.
    pub fn page_size(&self) -> usize {
        self.inner.page_size
    }

    /// The registration's descriptor.
    pub fn desc(&self) -> Desc {
        self.inner.mr.desc()
    }
}

impl PoolInner {
    fn lock_free(&self) -> std::sync::MutexGuard<'_, Vec<u32>> {
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for PagePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PagePool")
            .field("count", &self.inner.count)
            .field("page_size", &self.inner.page_size)
            .field("available", &self.available())
            .finish()
    }
}

/// One page of a [`PagePool`], owned exclusively: while you hold it nobody
/// else (and no provider) touches its bytes. It has a length (bytes in use,
/// 0..=capacity), set by you before a send, and by a receive completion.
pub struct Page {
    pool: Arc<PoolInner>,
    index: u32,
    len: usize,
}

impl Drop for Page {
    fn drop(&mut self) {
        self.pool.lock_free().push(self.index);
    }
}

impl Page {
    /// Bytes per page.
    pub fn capacity(&self) -> usize {
        self.pool.page_size
    }

    /// Bytes in use.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no bytes are in use.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets the bytes in use (clamped to the capacity).
    pub fn set_len(&mut self, len: usize) {
        self.len = len.min(self.capacity());
    }

    /// Copies `data` into the page and sets the length. Fails if it does
    /// not fit.
    pub fn fill(&mut self, data: &[u8]) -> Result<()> {
        if data.len() > self.capacity() {
            return Err(Error::Invalid(format!(
                "{} bytes do not fit into a {}-byte page",
                data.len(),
                self.capacity()
            )));
        }
        self.buffer_mut()[..data.len()].copy_from_slice(data);
        self.len = data.len();
        Ok(())
    }

    /// The bytes in use.
    pub fn as_slice(&self) -> &[u8] {
        &self.buffer()[..self.len]
    }

    /// The whole page (capacity bytes), read-only.
    pub fn buffer(&self) -> &[u8] {
        // SAFETY: the page's bytes lie inside the registered allocation
        // (index < count) and this Page is their only owner (the pool's
        // free list does not hold its index); no provider writes them while
        // we hold the Page (posting takes the Page by value).
        unsafe { std::slice::from_raw_parts(self.ptr(), self.capacity()) }
    }

    /// The whole page (capacity bytes), writable.
    pub fn buffer_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in buffer(), and &mut self makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.capacity()) }
    }

    /// The registration's descriptor (pass it with the page's address).
    pub fn desc(&self) -> Desc {
        self.pool.mr.desc()
    }

    /// Start of the page.
    pub(crate) fn ptr(&self) -> *mut u8 {
        // The offset stays inside the allocation: index < count and the
        // allocation is count * page_size bytes.
        self.pool
            .mr
            .as_ptr()
            .wrapping_add(self.index as usize * self.pool.page_size)
    }

    pub(crate) fn domain(&self) -> &Arc<DomainInner> {
        &self.pool.mr.domain
    }

    /// Index of the page in its pool.
    pub fn index(&self) -> usize {
        self.index as usize
    }

    /// Freezes the page into `Bytes` covering its used bytes, without
    /// copying. Slices of it (`Bytes::slice`) share the page; the page
    /// returns to its pool when the last of them is dropped.
    pub fn into_bytes(self) -> Bytes {
        Bytes::from_owner(FrozenPage(self))
    }
}

impl std::fmt::Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Page")
            .field("index", &self.index)
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .finish()
    }
}

/// A page owned by `Bytes`: read-only from now on.
struct FrozenPage(Page);

impl AsRef<[u8]> for FrozenPage {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}
