//! What the zguide examples share, kept small so each program in
//! `src/bin/` reads on its own: command-line options (every example takes
//! its endpoints and counts as options, with the zguide's values as
//! defaults), the `bound ENDPOINT` announcement the tests read ports from,
//! a tiny random number generator (the zguide's `randof`), the `s_dump`
//! helper, `kvsimple`, the key-value message of the clone pattern, and
//! the Majordomo protocol with its client and worker APIs (`mdp`,
//! `mdcliapi`, `mdwrkapi`).

use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use fabriq as zmq;

/// The options of an example: `--name VALUE` pairs, `--flag`s and
/// positional arguments.
pub struct Args {
    args: Vec<String>,
}

impl Args {
    /// The process's arguments.
    pub fn from_env() -> Args {
        Args {
            args: std::env::args().skip(1).collect(),
        }
    }

    /// The value of `--name VALUE` (the last one if repeated).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.get_all(name).pop()
    }

    /// Every value of a repeatable `--name VALUE`.
    pub fn get_all(&self, name: &str) -> Vec<&str> {
        let flag = format!("--{name}");
        self.args
            .windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].as_str())
            .collect()
    }

    /// `--name VALUE`, or `default`.
    pub fn get_or<'a>(&'a self, name: &str, default: &'a str) -> &'a str {
        self.get(name).unwrap_or(default)
    }

    /// `--name NUMBER`, parsed; exits with a message if it does not parse.
    pub fn number<T: FromStr>(&self, name: &str) -> Option<T> {
        self.get(name).map(|v| {
            v.parse().unwrap_or_else(|_| {
                eprintln!("--{name}: {v:?} is not a number");
                std::process::exit(2)
            })
        })
    }

    /// `--count N`: how many rounds to run (None: the zguide's endless loop).
    pub fn count(&self) -> Option<u64> {
        self.number("count")
    }

    /// Whether `--name` (or `-name`, as the zguide's `-v`) was given.
    pub fn flag(&self, name: &str) -> bool {
        let (long, short) = (format!("--{name}"), format!("-{name}"));
        self.args.iter().any(|a| *a == long || *a == short)
    }

    /// The `n`th argument that is not an option or an option's value.
    pub fn positional(&self, n: usize) -> Option<&str> {
        let mut rest = Vec::new();
        let mut i = 0;
        while i < self.args.len() {
            if self.args[i].starts_with("--") {
                // An option followed by a value that is not itself an option.
                let has_value = self.args.get(i + 1).is_some_and(|v| !v.starts_with("--"));
                i += if has_value { 2 } else { 1 };
            } else if self.args[i].starts_with('-') {
                i += 1; // a short flag such as -v
            } else {
                rest.push(self.args[i].as_str());
                i += 1;
            }
        }
        rest.get(n).copied()
    }
}

/// `0, 1, 2, ...`, stopping before `count` if there is one: the zguide's
/// `while (1)` with an optional bound.
pub fn rounds(count: Option<u64>) -> impl Iterator<Item = u64> {
    (0..).take_while(move |i| count.map_or(true, |n| *i < n))
}

/// Prints `bound [LABEL ]ENDPOINT` on stderr, with the port the system
/// chose for `tcp://...:*` (the tests read these lines to connect).
pub fn announce(label: &str, socket: &zmq::Socket) {
    let endpoint = socket
        .get_last_endpoint()
        .ok()
        .and_then(|e| e.ok())
        .unwrap_or_default();
    if label.is_empty() {
        eprintln!("bound {endpoint}");
    } else {
        eprintln!("bound {label} {endpoint}");
    }
}

/// An xorshift generator: the zguide's `randof()` without a dependency.
pub struct Rng(u64);

impl Rng {
    /// Seeded from the clock and the process id.
    pub fn new() -> Rng {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        Rng::seeded(nanos ^ (u64::from(std::process::id()) << 32))
    }

    /// A fixed sequence.
    pub fn seeded(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// The next raw value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `0..n` (`randof(n)`); 0 when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// A value in `lo..hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo).max(0) as u64) as i64
    }
}

impl Default for Rng {
    fn default() -> Self {
        Rng::new()
    }
}

/// Receives every frame of one message and prints it, as the zguide's
/// `s_dump` does: `[SIZE] TEXT` (or hex for binary frames).
pub fn dump(socket: &zmq::Socket) -> zmq::Result<Vec<Vec<u8>>> {
    println!("----------------------------------------");
    let frames = socket.recv_multipart(0)?;
    for frame in &frames {
        println!("[{:03}] {}", frame.len(), printable(frame));
    }
    Ok(frames)
}

/// A frame as text if it is printable, else as hex.
pub fn printable(frame: &[u8]) -> String {
    match std::str::from_utf8(frame) {
        Ok(text) if text.chars().all(|c| !c.is_control()) => text.to_string(),
        _ => frame.iter().map(|b| format!("{b:02X}")).collect(),
    }
}

/// A random printable identity, `XXXX-XXXX` in hex (the zguide's
/// `s_set_id`).
pub fn random_identity(rng: &mut Rng) -> String {
    format!("{:04X}-{:04X}", rng.below(0x10000), rng.below(0x10000))
}

pub mod mdcliapi;
pub mod mdp;
pub mod mdwrkapi;

pub mod kvsimple {
    //! The clone pattern's key-value message, as the zguide's `kvsimple`
    //! class: three frames, key, sequence number (8 bytes, network order)
    //! and body.

    use fabriq as zmq;

    /// One key-value update.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct KvMsg {
        /// The key.
        pub key: String,
        /// The server's sequence number for this update.
        pub sequence: i64,
        /// The value.
        pub body: Vec<u8>,
    }

    impl KvMsg {
        /// Sends the three frames.
        pub fn send(&self, socket: &zmq::Socket) -> zmq::Result<()> {
            socket.send(self.key.as_bytes(), zmq::SNDMORE)?;
            socket.send(&self.sequence.to_be_bytes()[..], zmq::SNDMORE)?;
            socket.send(&self.body[..], 0)
        }

        /// Receives one update; `EPROTO` if it does not have the shape.
        pub fn recv(socket: &zmq::Socket) -> zmq::Result<KvMsg> {
            let frames = socket.recv_multipart(0)?;
            let [key, sequence, body]: [Vec<u8>; 3] =
                frames.try_into().map_err(|_| zmq::Error::EPROTO)?;
            let sequence: [u8; 8] = sequence.try_into().map_err(|_| zmq::Error::EPROTO)?;
            Ok(KvMsg {
                key: String::from_utf8(key).map_err(|_| zmq::Error::EPROTO)?,
                sequence: i64::from_be_bytes(sequence),
                body,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Args {
        Args {
            args: list.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn options_and_positionals() {
        let a = args(&[
            "--bind",
            "tcp://*:1",
            "10001 ",
            "-v",
            "--flag",
            "--bind",
            "ipc://x",
        ]);
        assert_eq!(a.get("bind"), Some("ipc://x"));
        assert_eq!(a.get_all("bind"), vec!["tcp://*:1", "ipc://x"]);
        assert_eq!(a.positional(0), Some("10001 "));
        assert_eq!(a.positional(1), None);
        assert!(a.flag("flag"));
        assert!(a.flag("v"));
        assert!(!a.flag("steady"));
        assert_eq!(a.count(), None);
        assert_eq!(args(&["--count", "7"]).count(), Some(7));
    }

    #[test]
    fn rounds_stop_at_the_count() {
        assert_eq!(rounds(Some(3)).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(rounds(None).take(5).count(), 5);
    }

    #[test]
    fn rng_stays_in_range() {
        let mut r = Rng::seeded(42);
        for _ in 0..1000 {
            let v = r.range(-80, 135);
            assert!((-80..135).contains(&v));
        }
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn kvmsg_round_trip() {
        let ctx = zmq::Context::new();
        let a = ctx.socket(zmq::PAIR).unwrap();
        let b = ctx.socket(zmq::PAIR).unwrap();
        a.bind("inproc://kvmsg-test").unwrap();
        b.connect("inproc://kvmsg-test").unwrap();
        let msg = kvsimple::KvMsg {
            key: "42".into(),
            sequence: -7,
            body: b"value".to_vec(),
        };
        msg.send(&a).unwrap();
        assert_eq!(kvsimple::KvMsg::recv(&b).unwrap(), msg);
        a.send("only one frame", 0).unwrap();
        assert_eq!(kvsimple::KvMsg::recv(&b), Err(zmq::Error::EPROTO));
    }
}
