//! Hello World server, async (zguide ch. 1, hwserver, on tokio).
//!
//! hwserver with fabriq's async API: a REP `AsyncSocket` whose `recv` and
//! `send` are awaited, so the "work" is a `tokio::time::sleep` that leaves
//! the runtime's thread free instead of blocking it.
//!
//!     async_hwserver [--bind tcp://*:5555] [--count N] [--work-ms 1000]

use std::time::Duration;

use fabriq as zmq;
use fabriq::asynchronous::AsyncSocket;
use fabriq_examples::{announce, rounds, Args};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let work = Duration::from_millis(args.number("work-ms").unwrap_or(1000));

    let context = zmq::Context::new();
    let mut responder = AsyncSocket::new(context.socket(zmq::REP)?)?;
    responder.bind(args.get_or("bind", "tcp://*:5555"))?;
    announce("", &responder.sync());

    for _ in rounds(args.count()) {
        let request = responder.recv().await?;
        println!("Received {}", request.as_str().unwrap_or("<binary>"));
        tokio::time::sleep(work).await; // Do some 'work'
        responder.send("World", 0).await?;
    }
    Ok(())
}
