//! libzmq behaviours that its own test suite (tests/ of libzmq 4.3.4,
//! run against fabriq's C API by crates/fabriq-capi/suites) checks, here
//! on the Rust API: accept filters, inproc connects before the bind, and
//! the other options of docs/capi.md's "libzmq semantics" list.
//!
//! Every wait has a time limit, tcp ports are ephemeral and inproc names
//! unique, so the tests run in parallel.

use std::sync::atomic::{AtomicU64, Ordering};

use fabriq as zmq;

/// Upper bound of a wait for something that should happen.
const TIMEOUT_MS: i32 = 5000;
/// How long a test waits for something that must not happen.
const QUIET_MS: i32 = 300;

fn unique() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn inproc(tag: &str) -> String {
    format!("inproc://libzmq-options-{tag}-{}", unique())
}

fn ipc(tag: &str) -> String {
    let path = std::env::temp_dir().join(format!(
        "fabriq-libzmq-options-{tag}-{}-{}.ipc",
        std::process::id(),
        unique()
    ));
    format!("ipc://{}", path.display())
}

fn socket(ctx: &zmq::Context, kind: zmq::SocketType) -> zmq::Socket {
    let s = ctx.socket(kind).unwrap();
    s.set_rcvtimeo(TIMEOUT_MS).unwrap();
    s.set_sndtimeo(TIMEOUT_MS).unwrap();
    s.set_linger(0).unwrap();
    s
}

/// Binds `s` to `endpoint` and returns the resolved endpoint.
fn bind(s: &zmq::Socket, endpoint: &str) -> String {
    s.bind(endpoint).unwrap();
    s.get_last_endpoint().unwrap().unwrap()
}

/// A message goes from `a` to `b` and back.
fn bounce(a: &zmq::Socket, b: &zmq::Socket) {
    a.send("ping", 0).unwrap();
    assert_eq!(b.recv_bytes(0).unwrap(), b"ping");
    b.send("pong", 0).unwrap();
    assert_eq!(a.recv_bytes(0).unwrap(), b"pong");
}

/// The connection between `server` (bound) and `client` never carries a
/// message: the client's goes nowhere.
fn no_bounce(server: &zmq::Socket, client: &zmq::Socket) {
    client.send("ping", zmq::DONTWAIT).ok();
    server.set_rcvtimeo(QUIET_MS).unwrap();
    assert_eq!(server.recv_bytes(0), Err(zmq::Error::EAGAIN));
}

#[test]
fn a_sub_bound_after_an_inproc_pub_connected_gets_what_is_published_next() {
    let ctx = zmq::Context::new();
    let ep = inproc("pubsub");
    let publisher = socket(&ctx, zmq::PUB);
    publisher.connect(&ep).unwrap();
    publisher.send("before", 0).unwrap();
    let sub = socket(&ctx, zmq::SUB);
    sub.set_subscribe(b"").unwrap();
    sub.bind(&ep).unwrap();
    // No settling: the bind itself sent the subscription.
    publisher.send("after", 0).unwrap();
    assert_eq!(sub.recv_bytes(0).unwrap(), b"after");
}

#[test]
fn inproc_pairs_any_two_types_as_libzmq_does() {
    // libzmq's test_inproc_connect connects PAIRs to a PULL.
    let ctx = zmq::Context::new();
    let ep = inproc("types");
    let pair = socket(&ctx, zmq::PAIR);
    pair.connect(&ep).unwrap();
    pair.send("foobar", 0).unwrap();
    let pull = socket(&ctx, zmq::PULL);
    pull.bind(&ep).unwrap();
    assert_eq!(pull.recv_bytes(0).unwrap(), b"foobar");
}

#[test]
fn tcp_accept_filters_keep_matching_peers_only() {
    let ctx = zmq::Context::new();
    for (filter, accepted) in [
        (Some("127.0.0.1/32"), true),
        (Some("0.0.0.0/0"), true),
        (Some("127.0.0.0/8"), true),
        (Some("127.0.0.255/32"), false),
        (None, true),
    ] {
        let server = socket(&ctx, zmq::PAIR);
        if let Some(f) = filter {
            server.set_tcp_accept_filter(Some(f)).unwrap();
        }
        let ep = bind(&server, "tcp://127.0.0.1:*");
        let client = socket(&ctx, zmq::PAIR);
        client.set_reconnect_ivl(-1).unwrap();
        client.connect(&ep).unwrap();
        if accepted {
            bounce(&client, &server);
        } else {
            no_bounce(&server, &client);
        }
    }
}

#[test]
fn a_cleared_tcp_accept_filter_accepts_everyone() {
    let ctx = zmq::Context::new();
    let server = socket(&ctx, zmq::PAIR);
    server.set_tcp_accept_filter(Some("127.0.0.255")).unwrap();
    server.set_tcp_accept_filter(Some("")).unwrap();
    let ep = bind(&server, "tcp://127.0.0.1:*");
    let client = socket(&ctx, zmq::PAIR);
    client.connect(&ep).unwrap();
    bounce(&client, &server);
}

#[test]
fn malformed_tcp_accept_filters_are_einval() {
    let ctx = zmq::Context::new();
    let s = socket(&ctx, zmq::PAIR);
    for bad in [
        "foo",
        "0.0.0.0foo",
        "0.0.0.0/foo",
        "0.0.0.0/",
        "0.0.0.0/-1",
        "0.0.0.0/33",
    ] {
        assert_eq!(
            s.set_tcp_accept_filter(Some(bad)),
            Err(zmq::Error::EINVAL),
            "{bad}"
        );
    }
}

#[test]
fn ipc_filters_keep_peers_with_matching_credentials() {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let pid = std::process::id() as i32;
    type Set = fn(&zmq::Socket, u32, i32) -> zmq::Result<()>;
    let cases: [(Set, bool); 7] = [
        (|_, _, _| Ok(()), true),
        (|s, u, _| s.set_ipc_filter_uid(Some(u)), true),
        (|s, u, _| s.set_ipc_filter_uid(Some(u + 1)), false),
        (|s, _, p| s.set_ipc_filter_pid(Some(p)), true),
        (|s, _, p| s.set_ipc_filter_pid(Some(p + 1)), false),
        (|s, g, _| s.set_ipc_filter_gid(Some(g)), true),
        (|s, g, _| s.set_ipc_filter_gid(Some(g + 1_000_000)), false),
    ];
    let ctx = zmq::Context::new();
    for (i, (set, accepted)) in cases.into_iter().enumerate() {
        let server = socket(&ctx, zmq::DEALER);
        let value = if i == 5 || i == 6 { gid } else { uid };
        set(&server, value, pid).unwrap();
        let ep = bind(&server, &ipc("filter"));
        let client = socket(&ctx, zmq::DEALER);
        client.set_reconnect_ivl(-1).unwrap();
        client.connect(&ep).unwrap();
        if accepted {
            bounce(&client, &server);
        } else {
            no_bounce(&server, &client);
        }
    }
}

#[test]
fn a_cleared_ipc_filter_accepts_everyone() {
    let ctx = zmq::Context::new();
    let server = socket(&ctx, zmq::DEALER);
    let uid = rustix::process::getuid().as_raw();
    server.set_ipc_filter_uid(Some(uid + 1)).unwrap();
    server.set_ipc_filter_uid(None).unwrap();
    let ep = bind(&server, &ipc("cleared"));
    let client = socket(&ctx, zmq::DEALER);
    client.connect(&ep).unwrap();
    bounce(&client, &server);
}

#[test]
fn a_bind_takes_the_listening_socket_given_with_use_fd() {
    use std::os::fd::IntoRawFd;
    let ctx = zmq::Context::new();
    // tcp
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ep = format!("tcp://{}", listener.local_addr().unwrap());
    let server = socket(&ctx, zmq::REP);
    assert_eq!(server.get_use_fd().unwrap(), -1);
    let fd = listener.into_raw_fd();
    server.set_use_fd(fd).unwrap();
    assert_eq!(server.get_use_fd().unwrap(), fd);
    assert_eq!(bind(&server, &ep), ep);
    let client = socket(&ctx, zmq::REQ);
    client.connect(&ep).unwrap();
    bounce(&client, &server);
    // ipc: the file stays the application's.
    let path = std::env::temp_dir().join(format!(
        "fabriq-libzmq-options-usefd-{}-{}.ipc",
        std::process::id(),
        unique()
    ));
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let ep = format!("ipc://{}", path.display());
    let server = socket(&ctx, zmq::PAIR);
    server.set_use_fd(listener.into_raw_fd()).unwrap();
    assert_eq!(bind(&server, &ep), ep);
    let client = socket(&ctx, zmq::PAIR);
    client.connect(&ep).unwrap();
    bounce(&client, &server);
    drop(server);
    drop(client);
    drop(ctx);
    std::fs::remove_file(&path).expect("the socket file is left to the application");
}

#[test]
fn use_fd_refuses_what_is_not_a_listening_socket_of_the_transport() {
    use std::os::fd::AsRawFd;
    let ctx = zmq::Context::new();
    let s = socket(&ctx, zmq::PAIR);
    assert_eq!(s.set_use_fd(-2), Err(zmq::Error::EINVAL));
    // A file, a socket that does not listen, a listener of another family.
    let file = std::fs::File::open("/dev/null").unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    for (fd, ep) in [
        (file.as_raw_fd(), "tcp://127.0.0.1:*".to_string()),
        (udp.as_raw_fd(), "tcp://127.0.0.1:*".to_string()),
        (tcp.as_raw_fd(), ipc("usefd-family")),
        (1_000_000, "tcp://127.0.0.1:*".to_string()),
    ] {
        s.set_use_fd(fd).unwrap();
        assert_eq!(s.bind(&ep), Err(zmq::Error::EINVAL), "fd {fd} for {ep}");
    }
    // The descriptors were left alone.
    assert!(tcp.local_addr().is_ok());
    assert!(udp.local_addr().is_ok());
}

/// A tcp port free a moment ago.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn tcp_connects_bind_the_source_address_given_before_a_semicolon() {
    let ctx = zmq::Context::new();
    let servers: Vec<_> = (0..2).map(|_| socket(&ctx, zmq::REP)).collect();
    let eps: Vec<_> = servers
        .iter()
        .map(|s| bind(s, "tcp://127.0.0.1:*"))
        .collect();
    // One fixed source port for both destinations (SO_REUSEADDR).
    let src = free_port();
    let client = socket(&ctx, zmq::REQ);
    for ep in &eps {
        let dst = ep.strip_prefix("tcp://").unwrap();
        client
            .connect(&format!("tcp://127.0.0.1:{src};{dst}"))
            .unwrap();
    }
    for server in servers.iter().chain(&servers) {
        bounce(&client, server);
    }
    // Any source port.
    let other = socket(&ctx, zmq::REQ);
    let dst = eps[0].strip_prefix("tcp://").unwrap();
    other.connect(&format!("tcp://127.0.0.1:*;{dst}")).unwrap();
    bounce(&other, &servers[0]);
}

#[test]
fn tcp_connect_addresses_are_checked_as_libzmq_does() {
    let ctx = zmq::Context::new();
    let s = socket(&ctx, zmq::PUB);
    // Resolution is deferred: an IPv6 literal without the ipv6 option
    // and a source name are accepted by connect.
    s.connect("tcp://[::1]:1234").unwrap();
    // An IPv6 address without brackets, left of the last colon.
    s.connect("tcp://::1:1234").unwrap();
    assert_eq!(s.bind("tcp://::1:0"), Err(zmq::Error::EINVAL));
    s.connect("tcp://localhost:5555;localhost:1235").unwrap();
    for bad in [
        "tcp://in val id:1234",
        "tcp://localhost:invalid",
        "tcp://",
        "tcp://127.0.0.1;127.0.0.1:1234",
    ] {
        assert_eq!(s.connect(bad), Err(zmq::Error::EINVAL), "{bad}");
    }
    assert_eq!(
        s.bind("tcp://127.0.0.1:0;127.0.0.1:1234"),
        Err(zmq::Error::EINVAL)
    );
}

#[test]
fn asking_for_events_does_not_change_the_next_peer() {
    // libzmq's test_req_relaxed reads ZMQ_EVENTS between requests and
    // expects them to go to the peers in turn, first one first.
    let ctx = zmq::Context::new();
    for kind in [zmq::PUSH, zmq::REQ] {
        let ep = inproc("events-turn");
        let sender = socket(&ctx, kind);
        if kind == zmq::REQ {
            sender.set_req_relaxed(true).unwrap();
        }
        sender.bind(&ep).unwrap();
        let peers: Vec<_> = (0..3)
            .map(|_| {
                let p = socket(
                    &ctx,
                    if kind == zmq::PUSH {
                        zmq::PULL
                    } else {
                        zmq::REP
                    },
                );
                p.connect(&ep).unwrap();
                p
            })
            .collect();
        for (i, peer) in peers.iter().enumerate() {
            assert!(sender.get_events().unwrap().contains(zmq::POLLOUT));
            sender.send(format!("m{i}").as_str(), 0).unwrap();
            assert_eq!(peer.recv_bytes(0).unwrap(), format!("m{i}").as_bytes());
        }
    }
}

#[test]
fn connect_routing_id_names_the_peer_of_the_next_connect_only() {
    let ctx = zmq::Context::new();
    for transport in ["tcp://127.0.0.1:*", "inproc://connect-rid"] {
        let x = socket(&ctx, zmq::ROUTER);
        x.set_identity(b"X").unwrap();
        let x_ep = bind(
            &x,
            &format!(
                "{transport}{}",
                if transport.starts_with("inproc") {
                    format!("-x-{}", unique())
                } else {
                    String::new()
                }
            ),
        );
        let z = socket(&ctx, zmq::ROUTER);
        z.set_identity(b"Z").unwrap();
        let z_ep = bind(
            &z,
            &format!(
                "{transport}{}",
                if transport.starts_with("inproc") {
                    format!("-z-{}", unique())
                } else {
                    String::new()
                }
            ),
        );
        let y = socket(&ctx, zmq::ROUTER);
        y.set_identity(b"Y").unwrap();
        y.set_router_mandatory(true).unwrap();
        y.set_connect_routing_id(b"to-x").unwrap();
        y.connect(&x_ep).unwrap();
        // Routable at once, under the given name, not the peer's "X".
        y.send_multipart(["to-x", "hi x"], 0).unwrap();
        assert_eq!(
            x.recv_multipart(0).unwrap(),
            [b"Y".to_vec(), b"hi x".to_vec()]
        );
        // The next connect is not named: Z is known by its identity once
        // its handshake is done.
        y.connect(&z_ep).unwrap();
        let deadline =
            std::time::Instant::now() + std::time::Duration::from_millis(TIMEOUT_MS as u64);
        while y.send_multipart(["Z", "hi z"], zmq::DONTWAIT).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "Z never became routable"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(
            z.recv_multipart(0).unwrap(),
            [b"Y".to_vec(), b"hi z".to_vec()]
        );
        assert_eq!(
            y.send_multipart(["to-z", "no"], 0),
            Err(zmq::Error::EHOSTUNREACH)
        );
    }
}

#[test]
fn stream_notify_off_delivers_data_only() {
    let ctx = zmq::Context::new();
    let server = socket(&ctx, zmq::STREAM);
    assert!(server.is_stream_notify().unwrap());
    server.set_stream_notify(false).unwrap();
    let ep = bind(&server, "tcp://127.0.0.1:*");
    let client = socket(&ctx, zmq::STREAM);
    client.set_connect_routing_id(b"conn1").unwrap();
    client.connect(&ep).unwrap();
    client.send_multipart(["conn1", "hi 1"], 0).unwrap();
    let got = server.recv_multipart(0).unwrap();
    assert_eq!(got[0][0], 0, "a generated id");
    assert_eq!(got[1], b"hi 1", "data first: no connect notice");
    // The client (notify on) sees its connect notice under its name.
    assert_eq!(
        client.recv_multipart(0).unwrap(),
        [b"conn1".to_vec(), Vec::new()]
    );
    // No notice when the client goes away either.
    drop(client);
    server.set_rcvtimeo(QUIET_MS).unwrap();
    assert_eq!(server.recv_multipart(0), Err(zmq::Error::EAGAIN));
    let dealer = socket(&ctx, zmq::DEALER);
    assert_eq!(dealer.set_stream_notify(false), Err(zmq::Error::EINVAL));
    assert_eq!(
        dealer.set_connect_routing_id(&[1; 256]),
        Err(zmq::Error::EINVAL)
    );
}

#[test]
fn invert_matching_sends_to_the_peers_that_do_not_match() {
    let ctx = zmq::Context::new();
    let ep = inproc("invert");
    let publisher = socket(&ctx, zmq::PUB);
    publisher.bind(&ep).unwrap();
    let subs: Vec<_> = ["prefix1", "p2"]
        .iter()
        .map(|topic| {
            let s = socket(&ctx, zmq::SUB);
            s.connect(&ep).unwrap();
            s.set_subscribe(topic.as_bytes()).unwrap();
            s
        })
        .collect();
    let quiet = |s: &zmq::Socket| {
        s.set_rcvtimeo(QUIET_MS).unwrap();
        assert_eq!(s.recv_bytes(0), Err(zmq::Error::EAGAIN));
        s.set_rcvtimeo(TIMEOUT_MS).unwrap();
    };
    publisher.send("prefix1", 0).unwrap();
    assert_eq!(subs[0].recv_bytes(0).unwrap(), b"prefix1");
    quiet(&subs[1]);
    assert!(!publisher.is_invert_matching().unwrap());
    publisher.set_invert_matching(true).unwrap();
    for s in &subs {
        s.set_invert_matching(true).unwrap();
    }
    publisher.send("prefix1", 0).unwrap();
    assert_eq!(subs[1].recv_bytes(0).unwrap(), b"prefix1");
    quiet(&subs[0]);
    publisher.send("p2", 0).unwrap();
    assert_eq!(subs[0].recv_bytes(0).unwrap(), b"p2");
    quiet(&subs[1]);
}

#[test]
fn an_xsub_passes_everything_it_is_sent() {
    // libzmq's XSUB does not filter (its publishers do): a PUSH-like
    // sender reaching an XSUB through an XPUB proxy's manual mode, or a
    // publisher told to send everything, is received whole.
    let ctx = zmq::Context::new();
    let ep = inproc("xsub");
    let xpub = socket(&ctx, zmq::XPUB);
    xpub.set_xpub_manual(true).unwrap();
    xpub.bind(&ep).unwrap();
    let xsub = socket(&ctx, zmq::XSUB);
    xsub.connect(&ep).unwrap();
    xsub.send(&b"\x01weather"[..], 0).unwrap();
    assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01weather");
    // The XPUB applies a wider topic than the XSUB asked for.
    xpub.set_subscribe(b"").unwrap();
    xpub.send("news: not asked for", 0).unwrap();
    assert_eq!(xsub.recv_bytes(0).unwrap(), b"news: not asked for");
}

#[test]
fn a_stream_message_ends_with_its_data_frame_and_its_routing_id_option_names_the_newest_peer() {
    let ctx = zmq::Context::new();
    let server = socket(&ctx, zmq::STREAM);
    let ep = bind(&server, "tcp://127.0.0.1:*");
    let client = socket(&ctx, zmq::STREAM);
    client.connect(&ep).unwrap();
    // Connect notices on both sides.
    let notice = server.recv_multipart(0).unwrap();
    assert_eq!(notice[1], b"");
    let notice = client.recv_multipart(0).unwrap();
    assert_eq!(notice[1], b"");
    // As libzmq's stream_t stores it: the client's ROUTING_ID option is
    // the id it generated for the server.
    let id = client.get_identity().unwrap();
    assert_eq!(id, notice[0]);
    // SNDMORE on the data frame does not hold the message back.
    client.send(&id[..], zmq::SNDMORE).unwrap();
    client.send("GET /", zmq::SNDMORE).unwrap();
    let got = server.recv_multipart(0).unwrap();
    assert_eq!(got[1], b"GET /");
}

#[test]
fn a_proxy_whose_backend_cannot_send_still_obeys_its_control_socket() {
    let ctx = zmq::Context::new();
    let control_ep = inproc("proxy-control");
    let control = socket(&ctx, zmq::PAIR);
    control.bind(&control_ep).unwrap();
    let front_ep = inproc("proxy-front");
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let c = ctx.clone();
    let proxy = std::thread::spawn(move || {
        let front = c.socket(zmq::PULL).unwrap();
        front.bind(&front_ep).unwrap();
        // A PUSH with no peer: it can never take a message.
        let back = c.socket(zmq::PUSH).unwrap();
        back.bind("tcp://127.0.0.1:*").unwrap();
        let steer = c.socket(zmq::PAIR).unwrap();
        steer.connect(&control_ep).unwrap();
        ready_tx.send(front_ep).unwrap();
        let r = zmq::proxy_steerable(&front, &back, &steer);
        for s in [front, back, steer] {
            s.set_linger(0).unwrap();
        }
        r
    });
    let front_ep = ready_rx
        .recv_timeout(std::time::Duration::from_millis(TIMEOUT_MS as u64))
        .unwrap();
    let producer = socket(&ctx, zmq::PUSH);
    producer.connect(&front_ep).unwrap();
    for _ in 0..3 {
        producer.send("This is a test", 0).unwrap();
    }
    control.send("TERMINATE", 0).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(TIMEOUT_MS as u64);
    while !proxy.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "the proxy did not terminate"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(proxy.join().unwrap(), Ok(()));
}

#[test]
fn a_rep_with_a_request_waiting_is_readable_not_writable() {
    let ctx = zmq::Context::new();
    let rep = socket(&ctx, zmq::REP);
    let ep = bind(&rep, "tcp://127.0.0.1:*");
    let req = socket(&ctx, zmq::REQ);
    req.connect(&ep).unwrap();
    req.send("question", 0).unwrap();
    assert_eq!(rep.poll(zmq::POLLIN, i64::from(TIMEOUT_MS)).unwrap(), 1);
    // Asked twice: the prefetched request must not make it writable.
    for _ in 0..2 {
        assert_eq!(rep.get_events().unwrap(), zmq::POLLIN);
    }
    assert_eq!(rep.recv_bytes(0).unwrap(), b"question");
    assert_eq!(rep.get_events().unwrap(), zmq::POLLOUT);
    rep.send("answer", 0).unwrap();
    assert_eq!(req.poll(zmq::POLLIN, i64::from(TIMEOUT_MS)).unwrap(), 1);
    assert_eq!(req.get_events().unwrap(), zmq::POLLIN);
    assert_eq!(req.recv_bytes(0).unwrap(), b"answer");
    assert_eq!(req.get_events().unwrap(), zmq::POLLOUT);
}

#[test]
fn messages_received_over_a_connection_this_socket_made_carry_its_metadata() {
    let ctx = zmq::Context::new();
    for endpoint in ["tcp://127.0.0.1:*".to_string(), ipc("meta")] {
        let router = socket(&ctx, zmq::ROUTER);
        router.set_metadata("X-Side", b"bound").unwrap();
        let ep = bind(&router, &endpoint);
        let dealer = socket(&ctx, zmq::DEALER);
        dealer.set_identity(b"d").unwrap();
        dealer.connect(&ep).unwrap();
        dealer.send("hello", 0).unwrap();
        let mut id = router.recv_msg(0).unwrap();
        assert_eq!(id.gets("Socket-Type"), Some("DEALER"));
        assert!(id.source_fd().is_some_and(|fd| fd >= 0));
        assert_eq!(router.recv_bytes(0).unwrap(), b"hello");
        router.send_multipart(["d", "back"], 0).unwrap();
        // The dealer's pipe was made before its handshake.
        let mut back = dealer.recv_msg(0).unwrap();
        assert_eq!(&back[..], b"back");
        assert_eq!(back.gets("Socket-Type"), Some("ROUTER"));
        assert_eq!(back.gets("X-Side"), Some("bound"));
        assert!(back.source_fd().is_some_and(|fd| fd >= 0));
    }
    // inproc has no connection: no descriptor.
    let ep = inproc("meta");
    let a = socket(&ctx, zmq::PAIR);
    a.bind(&ep).unwrap();
    let b = socket(&ctx, zmq::PAIR);
    b.connect(&ep).unwrap();
    b.send("x", 0).unwrap();
    assert_eq!(a.recv_msg(0).unwrap().source_fd(), None);
}

/// How many empty messages `s` takes without blocking (at most 10000).
fn sends_until_full(s: &zmq::Socket) -> usize {
    (0..10_000)
        .take_while(|_| s.send("", zmq::DONTWAIT).is_ok())
        .count()
}

#[test]
fn hwm_changes_apply_to_existing_pipes() {
    let ctx = zmq::Context::new();
    // libzmq's test_sockopt_hwm: an inproc pipe holds the sender's SNDHWM
    // plus the receiver's RCVHWM, and a later SNDHWM applies to it.
    let ep = inproc("hwm-change");
    let push = socket(&ctx, zmq::PUSH);
    let pull = socket(&ctx, zmq::PULL);
    pull.set_rcvhwm(1).unwrap();
    push.set_sndhwm(1).unwrap();
    pull.connect(&ep).unwrap();
    push.bind(&ep).unwrap();
    push.set_sndhwm(5).unwrap();
    assert_eq!(push.get_sndhwm().unwrap(), 5);
    assert_eq!(sends_until_full(&push), 6);
    // Lowered while full: what is queued stays, no more is taken until
    // the queue is under the new mark.
    let ep = inproc("hwm-lower");
    let push = socket(&ctx, zmq::PUSH);
    let pull = socket(&ctx, zmq::PULL);
    pull.set_rcvhwm(1).unwrap();
    push.set_sndhwm(100).unwrap();
    pull.connect(&ep).unwrap();
    push.bind(&ep).unwrap();
    assert_eq!(sends_until_full(&push), 101);
    push.set_sndhwm(70).unwrap();
    assert_eq!(sends_until_full(&push), 0);
    for _ in 0..101 {
        pull.recv_bytes(0).unwrap();
    }
    assert_eq!(sends_until_full(&push), 71);
}

#[test]
fn an_inproc_connect_before_the_bind_queues_its_own_hwm() {
    // libzmq's test_hwm, connect and close first: SNDHWM 1 before the
    // binder exists lets one message wait, not two.
    let ctx = zmq::Context::new();
    let ep = inproc("hwm-prebind");
    let push = socket(&ctx, zmq::PUSH);
    push.set_sndhwm(1).unwrap();
    push.connect(&ep).unwrap();
    assert_eq!(sends_until_full(&push), 1);
    let pull = socket(&ctx, zmq::PULL);
    pull.set_rcvhwm(0).unwrap();
    pull.bind(&ep).unwrap();
    assert_eq!(pull.recv_bytes(0).unwrap(), b"");
}

#[test]
fn disconnect_drops_what_the_connection_brought_and_was_not_read() {
    // libzmq's test_spec_pushpull (atomic drop): after a disconnect and a
    // reconnect, nothing sent over the old connection is received.
    let ctx = zmq::Context::new();
    let push = socket(&ctx, zmq::PUSH);
    let ep = bind(&push, "tcp://127.0.0.1:*");
    let pull = socket(&ctx, zmq::PULL);
    pull.connect(&ep).unwrap();
    for m in ["a", "b", "c"] {
        push.send(m, 0).unwrap();
    }
    assert_eq!(pull.recv_bytes(0).unwrap(), b"a");
    pull.disconnect(&ep).unwrap();
    pull.connect(&ep).unwrap();
    pull.set_rcvtimeo(50).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(TIMEOUT_MS as u64);
    let first = loop {
        assert!(std::time::Instant::now() < deadline, "nothing arrived");
        push.send("new", zmq::DONTWAIT).ok();
        if let Ok(m) = pull.recv_bytes(0) {
            break m;
        }
    };
    assert_eq!(first, b"new");
}

#[test]
fn a_proxy_waits_for_its_capture_socket_as_libzmq_does() {
    // pyzmq's test_proxy_steerable: the capture PUSH binds, its PULL
    // connects just before the first message; the copy must not be lost.
    let ctx = zmq::Context::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let c = ctx.clone();
    std::thread::spawn(move || {
        let front = c.socket(zmq::PULL).unwrap();
        let back = c.socket(zmq::PUSH).unwrap();
        let capture = c.socket(zmq::PUSH).unwrap();
        let eps: Vec<String> = [&front, &back, &capture]
            .iter()
            .map(|s| bind(s, "tcp://127.0.0.1:*"))
            .collect();
        tx.send(eps).unwrap();
        // Ends with ETERM when the test's context goes.
        let _ = zmq::proxy_with_capture(&front, &back, &capture);
    });
    let eps = rx
        .recv_timeout(std::time::Duration::from_millis(TIMEOUT_MS as u64))
        .unwrap();
    let push = socket(&ctx, zmq::PUSH);
    push.connect(&eps[0]).unwrap();
    let pull = socket(&ctx, zmq::PULL);
    pull.connect(&eps[1]).unwrap();
    let tap = socket(&ctx, zmq::PULL);
    tap.connect(&eps[2]).unwrap();
    for i in 0..5 {
        push.send(format!("m{i}").as_str(), 0).unwrap();
    }
    for i in 0..5 {
        assert_eq!(pull.recv_bytes(0).unwrap(), format!("m{i}").as_bytes());
        assert_eq!(tap.recv_bytes(0).unwrap(), format!("m{i}").as_bytes());
    }
}

#[test]
fn a_peer_that_closes_during_the_handshake_is_reported_with_epipe() {
    use std::io::Write;
    // libzmq's tcp_read turns the end of stream into EPIPE, and its engine
    // reports HANDSHAKE_FAILED_NO_DETAIL with it (test_security_zap).
    const HANDSHAKE_FAILED_NO_DETAIL: u16 = 0x0800;
    let ctx = zmq::Context::new();
    let server = socket(&ctx, zmq::PULL);
    let mon_ep = inproc("epipe-mon");
    server
        .monitor(&mon_ep, i32::from(HANDSHAKE_FAILED_NO_DETAIL))
        .unwrap();
    let mon = socket(&ctx, zmq::PAIR);
    mon.connect(&mon_ep).unwrap();
    let ep = bind(&server, "tcp://127.0.0.1:*");
    let mut raw = std::net::TcpStream::connect(ep.strip_prefix("tcp://").unwrap()).unwrap();
    // Half a ZMTP greeting, then the end of the stream. The server's
    // greeting is read to the end before the socket is dropped: closing
    // with it unread would reset the connection (ECONNRESET, the next
    // test), which is what made this test fail now and then.
    raw.write_all(&[0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3])
        .unwrap();
    raw.shutdown(std::net::Shutdown::Write).unwrap();
    raw.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut rest = Vec::new();
    let _ = std::io::Read::read_to_end(&mut raw, &mut rest);
    drop(raw);
    let event = mon.recv_multipart(0).unwrap();
    assert_eq!(
        u16::from_le_bytes([event[0][0], event[0][1]]),
        HANDSHAKE_FAILED_NO_DETAIL
    );
    let value = u32::from_le_bytes(event[0][2..6].try_into().unwrap());
    assert_eq!(value, libc::EPIPE as u32);
}

#[test]
fn a_peer_that_resets_during_the_handshake_is_reported_with_its_errno() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    // libzmq's engine reports a connection error before the handshake as
    // HANDSHAKE_FAILED_NO_DETAIL with the errno (stream_engine_base_t::
    // error); a reset is ECONNRESET.
    const HANDSHAKE_FAILED_NO_DETAIL: u16 = 0x0800;
    let ctx = zmq::Context::new();
    let server = socket(&ctx, zmq::PULL);
    let mon_ep = inproc("reset-mon");
    server
        .monitor(&mon_ep, i32::from(HANDSHAKE_FAILED_NO_DETAIL))
        .unwrap();
    let mon = socket(&ctx, zmq::PAIR);
    mon.connect(&mon_ep).unwrap();
    let ep = bind(&server, "tcp://127.0.0.1:*");
    let mut raw = std::net::TcpStream::connect(ep.strip_prefix("tcp://").unwrap()).unwrap();
    raw.write_all(&[0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3])
        .unwrap();
    let off = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a live socket descriptor and a linger struct of the size
    // passed, read by the call only.
    let rc = unsafe {
        libc::setsockopt(
            raw.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&off as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0);
    drop(raw); // linger 0: a reset, not an end of stream
    let event = mon.recv_multipart(0).unwrap();
    assert_eq!(
        u16::from_le_bytes([event[0][0], event[0][1]]),
        HANDSHAKE_FAILED_NO_DETAIL
    );
    let value = u32::from_le_bytes(event[0][2..6].try_into().unwrap());
    assert_eq!(value, libc::ECONNRESET as u32);
}
