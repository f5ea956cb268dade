//! The `fabriq` CLI against libzmq (pyzmq) over tcp, each side binding in
//! turn. Python comes from `$FABRIQ_PYTHON` or `target/pyenv` (made by
//! `scripts/python-env`); without it these tests fail, saying so.

mod common;

use common::{fabriq, publish_until_received, py, Proc};

/// PUSH connecting to argv[1], sending argv[2:].
const PY_PUSH_CONNECT: &str = r#"
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PUSH)
s.linger = 5000
s.sndtimeo = 10000
s.connect(sys.argv[1])
for m in sys.argv[2:]:
    s.send_string(m)
s.close()
ctx.term()
"#;

/// PUSH binding a random port (printed), sending argv[1:].
const PY_PUSH_BIND: &str = r#"
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PUSH)
s.linger = 5000
s.sndtimeo = 10000
print(s.bind_to_random_port("tcp://127.0.0.1"), flush=True)
for m in sys.argv[1:]:
    s.send_string(m)
s.close()
ctx.term()
"#;

/// PULL binding a random port (printed), printing argv[1] messages as JSON
/// arrays of frames.
const PY_PULL_BIND: &str = r#"
import sys, json, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PULL)
s.rcvtimeo = 10000
s.linger = 0
print(s.bind_to_random_port("tcp://127.0.0.1"), flush=True)
for _ in range(int(sys.argv[1])):
    print(json.dumps([f.decode() for f in s.recv_multipart()]), flush=True)
"#;

/// PULL connecting to argv[1], printing argv[2] messages.
const PY_PULL_CONNECT: &str = r#"
import sys, json, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PULL)
s.rcvtimeo = 10000
s.linger = 0
s.connect(sys.argv[1])
for _ in range(int(sys.argv[2])):
    print(json.dumps([f.decode() for f in s.recv_multipart()]), flush=True)
"#;

/// REQ connecting to argv[1], sending argv[2:], printing each reply.
const PY_REQ_CONNECT: &str = r#"
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.REQ)
s.rcvtimeo = 10000
s.linger = 0
s.connect(sys.argv[1])
for m in sys.argv[2:]:
    s.send_string(m)
    print(s.recv_string(), flush=True)
"#;

/// REQ binding a random port (printed), sending argv[1:], printing replies.
const PY_REQ_BIND: &str = r#"
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.REQ)
s.rcvtimeo = 10000
s.sndtimeo = 10000
s.linger = 0
print(s.bind_to_random_port("tcp://127.0.0.1"), flush=True)
for m in sys.argv[1:]:
    s.send_string(m)
    print(s.recv_string(), flush=True)
"#;

/// REP binding a random port (printed), answering argv[1] requests with
/// the request in upper case.
const PY_REP_BIND: &str = r#"
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.REP)
s.rcvtimeo = 10000
s.linger = 1000
print(s.bind_to_random_port("tcp://127.0.0.1"), flush=True)
for _ in range(int(sys.argv[1])):
    s.send_string(s.recv_string().upper())
s.close()
ctx.term()
"#;

/// SUB (connect to argv[2] or bind when it is "bind") subscribed to
/// argv[1]; prints what arrives until "END" does.
const PY_SUB: &str = r#"
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.SUB)
s.rcvtimeo = 10000
s.linger = 0
s.setsockopt_string(zmq.SUBSCRIBE, sys.argv[1])
if sys.argv[2] == "bind":
    print(s.bind_to_random_port("tcp://127.0.0.1"), flush=True)
else:
    s.connect(sys.argv[2])
while True:
    m = s.recv_string()
    print(m, flush=True)
    if m.endswith("END"):
        break
"#;

/// PUB binding a random port (printed), publishing "a.N" and "b.N" every
/// 20 ms for at most 10 s.
const PY_PUB_BIND: &str = r#"
import time, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PUB)
s.linger = 0
print(s.bind_to_random_port("tcp://127.0.0.1"), flush=True)
for i in range(500):
    s.send_string("b.%d" % i)
    s.send_string("a.%d" % i)
    time.sleep(0.02)
"#;

fn tcp(port: &str) -> String {
    format!("tcp://127.0.0.1:{}", port.trim())
}

// ---- fabriq binds, pyzmq connects ------------------------------------

#[test]
fn pull_bind_prints_what_a_pyzmq_push_sent() {
    let pull = Proc::start(
        "fabriq pull",
        &mut fabriq(&["pull", "--bind", "tcp://127.0.0.1:*", "-n", "3"]),
    );
    let ep = pull.bound("");
    Proc::start(
        "pyzmq push",
        &mut py(PY_PUSH_CONNECT, &[&ep, "one", "two words", "three"]),
    )
    .success();
    let done = pull.success();
    assert_eq!(done.stdout, ["one", "two words", "three"]);
    assert!(done.err_text().contains("received 3 messages"), "{done:#?}");
}

#[test]
fn push_connect_lines_arrive_at_a_pyzmq_pull() {
    let pull = Proc::start("pyzmq pull", &mut py(PY_PULL_BIND, &["3"]));
    let ep = tcp(&pull.line());
    let mut push = Proc::start("fabriq push", &mut fabriq(&["push", "--connect", &ep]));
    for line in ["one", "two words", "three"] {
        push.send_line(line);
    }
    push.close_stdin();
    let done = push.success();
    assert!(done.err_text().contains("sent 3 messages"), "{done:#?}");
    assert_eq!(
        pull.success().stdout[1..],
        [r#"["one"]"#, r#"["two words"]"#, r#"["three"]"#]
    );
}

#[test]
fn a_pyzmq_req_gets_echoes_from_rep_bind() {
    let rep = Proc::start(
        "fabriq rep",
        &mut fabriq(&["rep", "--bind", "tcp://127.0.0.1:*", "-n", "2"]),
    );
    let ep = rep.bound("");
    let req = Proc::start(
        "pyzmq req",
        &mut py(PY_REQ_CONNECT, &[&ep, "ping 1", "ping 2"]),
    )
    .success();
    assert_eq!(req.stdout, ["ping 1", "ping 2"]);
    assert_eq!(rep.success().stdout, ["ping 1", "ping 2"]);
}

#[test]
fn a_pyzmq_sub_gets_only_matching_lines_from_pub_bind() {
    let mut publisher = Proc::start(
        "fabriq pub",
        &mut fabriq(&["pub", "--bind", "tcp://127.0.0.1:*"]),
    );
    let ep = publisher.bound("");
    let sub = Proc::start("pyzmq sub", &mut py(PY_SUB, &["a.", &ep]));
    let first = publish_until_received(
        |i| {
            publisher.send_line(&format!("b.{i}"));
            publisher.send_line(&format!("a.{i}"));
        },
        &sub,
    );
    assert!(first.starts_with("a."), "{first}");
    publisher.send_line("b.END");
    publisher.send_line("a.END");
    let received = sub.success().stdout;
    assert_eq!(received.last().map(String::as_str), Some("a.END"));
    assert!(received.iter().all(|l| l.starts_with("a.")), "{received:?}");
    publisher.close_stdin();
    publisher.success();
}

#[test]
fn router_bind_shows_and_accepts_pyzmq_dealer_ids() {
    const PY_DEALERS: &str = r#"
import sys, zmq
ctx = zmq.Context()
named = ctx.socket(zmq.DEALER)
named.setsockopt(zmq.IDENTITY, b"py")
anon = ctx.socket(zmq.DEALER)
for s in (named, anon):
    s.rcvtimeo = 10000
    s.linger = 0
    s.connect(sys.argv[1])
named.send_string("from named")
print(named.recv_string(), flush=True)
anon.send_string("from anon")
print(anon.recv_string(), flush=True)
"#;
    let mut router = Proc::start(
        "fabriq router",
        &mut fabriq(&["router", "--bind", "tcp://127.0.0.1:*"]),
    );
    let ep = router.bound("");
    let dealers = Proc::start("pyzmq dealers", &mut py(PY_DEALERS, &[&ep]));
    assert_eq!(router.line(), "py\tfrom named");
    router.send_line("py\thello py");
    assert_eq!(dealers.line(), "hello py");
    let line = router.line();
    let (id, body) = line.split_once('\t').expect("id and body");
    assert_eq!(body, "from anon");
    // libzmq gives anonymous peers 0x00 and four bytes.
    assert!(id.starts_with("0x00") && id.len() == 12, "{line}");
    router.send_line(&format!("{id}\thello anon"));
    assert_eq!(dealers.line(), "hello anon");
    dealers.success();
    router.kill();
}

// ---- pyzmq binds, fabriq connects ------------------------------------

#[test]
fn pull_connect_prints_what_a_pyzmq_push_bound_sent() {
    let push = Proc::start(
        "pyzmq push",
        &mut py(PY_PUSH_BIND, &["one", "two", "three"]),
    );
    let ep = tcp(&push.line());
    let pull = Proc::start(
        "fabriq pull",
        &mut fabriq(&["pull", "--connect", &ep, "-n", "3"]),
    );
    assert_eq!(pull.success().stdout, ["one", "two", "three"]);
    push.success();
}

#[test]
fn push_bind_lines_arrive_at_a_connecting_pyzmq_pull() {
    let mut push = Proc::start(
        "fabriq push",
        &mut fabriq(&["push", "--bind", "tcp://127.0.0.1:*"]),
    );
    let ep = push.bound("");
    for line in ["one", "two", "three"] {
        push.send_line(line);
    }
    push.close_stdin();
    let pull = Proc::start("pyzmq pull", &mut py(PY_PULL_CONNECT, &[&ep, "3"]));
    assert_eq!(
        pull.success().stdout,
        [r#"["one"]"#, r#"["two"]"#, r#"["three"]"#]
    );
    push.success();
}

#[test]
fn rep_connect_answers_a_pyzmq_req_bound() {
    let req = Proc::start("pyzmq req", &mut py(PY_REQ_BIND, &["ping", "ping again"]));
    let ep = tcp(&req.line());
    let rep = Proc::start(
        "fabriq rep",
        &mut fabriq(&["rep", "--connect", &ep, "--reply", "pong", "-n", "2"]),
    );
    assert_eq!(req.success().stdout[1..], ["pong", "pong"]);
    assert_eq!(rep.success().stdout, ["ping", "ping again"]);
}

#[test]
fn req_connect_prints_the_replies_of_a_pyzmq_rep() {
    let rep = Proc::start("pyzmq rep", &mut py(PY_REP_BIND, &["2"]));
    let ep = tcp(&rep.line());
    let mut req = Proc::start("fabriq req", &mut fabriq(&["req", "--connect", &ep]));
    req.send_line("hello");
    req.send_line("world");
    req.close_stdin();
    assert_eq!(req.success().stdout, ["HELLO", "WORLD"]);
    rep.success();
}

#[test]
fn pub_connect_reaches_a_pyzmq_sub_bound_with_a_topic() {
    let sub = Proc::start("pyzmq sub", &mut py(PY_SUB, &["a.", "bind"]));
    let ep = tcp(&sub.line());
    let mut publisher = Proc::start("fabriq pub", &mut fabriq(&["pub", "--connect", &ep]));
    let first = publish_until_received(
        |i| {
            publisher.send_line(&format!("b.{i}"));
            publisher.send_line(&format!("a.{i}"));
        },
        &sub,
    );
    assert!(first.starts_with("a."), "{first}");
    publisher.send_line("b.END");
    publisher.send_line("a.END");
    let received = sub.success().stdout;
    assert_eq!(received.last().map(String::as_str), Some("a.END"));
    assert!(
        received[1..].iter().all(|l| l.starts_with("a.")),
        "{received:?}"
    );
    publisher.close_stdin();
    publisher.success();
}

#[test]
fn sub_connect_prints_only_its_topic_from_a_pyzmq_pub() {
    let publisher = Proc::start("pyzmq pub", &mut py(PY_PUB_BIND, &[]));
    let ep = tcp(&publisher.line());
    let sub = Proc::start(
        "fabriq sub",
        &mut fabriq(&["sub", "--connect", &ep, "--topic", "a.", "-n", "3"]),
    );
    let lines = sub.success().stdout;
    assert_eq!(lines.len(), 3);
    assert!(lines.iter().all(|l| l.starts_with("a.")), "{lines:?}");
    publisher.kill();
}

#[test]
fn multipart_lines_reach_pyzmq_as_frames() {
    let pull = Proc::start("pyzmq pull", &mut py(PY_PULL_BIND, &["2"]));
    let ep = tcp(&pull.line());
    let mut push = Proc::start(
        "fabriq push",
        &mut fabriq(&["push", "--connect", &ep, "--sep", "|"]),
    );
    push.send_line("a|b||d");
    push.send_line("tab\tstays");
    push.close_stdin();
    push.success();
    assert_eq!(
        pull.success().stdout[1..],
        [r#"["a", "b", "", "d"]"#, r#"["tab\tstays"]"#]
    );
}

// ---- proxy and monitor with pyzmq peers ------------------------------

#[test]
fn proxy_pull_push_forwards_pyzmq_messages_and_captures_them() {
    let sink = Proc::start(
        "fabriq pull (backend)",
        &mut fabriq(&["pull", "--bind", "tcp://127.0.0.1:*", "-n", "2"]),
    );
    let sink_ep = sink.bound("");
    let capture = Proc::start(
        "fabriq pull (capture)",
        &mut fabriq(&["pull", "--bind", "tcp://127.0.0.1:*", "-n", "2"]),
    );
    let capture_ep = capture.bound("");
    let proxy = Proc::start(
        "fabriq proxy",
        &mut fabriq(&[
            "proxy",
            "--kind",
            "pull-push",
            "--frontend",
            "tcp://127.0.0.1:*",
            "--backend",
            &format!("connect:{sink_ep}"),
            "--capture",
            &format!("connect:{capture_ep}"),
            "--capture-type",
            "push",
        ]),
    );
    let front = proxy.bound("frontend ");
    Proc::start(
        "pyzmq push",
        &mut py(PY_PUSH_CONNECT, &[&front, "first", "second"]),
    )
    .success();
    assert_eq!(sink.success().stdout, ["first", "second"]);
    assert_eq!(capture.success().stdout, ["first", "second"]);
    proxy.kill();
}

#[test]
fn proxy_router_dealer_carries_pyzmq_requests_to_rep() {
    let proxy = Proc::start(
        "fabriq proxy",
        &mut fabriq(&[
            "proxy",
            "--kind",
            "router-dealer",
            "--frontend",
            "tcp://127.0.0.1:*",
            "--backend",
            "bind:tcp://127.0.0.1:*",
            "--timeout",
            "10",
        ]),
    );
    let front = proxy.bound("frontend ");
    let back = proxy.bound("backend ");
    let rep = Proc::start(
        "fabriq rep",
        &mut fabriq(&["rep", "--connect", &back, "-n", "2"]),
    );
    let req = Proc::start(
        "pyzmq req",
        &mut py(PY_REQ_CONNECT, &[&front, "via", "proxy"]),
    )
    .success();
    assert_eq!(req.stdout, ["via", "proxy"]);
    assert_eq!(rep.success().stdout, ["via", "proxy"]);
    proxy.kill();
}

#[test]
fn monitor_shows_the_handshake_with_a_pyzmq_peer() {
    const PY_PULL_WAIT: &str = r#"
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PULL)
s.linger = 0
print(s.bind_to_random_port("tcp://127.0.0.1"), flush=True)
sys.stdin.read()
"#;
    let peer = Proc::start("pyzmq pull", &mut py(PY_PULL_WAIT, &[]));
    let ep = tcp(&peer.line());
    let monitor = Proc::start(
        "fabriq monitor",
        &mut fabriq(&["monitor", &ep, "--type", "push", "--timeout", "10"]),
    );
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|l: &String| l.starts_with("HANDSHAKE_SUCCEEDED"))
    {
        let line = monitor.line();
        assert!(line.contains(" value="), "{line}");
        seen.push(line);
    }
    assert!(
        seen.iter()
            .any(|l| l.starts_with(&format!("CONNECTED {ep} "))),
        "{seen:?}"
    );
    monitor.kill();
    peer.kill();
}

/// The lost-delivery scenario of issue 10 against the real binary: hostile
/// connections of every class, then a pyzmq PUSH whose 10 messages must all
/// be printed, with one busy process per CPU. A bounded run; the long one
/// is `scripts/stress-cli` (500 rounds).
#[test]
fn pull_prints_a_pyzmq_push_after_hostile_connections_under_load() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/hostile_cli.py");
    let out = std::process::Command::new(common::python())
        .args([script, env!("CARGO_BIN_EXE_fabriq"), "8", "--load"])
        .output()
        .expect("run the hostile-peer script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("8 passed, 0 failed"), "{stdout}");
}
