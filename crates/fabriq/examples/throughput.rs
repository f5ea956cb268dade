//! PUSH/PULL throughput over one endpoint, both sides in this process.
//!
//! `cargo run --release -p fabriq --example throughput -- [ENDPOINT] [SIZE] [COUNT]`
//! (defaults: `tcp://127.0.0.1:*`, 64 bytes, 1 000 000 messages). A quick
//! look, not a benchmark: the side-by-side comparison lives in `bench/`.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let endpoint = args.get(1).map_or("tcp://127.0.0.1:*", String::as_str);
    let size: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(64);
    let count: usize = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);

    let ctx = fabriq::Context::new();
    let pull = ctx.socket(fabriq::PULL).expect("socket");
    pull.bind(endpoint).expect("bind");
    let bound = pull.get_last_endpoint().expect("endpoint").expect("utf8");
    let sender_ctx = ctx.clone();
    let sender = std::thread::spawn(move || {
        let push = sender_ctx.socket(fabriq::PUSH).expect("socket");
        push.connect(&bound).expect("connect");
        let payload = bytes::Bytes::from(vec![0u8; size]);
        for _ in 0..count {
            push.send(payload.clone(), 0).expect("send");
        }
    });
    let first = pull.recv_zc(0).expect("recv");
    assert_eq!(first.len(), size);
    let start = Instant::now();
    for _ in 1..count {
        pull.recv_zc(0).expect("recv");
    }
    let secs = start.elapsed().as_secs_f64();
    sender.join().expect("sender");
    let rate = (count - 1) as f64 / secs;
    println!(
        "{endpoint} {size} B x {count}: {:.0} msg/s, {:.1} MB/s",
        rate,
        rate * size as f64 / 1e6
    );
}
