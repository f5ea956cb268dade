//! Connection behaviour: handshakes for every socket-type pair, identities,
//! subscriptions in both wire forms, heartbeats and timers (time is passed
//! in, so nothing here sleeps).

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{command_frame, connected, connected_types, drain, pump, raw_greeting, ready_frame};
use fabriq_zmtp::part::INLINE_MAX;
use fabriq_zmtp::{Config, Connection, Event, Part, ProtocolError, SocketType};

#[test]
fn every_pair_handshakes_or_refuses_as_libzmq_does() {
    for a in SocketType::ALL {
        for b in SocketType::ALL {
            let now = Instant::now();
            let mut ca = Connection::new(Config::new(a), now).unwrap();
            let mut cb = Connection::new(Config::new(b), now).unwrap();
            let (ea, eb) = pump(&mut ca, &mut cb, now);
            if a.is_compatible(b) {
                assert_eq!(ea.unwrap(), vec![Event::HandshakeComplete], "{a}-{b}");
                assert_eq!(eb.unwrap(), vec![Event::HandshakeComplete], "{a}-{b}");
                assert_eq!(ca.peer().unwrap().socket_type, b);
                assert_eq!(cb.peer().unwrap().socket_type, a);
                assert_eq!(
                    ca.peer().unwrap().version,
                    fabriq_zmtp::greeting::OUR_VERSION
                );
            } else {
                // Both sides refuse: each sees the incompatibility itself
                // (or the other side's ERROR, whichever it reads first).
                for (side, e) in [(a, ea), (b, eb)] {
                    match e.unwrap_err() {
                        ProtocolError::IncompatibleSocketType { .. }
                        | ProtocolError::PeerError(_) => {}
                        other => panic!("{side} in {a}-{b}: {other}"),
                    }
                }
            }
        }
    }
}

#[test]
fn identities_and_metadata_reach_the_peer() {
    let mut dealer = Config::new(SocketType::Dealer);
    dealer.identity = Bytes::from_static(b"worker-1");
    dealer.metadata.push("X-Rack", "b7").unwrap();
    let (d, r) = connected(dealer, Config::new(SocketType::Router));
    let peer = r.peer().unwrap();
    assert_eq!(&peer.identity[..], b"worker-1");
    assert_eq!(&peer.properties.get("x-rack").unwrap()[..], b"b7");
    assert!(d.peer().unwrap().identity.is_empty());
}

#[test]
fn invalid_local_configuration_is_refused() {
    let now = Instant::now();
    let mut c = Config::new(SocketType::Dealer);
    c.identity = Bytes::from_static(b"\0reserved");
    assert!(Connection::new(c, now).is_err());
    let mut c = Config::new(SocketType::Dealer);
    c.identity = Bytes::from(vec![1u8; 256]);
    assert!(Connection::new(c, now).is_err());
    let mut c = Config::new(SocketType::Dealer);
    c.metadata.push("Rack", "b7").unwrap();
    assert!(Connection::new(c, now).is_err());
}

#[test]
fn sending_before_the_handshake_is_a_usage_error() {
    let mut c = Connection::new(Config::new(SocketType::Push), Instant::now()).unwrap();
    assert_eq!(
        c.send(&[Part::from_static(b"x")]),
        Err(fabriq_zmtp::UsageError::NotReady)
    );
    let (mut push, _pull) = connected_types(SocketType::Push, SocketType::Pull);
    assert_eq!(push.send(&[]), Err(fabriq_zmtp::UsageError::EmptyMessage));
}

#[test]
fn publishers_read_both_subscription_forms() {
    let (mut xpub, _sub) = connected_types(SocketType::XPub, SocketType::Sub);
    let now = Instant::now();
    xpub.feed(&command_frame(b"\x09SUBSCRIBEnews"), now);
    xpub.feed(b"\x00\x05\x01news", now);
    xpub.feed(&command_frame(b"\x06CANCELnews"), now);
    xpub.feed(b"\x00\x05\x00news", now);
    // Not a subscription: multi-frame, or another first byte.
    xpub.feed(b"\x01\x01\x01\x00\x00", now);
    xpub.feed(b"\x00\x02hi", now);
    let got = common::events(&mut xpub).unwrap();
    let news = Bytes::from_static(b"news");
    assert_eq!(
        got,
        vec![
            Event::Subscribe(news.clone()),
            Event::Subscribe(news.clone()),
            Event::Cancel(news.clone()),
            Event::Cancel(news),
            Event::Message(
                [Part::from_static(b"\x01"), Part::new()]
                    .into_iter()
                    .collect()
            ),
            Event::Message([Part::from_static(b"hi")].into_iter().collect()),
        ]
    );
}

#[test]
fn subscribers_ignore_subscription_commands() {
    let (mut sub, _pub) = connected_types(SocketType::Sub, SocketType::Pub);
    sub.feed(&command_frame(b"\x09SUBSCRIBEx"), Instant::now());
    assert_eq!(sub.poll_event(), Ok(None));
}

#[test]
fn payloads_in_one_read_are_not_copied_unless_they_fit_inline() {
    let (mut pull, _push) = connected_types(SocketType::Pull, SocketType::Push);
    let buf = pull.recv_buf();
    // Two bodies one byte over the inline limit, then one at it.
    let big = [b'x'; INLINE_MAX + 1];
    let small = [b'y'; INLINE_MAX];
    for body in [&big[..], &big[..], &small[..]] {
        buf.extend_from_slice(&[0, body.len() as u8]);
        buf.extend_from_slice(body);
    }
    let base = buf.as_ptr() as usize;
    pull.input_received(Instant::now());
    let mut next = || match pull.poll_event().unwrap() {
        Some(Event::Message(m)) => m.into_iter().next().unwrap(),
        other => panic!("expected a message, got {other:?}"),
    };
    let (m1, m2, m3) = (next(), next(), next());
    assert_eq!(m1.as_ptr() as usize, base + 2);
    assert_eq!(m2.as_ptr() as usize, base + 2 + big.len() + 2);
    assert!(!m1.is_inline() && !m2.is_inline());
    assert!(m3.is_inline());
    assert_eq!((&m1[..], &m3[..]), (&big[..], &small[..]));
}

#[test]
fn caller_buffers_are_sliced_and_straddling_frames_copied() {
    let (mut pull, _push) = connected_types(SocketType::Pull, SocketType::Push);
    let now = Instant::now();
    // Page 1: "abc" whole, then the first half of "defg".
    // Page 2: the rest of "defg", then "hij" whole.
    let page1 = Bytes::from_static(b"\x00\x03abc\x00\x04de");
    let page2 = Bytes::from_static(b"fg\x00\x03hij");
    pull.handle_input(page1.clone(), now);
    let Some(Event::Message(abc)) = pull.poll_event().unwrap() else {
        panic!()
    };
    assert_eq!(abc[0].as_ptr(), page1[2..].as_ptr());
    assert_eq!(pull.poll_event(), Ok(None));
    pull.handle_input(page2.clone(), now);
    let Some(Event::Message(defg)) = pull.poll_event().unwrap() else {
        panic!()
    };
    assert_eq!(&defg[0][..], b"defg");
    let copied = defg[0].as_ptr() as usize;
    for page in [&page1, &page2] {
        let base = page.as_ptr() as usize;
        assert!(!(base..base + page.len()).contains(&copied));
    }
    let Some(Event::Message(hij)) = pull.poll_event().unwrap() else {
        panic!()
    };
    assert_eq!(hij[0].as_ptr(), page2[4..].as_ptr());
    assert_eq!(pull.poll_event(), Ok(None));

    // A stream that ends inside a caller buffer is truncated.
    pull.handle_input(Bytes::from_static(b"\x00\x09part"), now);
    assert_eq!(pull.poll_event(), Ok(None));
    assert_eq!(
        pull.end_of_input(),
        Some(ProtocolError::Truncated {
            stage: "frame",
            buffered: 6
        })
    );
}

#[test]
fn a_3_0_peer_gets_no_commands_from_3_1() {
    let now = Instant::now();
    let mut config = Config::new(SocketType::Sub);
    config.heartbeat_ivl = Some(Duration::from_millis(100));
    let mut sub = Connection::new(config, now).unwrap();
    sub.feed(&raw_greeting(3, 0, b"NULL"), now);
    sub.feed(&ready_frame(&[("Socket-Type", b"XPUB")]), now);
    assert_eq!(sub.poll_event(), Ok(Some(Event::HandshakeComplete)));
    drain(&mut sub);
    // No heartbeat timer for a 3.0 peer.
    assert_eq!(sub.poll_timeout(), None);
    sub.handle_timeout(now + Duration::from_secs(10)).unwrap();
    assert!(drain(&mut sub).is_empty());
}

#[test]
fn newer_major_versions_are_spoken_to_as_3_1() {
    let now = Instant::now();
    let mut pull = Connection::new(Config::new(SocketType::Pull), now).unwrap();
    pull.feed(&raw_greeting(4, 2, b"NULL"), now);
    pull.feed(&ready_frame(&[("socket-type", b"PUSH")]), now);
    assert_eq!(pull.poll_event(), Ok(Some(Event::HandshakeComplete)));
    assert_eq!(
        pull.peer().unwrap().version,
        fabriq_zmtp::greeting::OUR_VERSION
    );
}

#[test]
fn handshake_times_out() {
    let start = Instant::now();
    let mut config = Config::new(SocketType::Pull);
    config.handshake_ivl = Some(Duration::from_millis(500));
    let mut pull = Connection::new(config, start).unwrap();
    assert_eq!(
        pull.poll_timeout(),
        Some(start + Duration::from_millis(500))
    );
    pull.handle_timeout(start + Duration::from_millis(499))
        .unwrap();
    assert_eq!(
        pull.handle_timeout(start + Duration::from_millis(500)),
        Err(ProtocolError::HandshakeTimeout)
    );
    assert_eq!(pull.poll_timeout(), None);
}

#[test]
fn heartbeats_ping_and_expire_without_traffic() {
    let start = Instant::now();
    let mut config = Config::new(SocketType::Dealer);
    config.heartbeat_ivl = Some(Duration::from_secs(1));
    config.heartbeat_ttl = Some(Duration::from_millis(2500));
    config.heartbeat_timeout = Some(Duration::from_millis(300));
    let (mut a, mut b) = connected(config, Config::new(SocketType::Dealer));
    let t1 = a.poll_timeout().unwrap();
    assert!(t1 >= start + Duration::from_secs(1));
    a.handle_timeout(t1).unwrap();
    // PING with TTL 25 deciseconds and no context.
    assert_eq!(drain(&mut a), b"\x04\x07\x04PING\x00\x19".to_vec());

    // The peer answers; any traffic clears the pending timeout.
    b.feed(b"\x04\x07\x04PING\x00\x19", t1);
    assert_eq!(b.poll_event(), Ok(None));
    let pong = drain(&mut b);
    assert_eq!(pong, b"\x04\x05\x04PONG".to_vec());
    a.feed(&pong, t1 + Duration::from_millis(10));
    assert_eq!(a.poll_event(), Ok(None));
    a.handle_timeout(t1 + Duration::from_millis(400)).unwrap();

    // b now expects traffic within the 2.5 s TTL a announced.
    assert_eq!(b.poll_timeout(), Some(t1 + Duration::from_millis(2500)));
    assert_eq!(
        b.handle_timeout(t1 + Duration::from_millis(2500)),
        Err(ProtocolError::HeartbeatExpired("TTL"))
    );

    // Next PING goes unanswered: a gives up after the timeout.
    let t2 = a.poll_timeout().unwrap();
    a.handle_timeout(t2).unwrap();
    assert_eq!(
        a.handle_timeout(t2 + Duration::from_millis(300)),
        Err(ProtocolError::HeartbeatExpired("timeout"))
    );
}

#[test]
fn heartbeat_timeout_defaults_to_the_interval() {
    let mut config = Config::new(SocketType::Pair);
    config.heartbeat_ivl = Some(Duration::from_millis(100));
    let (mut a, _b) = connected(config, Config::new(SocketType::Pair));
    let t1 = a.poll_timeout().unwrap();
    a.handle_timeout(t1).unwrap();
    assert_eq!(a.poll_timeout(), Some(t1 + Duration::from_millis(100)));
    assert_eq!(
        a.handle_timeout(t1 + Duration::from_millis(100)),
        Err(ProtocolError::HeartbeatExpired("timeout"))
    );
}

#[test]
fn commands_of_the_callers_own_travel_and_reserved_names_are_refused() {
    let (mut push, mut pull) = connected_types(SocketType::Push, SocketType::Pull);
    push.send_command(b"CREDIT", Bytes::from_static(&[0, 0, 0, 16]))
        .unwrap();
    let (_, got) = pump(&mut push, &mut pull, Instant::now());
    assert_eq!(
        got.unwrap(),
        vec![Event::Command {
            name: Bytes::from_static(b"CREDIT"),
            body: Bytes::from_static(&[0, 0, 0, 16]),
        }]
    );
    for name in [&b"READY"[..], b"ping", b"MESSAGE", b"", &[b'X'; 256]] {
        assert_eq!(
            push.send_command(name, Bytes::new()),
            Err(fabriq_zmtp::UsageError::ReservedCommand),
            "{name:?}"
        );
    }
    let mut fresh = Connection::new(Config::new(SocketType::Push), Instant::now()).unwrap();
    assert_eq!(
        fresh.send_command(b"CREDIT", Bytes::new()),
        Err(fabriq_zmtp::UsageError::NotReady)
    );
}
