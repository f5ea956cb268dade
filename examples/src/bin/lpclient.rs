//! Lazy Pirate client (zguide ch. 4, lpclient).
//!
//! Reliable request-reply on the client side: poll the REQ socket for the
//! reply with a timeout; if none comes, close the socket, open a new one,
//! and resend the request, a few times before giving up on the server.
//!
//!     lpclient [--connect tcp://localhost:5555] [--count N]
//!              [--timeout-ms 2500] [--retries 3]

use fabriq as zmq;
use fabriq_examples::{rounds, Args};

fn connect(context: &zmq::Context, endpoint: &str) -> Result<zmq::Socket, zmq::Error> {
    let client = context.socket(zmq::REQ)?;
    client.connect(endpoint)?;
    // Configure socket to not wait at close time
    client.set_linger(0)?;
    Ok(client)
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let endpoint = args.get_or("connect", "tcp://localhost:5555");
    let request_timeout: i64 = args.number("timeout-ms").unwrap_or(2500);
    let request_retries: u32 = args.number("retries").unwrap_or(3);

    let context = zmq::Context::new();
    println!("I: connecting to server...");
    let mut client = connect(&context, endpoint)?;

    for sequence in rounds(args.count()).map(|i| i + 1) {
        // We send a request, then we work to get a reply
        let request = sequence.to_string();
        client.send(&request, 0)?;

        let mut retries_left = request_retries;
        loop {
            // Poll socket for a reply, with timeout
            if client.poll(zmq::POLLIN, request_timeout)? > 0 {
                // We got a reply from the server, must match sequence
                let reply = client.recv_string(0)?.unwrap_or_default();
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
            client.send(&request, 0)?;
        }
    }
    Ok(())
}
