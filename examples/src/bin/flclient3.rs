//! Freelance client, model three (zguide ch. 4, flclient3 with flcliapi).
//!
//! A ROUTER socket connected to every server; a server's identity is its
//! endpoint, so the client addresses each by name. It PINGs each server
//! every ping interval, counts a server alive while it answers (anything,
//! within three intervals), and sends each request to the first server
//! alive, giving up on a request after a global timeout. The zguide runs
//! this in an agent thread behind a pipe; here the same loop runs inside
//! each request, on the calling thread.
//!
//!     flclient3 ENDPOINT... [--count 10000] [--ping-ms 2000] [--timeout-ms 3000]

use std::time::{Duration, Instant};

use fabriq as zmq;
use fabriq_examples::Args;

/// What we know of one server.
struct Server {
    endpoint: String,
    alive: bool,
    ping_at: Instant,
    expires: Instant,
}

/// The freelance client: the zguide's flcliapi agent.
struct Freelance {
    router: zmq::Socket,
    servers: Vec<Server>,
    sequence: u64,
    ping: Duration,
    timeout: Duration,
}

impl Freelance {
    fn new(context: &zmq::Context, ping: Duration, timeout: Duration) -> zmq::Result<Freelance> {
        Ok(Freelance {
            router: context.socket(zmq::ROUTER)?,
            servers: Vec::new(),
            sequence: 0,
            ping,
            timeout,
        })
    }

    /// Connects to a new server endpoint.
    fn connect(&mut self, endpoint: &str) -> zmq::Result<()> {
        self.router.connect(endpoint)?;
        let now = Instant::now();
        self.servers.push(Server {
            endpoint: endpoint.to_string(),
            alive: false,
            ping_at: now,
            expires: now + self.ping * 3,
        });
        Ok(())
    }

    /// Sends a request to the first server alive and returns its reply,
    /// or None if none came within the timeout.
    fn request(&mut self, body: &[u8]) -> zmq::Result<Option<Vec<Vec<u8>>>> {
        self.sequence += 1;
        let sequence = self.sequence.to_string();
        let deadline = Instant::now() + self.timeout;
        let mut sent = false;
        loop {
            // Send the request to the first server alive, once there is one
            if !sent {
                if let Some(server) = self.servers.iter().find(|s| s.alive) {
                    let frames: [&[u8]; 3] =
                        [server.endpoint.as_bytes(), sequence.as_bytes(), body];
                    self.router.send_multipart(frames, 0)?;
                    sent = true;
                }
            }
            // Wait for a reply until the next ping or the deadline
            let next_ping = self.servers.iter().map(|s| s.ping_at).min();
            let wake = next_ping.map_or(deadline, |p| p.min(deadline));
            let timeout = wake.saturating_duration_since(Instant::now());
            if self.router.poll(zmq::POLLIN, timeout.as_millis() as i64)? > 0 {
                let mut reply = self.router.recv_multipart(0)?;
                // Frame 0 is server that replied
                let endpoint = reply.remove(0);
                let now = Instant::now();
                if let Some(server) = self
                    .servers
                    .iter_mut()
                    .find(|s| s.endpoint.as_bytes() == endpoint)
                {
                    // Any message from a server means it's alive
                    server.alive = true;
                    server.ping_at = now + self.ping;
                    server.expires = now + self.ping * 3;
                }
                // Frame 1 may be sequence number for reply
                if reply.first().map(Vec::as_slice) == Some(sequence.as_bytes()) {
                    reply.remove(0);
                    return Ok(Some(reply));
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            // Ping the servers that are due; forget the silent ones
            for server in &mut self.servers {
                if now >= server.ping_at {
                    // A ping to a server not yet connected is dropped by
                    // the ROUTER; the next one will get through
                    let frames: [&[u8]; 2] = [server.endpoint.as_bytes(), b"PING"];
                    self.router.send_multipart(frames, 0)?;
                    server.ping_at = now + self.ping;
                }
                if now >= server.expires {
                    server.alive = false;
                }
            }
        }
    }
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let count = args.count().unwrap_or(10_000);
    let ping = Duration::from_millis(args.number("ping-ms").unwrap_or(2000));
    let timeout = Duration::from_millis(args.number("timeout-ms").unwrap_or(3000));
    let endpoints: Vec<&str> = (0..).map_while(|i| args.positional(i)).collect();
    if endpoints.is_empty() {
        println!("I: syntax: flclient3 <endpoint> ...");
        return Ok(());
    }

    // Create new freelance client object
    let context = zmq::Context::new();
    let mut client = Freelance::new(&context, ping, timeout)?;
    // Connect to several endpoints
    for endpoint in endpoints {
        client.connect(endpoint)?;
    }

    // Send a bunch of name resolution 'requests', measure time
    let start = Instant::now();
    for _ in 0..count {
        match client.request(b"random name")? {
            Some(reply) if reply == [b"OK"] => {}
            Some(reply) => {
                println!("E: unexpected reply {reply:?}");
                std::process::exit(1);
            }
            None => {
                println!("E: name service not available, aborting");
                std::process::exit(1);
            }
        }
    }
    let usec = start.elapsed().as_micros() / u128::from(count.max(1));
    println!("Average round trip cost: {usec} usec");
    Ok(())
}
