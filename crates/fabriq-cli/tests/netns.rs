//! "Two hosts": each test makes two network namespaces joined by a veth
//! pair, runs `fabriq` on each side with `ip netns exec`, and checks the
//! patterns over `tcp://` and over `ofi+tcp://` bound to the veth
//! addresses, so that both the control connection and the fabric's own
//! connection cross the veth.
//!
//! That the traffic really crossed is checked twice: the sending side's
//! veth counted at least the payload in `tx_bytes`, and `ss` in the
//! receiving namespace shows which TCP connection carried it. Over
//! `tcp://` that is the ZMTP connection; over `ofi+tcp://` it is the
//! libfabric tcp provider's connection between the two veth addresses,
//! while the ZMTP (control) connection carries less than the payload.
//!
//! The tests need root (CAP_NET_ADMIN, to make namespaces) and iproute2
//! (`ip`, `ss`); without them they fail saying so.

mod common;

use std::net::SocketAddr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use common::{publish_until_received, Proc};

// ---- the two hosts ---------------------------------------------------

/// Serializes `ip netns add` / `del` within this process: concurrent
/// first uses of /run/netns race in iproute2 (it makes the directory a
/// shared mount point on first use).
static NETNS_LOCK: Mutex<()> = Mutex::new(());

/// Numbers the namespace pairs of this process.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// The prefix of every namespace these tests make: `fq-PID-N-a`.
const PREFIX: &str = "fq-";

/// Runs a short command (ip, cat, ss) to its end, within the tests' time
/// limit; returns its exit status, stdout and stderr.
fn run(cmd: &mut Command) -> common::Finished {
    let name = format!("{cmd:?}");
    Proc::start(&name, cmd).finish()
}

/// Runs `ip ARGS`, panicking with its stderr when it fails.
fn ip(args: &[&str]) {
    let done = run(Command::new("ip").args(args));
    assert!(
        done.status.success(),
        "ip {} failed: {}",
        args.join(" "),
        done.err_text()
    );
}

/// Runs `ip ARGS`, ignoring failure (deleting what may not exist).
fn ip_quietly(args: &[&str]) {
    let _ = run(Command::new("ip").args(args));
}

/// Fails the test unless it can make namespaces: it must run as root and
/// have `ip` from iproute2.
fn require_root_and_iproute2() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    // "Uid:\treal\teffective\tsaved\tfs"
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .map(str::to_string);
    assert!(
        euid.as_deref() == Some("0"),
        "the netns tests need root (CAP_NET_ADMIN, to create network namespaces and \
         veth pairs), but the effective uid is {}; run `cargo test` as root (CI does) - \
         they fail rather than skip",
        euid.as_deref().unwrap_or("unknown")
    );
    let found = Command::new("ip").arg("-V").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "the netns tests need `ip` and `ss` from iproute2: apt-get install iproute2 \
         (scripts/test installs it)"
    );
}

/// One side: a namespace with one end of the veth pair.
struct Host {
    ns: String,
    dev: String,
    ip: String,
}

impl Host {
    /// `ip netns exec NS PROGRAM ARGS`.
    fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns, program]).args(args);
        cmd
    }

    /// `fabriq ARGS` in this namespace, started with its pipes read.
    fn fabriq(&self, name: &str, args: &[&str]) -> Proc {
        let program = env!("CARGO_BIN_EXE_fabriq");
        Proc::start(
            &format!("{name} in {}", self.ns),
            &mut self.command(program, args),
        )
    }

    /// A counter of the veth device, read inside the namespace.
    fn counter(&self, name: &str) -> u64 {
        let path = format!("/sys/class/net/{}/statistics/{name}", self.dev);
        let done = run(&mut self.command("cat", &[&path]));
        assert!(done.status.success(), "cat {path}: {}", done.err_text());
        done.stdout
            .first()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("{path}: not a number: {:?}", done.stdout))
    }

    /// Bytes the veth device has sent.
    fn tx_bytes(&self) -> u64 {
        self.counter("tx_bytes")
    }

    /// The established TCP connections of the namespace, with the bytes
    /// each has received (`ss -tin`).
    fn connections(&self) -> Vec<Connection> {
        let done = run(&mut self.command("ss", &["-tinH", "state", "established"]));
        assert!(done.status.success(), "ss: {}", done.err_text());
        parse_ss(&done.stdout)
    }
}

/// Two namespaces joined by a veth pair: `a` is 10.77.N.1, `b` is
/// 10.77.N.2. Deleted on drop (deleting a namespace deletes its end of
/// the veth, and with it the other end).
struct Hosts {
    a: Host,
    b: Host,
}

impl Hosts {
    fn new() -> Hosts {
        require_root_and_iproute2();
        let pid = std::process::id();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        // A subnet of its own for each pair of this process (10.77.1-250.x),
        // though the namespaces would keep equal subnets apart anyway.
        let subnet = (pid.wrapping_add(n) % 250) + 1;
        let host = |side: &str| Host {
            ns: format!("{PREFIX}{pid}-{n}-{side}"),
            // Interface names are at most 15 bytes: "fq" + pid (<= 7
            // digits) + n + side.
            dev: format!("fq{pid}{n}{side}"),
            ip: format!("10.77.{subnet}.{}", if side == "a" { 1 } else { 2 }),
        };
        let hosts = Hosts {
            a: host("a"),
            b: host("b"),
        };
        assert!(hosts.a.dev.len() <= 15, "{}", hosts.a.dev);
        let _lock = NETNS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        remove_stale_namespaces();
        for h in [&hosts.a, &hosts.b] {
            ip_quietly(&["netns", "del", &h.ns]);
            ip_quietly(&["link", "del", &h.dev]);
        }
        // From here on, drop cleans up whatever was made.
        ip(&["netns", "add", &hosts.a.ns]);
        ip(&["netns", "add", &hosts.b.ns]);
        ip(&[
            "link",
            "add",
            &hosts.a.dev,
            "netns",
            &hosts.a.ns,
            "type",
            "veth",
            "peer",
            "name",
            &hosts.b.dev,
            "netns",
            &hosts.b.ns,
        ]);
        for h in [&hosts.a, &hosts.b] {
            let cidr = format!("{}/24", h.ip);
            ip(&["-n", &h.ns, "addr", "add", &cidr, "dev", &h.dev]);
            ip(&["-n", &h.ns, "link", "set", "lo", "up"]);
            ip(&["-n", &h.ns, "link", "set", &h.dev, "up"]);
        }
        hosts
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _lock = NETNS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        for h in [&self.a, &self.b] {
            ip_quietly(&["netns", "del", &h.ns]);
        }
        // Only there if making the pair failed half way.
        ip_quietly(&["link", "del", &self.a.dev]);
    }
}

/// Deletes namespaces `fq-PID-...` of test processes that no longer run
/// (a run killed before its guards could drop).
fn remove_stale_namespaces() {
    let done = run(Command::new("ip").args(["netns", "list"]));
    for line in &done.stdout {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            ip_quietly(&["netns", "del", name]);
        }
    }
}

// ---- what crossed the veth -------------------------------------------

/// One established TCP connection as `ss -tin` shows it.
#[derive(Debug)]
struct Connection {
    local: SocketAddr,
    peer: SocketAddr,
    bytes_received: u64,
}

/// Parses `ss -tinH state established`: a line with the addresses, then
/// indented lines with `bytes_received:N` among the details.
fn parse_ss(lines: &[String]) -> Vec<Connection> {
    let mut out: Vec<Connection> = Vec::new();
    for line in lines {
        if !line.starts_with(char::is_whitespace) {
            let addrs: Vec<SocketAddr> = line
                .split_whitespace()
                .filter_map(|t| t.parse().ok())
                .collect();
            if let [local, peer] = addrs[..] {
                out.push(Connection {
                    local,
                    peer,
                    bytes_received: 0,
                });
            }
        } else if let Some(conn) = out.last_mut() {
            for field in line.split_whitespace() {
                if let Some(n) = field.strip_prefix("bytes_received:") {
                    conn.bytes_received = n.parse().unwrap_or(0);
                }
            }
        }
    }
    out
}

/// Checks, in `receiver`'s namespace, which connection from `sender`
/// carried at least `payload` bytes: the control connection (the one to
/// `endpoint`, bound on one of the two) for `tcp`, another connection
/// between the two veth addresses (the fabric's) for `ofi+tcp`, while
/// the control connection then carried less than `payload`.
fn assert_carried(scheme: &str, receiver: &Host, sender: &Host, endpoint: &str, payload: u64) {
    let control_port = port_of(endpoint);
    // The binding side has the endpoint's port at its end, the other at
    // the peer's end (ports are per namespace: only that end tells).
    let bound_here = endpoint.contains(&format!("//{}:", receiver.ip));
    let conns: Vec<Connection> = receiver
        .connections()
        .into_iter()
        .filter(|c| c.local.ip().to_string() == receiver.ip && c.peer.ip().to_string() == sender.ip)
        .collect();
    let is_control = |c: &&Connection| {
        if bound_here {
            c.local.port() == control_port
        } else {
            c.peer.port() == control_port
        }
    };
    let control: Vec<&Connection> = conns.iter().filter(is_control).collect();
    assert_eq!(
        control.len(),
        1,
        "one control connection {} <- {} (port {control_port}): {conns:#?}",
        receiver.ip,
        sender.ip
    );
    let control = control[0];
    match scheme {
        "tcp" => assert!(
            control.bytes_received >= payload,
            "tcp://: the ZMTP connection received {} bytes, less than the {payload} \
             bytes of payload: {conns:#?}",
            control.bytes_received
        ),
        _ => {
            let fabric: Vec<&Connection> = conns
                .iter()
                .filter(|c| !is_control(c) && c.bytes_received >= payload)
                .collect();
            assert!(
                !fabric.is_empty(),
                "{scheme}://: no connection besides the control one received the {payload} \
                 bytes of payload in {}: {conns:#?}",
                receiver.ns
            );
            assert!(
                control.bytes_received < payload,
                "{scheme}://: the control connection received {} bytes, the payload went \
                 over it instead of the fabric: {conns:#?}",
                control.bytes_received
            );
        }
    }
}

/// Asserts that `host`'s veth sent at least `payload` bytes since `before`.
fn assert_sent(host: &Host, before: u64, payload: u64) {
    let sent = host.tx_bytes() - before;
    assert!(
        sent >= payload,
        "{} sent {sent} bytes on {}, less than the {payload} bytes of payload",
        host.ns,
        host.dev
    );
}

/// The port of an endpoint `SCHEME://HOST:PORT`.
fn port_of(endpoint: &str) -> u16 {
    endpoint
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {endpoint:?}"))
}

/// Bytes of the message bodies of `lines` (frames separated by tabs).
fn payload(lines: &[String]) -> u64 {
    lines.iter().map(|l| l.replace('\t', "").len() as u64).sum()
}

// ---- the patterns -----------------------------------------------------

/// PUSH in b connects to PULL bound in a: 1000 lines in order.
fn push_pull(scheme: &str) {
    let hosts = Hosts::new();
    let (a, b) = (&hosts.a, &hosts.b);
    let lines: Vec<String> = (1..=1000).map(|i| format!("line {i:04}")).collect();
    let before = b.tx_bytes();
    let pull = a.fabriq(
        "fabriq pull",
        &["pull", "--bind", &format!("{scheme}://{}:*", a.ip)],
    );
    let ep = pull.bound("");
    assert!(ep.starts_with(&format!("{scheme}://{}:", a.ip)), "{ep}");
    let mut push = b.fabriq("fabriq push", &["push", "--connect", &ep]);
    for line in &lines {
        push.send_line(line);
    }
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(
            &pull.line(),
            line,
            "line {i}\n{}\n{}",
            pull.log(),
            push.log()
        );
    }
    // Both still run: their connections are still there to look at.
    assert_carried(scheme, a, b, &ep, payload(&lines));
    assert_sent(b, before, payload(&lines));
    push.close_stdin();
    let sent = push.success();
    assert!(sent.err_text().contains("sent 1000 messages"), "{sent:#?}");
    pull.kill();
}

/// SUB in b connects to PUB bound in a; once the subscription is in,
/// every later message arrives, in order.
fn pub_sub(scheme: &str) {
    let hosts = Hosts::new();
    let (a, b) = (&hosts.a, &hosts.b);
    let before = a.tx_bytes();
    let mut publisher = a.fabriq(
        "fabriq pub",
        &["pub", "--bind", &format!("{scheme}://{}:*", a.ip)],
    );
    let ep = publisher.bound("");
    let sub = b.fabriq("fabriq sub", &["sub", "--connect", &ep]);
    let line = |i: u32| format!("message {i:05} from the publisher");
    // Publish one message at a time until the subscriber prints one:
    // before its subscription reaches the publisher, messages are dropped.
    let mut sent = 0;
    let first = publish_until_received(
        |i| {
            publisher.send_line(&line(i));
            sent = i + 1;
        },
        &sub,
    );
    let first: u32 = first
        .strip_prefix("message ")
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a published line: {first:?}\n{}", sub.log()));
    // Then in batches; each batch is read to its end before the next is
    // sent, so the queue stays far below the high-water mark. The
    // subscriber's lines from `first` on are consecutive: nothing lost,
    // nothing repeated, nothing out of order.
    let mut received = vec![line(first)];
    let mut expect = first + 1;
    let last = sent + 500;
    while sent < last {
        let batch_end = (sent + 100).min(last);
        for i in sent..batch_end {
            publisher.send_line(&line(i));
        }
        sent = batch_end;
        while expect < sent {
            let got = sub.line();
            assert_eq!(got, line(expect), "{}", sub.log());
            received.push(got);
            expect += 1;
        }
    }
    assert!(received.len() >= 500, "{}", received.len());
    assert_carried(scheme, b, a, &ep, payload(&received));
    assert_sent(a, before, payload(&received));
    publisher.close_stdin();
    publisher.success();
    sub.kill();
}

/// REQ in a connects to REP bound in b: 100 requests, each answered.
fn req_rep(scheme: &str) {
    let hosts = Hosts::new();
    let (a, b) = (&hosts.a, &hosts.b);
    let (a_before, b_before) = (a.tx_bytes(), b.tx_bytes());
    let rep = b.fabriq(
        "fabriq rep",
        &["rep", "--bind", &format!("{scheme}://{}:*", b.ip)],
    );
    let ep = rep.bound("");
    let mut req = a.fabriq("fabriq req", &["req", "--connect", &ep]);
    let requests: Vec<String> = (0..100)
        .map(|i| format!("request {i:03}\tasked from {}", a.ip))
        .collect();
    for r in &requests {
        req.send_line(r);
    }
    // REP echoes each request; REQ sends the next when the reply is in.
    for r in &requests {
        assert_eq!(&rep.line(), r, "{}", rep.log());
        assert_eq!(&req.line(), r, "{}", req.log());
    }
    assert_carried(scheme, b, a, &ep, payload(&requests));
    assert_carried(scheme, a, b, &ep, payload(&requests));
    assert_sent(a, a_before, payload(&requests));
    assert_sent(b, b_before, payload(&requests));
    req.close_stdin();
    let done = req.success();
    assert!(done.err_text().contains("100 messages"), "{done:#?}");
    rep.kill();
}

/// DEALER `carol` in b connects to ROUTER bound in a: 100 messages each
/// way, the router addressing its replies by routing id.
fn dealer_router(scheme: &str) {
    let hosts = Hosts::new();
    let (a, b) = (&hosts.a, &hosts.b);
    let (a_before, b_before) = (a.tx_bytes(), b.tx_bytes());
    let mut router = a.fabriq(
        "fabriq router",
        &["router", "--bind", &format!("{scheme}://{}:*", a.ip)],
    );
    let ep = router.bound("");
    let mut dealer = b.fabriq(
        "fabriq dealer",
        &["dealer", "--connect", &ep, "--identity", "carol"],
    );
    let up: Vec<String> = (0..100)
        .map(|i| format!("up {i:03} to the router"))
        .collect();
    let down: Vec<String> = (0..100).map(|i| format!("down {i:03} to carol")).collect();
    for line in &up {
        dealer.send_line(line);
    }
    for line in &up {
        assert_eq!(router.line(), format!("carol\t{line}"), "{}", router.log());
    }
    for line in &down {
        router.send_line(&format!("carol\t{line}"));
    }
    for line in &down {
        assert_eq!(&dealer.line(), line, "{}", dealer.log());
    }
    assert_carried(scheme, a, b, &ep, payload(&up));
    assert_carried(scheme, b, a, &ep, payload(&down));
    assert_sent(b, b_before, payload(&up));
    assert_sent(a, a_before, payload(&down));
    dealer.kill();
    router.kill();
}

#[test]
fn push_pull_tcp() {
    push_pull("tcp");
}

#[test]
fn push_pull_ofi_tcp() {
    push_pull("ofi+tcp");
}

#[test]
fn pub_sub_tcp() {
    pub_sub("tcp");
}

#[test]
fn pub_sub_ofi_tcp() {
    pub_sub("ofi+tcp");
}

#[test]
fn req_rep_tcp() {
    req_rep("tcp");
}

#[test]
fn req_rep_ofi_tcp() {
    req_rep("ofi+tcp");
}

#[test]
fn dealer_router_tcp() {
    dealer_router("tcp");
}

#[test]
fn dealer_router_ofi_tcp() {
    dealer_router("ofi+tcp");
}

#[test]
fn ss_output_is_parsed() {
    let lines: Vec<String> = [
        "0      0      10.77.200.1:43139 10.77.200.2:60748",
        "\t bbr wscale:10,10 bytes_sent:196 bytes_acked:196 bytes_received:196 segs_out:3",
        "0      0      [::1]:5000 [::1]:6000",
        "\t cubic rto:204",
    ]
    .map(String::from)
    .to_vec();
    let conns = parse_ss(&lines);
    assert_eq!(conns.len(), 2, "{conns:?}");
    assert_eq!(conns[0].local, "10.77.200.1:43139".parse().unwrap());
    assert_eq!(conns[0].peer.port(), 60748);
    assert_eq!(conns[0].bytes_received, 196);
    assert_eq!(conns[1].bytes_received, 0);
}
