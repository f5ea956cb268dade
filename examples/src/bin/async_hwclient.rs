//! Hello World client, async (zguide ch. 1, hwclient, on tokio).
//!
//! hwclient with fabriq's async API: a REQ `AsyncSocket`, each "Hello"
//! sent and each "World" received by awaiting.
//!
//!     async_hwclient [--connect tcp://localhost:5555] [--count 10]

use fabriq as zmq;
use fabriq::asynchronous::AsyncSocket;
use fabriq_examples::Args;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let count = args.count().unwrap_or(10);

    let context = zmq::Context::new();
    println!("Connecting to hello world server...");
    let mut requester = AsyncSocket::new(context.socket(zmq::REQ)?)?;
    requester.connect(args.get_or("connect", "tcp://localhost:5555"))?;

    for request_nbr in 0..count {
        println!("Sending Hello {request_nbr}...");
        requester.send("Hello", 0).await?;
        let reply = requester.recv().await?;
        println!(
            "Received {} {request_nbr}",
            reply.as_str().unwrap_or("<binary>")
        );
    }
    Ok(())
}
