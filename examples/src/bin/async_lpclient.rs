//! Lazy Pirate client, async (zguide ch. 4, lpclient, on tokio).
//!
//! lpclient with the poll replaced by `tokio::time::timeout` around the
//! awaited `recv`: when the timeout fires, the receive future is dropped
//! (cancelled; it took nothing from the socket), the socket is closed
//! and a new one opened, and the request is sent again, a few times
//! before giving up on the server.
//!
//!     async_lpclient [--connect tcp://localhost:5555] [--count N]
//!                    [--timeout-ms 2500] [--retries 3]

use std::time::Duration;

use fabriq as zmq;
use fabriq::asynchronous::AsyncSocket;
use fabriq_examples::{rounds, Args};

fn connect(context: &zmq::Context, endpoint: &str) -> Result<AsyncSocket, zmq::Error> {
    let client = context.socket(zmq::REQ)?;
    client.connect(endpoint)?;
    // Configure socket to not wait at close time
    client.set_linger(0)?;
    AsyncSocket::new(client)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let endpoint = args.get_or("connect", "tcp://localhost:5555");
    let request_timeout = Duration::from_millis(args.number("timeout-ms").unwrap_or(2500));
    let request_retries: u32 = args.number("retries").unwrap_or(3);

    let context = zmq::Context::new();
    println!("I: connecting to server...");
    let mut client = connect(&context, endpoint)?;

    for sequence in rounds(args.count()).map(|i| i + 1) {
        // We send a request, then we work to get a reply
        let request = sequence.to_string();
        client.send(request.as_str(), 0).await?;

        let mut retries_left = request_retries;
        loop {
            // Wait for a reply, with timeout
            if let Ok(reply) = tokio::time::timeout(request_timeout, client.recv()).await {
                // We got a reply from the server, must match sequence
                let reply = reply?;
                let reply = reply.as_str().unwrap_or_default();
                if reply == request {
                    println!("I: server replied OK ({reply})");
                    break;
                }
                println!("E: malformed reply from server: {reply}");
                continue;
            }
            retries_left -= 1;
            if retries_left == 0 {
                println!("E: server seems to be offline, abandoning");
                std::process::exit(1);
            }
            println!("W: no response from server, retrying...");
            // Old socket is confused; close it and open a new one
            client = connect(&context, endpoint)?;
            println!("I: reconnecting to server...");
            // Send request again, on new socket
            client.send(request.as_str(), 0).await?;
        }
    }
    Ok(())
}
