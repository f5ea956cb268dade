//! Majordomo broker (zguide ch. 4, mdbroker).
//!
//! One ROUTER socket for clients and workers alike. Workers say READY for
//! a service; requests for a service queue until one of its workers is
//! waiting, and replies go back to the client that asked. Idle workers
//! get heartbeats and are forgotten when theirs stop. Services whose name
//! starts with "mmi." are answered by the broker itself: "mmi.service"
//! says whether a service has workers (200) or not (404).
//!
//!     mdbroker [--bind tcp://*:5555] [--heartbeat-ms 2500] [-v]

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use fabriq as zmq;
use fabriq_examples::mdp::*;
use fabriq_examples::{announce, printable, Args};

type Frames = Vec<Vec<u8>>;

/// A single service: its queued requests and waiting workers.
#[derive(Default)]
struct Service {
    requests: VecDeque<Frames>,
    waiting: VecDeque<Vec<u8>>,
    workers: usize,
}

/// A worker, idle or active.
struct Worker {
    service: Option<Vec<u8>>,
    expiry: Instant,
}

struct Broker {
    socket: zmq::Socket,
    verbose: bool,
    heartbeat: Duration,
    services: HashMap<Vec<u8>, Service>,
    workers: HashMap<Vec<u8>, Worker>,
    /// Idle workers, longest waiting first.
    waiting: Vec<Vec<u8>>,
}

impl Broker {
    fn expiry(&self) -> Duration {
        self.heartbeat * HEARTBEAT_LIVENESS
    }

    /// Process a request coming from a client: [service, body...].
    fn client_msg(&mut self, sender: Vec<u8>, mut msg: Frames) -> zmq::Result<()> {
        if msg.len() < 2 {
            println!("E: invalid message from client: {msg:?}");
            return Ok(());
        }
        let service = msg.remove(0);
        // Set reply return address to client sender
        let mut request = vec![sender, Vec::new()];
        request.extend(msg);
        if service.starts_with(b"mmi.") {
            self.service_internal(&service, request)
        } else {
            self.services.entry(service.clone()).or_default();
            self.service_dispatch(&service, Some(request))
        }
    }

    /// Process a message sent to us by a worker: [command, ...].
    fn worker_msg(&mut self, sender: Vec<u8>, mut msg: Frames) -> zmq::Result<()> {
        if msg.is_empty() {
            println!("E: invalid message from worker");
            return Ok(());
        }
        let command = msg.remove(0);
        let worker_ready = self.workers.contains_key(&sender);
        match &command[..] {
            MDPW_READY => {
                let service = msg.first().cloned().unwrap_or_default();
                if worker_ready || service.starts_with(b"mmi.") {
                    // Not first command in session, or a reserved name
                    self.worker_delete(&sender, true)?;
                } else {
                    // Attach worker to service and mark as idle
                    self.services.entry(service.clone()).or_default().workers += 1;
                    let expiry = Instant::now() + self.expiry();
                    let worker = Worker {
                        service: Some(service),
                        expiry,
                    };
                    self.workers.insert(sender.clone(), worker);
                    self.worker_waiting(sender)?;
                }
            }
            MDPW_REPLY if worker_ready && msg.len() >= 2 => {
                // Remove and save client return envelope and insert the
                // protocol header and service name, then rewrap envelope.
                let client = msg.remove(0);
                msg.remove(0); // the empty delimiter
                let service = self.workers[&sender].service.clone().unwrap_or_default();
                let mut reply = vec![client, Vec::new(), MDPC_CLIENT.to_vec(), service];
                reply.extend(msg);
                self.socket.send_multipart(reply, 0)?;
                self.worker_waiting(sender)?;
            }
            MDPW_HEARTBEAT if worker_ready => {
                let expiry = Instant::now() + self.expiry();
                if let Some(worker) = self.workers.get_mut(&sender) {
                    worker.expiry = expiry;
                }
            }
            MDPW_DISCONNECT => self.worker_delete(&sender, false)?,
            MDPW_REPLY | MDPW_HEARTBEAT => self.worker_delete(&sender, true)?,
            _ => println!(
                "E: invalid input message from worker {}",
                printable(&sender)
            ),
        }
        Ok(())
    }

    /// The worker is idle: waiting for work on its service.
    fn worker_waiting(&mut self, identity: Vec<u8>) -> zmq::Result<()> {
        let expiry = Instant::now() + self.expiry();
        let Some(worker) = self.workers.get_mut(&identity) else {
            return Ok(());
        };
        worker.expiry = expiry;
        let service = worker.service.clone().unwrap_or_default();
        self.waiting.push(identity.clone());
        self.services
            .entry(service.clone())
            .or_default()
            .waiting
            .push_back(identity);
        self.service_dispatch(&service, None)
    }

    /// Deletes a worker, telling it to disconnect if `disconnect`.
    fn worker_delete(&mut self, identity: &[u8], disconnect: bool) -> zmq::Result<()> {
        if disconnect {
            self.socket
                .send_multipart([identity, b"", MDPW_WORKER, MDPW_DISCONNECT], 0)?;
        }
        if let Some(worker) = self.workers.remove(identity) {
            if let Some(service) = worker.service.and_then(|s| self.services.get_mut(&s)) {
                service.waiting.retain(|w| w != identity);
                service.workers -= 1;
            }
        }
        self.waiting.retain(|w| w != identity);
        Ok(())
    }

    /// Sends requests to waiting workers while there are both.
    fn service_dispatch(&mut self, name: &[u8], request: Option<Frames>) -> zmq::Result<()> {
        self.purge()?;
        let Some(service) = self.services.get_mut(name) else {
            return Ok(());
        };
        service.requests.extend(request);
        while !service.waiting.is_empty() && !service.requests.is_empty() {
            let worker = service.waiting.pop_front().expect("a waiting worker");
            let request = service.requests.pop_front().expect("a queued request");
            self.waiting.retain(|w| *w != worker);
            let mut frames = vec![
                worker,
                Vec::new(),
                MDPW_WORKER.to_vec(),
                MDPW_REQUEST.to_vec(),
            ];
            frames.extend(request);
            if self.verbose {
                println!("I: sending REQUEST to worker {}", printable(&frames[0]));
            }
            self.socket.send_multipart(frames, 0)?;
        }
        Ok(())
    }

    /// The broker's own services: "mmi.service" looks a service up.
    fn service_internal(&mut self, service: &[u8], mut request: Frames) -> zmq::Result<()> {
        let return_code: &[u8] = if service == b"mmi.service" {
            let name = request.last().cloned().unwrap_or_default();
            match self.services.get(&name) {
                Some(s) if s.workers > 0 => b"200",
                _ => b"404",
            }
        } else {
            b"501"
        };
        // Replace the body with the return code, and send it to the client
        if let Some(last) = request.last_mut() {
            *last = return_code.to_vec();
        }
        let client = request.remove(0);
        request.remove(0); // the empty delimiter
        let mut reply = vec![client, Vec::new(), MDPC_CLIENT.to_vec(), service.to_vec()];
        reply.extend(request);
        self.socket.send_multipart(reply, 0)
    }

    /// Looks for & kills expired workers (the oldest are first).
    fn purge(&mut self) -> zmq::Result<()> {
        let now = Instant::now();
        let expired: Vec<Vec<u8>> = self
            .waiting
            .iter()
            .filter(|w| self.workers.get(*w).is_some_and(|w| w.expiry < now))
            .cloned()
            .collect();
        for identity in expired {
            if self.verbose {
                println!("I: deleting expired worker: {}", printable(&identity));
            }
            self.worker_delete(&identity, false)?;
        }
        Ok(())
    }
}

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let context = zmq::Context::new();
    let socket = context.socket(zmq::ROUTER)?;
    socket.bind(args.get_or("bind", "tcp://*:5555"))?;
    announce("", &socket);
    let mut broker = Broker {
        socket,
        verbose: args.flag("v"),
        heartbeat: Duration::from_millis(args.number("heartbeat-ms").unwrap_or(2500)),
        services: HashMap::new(),
        workers: HashMap::new(),
        waiting: Vec::new(),
    };
    println!("I: MDP broker/0.1.1 is active");

    // Get and process messages forever or until interrupted
    let mut heartbeat_at = Instant::now() + broker.heartbeat;
    loop {
        let timeout = heartbeat_at.saturating_duration_since(Instant::now());
        if broker
            .socket
            .poll(zmq::POLLIN, timeout.as_millis() as i64)?
            > 0
        {
            let mut msg = broker.socket.recv_multipart(0)?;
            if msg.len() < 3 || !msg[1].is_empty() {
                println!("E: invalid message: {msg:?}");
                continue;
            }
            let sender = msg.remove(0);
            msg.remove(0); // the empty delimiter
            let header = msg.remove(0);
            if header == MDPC_CLIENT {
                broker.client_msg(sender, msg)?;
            } else if header == MDPW_WORKER {
                broker.worker_msg(sender, msg)?;
            } else {
                println!("E: invalid message: {}", printable(&header));
            }
        }
        // Disconnect and delete any expired workers; send heartbeats to
        // idle workers if needed
        if Instant::now() >= heartbeat_at {
            broker.purge()?;
            for worker in &broker.waiting {
                broker
                    .socket
                    .send_multipart([&worker[..], b"", MDPW_WORKER, MDPW_HEARTBEAT], 0)?;
            }
            heartbeat_at = Instant::now() + broker.heartbeat;
        }
    }
}
