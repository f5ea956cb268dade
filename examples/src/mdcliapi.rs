//! Majordomo client API (the zguide's `mdcliapi`): a REQ socket to the
//! broker, a request that is retried on a new socket when no reply comes
//! within the timeout, and given up after a few tries.

use fabriq as zmq;

use crate::mdp::MDPC_CLIENT;

/// A connection to a Majordomo broker.
pub struct Client {
    context: zmq::Context,
    broker: String,
    socket: zmq::Socket,
    verbose: bool,
    timeout_ms: i64,
    retries: u32,
}

impl Client {
    /// Connects to the broker at `broker`.
    pub fn new(broker: &str, verbose: bool) -> zmq::Result<Client> {
        let context = zmq::Context::new();
        let socket = Client::connect(&context, broker, verbose)?;
        Ok(Client {
            context,
            broker: broker.to_string(),
            socket,
            verbose,
            timeout_ms: 2500,
            retries: 3,
        })
    }

    fn connect(context: &zmq::Context, broker: &str, verbose: bool) -> zmq::Result<zmq::Socket> {
        let socket = context.socket(zmq::REQ)?;
        socket.set_linger(0)?;
        socket.connect(broker)?;
        if verbose {
            println!("I: connecting to broker at {broker}...");
        }
        Ok(socket)
    }

    /// How long to wait for each reply, in msecs.
    pub fn set_timeout(&mut self, timeout_ms: i64) {
        self.timeout_ms = timeout_ms;
    }

    /// How many times to try a request.
    pub fn set_retries(&mut self, retries: u32) {
        self.retries = retries;
    }

    /// Sends `request` to `service` and returns the reply's body, or None
    /// when the broker did not answer any try.
    pub fn send(
        &mut self,
        service: &str,
        request: &[Vec<u8>],
    ) -> zmq::Result<Option<Vec<Vec<u8>>>> {
        // Prefix request with protocol frames
        // Frame 1: "MDPCxy" (six bytes, MDP/Client x.y)
        // Frame 2: Service name (printable string)
        let mut frames = vec![MDPC_CLIENT.to_vec(), service.as_bytes().to_vec()];
        frames.extend_from_slice(request);
        if self.verbose {
            println!(
                "I: send request to '{service}' service: {} frames",
                frames.len()
            );
        }
        for _ in 0..self.retries.max(1) {
            self.socket.send_multipart(frames.iter(), 0)?;
            if self.socket.poll(zmq::POLLIN, self.timeout_ms)? > 0 {
                let reply = self.socket.recv_multipart(0)?;
                // Don't try to handle errors, just assert noisily
                assert!(reply.len() >= 3, "short reply: {reply:?}");
                assert_eq!(reply[0], MDPC_CLIENT);
                assert_eq!(reply[1], service.as_bytes());
                return Ok(Some(reply[2..].to_vec()));
            }
            println!("W: no reply, reconnecting...");
            self.socket = Client::connect(&self.context, &self.broker, self.verbose)?;
        }
        println!("W: permanent error, abandoning");
        Ok(None)
    }
}
