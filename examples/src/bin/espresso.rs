//! Espresso: tapping a proxy with a capture socket (zguide ch. 5,
//! espresso).
//!
//! A publisher thread, an XSUB/XPUB proxy, a subscriber thread interested
//! in topics "A" and "B", and a listener thread that prints everything the
//! proxy forwards, both ways: the subscriptions going upstream
//! (`0141` = subscribe "A") and the messages coming down. All over inproc.
//!
//!     espresso [--count N] [--interval-ms 100]

use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::{printable, rounds, Args, Rng};

/// The publisher sends random messages starting with A-J.
fn publisher_thread(context: zmq::Context, interval: Duration) -> zmq::Result<()> {
    let publisher = context.socket(zmq::PUB)?;
    publisher.bind("inproc://espresso-publisher")?;
    let mut rng = Rng::new();
    loop {
        let letter = char::from(b'A' + rng.below(10) as u8);
        let string = format!("{letter}-{:05}", rng.below(100_000));
        if publisher.send(&string, 0).is_err() {
            return Ok(()); // Interrupted
        }
        thread::sleep(interval); // Wait for 1/10th second
    }
}

/// The subscriber thread requests messages starting with A and B, then
/// reads and counts incoming messages.
fn subscriber_thread(context: zmq::Context, count: Option<u64>) -> zmq::Result<u64> {
    let subscriber = context.socket(zmq::SUB)?;
    subscriber.connect("inproc://espresso-subscriber")?;
    subscriber.set_subscribe(b"A")?;
    subscriber.set_subscribe(b"B")?;
    let mut received = 0;
    for _ in rounds(count) {
        let msg = subscriber.recv_string(0)?.unwrap_or_default();
        assert!(msg.starts_with('A') || msg.starts_with('B'), "{msg}");
        received += 1;
    }
    Ok(received)
}

/// The listener receives all messages flowing through the proxy, on its
/// pipe. Here, the pipe is a PAIR socket on inproc. With a count, it stops
/// once it has seen that many published messages (the proxy copies each to
/// the pipe before forwarding it, so it sees all that the subscriber got).
fn listener_thread(pipe: zmq::Socket, count: Option<u64>) -> zmq::Result<()> {
    let mut published = 0;
    while count.map_or(true, |n| published < n) {
        let frame = pipe.recv_bytes(0)?;
        println!("captured [{:03}] {}", frame.len(), printable(&frame));
        if frame.get(1) == Some(&b'-') {
            published += 1;
        }
    }
    Ok(())
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let interval = Duration::from_millis(args.number("interval-ms").unwrap_or(100));

    // Start child threads
    let context = zmq::Context::new();
    let ctx = context.clone();
    thread::spawn(move || publisher_thread(ctx, interval));

    let subscriber = context.socket(zmq::XSUB)?;
    subscriber.connect("inproc://espresso-publisher")?;
    let publisher = context.socket(zmq::XPUB)?;
    publisher.bind("inproc://espresso-subscriber")?;
    let listener = context.socket(zmq::PAIR)?;
    listener.bind("inproc://espresso-listener")?;
    let pipe = context.socket(zmq::PAIR)?;
    pipe.connect("inproc://espresso-listener")?;
    let count = args.count();
    let listener_done = thread::spawn(move || listener_thread(pipe, count));

    let ctx = context.clone();
    let subscriber_done = thread::spawn(move || subscriber_thread(ctx, count));

    // The proxy runs in its own thread, copying everything to the listener
    thread::spawn(move || zmq::proxy_with_capture(&subscriber, &publisher, &listener));

    let received = subscriber_done.join().expect("the subscriber panicked")?;
    listener_done.join().expect("the listener panicked")?;
    println!("subscriber received {received} messages");
    Ok(())
}
