//! `zmq_setsockopt` and `zmq_getsockopt` with libzmq's option numbers,
//! value types and sizes: `int` options take exactly `sizeof(int)` bytes
//! (EINVAL otherwise), `int64_t`/`uint64_t` ones 8, strings are returned
//! with their NUL, binary values without, CURVE keys as 32 bytes or as 40
//! Z85 characters (41 with the NUL).

use std::collections::HashMap;
use std::ffi::{c_int, c_void};

use fabriq::{Mechanism, Socket, SocketType};

use crate::socket::{held, socket_type_number};
use crate::util::int_result;

/// Options fabriq has no field for that are recorded (and read back) but
/// change nothing: see docs/capi.md.
#[derive(Default)]
pub struct Extra {
    recorded: HashMap<c_int, c_int>,
    /// `ZMQ_BINDTODEVICE`: recorded and read back, not applied.
    bindtodevice: Vec<u8>,
}

/// Options recorded without effect, with libzmq's defaults.
const RECORDED: &[(c_int, c_int)] = &[
    (80, 0),     // ZMQ_TCP_MAXRT
    (84, 1500),  // ZMQ_MULTICAST_MAXTPDU
    (94, 0),     // ZMQ_LOOPBACK_FASTPATH (Windows only in libzmq)
    (101, 8192), // ZMQ_IN_BATCH_SIZE
    (102, 8192), // ZMQ_OUT_BATCH_SIZE
];

type R<T> = Result<T, c_int>;

const ZMQ_BINDTODEVICE: c_int = 92;

fn ok(r: fabriq::Result<()>) -> R<()> {
    r.map_err(|e| e.to_raw())
}

fn val<T>(r: fabriq::Result<T>) -> R<T> {
    r.map_err(|e| e.to_raw())
}

/// The value bytes of a setsockopt call.
struct In<'a>(&'a [u8]);

impl In<'_> {
    fn int(&self) -> R<c_int> {
        let b: [u8; 4] = self.0.try_into().map_err(|_| libc::EINVAL)?;
        Ok(c_int::from_ne_bytes(b))
    }

    /// An int, or nothing (a zero-length value).
    fn opt_int(&self) -> R<Option<c_int>> {
        if self.0.is_empty() {
            return Ok(None);
        }
        self.int().map(Some)
    }

    fn flag(&self) -> R<bool> {
        Ok(self.int()? != 0)
    }

    fn i64(&self) -> R<i64> {
        let b: [u8; 8] = self.0.try_into().map_err(|_| libc::EINVAL)?;
        Ok(i64::from_ne_bytes(b))
    }

    /// A string value: a trailing NUL, if given, is not part of it.
    fn text(&self) -> R<&str> {
        let b = self.0.strip_suffix(&[0]).unwrap_or(self.0);
        std::str::from_utf8(b).map_err(|_| libc::EINVAL)
    }

    /// A CURVE key: 32 bytes, or 40 Z85 characters (41 with the NUL).
    fn key(&self) -> R<&[u8]> {
        match self.0.len() {
            32 | 40 => Ok(self.0),
            41 if self.0[40] == 0 => Ok(&self.0[..40]),
            _ => Err(libc::EINVAL),
        }
    }
}

/// Sets an option.
///
/// # Safety
///
/// `socket` is null or came from `zmq_socket`; `optval` points to
/// `optvallen` readable bytes (or is null with `optvallen` 0).
#[no_mangle]
pub unsafe extern "C" fn zmq_setsockopt(
    socket: *mut c_void,
    option: c_int,
    optval: *const c_void,
    optvallen: usize,
) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let h = unsafe { held(socket) }?;
        if optval.is_null() && optvallen > 0 {
            return Err(libc::EFAULT);
        }
        let bytes: &[u8] = if optvallen == 0 {
            &[]
        } else {
            // SAFETY: non-null, `optvallen` readable bytes.
            unsafe { std::slice::from_raw_parts(optval.cast(), optvallen) }
        };
        let v = In(bytes);
        if let Some(&(_, _)) = RECORDED.iter().find(|(o, _)| *o == option) {
            let x = v.int()?;
            if x < 0 && option != 80 {
                return Err(libc::EINVAL);
            }
            h.extra
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .recorded
                .insert(option, x);
            return Ok(0);
        }
        // SOCKS_PROXY: no value (NULL) clears it, an empty one is EINVAL,
        // as libzmq's do_setsockopt_string_allow_empty_relaxed.
        if option == 68 && optvallen == 0 && !optval.is_null() {
            return Err(libc::EINVAL);
        }
        if option == ZMQ_BINDTODEVICE {
            let name = v.text()?;
            if name.len() > 15 {
                return Err(libc::EINVAL);
            }
            let mut extra = h.extra.lock().unwrap_or_else(|e| e.into_inner());
            extra.bindtodevice = name.as_bytes().to_vec();
            return Ok(0);
        }
        h.with(|s| set(s, option, &v))?;
        Ok(0)
    })
}

fn set(s: &Socket, option: c_int, v: &In) -> R<()> {
    match option {
        4 => {
            let x = v.i64()?;
            ok(s.set_affinity(x as u64))
        }
        5 => {
            if v.0.is_empty() || v.0.len() > 255 {
                return Err(libc::EINVAL);
            }
            ok(s.set_identity(v.0))
        }
        // Subscriptions: SUB, XSUB and XPUB only (EINVAL elsewhere, as
        // libzmq).
        6 | 7
            if !matches!(
                val(s.get_socket_type())?,
                SocketType::SUB | SocketType::XSUB | SocketType::XPUB
            ) =>
        {
            Err(libc::EINVAL)
        }
        6 => ok(s.set_subscribe(v.0)),
        7 => ok(s.set_unsubscribe(v.0)),
        8 => ok(s.set_rate(v.int()?)),
        9 => ok(s.set_recovery_ivl(v.int()?)),
        11 => ok(s.set_sndbuf(v.int()?)),
        12 => ok(s.set_rcvbuf(v.int()?)),
        17 => ok(s.set_linger(v.int()?)),
        18 => ok(s.set_reconnect_ivl(v.int()?)),
        19 => ok(s.set_backlog(v.int()?)),
        21 => ok(s.set_reconnect_ivl_max(v.int()?)),
        22 => ok(s.set_maxmsgsize(v.i64()?)),
        23 => ok(s.set_sndhwm(v.int()?)),
        24 => ok(s.set_rcvhwm(v.int()?)),
        25 => ok(s.set_multicast_hops(v.int()?)),
        27 => ok(s.set_rcvtimeo(v.int()?)),
        28 => ok(s.set_sndtimeo(v.int()?)),
        31 => ok(s.set_ipv6(!v.flag()?)),
        33 => ok(s.set_router_mandatory(v.flag()?)),
        34 => ok(s.set_tcp_keepalive(v.int()?)),
        35 => ok(s.set_tcp_keepalive_cnt(v.int()?)),
        36 => ok(s.set_tcp_keepalive_idle(v.int()?)),
        37 => ok(s.set_tcp_keepalive_intvl(v.int()?)),
        39 => ok(s.set_immediate(v.flag()?)),
        40 => ok(s.set_xpub_verbose(v.flag()?)),
        42 => ok(s.set_ipv6(v.flag()?)),
        44 => ok(s.set_plain_server(v.flag()?)),
        45 => ok(s.set_plain_username(Some(v.text()?).filter(|t| !t.is_empty()))),
        46 => ok(s.set_plain_password(Some(v.text()?).filter(|t| !t.is_empty()))),
        47 => ok(s.set_curve_server(v.flag()?)),
        48 => ok(s.set_curve_publickey(v.key()?)),
        49 => ok(s.set_curve_secretkey(v.key()?)),
        50 => ok(s.set_curve_serverkey(v.key()?)),
        51 => ok(s.set_probe_router(v.flag()?)),
        52 => ok(s.set_req_correlate(v.flag()?)),
        53 => ok(s.set_req_relaxed(v.flag()?)),
        54 => ok(s.set_conflate(v.flag()?)),
        55 => ok(s.set_zap_domain(v.text()?)),
        56 => ok(s.set_router_handover(v.flag()?)),
        57 => ok(s.set_tos(v.int()?)),
        62 => ok(s.set_gssapi_server(v.flag()?)),
        63 => ok(s.set_gssapi_principal(v.text()?)),
        64 => ok(s.set_gssapi_service_principal(v.text()?)),
        65 => ok(s.set_gssapi_plaintext(v.flag()?)),
        66 => ok(s.set_handshake_ivl(v.int()?)),
        68 => ok(s.set_socks_proxy(Some(v.text()?))),
        69 => ok(s.set_xpub_nodrop(v.flag()?)),
        71 => ok(s.set_xpub_manual(v.flag()?)),
        72 => {
            let text = std::str::from_utf8(v.0).map_err(|_| libc::EINVAL)?;
            ok(s.set_xpub_welcome_msg(Some(text).filter(|t| !t.is_empty())))
        }
        74 => ok(s.set_invert_matching(v.flag()?)),
        73 => ok(s.set_stream_notify(v.flag()?)),
        61 if v.0.len() > 255 => Err(libc::EINVAL),
        61 => ok(s.set_connect_routing_id(v.0)),
        75 => ok(s.set_heartbeat_ivl(v.int()?)),
        76 => ok(s.set_heartbeat_ttl(v.int()?)),
        77 => ok(s.set_heartbeat_timeout(v.int()?)),
        78 => ok(s.set_xpub_verboser(v.flag()?)),
        79 => ok(s.set_connect_timeout(v.int()?)),
        89 => ok(s.set_use_fd(v.int()?)),
        93 => ok(s.set_zap_enforce_domain(v.flag()?)),
        95 => {
            let t = v.text()?;
            let (name, value) = t.split_once(':').ok_or(libc::EINVAL)?;
            ok(s.set_metadata(name, value.as_bytes()))
        }
        96 => ok(s.set_multicast_loop(v.flag()?)),
        // TCP_ACCEPT_FILTER: an empty value clears the list.
        38 if v.0.len() > 255 => Err(libc::EINVAL),
        38 => ok(s.set_tcp_accept_filter(Some(v.text()?))),
        // IPC_FILTER_PID, _UID, _GID: no value clears the list, as
        // libzmq's do_setsockopt_set.
        58 => ok(s.set_ipc_filter_pid(v.opt_int()?)),
        59 => ok(s.set_ipc_filter_uid(v.opt_int()?.map(|u| u as u32))),
        60 => ok(s.set_ipc_filter_gid(v.opt_int()?.map(|g| g as u32))),
        _ => Err(libc::EINVAL),
    }
}

/// A getsockopt answer.
enum Out {
    Int(c_int),
    I64(i64),
    U64(u64),
    /// Returned with a NUL.
    Text(Vec<u8>),
    /// Returned as is.
    Binary(Vec<u8>),
    /// 32 bytes, or Z85 text if the buffer has room for 41.
    Key(Vec<u8>),
}

fn text(r: fabriq::Result<Result<String, Vec<u8>>>) -> R<Out> {
    Ok(Out::Text(match val(r)? {
        Ok(s) => s.into_bytes(),
        Err(b) => b,
    }))
}

fn int(r: fabriq::Result<i32>) -> R<Out> {
    val(r).map(Out::Int)
}

fn flag(r: fabriq::Result<bool>) -> R<Out> {
    val(r).map(|b| Out::Int(b as c_int))
}

fn get(s: &Socket, option: c_int) -> R<Out> {
    match option {
        4 => val(s.get_affinity()).map(Out::U64),
        5 => val(s.get_identity()).map(Out::Binary),
        8 => int(s.get_rate()),
        9 => int(s.get_recovery_ivl()),
        11 => int(s.get_sndbuf()),
        12 => int(s.get_rcvbuf()),
        13 => flag(s.get_rcvmore()),
        14 => int(s.get_fd()),
        15 => val(s.get_events()).map(|e| Out::Int(e.bits() as c_int)),
        16 => val(s.get_socket_type()).map(|t| Out::Int(socket_type_number(t))),
        17 => int(s.get_linger()),
        18 => int(s.get_reconnect_ivl()),
        19 => int(s.get_backlog()),
        21 => int(s.get_reconnect_ivl_max()),
        22 => val(s.get_maxmsgsize()).map(Out::I64),
        23 => int(s.get_sndhwm()),
        24 => int(s.get_rcvhwm()),
        25 => int(s.get_multicast_hops()),
        27 => int(s.get_rcvtimeo()),
        28 => int(s.get_sndtimeo()),
        31 => val(s.is_ipv6()).map(|b| Out::Int(!b as c_int)),
        32 => text(s.get_last_endpoint()),
        34 => int(s.get_tcp_keepalive()),
        35 => int(s.get_tcp_keepalive_cnt()),
        36 => int(s.get_tcp_keepalive_idle()),
        37 => int(s.get_tcp_keepalive_intvl()),
        39 => flag(s.is_immediate()),
        42 => flag(s.is_ipv6()),
        43 => val(s.get_mechanism()).map(|m| {
            Out::Int(match m {
                Mechanism::ZMQ_NULL => 0,
                Mechanism::ZMQ_PLAIN => 1,
                Mechanism::ZMQ_CURVE => 2,
                Mechanism::ZMQ_GSSAPI => 3,
            })
        }),
        44 => flag(s.is_plain_server()),
        45 => text(s.get_plain_username()),
        46 => text(s.get_plain_password()),
        47 => flag(s.is_curve_server()),
        48 => val(s.get_curve_publickey()).map(Out::Key),
        49 => val(s.get_curve_secretkey()).map(Out::Key),
        50 => val(s.get_curve_serverkey()).map(Out::Key),
        54 => flag(s.is_conflate()),
        55 => text(s.get_zap_domain()),
        57 => int(s.get_tos()),
        62 => flag(s.is_gssapi_server()),
        63 => text(s.get_gssapi_principal()),
        64 => text(s.get_gssapi_service_principal()),
        65 => flag(s.is_gssapi_plaintext()),
        66 => int(s.get_handshake_ivl()),
        68 => text(s.get_socks_proxy()),
        73 => flag(s.is_stream_notify()),
        74 => flag(s.is_invert_matching()),
        75 => int(s.get_heartbeat_ivl()),
        // libzmq keeps the TTL in deciseconds.
        76 => int(s.get_heartbeat_ttl().map(|t| t / 100 * 100)),
        77 => int(s.get_heartbeat_timeout()),
        79 => int(s.get_connect_timeout()),
        81 => flag(s.is_thread_safe()),
        89 => int(s.get_use_fd()),
        93 => flag(s.is_zap_enforce_domain()),
        96 => flag(s.is_multicast_loop()),
        _ => Err(libc::EINVAL),
    }
}

/// Reads an option into `optval`, `*optvallen` bytes long; sets
/// `*optvallen` to the size written.
///
/// # Safety
///
/// `socket` is null or came from `zmq_socket`; `optvallen` is null or
/// points to a `size_t`; `optval` points to `*optvallen` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn zmq_getsockopt(
    socket: *mut c_void,
    option: c_int,
    optval: *mut c_void,
    optvallen: *mut usize,
) -> c_int {
    int_result(|| {
        // SAFETY: forwarded contract.
        let h = unsafe { held(socket) }?;
        if optvallen.is_null() {
            return Err(libc::EFAULT);
        }
        // SAFETY: non-null, points to a size_t.
        let room = unsafe { *optvallen };
        if optval.is_null() && room > 0 {
            return Err(libc::EFAULT);
        }
        let out = if let Some(&(_, dflt)) = RECORDED.iter().find(|(o, _)| *o == option) {
            let extra = h.extra.lock().unwrap_or_else(|e| e.into_inner());
            Out::Int(*extra.recorded.get(&option).unwrap_or(&dflt))
        } else if option == ZMQ_BINDTODEVICE {
            let extra = h.extra.lock().unwrap_or_else(|e| e.into_inner());
            Out::Text(extra.bindtodevice.clone())
        } else {
            h.with(|s| get(s, option))?
        };
        let bytes: Vec<u8> = match out {
            Out::Int(x) => {
                // libzmq clears the whole buffer it was given before it
                // writes an int (its test_getsockopt_memset).
                let mut b = fixed(&x.to_ne_bytes(), room)?;
                if room > b.len() && room <= 8 {
                    // SAFETY: `optval` has `room` writable bytes.
                    unsafe { std::ptr::write_bytes(optval.cast::<u8>(), 0, room) };
                }
                b.truncate(4);
                b
            }
            Out::I64(x) => fixed(&x.to_ne_bytes(), room)?,
            Out::U64(x) => fixed(&x.to_ne_bytes(), room)?,
            Out::Text(mut t) => {
                t.push(0);
                t
            }
            Out::Binary(b) => b,
            Out::Key(k) if room == 32 => k,
            Out::Key(k) if room >= 41 => {
                let mut z = fabriq::z85_encode(&k)
                    .map_err(|_| libc::EINVAL)?
                    .into_bytes();
                z.push(0);
                z
            }
            Out::Key(_) => return Err(libc::EINVAL),
        };
        if bytes.len() > room {
            return Err(libc::EINVAL);
        }
        if !bytes.is_empty() {
            // SAFETY: `optval` has `room` >= `bytes.len()` writable bytes.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), optval.cast(), bytes.len()) };
        }
        // SAFETY: non-null, checked above.
        unsafe { *optvallen = bytes.len() };
        Ok(0)
    })
}

/// A fixed-size value: the buffer must have room for it.
fn fixed(b: &[u8], room: usize) -> R<Vec<u8>> {
    if room < b.len() {
        return Err(libc::EINVAL);
    }
    Ok(b.to_vec())
}
