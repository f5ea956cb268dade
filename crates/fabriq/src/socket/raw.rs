//! The socket as a raw pointer (the zmq crate's `into_raw`, `from_raw`
//! and `as_mut_ptr`).

use std::sync::Arc;

use super::Socket;

/// Sockets given up with [`Socket::into_raw`], by their pointer.
static RAW_SOCKETS: std::sync::Mutex<Vec<(usize, Socket)>> = std::sync::Mutex::new(Vec::new());

impl Socket {
    /// Gives the socket up as a raw pointer (the zmq crate's `into_raw`):
    /// the same pointer [`Socket::as_mut_ptr`] gave, as in the zmq crate.
    ///
    /// The pointer is fabriq's own, not a libzmq socket: it can only go
    /// back through [`Socket::from_raw`]; until it does, the socket stays
    /// open (held by fabriq).
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let mut s = ctx.socket(fabriq::PAIR).unwrap();
    /// let ptr = s.as_mut_ptr();
    /// let raw = s.into_raw();
    /// assert_eq!(ptr, raw);
    /// // SAFETY: `raw` came from `into_raw` and is used once.
    /// let s = unsafe { fabriq::Socket::from_raw(raw) };
    /// assert_eq!(s.get_socket_type().unwrap(), fabriq::PAIR);
    /// ```
    pub fn into_raw(mut self) -> *mut std::os::raw::c_void {
        let ptr = self.as_mut_ptr();
        RAW_SOCKETS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((ptr as usize, self));
        ptr
    }

    /// Takes back a socket given up with [`Socket::into_raw`].
    ///
    /// # Safety
    ///
    /// `sock` must come from [`Socket::into_raw`] and must not be used
    /// again after this call (the returned `Socket` owns it). (fabriq
    /// checks: any other pointer panics.)
    #[allow(unsafe_code)]
    pub unsafe fn from_raw(sock: *mut std::os::raw::c_void) -> Socket {
        let mut raw = RAW_SOCKETS.lock().unwrap_or_else(|p| p.into_inner());
        let i = raw
            .iter()
            .position(|(p, _)| *p == sock as usize)
            .expect("Socket::from_raw: not a pointer from Socket::into_raw");
        raw.swap_remove(i).1
    }

    /// A pointer that names this socket (the zmq crate's `as_mut_ptr`),
    /// the one [`Socket::into_raw`] gives. It is not a libzmq socket; it
    /// stays the same while the socket is open, moved or not.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let mut s = ctx.socket(fabriq::PAIR).unwrap();
    /// assert!(!s.as_mut_ptr().is_null());
    /// ```
    pub fn as_mut_ptr(&mut self) -> *mut std::os::raw::c_void {
        Arc::as_ptr(&self.shared).cast_mut().cast()
    }
}
