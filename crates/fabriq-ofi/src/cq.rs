//! [`CompletionQueue`]: completions of posted operations (`fi_cq`), with a
//! wait fd for epoll/mio where the provider has one.

use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::av::FiAddr;
use crate::domain::{Domain, DomainInner};
use crate::error::{CompletionError, CompletionErrorKind, Error, Result};
use crate::sys;

/// Completion entry format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CqFormat {
    /// `FI_CQ_FORMAT_DATA`: context, flags, length, buffer, remote CQ data.
    Data,
    /// `FI_CQ_FORMAT_TAGGED`: `Data` plus the tag.
    Tagged,
}

impl CqFormat {
    fn raw(self) -> i32 {
        match self {
            CqFormat::Data => sys::FI_CQ_FORMAT_DATA,
            CqFormat::Tagged => sys::FI_CQ_FORMAT_TAGGED,
        }
    }
}

/// One successful completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The context pointer the operation was posted with, as an integer.
    pub context: usize,
    /// `FI_SEND`, `FI_RECV`, `FI_REMOTE_CQ_DATA`, ... (see [`sys`](crate::sys)).
    pub flags: u64,
    /// Bytes received (receives); may be 0 for sends.
    pub len: usize,
    /// Remote CQ data, valid when `flags` has `FI_REMOTE_CQ_DATA`.
    pub data: u64,
    /// Tag (tagged format only, else 0).
    pub tag: u64,
    /// The sender, when read with [`CompletionQueue::read_with_source`]
    /// and the provider could tell (`None` for `FI_ADDR_NOTAVAIL`: a
    /// sender that is not in the address vector).
    pub src: Option<FiAddr>,
}

impl Completion {
    /// True when the completion carries remote CQ data.
    pub fn has_data(&self) -> bool {
        self.flags & sys::FI_REMOTE_CQ_DATA != 0
    }
}

/// How the CQ should wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// No wait object: the caller polls.
    None,
    /// `FI_WAIT_FD` if the provider supports it, else fall back to `None`
    /// ([`CompletionQueue::wait_fd`] tells which one was obtained).
    FdOrPoll,
}

pub(crate) struct CqInner {
    pub(crate) ptr: NonNull<sys::fid_cq>,
    domain: Arc<DomainInner>,
    format: i32,
    wait_fd: Option<RawFd>,
}

// SAFETY: FI_THREAD_SAFE domain (see Hints): the provider serialises CQ
// access.
unsafe impl Send for CqInner {}
// SAFETY: as above.
unsafe impl Sync for CqInner {}

impl CqInner {
    pub(crate) fn domain_inner(&self) -> &Arc<DomainInner> {
        &self.domain
    }
}

impl Drop for CqInner {
    fn drop(&mut self) {
        // SAFETY: endpoints bound to this CQ hold an Arc to us, so they are
        // closed by now; the domain outlives us (we hold it). The wait fd
        // belongs to the CQ and is closed with it.
        let ret = unsafe { sys::fabriq_ofi_close_cq(self.ptr.as_ptr()) };
        if ret != 0 {
            tracing::warn!(error = %Error::from_code("fi_close(cq)", -ret), "closing CQ");
        }
    }
}

/// A completion queue. Cheap to clone (clones share the queue).
#[derive(Clone)]
pub struct CompletionQueue {
    pub(crate) inner: Arc<CqInner>,
}

/// Most entries read per `fi_cq_read` call (the shim's batch size).
pub const READ_BATCH: usize = 64;

impl CompletionQueue {
    /// Opens a CQ of `size` entries.
    pub fn open(domain: &Domain, size: usize, format: CqFormat, wait: Wait) -> Result<Self> {
        let open = |wait_obj: i32| -> Result<NonNull<sys::fid_cq>> {
            let mut ptr = std::ptr::null_mut();
            // SAFETY: valid domain; ptr receives a handle we own.
            let ret = unsafe {
                sys::fabriq_ofi_cq_open(
                    domain.inner.ptr.as_ptr(),
                    size,
                    format.raw(),
                    wait_obj,
                    &mut ptr,
                )
            };
            sys::check("fi_cq_open", ret as isize)?;
            NonNull::new(ptr).ok_or(Error::Invalid("fi_cq_open returned NULL".into()))
        };
        let (ptr, wait_fd) = match wait {
            Wait::None => (open(sys::FI_WAIT_NONE)?, None),
            Wait::FdOrPoll => match open(sys::FI_WAIT_FD) {
                Ok(ptr) => {
                    let mut fd: libc::c_int = -1;
                    // SAFETY: ptr is a CQ opened with FI_WAIT_FD; FI_GETWAIT
                    // stores an int fd.
                    let ret = unsafe { sys::fabriq_ofi_cq_wait_fd(ptr.as_ptr(), &mut fd) };
                    if ret == 0 && fd >= 0 {
                        (ptr, Some(fd))
                    } else {
                        tracing::debug!(
                            error = %Error::from_code("fi_control(FI_GETWAIT)", -ret),
                            "no wait fd; caller must poll"
                        );
                        (ptr, None)
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "FI_WAIT_FD not supported; opening with FI_WAIT_NONE");
                    (open(sys::FI_WAIT_NONE)?, None)
                }
            },
        };
        Ok(CompletionQueue {
            inner: Arc::new(CqInner {
                ptr,
                domain: domain.inner.clone(),
                format: format.raw(),
                wait_fd,
            }),
        })
    }

    /// Reads up to `max` completions (at most [`READ_BATCH`] per call) and
    /// appends them to `out`. Returns how many were read: 0 when the queue
    /// is empty.
    ///
    /// Reading drives progress for manual-progress providers (tcp, shm):
    /// whoever owns the endpoints must keep calling this.
    ///
    /// An error entry at the head of the queue is returned as
    /// [`Error::Completion`] (read with `fi_cq_readerr`); the entries after
    /// it are read by the next call.
    pub fn read(&self, out: &mut Vec<Completion>, max: usize) -> Result<usize> {
        self.read_inner(out, max, false)
    }

    /// As [`CompletionQueue::read`], with each completion's source address
    /// (`fi_cq_readfrom`). Only for a CQ bound to an endpoint opened with
    /// `FI_SOURCE` ([`Info::has_source`](crate::Info::has_source)).
    pub fn read_with_source(&self, out: &mut Vec<Completion>, max: usize) -> Result<usize> {
        self.read_inner(out, max, true)
    }

    fn read_inner(&self, out: &mut Vec<Completion>, max: usize, source: bool) -> Result<usize> {
        use std::mem::MaybeUninit;
        // Not zeroed: the arrays are 3.5 KiB, and a spinning receive reads
        // two queues a look (zeroing them was 5% of a spinning REQ/REP
        // client's time). Only what the calls wrote is read.
        let mut raw = [const { MaybeUninit::<sys::fabriq_ofi_completion>::uninit() }; READ_BATCH];
        let mut src = [const { MaybeUninit::<u64>::uninit() }; READ_BATCH];
        let count = max.min(READ_BATCH);
        if count == 0 {
            return Ok(0);
        }
        if source {
            // A provider that leaves an entry's source unwritten leaves it
            // "not available", not uninitialised.
            for s in &mut src[..count] {
                s.write(sys::FI_ADDR_NOTAVAIL);
            }
        }
        // SAFETY: raw and src hold READ_BATCH >= count entries each; src is
        // passed only when asked for (fi_cq_readfrom). The shim writes
        // exactly the first n entries of raw (its copy loop) when it
        // returns n >= 0, and nothing on error.
        let n = unsafe {
            sys::fabriq_ofi_cq_read(
                self.inner.ptr.as_ptr(),
                self.inner.format,
                raw.as_mut_ptr().cast(),
                count,
                if source {
                    src.as_mut_ptr().cast()
                } else {
                    std::ptr::null_mut()
                },
            )
        };
        if n >= 0 {
            let n = (n as usize).min(count);
            out.extend((0..n).map(|k| {
                // SAFETY: k < n: written by the shim (above); src[k] was
                // initialised above when `source`, and is read only then.
                let c = unsafe { raw[k].assume_init_ref() };
                let from = source.then(|| unsafe { src[k].assume_init() });
                Completion {
                    context: c.op_context as usize,
                    flags: c.flags,
                    len: c.len,
                    data: c.data,
                    tag: c.tag,
                    src: from.filter(|&f| f != sys::FI_ADDR_NOTAVAIL).map(FiAddr),
                }
            }));
            return Ok(n);
        }
        let code = (-n) as i32;
        if code == sys::FI_EAGAIN {
            Ok(0)
        } else if code == sys::FI_EAVAIL {
            match self.read_error()? {
                Some(e) => Err(Error::Completion(Box::new(e))),
                None => Ok(0),
            }
        } else {
            Err(Error::from_code("fi_cq_read", code))
        }
    }

    /// Reads one error entry (`fi_cq_readerr`), if any.
    pub fn read_error(&self) -> Result<Option<CompletionError>> {
        let mut ctx = std::ptr::null_mut();
        let (mut flags, mut len, mut olen, mut data, mut tag) = (0u64, 0usize, 0usize, 0u64, 0u64);
        let (mut err, mut prov_errno) = (0, 0);
        let mut msg = [0 as libc::c_char; 256];
        // SAFETY: every out-pointer is valid for the call; msg has room for
        // msg.len() bytes and the shim NUL-terminates it.
        let ret = unsafe {
            sys::fabriq_ofi_cq_readerr(
                self.inner.ptr.as_ptr(),
                &mut ctx,
                &mut flags,
                &mut len,
                &mut olen,
                &mut data,
                &mut tag,
                &mut err,
                &mut prov_errno,
                msg.as_mut_ptr(),
                msg.len(),
            )
        };
        if ret < 0 {
            let code = (-ret) as i32;
            return if code == sys::FI_EAGAIN {
                Ok(None)
            } else {
                Err(Error::from_code("fi_cq_readerr", code))
            };
        }
        // shm (1.17) reports a negative fi_errno here; the API says positive.
        let err = err.wrapping_abs();
        let kind = match err {
            sys::FI_ETRUNC => CompletionErrorKind::Truncated { olen },
            sys::FI_ECANCELED => CompletionErrorKind::Canceled,
            code => CompletionErrorKind::Other {
                code,
                prov_errno,
                // SAFETY: the shim NUL-terminated msg.
                msg: unsafe { sys::cstr(msg.as_ptr()) }.unwrap_or_default(),
            },
        };
        Ok(Some(CompletionError {
            context: ctx as usize,
            flags,
            len,
            data,
            tag,
            kind,
        }))
    }

    /// The CQ's wait fd, when it was opened with [`Wait::FdOrPoll`] and the
    /// provider supports `FI_WAIT_FD`. Register it for readability with
    /// epoll/mio; call [`CompletionQueue::try_wait`] before sleeping on it.
    /// `None`: there is nothing to sleep on, poll [`CompletionQueue::read`].
    /// The fd is owned by the CQ (do not close it).
    pub fn wait_fd(&self) -> Option<RawFd> {
        self.inner.wait_fd
    }

    /// `fi_trywait`: `Ok(true)` when it is safe to block on the wait fd,
    /// `Ok(false)` when completions may be pending (read the CQ and try
    /// again). Without a wait fd this is always `Ok(false)`.
    pub fn try_wait(&self) -> Result<bool> {
        if self.inner.wait_fd.is_none() {
            return Ok(false);
        }
        // SAFETY: fabric and CQ are open (we hold both).
        let ret = unsafe {
            sys::fabriq_ofi_cq_trywait(
                self.inner.domain.fabric.ptr.as_ptr(),
                self.inner.ptr.as_ptr(),
            )
        };
        match ret {
            0 => Ok(true),
            r if -r == sys::FI_EAGAIN => Ok(false),
            r => Err(Error::from_code("fi_trywait", -r)),
        }
    }
}
