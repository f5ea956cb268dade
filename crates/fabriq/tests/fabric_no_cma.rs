//! The fabric over shm without CMA (`FI_SHM_DISABLE_CMA=1`), as where the
//! kernel does not let one process `process_vm_readv` another (Yama's
//! `ptrace_scope`, containers without `CAP_SYS_PTRACE`): every send of
//! more than 4 KiB then goes through the provider's segment buffers,
//! which move only while both sides progress, and rendezvous reads copy
//! through them too. libfabric reads the variable once, when it loads
//! the provider, so the cases run in a child process of this test binary
//! that has it set; run directly, they run with CMA.

use std::process::Command;

use fabriq as zmq;

const TIMEOUT_MS: i32 = 10_000;
const NO_CMA: &str = "FI_SHM_DISABLE_CMA";

#[test]
fn without_cma_shm_streams_and_answers_every_size() {
    let out = Command::new(std::env::current_exe().unwrap())
        .env(NO_CMA, "1")
        .args(["--exact", "cases", "--nocapture", "--test-threads=1"])
        .output()
        .expect("the test binary runs again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the cases without CMA failed:\n{text}"
    );
    assert!(
        text.contains("1 passed"),
        "the cases did not run in the child:\n{text}"
    );
}

/// Streams messages of 4 KiB to 1 MiB (segment buffers, pages, lent
/// frames read by rendezvous) and answers requests of those sizes.
#[test]
fn cases() {
    let sizes = [4096usize, 4097, 16_384, 65_536, 200_000, 1 << 20];
    let ctx = zmq::Context::new();
    let other = zmq::Context::new();
    let pull = socket(&ctx, zmq::PULL);
    let push = socket(&other, zmq::PUSH);
    pull.bind("ofi+shm://127.0.0.1:*").unwrap();
    push.connect(&pull.get_last_endpoint().unwrap().unwrap())
        .unwrap();
    let msgs: Vec<Vec<u8>> = (0..300).map(|i| body(i, sizes[i % sizes.len()])).collect();
    let sender = {
        let msgs = msgs.clone();
        std::thread::spawn(move || {
            for m in &msgs {
                push.send(&m[..], 0).unwrap();
            }
            push
        })
    };
    for (i, want) in msgs.iter().enumerate() {
        let got = pull
            .recv_bytes(0)
            .unwrap_or_else(|e| panic!("message {i}: {e}"));
        assert!(
            got == *want,
            "message {i}: {} bytes, want {}",
            got.len(),
            want.len()
        );
    }
    drop(sender.join().unwrap());

    let rep = socket(&ctx, zmq::REP);
    let req = socket(&other, zmq::REQ);
    rep.bind("ofi+shm://127.0.0.1:*").unwrap();
    req.connect(&rep.get_last_endpoint().unwrap().unwrap())
        .unwrap();
    let server = std::thread::spawn(move || {
        for _ in 0..60 {
            let m = rep.recv_bytes(0).unwrap();
            rep.send(&m[..], 0).unwrap();
        }
    });
    for i in 0..60usize {
        let m = body(i, sizes[i % sizes.len()]);
        req.send(&m[..], 0).unwrap();
        let got = req
            .recv_bytes(0)
            .unwrap_or_else(|e| panic!("round trip {i}: {e}"));
        assert!(got == m, "round trip {i}: {} bytes", got.len());
    }
    server.join().unwrap();
}

fn socket(ctx: &zmq::Context, kind: zmq::SocketType) -> zmq::Socket {
    let s = ctx.socket(kind).unwrap();
    s.set_rcvtimeo(TIMEOUT_MS).unwrap();
    s.set_sndtimeo(TIMEOUT_MS).unwrap();
    s.set_linger(1000).unwrap();
    s
}

fn body(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i * 31 + j) as u8).collect()
}
