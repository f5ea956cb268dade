//! `proxy`: the built-in device that shuttles messages between a frontend
//! and a backend socket (zmq_proxy), optionally copying them to a capture
//! socket.

use crate::error::Result;
use crate::poll::{poll, POLLIN};
use crate::socket::Socket;
use crate::{DONTWAIT, SNDMORE};

/// Forwards messages both ways between `frontend` and `backend` until an
/// error (for example `ETERM` when the context is destroyed).
pub fn proxy(frontend: &Socket, backend: &Socket) -> Result<()> {
    run(frontend, backend, None)
}

/// Like [`proxy`], also sending a copy of every message to `capture`.
pub fn proxy_with_capture(frontend: &Socket, backend: &Socket, capture: &Socket) -> Result<()> {
    run(frontend, backend, Some(capture))
}

fn run(frontend: &Socket, backend: &Socket, capture: Option<&Socket>) -> Result<()> {
    loop {
        let mut items = [frontend.as_poll_item(POLLIN), backend.as_poll_item(POLLIN)];
        poll(&mut items, -1)?;
        let (front_ready, back_ready) = (items[0].is_readable(), items[1].is_readable());
        if front_ready {
            forward(frontend, backend, capture)?;
        }
        if back_ready {
            forward(backend, frontend, capture)?;
        }
    }
}

/// Moves one whole message from `from` to `to`.
fn forward(from: &Socket, to: &Socket, capture: Option<&Socket>) -> Result<()> {
    loop {
        let frame = from.recv_zc(DONTWAIT)?;
        let more = from.get_rcvmore()?;
        let flags = if more { SNDMORE } else { 0 };
        if let Some(c) = capture {
            // A slow capture socket must not stall the proxy.
            let _ = c.send(frame.clone(), flags | DONTWAIT);
        }
        to.send(frame, flags)?;
        if !more {
            return Ok(());
        }
    }
}
