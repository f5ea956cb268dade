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
//! The namespaces and what is read from them are in `common/netns.rs`,
//! shared with the fault tests (`faults.rs`). The tests need root and
//! iproute2; without them they fail saying so.

mod common;

use common::netns::{parse_ss, port_of, Connection, Host, Hosts};
use common::{number_in, publish_in_order, publish_until_received};

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
    let first = number_in(&first, "message");
    // Then 500 more; from `first` on the subscriber's lines are
    // consecutive: nothing lost, nothing repeated, nothing out of order.
    let mut received = vec![line(first)];
    received.extend(publish_in_order(
        &mut publisher,
        &sub,
        line,
        first + 1,
        sent,
        sent + 500,
    ));
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
