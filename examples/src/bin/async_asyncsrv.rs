//! Asynchronous client/server, async (zguide ch. 3, asyncsrv, on tokio).
//!
//! asyncsrv with tokio tasks instead of threads. Each client (DEALER)
//! `select!`s between a `tokio::time::interval` that sends a request
//! every `--tick-ms`*100 ms and the replies arriving. The server is a
//! ROUTER frontend and a DEALER backend on inproc, each `split` into a
//! send half and a receive half; the proxy is two `forward`s, each the
//! receive half of one socket (a `Stream`) into the send half of the other
//! (a `Sink`). Its worker tasks (DEALER) answer each request with any
//! number of replies (0 to 4 at random, or exactly `--replies K`).
//!
//! With `--requests N --replies K` each client stops after its N*K replies
//! and the program ends when all have; otherwise it runs five seconds, as
//! the zguide's does.
//!
//!     async_asyncsrv [--bind tcp://*:5570] [--clients 3] [--workers 5]
//!                    [--requests N] [--replies K] [--tick-ms 10]

use std::sync::Arc;
use std::time::Duration;

use fabriq as zmq;
use fabriq::asynchronous::AsyncSocket;
use fabriq_examples::{announce, random_identity, Args, Rng};
use futures_util::StreamExt;

struct Options {
    requests: Option<u64>,
    replies: Option<u64>,
    tick_ms: u64,
}

/// Sends a request every 100 ticks and prints every reply; stops after
/// `requests * replies` replies when both are given.
async fn client_task(endpoint: String, options: Arc<Options>) -> zmq::Result<()> {
    let context = zmq::Context::new();
    let client = context.socket(zmq::DEALER)?;
    // Set random identity to make tracing easier
    let identity = random_identity(&mut Rng::new());
    client.set_identity(identity.as_bytes())?;
    client.connect(&endpoint)?;
    let mut client = AsyncSocket::new(client)?;

    let expected = match (options.requests, options.replies) {
        (Some(n), Some(k)) => Some(n * k),
        _ => None,
    };
    let mut received = 0;
    let mut request_nbr = 0;
    // The first tick is after one period, as the zguide's 100 polls
    let period = Duration::from_millis(options.tick_ms * 100);
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    while expected.map_or(true, |e| received < e) {
        tokio::select! {
            reply = client.recv() => {
                let reply = reply?;
                println!("{identity}: {}", reply.as_str().unwrap_or_default());
                received += 1;
            }
            _ = ticks.tick() => {
                if options.requests.map_or(true, |n| request_nbr < n) {
                    request_nbr += 1;
                    client.send(format!("request #{request_nbr}"), 0).await?;
                }
            }
        }
    }
    println!("{identity}: done, {received} replies");
    Ok(())
}

/// Each worker task works on one request at a time and sends a random
/// number of replies back, with random delays between replies.
async fn server_worker(context: zmq::Context, replies: Option<u64>) -> zmq::Result<()> {
    let worker = context.socket(zmq::DEALER)?;
    worker.connect("inproc://backend")?;
    let mut worker = AsyncSocket::new(worker)?;
    let mut rng = Rng::new();
    loop {
        // The DEALER socket gives us the reply envelope and message
        let request = worker.recv_multipart().await?;
        // Send 0..4 replies back
        let count = replies.unwrap_or_else(|| rng.below(5));
        for _ in 0..count {
            // Sleep for some fraction of a second
            tokio::time::sleep(Duration::from_millis(rng.below(100) + 1)).await;
            worker.send_multipart(request.iter().cloned(), 0).await?;
        }
    }
}

/// The server: a ROUTER for the clients, a DEALER to a pool of workers,
/// and the proxy between them, as two forwarding tasks over split halves.
async fn server_task(
    context: zmq::Context,
    frontend: AsyncSocket,
    workers: usize,
    replies: Option<u64>,
) -> zmq::Result<()> {
    let backend = AsyncSocket::new(context.socket(zmq::DEALER)?)?;
    backend.bind("inproc://backend")?;
    for _ in 0..workers {
        tokio::spawn(server_worker(context.clone(), replies));
    }
    let (to_clients, from_clients) = frontend.split();
    let (to_workers, from_workers) = backend.split();
    let requests = tokio::spawn(from_clients.forward(to_workers));
    from_workers.forward(to_clients).await?;
    requests.await.expect("the request forwarder panicked")
}

#[tokio::main]
async fn main() -> zmq::Result<()> {
    let args = Args::from_env();
    let options = Arc::new(Options {
        requests: args.number("requests"),
        replies: args.number("replies"),
        tick_ms: args.number("tick-ms").unwrap_or(10),
    });
    let nbr_clients: usize = args.number("clients").unwrap_or(3);
    let nbr_workers: usize = args.number("workers").unwrap_or(5);

    let context = zmq::Context::new();
    // Frontend socket talks to clients over TCP
    let frontend = AsyncSocket::new(context.socket(zmq::ROUTER)?)?;
    frontend.bind(args.get_or("bind", "tcp://*:5570"))?;
    announce("", &frontend.sync());
    let endpoint = frontend
        .sync()
        .get_last_endpoint()?
        .unwrap_or_default()
        .replace("0.0.0.0", "127.0.0.1");
    tokio::spawn(server_task(
        context.clone(),
        frontend,
        nbr_workers,
        options.replies,
    ));

    let clients: Vec<_> = (0..nbr_clients)
        .map(|_| tokio::spawn(client_task(endpoint.clone(), options.clone())))
        .collect();
    if options.requests.is_some() && options.replies.is_some() {
        for client in clients {
            client.await.expect("a client panicked")?;
        }
    } else {
        // Run for 5 seconds then quit
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    Ok(())
}
