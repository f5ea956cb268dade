//! The Rust side of `suites/msg-cost.sh`: the work of `suites/msg-cost.c`
//! (libzmq's inproc_thr: a PUSH sends COUNT messages of SIZE bytes, a
//! PULL receives them into one message, over inproc) through the fabriq
//! crate's API, so that the C layer's own cost per message can be read
//! as the difference in instructions.
//!
//! ```text
//! cargo run --release -p fabriq-capi --example msg_cost -- batch|threads|copy SIZE COUNT
//! ```
//!
//! "copy" sends each message from a buffer (`send(&[u8])`, as C's
//! `zmq_send`): both sides then allocate alike (fabriq's per-thread
//! chunks), where "batch" has `Message::with_size` allocate each message
//! and `zmq_msg_init_size` cut it from a chunk.

use fabriq::{Context, Message, Socket, PULL, PUSH};

/// Messages sent before they are received, in "batch" mode (within the
/// pipe's default high-water marks).
const BATCH: usize = 500;

fn send_one<const COPY: bool>(push: &Socket, size: usize) {
    if COPY {
        // As zmq_send.
        push.send(&BUF[..size], 0).expect("send");
    } else {
        // As zmq_msg_init_size then zmq_msg_send.
        push.send(Message::with_size(size), 0).expect("send");
    }
}

/// What "copy" sends from.
static BUF: [u8; 1 << 16] = [0; 1 << 16];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, size, count] = &args[..] else {
        eprintln!("usage: msg_cost batch|threads|copy SIZE COUNT");
        std::process::exit(2);
    };
    let size: usize = size.parse().expect("SIZE");
    assert!(size <= BUF.len(), "SIZE: at most {}", BUF.len());
    let count: usize = count.parse().expect("COUNT");
    if mode == "copy" {
        run::<true>(false, size, count);
    } else {
        run::<false>(mode == "threads", size, count);
    }
}

/// One run: COPY says how messages are made (see the module's text).
fn run<const COPY: bool>(threads: bool, size: usize, count: usize) {
    let ctx = Context::new();
    let pull = ctx.socket(PULL).expect("PULL");
    let push = ctx.socket(PUSH).expect("PUSH");
    pull.bind("inproc://cost").expect("bind");
    push.connect("inproc://cost").expect("connect");
    let mut msg = Message::new();
    if threads {
        let sender = std::thread::spawn(move || {
            for _ in 0..count {
                send_one::<COPY>(&push, size);
            }
        });
        for _ in 0..count {
            pull.recv(&mut msg, 0).expect("recv");
            assert_eq!(msg.len(), size);
        }
        sender.join().expect("sender");
    } else {
        let mut done = 0;
        while done < count {
            let n = BATCH.min(count - done);
            for _ in 0..n {
                send_one::<COPY>(&push, size);
            }
            for _ in 0..n {
                pull.recv(&mut msg, 0).expect("recv");
                assert_eq!(msg.len(), size);
            }
            done += n;
        }
    }
}
