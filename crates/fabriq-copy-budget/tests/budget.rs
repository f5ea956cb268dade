//! The copy budget, measured: PUSH sends `count` messages of each size
//! over each transport as `Message`s (no copy asked for), PULL receives
//! them into a `Message`, and what fabriq counted at each copy site in
//! between must be within the budget of `fabriq_copy_budget::check`.
//! Then the copies the API promises (`send(&[u8])`, `recv_bytes`,
//! `recv_into`) are counted as exactly the bytes asked for.
//!
//! The counters are process-wide, so the cases run one at a time (a
//! lock), each on a context of its own that is gone before the next.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use fabriq::copies::{self, Site};
use fabriq_copy_budget::{check, Path, Run};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn unique() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    u64::from(std::process::id()) << 20 | NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A connected PUSH and PULL over `endpoint` (bound by PULL), each with a
/// receive timeout so that no wait is unbounded, warmed up with one
/// message so the handshake's copies are not counted.
fn pair(ctx: &fabriq::Context, endpoint: &str) -> (fabriq::Socket, fabriq::Socket) {
    let pull = ctx.socket(fabriq::PULL).unwrap();
    pull.set_rcvtimeo(10_000).unwrap();
    pull.set_rcvhwm(0).unwrap();
    pull.bind(endpoint).unwrap();
    let bound = pull.get_last_endpoint().unwrap().unwrap();
    let push = ctx.socket(fabriq::PUSH).unwrap();
    push.set_sndtimeo(10_000).unwrap();
    push.set_sndhwm(0).unwrap();
    push.connect(&bound).unwrap();
    push.send(fabriq::Message::from(vec![1u8; 1]), 0).unwrap();
    let mut m = fabriq::Message::new();
    pull.recv(&mut m, 0).unwrap();
    (push, pull)
}

fn endpoint(path: &str) -> String {
    match path {
        "tcp" => "tcp://127.0.0.1:*".into(),
        "ipc" => format!("ipc://@fabriq-copy-budget-{}", unique()),
        "inproc" => format!("inproc://copy-budget-{}", unique()),
        fabric => format!("{fabric}://127.0.0.1:*"),
    }
}

fn kind(transport: &str) -> Path {
    match transport {
        "inproc" => Path::Inproc,
        "tcp" | "ipc" => Path::Stream,
        _ => Path::Fabric,
    }
}

const SIZES: [usize; 8] = [8, 256, 4096, 8192, 65_536, 300_000, 1 << 20, 4 << 20];

fn count_for(size: usize) -> u64 {
    ((8 << 20) / size).clamp(8, 500) as u64
}

/// Runs every size over `transport` and returns the rows that broke the
/// budget, printing each row's counts.
fn measure(transport: &str) -> Vec<String> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = fabriq::Context::new();
    let (mut push, pull) = pair(&ctx, &endpoint(transport));
    let mut broken = Vec::new();
    for size in SIZES {
        let count = count_for(size);
        let messages: Vec<fabriq::Message> = (0..count)
            .map(|i| fabriq::Message::from(vec![i as u8; size]))
            .collect();
        let before = copies::snapshot();
        let sender = std::thread::spawn(move || {
            for m in messages {
                push.send(m, 0).unwrap();
            }
            push
        });
        let mut m = fabriq::Message::new();
        for i in 0..count {
            pull.recv(&mut m, 0).unwrap();
            assert_eq!(m.len(), size);
            assert_eq!(m[size - 1], i as u8, "message {i} of {size} B");
        }
        push = sender.join().expect("sender");
        let counted = copies::snapshot().since(&before);
        let per_msg: Vec<String> = Site::ALL
            .iter()
            .map(|&s| {
                format!(
                    "{s:?} {:.2}",
                    counted.at(s) as f64 / count as f64 / size as f64
                )
            })
            .collect();
        println!(
            "COPIES {transport} {size} B x {count}: bytes copied per body byte: {}",
            per_msg.join(", ")
        );
        for o in check(kind(transport), Run { size, count }, &counted) {
            broken.push(format!("{transport} {size} B x {count}: {o:?}"));
        }
    }
    broken
}

fn assert_within_budget(transport: &str) {
    const { assert!(copies::ENABLED, "built without the copy-count feature") };
    let broken = measure(transport);
    assert!(
        broken.is_empty(),
        "over the copy budget:\n{}",
        broken.join("\n")
    );
}

#[test]
fn inproc_copies_nothing() {
    assert_within_budget("inproc");
}

#[test]
fn tcp_copies_small_bodies_once_and_large_ones_never() {
    assert_within_budget("tcp");
}

#[test]
fn ipc_copies_small_bodies_once_and_large_ones_never() {
    assert_within_budget("ipc");
}

#[test]
fn ofi_tcp_copies_into_pages_at_most_once() {
    assert_within_budget("ofi+tcp");
}

#[test]
fn ofi_shm_copies_into_pages_at_most_once() {
    assert_within_budget("ofi+shm");
}

/// The copies the API asks for are counted, exactly: a message made from
/// a slice, `recv_bytes`, `recv_into`; and `send(Vec)` copies nothing.
#[test]
fn the_copies_the_api_promises_are_the_only_ones_on_inproc() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = fabriq::Context::new();
    let (push, pull) = pair(&ctx, &endpoint("inproc"));
    let data = vec![5u8; 1000];
    let before = copies::snapshot();
    push.send(&data[..], 0).unwrap();
    push.send(data.clone(), 0).unwrap();
    push.send(data.clone(), 0).unwrap();
    let got = pull.recv_bytes(0).unwrap();
    let mut into = [0u8; 600];
    assert_eq!(pull.recv_into(&mut into, 0).unwrap(), 1000);
    let mut m = fabriq::Message::new();
    pull.recv(&mut m, 0).unwrap();
    let counted = copies::snapshot().since(&before);
    assert_eq!(got, data);
    assert_eq!(counted.at(Site::FromSlice), 1000);
    assert_eq!(counted.at(Site::Api), 1000 + 600);
    for site in [
        Site::Batch,
        Site::Page,
        Site::Regrow,
        Site::Gather,
        Site::Inline,
    ] {
        assert_eq!(counted.at(site), 0, "{site:?}");
    }
}
