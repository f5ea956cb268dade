//! [`Endpoint`]: an RDM endpoint (`fi_endpoint`), its bindings, its name,
//! and the raw (`unsafe`) data-transfer posts. The safe way to move data is
//! [`PagedEndpoint`](crate::PagedEndpoint), which owns the posted buffers.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::av::{AddressVector, AvInner, FiAddr};
use crate::cq::{CompletionQueue, CqInner};
use crate::domain::{Domain, DomainInner};
use crate::error::{Error, Result};
use crate::info::{EpType, Info};
use crate::mr::Desc;
use crate::sys;

/// Which completions a CQ binding receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CqBind {
    /// Send completions (`FI_TRANSMIT`).
    Transmit,
    /// Receive completions (`FI_RECV`).
    Recv,
    /// Both, in one queue (`FI_TRANSMIT | FI_RECV`).
    Both,
}

/// An endpoint. Closing order is enforced by ownership: the endpoint holds
/// its domain, its bound CQs and AV, and closes (`fi_close`) before them.
pub struct Endpoint {
    ptr: NonNull<sys::fid_ep>,
    info: Info,
    enabled: bool,
    /// `fi_close` was called (successfully or not): never again.
    closed: bool,
    // Parents and bindings: dropped after Drop::drop closed the endpoint.
    _cqs: Vec<Arc<CqInner>>,
    _av: Option<Arc<AvInner>>,
    pub(crate) domain: Arc<DomainInner>,
}

// SAFETY: FI_THREAD_SAFE domain (see Hints).
unsafe impl Send for Endpoint {}
// SAFETY: as above; posts through &Endpoint are serialised by the provider.
unsafe impl Sync for Endpoint {}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if let Err(error) = self.close() {
            tracing::warn!(%error, "closing endpoint");
        }
    }
}

impl Endpoint {
    /// Opens an endpoint described by `info` (normally the domain's info).
    /// Only [`EpType::Rdm`] is supported; MSG endpoints need an event queue
    /// and connection management, which this crate does not have yet.
    pub fn open(domain: &Domain, info: &Info) -> Result<Self> {
        if info.ep_type() != Some(EpType::Rdm) {
            return Err(Error::Invalid(format!(
                "endpoint type {:?}: only RDM endpoints are supported",
                info.ep_type()
            )));
        }
        let info = info.clone();
        let mut ptr = std::ptr::null_mut();
        // SAFETY: valid domain and info; ptr receives a handle we own.
        let ret =
            unsafe { sys::fabriq_ofi_endpoint(domain.inner.ptr.as_ptr(), info.as_ptr(), &mut ptr) };
        sys::check("fi_endpoint", ret as isize)?;
        let ptr = NonNull::new(ptr).ok_or(Error::Invalid("fi_endpoint returned NULL".into()))?;
        let ep = Endpoint {
            ptr,
            info,
            enabled: false,
            closed: false,
            _cqs: Vec::new(),
            _av: None,
            domain: domain.inner.clone(),
        };
        if ep.info.provider().split(';').next() == Some("shm") {
            ep.set_name(&shm_name())?;
        }
        Ok(ep)
    }

    /// Names the endpoint (`fi_setname`) before it is enabled: for shm,
    /// the name of its region in /dev/shm, which peers map.
    fn set_name(&self, name: &std::ffi::CStr) -> Result<()> {
        let bytes = name.to_bytes_with_nul();
        // SAFETY: valid endpoint, not yet enabled; `bytes` is a live,
        // NUL-terminated string for the call, which copies it (shm
        // `strdup`s the name) and keeps no pointer to it.
        let ret = unsafe {
            sys::fabriq_ofi_setname(
                self.ptr.as_ptr(),
                bytes.as_ptr() as *mut c_void,
                bytes.len(),
            )
        };
        sys::check("fi_setname", ret as isize)
    }

    /// Closes the endpoint (`fi_close`), once; later calls return `Ok`.
    /// fi_endpoint(3): outstanding operations are discarded on close and
    /// complete no more, so after an `Ok` the provider touches no posted
    /// buffer or context. After an error it may still: the owner of the
    /// posted memory must leak it (as [`PagedEndpoint`](crate::PagedEndpoint)
    /// does), and a caller of the raw posts must do the same.
    pub(crate) fn close(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.closed, true) {
            return Ok(());
        }
        // SAFETY: we own the endpoint and close it once (the flag above);
        // nothing uses it after this (every post checks `closed` through
        // check_enabled).
        unsafe { crate::close::endpoint(self.ptr) }
    }

    fn check_same_domain(&self, other: &Arc<DomainInner>, what: &str) -> Result<()> {
        if Arc::ptr_eq(&self.domain, other) {
            Ok(())
        } else {
            Err(Error::Invalid(format!("{what} belongs to another domain")))
        }
    }

    /// Binds a CQ for transmit or receive completions (before
    /// [`Endpoint::enable`]).
    pub fn bind_cq(&mut self, cq: &CompletionQueue, which: CqBind) -> Result<()> {
        self.check_same_domain(cq.inner.domain_inner(), "CQ")?;
        let flags = match which {
            CqBind::Transmit => sys::FI_TRANSMIT,
            CqBind::Recv => sys::FI_RECV,
            CqBind::Both => sys::FI_TRANSMIT | sys::FI_RECV,
        };
        // SAFETY: both handles open; the Arc kept below keeps the CQ open
        // while the endpoint is.
        let ret =
            unsafe { sys::fabriq_ofi_ep_bind_cq(self.ptr.as_ptr(), cq.inner.ptr.as_ptr(), flags) };
        sys::check("fi_ep_bind(cq)", ret as isize)?;
        self._cqs.push(cq.inner.clone());
        Ok(())
    }

    /// Binds the address vector (before [`Endpoint::enable`]).
    pub fn bind_av(&mut self, av: &AddressVector) -> Result<()> {
        self.check_same_domain(av.inner.domain_inner(), "AV")?;
        // SAFETY: both handles open; the Arc kept below keeps the AV open.
        let ret = unsafe { sys::fabriq_ofi_ep_bind_av(self.ptr.as_ptr(), av.inner.ptr.as_ptr()) };
        sys::check("fi_ep_bind(av)", ret as isize)?;
        self._av = Some(av.inner.clone());
        Ok(())
    }

    /// Enables the endpoint (`fi_enable`).
    pub fn enable(&mut self) -> Result<()> {
        // SAFETY: open endpoint.
        let ret = unsafe { sys::fabriq_ofi_enable(self.ptr.as_ptr()) };
        sys::check("fi_enable", ret as isize)?;
        self.enabled = true;
        Ok(())
    }

    /// Our raw address (`fi_getname`): send these bytes to the peer over a
    /// control connection; it inserts them into its address vector.
    pub fn name(&self) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; 64];
        loop {
            let mut len = buf.len();
            // SAFETY: buf has len bytes; len receives the needed size.
            let ret = unsafe {
                sys::fabriq_ofi_getname(self.ptr.as_ptr(), buf.as_mut_ptr().cast(), &mut len)
            };
            if ret == 0 {
                buf.truncate(len);
                return Ok(buf);
            }
            if -ret == sys::FI_ETOOSMALL && len > buf.len() && len <= 4096 {
                buf.resize(len, 0);
                continue;
            }
            return Err(Error::from_code("fi_getname", -ret));
        }
    }

    /// The info the endpoint was opened with.
    pub fn info(&self) -> &Info {
        &self.info
    }

    fn check_enabled(&self) -> Result<()> {
        if self.enabled && !self.closed {
            Ok(())
        } else {
            Err(Error::Invalid("endpoint is not enabled".into()))
        }
    }

    /// Posts a receive buffer (`fi_recv`). `-FI_EAGAIN` is [`Error::Again`].
    ///
    /// # Safety
    /// `buf..buf+len` must be writable memory registered in this domain
    /// (`desc` its descriptor) and, like `context` (at least 32 bytes, see
    /// `FI_CONTEXT2`), must stay valid and untouched by the caller until the
    /// operation's completion (or error completion) has been read, or until
    /// the endpoint is closed.
    pub unsafe fn post_recv_raw(
        &self,
        buf: *mut u8,
        len: usize,
        desc: Desc,
        src: FiAddr,
        context: *mut c_void,
    ) -> Result<()> {
        self.check_enabled()?;
        // SAFETY: the caller upholds the buffer and context contract.
        let ret = unsafe {
            sys::fabriq_ofi_recv(self.ptr.as_ptr(), buf.cast(), len, desc.0, src.0, context)
        };
        sys::check("fi_recv", ret)
    }

    /// Posts a send (`fi_send`, or `fi_senddata` when `data` is given).
    /// `-FI_EAGAIN` is [`Error::Again`].
    ///
    /// # Safety
    /// As [`Endpoint::post_recv_raw`]: `buf..buf+len` registered (with
    /// `desc`), and both it and `context` valid and unmodified until the
    /// completion has been read or the endpoint is closed.
    pub unsafe fn send_raw(
        &self,
        buf: *const u8,
        len: usize,
        desc: Desc,
        dest: FiAddr,
        data: Option<u64>,
        context: *mut c_void,
    ) -> Result<()> {
        self.check_enabled()?;
        // SAFETY: the caller upholds the buffer and context contract.
        let ret = unsafe {
            match data {
                None => sys::fabriq_ofi_send(
                    self.ptr.as_ptr(),
                    buf.cast(),
                    len,
                    desc.0,
                    dest.0,
                    context,
                ),
                Some(d) => sys::fabriq_ofi_senddata(
                    self.ptr.as_ptr(),
                    buf.cast(),
                    len,
                    desc.0,
                    d,
                    dest.0,
                    context,
                ),
            }
        };
        sys::check(
            if data.is_some() {
                "fi_senddata"
            } else {
                "fi_send"
            },
            ret,
        )
    }

    /// Posts one message of two pieces (`fi_sendmsg` with two iovs and,
    /// with `data`, remote CQ data): `buf0..buf0+len0` (registered, with
    /// `desc0`) and then `buf1..buf1+len1`, which is not registered (only
    /// for domains without `FI_MR_LOCAL`, see
    /// [`PagedEndpoint::sends_pieces`](crate::PagedEndpoint::sends_pieces)).
    ///
    /// # Safety
    ///
    /// As [`Endpoint::send_raw`], for both pieces.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn send2_raw(
        &self,
        buf0: *const u8,
        len0: usize,
        desc0: Desc,
        buf1: *const u8,
        len1: usize,
        dest: FiAddr,
        data: Option<u64>,
        context: *mut c_void,
    ) -> Result<()> {
        self.check_enabled()?;
        // SAFETY: the caller upholds the buffers and context contract.
        let ret = unsafe {
            sys::fabriq_ofi_send2data(
                self.ptr.as_ptr(),
                buf0.cast(),
                len0,
                desc0.0,
                buf1.cast(),
                len1,
                std::ffi::c_int::from(data.is_some()),
                data.unwrap_or(0),
                dest.0,
                context,
            )
        };
        sys::check("fi_sendmsg", ret)
    }

    /// Posts an RMA read (`fi_read`) of `len` bytes at the peer's `addr`
    /// under its registration `key` into `buf`. `-FI_EAGAIN` is
    /// [`Error::Again`].
    ///
    /// # Safety
    /// As [`Endpoint::post_recv_raw`]: `buf..buf+len` writable, registered
    /// (with `desc`) when the domain needs it, and both it and `context`
    /// valid and untouched by the caller until the completion has been
    /// read or the endpoint is closed.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn read_raw(
        &self,
        buf: *mut u8,
        len: usize,
        desc: Desc,
        src: FiAddr,
        addr: u64,
        key: u64,
        context: *mut c_void,
    ) -> Result<()> {
        self.check_enabled()?;
        // SAFETY: the caller upholds the buffer and context contract.
        let ret = unsafe {
            sys::fabriq_ofi_read(
                self.ptr.as_ptr(),
                buf.cast(),
                len,
                desc.0,
                src.0,
                addr,
                key,
                context,
            )
        };
        sys::check("fi_read", ret)
    }

    /// Asks the provider to cancel the operation posted with `context`
    /// (`fi_cancel`); a canceled operation completes with
    /// [`CompletionErrorKind::Canceled`](crate::CompletionErrorKind).
    /// `context` is the value the operation was posted with, as an integer
    /// (it is only compared, never dereferenced, by fi_cancel).
    pub fn cancel(&self, context: usize) -> Result<()> {
        // SAFETY: fi_cancel only compares the context with posted ones.
        let ret = unsafe { sys::fabriq_ofi_cancel(self.ptr.as_ptr(), context as *mut c_void) };
        sys::check("fi_cancel", ret)
    }
}

/// A name for an shm endpoint's region that no other endpoint, living or
/// dead, has: libfabric 1.17 names it `PID:DOMAIN:ENDPOINT` by default,
/// and an endpoint of a process that did not close it (killed, crashed)
/// leaves its region in /dev/shm under that name; a later process given
/// the same pid (pids wrap at `kernel.pid_max`, 32768 by default) then
/// failed `fi_enable` with `EBUSY` (seen: the bench's shm floor, with 44
/// such regions left by killed test processes). The pid, a count within
/// the process and the clock in nanoseconds make the name unique.
fn shm_name() -> std::ffi::CString {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::ffi::CString::new(format!("fabriq-{}-{seq}-{nanos:x}", std::process::id()))
        .expect("no NUL in a formatted name")
}
