//! The rest of libzmq's draft API on fabriq, fabriq on both sides:
//! RADIO / DISH over `udp://` (unicast and loopback multicast, IPv4 and
//! IPv6 unicast), DGRAM (IPv4, IPv6, dual stack), and PEER with
//! `connect_peer`; bad datagrams and bad udp endpoints.
//! (The interop tests against a draft-built libzmq are in
//! crates/fabriq-draft-peer.)
//!
//! Traffic stays on 127.0.0.1 and ::1 (and, for multicast, the loopback
//! interface). IPv6 multicast needs an interface with the MULTICAST flag,
//! which `lo` lacks on Linux, so that test makes a network namespace with
//! a veth pair in it and runs itself again in there (it needs root and
//! iproute2, and fails saying so without them). UDP may lose datagrams, so every test first waits, within a
//! deadline, until a probe has gone through; after that, on loopback with
//! a ready receiver and a handful of messages, delivery and order hold.
//! Every wait is bounded (5 s receive timeouts, deadlines on the probes).

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use fabriq::{Context, Error, Message, Socket, SocketType};

const TIMEOUT_MS: i32 = 5000;

fn sock(ctx: &Context, ty: SocketType) -> Socket {
    let s = ctx.socket(ty).unwrap();
    s.set_rcvtimeo(TIMEOUT_MS).unwrap();
    s.set_sndtimeo(TIMEOUT_MS).unwrap();
    s.set_linger(0).unwrap();
    s
}

fn last_endpoint(s: &Socket) -> String {
    s.get_last_endpoint().unwrap().unwrap()
}

fn radio_send(radio: &Socket, group: &str, body: &str) {
    let mut m = Message::from(body);
    m.set_group(group).unwrap();
    radio.send(m, 0).unwrap();
}

/// Sends `probe` to `group` until the DISH receives one (UDP: the first
/// may be lost, and the I/O thread may not have registered the sockets
/// yet), then drains what else came.
fn await_udp_path(radio: &Socket, dish: &Socket, group: &str) {
    dish.set_rcvtimeo(50).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "no probe reached the DISH");
        radio_send(radio, group, "probe");
        if let Ok(m) = dish.recv_msg(0) {
            assert_eq!(&m[..], b"probe");
            break;
        }
    }
    while dish.recv_msg(0).is_ok() {}
    dish.set_rcvtimeo(TIMEOUT_MS).unwrap();
}

fn recv_group(dish: &Socket) -> (String, String) {
    let m = dish.recv_msg(0).unwrap();
    (
        m.group().unwrap_or("").to_string(),
        String::from_utf8(m.to_vec()).unwrap(),
    )
}

#[test]
fn udp_radio_dish_unicast_filters_groups_join_and_leave() {
    let ctx = Context::new();
    let dish = sock(&ctx, fabriq::DISH);
    dish.bind("udp://127.0.0.1:*").unwrap();
    let ep = last_endpoint(&dish);
    assert!(ep.starts_with("udp://127.0.0.1:"), "{ep}");
    assert!(!ep.ends_with(":0") && !ep.ends_with(":*"), "{ep}");
    dish.join("tv").unwrap();
    let radio = sock(&ctx, fabriq::RADIO);
    radio.connect(&ep).unwrap();
    await_udp_path(&radio, &dish, "tv");

    // Not joined: filtered on receive (the RADIO sends every group).
    radio_send(&radio, "radio", "no");
    radio_send(&radio, "tv", "one");
    assert_eq!(recv_group(&dish), ("tv".into(), "one".into()));

    dish.join("radio").unwrap();
    radio_send(&radio, "radio", "two");
    dish.leave("tv").unwrap();
    radio_send(&radio, "tv", "no");
    radio_send(&radio, "radio", "three");
    assert_eq!(recv_group(&dish), ("radio".into(), "two".into()));
    assert_eq!(recv_group(&dish), ("radio".into(), "three".into()));
    dish.set_rcvtimeo(100).unwrap();
    assert_eq!(dish.recv_msg(0).err(), Some(Error::EAGAIN));
}

#[test]
fn udp_radio_dish_multicast_on_loopback() {
    let ctx = Context::new();
    let dish = sock(&ctx, fabriq::DISH);
    // Join 239.0.0.1 on the loopback interface, on an ephemeral port.
    dish.bind("udp://127.0.0.1;239.0.0.1:*").unwrap();
    let ep = last_endpoint(&dish);
    let port = ep.rsplit(':').next().unwrap().to_string();
    dish.join("mc").unwrap();
    let radio = sock(&ctx, fabriq::RADIO);
    // Send to the group through the loopback interface.
    radio
        .connect(&format!("udp://127.0.0.1;239.0.0.1:{port}"))
        .unwrap();
    await_udp_path(&radio, &dish, "mc");
    radio_send(&radio, "other", "no");
    radio_send(&radio, "mc", "hello");
    assert_eq!(recv_group(&dish), ("mc".into(), "hello".into()));
}

#[test]
fn udp_radio_dish_multicast_on_loopback_by_interface_name() {
    // `lo;GROUP`: joined and sent by interface index (ip_mreqn), where
    // libzmq looks up lo's IPv4 address; the same datagrams either way.
    let ctx = Context::new();
    let dish = sock(&ctx, fabriq::DISH);
    dish.bind("udp://lo;239.0.0.2:*").unwrap();
    let ep = last_endpoint(&dish);
    assert!(ep.starts_with("udp://lo;239.0.0.2:"), "{ep}");
    dish.join("mc").unwrap();
    let radio = sock(&ctx, fabriq::RADIO);
    radio
        .connect(&format!(
            "udp://lo;239.0.0.2:{}",
            ep.rsplit(':').next().unwrap()
        ))
        .unwrap();
    await_udp_path(&radio, &dish, "mc");
    radio_send(&radio, "mc", "hello");
    assert_eq!(recv_group(&dish), ("mc".into(), "hello".into()));
}

#[test]
fn udp_radio_drops_a_message_longer_than_a_datagram() {
    let ctx = Context::new();
    let dish = sock(&ctx, fabriq::DISH);
    dish.bind("udp://127.0.0.1:*").unwrap();
    dish.join("g").unwrap();
    let radio = sock(&ctx, fabriq::RADIO);
    radio.connect(&last_endpoint(&dish)).unwrap();
    await_udp_path(&radio, &dish, "g");
    // 1 + 1 + 8190 = 8192 bytes: the largest datagram; one more is dropped.
    let fits = "x".repeat(8190);
    let too_long = "y".repeat(8191);
    radio_send(&radio, "g", &too_long);
    radio_send(&radio, "g", &fits);
    radio_send(&radio, "g", "after");
    assert_eq!(recv_group(&dish).1, fits);
    assert_eq!(recv_group(&dish).1, "after");
}

#[test]
fn dish_drops_a_datagram_whose_group_runs_past_its_end() {
    let ctx = Context::new();
    let dish = sock(&ctx, fabriq::DISH);
    dish.bind("udp://127.0.0.1:*").unwrap();
    dish.join("ab").unwrap();
    let ep = last_endpoint(&dish);
    let to = &ep["udp://".len()..];
    let raw = UdpSocket::bind("127.0.0.1:0").unwrap();
    dish.set_rcvtimeo(50).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "no probe reached the DISH");
        raw.send_to(b"\x02abprobe", to).unwrap();
        if dish.recv_msg(0).is_ok() {
            break;
        }
    }
    while dish.recv_msg(0).is_ok() {}
    dish.set_rcvtimeo(TIMEOUT_MS).unwrap();
    // A group length of 200 in a 3-byte datagram, an empty datagram,
    // then a good one: only the good one arrives.
    raw.send_to(b"\xc8ab", to).unwrap();
    raw.send_to(b"", to).unwrap();
    raw.send_to(b"\x02abgood", to).unwrap();
    assert_eq!(recv_group(&dish), ("ab".into(), "good".into()));
    // Longer than 8192 bytes: cut to 8192, as libzmq's 8 KiB read buffer
    // does.
    let mut long = b"\x02ab".to_vec();
    long.resize(9000, b'z');
    raw.send_to(&long, to).unwrap();
    let m = dish.recv_msg(0).unwrap();
    assert_eq!(m.len(), 8192 - 3);
}

#[test]
fn dgram_both_directions() {
    let ctx = Context::new();
    let a = sock(&ctx, fabriq::DGRAM);
    a.bind("udp://127.0.0.1:*").unwrap();
    let a_at = last_endpoint(&a)["udp://".len()..].to_string();
    let b = sock(&ctx, fabriq::DGRAM);
    b.bind("udp://127.0.0.1:*").unwrap();
    let b_at = last_endpoint(&b)["udp://".len()..].to_string();

    a.set_rcvtimeo(50).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let from = loop {
        assert!(Instant::now() < deadline, "no datagram reached a");
        b.send(a_at.as_str(), fabriq::SNDMORE).unwrap();
        b.send("ping", 0).unwrap();
        if let Ok(from) = a.recv_bytes(0) {
            assert!(a.get_rcvmore().unwrap());
            assert_eq!(a.recv_bytes(0).unwrap(), b"ping");
            assert!(!a.get_rcvmore().unwrap());
            break from;
        }
    };
    // The address frame is libzmq's: "IP:PORT" and a NUL.
    assert_eq!(from, format!("{b_at}\0").into_bytes());
    while a.recv_bytes(0).is_ok() {}
    a.set_rcvtimeo(TIMEOUT_MS).unwrap();

    // Reply to the address as received.
    a.send(from, fabriq::SNDMORE).unwrap();
    a.send("pong", 0).unwrap();
    assert_eq!(
        b.recv_multipart(0).unwrap(),
        [format!("{a_at}\0").into_bytes(), b"pong".to_vec()]
    );

    // Dropped: an address that is not IP:PORT, a body over 8192 bytes.
    // A body of exactly 8192 goes.
    for (to, body) in [
        ("localhost:1", "x".to_string()),
        (a_at.as_str(), "y".repeat(8193)),
        (a_at.as_str(), "z".repeat(8192)),
        (a_at.as_str(), "last".to_string()),
    ] {
        b.send(to, fabriq::SNDMORE).unwrap();
        b.send(body.as_str(), 0).unwrap();
    }
    assert_eq!(
        a.recv_multipart(0).unwrap()[1],
        "z".repeat(8192).into_bytes()
    );
    assert_eq!(a.recv_multipart(0).unwrap()[1], b"last");
}

#[test]
fn dgram_send_rules_and_transports_as_libzmq() {
    let ctx = Context::new();
    let d = sock(&ctx, fabriq::DGRAM);
    d.bind("udp://127.0.0.1:*").unwrap();
    // The address needs SNDMORE, the body may not have it.
    assert_eq!(d.send("127.0.0.1:9", 0).err(), Some(Error::EINVAL));
    d.send("127.0.0.1:9", fabriq::SNDMORE).unwrap();
    assert_eq!(d.send("x", fabriq::SNDMORE).err(), Some(Error::EINVAL));
    d.send("x", 0).unwrap();
    // udp only, and bind only.
    assert_eq!(
        d.connect("udp://127.0.0.1:9").err(),
        Some(Error::ENOCOMPATPROTO)
    );
    assert_eq!(
        d.bind("tcp://127.0.0.1:*").err(),
        Some(Error::ENOCOMPATPROTO)
    );
}

#[test]
fn udp_endpoints_refused_as_libzmq() {
    let ctx = Context::new();
    let radio = sock(&ctx, fabriq::RADIO);
    let dish = sock(&ctx, fabriq::DISH);
    let pubs = sock(&ctx, fabriq::PUB);
    // Which side of udp each type may take.
    assert_eq!(
        radio.bind("udp://127.0.0.1:*").err(),
        Some(Error::ENOCOMPATPROTO)
    );
    assert_eq!(
        dish.connect("udp://127.0.0.1:5555").err(),
        Some(Error::ENOCOMPATPROTO)
    );
    assert_eq!(
        pubs.connect("udp://127.0.0.1:5555").err(),
        Some(Error::ENOCOMPATPROTO)
    );
    for bad in [
        "udp://127.0.0.1",
        "udp://127.0.0.1:port",
        "udp://127.0.0.1:0",
        "udp://*:5555",
        "udp://127.0.0.1;127.0.0.2:5555",
        "udp://[::1]:5555",
        "udp://[::1;[ff02::1]:5555",
        "udp://127.0.0.1;[ff02::1]:5555",
    ] {
        assert_eq!(radio.connect(bad).err(), Some(Error::EINVAL), "{bad}");
    }
    // No such interface: ENODEV, as libzmq's resolver.
    assert_eq!(
        radio.connect("udp://nosuchif0;239.0.0.1:5555").err(),
        Some(Error::ENODEV)
    );
    assert_eq!(
        dish.bind("udp://239.0.0.1;239.0.0.2:5555").err(),
        Some(Error::EINVAL)
    );
}

#[test]
fn peer_connect_peer_routes_both_ways() {
    let ctx = Context::new();
    let a = sock(&ctx, fabriq::PEER);
    a.bind("tcp://127.0.0.1:*").unwrap();
    let a_ep = last_endpoint(&a);
    let c = sock(&ctx, fabriq::PEER);
    c.bind("tcp://127.0.0.1:*").unwrap();
    let c_ep = last_endpoint(&c);

    let b = sock(&ctx, fabriq::PEER);
    let to_a = b.connect_peer(&a_ep).unwrap();
    let to_c = b.connect_peer(&c_ep).unwrap();
    assert_ne!(to_a, to_c);
    assert_ne!(to_a, 0);

    for (id, who) in [(to_a, &a), (to_c, &c)] {
        let mut m = Message::from("hello");
        m.set_routing_id(id).unwrap();
        b.send(m, 0).unwrap();
        let got = who.recv_msg(0).unwrap();
        assert_eq!(&got[..], b"hello");
        let mut reply = Message::from("back");
        reply.set_routing_id(got.routing_id().unwrap()).unwrap();
        who.send(reply, 0).unwrap();
        let back = b.recv_msg(0).unwrap();
        assert_eq!(&back[..], b"back");
        assert_eq!(back.routing_id(), Some(id));
    }
}

#[test]
fn peer_errors_as_libzmq() {
    let ctx = Context::new();
    let p = sock(&ctx, fabriq::PEER);
    p.set_immediate(true).unwrap();
    assert_eq!(
        p.connect_peer("tcp://127.0.0.1:9").err(),
        Some(Error::EFAULT)
    );
    let server = sock(&ctx, fabriq::SERVER);
    assert_eq!(
        server.connect_peer("tcp://127.0.0.1:9").err(),
        Some(Error::ENOTSUP)
    );
    let q = sock(&ctx, fabriq::PEER);
    // Single-part, and a routing id is needed.
    assert_eq!(q.send("x", 0).err(), Some(Error::EHOSTUNREACH));
    assert_eq!(q.send("x", fabriq::SNDMORE).err(), Some(Error::EINVAL));
    let mut m = Message::from("x");
    m.set_routing_id(12345).unwrap();
    assert_eq!(q.send(m, 0).err(), Some(Error::EHOSTUNREACH));
    assert_eq!(q.get_socket_type().unwrap(), fabriq::PEER);
}

#[test]
fn udp_bind_errors_come_from_bind_and_unbind_closes_the_socket() {
    let ctx = Context::new();
    let dish = sock(&ctx, fabriq::DISH);
    // Not an address of this host (TEST-NET-1).
    assert_eq!(
        dish.bind("udp://192.0.2.1:5555").err(),
        Some(Error::EADDRNOTAVAIL)
    );
    dish.bind("udp://127.0.0.1:*").unwrap();
    let ep = last_endpoint(&dish);
    dish.unbind(&ep).unwrap();
    // Once the I/O thread has closed it, the port is free for a socket
    // without SO_REUSEADDR.
    let deadline = Instant::now() + Duration::from_secs(10);
    while UdpSocket::bind(&ep["udp://".len()..]).is_err() {
        assert!(Instant::now() < deadline, "unbind did not close {ep}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_full_dish_stops_reading_and_resumes_when_there_is_room() {
    let ctx = Context::new();
    let dish = sock(&ctx, fabriq::DISH);
    dish.set_rcvhwm(2).unwrap();
    dish.bind("udp://127.0.0.1:*").unwrap();
    dish.join("g").unwrap();
    let radio = sock(&ctx, fabriq::RADIO);
    radio.connect(&last_endpoint(&dish)).unwrap();
    await_udp_path(&radio, &dish, "g");
    // Twenty datagrams against a queue of two: the rest wait in the
    // kernel's buffer (not dropped) until the application makes room.
    for i in 0..20 {
        radio_send(&radio, "g", &format!("m{i}"));
    }
    for i in 0..20 {
        assert_eq!(recv_group(&dish).1, format!("m{i}"));
    }
}

/// A udp endpoint has no connection: disconnecting or closing a RADIO
/// (linger 0) sends what it had queued, as one last write, and its
/// monitor reports nothing (no CONNECTED, no DISCONNECTED).
#[test]
fn a_radio_sends_what_it_queued_when_disconnected_or_closed_and_reports_no_events() {
    let ctx = Context::new();
    let dish = sock(&ctx, fabriq::DISH);
    dish.bind("udp://127.0.0.1:*").unwrap();
    dish.join("g").unwrap();
    let ep = last_endpoint(&dish);
    let radio = sock(&ctx, fabriq::RADIO);
    radio
        .monitor("inproc://udp-radio-events", fabriq::SocketEvent::ALL as i32)
        .unwrap();
    let events = ctx.socket(fabriq::PAIR).unwrap();
    events.connect("inproc://udp-radio-events").unwrap();
    radio.connect(&ep).unwrap();
    await_udp_path(&radio, &dish, "g");
    for i in 0..3 {
        radio_send(&radio, "g", &format!("d{i}"));
    }
    radio.disconnect(&ep).unwrap();
    for i in 0..3 {
        assert_eq!(recv_group(&dish).1, format!("d{i}"));
    }
    events.set_rcvtimeo(200).unwrap();
    assert_eq!(
        events.recv_msg(0).err(),
        Some(Error::EAGAIN),
        "a udp endpoint reports no monitor event"
    );

    let radio = sock(&ctx, fabriq::RADIO);
    radio.connect(&ep).unwrap();
    await_udp_path(&radio, &dish, "g");
    for i in 0..3 {
        radio_send(&radio, "g", &format!("c{i}"));
    }
    drop(radio);
    for i in 0..3 {
        assert_eq!(recv_group(&dish).1, format!("c{i}"));
    }
}

/// A socket with the `ipv6` option (`ZMQ_IPV6`) set, which IPv6 udp
/// endpoints need, as in libzmq.
fn sock6(ctx: &Context, ty: SocketType) -> Socket {
    let s = sock(ctx, ty);
    s.set_ipv6(true).unwrap();
    s
}

#[test]
fn udp_radio_dish_over_ipv6_loopback() {
    let ctx = Context::new();
    let dish = sock6(&ctx, fabriq::DISH);
    dish.bind("udp://[::1]:*").unwrap();
    let ep = last_endpoint(&dish);
    assert!(ep.starts_with("udp://[::1]:"), "{ep}");
    assert!(!ep.ends_with(":0") && !ep.ends_with(":*"), "{ep}");
    dish.join("tv").unwrap();
    let radio = sock6(&ctx, fabriq::RADIO);
    radio.connect(&ep).unwrap();
    await_udp_path(&radio, &dish, "tv");
    radio_send(&radio, "radio", "no");
    radio_send(&radio, "tv", "one");
    radio_send(&radio, "tv", "two");
    assert_eq!(recv_group(&dish), ("tv".into(), "one".into()));
    assert_eq!(recv_group(&dish), ("tv".into(), "two".into()));
}

#[test]
fn udp_ipv6_needs_the_ipv6_option_as_libzmq() {
    let ctx = Context::new();
    let radio = sock(&ctx, fabriq::RADIO);
    let dish = sock(&ctx, fabriq::DISH);
    // libzmq's resolver asks for IPv4 only without ZMQ_IPV6: EINVAL for a
    // destination, ENODEV for a bind address. The detail says what to set.
    assert_eq!(radio.connect("udp://[::1]:5555").err(), Some(Error::EINVAL));
    assert!(fabriq::last_error_detail().unwrap().contains("ipv6 option"));
    assert_eq!(dish.bind("udp://[::1]:*").err(), Some(Error::ENODEV));
    assert!(fabriq::last_error_detail().unwrap().contains("ipv6 option"));
    // The socket type is checked first, as libzmq does.
    assert_eq!(
        radio.bind("udp://[::1]:*").err(),
        Some(Error::ENOCOMPATPROTO)
    );
}

/// Sends `[to, ping]` from `from` until `at` receives it; returns the
/// address frame `at` got.
fn await_dgram(from: &Socket, at: &Socket, to: &str) -> Vec<u8> {
    at.set_rcvtimeo(50).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let got = loop {
        assert!(Instant::now() < deadline, "no datagram reached {to}");
        from.send(to, fabriq::SNDMORE).unwrap();
        from.send("ping", 0).unwrap();
        if let Ok(got) = at.recv_bytes(0) {
            assert_eq!(at.recv_bytes(0).unwrap(), b"ping");
            break got;
        }
    };
    while at.recv_bytes(0).is_ok() {}
    at.set_rcvtimeo(TIMEOUT_MS).unwrap();
    got
}

#[test]
fn dgram_round_trip_over_ipv6_loopback() {
    let ctx = Context::new();
    let a = sock6(&ctx, fabriq::DGRAM);
    a.bind("udp://[::1]:*").unwrap();
    let a_at = last_endpoint(&a)["udp://".len()..].to_string();
    let b = sock6(&ctx, fabriq::DGRAM);
    b.bind("udp://[::1]:*").unwrap();
    let b_at = last_endpoint(&b)["udp://".len()..].to_string();
    assert!(a_at.starts_with("[::1]:"), "{a_at}");

    // An IPv6 sender's address frame: "[IP]:PORT" and a NUL.
    let from = await_dgram(&b, &a, &a_at);
    assert_eq!(from, format!("{b_at}\0").into_bytes());
    // Reply to it as received; the bare form (libzmq's last-colon split)
    // is taken too.
    a.send(from, fabriq::SNDMORE).unwrap();
    a.send("pong", 0).unwrap();
    let bare = format!("::1:{}", b_at.rsplit(':').next().unwrap());
    a.send(bare.as_str(), fabriq::SNDMORE).unwrap();
    a.send("bare", 0).unwrap();
    for body in ["pong", "bare"] {
        assert_eq!(
            b.recv_multipart(0).unwrap(),
            [format!("{a_at}\0").into_bytes(), body.as_bytes().to_vec()]
        );
    }
}

#[test]
fn dgram_dual_stack_keeps_ipv4_address_frames() {
    let ctx = Context::new();
    // With the ipv6 option, `*` binds [::], which IPv4 reaches too.
    let d = sock6(&ctx, fabriq::DGRAM);
    d.bind("udp://*:*").unwrap();
    let port: u16 = last_endpoint(&d)
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let v4 = UdpSocket::bind("127.0.0.1:0").unwrap();
    let v6 = UdpSocket::bind("[::1]:0").unwrap();
    v4.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    v6.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    d.set_rcvtimeo(50).unwrap();
    for raw in [&v4, &v6] {
        let to = match raw.local_addr().unwrap() {
            std::net::SocketAddr::V4(_) => format!("127.0.0.1:{port}"),
            std::net::SocketAddr::V6(_) => format!("[::1]:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        let from = loop {
            assert!(Instant::now() < deadline, "no datagram reached {to}");
            raw.send_to(b"hi", &to).unwrap();
            if let Ok(from) = d.recv_bytes(0) {
                assert_eq!(d.recv_bytes(0).unwrap(), b"hi");
                break from;
            }
        };
        while d.recv_bytes(0).is_ok() {}
        // An IPv4 sender's frame is byte for byte the IPv4 socket's, not
        // "::ffff:127.0.0.1"; an IPv6 sender's is bracketed.
        assert_eq!(
            from,
            format!("{}\0", raw.local_addr().unwrap()).into_bytes()
        );
        d.send(from, fabriq::SNDMORE).unwrap();
        d.send("back", 0).unwrap();
        let mut buf = [0u8; 16];
        let (n, _) = raw.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"back");
    }
}

#[test]
fn dgram_ipv4_socket_drops_ipv6_destinations() {
    let ctx = Context::new();
    let a = sock(&ctx, fabriq::DGRAM);
    a.bind("udp://127.0.0.1:*").unwrap();
    let a_at = last_endpoint(&a)["udp://".len()..].to_string();
    let b = sock(&ctx, fabriq::DGRAM);
    b.bind("udp://127.0.0.1:*").unwrap();
    await_dgram(&b, &a, &a_at);
    // An IPv4 socket cannot send to [::1]: dropped, and what follows goes.
    b.send("[::1]:9", fabriq::SNDMORE).unwrap();
    b.send("dropped", 0).unwrap();
    b.send(a_at.as_str(), fabriq::SNDMORE).unwrap();
    b.send("after", 0).unwrap();
    assert_eq!(a.recv_multipart(0).unwrap()[1], b"after");
}

// ---- IPv6 multicast, in a network namespace of its own ----------------

/// Set in the child run of [`udp_radio_dish_ipv6_multicast_on_an_interface`]
/// (inside the namespace): `IFACE ADDR`, the interface to multicast on and
/// its address.
const MCAST6_CHILD: &str = "FABRIQ_TEST_MCAST6_CHILD";
/// The veth pair made in the namespace, and the address of `VETH_A`.
const VETH_A: &str = "fq6a";
const VETH_B: &str = "fq6b";
const VETH_A_ADDR: &str = "fd00::1";
/// Namespaces of this test are `fq-udp6-PID-N`.
const NETNS_PREFIX: &str = "fq-udp6-";

/// Serializes `ip netns add` / `del` within this process: concurrent first
/// uses of /run/netns race in iproute2 (it makes the directory a shared
/// mount point on first use). As crates/fabriq-cli/tests/common/netns.rs.
static NETNS_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
static NETNS_NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// What a bounded run of a command gave.
struct Ran {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` to its end, killing it after `limit` (and then panicking with
/// what it printed).
fn run_bounded(cmd: &mut std::process::Command, limit: Duration) -> Ran {
    use std::io::Read;
    use std::process::Stdio;
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let reader = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = reader(Box::new(child.stdout.take().unwrap()));
    let err = reader(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (out.join().unwrap(), err.join().unwrap());
    match status {
        Some(status) => Ran {
            status,
            stdout,
            stderr,
        },
        None => panic!("{what}: killed after {limit:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"),
    }
}

/// Runs `ip ARGS` (within 10 s), returning whether it succeeded and its stderr.
fn ip_run(args: &[&str]) -> (bool, String) {
    let ran = run_bounded(
        std::process::Command::new("ip").args(args),
        Duration::from_secs(10),
    );
    (ran.status.success(), ran.stdout + &ran.stderr)
}

/// Runs `ip ARGS`, panicking with its output when it fails.
fn ip(args: &[&str]) {
    let (ok, out) = ip_run(args);
    assert!(ok, "ip {} failed: {out}", args.join(" "));
}

/// Fails the test unless it can make namespaces: root and iproute2's `ip`
/// (as crates/fabriq-cli/tests/common/netns.rs).
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
        "the IPv6 multicast test needs root (CAP_NET_ADMIN, to create a network namespace \
         and a veth pair in it), but the effective uid is {}; run `cargo test` as root (CI \
         does) - it fails rather than skips",
        euid.as_deref().unwrap_or("unknown")
    );
    let found = std::process::Command::new("ip").arg("-V").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "the IPv6 multicast test needs `ip` from iproute2: apt-get install iproute2 \
         (scripts/test installs it)"
    );
}

/// A network namespace `fq-udp6-PID-N`, deleted on drop (with the veth
/// pair inside it), also when the test panics.
struct Netns {
    name: String,
}

impl Netns {
    fn new() -> Netns {
        require_root_and_iproute2();
        let pid = std::process::id();
        let n = NETNS_NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ns = Netns {
            name: format!("{NETNS_PREFIX}{pid}-{n}"),
        };
        let _lock = NETNS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        remove_stale_namespaces();
        let _ = ip_run(&["netns", "del", &ns.name]);
        ip(&["netns", "add", &ns.name]);
        ns
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _lock = NETNS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let _ = ip_run(&["netns", "del", &self.name]);
    }
}

/// Deletes namespaces `fq-udp6-PID-...` of test processes that no longer
/// run (a run killed before its guard could drop).
fn remove_stale_namespaces() {
    let (_, list) = ip_run(&["netns", "list"]);
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(pid) = name
            .strip_prefix(NETNS_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip_run(&["netns", "del", name]);
        }
    }
}

/// IPv6 multicast: `IFACE;[ff02::...]:PORT` joined and sent on one
/// interface, named and given by address. Linux's `lo` cannot do it: it
/// has no MULTICAST flag, and even with the flag (`ip link set lo multicast
/// on`) no ff00::/8 route, so sending is ENETUNREACH; with such a route
/// added it sends, but nothing is delivered. The `dummy` module is not in
/// every kernel (not in this VM's), so the test makes a network namespace
/// with a veth pair in it (`fd00::1`, `nodad`, on `fq6a`) and runs itself
/// again in there; the datagrams never leave the namespace.
#[test]
fn udp_radio_dish_ipv6_multicast_on_an_interface() {
    if let Ok(child) = std::env::var(MCAST6_CHILD) {
        let (iface, addr) = child.split_once(' ').expect("IFACE ADDR");
        return ipv6_multicast_in_namespace(iface, addr);
    }
    let ns = Netns::new();
    let n = ns.name.as_str();
    ip(&["-n", n, "link", "set", "lo", "up"]);
    ip(&[
        "-n", n, "link", "add", VETH_A, "type", "veth", "peer", "name", VETH_B,
    ]);
    let cidr = format!("{VETH_A_ADDR}/64");
    ip(&["-n", n, "addr", "add", &cidr, "dev", VETH_A, "nodad"]);
    ip(&["-n", n, "link", "set", VETH_A, "up"]);
    ip(&["-n", n, "link", "set", VETH_B, "up"]);
    // The kernel adds the multicast route once the link has its carrier.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, routes) = ip_run(&["-n", n, "-6", "route", "show", "table", "local"]);
        if routes
            .lines()
            .any(|l| l.starts_with("multicast ff00::/8") && l.contains(&format!("dev {VETH_A} ")))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no ff00::/8 multicast route on {VETH_A} in {n} within 10 s:\n{routes}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new("ip");
    child
        .args(["netns", "exec", n])
        .arg(&exe)
        .args([
            "udp_radio_dish_ipv6_multicast_on_an_interface",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MCAST6_CHILD, format!("{VETH_A} {VETH_A_ADDR}"));
    let ran = run_bounded(&mut child, Duration::from_secs(60));
    let log = format!("stdout:\n{}\nstderr:\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.status.success(),
        "the run in {n} failed: {}\n{log}",
        ran.status
    );
    // A child whose filter matched nothing would pass with "0 passed".
    assert!(
        ran.stdout.contains("test result: ok. 1 passed"),
        "the run in {n} did not run the test once\n{log}"
    );
    print!("{}", ran.stdout);
}

/// The child's part, in the namespace: RADIO to DISH on `iface` by name,
/// then on it by address, each group filtered.
fn ipv6_multicast_in_namespace(iface: &str, addr: &str) {
    for (on, group) in [
        (iface.to_string(), "[ff02::1:7a]"),
        (format!("[{addr}]"), "[ff02::1:7b]"),
    ] {
        let ctx = Context::new();
        let dish = sock6(&ctx, fabriq::DISH);
        dish.bind(&format!("udp://{on};{group}:*")).unwrap();
        let ep = last_endpoint(&dish);
        let port = ep.rsplit(':').next().unwrap().to_string();
        dish.join("mc").unwrap();
        let radio = sock6(&ctx, fabriq::RADIO);
        radio
            .connect(&format!("udp://{on};{group}:{port}"))
            .unwrap();
        await_udp_path(&radio, &dish, "mc");
        radio_send(&radio, "other", "no");
        radio_send(&radio, "mc", "hello");
        assert_eq!(
            recv_group(&dish),
            ("mc".into(), "hello".into()),
            "{on};{group}"
        );
        println!("ipv6 multicast on {on};{group}:{port}: ok");
    }
    multicast_loop_off_in_namespace(iface);
}

/// MULTICAST_LOOP (libzmq's draft ZMQ_MULTICAST_LOOP) off: what a RADIO
/// sends to a group does not come back to its own host, so a DISH joined
/// on the sending interface hears a RADIO with the option on and never
/// this one. (Not testable on `lo`: what is sent there arrives as input
/// whatever the option says, so it needs the veth of this namespace; its
/// other end has not joined the group, so nothing comes in that way.)
fn multicast_loop_off_in_namespace(iface: &str) {
    let ctx = Context::new();
    let dish = sock6(&ctx, fabriq::DISH);
    dish.bind(&format!("udp://{iface};[ff02::1:7c]:*")).unwrap();
    let ep = format!(
        "udp://{iface};[ff02::1:7c]:{}",
        last_endpoint(&dish).rsplit(':').next().unwrap()
    );
    dish.join("mc").unwrap();
    let quiet = sock6(&ctx, fabriq::RADIO);
    assert!(
        quiet.is_multicast_loop().unwrap(),
        "on by default, as libzmq"
    );
    quiet.set_multicast_loop(false).unwrap();
    assert!(!quiet.is_multicast_loop().unwrap());
    quiet.connect(&ep).unwrap();
    // Sent first, by the I/O thread that then sends the probes below:
    // looped back, they would be there before the first probe.
    for _ in 0..20 {
        radio_send(&quiet, "mc", "looped back");
    }
    let loud = sock6(&ctx, fabriq::RADIO);
    loud.connect(&ep).unwrap();
    await_udp_path(&loud, &dish, "mc");
    for _ in 0..20 {
        radio_send(&quiet, "mc", "looped back");
    }
    radio_send(&loud, "mc", "last");
    assert_eq!(recv_group(&dish), ("mc".into(), "last".into()));
    dish.set_rcvtimeo(100).unwrap();
    assert_eq!(dish.recv_msg(0).err(), Some(Error::EAGAIN));
    println!("multicast loop off on {iface}: ok");
}
