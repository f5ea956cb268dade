//! What `fabric_encrypt` costs: PUSH/PULL throughput over `ofi+tcp` and
//! `ofi+shm`, both sides in this process (two contexts, so two I/O
//! threads with a fabric endpoint each), CURVE on the control connection
//! in every trial, the data path sealed ("on") or not ("off").
//!
//! `cargo run --release -p fabriq --example fabric_encrypt_cost -- [ROUNDS] [SCALE]`
//! (defaults: 5 rounds, scale 1.0 on the message counts).
//!
//! Each round runs off, on and off again (the second "off" against the
//! first is the A/A band: how much two identical trials differ on this
//! machine), in an order that rotates from round to round; the medians
//! per provider and size are printed as a table.
//!
//! `... --example fabric_encrypt_cost -- cipher` measures the cipher alone
//! instead (sealing a 64 KiB page in place on one thread, as the engine
//! does per page), for scale.

use std::time::Instant;

fn trial(provider: &str, size: usize, count: usize, encrypt: bool) -> f64 {
    let server_keys = fabriq::CurveKeyPair::new().expect("keys");
    let client_keys = fabriq::CurveKeyPair::new().expect("keys");
    let (ctx, other) = (fabriq::Context::new(), fabriq::Context::new());
    let pull = ctx.socket(fabriq::PULL).expect("socket");
    pull.set_curve_server(true).expect("curve");
    pull.set_curve_secretkey(&server_keys.secret_key)
        .expect("curve");
    pull.set_fabric_encrypt(encrypt).expect("option");
    pull.set_rcvtimeo(30_000).expect("option");
    pull.bind(&format!("ofi+{provider}://127.0.0.1:*"))
        .expect("bind");
    let bound = pull.get_last_endpoint().expect("endpoint").expect("utf8");
    let push = other.socket(fabriq::PUSH).expect("socket");
    push.set_curve_serverkey(&server_keys.public_key)
        .expect("curve");
    push.set_curve_publickey(&client_keys.public_key)
        .expect("curve");
    push.set_curve_secretkey(&client_keys.secret_key)
        .expect("curve");
    push.set_fabric_encrypt(encrypt).expect("option");
    push.connect(&bound).expect("connect");
    let sender = std::thread::spawn(move || {
        let payload = bytes::Bytes::from(vec![7u8; size]);
        for _ in 0..count {
            push.send(payload.clone(), 0).expect("send");
        }
        push
    });
    // The clock starts at the first message: connection set-up and the
    // key exchange are not in the figure.
    let first = pull.recv_zc(0).expect("recv");
    assert_eq!(first.len(), size);
    let start = Instant::now();
    for _ in 1..count {
        pull.recv_zc(0).expect("recv");
    }
    let secs = start.elapsed().as_secs_f64();
    drop(sender.join().expect("sender"));
    (count - 1) as f64 / secs
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("a number"));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// MB/s of XSalsa20-Poly1305 sealing 64 KiB in place, on this thread.
fn cipher() {
    let cipher = fabriq_sodium::SecretBoxKey::generate();
    let mut page = vec![7u8; 65536];
    for round in 0..5 {
        let start = Instant::now();
        let n = 4000u64;
        for i in 0..n {
            let mut nonce = [0u8; 24];
            nonce[16..].copy_from_slice(&i.to_be_bytes());
            let tag = cipher.seal_in_place(&nonce, &mut page).expect("seal");
            std::hint::black_box(tag);
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "round {round}: sealing 64 KiB pages: {:.0} MB/s",
            n as f64 * 65536.0 / secs / 1e6
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a == "cipher") {
        return cipher();
    }
    let rounds: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let scale: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let count = |n: usize| ((n as f64 * scale) as usize).max(100);
    let cases = [
        ("tcp", 64, count(200_000)),
        ("tcp", 1024, count(100_000)),
        ("tcp", 65536, count(5_000)),
        ("shm", 64, count(400_000)),
        ("shm", 1024, count(200_000)),
        ("shm", 65536, count(10_000)),
    ];
    println!("| provider | size | msgs/trial | off (msg/s) | on (msg/s) | on/off | A/A off2/off | off, on, off2 per round |");
    println!("|---|---|---|---|---|---|---|---|");
    for (provider, size, n) in cases {
        let (mut off, mut on, mut off2) = (Vec::new(), Vec::new(), Vec::new());
        let mut rows = Vec::new();
        for round in 0..rounds {
            // Rotate the order so no arm always runs first or last.
            let mut got = [0.0; 3];
            for k in 0..3 {
                let arm = (k + round) % 3;
                got[arm] = trial(provider, size, n, arm == 1);
            }
            off.push(got[0]);
            on.push(got[1]);
            off2.push(got[2]);
            rows.push(format!("{:.0}/{:.0}/{:.0}", got[0], got[1], got[2]));
        }
        let (m_off, m_on, m_off2) = (median(&mut off), median(&mut on), median(&mut off2));
        println!(
            "| ofi+{provider} | {size} B | {n} | {m_off:.0} | {m_on:.0} | {:.2} | {:.2} | {} |",
            m_on / m_off,
            m_off2 / m_off,
            rows.join(" ")
        );
    }
}
