//! Weather update server (zguide ch. 1, wuserver).
//!
//! Binds a PUB socket and publishes random weather updates
//! "ZIPCODE TEMPERATURE HUMIDITY" forever (or `--count` updates). The zip
//! codes are drawn from `--zip-min..--zip-max` (the whole 0..100000 by
//! default).
//!
//!     wuserver [--bind tcp://*:5556 --bind ipc://weather.ipc] [--count N]
//!              [--zip-min 0] [--zip-max 100000]

use fabriq as zmq;
use fabriq_examples::{announce, rounds, Args, Rng};

fn main() -> Result<(), zmq::Error> {
    let args = Args::from_env();
    let mut binds = args.get_all("bind");
    if binds.is_empty() {
        binds = vec!["tcp://*:5556", "ipc://weather.ipc"];
    }
    let zip_min: u64 = args.number("zip-min").unwrap_or(0);
    let zip_max: u64 = args.number("zip-max").unwrap_or(100_000);

    let context = zmq::Context::new();
    let publisher = context.socket(zmq::PUB)?;
    for endpoint in binds {
        publisher.bind(endpoint)?;
        announce("", &publisher);
    }

    let mut rng = Rng::new();
    for _ in rounds(args.count()) {
        // Get values that will fool the boss
        let zipcode = zip_min + rng.below(zip_max - zip_min);
        let temperature = rng.range(-80, 135);
        let relhumidity = rng.range(10, 60);
        // Send message to all subscribers
        publisher.send(format!("{zipcode:05} {temperature} {relhumidity}"), 0)?;
    }
    Ok(())
}
