//! Last value cache (zguide ch. 5, lvcache).
//!
//! A proxy between publishers (SUB frontend, 5557) and subscribers (XPUB
//! backend, 5558) that remembers the last value of every topic; when a
//! subscriber subscribes to a topic, it sends that value at once, so a
//! new subscriber need not wait for the next update. The XPUB is verbose:
//! it reports every subscription, not only the first to a topic.
//!
//!     lvcache [--frontend tcp://*:5557] [--backend tcp://*:5558]

use std::collections::HashMap;

use fabriq as zmq;
use fabriq_examples::{announce, printable, Args};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();

    let context = zmq::Context::new();
    let frontend = context.socket(zmq::SUB)?;
    frontend.bind(args.get_or("frontend", "tcp://*:5557"))?;
    announce("frontend", &frontend);
    let backend = context.socket(zmq::XPUB)?;
    backend.set_xpub_verbose(true)?;
    backend.bind(args.get_or("backend", "tcp://*:5558"))?;
    announce("backend", &backend);

    // Subscribe to every single topic from publisher
    frontend.set_subscribe(b"")?;

    // Store last instance of each topic in a cache
    let mut cache: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();

    // We route topic updates from frontend to backend, and we handle
    // subscriptions by sending whatever we cached, if anything:
    loop {
        let mut items = [
            frontend.as_poll_item(zmq::POLLIN),
            backend.as_poll_item(zmq::POLLIN),
        ];
        zmq::poll(&mut items, -1)?;

        // Any new topic data we cache and then forward
        if items[0].is_readable() {
            let msg = frontend.recv_multipart(0)?;
            let [topic, current]: [Vec<u8>; 2] = match msg.try_into() {
                Ok(parts) => parts,
                Err(_) => continue,
            };
            if !cache.contains_key(&topic) {
                println!("I: caching topic {}", printable(&topic));
            }
            backend.send_multipart([&topic[..], &current[..]], 0)?;
            cache.insert(topic, current);
        }
        // When we get a new subscription, we pull data from the cache:
        if items[1].is_readable() {
            let event = backend.recv_bytes(0)?;
            // Event is one byte 0=unsub or 1=sub, followed by topic
            if event.first() == Some(&1) {
                let topic = &event[1..];
                println!("I: sending cached topic {}", printable(topic));
                if let Some(previous) = cache.get(topic) {
                    backend.send_multipart([topic, &previous[..]], 0)?;
                }
            }
        }
    }
}
