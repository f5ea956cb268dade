//! The `fabriq` CLI over libfabric endpoints on one machine: `ofi+tcp://`
//! and `ofi+shm://` between two processes (the control connection on
//! loopback, the data in fabric pages). Ports are picked by the system
//! (`:*`, read back from the `bound` line).

mod common;

use common::{fabriq, publish_until_received, Proc};

/// `fabriq ARGS` started with stdin, stdout and stderr piped.
fn start(name: &str, args: &[&str]) -> Proc {
    Proc::start(name, &mut fabriq(args))
}

/// The lines `1`..=`n`, as `seq n` prints them.
fn numbers(n: usize) -> Vec<String> {
    (1..=n).map(|i| i.to_string()).collect()
}

const LINES: usize = 1000;

/// PULL binds, PUSH connects: `LINES` lines arrive whole and in order.
fn push_to_bound_pull(scheme: &str) {
    let count = LINES.to_string();
    let pull = start(
        "fabriq pull",
        &[
            "pull",
            "--bind",
            &format!("{scheme}://127.0.0.1:*"),
            "-n",
            &count,
        ],
    );
    let ep = pull.bound("");
    assert!(ep.starts_with(&format!("{scheme}://127.0.0.1:")), "{ep}");
    let mut push = start("fabriq push", &["push", "--connect", &ep]);
    let lines = numbers(LINES);
    for line in &lines {
        push.send_line(line);
    }
    push.close_stdin();
    let sent = push.success();
    assert!(
        sent.err_text().contains(&format!("sent {LINES} messages")),
        "{sent:#?}"
    );
    let got = pull.success();
    assert_eq!(got.stdout, lines);
    assert!(
        got.err_text()
            .contains(&format!("received {LINES} messages")),
        "{got:#?}"
    );
}

/// PUSH binds (and waits for its peer), PULL connects.
fn bound_push_to_pull(scheme: &str) {
    let mut push = start(
        "fabriq push",
        &["push", "--bind", &format!("{scheme}://127.0.0.1:*")],
    );
    let ep = push.bound("");
    let lines = numbers(LINES);
    // Queued before the puller exists: PUSH holds them until it connects.
    for line in &lines {
        push.send_line(line);
    }
    push.close_stdin();
    let count = LINES.to_string();
    let pull = start("fabriq pull", &["pull", "--connect", &ep, "-n", &count]);
    assert_eq!(pull.success().stdout, lines);
    push.success();
}

#[test]
fn push_pull_ofi_tcp_pull_binds() {
    push_to_bound_pull("ofi+tcp");
}

#[test]
fn push_pull_ofi_tcp_push_binds() {
    bound_push_to_pull("ofi+tcp");
}

#[test]
fn push_pull_ofi_shm_pull_binds() {
    push_to_bound_pull("ofi+shm");
}

#[test]
fn push_pull_ofi_shm_push_binds() {
    bound_push_to_pull("ofi+shm");
}

#[test]
fn req_rep_ofi_tcp() {
    let rep = start(
        "fabriq rep",
        &["rep", "--bind", "ofi+tcp://127.0.0.1:*", "-n", "5"],
    );
    let ep = rep.bound("");
    let mut req = start("fabriq req", &["req", "--connect", &ep, "-n", "5"]);
    let requests: Vec<String> = (0..5).map(|i| format!("request {i}\tpart two")).collect();
    for r in &requests {
        req.send_line(r);
    }
    // REP echoes: each reply is its request, frames and all.
    assert_eq!(req.success().stdout, requests);
    assert_eq!(rep.success().stdout, requests);
}

#[test]
fn pub_sub_ofi_tcp() {
    let mut publisher = start(
        "fabriq pub",
        &["pub", "--bind", "ofi+tcp://127.0.0.1:*", "--topic", "t."],
    );
    let ep = publisher.bound("");
    let sub = start("fabriq sub", &["sub", "--connect", &ep, "--topic", "t.a"]);
    // Published until the subscription has reached the publisher.
    let mut rounds = 0;
    let first = publish_until_received(
        |i| {
            publisher.send_line(&format!("b {i}"));
            publisher.send_line(&format!("a {i}"));
            rounds = i + 1;
        },
        &sub,
    );
    let first: u32 = first
        .strip_prefix("t.a ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a t.a line: {first:?}\n{}", sub.log()));
    // From there on every message of the topic arrives, in order, and
    // nothing of the other topic.
    let last = rounds + 20;
    for i in rounds..=last {
        publisher.send_line(&format!("b {i}"));
        publisher.send_line(&format!("a {i}"));
    }
    // Lines of rounds after `first` that were already in flight come
    // first; all are consecutive.
    let mut expect = first + 1;
    while expect <= last {
        assert_eq!(sub.line(), format!("t.a {expect}"), "{}", sub.log());
        expect += 1;
    }
    publisher.close_stdin();
    publisher.success();
    sub.kill();
}

#[test]
fn dealer_router_ofi_tcp() {
    let mut router = start(
        "fabriq router",
        &["router", "--bind", "ofi+tcp://127.0.0.1:*"],
    );
    let ep = router.bound("");
    let mut dealer = start(
        "fabriq dealer",
        &["dealer", "--connect", &ep, "--identity", "bob", "-n", "3"],
    );
    for i in 0..3 {
        dealer.send_line(&format!("up {i}"));
    }
    for i in 0..3 {
        assert_eq!(router.line(), format!("bob\tup {i}"));
    }
    for i in 0..3 {
        router.send_line(&format!("bob\tdown {i}"));
    }
    assert_eq!(dealer.success().stdout, ["down 0", "down 1", "down 2"]);
    router.kill();
}

/// A publisher killed with SIGKILL (no FIN, no close: its fabric endpoint
/// just vanishes) and started again on the same endpoint: the subscriber
/// reconnects, subscribes again and receives from the new one.
fn publisher_killed_and_restarted(scheme: &str) {
    let first = start(
        "fabriq pub",
        &["pub", "--bind", &format!("{scheme}://127.0.0.1:*")],
    );
    let ep = first.bound("");
    let sub = start(
        "fabriq sub",
        &["sub", "--connect", &ep, "--reconnect-ivl", "20"],
    );
    let mut first = first;
    publish_until_received(|i| first.send_line(&format!("one {i}")), &sub);
    first.kill();
    let mut second = start("fabriq pub", &["pub", "--bind", &ep]);
    assert_eq!(second.bound(""), ep);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut round = 0;
    loop {
        second.send_line(&format!("two {round}"));
        round += 1;
        // Lines of the first publisher still in flight may come first.
        if let Some(line) = sub.line_within(std::time::Duration::from_millis(50)) {
            if line.starts_with("two ") {
                break;
            }
            assert!(line.starts_with("one "), "{line:?}\n{}", sub.log());
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{scheme}: nothing from the restarted publisher\n{}",
            sub.log()
        );
    }
    second.close_stdin();
    second.success();
    sub.kill();
}

#[test]
fn pub_killed_and_restarted_ofi_tcp() {
    publisher_killed_and_restarted("ofi+tcp");
}

#[test]
fn pub_killed_and_restarted_ofi_shm() {
    publisher_killed_and_restarted("ofi+shm");
}
