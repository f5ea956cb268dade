//! Reports the ZeroMQ API version (zguide ch. 1, version).
//!
//!     version

use fabriq as zmq;

fn main() {
    let (major, minor, patch) = zmq::version();
    println!("Current 0MQ version is {major}.{minor}.{patch}");
}
