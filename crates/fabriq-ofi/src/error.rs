//! Errors: every failing libfabric call is named, with its fi_errno and the
//! `fi_strerror` text.

use crate::sys;

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// libfabric cannot be used: the crate was built without it, or the
    /// library could not be opened at run time. The text says which, and
    /// what to do.
    #[error("{0}")]
    Unavailable(String),
    /// `fi_getinfo` found nothing matching the hints.
    #[error("{}: {call}: {msg}", match provider {
        Some(p) => format!("provider {p:?} is not available"),
        None => "no libfabric provider matches the hints".to_string(),
    })]
    NotFound {
        /// The provider the hints named, if any.
        provider: Option<String>,
        /// The call that failed (`fi_getinfo`).
        call: &'static str,
        /// The fi_errno (positive).
        code: i32,
        /// `fi_strerror(code)`.
        msg: String,
    },
    /// The operation queue is full (`-FI_EAGAIN` from a post): read the
    /// completion queues (which also drives progress) and retry.
    #[error("{call}: {msg} (queue full: read completions and retry)")]
    Again {
        /// The call that returned `-FI_EAGAIN`.
        call: &'static str,
        /// `fi_strerror(FI_EAGAIN)`.
        msg: String,
    },
    /// Any other failing libfabric call.
    #[error("{call}: {msg} (fi_errno {code})")]
    Fi {
        /// The call that failed.
        call: &'static str,
        /// The fi_errno (positive).
        code: i32,
        /// `fi_strerror(code)`.
        msg: String,
    },
    /// An error entry read from a completion queue.
    #[error(transparent)]
    Completion(Box<CompletionError>),
    /// The provider lacks something fabriq's data path relies on.
    #[error("provider {provider:?} cannot carry fabriq: {reason}")]
    Unsupported {
        /// The provider's name (`fi_info`'s `prov_name`).
        provider: String,
        /// What it lacks.
        reason: String,
    },
    /// A caller's mistake caught before calling libfabric.
    #[error("invalid argument: {0}")]
    Invalid(String),
}

impl Error {
    /// The error of `call` returning the fi_errno `code` (positive).
    pub fn from_code(call: &'static str, code: i32) -> Self {
        if code == sys::FI_EAGAIN {
            Error::Again {
                call,
                msg: sys::strerror(code),
            }
        } else {
            Error::Fi {
                call,
                code,
                msg: sys::strerror(code),
            }
        }
    }

    /// True for [`Error::Again`].
    pub fn is_again(&self) -> bool {
        matches!(self, Error::Again { .. })
    }

    /// The completion error, if this is one.
    pub fn completion(&self) -> Option<&CompletionError> {
        match self {
            Error::Completion(c) => Some(c),
            _ => None,
        }
    }
}

/// What an error completion says went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionErrorKind {
    /// `FI_ETRUNC`: the message did not fit into the posted receive buffer.
    Truncated {
        /// Bytes of the message that did not fit, as the provider reports
        /// them (`olen`; shm and tcp;ofi_rxm 1.17 report 0).
        olen: usize,
    },
    /// `FI_ECANCELED`: the operation was canceled (`fi_cancel`).
    Canceled,
    /// Anything else.
    Other {
        /// The fi_errno (positive).
        code: i32,
        /// The provider-specific errno.
        prov_errno: i32,
        /// `fi_cq_strerror` text from the provider.
        msg: String,
    },
}

/// One error entry read with `fi_cq_readerr`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("completion error: {}", describe(.kind, *.len))]
pub struct CompletionError {
    /// The operation's context (as posted).
    pub context: usize,
    /// Completion flags (`FI_SEND`, `FI_RECV`, ...).
    pub flags: u64,
    /// Bytes transferred (for truncation: the receive buffer's length).
    pub len: usize,
    /// Remote CQ data, if any.
    pub data: u64,
    /// Tag, for tagged operations.
    pub tag: u64,
    /// What went wrong.
    pub kind: CompletionErrorKind,
}

fn describe(kind: &CompletionErrorKind, len: usize) -> String {
    match kind {
        CompletionErrorKind::Truncated { olen } => format!(
            "message truncated (FI_ETRUNC): the receive buffer was too small \
             ({len} bytes received, {olen} bytes cut off as reported by the provider)"
        ),
        CompletionErrorKind::Canceled => "operation canceled (FI_ECANCELED)".to_string(),
        CompletionErrorKind::Other {
            code,
            prov_errno,
            msg,
        } => format!("{msg} (fi_errno {code}, provider errno {prov_errno})"),
    }
}
