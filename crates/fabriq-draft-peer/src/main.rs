//! `draft-peer`: one libzmq socket of a draft type (libzmq 4.3.4 built
//! with its draft API), driven by line commands on stdin, answering one
//! line per command on stdout. Used by this crate's tests to check
//! fabriq's draft sockets against the real thing.
//!
//! ```text
//! socket TYPE            CLIENT SERVER RADIO DISH GATHER SCATTER
//!                        CHANNEL PEER DGRAM                       -> ok
//! bind ENDPOINT          -> ok LAST_ENDPOINT
//! connect ENDPOINT       -> ok
//! connect_peer ENDPOINT  (zmq_connect_peer)                        -> ok ROUTING_ID
//! join GROUP / leave GROUP                                        -> ok
//! send BODY [ROUTING_ID|-] [GROUP|-]   (one frame)                 -> ok
//! sendmore BODY          (a frame with ZMQ_SNDMORE)                -> ok
//! rcvtimeo MS            (the receive timeout; 5000 at first)      -> ok
//! ipv6 0|1               (ZMQ_IPV6, before bind / connect)         -> ok
//! recv                   (waits up to the receive timeout)
//!                        -> msg ROUTING_ID GROUP|- BODY
//!                        (a NUL byte in BODY is written `\0`)
//! quit
//! ```
//!
//! Any failure answers `err ERRNO_NAME message`. Bodies, groups and
//! endpoints are single words.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::io::{BufRead, Write};

#[repr(C, align(8))]
struct Msg([u8; 64]);

extern "C" {
    fn zmq_ctx_new() -> *mut c_void;
    fn zmq_ctx_term(ctx: *mut c_void) -> c_int;
    fn zmq_socket(ctx: *mut c_void, kind: c_int) -> *mut c_void;
    fn zmq_close(s: *mut c_void) -> c_int;
    fn zmq_bind(s: *mut c_void, ep: *const c_char) -> c_int;
    fn zmq_connect(s: *mut c_void, ep: *const c_char) -> c_int;
    fn zmq_setsockopt(s: *mut c_void, opt: c_int, v: *const c_void, len: usize) -> c_int;
    fn zmq_getsockopt(s: *mut c_void, opt: c_int, v: *mut c_void, len: *mut usize) -> c_int;
    fn zmq_connect_peer(s: *mut c_void, ep: *const c_char) -> u32;
    fn zmq_join(s: *mut c_void, group: *const c_char) -> c_int;
    fn zmq_leave(s: *mut c_void, group: *const c_char) -> c_int;
    fn zmq_msg_init(m: *mut Msg) -> c_int;
    fn zmq_msg_init_size(m: *mut Msg, size: usize) -> c_int;
    fn zmq_msg_data(m: *mut Msg) -> *mut c_void;
    fn zmq_msg_size(m: *const Msg) -> usize;
    fn zmq_msg_send(m: *mut Msg, s: *mut c_void, flags: c_int) -> c_int;
    fn zmq_msg_recv(m: *mut Msg, s: *mut c_void, flags: c_int) -> c_int;
    fn zmq_msg_close(m: *mut Msg) -> c_int;
    fn zmq_msg_routing_id(m: *mut Msg) -> u32;
    fn zmq_msg_set_routing_id(m: *mut Msg, id: u32) -> c_int;
    fn zmq_msg_group(m: *mut Msg) -> *const c_char;
    fn zmq_msg_set_group(m: *mut Msg, group: *const c_char) -> c_int;
    fn zmq_errno() -> c_int;
    fn zmq_strerror(e: c_int) -> *const c_char;
}

// zmq.h (draft section).
const ZMQ_SERVER: c_int = 12;
const ZMQ_CLIENT: c_int = 13;
const ZMQ_RADIO: c_int = 14;
const ZMQ_DISH: c_int = 15;
const ZMQ_GATHER: c_int = 16;
const ZMQ_SCATTER: c_int = 17;
const ZMQ_DGRAM: c_int = 18;
const ZMQ_PEER: c_int = 19;
const ZMQ_CHANNEL: c_int = 20;
const ZMQ_LINGER: c_int = 17;
const ZMQ_IPV6: c_int = 42;
const ZMQ_RCVTIMEO: c_int = 27;
const ZMQ_SNDTIMEO: c_int = 28;
const ZMQ_LAST_ENDPOINT: c_int = 32;
const ZMQ_SNDMORE: c_int = 2;

fn errno_name(e: c_int) -> String {
    let name = match e {
        libc_errno::EAGAIN => "EAGAIN",
        libc_errno::EINVAL => "EINVAL",
        libc_errno::EHOSTUNREACH => "EHOSTUNREACH",
        libc_errno::ENOTSUP => "ENOTSUP",
        libc_errno::EFAULT => "EFAULT",
        other => return format!("E{other}"),
    };
    name.to_string()
}

/// Linux errno values (libzmq uses the system's).
mod libc_errno {
    pub const EAGAIN: i32 = 11;
    pub const EINVAL: i32 = 22;
    pub const EHOSTUNREACH: i32 = 113;
    pub const ENOTSUP: i32 = 95;
    pub const EFAULT: i32 = 14;
}

fn failure() -> String {
    // SAFETY: zmq_errno and zmq_strerror take no pointers from us;
    // zmq_strerror returns a static C string.
    unsafe {
        let e = zmq_errno();
        let text = CStr::from_ptr(zmq_strerror(e)).to_string_lossy();
        format!("err {} {}", errno_name(e), text.replace(' ', "_"))
    }
}

fn ok_or_err(rc: c_int) -> String {
    if rc == 0 {
        "ok".into()
    } else {
        failure()
    }
}

fn cstr(s: &str) -> CString {
    CString::new(s).expect("no NUL in a command word")
}

fn main() {
    // SAFETY: every call below follows libzmq's documented contracts:
    // pointers to live CStrings and initialised messages, sockets used
    // from this one thread only, closed before the context ends.
    unsafe {
        let ctx = zmq_ctx_new();
        let mut sock: *mut c_void = std::ptr::null_mut();
        let stdin = std::io::stdin();
        let mut out = std::io::stdout();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            let words: Vec<&str> = line.split_whitespace().collect();
            let reply = match words.as_slice() {
                ["socket", kind] => {
                    let kind = match *kind {
                        "SERVER" => ZMQ_SERVER,
                        "CLIENT" => ZMQ_CLIENT,
                        "RADIO" => ZMQ_RADIO,
                        "DISH" => ZMQ_DISH,
                        "GATHER" => ZMQ_GATHER,
                        "SCATTER" => ZMQ_SCATTER,
                        "CHANNEL" => ZMQ_CHANNEL,
                        "PEER" => ZMQ_PEER,
                        "DGRAM" => ZMQ_DGRAM,
                        _ => -1,
                    };
                    sock = zmq_socket(ctx, kind);
                    if sock.is_null() {
                        failure()
                    } else {
                        let five_s: c_int = 5000;
                        let zero: c_int = 0;
                        let p = (&five_s as *const c_int).cast();
                        zmq_setsockopt(sock, ZMQ_RCVTIMEO, p, 4);
                        zmq_setsockopt(sock, ZMQ_SNDTIMEO, p, 4);
                        zmq_setsockopt(sock, ZMQ_LINGER, (&zero as *const c_int).cast(), 4);
                        "ok".into()
                    }
                }
                ["bind", ep] => {
                    if zmq_bind(sock, cstr(ep).as_ptr()) == 0 {
                        let mut buf = [0u8; 256];
                        let mut len = buf.len();
                        zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, buf.as_mut_ptr().cast(), &mut len);
                        let ep = CStr::from_bytes_until_nul(&buf).map(|c| c.to_string_lossy());
                        format!("ok {}", ep.unwrap_or_default())
                    } else {
                        failure()
                    }
                }
                ["rcvtimeo", ms] => {
                    let ms: c_int = ms.parse().unwrap_or(5000);
                    let p = (&ms as *const c_int).cast();
                    ok_or_err(zmq_setsockopt(sock, ZMQ_RCVTIMEO, p, 4))
                }
                ["ipv6", on] => {
                    let on: c_int = c_int::from(*on == "1");
                    let p = (&on as *const c_int).cast();
                    ok_or_err(zmq_setsockopt(sock, ZMQ_IPV6, p, 4))
                }
                ["connect", ep] => ok_or_err(zmq_connect(sock, cstr(ep).as_ptr())),
                ["connect_peer", ep] => match zmq_connect_peer(sock, cstr(ep).as_ptr()) {
                    0 => failure(),
                    id => format!("ok {id}"),
                },
                ["join", g] => ok_or_err(zmq_join(sock, cstr(g).as_ptr())),
                ["leave", g] => ok_or_err(zmq_leave(sock, cstr(g).as_ptr())),
                ["send", body, rest @ ..] | ["sendmore", body, rest @ ..] => {
                    let more = words[0] == "sendmore";
                    let mut m = Msg([0; 64]);
                    zmq_msg_init_size(&mut m, body.len());
                    std::ptr::copy_nonoverlapping(
                        body.as_ptr(),
                        zmq_msg_data(&mut m).cast::<u8>(),
                        body.len(),
                    );
                    let mut rc = 0;
                    if let Some(id) = rest.first().filter(|w| **w != "-") {
                        rc = zmq_msg_set_routing_id(&mut m, id.parse().unwrap_or(0));
                    }
                    if let Some(g) = rest.get(1).filter(|w| **w != "-") {
                        if rc == 0 {
                            rc = zmq_msg_set_group(&mut m, cstr(g).as_ptr());
                        }
                    }
                    if rc == 0 {
                        let flags = if more { ZMQ_SNDMORE } else { 0 };
                        rc = (zmq_msg_send(&mut m, sock, flags) < 0) as c_int;
                    }
                    let reply = ok_or_err(if rc == 0 { 0 } else { -1 });
                    zmq_msg_close(&mut m);
                    reply
                }
                ["recv"] => {
                    let mut m = Msg([0; 64]);
                    zmq_msg_init(&mut m);
                    let reply = if zmq_msg_recv(&mut m, sock, 0) < 0 {
                        failure()
                    } else {
                        let data = std::slice::from_raw_parts(
                            zmq_msg_data(&mut m).cast::<u8>(),
                            zmq_msg_size(&m),
                        );
                        let group = CStr::from_ptr(zmq_msg_group(&mut m)).to_string_lossy();
                        let group = if group.is_empty() { "-".into() } else { group };
                        format!(
                            "msg {} {} {}",
                            zmq_msg_routing_id(&mut m),
                            group,
                            String::from_utf8_lossy(data).replace('\0', "\\0")
                        )
                    };
                    zmq_msg_close(&mut m);
                    reply
                }
                ["quit"] => break,
                _ => format!("err EPROTO unknown command: {line}"),
            };
            if writeln!(out, "{reply}").and_then(|_| out.flush()).is_err() {
                break;
            }
        }
        if !sock.is_null() {
            zmq_close(sock);
        }
        zmq_ctx_term(ctx);
    }
}
