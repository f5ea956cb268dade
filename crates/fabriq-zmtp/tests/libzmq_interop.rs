//! Interoperability of the sans-IO engine with real libzmq (through the
//! `zmq` crate, which builds libzmq from source).
//!
//! Each test runs a libzmq socket in its own `zmq::Context` and drives one
//! fabriq-zmtp [`Connection`] over a plain blocking `TcpStream` with the
//! small [`Driver`] below. Only ephemeral ports are used, so the tests run
//! in parallel. Every wait is bounded by [`WAIT`] and fails the test with
//! a message saying what was awaited.

use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use fabriq_zmtp::frame::FrameDecoder;
use fabriq_zmtp::greeting::GREETING_LEN;
use fabriq_zmtp::{
    Command, Config, Connection, Event, Part, PeerInfo, ProtocolError, SocketType, Version,
};

/// Upper bound of every wait.
const WAIT: Duration = Duration::from_secs(10);

const ZMTP_3_1: Version = Version { major: 3, minor: 1 };

// ---- the blocking driver -------------------------------------------------

/// Why [`Driver::poll_until`] stopped without an event.
#[derive(Debug)]
enum Failure {
    /// The engine reported a protocol error (from `poll_event` or
    /// `handle_timeout`).
    Protocol(ProtocolError),
    /// The peer closed the TCP connection.
    Closed,
    /// A socket read or write failed.
    Io(#[allow(dead_code)] io::Error),
}

/// One fabriq-zmtp connection over a blocking TCP stream.
struct Driver {
    /// What this connection is, for failure messages.
    name: String,
    stream: TcpStream,
    conn: Connection,
    /// All raw bytes received and sent, greetings included.
    rx_log: Vec<u8>,
    tx_log: Vec<u8>,
}

impl Driver {
    /// Connects to a libzmq socket bound at `addr`.
    fn connect(name: &str, addr: SocketAddr, config: Config) -> Driver {
        let stream = TcpStream::connect_timeout(&addr, WAIT)
            .unwrap_or_else(|e| panic!("{name}: connect to {addr}: {e}"));
        Driver::new(name, stream, config)
    }

    /// Accepts the one connection a libzmq socket makes to `listener`.
    fn accept(name: &str, listener: TcpListener, config: Config) -> Driver {
        // A thread does the blocking accept so the wait can be bounded.
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let _ = tx.send(listener.accept());
        });
        let (stream, _) = rx
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("{name}: libzmq did not connect within {WAIT:?}"))
            .unwrap_or_else(|e| panic!("{name}: accept: {e}"));
        Driver::new(name, stream, config)
    }

    fn new(name: &str, stream: TcpStream, config: Config) -> Driver {
        stream.set_nodelay(true).unwrap();
        stream.set_write_timeout(Some(WAIT)).unwrap();
        let conn = Connection::new(config, Instant::now()).expect("valid config");
        let mut driver = Driver {
            name: name.to_string(),
            stream,
            conn,
            rx_log: Vec::new(),
            tx_log: Vec::new(),
        };
        // Our greeting is queued at creation: send it at once.
        driver
            .write_all_pending()
            .unwrap_or_else(|e| panic!("{name}: sending our greeting: {e}"));
        driver
    }

    /// Writes everything the connection has queued (vectored).
    fn write_all_pending(&mut self) -> io::Result<()> {
        while !self.conn.pending().is_empty() {
            let written = {
                let mut slices = [IoSlice::new(&[]); 64];
                let n = self.conn.pending().io_slices(&mut slices);
                let written = match self.stream.write_vectored(&slices[..n]) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(w) => w,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                let mut left = written;
                for s in &slices[..n] {
                    let take = left.min(s.len());
                    self.tx_log.extend_from_slice(&s[..take]);
                    left -= take;
                }
                written
            };
            self.conn.advance_tx(written);
        }
        Ok(())
    }

    /// One read into the connection's buffer, waiting at most until
    /// `until`. `Ok(false)`: the wait ran out.
    fn read_once(&mut self, until: Instant) -> Result<bool, Failure> {
        let wait = until
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        self.stream.set_read_timeout(Some(wait)).unwrap();
        let buf = self.conn.recv_buf();
        let old = buf.len();
        let room = buf.capacity() - old;
        assert!(room > 0, "recv_buf() made no room to read into");
        buf.resize(old + room, 0);
        let result = self.stream.read(&mut buf[old..]);
        let n = *result.as_ref().unwrap_or(&0);
        buf.truncate(old + n);
        self.rx_log.extend_from_slice(&buf[old..]);
        match result {
            Ok(0) => Err(Failure::Closed),
            Ok(_) => {
                self.conn.input_received(Instant::now());
                Ok(true)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Ok(false)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(true),
            Err(e) => Err(Failure::Io(e)),
        }
    }

    /// Runs the connection (reads, timers, writes) until it yields an
    /// event (`Ok(Some)`) or `until` passes (`Ok(None)`).
    fn poll_until(&mut self, until: Instant) -> Result<Option<Event>, Failure> {
        loop {
            let polled = self.conn.poll_event();
            // Whatever the engine queued (READY, PONG, ERROR) goes out now.
            let written = self.write_all_pending();
            match polled {
                Ok(Some(event)) => {
                    written.map_err(Failure::Io)?;
                    return Ok(Some(event));
                }
                Ok(None) => written.map_err(Failure::Io)?,
                Err(e) => return Err(Failure::Protocol(e)),
            }
            let now = Instant::now();
            if now >= until {
                return Ok(None);
            }
            if let Some(due) = self.conn.poll_timeout() {
                if now >= due {
                    let timers = self.conn.handle_timeout(now);
                    let written = self.write_all_pending();
                    timers.map_err(Failure::Protocol)?;
                    written.map_err(Failure::Io)?;
                    continue;
                }
            }
            let wake = self.conn.poll_timeout().map_or(until, |t| t.min(until));
            self.read_once(wake)?;
        }
    }

    /// The next event; fails the test if none comes within [`WAIT`].
    fn next_event(&mut self, what: &str) -> Event {
        match self.poll_until(Instant::now() + WAIT) {
            Ok(Some(event)) => event,
            Ok(None) => panic!("{}: no {what} within {WAIT:?}", self.name),
            Err(f) => panic!("{}: failed while waiting for {what}: {f:?}", self.name),
        }
    }

    /// Runs the connection for `period`, returning the events it yielded.
    fn run_for(&mut self, period: Duration) -> Vec<Event> {
        let until = Instant::now() + period;
        let mut events = Vec::new();
        loop {
            match self.poll_until(until) {
                Ok(Some(event)) => events.push(event),
                Ok(None) => return events,
                Err(f) => panic!("{}: failed while running for {period:?}: {f:?}", self.name),
            }
        }
    }

    /// Waits for the handshake; checks the negotiated version is 3.1.
    fn handshake(&mut self) -> PeerInfo {
        let event = self.next_event("handshake");
        assert_eq!(
            event,
            Event::HandshakeComplete,
            "{}: first event must be HandshakeComplete",
            self.name
        );
        assert!(self.conn.is_ready());
        let peer = self.conn.peer().expect("peer() after handshake").clone();
        assert_eq!(
            peer.version,
            ZMTP_3_1,
            "{}: negotiated version with libzmq {:?}",
            self.name,
            zmq_version()
        );
        peer
    }

    /// The next event, which must be a message; returns its frames.
    fn expect_message(&mut self, what: &str) -> Vec<Bytes> {
        match self.next_event(what) {
            Event::Message(m) => m.into_iter().map(Part::into_bytes).collect(),
            other => panic!("{}: expected {what}, got {other:?}", self.name),
        }
    }

    /// Queues a message and writes it out.
    fn send(&mut self, frames: &[Bytes]) {
        let frames: Vec<Part> = frames.iter().cloned().map(Part::from).collect();
        self.conn.send(&frames).expect("send");
        self.flush();
    }

    fn flush(&mut self) {
        if let Err(e) = self.write_all_pending() {
            panic!("{}: write failed: {e}", self.name);
        }
    }
}

// ---- libzmq helpers ------------------------------------------------------

fn zmq_version() -> (i32, i32, i32) {
    zmq::version()
}

/// A libzmq socket that never lingers and whose blocking calls give up
/// after [`WAIT`].
fn zsocket(ctx: &zmq::Context, kind: zmq::SocketType) -> zmq::Socket {
    let s = ctx.socket(kind).unwrap();
    let ms = WAIT.as_millis() as i32;
    s.set_linger(0).unwrap();
    s.set_rcvtimeo(ms).unwrap();
    s.set_sndtimeo(ms).unwrap();
    s
}

/// Binds `s` to an ephemeral loopback port and returns the address.
fn zbind(s: &zmq::Socket) -> SocketAddr {
    s.bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = s.get_last_endpoint().unwrap().unwrap();
    endpoint
        .strip_prefix("tcp://")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("unexpected endpoint {endpoint:?}"))
}

/// A listener on an ephemeral loopback port that `s` connects to.
fn zconnect_to_listener(s: &zmq::Socket) -> TcpListener {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    s.connect(&format!("tcp://{addr}")).unwrap();
    listener
}

/// The next event from `us`, while making the libzmq socket `z` process
/// its command queue: a libzmq socket attaches a new connection (and, for
/// a SUB, sends its subscriptions over it) only when its application
/// thread calls into it.
fn next_event_poking(us: &mut Driver, z: &zmq::Socket, what: &str) -> Event {
    let deadline = Instant::now() + WAIT;
    loop {
        z.get_events().expect("ZMQ_EVENTS");
        let until = (Instant::now() + Duration::from_millis(10)).min(deadline);
        match us.poll_until(until) {
            Ok(Some(event)) => return event,
            Ok(None) if Instant::now() >= deadline => {
                panic!("{}: no {what} within {WAIT:?}", us.name)
            }
            Ok(None) => {}
            Err(f) => panic!("{}: failed while waiting for {what}: {f:?}", us.name),
        }
    }
}

fn zrecv(s: &zmq::Socket, what: &str) -> Vec<Vec<u8>> {
    s.recv_multipart(0)
        .unwrap_or_else(|e| panic!("libzmq: no {what} within {WAIT:?}: {e}"))
}

fn zsend(s: &zmq::Socket, frames: &[&[u8]], what: &str) {
    s.send_multipart(frames.iter().copied(), 0)
        .unwrap_or_else(|e| panic!("libzmq: sending {what}: {e}"));
}

// ---- message helpers -----------------------------------------------------

fn b(s: &'static [u8]) -> Bytes {
    Bytes::from_static(s)
}

/// 100 KiB with a pattern, so misplaced bytes show.
fn big_frame(seed: u8) -> Bytes {
    (0..100 * 1024)
        .map(|i: usize| (i % 251) as u8 ^ seed)
        .collect::<Vec<u8>>()
        .into()
}

/// A multipart message: a short frame, an empty one, the largest short
/// frame (255 bytes), the smallest long one (256), 100 KiB (long and sent
/// by reference), and a last short frame.
fn multipart(seed: u8) -> Vec<Bytes> {
    vec![
        Bytes::from(format!("head-{seed}")),
        Bytes::new(),
        Bytes::from(vec![seed; 255]),
        Bytes::from(vec![seed ^ 0xFF; 256]),
        big_frame(seed),
        Bytes::from(format!("tail-{seed}")),
    ]
}

/// Many small messages, to exercise batching on both sides.
const BURST: usize = 1000;

fn burst_message(i: usize) -> Vec<u8> {
    format!("burst {i}").into_bytes()
}

fn as_vecs(frames: &[Bytes]) -> Vec<Vec<u8>> {
    frames.iter().map(|f| f.to_vec()).collect()
}

fn as_slices(frames: &[Bytes]) -> Vec<&[u8]> {
    frames.iter().map(|f| &f[..]).collect()
}

/// Summary of frames for assertion messages (the 100 KiB frame would
/// drown the output).
fn describe(frames: &[Vec<u8>]) -> Vec<String> {
    frames
        .iter()
        .map(|f| {
            if f.len() > 32 {
                format!("<{} bytes>", f.len())
            } else {
                format!("{:?}", String::from_utf8_lossy(f))
            }
        })
        .collect()
}

fn assert_frames(got: &[Vec<u8>], want: &[Bytes], what: &str) {
    assert!(
        got == as_vecs(want).as_slice(),
        "{what}: got {:?}, want {:?}",
        describe(got),
        describe(&as_vecs(want))
    );
}

/// The commands in a recorded byte stream (greeting skipped).
fn commands_in(log: &[u8]) -> Vec<Command> {
    assert!(log.len() >= GREETING_LEN, "log shorter than a greeting");
    let mut buf = BytesMut::from(&log[GREETING_LEN..]);
    let decoder = FrameDecoder::new(None, u64::MAX);
    let mut commands = Vec::new();
    while let Some(frame) = decoder.decode(&mut buf).expect("recorded frames decode") {
        if frame.command {
            commands.push(Command::decode(&frame.data).expect("recorded command decodes"));
        }
    }
    assert!(buf.is_empty(), "recorded stream ends inside a frame");
    commands
}

// ---- version -------------------------------------------------------------

#[test]
fn libzmq_version_and_negotiated_zmtp_3_1() {
    let (major, minor, patch) = zmq_version();
    println!("libzmq version {major}.{minor}.{patch}");
    assert!(
        (major, minor, patch) >= (4, 3, 3),
        "libzmq announces ZMTP 3.1 from 4.3.3 on (older ones announce 3.0)"
    );

    let ctx = zmq::Context::new();
    let pair = zsocket(&ctx, zmq::PAIR);
    let addr = zbind(&pair);
    let mut us = Driver::connect("our PAIR", addr, Config::new(SocketType::Pair));
    let peer = us.handshake();
    println!("negotiated ZMTP {}", peer.version);
    assert_eq!(peer.version, Version { major: 3, minor: 1 });
    assert_eq!(peer.socket_type, SocketType::Pair);
    assert!(peer.identity.is_empty());
}

// ---- PAIR ----------------------------------------------------------------

#[test]
fn pair_both_directions() {
    let ctx = zmq::Context::new();
    let pair = zsocket(&ctx, zmq::PAIR);
    let addr = zbind(&pair);
    let mut us = Driver::connect("our PAIR", addr, Config::new(SocketType::Pair));
    assert_eq!(us.handshake().socket_type, SocketType::Pair);

    us.send(&[b(b"to libzmq")]);
    assert_eq!(zrecv(&pair, "PAIR message"), vec![b"to libzmq".to_vec()]);

    zsend(&pair, &[b"to fabriq", b""], "PAIR message");
    let got = us.expect_message("PAIR message");
    assert_eq!(got, vec![b(b"to fabriq"), Bytes::new()]);
}

// ---- PUB / SUB / XPUB / XSUB -------------------------------------------

/// Publishes on `publisher` until `us` has received `count` messages
/// accepted by `check` (which panics on a message that must not arrive).
fn publish_until(
    publisher: &zmq::Socket,
    us: &mut Driver,
    round: &dyn Fn(u32) -> Vec<Vec<u8>>,
    count: usize,
    mut check: impl FnMut(&[Part]) -> bool,
) {
    let deadline = Instant::now() + WAIT;
    let mut received = 0;
    let mut i = 0;
    while received < count {
        assert!(
            Instant::now() < deadline,
            "{}: only {received} of {count} publications arrived within {WAIT:?}",
            us.name
        );
        for msg in round(i) {
            publisher.send(msg, 0).expect("publish");
        }
        i += 1;
        // Await traffic briefly, then publish again (the subscription may
        // not have reached the publisher yet).
        let until = Instant::now() + Duration::from_millis(20);
        loop {
            match us.poll_until(until) {
                Ok(Some(Event::Message(m))) => {
                    if check(&m) {
                        received += 1;
                    }
                }
                Ok(Some(other)) => panic!("{}: unexpected event {other:?}", us.name),
                Ok(None) => break,
                Err(f) => panic!("{}: failed while receiving publications: {f:?}", us.name),
            }
        }
    }
}

#[test]
fn libzmq_pub_to_our_sub() {
    let ctx = zmq::Context::new();
    let publisher = zsocket(&ctx, zmq::PUB);
    let addr = zbind(&publisher);
    let mut us = Driver::connect("our SUB", addr, Config::new(SocketType::Sub));
    let peer = us.handshake();
    assert_eq!(peer.socket_type, SocketType::Pub);
    assert!(peer.identity.is_empty());

    us.conn.subscribe(b"topic").unwrap();
    us.flush();
    let round = |i: u32| {
        vec![
            format!("other {i}").into_bytes(),
            format!("topic {i}").into_bytes(),
        ]
    };
    publish_until(&publisher, &mut us, &round, 3, |m| {
        assert_eq!(m.len(), 1, "publications are single-frame");
        assert!(
            m[0].starts_with(b"topic"),
            "received non-matching publication {:?}",
            String::from_utf8_lossy(&m[0])
        );
        true
    });

    // Cancel "topic" and subscribe "z": once a "z" publication arrives,
    // the cancel has been applied too (same pipe, in order), so no
    // "topic" publication may follow it.
    us.conn.cancel(b"topic").unwrap();
    us.conn.subscribe(b"z").unwrap();
    us.flush();
    let round = |i: u32| {
        vec![
            format!("topic {i}").into_bytes(),
            format!("other {i}").into_bytes(),
            format!("z {i}").into_bytes(),
        ]
    };
    let mut seen_z = false;
    publish_until(&publisher, &mut us, &round, 3, |m| {
        let body = &m[0];
        assert!(
            !body.starts_with(b"other"),
            "received non-matching publication {:?}",
            String::from_utf8_lossy(body)
        );
        if body.starts_with(b"z") {
            seen_z = true;
            true
        } else {
            assert!(
                !seen_z,
                "publication {:?} arrived after the cancel took effect",
                String::from_utf8_lossy(body)
            );
            false
        }
    });
}

/// libzmq SUB (subscribed to "a") and our publisher of type `ours`.
fn libzmq_sub_to_our(ours: SocketType) {
    let ctx = zmq::Context::new();
    let sub = zsocket(&ctx, zmq::SUB);
    sub.set_subscribe(b"a").unwrap();
    let addr = zbind(&sub);
    let mut us = Driver::connect(&format!("our {ours}"), addr, Config::new(ours));
    let peer = us.handshake();
    assert_eq!(peer.socket_type, SocketType::Sub);

    assert_eq!(
        next_event_poking(&mut us, &sub, "subscription"),
        Event::Subscribe(b(b"a"))
    );

    // The real socket layer filters; here we check what libzmq delivers.
    us.send(&[b(b"a-first")]);
    us.send(&[b(b"b-filtered-by-libzmq")]);
    us.send(&[b(b"a-second"), b(b"more")]);
    assert_eq!(zrecv(&sub, "publication"), vec![b"a-first".to_vec()]);
    assert_eq!(
        zrecv(&sub, "publication"),
        vec![b"a-second".to_vec(), b"more".to_vec()]
    );

    sub.set_unsubscribe(b"a").unwrap();
    assert_eq!(us.next_event("cancel"), Event::Cancel(b(b"a")));
}

#[test]
fn libzmq_sub_to_our_pub() {
    libzmq_sub_to_our(SocketType::Pub);
}

#[test]
fn libzmq_sub_to_our_xpub() {
    libzmq_sub_to_our(SocketType::XPub);
}

/// libzmq XPUB and our subscriber of type `ours`.
fn libzmq_xpub_to_our(ours: SocketType) {
    let ctx = zmq::Context::new();
    let xpub = zsocket(&ctx, zmq::XPUB);
    let addr = zbind(&xpub);
    let mut us = Driver::connect(&format!("our {ours}"), addr, Config::new(ours));
    let peer = us.handshake();
    assert_eq!(peer.socket_type, SocketType::XPub);

    us.conn.subscribe(b"topic").unwrap();
    us.flush();
    assert_eq!(
        zrecv(&xpub, "subscription notice"),
        vec![b"\x01topic".to_vec()]
    );

    // The subscription is in place: a matching publication reaches us.
    zsend(&xpub, &[b"topic data"], "publication");
    assert_eq!(us.expect_message("publication"), vec![b(b"topic data")]);

    us.conn.cancel(b"topic").unwrap();
    us.flush();
    assert_eq!(zrecv(&xpub, "cancel notice"), vec![b"\x00topic".to_vec()]);
}

#[test]
fn libzmq_xpub_to_our_sub() {
    libzmq_xpub_to_our(SocketType::Sub);
}

#[test]
fn libzmq_xpub_to_our_xsub() {
    libzmq_xpub_to_our(SocketType::XSub);
}

/// libzmq XSUB and our publisher of type `ours`.
fn libzmq_xsub_to_our(ours: SocketType) {
    let ctx = zmq::Context::new();
    let xsub = zsocket(&ctx, zmq::XSUB);
    let addr = zbind(&xsub);
    let mut us = Driver::connect(&format!("our {ours}"), addr, Config::new(ours));
    let peer = us.handshake();
    assert_eq!(peer.socket_type, SocketType::XSub);

    // If libzmq has not attached the connection yet, it stores the
    // subscription and sends it on attach (hence the poking).
    zsend(&xsub, &[b"\x01topic"], "subscription");
    assert_eq!(
        next_event_poking(&mut us, &xsub, "subscription"),
        Event::Subscribe(b(b"topic"))
    );

    us.send(&[b(b"topic data")]);
    assert_eq!(zrecv(&xsub, "publication"), vec![b"topic data".to_vec()]);

    zsend(&xsub, &[b"\x00topic"], "cancel");
    assert_eq!(us.next_event("cancel"), Event::Cancel(b(b"topic")));
}

#[test]
fn libzmq_xsub_to_our_pub() {
    libzmq_xsub_to_our(SocketType::Pub);
}

#[test]
fn libzmq_xsub_to_our_xpub() {
    libzmq_xsub_to_our(SocketType::XPub);
}

// ---- PUSH / PULL ---------------------------------------------------------

#[test]
fn libzmq_push_to_our_pull() {
    let ctx = zmq::Context::new();
    let push = zsocket(&ctx, zmq::PUSH);
    let addr = zbind(&push);
    let mut us = Driver::connect("our PULL", addr, Config::new(SocketType::Pull));
    assert_eq!(us.handshake().socket_type, SocketType::Push);

    let msg = multipart(1);
    zsend(&push, &as_slices(&msg), "multipart");
    assert_eq!(us.expect_message("multipart"), msg);
    zsend(&push, &[b"single"], "single");
    assert_eq!(us.expect_message("single"), vec![b(b"single")]);

    for i in 0..BURST {
        push.send(burst_message(i), 0).expect("burst send");
    }
    for i in 0..BURST {
        assert_eq!(
            us.expect_message("burst message"),
            vec![Bytes::from(burst_message(i))]
        );
    }
}

#[test]
fn our_push_to_libzmq_pull() {
    let ctx = zmq::Context::new();
    let pull = zsocket(&ctx, zmq::PULL);
    let addr = zbind(&pull);
    let mut config = Config::new(SocketType::Push);
    config.metadata.push("X-Fabriq", "interop").unwrap();
    let mut us = Driver::connect("our PUSH", addr, config);
    assert_eq!(us.handshake().socket_type, SocketType::Pull);

    let msg = multipart(2);
    us.send(&msg);
    assert_frames(&zrecv(&pull, "multipart"), &msg, "libzmq PULL");

    // libzmq parsed our READY: its metadata is on every message.
    us.send(&[b(b"single")]);
    let mut single = pull
        .recv_msg(0)
        .unwrap_or_else(|e| panic!("libzmq: no single message: {e}"));
    assert_eq!(&single[..], b"single");
    assert_eq!(single.gets("Socket-Type"), Some("PUSH"));
    assert_eq!(single.gets("X-Fabriq"), Some("interop"));

    // All queued, then written together.
    for i in 0..BURST {
        us.conn.send(&[Part::from(burst_message(i))]).unwrap();
    }
    us.flush();
    for i in 0..BURST {
        assert_eq!(zrecv(&pull, "burst message"), vec![burst_message(i)]);
    }
}

/// libzmq connects to us: its greeting arrives in stages to an accepted
/// stream.
#[test]
fn libzmq_push_connects_to_our_pull() {
    let ctx = zmq::Context::new();
    let push = zsocket(&ctx, zmq::PUSH);
    let listener = zconnect_to_listener(&push);
    let mut us = Driver::accept(
        "our PULL (listening)",
        listener,
        Config::new(SocketType::Pull),
    );
    let peer = us.handshake();
    assert_eq!(peer.socket_type, SocketType::Push);
    assert!(peer.identity.is_empty());

    let msg = multipart(3);
    zsend(&push, &as_slices(&msg), "multipart");
    assert_eq!(us.expect_message("multipart"), msg);
}

// ---- REQ / REP -----------------------------------------------------------

#[test]
fn libzmq_req_to_our_rep() {
    let ctx = zmq::Context::new();
    let req = zsocket(&ctx, zmq::REQ);
    req.set_identity(b"zreq").unwrap();
    let addr = zbind(&req);
    let mut us = Driver::connect("our REP", addr, Config::new(SocketType::Rep));
    let peer = us.handshake();
    assert_eq!(peer.socket_type, SocketType::Req);
    assert_eq!(peer.identity, b(b"zreq"));

    for i in 0..3 {
        let body = format!("request {i}");
        zsend(&req, &[body.as_bytes()], "request");
        let got = us.expect_message("request");
        assert_eq!(got, vec![Bytes::new(), Bytes::from(body)]);
        let reply = format!("reply {i}");
        us.send(&[Bytes::new(), Bytes::from(reply.clone())]);
        assert_eq!(zrecv(&req, "reply"), vec![reply.into_bytes()]);
    }
}

#[test]
fn libzmq_rep_to_our_req() {
    let ctx = zmq::Context::new();
    let rep = zsocket(&ctx, zmq::REP);
    let addr = zbind(&rep);
    let mut config = Config::new(SocketType::Req);
    config.identity = b(b"fabriq-req");
    let mut us = Driver::connect("our REQ", addr, config);
    let peer = us.handshake();
    assert_eq!(peer.socket_type, SocketType::Rep);
    assert!(peer.identity.is_empty(), "REP sends no identity");

    for i in 0..3 {
        let body = format!("request {i}");
        us.send(&[Bytes::new(), Bytes::from(body.clone())]);
        assert_eq!(zrecv(&rep, "request"), vec![body.into_bytes()]);
        let reply = format!("reply {i}");
        zsend(&rep, &[reply.as_bytes()], "reply");
        assert_eq!(
            us.expect_message("reply"),
            vec![Bytes::new(), Bytes::from(reply)]
        );
    }
}

/// Our REQ with a routing id to a libzmq ROUTER: the envelope is our
/// identity, then the empty delimiter.
#[test]
fn our_req_to_libzmq_router() {
    let ctx = zmq::Context::new();
    let router = zsocket(&ctx, zmq::ROUTER);
    router.set_router_mandatory(true).unwrap();
    let addr = zbind(&router);
    let mut config = Config::new(SocketType::Req);
    config.identity = b(b"fabriq-req");
    let mut us = Driver::connect("our REQ", addr, config);
    let peer = us.handshake();
    assert_eq!(peer.socket_type, SocketType::Router);
    assert!(
        peer.identity.is_empty(),
        "this ROUTER has no routing id set"
    );

    us.send(&[Bytes::new(), b(b"request")]);
    assert_eq!(
        zrecv(&router, "request"),
        vec![b"fabriq-req".to_vec(), Vec::new(), b"request".to_vec()]
    );
    zsend(&router, &[b"fabriq-req", b"", b"reply"], "reply");
    assert_eq!(us.expect_message("reply"), vec![Bytes::new(), b(b"reply")]);
}

// ---- DEALER / ROUTER -----------------------------------------------------

/// libzmq ROUTER, our DEALER with a routing id: the ROUTER must see our
/// identity as the first frame.
#[test]
fn libzmq_router_to_our_dealer() {
    let ctx = zmq::Context::new();
    let router = zsocket(&ctx, zmq::ROUTER);
    router.set_identity(b"zrouter").unwrap();
    router.set_router_mandatory(true).unwrap();
    let addr = zbind(&router);
    let mut config = Config::new(SocketType::Dealer);
    config.identity = b(b"fabriq-dealer");
    let mut us = Driver::connect("our DEALER", addr, config);
    let peer = us.handshake();
    assert_eq!(peer.socket_type, SocketType::Router);
    assert_eq!(peer.identity, b(b"zrouter"));

    let msg = multipart(4);
    us.send(&msg);
    let got = zrecv(&router, "multipart");
    assert_eq!(got[0], b"fabriq-dealer", "ROUTER's routing frame");
    assert_frames(&got[1..], &msg, "libzmq ROUTER");

    let reply = multipart(5);
    let mut frames: Vec<&[u8]> = vec![b"fabriq-dealer"];
    frames.extend(as_slices(&reply));
    zsend(&router, &frames, "reply routed by our identity");
    assert_eq!(us.expect_message("reply"), reply);
}

/// libzmq DEALER connects to our listening ROUTER.
#[test]
fn libzmq_dealer_connects_to_our_router() {
    let ctx = zmq::Context::new();
    let dealer = zsocket(&ctx, zmq::DEALER);
    dealer.set_identity(b"zdealer").unwrap();
    let listener = zconnect_to_listener(&dealer);
    let mut config = Config::new(SocketType::Router);
    config.identity = b(b"fabriq-router");
    let mut us = Driver::accept("our ROUTER (listening)", listener, config);
    let peer = us.handshake();
    assert_eq!(peer.socket_type, SocketType::Dealer);
    assert_eq!(peer.identity, b(b"zdealer"));

    let msg = multipart(6);
    zsend(&dealer, &as_slices(&msg), "multipart");
    assert_eq!(us.expect_message("multipart"), msg);

    let reply = multipart(7);
    us.send(&reply);
    assert_frames(&zrecv(&dealer, "reply"), &reply, "libzmq DEALER");
}

#[test]
fn libzmq_dealer_to_our_dealer() {
    let ctx = zmq::Context::new();
    let dealer = zsocket(&ctx, zmq::DEALER);
    dealer.set_identity(b"zdealer").unwrap();
    let addr = zbind(&dealer);
    let mut us = Driver::connect("our DEALER", addr, Config::new(SocketType::Dealer));
    let peer = us.handshake();
    assert_eq!(peer.socket_type, SocketType::Dealer);
    assert_eq!(peer.identity, b(b"zdealer"));

    let msg = multipart(8);
    us.send(&msg);
    assert_frames(&zrecv(&dealer, "multipart"), &msg, "libzmq DEALER");
    zsend(&dealer, &as_slices(&msg), "multipart");
    assert_eq!(us.expect_message("multipart"), msg);
}

// ---- heartbeats ----------------------------------------------------------

/// libzmq PINGs us every 100 ms and drops the connection after 300 ms
/// without traffic: our automatic PONGs must keep it alive.
#[test]
fn libzmq_pings_and_we_pong() {
    let ctx = zmq::Context::new();
    let dealer = zsocket(&ctx, zmq::DEALER);
    dealer.set_heartbeat_ivl(100).unwrap();
    dealer.set_heartbeat_timeout(300).unwrap();
    dealer.set_heartbeat_ttl(500).unwrap();
    let listener = zconnect_to_listener(&dealer);
    let mut us = Driver::accept(
        "our DEALER (libzmq heartbeats)",
        listener,
        Config::new(SocketType::Dealer),
    );
    us.handshake();

    let events = us.run_for(Duration::from_secs(1));
    assert!(events.is_empty(), "unexpected events {events:?}");
    assert!(us.conn.is_ready());

    let received = commands_in(&us.rx_log);
    let sent = commands_in(&us.tx_log);
    let pings: Vec<_> = received
        .iter()
        .filter_map(|c| match c {
            Command::Ping { ttl, context } => Some((*ttl, context.clone())),
            _ => None,
        })
        .collect();
    let pongs: Vec<_> = sent
        .iter()
        .filter_map(|c| match c {
            Command::Pong { context } => Some(context.clone()),
            _ => None,
        })
        .collect();
    assert!(
        pings.len() >= 5,
        "expected a PING every 100 ms for 1 s, got {}",
        pings.len()
    );
    for (ttl, _) in &pings {
        assert_eq!(*ttl, 5, "libzmq's PING TTL is 500 ms in deciseconds");
    }
    assert_eq!(
        pongs,
        pings.iter().map(|(_, ctx)| ctx.clone()).collect::<Vec<_>>(),
        "one PONG, echoing the context, per PING"
    );

    // Still the same connection, in both directions.
    us.send(&[b(b"after heartbeats")]);
    assert_eq!(
        zrecv(&dealer, "message after heartbeats"),
        vec![b"after heartbeats".to_vec()]
    );
    zsend(&dealer, &[b"back"], "message after heartbeats");
    assert_eq!(
        us.expect_message("message after heartbeats"),
        vec![b(b"back")]
    );
}

/// We PING libzmq every 50 ms and give up after 200 ms without traffic;
/// libzmq's PONGs keep the connection alive.
#[test]
fn we_ping_and_libzmq_pongs() {
    let ctx = zmq::Context::new();
    let dealer = zsocket(&ctx, zmq::DEALER);
    let addr = zbind(&dealer);
    let mut config = Config::new(SocketType::Dealer);
    config.heartbeat_ivl = Some(Duration::from_millis(50));
    config.heartbeat_timeout = Some(Duration::from_millis(200));
    config.heartbeat_ttl = Some(Duration::from_millis(1000));
    let mut us = Driver::connect("our DEALER (our heartbeats)", addr, config);
    us.handshake();
    assert!(
        us.conn.poll_timeout().is_some(),
        "a heartbeat timer after the handshake"
    );

    let events = us.run_for(Duration::from_secs(1));
    assert!(events.is_empty(), "unexpected events {events:?}");
    assert!(us.conn.is_ready());

    let sent = commands_in(&us.tx_log);
    let received = commands_in(&us.rx_log);
    let pings: Vec<_> = sent
        .iter()
        .filter_map(|c| match c {
            Command::Ping { ttl, .. } => Some(*ttl),
            _ => None,
        })
        .collect();
    let pongs = received
        .iter()
        .filter(|c| matches!(c, Command::Pong { .. }))
        .count();
    assert!(
        pings.len() >= 10,
        "expected a PING every 50 ms for 1 s, sent {}",
        pings.len()
    );
    assert!(
        pings.iter().all(|&ttl| ttl == 10),
        "TTL 1 s = 10 ds: {pings:?}"
    );
    // The last PING or two may still be in flight.
    assert!(
        pongs + 2 >= pings.len(),
        "libzmq answers every PING: {} PINGs, {pongs} PONGs",
        pings.len()
    );

    us.send(&[b(b"after heartbeats")]);
    assert_eq!(
        zrecv(&dealer, "message after heartbeats"),
        vec![b"after heartbeats".to_vec()]
    );
    zsend(&dealer, &[b"back"], "message after heartbeats");
    assert_eq!(
        us.expect_message("message after heartbeats"),
        vec![b(b"back")]
    );
}

/// libzmq applies the TTL of our PINGs (in deciseconds): once we fall
/// silent it closes the connection about 300 ms after our last PING.
#[test]
fn libzmq_enforces_our_ping_ttl() {
    let ctx = zmq::Context::new();
    let dealer = zsocket(&ctx, zmq::DEALER);
    let addr = zbind(&dealer);
    let mut config = Config::new(SocketType::Dealer);
    config.heartbeat_ivl = Some(Duration::from_millis(50));
    config.heartbeat_ttl = Some(Duration::from_millis(300));
    let mut us = Driver::connect("our DEALER (TTL 300 ms)", addr, config);
    us.handshake();

    // PINGs every 50 ms keep the connection up for longer than the TTL.
    us.run_for(Duration::from_millis(500));
    let pings: Vec<u16> = commands_in(&us.tx_log)
        .iter()
        .filter_map(|c| match c {
            Command::Ping { ttl, .. } => Some(*ttl),
            _ => None,
        })
        .collect();
    assert!(pings.len() >= 5, "sent {} PINGs", pings.len());
    assert!(
        pings.iter().all(|&ttl| ttl == 3),
        "TTL 300 ms = 3 ds: {pings:?}"
    );

    // Now fall silent: read only, run no timers, write nothing.
    let silent = Instant::now();
    let deadline = silent + WAIT;
    loop {
        match us.read_once(deadline) {
            Ok(true) => {}
            Ok(false) => panic!("libzmq kept the connection beyond {WAIT:?} of silence"),
            Err(Failure::Closed) => break,
            Err(f) => panic!("unexpected failure {f:?}"),
        }
    }
    let after = silent.elapsed();
    assert!(
        after >= Duration::from_millis(200) && after < Duration::from_secs(2),
        "libzmq closed {after:?} after our last PING (TTL 300 ms)"
    );
}

// ---- incompatible types --------------------------------------------------

#[test]
fn libzmq_push_to_our_pub_is_refused() {
    let ctx = zmq::Context::new();
    let push = zsocket(&ctx, zmq::PUSH);
    let listener = zconnect_to_listener(&push);
    let mut us = Driver::accept(
        "our PUB (listening)",
        listener,
        Config::new(SocketType::Pub),
    );
    match us.poll_until(Instant::now() + WAIT) {
        Err(Failure::Protocol(e)) => assert_eq!(
            e,
            ProtocolError::IncompatibleSocketType {
                ours: SocketType::Pub,
                theirs: SocketType::Push,
            }
        ),
        other => panic!("expected IncompatibleSocketType, got {other:?}"),
    }
    assert!(!us.conn.is_ready());
    assert!(us.conn.peer().is_none());
    // The connection stays failed.
    assert!(matches!(
        us.conn.poll_event(),
        Err(ProtocolError::IncompatibleSocketType { .. })
    ));
}
