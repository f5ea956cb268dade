//! Freelance client, model one (zguide ch. 4, flclient1): simple retry
//! and failover. With one server endpoint it tries it a few times; with
//! several it tries each once, in turn, until one answers.
//!
//!     flclient1 ENDPOINT... [--timeout-ms 1000] [--retries 3]

use fabriq as zmq;
use fabriq_examples::Args;

/// Sends `request` on a new REQ socket to `endpoint`; the reply, or None
/// after the timeout.
fn try_request(
    context: &zmq::Context,
    endpoint: &str,
    request: &str,
    timeout_ms: i64,
) -> zmq::Result<Option<String>> {
    println!("I: trying echo service at {endpoint}...");
    let client = context.socket(zmq::REQ)?;
    client.set_linger(0)?;
    client.connect(endpoint)?;
    // Send request, wait safely for reply
    client.send(request, 0)?;
    if client.poll(zmq::POLLIN, timeout_ms)? > 0 {
        return Ok(Some(client.recv_string(0)?.unwrap_or_default()));
    }
    Ok(None)
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let timeout_ms: i64 = args.number("timeout-ms").unwrap_or(1000);
    let max_retries: usize = args.number("retries").unwrap_or(3);
    let endpoints: Vec<&str> = (0..).map_while(|i| args.positional(i)).collect();
    if endpoints.is_empty() {
        println!("I: syntax: flclient1 <endpoint> ...");
        return Ok(());
    }

    let context = zmq::Context::new();
    let request = "Hello world";
    // With one endpoint: that one, up to max_retries times; with several:
    // each once
    let tries: Vec<&str> = if endpoints.len() == 1 {
        vec![endpoints[0]; max_retries]
    } else {
        endpoints
    };
    for endpoint in tries {
        if let Some(reply) = try_request(&context, endpoint, request, timeout_ms)? {
            if reply == request {
                println!("Service is running OK");
                return Ok(());
            }
        }
    }
    println!("E: no service available");
    std::process::exit(1)
}
