//! Quick side-by-side PUSH/PULL benchmark on loopback tcp.
//!
//! Three receivers, run interleaved (A B C A B C ...), each fed by a PUSH
//! in a child process over TCP:
//!
//! * A: libzmq PUSH -> libzmq PULL (the reference);
//! * B: fabriq PUSH -> fabriq PULL (sockets on both sides);
//! * C: libzmq PUSH -> the fabriq-zmtp engine on a plain `TcpStream`
//!   (the protocol engine's receive path alone).
//!
//! Each figure is the receive rate from first to last message; the table
//! shows medians with min-max and the B/A and C/A ratios per pair. The
//! full benchmark suite (A/A calibration, pinning, latency, CPU) is
//! `bench/`'s next step.
//!
//! Usage: `fabriq-bench [--quick] [--reps N]`

use std::io::Read;
use std::net::TcpListener;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use fabriq_zmtp::{Config, Connection, Event, SocketType};

const TIMEOUT: Duration = Duration::from_secs(60);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(kind @ ("send" | "send-fabriq")) = args.get(1).map(String::as_str) {
        let endpoint = &args[2];
        let size: usize = args[3].parse().expect("size");
        let count: usize = args[4].parse().expect("count");
        if kind == "send" {
            send(endpoint, size, count);
        } else {
            send_fabriq(endpoint, size, count);
        }
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let reps: usize = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let cases: &[(usize, usize)] = if quick {
        &[(64, 200_000), (1024, 100_000), (65536, 5_000)]
    } else {
        &[
            (8, 1_000_000),
            (64, 1_000_000),
            (1024, 500_000),
            (65536, 20_000),
            (1 << 20, 1_000),
        ]
    };
    println!(
        "PUSH (libzmq {}) -> PULL over tcp loopback, {reps} interleaved rounds (A B C)",
        {
            let (a, b, c) = zmq::version();
            format!("{a}.{b}.{c}")
        }
    );
    println!("A = libzmq -> libzmq, B = fabriq -> fabriq, C = libzmq -> fabriq-zmtp engine");
    println!(
        "{:>8} {:>8} | {:>25} | {:>25} | {:>17} | {:>17}",
        "size", "count", "A msg/s (min-max)", "B msg/s (min-max)", "B/A (min-max)", "C/A (min-max)"
    );
    for &(size, count) in cases {
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            a.push(recv_libzmq(size, count));
            b.push(recv_fabriq_sockets(size, count));
            c.push(recv_fabriq(size, count));
        }
        let ratio = |x: &[f64]| -> Vec<f64> { x.iter().zip(&a).map(|(x, a)| x / a).collect() };
        println!(
            "{:>8} {:>8} | {:>25} | {:>25} | {:>17} | {:>17}",
            size,
            count,
            summary(&a, 0),
            summary(&b, 0),
            summary(&ratio(&b), 2),
            summary(&ratio(&c), 2)
        );
    }
}

fn summary(v: &[f64], decimals: usize) -> String {
    let mut s = v.to_vec();
    s.sort_by(|x, y| x.partial_cmp(y).expect("no NaN"));
    let med = s[s.len() / 2];
    if decimals == 0 {
        format!("{:.0} ({:.0}-{:.0})", med, s[0], s[s.len() - 1])
    } else {
        format!(
            "{:.d$} ({:.d$}-{:.d$})",
            med,
            s[0],
            s[s.len() - 1],
            d = decimals
        )
    }
}

fn spawn_sender(endpoint: &str, size: usize, count: usize) -> Child {
    spawn_kind("send", endpoint, size, count)
}

fn spawn_kind(kind: &str, endpoint: &str, size: usize, count: usize) -> Child {
    Command::new(std::env::current_exe().expect("own path"))
        .args([kind, endpoint, &size.to_string(), &count.to_string()])
        .spawn()
        .expect("spawn sender")
}

/// The sender process: a libzmq PUSH that connects and sends `count`
/// messages, then lingers until they are delivered.
fn send(endpoint: &str, size: usize, count: usize) {
    let ctx = zmq::Context::new();
    let push = ctx.socket(zmq::PUSH).expect("socket");
    push.set_sndhwm(100_000).expect("hwm");
    push.connect(endpoint).expect("connect");
    let payload = vec![0x5Au8; size];
    for _ in 0..count {
        push.send(&payload[..], 0).expect("send");
    }
    push.set_linger(30_000).expect("linger");
}

/// The fabriq sender process: the same as [`send`], on fabriq sockets.
fn send_fabriq(endpoint: &str, size: usize, count: usize) {
    let ctx = fabriq::Context::new();
    let push = ctx.socket(fabriq::PUSH).expect("socket");
    push.set_sndhwm(100_000).expect("hwm");
    push.connect(endpoint).expect("connect");
    let payload = bytes::Bytes::from(vec![0x5Au8; size]);
    for _ in 0..count {
        push.send(payload.clone(), 0).expect("send");
    }
    push.set_linger(30_000).expect("linger");
}

fn recv_fabriq_sockets(size: usize, count: usize) -> f64 {
    let ctx = fabriq::Context::new();
    let pull = ctx.socket(fabriq::PULL).expect("socket");
    pull.set_rcvhwm(100_000).expect("hwm");
    pull.set_rcvtimeo(TIMEOUT.as_millis() as i32)
        .expect("rcvtimeo");
    pull.bind("tcp://127.0.0.1:*").expect("bind");
    let endpoint = pull.get_last_endpoint().expect("endpoint").expect("utf8");
    let mut child = spawn_kind("send-fabriq", &endpoint, size, count);
    pull.recv_zc(0).expect("first message");
    let start = Instant::now();
    for _ in 1..count {
        let m = pull.recv_zc(0).expect("message");
        assert_eq!(m.len(), size);
    }
    let rate = (count - 1) as f64 / start.elapsed().as_secs_f64();
    child.wait().expect("sender exit");
    rate
}

fn recv_libzmq(size: usize, count: usize) -> f64 {
    let ctx = zmq::Context::new();
    let pull = ctx.socket(zmq::PULL).expect("socket");
    pull.set_rcvhwm(100_000).expect("hwm");
    pull.set_rcvtimeo(TIMEOUT.as_millis() as i32)
        .expect("rcvtimeo");
    pull.bind("tcp://127.0.0.1:*").expect("bind");
    let endpoint = pull.get_last_endpoint().expect("endpoint").expect("utf8");
    let mut child = spawn_sender(&endpoint, size, count);
    let mut msg = zmq::Message::new();
    pull.recv(&mut msg, 0).expect("first message");
    let start = Instant::now();
    for _ in 1..count {
        pull.recv(&mut msg, 0).expect("message");
        assert_eq!(msg.len(), size);
    }
    let rate = (count - 1) as f64 / start.elapsed().as_secs_f64();
    child.wait().expect("sender exit");
    rate
}

fn recv_fabriq(size: usize, count: usize) -> f64 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("tcp://{}", listener.local_addr().expect("addr"));
    let mut child = spawn_sender(&endpoint, size, count);
    let (mut stream, _) = listener.accept().expect("accept");
    stream.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    stream.set_nodelay(true).expect("nodelay");
    let mut conn = Connection::new(Config::new(SocketType::Pull), Instant::now()).expect("conn");
    // Our greeting and READY are small: one blocking write each way.
    let mut received = 0usize;
    let mut start = None;
    let mut scratch = vec![0u8; 256 * 1024];
    while received < count {
        while !conn.pending().is_empty() {
            let piece = conn.pending().first_piece().to_vec();
            std::io::Write::write_all(&mut stream, &piece).expect("write");
            conn.advance_tx(piece.len());
        }
        let n = stream.read(&mut scratch).expect("read");
        assert!(n > 0, "sender closed early");
        conn.recv_buf().extend_from_slice(&scratch[..n]);
        conn.input_received(Instant::now());
        while let Some(event) = conn.poll_event().expect("protocol") {
            if let Event::Message(m) = event {
                assert_eq!(m[0].len(), size);
                received += 1;
                if received == 1 {
                    start = Some(Instant::now());
                }
            }
        }
    }
    let rate = (count - 1) as f64 / start.expect("got messages").elapsed().as_secs_f64();
    child.wait().expect("sender exit");
    rate
}
