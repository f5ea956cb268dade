//! What one CURVE MESSAGE box costs, for instruction counts under
//! callgrind (deterministic, unlike time on a shared machine).
//!
//! `curve_cost seal SIZE COUNT`: a CURVE client and server shake hands,
//! then the client seals COUNT frames of SIZE bytes (`Mechanism::seal`,
//! the MESSAGE box with its allocation and copies).
//! `curve_cost open SIZE COUNT`: the same, and the server opens them.
//! Per message: the difference of two runs with different COUNT, divided
//! by the difference of the counts (seal), and open minus seal at equal
//! COUNT (open). `page-seal` and `page-open` do the same for the
//! fabric's page secretbox (see `page`).
//!
//! ```text
//! cargo build --release -p fabriq-zmtp --example curve_cost
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/curve_cost seal 64 1000
//! ```

use bytes::Bytes;
use fabriq_zmtp::frame::Frame;
use fabriq_zmtp::mechanism::{CurveClient, CurveServer, Mechanism};
use fabriq_zmtp::{Command, CurveKeyPair, Properties};

fn handshake() -> (CurveClient, CurveServer) {
    let server_keys = CurveKeyPair::generate();
    let mut client = CurveClient::new(
        Properties::new(),
        &server_keys.public,
        &CurveKeyPair::generate(),
    );
    let mut server = CurveServer::new(Properties::new(), &server_keys, false);
    let mut to_server: Vec<Command> = Vec::new();
    client.start(&mut to_server).expect("hello");
    let mut done = (false, false);
    while !(done.0 && done.1) {
        let mut to_client = Vec::new();
        for cmd in to_server.drain(..) {
            done.1 |= server
                .on_command(cmd, &mut to_client)
                .expect("server")
                .is_some();
        }
        for cmd in to_client {
            done.0 |= client
                .on_command(cmd, &mut to_server)
                .expect("client")
                .is_some();
        }
    }
    (client, server)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("seal");
    let size: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(64);
    let count: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1000);
    if mode.starts_with("page") {
        return page(mode, size, count);
    }
    let (mut client, mut server) = handshake();
    let data = Bytes::from(vec![7u8; size]);
    let mut sealed = Vec::with_capacity(count);
    for _ in 0..count {
        let frame = Frame {
            more: false,
            command: false,
            data: data.clone(),
        };
        sealed.push(client.seal(frame).expect("seal"));
    }
    if mode == "open" {
        for frame in sealed.drain(..) {
            let plain = server.open(frame).expect("open");
            assert_eq!(plain.data.len(), size);
        }
    }
    std::hint::black_box(sealed);
}

/// `page-seal` / `page-open`: one secretbox per page in place, as the
/// fabric's page sealing does it (`crates/fabriq/.../fabric/seal.rs`:
/// a 24-byte head, the counter in the nonce), without the engine.
fn page(mode: &str, size: usize, count: usize) {
    let key = fabriq_sodium::SecretBoxKey::generate();
    let nonce = |i: usize| {
        let mut n = [0u8; 24];
        n[16..].copy_from_slice(&(i as u64).to_be_bytes());
        n
    };
    let mut pages: Vec<Vec<u8>> = (0..count).map(|_| vec![7u8; 24 + size]).collect();
    let mut tags = Vec::with_capacity(count);
    for (i, p) in pages.iter_mut().enumerate() {
        tags.push(key.seal_in_place(&nonce(i), &mut p[24..]).expect("seal"));
    }
    if mode == "page-open" {
        for (i, p) in pages.iter_mut().enumerate() {
            key.open_in_place(&nonce(i), &mut p[24..], &tags[i])
                .expect("open");
        }
    }
    std::hint::black_box((pages, tags));
}
