//! `proxy`: the built-in device that shuttles messages between a frontend
//! and a backend socket (zmq_proxy), optionally copying them to a capture
//! socket, and its steerable form (zmq_proxy_steerable) that a control
//! socket pauses, resumes and stops.

use crate::error::{err, Error, Result};
use crate::flags::{DONTWAIT, SNDMORE};
use crate::poll::{poll, PollEvents, POLLIN, POLLOUT};
use crate::socket::Socket;

/// Forwards messages both ways between `frontend` and `backend` until an
/// error (for example `ETERM` when the context is destroyed).
pub fn proxy(frontend: &Socket, backend: &Socket) -> Result<()> {
    run(frontend, backend, None)
}

/// Like [`proxy`], also sending a copy of every message to `capture`.
pub fn proxy_with_capture(frontend: &Socket, backend: &Socket, capture: &Socket) -> Result<()> {
    run(frontend, backend, Some(capture))
}

/// Like [`proxy`], steered by messages on `control`: `PAUSE` stops
/// forwarding (messages wait in the sockets), `RESUME` starts it again,
/// `TERMINATE` ends the proxy with `Ok(())`, and `STATISTICS` is answered
/// on `control` with 8 frames of native-endian `u64`: messages and bytes
/// received from the frontend, sent to the frontend, received from the
/// backend, sent to the backend (a multipart message counts once), as
/// libzmq 4.3 does. Commands get no other reply. An unknown command is
/// ignored (libzmq aborts the process) and a multipart command fails with
/// `EINVAL` (libzmq fails too).
///
/// The zmq crate takes `&mut Socket` here; `&mut` arguments coerce to the
/// `&Socket` this takes, so its calls compile unchanged.
///
/// ```
/// use std::thread;
///
/// let ctx = fabriq::Context::new();
/// let control = ctx.socket(fabriq::PAIR).unwrap();
/// control.bind("inproc://steer-doc").unwrap();
/// let (c, ctx2) = (ctx.clone(), ctx.clone());
/// let proxy = thread::spawn(move || {
///     let front = c.socket(fabriq::PULL).unwrap();
///     front.bind("inproc://steer-doc-front").unwrap();
///     let back = c.socket(fabriq::PUSH).unwrap();
///     back.bind("inproc://steer-doc-back").unwrap();
///     let steer = c.socket(fabriq::PAIR).unwrap();
///     steer.connect("inproc://steer-doc").unwrap();
///     fabriq::proxy_steerable(&front, &back, &steer)
/// });
/// control.send("TERMINATE", 0).unwrap();
/// assert_eq!(proxy.join().unwrap(), Ok(()));
/// drop(ctx2);
/// ```
pub fn proxy_steerable(frontend: &Socket, backend: &Socket, control: &Socket) -> Result<()> {
    steer(frontend, backend, None, control)
}

/// [`proxy_steerable`] with a capture socket, as [`proxy_with_capture`];
/// the commands are copied to the capture socket too, as libzmq does.
///
/// ```
/// use std::thread;
///
/// let ctx = fabriq::Context::new();
/// let control = ctx.socket(fabriq::PAIR).unwrap();
/// control.bind("inproc://steer-capture-doc").unwrap();
/// let tap = ctx.socket(fabriq::PULL).unwrap();
/// tap.bind("inproc://steer-capture-doc-tap").unwrap();
/// tap.set_rcvtimeo(5000).unwrap();
/// let c = ctx.clone();
/// let proxy = thread::spawn(move || {
///     let front = c.socket(fabriq::PULL).unwrap();
///     front.bind("inproc://steer-capture-doc-front").unwrap();
///     let back = c.socket(fabriq::PUSH).unwrap();
///     back.bind("inproc://steer-capture-doc-back").unwrap();
///     let capture = c.socket(fabriq::PUSH).unwrap();
///     capture.connect("inproc://steer-capture-doc-tap").unwrap();
///     let steer = c.socket(fabriq::PAIR).unwrap();
///     steer.connect("inproc://steer-capture-doc").unwrap();
///     fabriq::proxy_steerable_with_capture(&front, &back, &capture, &steer)
/// });
/// control.send("TERMINATE", 0).unwrap();
/// assert_eq!(tap.recv_bytes(0).unwrap(), b"TERMINATE");
/// assert_eq!(proxy.join().unwrap(), Ok(()));
/// ```
pub fn proxy_steerable_with_capture(
    frontend: &Socket,
    backend: &Socket,
    capture: &Socket,
    control: &Socket,
) -> Result<()> {
    steer(frontend, backend, Some(capture), control)
}

/// Messages and bytes in and out of one side, as libzmq counts them.
#[derive(Default)]
struct Counts {
    msg_in: u64,
    bytes_in: u64,
    msg_out: u64,
    bytes_out: u64,
}

fn steer(
    frontend: &Socket,
    backend: &Socket,
    capture: Option<&Socket>,
    control: &Socket,
) -> Result<()> {
    shuttle(frontend, backend, capture, Some(control))
}

/// The proxy's loop, as libzmq 4.3's: a side is read only when the other
/// can take the message (`frontend_in && backend_out`), so a side that
/// cannot send (a PUSH without peers, a full pipe) never blocks the proxy,
/// which keeps answering its control socket. While a side has input the
/// other cannot take, the loop waits for the other's room instead of that
/// input (no busy loop).
fn shuttle(
    frontend: &Socket,
    backend: &Socket,
    capture: Option<&Socket>,
    control: Option<&Socket>,
) -> Result<()> {
    let (mut front, mut back) = (Counts::default(), Counts::default());
    let mut paused = false;
    // Input waiting on each side for the other side's room.
    let (mut front_waits, mut back_waits) = (false, false);
    loop {
        let wanted = |waits: bool, other_waits: bool| {
            let mut ev = PollEvents::empty();
            if !paused && !waits {
                ev |= POLLIN;
            }
            if !paused && other_waits {
                ev |= POLLOUT;
            }
            ev
        };
        let mut items = vec![
            frontend.as_poll_item(wanted(front_waits, back_waits)),
            backend.as_poll_item(wanted(back_waits, front_waits)),
        ];
        if let Some(c) = control {
            items.push(c.as_poll_item(POLLIN));
        }
        poll(&mut items, -1)?;
        let front_in = front_waits || items[0].is_readable();
        let back_in = back_waits || items[1].is_readable();
        let control_in = items.get(2).is_some_and(|i| i.is_readable());
        drop(items);
        if let (true, Some(control)) = (control_in, control) {
            let command = control.recv_zc(DONTWAIT)?;
            if control.get_rcvmore()? {
                return err(Error::EINVAL, "a proxy command must be a single frame");
            }
            if let Some(c) = capture {
                c.send(command.clone(), 0)?;
            }
            match &command[..] {
                b"PAUSE" => paused = true,
                b"RESUME" => paused = false,
                b"TERMINATE" => return Ok(()),
                b"STATISTICS" => {
                    let values = [
                        front.msg_in,
                        front.bytes_in,
                        front.msg_out,
                        front.bytes_out,
                        back.msg_in,
                        back.bytes_in,
                        back.msg_out,
                        back.bytes_out,
                    ];
                    for (i, v) in values.iter().enumerate() {
                        let flags = if i < 7 { SNDMORE } else { 0 };
                        control.send(&v.to_ne_bytes()[..], flags)?;
                    }
                }
                other => tracing::warn!(
                    "proxy_steerable: unknown command {:?} ignored",
                    String::from_utf8_lossy(other)
                ),
            }
            continue;
        }
        if paused {
            continue;
        }
        front_waits = false;
        if front_in {
            if backend.get_events()?.contains(POLLOUT) {
                let bytes = forward(frontend, backend, capture)?;
                count(&mut front, &mut back, bytes);
            } else {
                front_waits = true;
            }
        }
        back_waits = false;
        if back_in {
            if frontend.get_events()?.contains(POLLOUT) {
                let bytes = forward(backend, frontend, capture)?;
                count(&mut back, &mut front, bytes);
            } else {
                back_waits = true;
            }
        }
    }
}

fn count(from: &mut Counts, to: &mut Counts, bytes: u64) {
    from.msg_in += 1;
    from.bytes_in += bytes;
    to.msg_out += 1;
    to.bytes_out += bytes;
}

fn run(frontend: &Socket, backend: &Socket, capture: Option<&Socket>) -> Result<()> {
    shuttle(frontend, backend, capture, None)
}

/// Moves one whole message from `from` to `to`; returns its size in bytes.
fn forward(from: &Socket, to: &Socket, capture: Option<&Socket>) -> Result<u64> {
    let mut bytes = 0;
    loop {
        let frame = from.recv_zc(DONTWAIT)?;
        bytes += frame.len() as u64;
        let more = from.get_rcvmore()?;
        let flags = if more { SNDMORE } else { 0 };
        if let Some(c) = capture {
            // As libzmq's proxy: a blocking send, so a capture socket that
            // is still connecting (a PUSH without its peer yet) gets every
            // message; one that cannot keep up slows the proxy down.
            c.send(frame.clone(), flags)?;
        }
        to.send(frame, flags)?;
        if !more {
            return Ok(bytes);
        }
    }
}
