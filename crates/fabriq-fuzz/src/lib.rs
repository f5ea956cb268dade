//! The bodies of fabriq's fuzz targets, one plain function each, taking
//! the fuzzer's bytes. `fuzz/fuzz_targets/*.rs` hands them to libFuzzer;
//! `tests/corpus.rs` replays every file under `fuzz/corpus/` through the
//! same functions under `cargo test`, so the corpus (seeds captured from
//! libzmq, and every crash found) is a regression suite without cargo-fuzz.
//!
//! Each function panics exactly when a property fails: no panic inside
//! fabriq, every error is an error (the state machines end in a stable
//! failed state, never loop, and the handshake deadline always ends a
//! handshake), and round trips (encode then decode) give back what went
//! in. [`TARGETS`] lists them; `docs/reliability.md` describes each input
//! layout.

mod cli;
mod fabric_core;
mod fabric_wire;
mod handshake;
mod socket_api;
mod zmtp_wire;

pub use cli::cli_line;
pub use fabric_core::{fabric_flow, fabric_ready};
pub use fabric_wire::{fabric_control, fabric_pages};
pub use handshake::{handshake_curve, handshake_null, handshake_plain};
pub use socket_api::{endpoint, socket_options};
pub use zmtp_wire::{frame, greeting};

/// A target's body.
pub type Target = fn(&[u8]);

/// Every target: its name (the file under `fuzz/fuzz_targets/` and the
/// directory under `fuzz/corpus/`) and its body.
pub const TARGETS: &[(&str, Target)] = &[
    ("greeting", greeting),
    ("frame", frame),
    ("handshake_null", handshake_null),
    ("handshake_plain", handshake_plain),
    ("handshake_curve", handshake_curve),
    ("fabric_pages", fabric_pages),
    ("fabric_control", fabric_control),
    ("fabric_ready", fabric_ready),
    ("fabric_flow", fabric_flow),
    ("endpoint", endpoint),
    ("socket_options", socket_options),
    ("cli_line", cli_line),
];

/// The CURVE server's fixed test secret key (the capture tool gives
/// libzmq the same keys, so captured HELLOs open here).
pub const CURVE_SERVER_SECRET: [u8; 32] = [0x11; 32];
/// The CURVE client's fixed test secret key.
pub const CURVE_CLIENT_SECRET: [u8; 32] = [0x22; 32];
/// The PLAIN credentials of the honest peers and the capture.
pub const PLAIN_USER: &[u8] = b"admin";
/// See [`PLAIN_USER`].
pub const PLAIN_PASSWORD: &[u8] = b"secret";
