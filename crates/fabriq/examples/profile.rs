//! One workload, run on fabriq or on libzmq, for profilers.
//!
//! `cargo run --release -p fabriq --example profile -- IMPL PATTERN ENDPOINT SIZE COUNT`
//!
//! - IMPL: `fabriq` or `libzmq`
//! - PATTERN: `pushpull` (one-way stream), `pubsub` (one-way, one
//!   subscriber, HWM 0 so nothing is dropped; the publisher waits 300 ms
//!   for the subscription, which is fine for a profiler and nothing else)
//!   or `reqrep` (round trips)
//! - ENDPOINT: e.g. `tcp://127.0.0.1:*`, `ipc://@name`, `inproc://x`
//! - optional ROLE: `server` (bind and receive only) or `client` (connect
//!   and send only), to run the two sides as separate processes
//!
//! `PROFILE_HWM` replaces the HWM of 10 000 (not for pubsub), and
//! `PROFILE_RCVTIMEO` sets a receive timeout after the first message:
//! `PROFILE_HWM=1000 PROFILE_RCVTIMEO=5000` is how `fabriq-bench` runs
//! PUSH/PULL.
//!
//! Both sides run in this process, so `valgrind --tool=callgrind` counts
//! every instruction either implementation spends per message. The same
//! source is compiled twice, once against each API (they have one shape),
//! which keeps the comparison fair. The side-by-side timing benchmark lives
//! in `bench/`.

use std::time::Instant;

macro_rules! workload {
    ($name:ident, $zmq:ident) => {
        mod $name {
            use $zmq as zmq;

            pub fn run(
                pattern: &str,
                endpoint: &str,
                size: usize,
                count: usize,
                role: &str,
            ) -> f64 {
                let ctx = zmq::Context::new();
                let (a, b) = match pattern {
                    "pushpull" => (zmq::PULL, zmq::PUSH),
                    "reqrep" => (zmq::REP, zmq::REQ),
                    "pubsub" => (zmq::SUB, zmq::PUB),
                    other => panic!("unknown pattern {other}"),
                };
                let reqrep = pattern == "reqrep";
                let pubsub = pattern == "pubsub";
                let hwm = if pubsub {
                    0
                } else {
                    std::env::var("PROFILE_HWM")
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(10_000)
                };
                if role == "client" {
                    client(&ctx, b, endpoint, size, count, hwm, reqrep, pubsub);
                    return 0.0;
                }
                let server = ctx.socket(a).expect("socket");
                server.set_rcvhwm(hwm).expect("hwm");
                if pubsub {
                    server.set_subscribe(b"").expect("subscribe");
                }
                server.bind(endpoint).expect("bind");
                let bound = server.get_last_endpoint().expect("endpoint").expect("utf8");
                let client_ctx = ctx.clone();
                let solo = role == "server";
                let sender = std::thread::spawn(move || {
                    if solo {
                        return;
                    }
                    client(&client_ctx, b, &bound, size, count, hwm, reqrep, pubsub);
                });
                let mut msg = zmq::Message::new();
                server.recv(&mut msg, 0).expect("recv");
                if let Some(t) = std::env::var("PROFILE_RCVTIMEO")
                    .ok()
                    .and_then(|v| v.parse().ok())
                {
                    server.set_rcvtimeo(t).expect("rcvtimeo");
                }
                if reqrep {
                    server.send(&msg[..], 0).expect("send");
                }
                let start = std::time::Instant::now();
                for _ in 1..count {
                    server.recv(&mut msg, 0).expect("recv");
                    assert_eq!(msg.len(), size);
                    if reqrep {
                        server.send(&msg[..], 0).expect("send");
                    }
                }
                let secs = start.elapsed().as_secs_f64();
                sender.join().expect("client");
                secs
            }

            /// The sending side: sends `count` messages of `size` bytes,
            /// waiting for each reply when it is a REQ.
            #[allow(clippy::too_many_arguments)]
            fn client(
                ctx: &zmq::Context,
                kind: zmq::SocketType,
                endpoint: &str,
                size: usize,
                count: usize,
                hwm: i32,
                reqrep: bool,
                pubsub: bool,
            ) {
                let s = ctx.socket(kind).expect("socket");
                s.set_sndhwm(hwm).expect("hwm");
                s.connect(endpoint).expect("connect");
                if pubsub {
                    std::thread::sleep(std::time::Duration::from_millis(300));
                }
                let payload = vec![7u8; size];
                let mut reply = zmq::Message::new();
                for _ in 0..count {
                    s.send(&payload[..], 0).expect("send");
                    if reqrep {
                        s.recv(&mut reply, 0).expect("recv");
                    }
                }
                s.set_linger(-1).expect("linger");
            }
        }
    };
}

workload!(on_fabriq, fabriq);
workload!(on_libzmq, zmq);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 6 && args.len() != 7 {
        eprintln!(
            "usage: profile fabriq|libzmq pushpull|pubsub|reqrep ENDPOINT SIZE COUNT [server|client]"
        );
        std::process::exit(2);
    }
    let (imp, pattern, endpoint) = (&args[1], &args[2], &args[3]);
    let size: usize = args[4].parse().expect("SIZE");
    let count: usize = args[5].parse().expect("COUNT");
    let role = args.get(6).map_or("both", String::as_str);
    let wall = Instant::now();
    let secs = match imp.as_str() {
        "fabriq" => on_fabriq::run(pattern, endpoint, size, count, role),
        "libzmq" => on_libzmq::run(pattern, endpoint, size, count, role),
        other => panic!("unknown implementation {other}"),
    };
    let per = secs / (count - 1) as f64;
    println!(
        "{imp} {pattern} {endpoint} {size} B x {count}: {:.0} msg/s ({:.2} us each), wall {:.2} s",
        1.0 / per,
        per * 1e6,
        wall.elapsed().as_secs_f64()
    );
}
