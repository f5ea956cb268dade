//! `fabric_encrypt`: the fabric data path sealed page by page under keys
//! sent inside CURVE on the control connection (docs/fabric.md,
//! "Encryption of the data path"). Real libfabric tcp and shm providers,
//! two contexts (two I/O threads, a fabric endpoint each), loopback.

use std::process::Command;
use std::time::{Duration, Instant};

use fabriq as zmq;

const TIMEOUT_MS: i32 = 10_000;

fn socket(ctx: &zmq::Context, kind: zmq::SocketType) -> zmq::Socket {
    let s = ctx.socket(kind).unwrap();
    s.set_rcvtimeo(TIMEOUT_MS).unwrap();
    s.set_sndtimeo(TIMEOUT_MS).unwrap();
    s.set_linger(1000).unwrap();
    s
}

/// A CURVE server and a CURVE client of it, both with `fabric_encrypt`
/// as given.
fn curve_pair(
    ctx: &zmq::Context,
    other: &zmq::Context,
    server_kind: zmq::SocketType,
    client_kind: zmq::SocketType,
    encrypt: (bool, bool),
) -> (zmq::Socket, zmq::Socket) {
    let server_keys = zmq::CurveKeyPair::new().unwrap();
    let client_keys = zmq::CurveKeyPair::new().unwrap();
    let server = socket(ctx, server_kind);
    server.set_curve_server(true).unwrap();
    server.set_curve_secretkey(&server_keys.secret_key).unwrap();
    server.set_fabric_encrypt(encrypt.0).unwrap();
    let client = socket(other, client_kind);
    client.set_curve_serverkey(&server_keys.public_key).unwrap();
    client.set_curve_publickey(&client_keys.public_key).unwrap();
    client.set_curve_secretkey(&client_keys.secret_key).unwrap();
    client.set_fabric_encrypt(encrypt.1).unwrap();
    (server, client)
}

fn join(provider: &str, a: &zmq::Socket, b: &zmq::Socket) -> String {
    a.bind(&format!("ofi+{provider}://127.0.0.1:*")).unwrap();
    let endpoint = a.get_last_endpoint().unwrap().unwrap();
    b.connect(&endpoint).unwrap();
    endpoint
}

fn body(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i * 31 + j) as u8).collect()
}

/// Empty to several pages (64 KiB by default): frames that straddle
/// pages, one of exactly a page, and frames far above a page, which
/// without encryption would go by rendezvous (RMA read).
const SIZES: [usize; 10] = [
    0,
    1,
    64,
    1000,
    1024,
    65_536,
    70_000,
    200_000,
    1 << 20,
    3 << 20,
];

/// PUSH (CURVE client) to PULL (CURVE server), both encrypting: every
/// message whole and in order, the sender on its own thread.
fn push_pull(provider: &str, count: usize) {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let (pull, push) = curve_pair(&ctx, &other, zmq::PULL, zmq::PUSH, (true, true));
    join(provider, &pull, &push);
    let msgs: Vec<Vec<u8>> = (0..count)
        .map(|i| body(i, SIZES[i % SIZES.len()]))
        .collect();
    let sender = {
        let msgs = msgs.clone();
        std::thread::spawn(move || {
            for m in &msgs {
                push.send(&m[..], 0).unwrap();
            }
            push
        })
    };
    for (i, want) in msgs.iter().enumerate() {
        let got = pull
            .recv_bytes(0)
            .unwrap_or_else(|e| panic!("{provider}: message {i}: {e:?}"));
        assert!(got == *want, "{provider}: message {i} differs");
    }
    drop(sender.join().unwrap());
}

#[test]
fn encrypted_push_pull_over_ofi_tcp_keeps_every_message_whole_and_in_order() {
    push_pull("tcp", 200);
}

#[test]
fn encrypted_push_pull_over_ofi_shm_keeps_every_message_whole_and_in_order() {
    push_pull("shm", 200);
}

/// Many small messages, coalesced into sealed pages (thousands of pages:
/// the counters stay in step).
fn many_small(provider: &str) {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let (pull, push) = curve_pair(&ctx, &other, zmq::PULL, zmq::PUSH, (true, true));
    join(provider, &pull, &push);
    const N: usize = 50_000;
    let sender = std::thread::spawn(move || {
        for i in 0..N {
            push.send(&body(i, 64)[..], 0).unwrap();
        }
        push
    });
    for i in 0..N {
        assert_eq!(pull.recv_bytes(0).unwrap(), body(i, 64), "{provider}: {i}");
    }
    drop(sender.join().unwrap());
}

#[test]
fn encrypted_many_small_messages_over_ofi_tcp() {
    many_small("tcp");
}

#[test]
fn encrypted_many_small_messages_over_ofi_shm() {
    many_small("shm");
}

/// PUB (CURVE server) to SUB (client), both encrypting: the subscription
/// goes the other way in sealed pages too, and filtering still holds.
fn pub_sub(provider: &str) {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let (publisher, sub) = curve_pair(&ctx, &other, zmq::PUB, zmq::SUB, (true, true));
    sub.set_subscribe(b"a").unwrap();
    join(provider, &publisher, &sub);
    let deadline = Instant::now() + Duration::from_secs(10);
    sub.set_rcvtimeo(50).unwrap();
    loop {
        publisher.send("a-probe", 0).unwrap();
        if sub.recv_bytes(0).is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "the subscription never arrived");
    }
    while sub.recv_bytes(0).is_ok() {}
    sub.set_rcvtimeo(TIMEOUT_MS).unwrap();
    for i in 0..200 {
        let mut large = b"a".to_vec();
        large.extend(body(i, SIZES[i % SIZES.len()]));
        publisher.send(format!("b{i}").as_str(), 0).unwrap();
        publisher.send(&large[..], 0).unwrap();
    }
    for i in 0..200 {
        let mut want = b"a".to_vec();
        want.extend(body(i, SIZES[i % SIZES.len()]));
        assert!(sub.recv_bytes(0).unwrap() == want, "{provider}: {i}");
    }
}

#[test]
fn encrypted_pub_sub_over_ofi_tcp_filters_and_delivers() {
    pub_sub("tcp");
}

#[test]
fn encrypted_pub_sub_over_ofi_shm_filters_and_delivers() {
    pub_sub("shm");
}

/// The option without CURVE is refused at bind and connect, saying why.
#[test]
fn fabric_encrypt_without_curve_is_refused_saying_why() {
    let ctx = zmq::Context::new();
    for plain in [false, true] {
        let s = socket(&ctx, zmq::PUSH);
        if plain {
            s.set_plain_username(Some("u")).unwrap();
            s.set_plain_password(Some("p")).unwrap();
        }
        s.set_fabric_encrypt(true).unwrap();
        for result in [
            s.bind("ofi+tcp://127.0.0.1:*"),
            s.connect("ofi+shm://127.0.0.1:5999"),
        ] {
            assert_eq!(result, Err(zmq::Error::EINVAL), "plain: {plain}");
            let why = zmq::last_error_detail().unwrap();
            assert!(
                why.contains("fabric_encrypt needs CURVE") && why.contains("page keys"),
                "{why}"
            );
        }
        // Without the option the same socket binds.
        s.set_fabric_encrypt(false).unwrap();
        s.bind("ofi+tcp://127.0.0.1:*").unwrap();
    }
}

struct Monitor(zmq::Socket);

fn monitor(ctx: &zmq::Context, s: &zmq::Socket, name: &str) -> Monitor {
    let ep = format!("inproc://fabenc-mon-{name}");
    s.monitor(&ep, zmq::SocketEvent::ALL as i32).unwrap();
    let pair = ctx.socket(zmq::PAIR).unwrap();
    pair.connect(&ep).unwrap();
    Monitor(pair)
}

impl Monitor {
    /// The events seen until `want` (or the time limit, a failure).
    fn until(&self, want: u16, within: Duration) -> Vec<u16> {
        let until = Instant::now() + within;
        let mut seen = Vec::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            self.0.set_rcvtimeo(left.as_millis().max(1) as i32).unwrap();
            let head = self
                .0
                .recv_bytes(0)
                .unwrap_or_else(|_| panic!("no event {want:#x} in time; seen {seen:#x?}"));
            let _endpoint = self.0.recv_bytes(0).unwrap();
            let ev = u16::from_le_bytes([head[0], head[1]]);
            seen.push(ev);
            if ev == want {
                return seen;
            }
        }
    }
}

/// One side encrypting, the other not: refused by both before any page
/// moves (no handshake succeeds, both disconnect, nothing is delivered).
fn mismatch(provider: &str, encrypt: (bool, bool), name: &str) {
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let (pull, push) = curve_pair(&ctx, &other, zmq::PULL, zmq::PUSH, encrypt);
    let server_events = monitor(&ctx, &pull, &format!("{name}-server"));
    let client_events = monitor(&other, &push, &format!("{name}-client"));
    join(provider, &pull, &push);
    push.set_sndtimeo(0).unwrap();
    let _ = push.send("must not arrive", 0);
    let disconnected = zmq::SocketEvent::DISCONNECTED as u16;
    let succeeded = zmq::SocketEvent::HANDSHAKE_SUCCEEDED as u16;
    for (side, events) in [("server", &server_events), ("client", &client_events)] {
        let seen = events.until(disconnected, Duration::from_secs(10));
        assert!(
            !seen.contains(&succeeded),
            "{name} {side}: a handshake succeeded: {seen:#x?}"
        );
    }
    pull.set_rcvtimeo(300).unwrap();
    assert_eq!(pull.recv_bytes(0), Err(zmq::Error::EAGAIN), "{name}");
}

#[test]
fn a_client_encrypting_and_a_server_not_are_refused() {
    mismatch("tcp", (false, true), "tcp-client-only");
    mismatch("shm", (false, true), "shm-client-only");
}

#[test]
fn a_server_encrypting_and_a_client_not_are_refused() {
    mismatch("tcp", (true, false), "tcp-server-only");
    mismatch("shm", (true, false), "shm-server-only");
}

/// The text the wire check looks for, repeated through each payload.
const MARKER: &[u8] = b"FABRIQ-CLEARTEXT-MARKER-7f3a9c";

/// The child of [`payload_bytes_are_not_on_the_wire_when_encrypting`]:
/// sends payloads full of [`MARKER`] over ofi+tcp (small ones in pages,
/// large ones that would otherwise go by rendezvous). Does nothing when
/// not run as that child.
#[test]
fn wire_child() {
    let Ok(mode) = std::env::var("FABRIQ_TEST_WIRE_CHILD") else {
        return;
    };
    let encrypt = mode == "encrypt";
    let (ctx, other) = (zmq::Context::new(), zmq::Context::new());
    let (pull, push) = curve_pair(&ctx, &other, zmq::PULL, zmq::PUSH, (encrypt, encrypt));
    join("tcp", &pull, &push);
    let payload = |n: usize| MARKER.repeat(n);
    let msgs: Vec<Vec<u8>> = (0..40)
        .map(|i| payload(if i % 10 == 9 { 10_000 } else { 20 }))
        .collect();
    for m in &msgs {
        push.send(&m[..], 0).unwrap();
    }
    for m in &msgs {
        assert!(pull.recv_bytes(0).unwrap() == *m);
    }
    println!("wire child: {} messages delivered", msgs.len());
}

/// Runs [`wire_child`] under strace, recording every byte the process
/// writes to any descriptor (ofi+tcp's fabric traffic is TCP on
/// loopback), and looks for the marker. Without encryption it must be
/// there (the capture works); with it, nowhere.
#[test]
fn payload_bytes_are_not_on_the_wire_when_encrypting() {
    let strace = Command::new("strace").arg("-V").output();
    assert!(
        strace.is_ok_and(|o| o.status.success()),
        "this test needs strace (apt-get install strace)"
    );
    let exe = std::env::current_exe().unwrap();
    let hex: String = MARKER.iter().map(|b| format!("\\x{b:02x}")).collect();
    for mode in ["plain", "encrypt"] {
        let trace =
            std::env::temp_dir().join(format!("fabriq-wire-{}-{mode}.trace", std::process::id()));
        let mut child = Command::new("strace")
            .args(["-f", "-qq", "-xx", "-s", "4000000", "-o"])
            .arg(&trace)
            .args([
                "-e",
                "trace=write,writev,pwrite64,pwritev,send,sendto,sendmsg,sendmmsg",
            ])
            .arg(&exe)
            .args([
                "--exact",
                "wire_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("FABRIQ_TEST_WIRE_CHILD", mode)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{mode}: the traced child did not finish in time");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            status.success() && stdout.contains("40 messages delivered"),
            "{mode}: child failed: {stdout}"
        );
        let text = std::fs::read_to_string(&trace).unwrap();
        let _ = std::fs::remove_file(&trace);
        // The capture saw the fabric traffic: large writes, about the
        // size of what was sent, in either mode.
        assert!(text.len() > 4 * 40 * 10_000, "{mode}: a short trace");
        let found = text.matches(&hex).count();
        match mode {
            "plain" => assert!(found > 100, "plain: the marker was not captured ({found})"),
            _ => assert_eq!(found, 0, "encrypted: payload bytes in clear on the wire"),
        }
    }
}
