//! `ZMQ_USE_FD`: a bind that takes a listening socket the application
//! made (systemd socket activation, libzmq's test_use_fd) instead of
//! making one. The listener owns the descriptor from then on and closes
//! it with itself, as libzmq's does.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use crate::error::{err, Error, Result};

/// Takes ownership of `fd`, which must be an open stream socket of
/// `family` (`libc::AF_INET`/`AF_INET6` for tcp, `libc::AF_UNIX` for
/// ipc) that listens; anything else is `EINVAL`, and the descriptor is
/// then left alone.
#[allow(unsafe_code)]
pub(crate) fn take_listener(fd: RawFd, families: &[i32]) -> Result<OwnedFd> {
    let int_opt = |level, name| {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `v`; a bad
        // descriptor only makes it fail (EBADF, ENOTSOCK).
        let rc = unsafe {
            libc::getsockopt(
                fd,
                level,
                name,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (rc == 0).then_some(v)
    };
    let ok = fd >= 0
        && int_opt(libc::SOL_SOCKET, libc::SO_TYPE) == Some(libc::SOCK_STREAM)
        && int_opt(libc::SOL_SOCKET, libc::SO_ACCEPTCONN) == Some(1)
        && int_opt(libc::SOL_SOCKET, libc::SO_DOMAIN).is_some_and(|d| families.contains(&d));
    if !ok {
        return err(
            Error::EINVAL,
            format!("use_fd {fd} is not a listening stream socket of this endpoint's transport"),
        );
    }
    // SAFETY: `fd` is an open socket (getsockopt succeeded on it); the
    // application handed it over with ZMQ_USE_FD, so this is its one owner.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
