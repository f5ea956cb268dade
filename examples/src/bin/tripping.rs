//! Round-trip demonstrator (zguide ch. 4, tripping).
//!
//! A client (DEALER), a broker (ROUTER frontend, DEALER backend) and a
//! worker (DEALER), each a thread. The client does `--count` synchronous
//! round trips (send, wait, receive), then ten times as many asynchronous
//! ones (send them all, then receive them all), and prints the rates.
//!
//!     tripping [--count 10000]

use std::thread;
use std::time::Instant;

use fabriq as zmq;

fn client_task(context: zmq::Context, frontend: String, count: u64) -> zmq::Result<()> {
    let client = context.socket(zmq::DEALER)?;
    client.set_identity(b"C")?;
    client.connect(&frontend)?;

    println!("Setting up test...");
    println!("Synchronous round-trip test...");
    let start = Instant::now();
    for _ in 0..count {
        client.send("hello", 0)?;
        client.recv_msg(0)?;
    }
    let ms = start.elapsed().as_millis().max(1);
    println!(" {} calls/second", count as u128 * 1000 / ms);

    println!("Asynchronous round-trip test...");
    let start = Instant::now();
    for _ in 0..count * 10 {
        client.send("hello", 0)?;
    }
    for _ in 0..count * 10 {
        client.recv_msg(0)?;
    }
    let ms = start.elapsed().as_millis().max(1);
    println!(" {} calls/second", count as u128 * 10 * 1000 / ms);
    Ok(())
}

fn worker_task(context: zmq::Context, backend: String) -> zmq::Result<()> {
    let worker = context.socket(zmq::DEALER)?;
    worker.connect(&backend)?;
    loop {
        let msg = worker.recv_multipart(0)?;
        worker.send_multipart(msg, 0)?;
    }
}

fn main() -> Result<(), zmq::Error> {
    let count: u64 = fabriq_examples::Args::from_env().count().unwrap_or(10_000);

    // Prepare our context and sockets
    let context = zmq::Context::new();
    let frontend = context.socket(zmq::ROUTER)?;
    let backend = context.socket(zmq::DEALER)?;
    frontend.bind("tcp://127.0.0.1:*")?;
    backend.bind("tcp://127.0.0.1:*")?;
    let frontend_endpoint = frontend.get_last_endpoint()?.unwrap_or_default();
    let backend_endpoint = backend.get_last_endpoint()?.unwrap_or_default();

    let ctx = context.clone();
    let client = thread::spawn(move || client_task(ctx, frontend_endpoint, count));
    let ctx = context.clone();
    thread::spawn(move || worker_task(ctx, backend_endpoint));

    // The broker: requests keep the client's identity in front, the
    // worker echoes the whole message, and the reply goes back on it
    let mut done = false;
    while !done {
        let mut items = [
            frontend.as_poll_item(zmq::POLLIN),
            backend.as_poll_item(zmq::POLLIN),
        ];
        zmq::poll(&mut items, 100)?;
        if items[0].is_readable() {
            let msg = frontend.recv_multipart(0)?;
            backend.send_multipart(msg, 0)?;
        }
        if items[1].is_readable() {
            let msg = backend.recv_multipart(0)?;
            frontend.send_multipart(msg, 0)?;
        }
        done = client.is_finished();
    }
    client.join().expect("the client panicked")?;
    Ok(())
}
