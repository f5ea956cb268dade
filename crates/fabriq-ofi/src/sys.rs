//! The extern declarations of the C shim (`csrc/shim.c`) and the libfabric
//! constants fabriq uses.
//!
//! Every libfabric object is an opaque pointer here: Rust never reads a
//! libfabric struct, the shim has an accessor for each field fabriq needs.
//! When the crate is built without libfabric (`cfg(fabriq_ofi_libfabric)`
//! unset), the same functions exist as Rust stubs that are never reached:
//! [`ensure_available`] fails first, and no handle can be built without it.
#![allow(missing_docs)]

use std::ffi::{c_char, c_int, c_void};

use crate::error::{Error, Result};

/// Declares opaque FFI types (a zero-sized struct that is not `Send`,
/// `Sync` or `Unpin`, as the nomicon recommends).
macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
        }
    )*};
}

opaque!(fi_info, fid_fabric, fid_domain, fid_ep, fid_cq, fid_av, fid_mr);

/// One completion as the shim hands it over (same for both CQ formats).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fabriq_ofi_completion {
    pub op_context: *mut c_void,
    pub flags: u64,
    pub len: usize,
    pub buf: *mut c_void,
    pub data: u64,
    pub tag: u64,
}

impl Default for fabriq_ofi_completion {
    fn default() -> Self {
        Self {
            op_context: std::ptr::null_mut(),
            flags: 0,
            len: 0,
            buf: std::ptr::null_mut(),
            data: 0,
            tag: 0,
        }
    }
}

/// Declares the shim functions: an `extern "C"` block when libfabric is
/// compiled in, unreachable stubs with the same signatures otherwise.
macro_rules! shim {
    ($( pub fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty ; )*) => {
        #[cfg(fabriq_ofi_libfabric)]
        extern "C" {
            $( pub fn $name($($arg: $ty),*) -> $ret; )*
        }
        $(
            #[cfg(not(fabriq_ofi_libfabric))]
            #[allow(unused_variables, clippy::missing_safety_doc, clippy::too_many_arguments)]
            pub unsafe fn $name($($arg: $ty),*) -> $ret {
                unreachable!(concat!(
                    "fabriq-ofi was built without libfabric; ",
                    stringify!($name),
                    " cannot be reached because ensure_available() fails first"
                ))
            }
        )*
    };
}

shim! {
    pub fn fabriq_ofi_load() -> *const c_char;
    pub fn fabriq_ofi_version(major: u32, minor: u32) -> u32;
    pub fn fabriq_ofi_runtime_version() -> u32;
    pub fn fabriq_ofi_strerror(err: c_int) -> *const c_char;

    pub fn fabriq_ofi_hints_new(prov_name: *const c_char, ep_type: c_int, caps: u64, mode: u64, mr_mode: c_int, threading: c_int) -> *mut fi_info;
    pub fn fabriq_ofi_getinfo(version: u32, node: *const c_char, service: *const c_char, flags: u64, hints: *const fi_info, info: *mut *mut fi_info) -> c_int;
    pub fn fabriq_ofi_freeinfo(info: *mut fi_info) -> ();
    pub fn fabriq_ofi_dupinfo_one(info: *const fi_info) -> *mut fi_info;
    pub fn fabriq_ofi_info_next(info: *const fi_info) -> *mut fi_info;
    pub fn fabriq_ofi_info_prov_name(info: *const fi_info) -> *const c_char;
    pub fn fabriq_ofi_info_prov_version(info: *const fi_info) -> u32;
    pub fn fabriq_ofi_info_fabric_name(info: *const fi_info) -> *const c_char;
    pub fn fabriq_ofi_info_domain_name(info: *const fi_info) -> *const c_char;
    pub fn fabriq_ofi_info_ep_type(info: *const fi_info) -> c_int;
    pub fn fabriq_ofi_info_protocol(info: *const fi_info) -> u32;
    pub fn fabriq_ofi_info_caps(info: *const fi_info) -> u64;
    pub fn fabriq_ofi_info_mode(info: *const fi_info) -> u64;
    pub fn fabriq_ofi_info_addr_format(info: *const fi_info) -> u32;
    pub fn fabriq_ofi_info_mr_mode(info: *const fi_info) -> c_int;
    pub fn fabriq_ofi_info_mr_key_size(info: *const fi_info) -> usize;
    pub fn fabriq_ofi_info_cq_data_size(info: *const fi_info) -> usize;
    pub fn fabriq_ofi_info_data_progress(info: *const fi_info) -> c_int;
    pub fn fabriq_ofi_info_control_progress(info: *const fi_info) -> c_int;
    pub fn fabriq_ofi_info_threading(info: *const fi_info) -> c_int;
    pub fn fabriq_ofi_info_max_msg_size(info: *const fi_info) -> usize;
    pub fn fabriq_ofi_info_inject_size(info: *const fi_info) -> usize;
    pub fn fabriq_ofi_info_tx_iov_limit(info: *const fi_info) -> usize;
    pub fn fabriq_ofi_info_tx_size(info: *const fi_info) -> usize;
    pub fn fabriq_ofi_info_rx_size(info: *const fi_info) -> usize;
    pub fn fabriq_ofi_info_src_addr(info: *const fi_info, len: *mut usize) -> *const c_void;
    pub fn fabriq_ofi_info_dest_addr(info: *const fi_info, len: *mut usize) -> *const c_void;
    pub fn fabriq_ofi_info_tostr(info: *const fi_info) -> *const c_char;
    pub fn fabriq_ofi_addr_format_tostr(fmt: u32) -> *const c_char;

    pub fn fabriq_ofi_fabric(info: *const fi_info, fabric: *mut *mut fid_fabric) -> c_int;
    pub fn fabriq_ofi_domain(fabric: *mut fid_fabric, info: *mut fi_info, domain: *mut *mut fid_domain) -> c_int;
    pub fn fabriq_ofi_close_fabric(f: *mut fid_fabric) -> c_int;
    pub fn fabriq_ofi_close_domain(d: *mut fid_domain) -> c_int;
    pub fn fabriq_ofi_close_ep(e: *mut fid_ep) -> c_int;
    pub fn fabriq_ofi_close_cq(c: *mut fid_cq) -> c_int;
    pub fn fabriq_ofi_close_av(a: *mut fid_av) -> c_int;
    pub fn fabriq_ofi_close_mr(m: *mut fid_mr) -> c_int;

    pub fn fabriq_ofi_cq_open(domain: *mut fid_domain, size: usize, format: c_int, wait_obj: c_int, cq: *mut *mut fid_cq) -> c_int;
    pub fn fabriq_ofi_cq_read(cq: *mut fid_cq, format: c_int, out: *mut fabriq_ofi_completion, count: usize, src: *mut u64) -> isize;
    pub fn fabriq_ofi_cq_readerr(cq: *mut fid_cq, op_context: *mut *mut c_void, flags: *mut u64, len: *mut usize, olen: *mut usize, data: *mut u64, tag: *mut u64, err: *mut c_int, prov_errno: *mut c_int, msg: *mut c_char, msg_len: usize) -> isize;
    pub fn fabriq_ofi_cq_wait_fd(cq: *mut fid_cq, fd: *mut c_int) -> c_int;
    pub fn fabriq_ofi_cq_trywait(fabric: *mut fid_fabric, cq: *mut fid_cq) -> c_int;

    pub fn fabriq_ofi_av_open(domain: *mut fid_domain, count: usize, av: *mut *mut fid_av) -> c_int;
    pub fn fabriq_ofi_av_insert(av: *mut fid_av, addr: *const c_void, fi_addr: *mut u64) -> c_int;
    pub fn fabriq_ofi_av_remove(av: *mut fid_av, fi_addr: u64) -> c_int;

    pub fn fabriq_ofi_mr_reg(domain: *mut fid_domain, buf: *const c_void, len: usize, access: u64, requested_key: u64, mr: *mut *mut fid_mr) -> c_int;
    pub fn fabriq_ofi_mr_desc(mr: *mut fid_mr) -> *mut c_void;
    pub fn fabriq_ofi_mr_key(mr: *mut fid_mr) -> u64;
    pub fn fabriq_ofi_mr_bind_ep(mr: *mut fid_mr, ep: *mut fid_ep) -> c_int;
    pub fn fabriq_ofi_mr_enable(mr: *mut fid_mr) -> c_int;

    pub fn fabriq_ofi_endpoint(domain: *mut fid_domain, info: *mut fi_info, ep: *mut *mut fid_ep) -> c_int;
    pub fn fabriq_ofi_ep_bind_cq(ep: *mut fid_ep, cq: *mut fid_cq, flags: u64) -> c_int;
    pub fn fabriq_ofi_ep_bind_av(ep: *mut fid_ep, av: *mut fid_av) -> c_int;
    pub fn fabriq_ofi_enable(ep: *mut fid_ep) -> c_int;
    pub fn fabriq_ofi_setname(ep: *mut fid_ep, addr: *mut c_void, len: usize) -> c_int;
    pub fn fabriq_ofi_getname(ep: *mut fid_ep, addr: *mut c_void, len: *mut usize) -> c_int;
    pub fn fabriq_ofi_recv(ep: *mut fid_ep, buf: *mut c_void, len: usize, desc: *mut c_void, src: u64, context: *mut c_void) -> isize;
    pub fn fabriq_ofi_send(ep: *mut fid_ep, buf: *const c_void, len: usize, desc: *mut c_void, dest: u64, context: *mut c_void) -> isize;
    pub fn fabriq_ofi_senddata(ep: *mut fid_ep, buf: *const c_void, len: usize, desc: *mut c_void, data: u64, dest: u64, context: *mut c_void) -> isize;
    pub fn fabriq_ofi_send2data(ep: *mut fid_ep, buf0: *const c_void, len0: usize, desc0: *mut c_void, buf1: *const c_void, len1: usize, has_data: c_int, data: u64, dest: u64, context: *mut c_void) -> isize;
    pub fn fabriq_ofi_read(ep: *mut fid_ep, buf: *mut c_void, len: usize, desc: *mut c_void, src: u64, addr: u64, key: u64, context: *mut c_void) -> isize;
    pub fn fabriq_ofi_tsend(ep: *mut fid_ep, buf: *const c_void, len: usize, desc: *mut c_void, dest: u64, tag: u64, context: *mut c_void) -> isize;
    pub fn fabriq_ofi_trecv(ep: *mut fid_ep, buf: *mut c_void, len: usize, desc: *mut c_void, src: u64, tag: u64, ignore: u64, context: *mut c_void) -> isize;
    pub fn fabriq_ofi_cancel(ep: *mut fid_ep, context: *mut c_void) -> isize;
}

#[cfg(fabriq_ofi_libfabric)]
extern "C" {
    pub static fabriq_ofi_consts: [u64; 41];
    pub static fabriq_ofi_consts_len: usize;
}

/// True when the crate was compiled against libfabric's headers (the
/// library itself is opened at run time, see [`ensure_available`]).
pub const AVAILABLE: bool = cfg!(fabriq_ofi_libfabric);

/// The message of [`Error::Unavailable`] in a build without libfabric.
pub const UNAVAILABLE_MSG: &str = "fabriq was built without libfabric \
    (pkg-config found no libfabric >= 1.9, or FABRIQ_OFI_DISABLE=1 was set at build time); \
    install libfabric-dev (Debian/Ubuntu) or libfabric-devel (Fedora/RHEL) and rebuild";

/// Opens libfabric if that has not been done yet, and fails with
/// [`Error::Unavailable`] when it cannot be used: the crate was built
/// without it, or the library cannot be opened at run time (not installed,
/// not on the loader's path, or missing a symbol fabriq needs). The first
/// call opens `libfabric.so.1` (or the file `FABRIQ_OFI_LIBRARY` names);
/// every later call returns the same outcome at the cost of one check.
pub fn ensure_available() -> Result<()> {
    if !AVAILABLE {
        return Err(Error::Unavailable(UNAVAILABLE_MSG.to_string()));
    }
    // SAFETY: the shim's loader takes no arguments, runs once under
    // pthread_once and returns NULL or a pointer to its static message.
    let why = unsafe { cstr(fabriq_ofi_load()) };
    match why {
        None => Ok(()),
        Some(why) => Err(Error::Unavailable(format!(
            "libfabric could not be opened at run time ({why}); install the libfabric \
             runtime (Debian/Ubuntu: libfabric1; Fedora/RHEL: libfabric), put its \
             directory on LD_LIBRARY_PATH, or name the file in FABRIQ_OFI_LIBRARY"
        ))),
    }
}

/// The API version fabriq requests: 1.9 (libfabric 1.9 .. 2.x accept it).
pub const API_MAJOR: u32 = 1;
/// See [`API_MAJOR`].
pub const API_MINOR: u32 = 9;

// Flag values from <rdma/fabric.h>, <rdma/fi_domain.h>, <rdma/fi_errno.h>.
// They are ABI (fixed across 1.x and 2.x); `tests::constants_match_headers`
// compares each with the shim's table built from the headers.
pub const FI_MSG: u64 = 1 << 1;
pub const FI_RMA: u64 = 1 << 2;
pub const FI_TAGGED: u64 = 1 << 3;
pub const FI_READ: u64 = 1 << 8;
pub const FI_WRITE: u64 = 1 << 9;
pub const FI_RECV: u64 = 1 << 10;
pub const FI_SEND: u64 = 1 << 11;
pub const FI_TRANSMIT: u64 = FI_SEND;
pub const FI_REMOTE_READ: u64 = 1 << 12;
pub const FI_REMOTE_WRITE: u64 = 1 << 13;
pub const FI_MULTI_RECV: u64 = 1 << 16;
pub const FI_REMOTE_CQ_DATA: u64 = 1 << 17;
pub const FI_SOURCE: u64 = 1 << 57;
pub const FI_CONTEXT: u64 = 1 << 59;
pub const FI_CONTEXT2: u64 = 1 << 52;

pub const FI_MR_LOCAL: i32 = 1 << 2;
pub const FI_MR_RAW: i32 = 1 << 3;
pub const FI_MR_VIRT_ADDR: i32 = 1 << 4;
pub const FI_MR_ALLOCATED: i32 = 1 << 5;
pub const FI_MR_PROV_KEY: i32 = 1 << 6;
pub const FI_MR_MMU_NOTIFY: i32 = 1 << 7;
pub const FI_MR_RMA_EVENT: i32 = 1 << 8;
pub const FI_MR_ENDPOINT: i32 = 1 << 9;
pub const FI_MR_HMEM: i32 = 1 << 10;

pub const FI_EAGAIN: i32 = libc::EAGAIN;
pub const FI_ENODATA: i32 = libc::ENODATA;
pub const FI_ECANCELED: i32 = libc::ECANCELED;
pub const FI_EAVAIL: i32 = 259;
pub const FI_ETRUNC: i32 = 265;
pub const FI_ETOOSMALL: i32 = 257;
pub const FI_ENOKEY: i32 = 266;

pub const FI_ADDR_UNSPEC: u64 = u64::MAX;
pub const FI_ADDR_NOTAVAIL: u64 = u64::MAX;

pub const FI_EP_MSG: i32 = 1;
pub const FI_EP_RDM: i32 = 3;
pub const FI_PROGRESS_AUTO: i32 = 1;
pub const FI_PROGRESS_MANUAL: i32 = 2;
pub const FI_THREAD_SAFE: i32 = 1;
pub const FI_THREAD_DOMAIN: i32 = 3;
pub const FI_WAIT_NONE: i32 = 0;
pub const FI_WAIT_FD: i32 = 3;
pub const FI_CQ_FORMAT_DATA: i32 = 3;
pub const FI_CQ_FORMAT_TAGGED: i32 = 4;
pub const FI_AV_TABLE: i32 = 2;

/// The `fi_strerror` text of a (positive) fi_errno.
pub fn strerror(code: i32) -> String {
    if ensure_available().is_err() {
        return format!("error {code}");
    }
    // SAFETY: fi_strerror returns a pointer to a static NUL-terminated string
    // for any input (unknown codes fall back to strerror's text).
    unsafe {
        let p = fabriq_ofi_strerror(code);
        if p.is_null() {
            return format!("error {code}");
        }
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// Turns a libfabric return code (0 or a negative fi_errno) into a Result
/// naming the call.
pub fn check(call: &'static str, ret: isize) -> Result<()> {
    if ret >= 0 {
        Ok(())
    } else {
        Err(Error::from_code(call, (-ret) as i32))
    }
}

/// Copies a C string owned by libfabric, `None` for NULL.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays valid for
/// the duration of the call.
pub unsafe fn cstr(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        // SAFETY: non-null and NUL-terminated per the caller's contract.
        Some(
            unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned(),
        )
    }
}

#[cfg(all(test, fabriq_ofi_libfabric))]
mod tests {
    use super::*;

    #[test]
    fn constants_match_headers() {
        let ours: [u64; 41] = [
            FI_MSG,
            FI_RMA,
            FI_TAGGED,
            FI_SEND,
            FI_RECV,
            FI_READ,
            FI_WRITE,
            FI_REMOTE_READ,
            FI_REMOTE_WRITE,
            FI_SOURCE,
            FI_CONTEXT,
            FI_CONTEXT2,
            FI_MR_LOCAL as u64,
            FI_MR_VIRT_ADDR as u64,
            FI_MR_ALLOCATED as u64,
            FI_MR_PROV_KEY as u64,
            FI_MR_ENDPOINT as u64,
            FI_REMOTE_CQ_DATA,
            FI_ETRUNC as u64,
            FI_EAVAIL as u64,
            FI_EAGAIN as u64,
            FI_ECANCELED as u64,
            FI_ENODATA as u64,
            FI_ADDR_UNSPEC,
            FI_EP_MSG as u64,
            FI_EP_RDM as u64,
            FI_PROGRESS_AUTO as u64,
            FI_PROGRESS_MANUAL as u64,
            FI_TRANSMIT,
            FI_RECV,
            FI_WAIT_NONE as u64,
            FI_WAIT_FD as u64,
            FI_CQ_FORMAT_DATA as u64,
            FI_CQ_FORMAT_TAGGED as u64,
            FI_AV_TABLE as u64,
            FI_MR_RAW as u64,
            FI_MR_MMU_NOTIFY as u64,
            FI_MR_RMA_EVENT as u64,
            FI_MR_HMEM as u64,
            FI_MULTI_RECV,
            FI_THREAD_SAFE as u64,
        ];
        // SAFETY: the shim defines both statics as constant data.
        let (theirs, len) = unsafe { (fabriq_ofi_consts, fabriq_ofi_consts_len) };
        assert_eq!(len, ours.len());
        for (i, (a, b)) in ours.iter().zip(theirs.iter()).enumerate() {
            assert_eq!(a, b, "constant #{i} differs from the libfabric headers");
        }
    }
}
