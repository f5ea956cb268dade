//! Asynchronous client/server (zguide ch. 3, asyncsrv).
//!
//! Client threads (DEALER) send a request every `--tick-ms`*100 ms
//! while polling for replies. The server is a ROUTER frontend, a DEALER
//! backend on inproc and a proxy between them; its worker threads
//! (DEALER) answer each request with any number of replies (0 to 4 at
//! random, or exactly `--replies K`).
//!
//! With `--requests N --replies K` each client stops after its N*K replies
//! and the program ends when all have; otherwise it runs five seconds, as
//! the zguide's does.
//!
//!     asyncsrv [--bind tcp://*:5570] [--clients 3] [--workers 5]
//!              [--requests N] [--replies K] [--tick-ms 10]

use std::thread;
use std::time::Duration;

use fabriq as zmq;
use fabriq_examples::{announce, random_identity, Args, Rng};

struct Options {
    requests: Option<u64>,
    replies: Option<u64>,
    tick_ms: i64,
}

/// Sends a request every 100 ticks and prints every reply; stops after
/// `requests * replies` replies when both are given.
fn client_task(endpoint: String, options: &Options) -> Result<(), zmq::Error> {
    let context = zmq::Context::new();
    let client = context.socket(zmq::DEALER)?;
    // Set random identity to make tracing easier
    let identity = random_identity(&mut Rng::new());
    client.set_identity(identity.as_bytes())?;
    client.connect(&endpoint)?;

    let expected = match (options.requests, options.replies) {
        (Some(n), Some(k)) => Some(n * k),
        _ => None,
    };
    let mut received = 0;
    let mut request_nbr = 0;
    while expected.map_or(true, |e| received < e) {
        // Tick once per ~second (100 ticks), pulling in arriving messages
        for _ in 0..100 {
            if client.poll(zmq::POLLIN, options.tick_ms)? > 0 {
                let reply = client.recv_string(0)?.unwrap_or_default();
                println!("{identity}: {reply}");
                received += 1;
            }
        }
        if options.requests.map_or(true, |n| request_nbr < n) {
            request_nbr += 1;
            client.send(format!("request #{request_nbr}"), 0)?;
        }
    }
    println!("{identity}: done, {received} replies");
    Ok(())
}

/// Each worker thread works on one request at a time and sends a random
/// number of replies back, with random delays between replies.
fn server_worker(context: zmq::Context, replies: Option<u64>) -> Result<(), zmq::Error> {
    let worker = context.socket(zmq::DEALER)?;
    worker.connect("inproc://backend")?;
    let mut rng = Rng::new();
    loop {
        // The DEALER socket gives us the reply envelope and message
        let identity = worker.recv_bytes(0)?;
        let content = worker.recv_bytes(0)?;
        // Send 0..4 replies back
        let count = replies.unwrap_or_else(|| rng.below(5));
        for _ in 0..count {
            // Sleep for some fraction of a second
            thread::sleep(Duration::from_millis(rng.below(100) + 1));
            worker.send_multipart([&identity[..], &content[..]], 0)?;
        }
    }
}

/// The server: a ROUTER for the clients, a DEALER to a pool of workers,
/// and the proxy between them.
fn server_task(
    context: zmq::Context,
    frontend: zmq::Socket,
    workers: usize,
    replies: Option<u64>,
) -> Result<(), zmq::Error> {
    let backend = context.socket(zmq::DEALER)?;
    backend.bind("inproc://backend")?;
    for _ in 0..workers {
        let context = context.clone();
        thread::spawn(move || server_worker(context, replies));
    }
    zmq::proxy(&frontend, &backend)
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let options = Options {
        requests: args.number("requests"),
        replies: args.number("replies"),
        tick_ms: args.number("tick-ms").unwrap_or(10),
    };
    let nbr_clients: usize = args.number("clients").unwrap_or(3);
    let nbr_workers: usize = args.number("workers").unwrap_or(5);

    let context = zmq::Context::new();
    // Frontend socket talks to clients over TCP
    let frontend = context.socket(zmq::ROUTER)?;
    frontend.bind(args.get_or("bind", "tcp://*:5570"))?;
    announce("", &frontend);
    let endpoint = frontend
        .get_last_endpoint()?
        .unwrap_or_default()
        .replace("0.0.0.0", "127.0.0.1");
    let server_ctx = context.clone();
    thread::spawn(move || server_task(server_ctx, frontend, nbr_workers, options.replies));

    let options = std::sync::Arc::new(options);
    let clients: Vec<_> = (0..nbr_clients)
        .map(|_| {
            let (endpoint, options) = (endpoint.clone(), options.clone());
            thread::spawn(move || client_task(endpoint, &options))
        })
        .collect();
    if options.requests.is_some() && options.replies.is_some() {
        for client in clients {
            client.join().expect("a client panicked")?;
        }
    } else {
        // Run for 5 seconds then quit
        thread::sleep(Duration::from_secs(5));
    }
    Ok(())
}
