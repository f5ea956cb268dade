//! Majordomo worker API (the zguide's `mdwrkapi`): a DEALER socket to the
//! broker, READY for one service, heartbeats both ways, reconnection when
//! the broker goes silent, and `recv` that sends the previous reply and
//! returns the next request.

use std::thread;
use std::time::{Duration, Instant};

use fabriq as zmq;

use crate::mdp::*;

/// A worker serving one service.
pub struct Worker {
    context: zmq::Context,
    broker: String,
    service: String,
    socket: zmq::Socket,
    verbose: bool,
    heartbeat_at: Instant,
    liveness: u32,
    heartbeat: Duration,
    reconnect: Duration,
    /// Return address of the request being served.
    reply_to: Option<Vec<u8>>,
}

impl Worker {
    /// Connects to the broker and offers `service`.
    pub fn new(broker: &str, service: &str, verbose: bool) -> zmq::Result<Worker> {
        let context = zmq::Context::new();
        let socket = context.socket(zmq::DEALER)?;
        let mut worker = Worker {
            context,
            broker: broker.to_string(),
            service: service.to_string(),
            socket,
            verbose,
            heartbeat_at: Instant::now(),
            liveness: HEARTBEAT_LIVENESS,
            heartbeat: Duration::from_millis(2500),
            reconnect: Duration::from_millis(2500),
            reply_to: None,
        };
        worker.connect_to_broker()?;
        Ok(worker)
    }

    /// The heartbeat interval (default 2500 msecs).
    pub fn set_heartbeat(&mut self, heartbeat: Duration) {
        self.heartbeat = heartbeat;
    }

    /// The delay before reconnecting (default 2500 msecs).
    pub fn set_reconnect(&mut self, reconnect: Duration) {
        self.reconnect = reconnect;
    }

    fn send_to_broker(
        &self,
        command: &[u8],
        option: Option<&[u8]>,
        msg: &[Vec<u8>],
    ) -> zmq::Result<()> {
        let mut frames = vec![Vec::new(), MDPW_WORKER.to_vec(), command.to_vec()];
        frames.extend(option.map(<[u8]>::to_vec));
        frames.extend_from_slice(msg);
        if self.verbose {
            println!("I: sending {} to broker", command_name(command));
        }
        self.socket.send_multipart(frames, 0)
    }

    /// Connect or reconnect to broker.
    fn connect_to_broker(&mut self) -> zmq::Result<()> {
        self.socket = self.context.socket(zmq::DEALER)?;
        // A reply still queued at exit gets a second to go out.
        self.socket.set_linger(1000)?;
        self.socket.connect(&self.broker)?;
        if self.verbose {
            println!("I: connecting to broker at {}...", self.broker);
        }
        // Register service with broker
        self.send_to_broker(MDPW_READY, Some(self.service.as_bytes()), &[])?;
        // If liveness hits zero, queue is considered disconnected
        self.liveness = HEARTBEAT_LIVENESS;
        self.heartbeat_at = Instant::now() + self.heartbeat;
        Ok(())
    }

    /// Sends the reply to the request being served, without waiting for
    /// another (a worker that stops after it).
    pub fn send_last(&mut self, reply: Vec<Vec<u8>>) -> zmq::Result<()> {
        let reply_to = self.reply_to.take().expect("a request to reply to");
        let mut msg = vec![reply_to, Vec::new()];
        msg.extend(reply);
        self.send_to_broker(MDPW_REPLY, None, &msg)
    }

    /// Sends `reply` (if any) to the client of the last request, then waits
    /// for the next request and returns its body.
    pub fn recv(&mut self, reply: Option<Vec<Vec<u8>>>) -> zmq::Result<Vec<Vec<u8>>> {
        if let Some(reply) = reply {
            self.send_last(reply)?;
        }
        loop {
            if self
                .socket
                .poll(zmq::POLLIN, self.heartbeat.as_millis() as i64)?
                > 0
            {
                let msg = self.socket.recv_multipart(0)?;
                self.liveness = HEARTBEAT_LIVENESS;
                // Don't try to handle errors, just assert noisily
                assert!(msg.len() >= 3, "short message: {msg:?}");
                assert!(msg[0].is_empty());
                assert_eq!(msg[1], MDPW_WORKER);
                match &msg[2][..] {
                    MDPW_REQUEST => {
                        // We should pop and save as many addresses as there
                        // are up to a null part, but for now, just save one
                        assert!(msg.len() >= 5 && msg[4].is_empty(), "{msg:?}");
                        self.reply_to = Some(msg[3].clone());
                        return Ok(msg[5..].to_vec());
                    }
                    MDPW_HEARTBEAT => {} // Do nothing for heartbeats
                    MDPW_DISCONNECT => self.connect_to_broker()?,
                    _ => println!("E: invalid input message {msg:?}"),
                }
            } else {
                self.liveness -= 1;
                if self.liveness == 0 {
                    if self.verbose {
                        println!("W: disconnected from broker - retrying...");
                    }
                    thread::sleep(self.reconnect);
                    self.connect_to_broker()?;
                }
            }
            // Send HEARTBEAT if it's time
            if Instant::now() > self.heartbeat_at {
                self.send_to_broker(MDPW_HEARTBEAT, None, &[])?;
                self.heartbeat_at = Instant::now() + self.heartbeat;
            }
        }
    }
}
