//! fabriq (in this process) against pyzmq (libzmq, in a Python process)
//! over tcp: PUB/SUB, PUSH/PULL, REQ/REP and DEALER/ROUTER, with Python
//! as sender and as receiver, and each side binding in turn. The Python
//! peer is `compat-tests/python/peer.py`.
//!
//! Python comes from `$FABRIQ_PYTHON`, else `target/pyenv/bin/python`
//! (made by `scripts/python-env`). Without it these tests fail, saying
//! so: they never pass silently without their libzmq peer.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// Messages in each stream.
const COUNT: usize = 20;
/// Longest wait for any one thing the peer should do.
const WAIT: Duration = Duration::from_secs(15);

fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let advice = "Run scripts/python-env (it creates target/pyenv with pyzmq), \
                      or set FABRIQ_PYTHON to a Python that has pyzmq.";
        let path = match std::env::var_os("FABRIQ_PYTHON").filter(|v| !v.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pyenv/bin/python"),
        };
        assert!(
            path.exists(),
            "no Python for the pyzmq tests: {} does not exist. {advice}",
            path.display()
        );
        let check = Command::new(&path)
            .args(["-c", "import zmq"])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}. {advice}", path.display()));
        assert!(
            check.status.success(),
            "{} cannot import zmq: {}. {advice}",
            path.display(),
            String::from_utf8_lossy(&check.stderr)
        );
        path
    })
}

/// A running peer.py. Killed when dropped (so a failing test leaves no
/// process behind).
struct Peer {
    what: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Peer {
    /// Starts `peer.py MODE TYPE bind|connect ENDPOINT COUNT [IDENTITY]`.
    fn start(
        mode: &str,
        socket_type: &str,
        endpoint: Option<&str>,
        identity: Option<&str>,
    ) -> Peer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/peer.py");
        let mut cmd = Command::new(python());
        cmd.arg(&script)
            .arg(mode)
            .arg(socket_type)
            .arg(if endpoint.is_some() {
                "connect"
            } else {
                "bind"
            })
            .arg(endpoint.unwrap_or("-"))
            .arg(COUNT.to_string());
        if let Some(id) = identity {
            cmd.arg(id);
        }
        cmd.env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", script.display()));
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout");
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().expect("stderr");
        let sink = stderr.clone();
        thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            sink.lock().unwrap().push_str(&text);
        });
        Peer {
            what: format!("python {mode} {socket_type}"),
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
        }
    }

    fn stderr(&self) -> String {
        // Give the reader a moment to collect what a dying process wrote.
        thread::sleep(Duration::from_millis(100));
        self.stderr.lock().unwrap().clone()
    }

    /// The next stdout line within `wait`, if any.
    fn line_within(&self, wait: Duration) -> Option<String> {
        self.lines.recv_timeout(wait).ok()
    }

    /// The next stdout line; fails the test (with the peer's stderr) if
    /// none comes within [`WAIT`].
    fn line(&self) -> String {
        self.line_within(WAIT).unwrap_or_else(|| {
            panic!(
                "{}: no output within {} s; stderr: {}",
                self.what,
                WAIT.as_secs(),
                self.stderr()
            )
        })
    }

    /// The endpoint a binding peer printed.
    fn endpoint(&self) -> String {
        let line = self.line();
        line.strip_prefix("ENDPOINT ")
            .unwrap_or_else(|| panic!("{}: expected ENDPOINT, got {line:?}", self.what))
            .to_string()
    }

    fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write to the peer");
        stdin.flush().expect("flush to the peer");
    }

    /// Closes stdin and waits (bounded) for a successful exit.
    fn finish(mut self) {
        drop(self.stdin.take());
        let end = Instant::now() + WAIT;
        loop {
            match self.child.try_wait().expect("wait for the peer") {
                Some(status) => {
                    assert!(
                        status.success(),
                        "{} exited with {status}; stderr: {}",
                        self.what,
                        self.stderr()
                    );
                    return;
                }
                None if Instant::now() > end => {
                    panic!("{} did not exit within {} s", self.what, WAIT.as_secs())
                }
                None => thread::sleep(Duration::from_millis(10)),
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ---- the standard stream, as peer.py makes and describes it ---------------

fn big_frame(i: usize) -> Vec<u8> {
    let block: Vec<u8> = (0..256).map(|k| ((k * 7 + i) & 0xff) as u8).collect();
    block.repeat((1 << 20) / 256)
}

/// Message `i`: topic "a." or "b." by parity, every 5th multipart with an
/// empty frame, message 7 with a 1 MiB frame.
fn message(i: usize) -> Vec<Vec<u8>> {
    let head = format!("{}.{i}", if i % 2 == 0 { "a" } else { "b" }).into_bytes();
    if i == 7 {
        vec![head, big_frame(i)]
    } else if i % 5 == 0 {
        vec![head, vec![], format!("part-{i}").into_bytes()]
    } else {
        vec![head]
    }
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}

fn describe(frame: &[u8]) -> String {
    if frame.len() <= 64 {
        if let Ok(text) = std::str::from_utf8(frame) {
            return text.to_string();
        }
    }
    format!("#{}:{}", frame.len(), adler32(frame))
}

/// The line peer.py prints for a message.
fn shown(frames: &[Vec<u8>]) -> String {
    let parts: Vec<String> = frames.iter().map(|f| describe(f)).collect();
    format!("MSG {}", parts.join(" | "))
}

// ---- fabriq's side ----------------------------------------------------------

fn fabriq_socket(ctx: &fabriq::Context, kind: fabriq::SocketType) -> fabriq::Socket {
    let s = ctx.socket(kind).unwrap();
    s.set_rcvtimeo(WAIT.as_millis() as i32).unwrap();
    s.set_sndtimeo(WAIT.as_millis() as i32).unwrap();
    s.set_linger(5000).unwrap();
    s
}

/// Joins `s` and a peer: either the peer binds (started first, endpoint
/// read back) or fabriq binds and the peer connects.
fn join(
    s: &fabriq::Socket,
    python_binds: bool,
    mode: &str,
    socket_type: &str,
    identity: Option<&str>,
) -> Peer {
    if python_binds {
        let peer = Peer::start(mode, socket_type, None, identity);
        s.connect(&peer.endpoint()).unwrap();
        peer
    } else {
        s.bind("tcp://127.0.0.1:*").unwrap();
        let endpoint = s.get_last_endpoint().unwrap().unwrap();
        Peer::start(mode, socket_type, Some(&endpoint), identity)
    }
}

fn recv(s: &fabriq::Socket, what: &str) -> Vec<Vec<u8>> {
    s.recv_multipart(0)
        .unwrap_or_else(|e| panic!("fabriq: receiving {what}: {e}"))
}

// ---- PUB/SUB ------------------------------------------------------------------

#[test]
fn python_pub_to_fabriq_sub() {
    for python_binds in [true, false] {
        let ctx = fabriq::Context::new();
        let sub = fabriq_socket(&ctx, fabriq::SUB);
        for topic in ["a.", "SYNC", "END"] {
            sub.set_subscribe(topic.as_bytes()).unwrap();
        }
        let mut peer = join(&sub, python_binds, "produce", "PUB", None);
        assert_eq!(recv(&sub, "the first SYNC"), vec![b"SYNC".to_vec()]);
        peer.say("go");
        let mut got = Vec::new();
        loop {
            let m = recv(&sub, "the stream");
            if m == [b"END".to_vec()] {
                break;
            }
            if m != [b"SYNC".to_vec()] {
                got.push(m);
            }
        }
        let want: Vec<Vec<Vec<u8>>> = (0..COUNT).filter(|i| i % 2 == 0).map(message).collect();
        assert_eq!(got.len(), want.len(), "python binds: {python_binds}");
        assert!(got == want, "python binds: {python_binds}: messages differ");
        peer.finish();
    }
}

#[test]
fn fabriq_pub_to_python_sub() {
    for python_binds in [true, false] {
        let ctx = fabriq::Context::new();
        let publisher = fabriq_socket(&ctx, fabriq::PUB);
        let peer = join(&publisher, python_binds, "consume", "SUB", None);
        let end = Instant::now() + WAIT;
        loop {
            publisher.send("SYNC", 0).unwrap();
            match peer.line_within(Duration::from_millis(10)) {
                Some(line) if line == "READY" => break,
                Some(line) => panic!("python SUB: expected READY, got {line:?}"),
                None => assert!(Instant::now() < end, "python SUB never got a SYNC"),
            }
        }
        for i in 0..COUNT {
            publisher.send_multipart(message(i), 0).unwrap();
        }
        publisher.send("END", 0).unwrap();
        for i in (0..COUNT).filter(|i| i % 2 == 0) {
            assert_eq!(
                peer.line(),
                shown(&message(i)),
                "python binds: {python_binds}"
            );
        }
        assert_eq!(peer.line(), "MSG END");
        peer.finish();
    }
}

// ---- PUSH/PULL ------------------------------------------------------------------

#[test]
fn python_push_to_fabriq_pull() {
    for python_binds in [true, false] {
        let ctx = fabriq::Context::new();
        let pull = fabriq_socket(&ctx, fabriq::PULL);
        let peer = join(&pull, python_binds, "produce", "PUSH", None);
        for i in 0..COUNT {
            let m = recv(&pull, &format!("message {i}"));
            assert!(
                m == message(i),
                "python binds: {python_binds}: message {i} differs"
            );
        }
        assert_eq!(recv(&pull, "END"), vec![b"END".to_vec()]);
        peer.finish();
    }
}

#[test]
fn fabriq_push_to_python_pull() {
    for python_binds in [true, false] {
        let ctx = fabriq::Context::new();
        let push = fabriq_socket(&ctx, fabriq::PUSH);
        let peer = join(&push, python_binds, "consume", "PULL", None);
        for i in 0..COUNT {
            push.send_multipart(message(i), 0).unwrap();
        }
        push.send("END", 0).unwrap();
        for i in 0..COUNT {
            assert_eq!(
                peer.line(),
                shown(&message(i)),
                "python binds: {python_binds}"
            );
        }
        assert_eq!(peer.line(), "MSG END");
        peer.finish();
    }
}

// ---- REQ/REP ----------------------------------------------------------------------

#[test]
fn python_req_to_fabriq_rep() {
    for python_binds in [true, false] {
        let ctx = fabriq::Context::new();
        let rep = fabriq_socket(&ctx, fabriq::REP);
        let peer = join(&rep, python_binds, "req", "REQ", None);
        for i in 0..COUNT {
            let m = recv(&rep, &format!("request {i}"));
            assert!(
                m == message(i),
                "python binds: {python_binds}: request {i} differs"
            );
            let mut reply = vec![b"re".to_vec()];
            reply.extend(m);
            rep.send_multipart(&reply, 0).unwrap();
            assert_eq!(peer.line(), shown(&reply), "python binds: {python_binds}");
        }
        peer.finish();
    }
}

#[test]
fn fabriq_req_to_python_rep() {
    for python_binds in [true, false] {
        let ctx = fabriq::Context::new();
        let req = fabriq_socket(&ctx, fabriq::REQ);
        let peer = join(&req, python_binds, "rep", "REP", None);
        for i in 0..COUNT {
            req.send_multipart(message(i), 0).unwrap();
            let mut want = vec![b"re".to_vec()];
            want.extend(message(i));
            let got = recv(&req, &format!("reply {i}"));
            assert!(
                got == want,
                "python binds: {python_binds}: reply {i} differs"
            );
        }
        peer.finish();
    }
}

// ---- DEALER/ROUTER ----------------------------------------------------------------------

#[test]
fn python_dealer_to_fabriq_router() {
    for python_binds in [true, false] {
        let ctx = fabriq::Context::new();
        let router = fabriq_socket(&ctx, fabriq::ROUTER);
        let peer = join(&router, python_binds, "dealer", "DEALER", Some("py-dealer"));
        for i in 0..COUNT {
            let m = recv(&router, &format!("message {i}"));
            assert_eq!(m[0], b"py-dealer", "identity seen by the fabriq ROUTER");
            assert!(
                m[1..] == message(i),
                "python binds: {python_binds}: message {i} differs"
            );
            let mut reply = b"re:".to_vec();
            reply.extend_from_slice(&m[1]);
            router.send_multipart([m[0].clone(), reply], 0).unwrap();
        }
        for i in 0..COUNT {
            let head = describe(&message(i)[0]);
            assert_eq!(
                peer.line(),
                format!("MSG re:{head}"),
                "python binds: {python_binds}"
            );
        }
        peer.finish();
    }
}

#[test]
fn fabriq_dealer_to_python_router() {
    for python_binds in [true, false] {
        let ctx = fabriq::Context::new();
        let dealer = fabriq_socket(&ctx, fabriq::DEALER);
        dealer.set_identity(b"fq-dealer").unwrap();
        let peer = join(&dealer, python_binds, "router", "ROUTER", None);
        for i in 0..COUNT {
            dealer.send_multipart(message(i), 0).unwrap();
        }
        for i in 0..COUNT {
            let mut want = vec![b"fq-dealer".to_vec()];
            want.extend(message(i));
            assert_eq!(peer.line(), shown(&want), "python binds: {python_binds}");
        }
        for i in 0..COUNT {
            let mut want = b"re:".to_vec();
            want.extend_from_slice(&message(i)[0]);
            assert_eq!(recv(&dealer, &format!("reply {i}")), vec![want]);
        }
        peer.finish();
    }
}
