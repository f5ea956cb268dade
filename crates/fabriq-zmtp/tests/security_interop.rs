//! PLAIN and CURVE against real libzmq: pyzmq (which bundles libzmq 4.3.5
//! built with CURVE; the `zmq` crate's libzmq has no CURVE) runs
//! `tests/python/curve_peer.py`, and one fabriq-zmtp [`Connection`] talks
//! to it over a blocking `TcpStream` on 127.0.0.1 (ephemeral ports).
//!
//! Python comes from `$FABRIQ_PYTHON`, else `target/pyenv/bin/python`
//! (made by `scripts/python-env`). Without it these tests fail, saying so.
//! Every wait is bounded.

use std::io::{self, BufRead, BufReader, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fabriq_zmtp::{
    AuthReply, Config, Connection, CurveKeyPair, Event, MechanismConfig, MechanismName, Part,
    ProtocolError, SocketType,
};

const WAIT: Duration = Duration::from_secs(10);
const ZAP_400: &str = "400";
/// libzmq's ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC.
const CRYPTOGRAPHIC: &str = "285212673";

// ---- the Python peer -----------------------------------------------------

fn python() -> PathBuf {
    let advice = "Run scripts/python-env from the workspace root (it creates \
                  target/pyenv with pyzmq), or set FABRIQ_PYTHON to a Python that has pyzmq.";
    let path = match std::env::var_os("FABRIQ_PYTHON").filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pyenv/bin/python"),
    };
    assert!(
        path.exists(),
        "no Python for the pyzmq CURVE/PLAIN interop tests: {} does not exist. {advice}",
        path.display()
    );
    let check = Command::new(&path)
        .args([
            "-c",
            "import zmq, sys; sys.exit(0 if zmq.has('curve') else 3)",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}. {advice}", path.display()));
    assert!(
        check.status.success(),
        "{} has no pyzmq with CURVE ({}). {advice}",
        path.display(),
        String::from_utf8_lossy(&check.stderr)
    );
    path
}

/// A running `curve_peer.py`, its output lines arriving on a channel.
struct Peer {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Peer {
    fn spawn(args: &[&str]) -> Peer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/curve_peer.py");
        let mut child = Command::new(python())
            .arg(script)
            .args(args)
            .env("PYTHONUNBUFFERED", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the python peer");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Peer {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line starting with `prefix` (its remaining words).
    fn expect(&mut self, prefix: &str) -> Vec<String> {
        let until = Instant::now() + WAIT;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    let mut words = line.split(' ').map(str::to_string);
                    if words.next().as_deref() == Some(prefix) {
                        return words.collect();
                    }
                }
                Err(_) => panic!(
                    "python peer: no {prefix:?} line within {WAIT:?}; it said {:?}",
                    self.seen
                ),
            }
        }
    }

    /// Waits for the script to end and returns everything it printed.
    fn finish(mut self) -> Vec<String> {
        self.expect("done");
        let _ = self.child.wait();
        std::mem::take(&mut self.seen)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keypair_from_python() -> CurveKeyPair {
    let mut p = Peer::spawn(&["keypair"]);
    let k = p.expect("key");
    CurveKeyPair::from_z85(&k[0], &k[1]).expect("libzmq's key pair is valid and consistent")
}

// ---- the blocking driver -------------------------------------------------

#[derive(Debug)]
enum Failure {
    Protocol(ProtocolError),
    Closed,
    Timeout,
}

struct Driver {
    stream: TcpStream,
    conn: Connection,
}

impl Driver {
    fn connect(port: u16, config: Config) -> Driver {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let stream = TcpStream::connect_timeout(&addr, WAIT).expect("connect to pyzmq");
        Driver::new(stream, config)
    }

    fn accept(listener: TcpListener, config: Config) -> Driver {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let _ = tx.send(listener.accept());
        });
        let (stream, _) = rx
            .recv_timeout(WAIT)
            .expect("pyzmq did not connect in time")
            .expect("accept");
        Driver::new(stream, config)
    }

    fn new(stream: TcpStream, config: Config) -> Driver {
        stream.set_nodelay(true).unwrap();
        stream.set_write_timeout(Some(WAIT)).unwrap();
        let mut d = Driver {
            stream,
            conn: Connection::new(config, Instant::now()).expect("valid config"),
        };
        d.flush().expect("send our greeting");
        d
    }

    fn flush(&mut self) -> io::Result<()> {
        while !self.conn.pending().is_empty() {
            let mut slices = [IoSlice::new(&[]); 64];
            let n = self.conn.pending().io_slices(&mut slices);
            let written = self.stream.write_vectored(&slices[..n])?;
            if written == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.conn.advance_tx(written);
        }
        Ok(())
    }

    /// The next event within [`WAIT`].
    fn next(&mut self) -> Result<Event, Failure> {
        let until = Instant::now() + WAIT;
        loop {
            let polled = self.conn.poll_event();
            let _ = self.flush(); // an ERROR for the peer, too
            match polled {
                Ok(Some(ev)) => return Ok(ev),
                Ok(None) => {}
                Err(e) => return Err(Failure::Protocol(e)),
            }
            let now = Instant::now();
            if now >= until {
                return Err(Failure::Timeout);
            }
            if self.conn.poll_timeout().is_some_and(|t| now >= t) {
                let r = self.conn.handle_timeout(now);
                let _ = self.flush();
                r.map_err(Failure::Protocol)?;
            }
            let wake = self.conn.poll_timeout().map_or(until, |t| t.min(until));
            let wait = wake
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1));
            self.stream.set_read_timeout(Some(wait)).unwrap();
            let buf = self.conn.recv_buf();
            let old = buf.len();
            let room = buf.capacity() - old;
            buf.resize(old + room, 0);
            let result = self.stream.read(&mut buf[old..]);
            buf.truncate(old + *result.as_ref().unwrap_or(&0));
            match result {
                Ok(0) => return Err(Failure::Closed),
                Ok(_) => self.conn.input_received(Instant::now()),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => return Err(Failure::Closed),
            }
        }
    }

    fn expect(&mut self, what: &str) -> Event {
        self.next()
            .unwrap_or_else(|f| panic!("fabriq side: no {what}: {f:?}"))
    }

    fn send(&mut self, parts: &[&[u8]]) {
        let parts: Vec<Part> = parts.iter().map(|p| Part::copy_from_slice(p)).collect();
        self.conn.send(&parts).unwrap();
        self.flush().unwrap();
    }

    fn subscribe(&mut self, topic: &[u8]) {
        self.conn.subscribe(topic).unwrap();
        self.flush().unwrap();
    }
}

fn message(parts: &[&[u8]]) -> Event {
    Event::Message(parts.iter().map(|p| Part::copy_from_slice(p)).collect())
}

fn config(socket_type: SocketType, mechanism: MechanismConfig, authenticate: bool) -> Config {
    let mut c = Config::new(socket_type);
    c.mechanism = mechanism;
    c.authenticate = authenticate;
    c
}

fn listen() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    (l, port)
}

// ---- CURVE: fabriq client, libzmq server ---------------------------------

#[test]
fn curve_client_to_libzmq_rep() {
    // Keys made by fabriq, handed to libzmq as Z85.
    let server = CurveKeyPair::generate();
    let client = CurveKeyPair::generate();
    let mut py = Peer::spawn(&[
        "server",
        "curve",
        "REP",
        &server.public.to_z85(),
        &server.secret.to_z85(),
        &client.public.to_z85(),
    ]);
    let port: u16 = py.expect("port")[0].parse().unwrap();
    let mut d = Driver::connect(
        port,
        config(
            SocketType::Req,
            MechanismConfig::CurveClient {
                server_public: server.public,
                keys: client.clone(),
            },
            false,
        ),
    );
    assert_eq!(d.expect("handshake"), Event::HandshakeComplete);
    assert_eq!(d.conn.peer().unwrap().socket_type, SocketType::Rep);
    d.send(&[b"", b"hello"]);
    assert_eq!(d.expect("reply"), message(&[b"", b"echo:hello"]));
    // libzmq's ZAP handler saw our long-term key.
    assert_eq!(py.expect("zap"), vec!["CURVE", &client.public.to_z85()]);
    assert_eq!(py.expect("recv"), vec!["hello"]);
    py.finish();
}

#[test]
fn curve_client_refused_by_libzmq_zap_handler() {
    let server = CurveKeyPair::generate();
    let allowed = CurveKeyPair::generate();
    let mut py = Peer::spawn(&[
        "server",
        "curve",
        "REP",
        &server.public.to_z85(),
        &server.secret.to_z85(),
        &allowed.public.to_z85(),
    ]);
    let port: u16 = py.expect("port")[0].parse().unwrap();
    let intruder = CurveKeyPair::generate();
    let mut d = Driver::connect(
        port,
        config(
            SocketType::Req,
            MechanismConfig::CurveClient {
                server_public: server.public,
                keys: intruder.clone(),
            },
            false,
        ),
    );
    let got = d.next();
    assert_eq!(py.expect("zap"), vec!["CURVE", &intruder.public.to_z85()]);
    match got {
        Err(Failure::Protocol(ProtocolError::PeerRefusedAuth { status: 400 })) => {}
        // libzmq sends ERROR 400 and closes; once, in a CI run under load,
        // the connection closed with no ERROR before it (0 of 30 runs on
        // a quiet machine). Still a refusal: the handshake never completed
        // and the handler above saw and refused the key.
        Err(Failure::Closed) => {}
        other => panic!("libzmq's ZAP handler should refuse us: {other:?}"),
    }
}

#[test]
fn curve_subscription_to_libzmq_xpub() {
    let server = CurveKeyPair::generate();
    let mut py = Peer::spawn(&[
        "server",
        "curve",
        "XPUB",
        &server.public.to_z85(),
        &server.secret.to_z85(),
        "any",
    ]);
    let port: u16 = py.expect("port")[0].parse().unwrap();
    let mut d = Driver::connect(
        port,
        config(
            SocketType::Sub,
            MechanismConfig::CurveClient {
                server_public: server.public,
                keys: CurveKeyPair::generate(),
            },
            false,
        ),
    );
    assert_eq!(d.expect("handshake"), Event::HandshakeComplete);
    // SUBSCRIBE goes inside a MESSAGE box; libzmq must open and read it.
    d.subscribe(b"news");
    assert_eq!(py.expect("sub"), vec!["news"]);
    // libzmq filters at the publisher: only "news" arrives, boxed.
    for _ in 0..3 {
        assert_eq!(d.expect("publication"), message(&[b"news", b"hello"]));
    }
    py.finish();
}

#[test]
fn curve_client_with_wrong_server_key_is_refused_by_libzmq() {
    let server = CurveKeyPair::generate();
    let mut py = Peer::spawn(&[
        "server",
        "curve",
        "REP",
        &server.public.to_z85(),
        &server.secret.to_z85(),
        "any",
    ]);
    let port: u16 = py.expect("port")[0].parse().unwrap();
    let mut d = Driver::connect(
        port,
        config(
            SocketType::Req,
            MechanismConfig::CurveClient {
                server_public: CurveKeyPair::generate().public,
                keys: CurveKeyPair::generate(),
            },
            false,
        ),
    );
    match d.next() {
        Err(Failure::Closed) | Err(Failure::Protocol(_)) => {}
        other => panic!("the handshake should fail: {other:?}"),
    }
    assert_eq!(
        py.expect("event"),
        vec!["HANDSHAKE_FAILED_PROTOCOL", CRYPTOGRAPHIC]
    );
}

// ---- CURVE: libzmq client, fabriq server ---------------------------------

#[test]
fn libzmq_curve_client_to_fabriq_server() {
    // Server keys made by libzmq's zmq_curve_keypair, used by fabriq.
    let server = keypair_from_python();
    let (listener, port) = listen();
    let mut py = Peer::spawn(&[
        "client",
        "curve",
        "REQ",
        &port,
        &server.public.to_z85(),
        "gen",
    ]);
    let client_key = py.expect("key");
    let mut d = Driver::accept(
        listener,
        config(
            SocketType::Rep,
            MechanismConfig::CurveServer { keys: server },
            true,
        ),
    );
    let Event::AuthRequest(req) = d.expect("auth request") else {
        panic!("expected an auth request");
    };
    assert_eq!(req.mechanism, MechanismName::Curve);
    assert_eq!(
        fabriq_zmtp::z85::encode(&req.credentials[0]).unwrap(),
        client_key[0]
    );
    d.conn.auth_reply(AuthReply::allow("py-client")).unwrap();
    assert_eq!(d.expect("handshake"), Event::HandshakeComplete);
    assert_eq!(&d.conn.peer().unwrap().user_id[..], b"py-client");
    assert_eq!(d.expect("request"), message(&[b"", b"hello"]));
    d.send(&[b"", b"world"]);
    assert_eq!(py.expect("recv"), vec!["world"]);
    py.finish();
}

#[test]
fn libzmq_curve_client_refused_by_auth_hook_sees_auth_failure() {
    let server = CurveKeyPair::generate();
    let (listener, port) = listen();
    let mut py = Peer::spawn(&[
        "client",
        "curve",
        "REQ",
        &port,
        &server.public.to_z85(),
        "gen",
    ]);
    let mut d = Driver::accept(
        listener,
        config(
            SocketType::Rep,
            MechanismConfig::CurveServer { keys: server },
            true,
        ),
    );
    assert!(matches!(d.expect("auth request"), Event::AuthRequest(_)));
    d.conn.auth_reply(AuthReply::deny("unknown key")).unwrap();
    assert!(matches!(
        d.next(),
        Err(Failure::Protocol(ProtocolError::AuthFailed {
            status: 400,
            ..
        }))
    ));
    // Our ERROR "400" is what libzmq turns into HANDSHAKE_FAILED_AUTH.
    assert_eq!(py.expect("event"), vec!["HANDSHAKE_FAILED_AUTH", ZAP_400]);
}

#[test]
fn libzmq_curve_client_with_wrong_server_key_is_refused() {
    let (listener, port) = listen();
    let wrong = CurveKeyPair::generate().public.to_z85();
    let mut py = Peer::spawn(&["client", "curve", "REQ", &port, &wrong, "gen"]);
    let mut d = Driver::accept(
        listener,
        config(
            SocketType::Rep,
            MechanismConfig::CurveServer {
                keys: CurveKeyPair::generate(),
            },
            true,
        ),
    );
    assert!(
        matches!(
            d.next(),
            Err(Failure::Protocol(ProtocolError::Cryptographic(_)))
        ),
        "fabriq must refuse a HELLO boxed for another key"
    );
    drop(d);
    let _ = py.expect("event");
}

// ---- PLAIN ---------------------------------------------------------------

#[test]
fn plain_client_to_libzmq_server() {
    for (password, ok) in [("secret", true), ("wrong", false)] {
        let mut py = Peer::spawn(&["server", "plain", "REP", "admin", "secret"]);
        let port: u16 = py.expect("port")[0].parse().unwrap();
        let mut d = Driver::connect(
            port,
            config(
                SocketType::Req,
                MechanismConfig::plain_client("admin", password),
                false,
            ),
        );
        if ok {
            assert_eq!(d.expect("handshake"), Event::HandshakeComplete);
            d.send(&[b"", b"hi"]);
            assert_eq!(d.expect("reply"), message(&[b"", b"echo:hi"]));
            py.finish();
        } else {
            // libzmq 4.3.5's PLAIN server mangles its ERROR on ZMTP 3.1
            // connections (seen on the wire: `04 09 "^RROR" 03 "400"`,
            // the name-length byte and the E lost), so what arrives is a
            // malformed command rather than a clean ERROR "400".
            match d.next() {
                Err(Failure::Protocol(
                    ProtocolError::PeerRefusedAuth { status: 400 }
                    | ProtocolError::MalformedCommand { .. },
                ))
                | Err(Failure::Closed) => {}
                other => panic!("libzmq should refuse a wrong password: {other:?}"),
            }
            assert_eq!(py.expect("zap"), vec!["PLAIN", "admin"]);
        }
    }
}

#[test]
fn libzmq_plain_client_to_fabriq_server() {
    for ok in [true, false] {
        let (listener, port) = listen();
        let mut py = Peer::spawn(&["client", "plain", "REQ", &port, "admin", "secret"]);
        let mut d = Driver::accept(
            listener,
            config(SocketType::Rep, MechanismConfig::PlainServer, true),
        );
        let Event::AuthRequest(req) = d.expect("auth request") else {
            panic!("expected an auth request");
        };
        assert_eq!(req.mechanism, MechanismName::Plain);
        assert_eq!(
            req.credentials,
            vec![Bytes::from("admin"), Bytes::from("secret")]
        );
        if ok {
            d.conn.auth_reply(AuthReply::allow("admin")).unwrap();
            assert_eq!(d.expect("handshake"), Event::HandshakeComplete);
            assert_eq!(d.expect("request"), message(&[b"", b"hello"]));
            d.send(&[b"", b"welcome"]);
            assert_eq!(py.expect("recv"), vec!["welcome"]);
            py.finish();
        } else {
            d.conn.auth_reply(AuthReply::deny("no")).unwrap();
            assert!(matches!(
                d.next(),
                Err(Failure::Protocol(ProtocolError::AuthFailed {
                    status: 400,
                    ..
                }))
            ));
            // libzmq 4.3.5's PLAIN client reports any ERROR as
            // HANDSHAKE_FAILED_PROTOCOL (unexpected command), unlike its
            // CURVE client; against a libzmq PLAIN server it sees
            // HANDSHAKE_FAILED_NO_DETAIL. Either way the handshake failed.
            let event = py.expect("event");
            assert!(event[0].starts_with("HANDSHAKE_FAILED"), "{event:?}");
        }
    }
}
