//! Provider discovery: [`Hints`], [`getinfo`] and [`Info`] (what `fi_info`
//! prints).

use std::ffi::CString;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::sys;

/// Endpoint type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpType {
    /// Reliable, connected (`FI_EP_MSG`): needs an event queue to connect.
    Msg,
    /// Reliable, unconnected (`FI_EP_RDM`): peers are addressed through an
    /// address vector. fabriq's fabric engine uses this.
    Rdm,
}

impl EpType {
    fn raw(self) -> i32 {
        match self {
            EpType::Msg => sys::FI_EP_MSG,
            EpType::Rdm => sys::FI_EP_RDM,
        }
    }
}

/// How a provider makes progress (`fi_domain(3)`, "Progress").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The provider progresses operations on its own.
    Auto,
    /// Operations only progress while the application calls into the
    /// provider, e.g. reads a completion queue. tcp and shm are manual for
    /// data here: whoever owns an endpoint must keep reading its CQs.
    Manual,
    /// Not specified.
    Unspec,
}

impl Progress {
    fn from_raw(v: i32) -> Self {
        match v {
            sys::FI_PROGRESS_AUTO => Progress::Auto,
            sys::FI_PROGRESS_MANUAL => Progress::Manual,
            _ => Progress::Unspec,
        }
    }
}

/// Capability bits (`fi_getinfo(3)`, "Capabilities").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Caps(pub u64);

impl Caps {
    /// `FI_MSG`: send/recv.
    pub const MSG: Caps = Caps(sys::FI_MSG);
    /// `FI_TAGGED`: tagged send/recv.
    pub const TAGGED: Caps = Caps(sys::FI_TAGGED);
    /// `FI_RMA`: remote reads and writes.
    pub const RMA: Caps = Caps(sys::FI_RMA);
    /// `FI_SOURCE`: receive completions report the source address.
    pub const SOURCE: Caps = Caps(sys::FI_SOURCE);
    /// `FI_MULTI_RECV`: one buffer receives many messages.
    pub const MULTI_RECV: Caps = Caps(sys::FI_MULTI_RECV);

    /// True when every bit of `other` is set.
    pub fn contains(self, other: Caps) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Caps {
    type Output = Caps;
    fn bitor(self, rhs: Caps) -> Caps {
        Caps(self.0 | rhs.0)
    }
}

/// Memory-registration mode bits (`fi_mr(3)`, "Memory Registration Modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MrMode(pub i32);

impl MrMode {
    /// `FI_MR_LOCAL`: local buffers must be registered and their descriptor
    /// passed on every data transfer.
    pub const LOCAL: MrMode = MrMode(sys::FI_MR_LOCAL);
    /// `FI_MR_VIRT_ADDR`: RMA addresses are virtual addresses, not offsets.
    pub const VIRT_ADDR: MrMode = MrMode(sys::FI_MR_VIRT_ADDR);
    /// `FI_MR_ALLOCATED`: only allocated (backed) memory may be registered.
    pub const ALLOCATED: MrMode = MrMode(sys::FI_MR_ALLOCATED);
    /// `FI_MR_PROV_KEY`: the provider picks the keys.
    pub const PROV_KEY: MrMode = MrMode(sys::FI_MR_PROV_KEY);
    /// `FI_MR_ENDPOINT`: registrations are bound to an endpoint and enabled.
    pub const ENDPOINT: MrMode = MrMode(sys::FI_MR_ENDPOINT);
    /// `FI_MR_RAW`: keys larger than 64 bits.
    pub const RAW: MrMode = MrMode(sys::FI_MR_RAW);
    /// `FI_MR_MMU_NOTIFY`: the application must notify on page changes.
    pub const MMU_NOTIFY: MrMode = MrMode(sys::FI_MR_MMU_NOTIFY);
    /// `FI_MR_RMA_EVENT`.
    pub const RMA_EVENT: MrMode = MrMode(sys::FI_MR_RMA_EVENT);
    /// `FI_MR_HMEM`: device memory must be registered.
    pub const HMEM: MrMode = MrMode(sys::FI_MR_HMEM);

    /// What fabriq handles, and so advertises in its hints: LOCAL (a desc
    /// is passed on every post), VIRT_ADDR (see `MemoryRegion::rma_addr`),
    /// ALLOCATED (we register our own allocations), PROV_KEY (we read the
    /// key back from the registration).
    pub const SUPPORTED: MrMode = MrMode(
        sys::FI_MR_LOCAL | sys::FI_MR_VIRT_ADDR | sys::FI_MR_ALLOCATED | sys::FI_MR_PROV_KEY,
    );

    /// True when every bit of `other` is set.
    pub fn contains(self, other: MrMode) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for MrMode {
    type Output = MrMode;
    fn bitor(self, rhs: MrMode) -> MrMode {
        MrMode(self.0 | rhs.0)
    }
}

/// What to ask `fi_getinfo` for.
///
/// Defaults: RDM endpoint, `FI_MSG`, thread-safe domain, mode bits
/// `FI_CONTEXT | FI_CONTEXT2` (fabriq always passes a 32-byte context it
/// keeps alive until the completion), mr_mode [`MrMode::SUPPORTED`].
#[derive(Debug, Clone)]
pub struct Hints {
    provider: Option<String>,
    ep_type: EpType,
    caps: Caps,
    mr_mode: MrMode,
    node: Option<String>,
    service: Option<String>,
    source: bool,
    /// Keep `FI_MR_VIRT_ADDR` where the provider offers it (see
    /// [`Hints::prefer_virt_addr`]).
    virt_addr: bool,
    /// `FI_THREAD_SAFE` (always, outside this crate's tests).
    thread_safe: bool,
}

impl Default for Hints {
    fn default() -> Self {
        Self::new()
    }
}

impl Hints {
    /// The defaults described on [`Hints`].
    pub fn new() -> Self {
        Hints {
            provider: None,
            ep_type: EpType::Rdm,
            caps: Caps::MSG,
            mr_mode: MrMode::SUPPORTED,
            node: None,
            service: None,
            source: false,
            virt_addr: false,
            thread_safe: true,
        }
    }

    /// Keeps `FI_MR_VIRT_ADDR` in the entries [`getinfo`] returns where
    /// the provider offers it, instead of preferring entries without it
    /// (the default: peers then address registered memory by offset and
    /// learn no address of ours). shm wants it: only with virtual
    /// addresses does it read remote memory in the reader itself
    /// (`process_vm_readv`, done when `fi_read` returns) rather than as a
    /// request the lender's progress serves.
    pub fn prefer_virt_addr(mut self, yes: bool) -> Self {
        self.virt_addr = yes;
        self
    }

    /// Asks for a domain that is not thread safe (`FI_THREAD_DOMAIN`): only
    /// to test that such a domain is refused.
    #[cfg(test)]
    pub(crate) fn not_thread_safe(mut self) -> Self {
        self.thread_safe = false;
        self
    }

    /// Only this provider (`"tcp"`, `"shm"`, `"verbs"`, ...). For tcp RDM,
    /// libfabric layers `ofi_rxm` on top and reports `"tcp;ofi_rxm"`.
    pub fn provider(mut self, name: &str) -> Self {
        self.provider = Some(name.to_string());
        self
    }

    /// Endpoint type.
    pub fn ep_type(mut self, ep_type: EpType) -> Self {
        self.ep_type = ep_type;
        self
    }

    /// Required capabilities.
    pub fn caps(mut self, caps: Caps) -> Self {
        self.caps = caps;
        self
    }

    /// The mr_mode bits the application handles (default
    /// [`MrMode::SUPPORTED`]); providers needing more are filtered out.
    pub fn mr_mode(mut self, mode: MrMode) -> Self {
        self.mr_mode = mode;
        self
    }

    /// Node (host name or address) to resolve. With [`Hints::source`] it is
    /// our local address, otherwise the destination.
    pub fn node(mut self, node: &str) -> Self {
        self.node = Some(node.to_string());
        self
    }

    /// Service (port, for tcp).
    pub fn service(mut self, service: &str) -> Self {
        self.service = Some(service.to_string());
        self
    }

    /// Resolve node/service as the source address (`FI_SOURCE`).
    pub fn source(mut self, yes: bool) -> Self {
        self.source = yes;
        self
    }
}

/// One `fi_info` entry, owned (a `fi_dupinfo` copy, freed on drop).
pub struct Info {
    ptr: NonNull<sys::fi_info>,
}

// SAFETY: an Info is a private, heap-allocated copy only read after
// creation (libfabric reads it in fi_fabric/fi_domain/fi_endpoint without
// keeping it); nothing in it is tied to the creating thread.
unsafe impl Send for Info {}
// SAFETY: see Send: shared access is read-only.
unsafe impl Sync for Info {}

impl Drop for Info {
    fn drop(&mut self) {
        // SAFETY: we own this single-entry list (from fi_dupinfo).
        unsafe { sys::fabriq_ofi_freeinfo(self.ptr.as_ptr()) }
    }
}

impl Clone for Info {
    fn clone(&self) -> Self {
        // SAFETY: self.ptr is a valid fi_info; dupinfo copies it.
        let p = unsafe { sys::fabriq_ofi_dupinfo_one(self.ptr.as_ptr()) };
        Info {
            ptr: NonNull::new(p).expect("fi_dupinfo: out of memory"),
        }
    }
}

/// fi_tostr writes into a static buffer: one caller at a time.
static TOSTR: Mutex<()> = Mutex::new(());

macro_rules! getter {
    ($(#[$m:meta])* $name:ident, $f:ident, $t:ty) => {
        $(#[$m])*
        pub fn $name(&self) -> $t {
            // SAFETY: self.ptr is a valid fi_info for our lifetime.
            unsafe { sys::$f(self.ptr.as_ptr()) as $t }
        }
    };
}

impl Info {
    pub(crate) fn as_ptr(&self) -> *mut sys::fi_info {
        self.ptr.as_ptr()
    }

    fn string(&self, p: *const std::ffi::c_char) -> String {
        // SAFETY: `p` comes from an accessor: NULL or a string owned by
        // this fi_info, valid while we hold it; cstr copies it.
        unsafe { sys::cstr(p) }.unwrap_or_default()
    }

    /// Provider name, e.g. `"tcp;ofi_rxm"` or `"shm"`.
    pub fn provider(&self) -> String {
        // SAFETY: valid fi_info.
        self.string(unsafe { sys::fabriq_ofi_info_prov_name(self.ptr.as_ptr()) })
    }

    /// Fabric name (e.g. `"127.0.0.1/32"` for tcp on loopback).
    pub fn fabric_name(&self) -> String {
        // SAFETY: valid fi_info.
        self.string(unsafe { sys::fabriq_ofi_info_fabric_name(self.ptr.as_ptr()) })
    }

    /// Domain name (e.g. the interface, `"lo"`).
    pub fn domain_name(&self) -> String {
        // SAFETY: valid fi_info.
        self.string(unsafe { sys::fabriq_ofi_info_domain_name(self.ptr.as_ptr()) })
    }

    /// Endpoint type, `None` for types fabriq does not model.
    pub fn ep_type(&self) -> Option<EpType> {
        // SAFETY: valid fi_info.
        match unsafe { sys::fabriq_ofi_info_ep_type(self.ptr.as_ptr()) } {
            sys::FI_EP_MSG => Some(EpType::Msg),
            sys::FI_EP_RDM => Some(EpType::Rdm),
            _ => None,
        }
    }

    /// Capabilities.
    pub fn caps(&self) -> Caps {
        // SAFETY: valid fi_info.
        Caps(unsafe { sys::fabriq_ofi_info_caps(self.ptr.as_ptr()) })
    }

    /// Memory-registration mode the provider requires.
    pub fn mr_mode(&self) -> MrMode {
        // SAFETY: valid fi_info.
        MrMode(unsafe { sys::fabriq_ofi_info_mr_mode(self.ptr.as_ptr()) })
    }

    /// Data progress model.
    pub fn data_progress(&self) -> Progress {
        // SAFETY: valid fi_info.
        Progress::from_raw(unsafe { sys::fabriq_ofi_info_data_progress(self.ptr.as_ptr()) })
    }

    /// Control progress model.
    pub fn control_progress(&self) -> Progress {
        // SAFETY: valid fi_info.
        Progress::from_raw(unsafe { sys::fabriq_ofi_info_control_progress(self.ptr.as_ptr()) })
    }

    getter!(
        /// Mode bits the provider requires of the application.
        mode, fabriq_ofi_info_mode, u64
    );
    getter!(
        /// Provider version (`FI_VERSION` encoding).
        provider_version, fabriq_ofi_info_prov_version, u32
    );
    getter!(
        /// Largest message, in bytes.
        max_msg_size, fabriq_ofi_info_max_msg_size, usize
    );
    getter!(
        /// Largest inject (buffered) send, in bytes.
        inject_size, fabriq_ofi_info_inject_size, usize
    );
    getter!(
        /// Pieces one send may gather (`tx_attr->iov_limit`).
        tx_iov_limit, fabriq_ofi_info_tx_iov_limit, usize
    );
    getter!(
        /// Bytes of remote CQ data a send may carry (0: none).
        cq_data_size, fabriq_ofi_info_cq_data_size, usize
    );
    getter!(
        /// Transmit queue depth.
        tx_size, fabriq_ofi_info_tx_size, usize
    );
    getter!(
        /// Receive queue depth.
        rx_size, fabriq_ofi_info_rx_size, usize
    );
    getter!(
        /// Memory key size in bytes.
        mr_key_size, fabriq_ofi_info_mr_key_size, usize
    );

    /// Whether the domain is thread safe (`FI_THREAD_SAFE`).
    pub fn thread_safe(&self) -> bool {
        // SAFETY: valid fi_info.
        unsafe { sys::fabriq_ofi_info_threading(self.ptr.as_ptr()) == sys::FI_THREAD_SAFE }
    }

    /// Checks what fabriq's data path relies on and the provider only
    /// promises in the info it returned: a thread-safe domain
    /// (`FI_THREAD_SAFE`: handles are shared between threads) and, with
    /// `cq_data`, remote CQ data of at least 8 bytes (`FI_REMOTE_CQ_DATA`
    /// carries a connection token and a sequence number). The error names
    /// the provider.
    pub fn check_required(&self, cq_data: bool) -> Result<()> {
        check_required(
            &self.provider(),
            self.thread_safe(),
            cq_data.then(|| self.cq_data_size()),
        )
    }

    /// True when receive completions can report their source address
    /// (`FI_SOURCE` among the capabilities returned).
    pub fn has_source(&self) -> bool {
        self.caps().contains(Caps::SOURCE)
    }

    /// The source address bytes, if the provider filled them in.
    pub fn src_addr(&self) -> Option<Vec<u8>> {
        let mut len = 0usize;
        // SAFETY: valid fi_info; the returned pointer covers `len` bytes
        // owned by the fi_info, copied out before we return.
        unsafe {
            let p = sys::fabriq_ofi_info_src_addr(self.ptr.as_ptr(), &mut len);
            (!p.is_null() && len > 0)
                .then(|| std::slice::from_raw_parts(p.cast::<u8>(), len).to_vec())
        }
    }

    /// The address format's name (e.g. `"FI_SOCKADDR_IN"`).
    pub fn addr_format(&self) -> String {
        let _g = TOSTR.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: fi_tostr returns a static buffer, copied under the lock.
        unsafe {
            let fmt = sys::fabriq_ofi_info_addr_format(self.ptr.as_ptr());
            sys::cstr(sys::fabriq_ofi_addr_format_tostr(fmt)).unwrap_or_default()
        }
        .trim()
        .to_string()
    }

    /// The full `fi_tostr(FI_TYPE_INFO)` dump (what `fi_info -v` prints).
    pub fn dump(&self) -> String {
        let _g = TOSTR.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: fi_tostr returns a static buffer, copied under the lock.
        unsafe { sys::cstr(sys::fabriq_ofi_info_tostr(self.ptr.as_ptr())) }.unwrap_or_default()
    }
}

impl fmt::Debug for Info {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Info")
            .field("provider", &self.provider())
            .field("fabric", &self.fabric_name())
            .field("domain", &self.domain_name())
            .field("ep_type", &self.ep_type())
            .field("caps", &format_args!("{:#x}", self.caps().0))
            .field("mode", &format_args!("{:#x}", self.mode()))
            .field("mr_mode", &format_args!("{:#x}", self.mr_mode().0))
            .field("data_progress", &self.data_progress())
            .field("control_progress", &self.control_progress())
            .field("addr_format", &self.addr_format())
            .finish()
    }
}

/// See [`Info::check_required`]; `cq_data_size` is `None` when CQ data is
/// not needed.
fn check_required(provider: &str, thread_safe: bool, cq_data_size: Option<usize>) -> Result<()> {
    if !thread_safe {
        return Err(Error::Unsupported {
            provider: provider.to_string(),
            reason: "its domain is not thread safe (FI_THREAD_SAFE was requested)".into(),
        });
    }
    match cq_data_size {
        Some(n) if n < 8 => Err(Error::Unsupported {
            provider: provider.to_string(),
            reason: format!(
                "its remote CQ data (FI_REMOTE_CQ_DATA) holds {n} bytes, fabriq needs 8"
            ),
        }),
        _ => Ok(()),
    }
}

fn opt_cstring(s: &Option<String>) -> Result<Option<CString>> {
    s.as_deref()
        .map(|s| CString::new(s).map_err(|_| Error::Invalid(format!("NUL byte in {s:?}"))))
        .transpose()
}

/// Calls `fi_getinfo` (API version 1.9) and returns every matching entry,
/// in the provider's order of preference.
///
/// Each entry is the strictest variant the provider offers of it: with
/// `FI_SOURCE` where the provider has it (receive completions then name
/// their sender, see [`PagedEndpoint::has_source`](crate::PagedEndpoint::has_source)),
/// and without `FI_MR_VIRT_ADDR` unless the provider requires it or the
/// hints [prefer it](Hints::prefer_virt_addr) (peers then address
/// registered memory by offset, not by our virtual addresses). The hints
/// are asked as given too, so the list and its order are those of the
/// hints; only the entries differ.
///
/// No match is [`Error::NotFound`], naming the requested provider and
/// carrying the `fi_strerror` text ("No data available").
pub fn getinfo(hints: &Hints) -> Result<Vec<Info>> {
    sys::ensure_available()?;
    let base = getinfo_as(hints, hints.caps, hints.mr_mode)?;
    // Stricter variants, most preferred first.
    let no_virt = if hints.virt_addr {
        hints.mr_mode
    } else {
        MrMode(hints.mr_mode.0 & !sys::FI_MR_VIRT_ADDR)
    };
    let source = hints.caps | Caps::SOURCE;
    let mut variants = vec![
        (source, no_virt),
        (hints.caps, no_virt),
        (source, hints.mr_mode),
    ];
    variants.dedup();
    variants.retain(|&(caps, mr)| (caps, mr) != (hints.caps, hints.mr_mode));
    let variants: Vec<Vec<Info>> = variants
        .into_iter()
        .map(|(caps, mr)| getinfo_as(hints, caps, mr).unwrap_or_default())
        .collect();
    // The k-th entry of `base` with a given identity takes the k-th entry
    // of the same identity from the most preferred variant that has one.
    let identity = |i: &Info| {
        (
            i.provider(),
            i.fabric_name(),
            i.domain_name(),
            // SAFETY: valid fi_info.
            unsafe { sys::fabriq_ofi_info_addr_format(i.as_ptr()) },
            i.src_addr(),
        )
    };
    let mut used: Vec<Vec<bool>> = variants.iter().map(|v| vec![false; v.len()]).collect();
    let mut out = Vec::with_capacity(base.len());
    for info in base {
        let id = identity(&info);
        let better = variants.iter().enumerate().find_map(|(v, list)| {
            let k = list
                .iter()
                .enumerate()
                .position(|(k, i)| !used[v][k] && identity(i) == id)?;
            Some((v, k))
        });
        match better {
            Some((v, k)) => {
                used[v][k] = true;
                out.push(variants[v][k].clone());
            }
            None => out.push(info),
        }
    }
    Ok(out)
}

/// One `fi_getinfo` call for `hints` with `caps` and `mr_mode` instead of
/// theirs.
fn getinfo_as(hints: &Hints, caps: Caps, mr_mode: MrMode) -> Result<Vec<Info>> {
    let prov = opt_cstring(&hints.provider)?;
    let node = opt_cstring(&hints.node)?;
    let service = opt_cstring(&hints.service)?;
    let mode = sys::FI_CONTEXT | sys::FI_CONTEXT2;
    // SAFETY: the strings are valid NUL-terminated C strings for the call;
    // hints_new copies the provider name.
    let raw_hints = unsafe {
        sys::fabriq_ofi_hints_new(
            prov.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            hints.ep_type.raw(),
            caps.0,
            mode,
            mr_mode.0,
            if hints.thread_safe {
                sys::FI_THREAD_SAFE
            } else {
                sys::FI_THREAD_DOMAIN
            },
        )
    };
    let raw_hints = NonNull::new(raw_hints).ok_or(Error::Fi {
        call: "fi_allocinfo",
        code: libc::ENOMEM,
        msg: sys::strerror(libc::ENOMEM),
    })?;
    let mut list: *mut sys::fi_info = std::ptr::null_mut();
    // SAFETY: all pointers valid for the call; `list` receives a list we
    // free below.
    let ret = unsafe {
        let version = sys::fabriq_ofi_version(sys::API_MAJOR, sys::API_MINOR);
        let r = sys::fabriq_ofi_getinfo(
            version,
            node.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            service.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            if hints.source { sys::FI_SOURCE } else { 0 },
            raw_hints.as_ptr(),
            &mut list,
        );
        sys::fabriq_ofi_freeinfo(raw_hints.as_ptr());
        r
    };
    if ret != 0 {
        let code = -ret;
        let msg = sys::strerror(code);
        tracing::debug!(provider = ?hints.provider, code, %msg, "fi_getinfo found nothing");
        return Err(if code == sys::FI_ENODATA {
            Error::NotFound {
                provider: hints.provider.clone(),
                call: "fi_getinfo",
                code,
                msg,
            }
        } else {
            Error::Fi {
                call: "fi_getinfo",
                code,
                msg,
            }
        });
    }
    let mut out = Vec::new();
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: cur is an entry of the list fi_getinfo returned.
        let copy = unsafe { sys::fabriq_ofi_dupinfo_one(cur) };
        if let Some(ptr) = NonNull::new(copy) {
            out.push(Info { ptr });
        }
        // SAFETY: as above.
        cur = unsafe { sys::fabriq_ofi_info_next(cur) };
    }
    // SAFETY: we own the list and no longer use it (the entries were copied).
    unsafe { sys::fabriq_ofi_freeinfo(list) };
    Ok(out)
}

/// The libfabric library version at run time, as (major, minor).
pub fn runtime_version() -> Result<(u32, u32)> {
    sys::ensure_available()?;
    // SAFETY: fi_version takes no arguments.
    let v = unsafe { sys::fabriq_ofi_runtime_version() };
    Ok((v >> 16, v & 0xffff))
}

#[cfg(all(test, fabriq_ofi_libfabric))]
mod tests {
    use super::*;
    use crate::Domain;

    #[test]
    fn a_domain_that_is_not_thread_safe_is_refused_naming_the_provider() {
        // shm gives what is asked for (tcp;ofi_rxm is thread safe anyway).
        let info = getinfo(&Hints::new().provider("shm").not_thread_safe())
            .unwrap()
            .remove(0);
        assert!(!info.thread_safe(), "shm made it thread safe anyway");
        let err = Domain::open_info(&info).expect_err("a domain that is not thread safe");
        assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("\"shm\""), "{text}");
        assert!(text.contains("FI_THREAD_SAFE"), "{text}");
    }

    #[test]
    fn remote_cq_data_of_less_than_8_bytes_is_refused_naming_the_provider() {
        for n in [0, 4, 7] {
            let err = check_required("tcp;ofi_rxm", true, Some(n)).unwrap_err();
            let text = err.to_string();
            assert!(text.contains("\"tcp;ofi_rxm\""), "{text}");
            assert!(text.contains("FI_REMOTE_CQ_DATA"), "{text}");
            assert!(text.contains(&format!("{n} bytes")), "{text}");
        }
        assert!(check_required("p", true, Some(8)).is_ok());
        assert!(check_required("p", true, None).is_ok());
        // What the providers here return passes.
        for provider in ["shm", "tcp"] {
            for info in getinfo(&Hints::new().provider(provider)).unwrap() {
                info.check_required(true).unwrap();
            }
        }
    }
}
