//! PLAIN and CURVE handshakes and the authentication hook, two
//! connections against each other in memory; CURVE's MESSAGE boxes under
//! replay, reordering and tampering; malformed HELLOs; Z85.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{command_frame, drain, events, pump};
use fabriq_zmtp::{
    z85, AuthReply, AuthRequest, Config, Connection, CurveKeyPair, Event, MechanismConfig,
    MechanismName, Part, ProtocolError, SocketType, UsageError,
};
use proptest::prelude::*;

fn config(socket_type: SocketType, mechanism: MechanismConfig, authenticate: bool) -> Config {
    let mut c = Config::new(socket_type);
    c.mechanism = mechanism;
    c.authenticate = authenticate;
    c
}

fn curve_configs(
    client_type: SocketType,
    server_type: SocketType,
    authenticate: bool,
) -> (Config, Config, CurveKeyPair, CurveKeyPair) {
    let server_keys = CurveKeyPair::generate();
    let client_keys = CurveKeyPair::generate();
    let client = config(
        client_type,
        MechanismConfig::CurveClient {
            server_public: server_keys.public,
            keys: client_keys.clone(),
        },
        false,
    );
    let server = config(
        server_type,
        MechanismConfig::CurveServer {
            keys: server_keys.clone(),
        },
        authenticate,
    );
    (client, server, client_keys, server_keys)
}

fn pair(a: Config, b: Config, now: Instant) -> (Connection, Connection) {
    (
        Connection::new(a, now).unwrap(),
        Connection::new(b, now).unwrap(),
    )
}

/// Sends `parts` from `a` and returns what `b` makes of it.
fn deliver(a: &mut Connection, b: &mut Connection, parts: &[&'static [u8]]) -> Vec<Event> {
    let parts: Vec<Part> = parts.iter().map(|p| Part::from_static(p)).collect();
    a.send(&parts).unwrap();
    b.feed(&drain(a), Instant::now());
    events(b).unwrap()
}

fn message(parts: &[&'static [u8]]) -> Event {
    Event::Message(parts.iter().map(|p| Part::from_static(p)).collect())
}

/// Cuts a post-handshake byte stream into whole frames (header included).
fn frames(mut wire: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !wire.is_empty() {
        let (header, len) = if wire[0] & 0x02 != 0 {
            let mut n = [0u8; 8];
            n.copy_from_slice(&wire[1..9]);
            (9, u64::from_be_bytes(n) as usize)
        } else {
            (2, usize::from(wire[1]))
        };
        out.push(wire[..header + len].to_vec());
        wire = &wire[header + len..];
    }
    out
}

// ---- PLAIN ---------------------------------------------------------------

fn plain_pair(now: Instant) -> (Connection, Connection) {
    pair(
        config(
            SocketType::Req,
            MechanismConfig::plain_client("admin", "secret"),
            false,
        ),
        config(SocketType::Rep, MechanismConfig::PlainServer, true),
        now,
    )
}

#[test]
fn plain_accepted_by_the_auth_hook() {
    let now = Instant::now();
    let (mut client, mut server) = plain_pair(now);
    let (ec, es) = pump(&mut client, &mut server, now);
    assert_eq!(ec.unwrap(), vec![]);
    assert_eq!(
        es.unwrap(),
        vec![Event::AuthRequest(AuthRequest {
            mechanism: MechanismName::Plain,
            credentials: vec![Bytes::from_static(b"admin"), Bytes::from_static(b"secret")],
        })]
    );
    // Paused: nothing more happens until the reply.
    assert_eq!(server.poll_event(), Ok(None));
    assert!(drain(&mut server).is_empty());
    let mut reply = AuthReply::allow("admin-id");
    reply.metadata.push("X-Role", "ops").unwrap();
    server.auth_reply(reply).unwrap();
    assert_eq!(
        server.auth_reply(AuthReply::allow("")),
        Err(UsageError::NoAuthPending)
    );
    let mut es = events(&mut server).unwrap();
    let (ec, more) = pump(&mut client, &mut server, now);
    es.extend(more.unwrap());
    assert_eq!(ec.unwrap(), vec![Event::HandshakeComplete]);
    assert_eq!(es, vec![Event::HandshakeComplete]);
    let peer = server.peer().unwrap();
    assert_eq!(&peer.user_id[..], b"admin-id");
    assert_eq!(&peer.auth_metadata.get("X-Role").unwrap()[..], b"ops");
    assert_eq!(peer.socket_type, SocketType::Req);
    assert!(client.peer().unwrap().user_id.is_empty());

    assert_eq!(
        deliver(&mut client, &mut server, &[b"", b"ping"]),
        vec![message(&[b"", b"ping"])]
    );
}

#[test]
fn plain_refused_by_the_auth_hook() {
    let now = Instant::now();
    let (mut client, mut server) = plain_pair(now);
    let (e1, e2) = pump(&mut client, &mut server, now);
    e1.unwrap();
    e2.unwrap();
    assert_eq!(
        server.auth_reply(AuthReply {
            status_code: 201,
            ..AuthReply::deny("x")
        }),
        Err(UsageError::InvalidAuthStatus(201))
    );
    server.auth_reply(AuthReply::deny("bad password")).unwrap();
    assert_eq!(
        server.poll_event(),
        Err(ProtocolError::AuthFailed {
            status: 400,
            reason: "bad password".into()
        })
    );
    // The ERROR carries the bare status code, as libzmq sends it.
    let wire = drain(&mut server);
    assert!(wire.ends_with(b"\x05ERROR\x03400"), "{wire:?}");
    client.feed(&wire, now);
    assert_eq!(
        events(&mut client),
        Err(ProtocolError::PeerRefusedAuth { status: 400 })
    );
}

#[test]
fn plain_temporary_failure_closes_without_error() {
    let now = Instant::now();
    let (mut client, mut server) = plain_pair(now);
    let (e1, e2) = pump(&mut client, &mut server, now);
    e1.unwrap();
    e2.unwrap();
    server
        .auth_reply(AuthReply {
            status_code: 300,
            ..AuthReply::deny("try later")
        })
        .unwrap();
    assert!(matches!(
        server.poll_event(),
        Err(ProtocolError::AuthFailed { status: 300, .. })
    ));
    assert!(drain(&mut server).is_empty());
}

#[test]
fn plain_server_without_authenticator_refuses() {
    let now = Instant::now();
    let (mut client, mut server) = pair(
        config(
            SocketType::Push,
            MechanismConfig::plain_client("u", "p"),
            false,
        ),
        config(SocketType::Pull, MechanismConfig::PlainServer, false),
        now,
    );
    let (ec, es) = pump(&mut client, &mut server, now);
    assert_eq!(
        es,
        Err(ProtocolError::NoAuthenticator(MechanismName::Plain))
    );
    assert!(matches!(ec, Err(ProtocolError::PeerError(_))));
}

#[test]
fn mechanism_mismatch_and_same_roles_fail() {
    let now = Instant::now();
    let (client, server, _, _) = curve_configs(SocketType::Pair, SocketType::Pair, false);
    let (mut a, mut b) = pair(
        client.clone(),
        config(SocketType::Pull, MechanismConfig::PlainServer, true),
        now,
    );
    let (ea, eb) = pump(&mut a, &mut b, now);
    assert_eq!(
        ea,
        Err(ProtocolError::MechanismMismatch {
            ours: MechanismName::Curve,
            theirs: MechanismName::Plain
        })
    );
    assert!(matches!(eb, Err(ProtocolError::MechanismMismatch { .. })));

    // libzmq sends as-server 0 whatever its role, so the flag is not
    // checked; two servers wait for a HELLO until the handshake timer
    // ends them, two clients refuse each other's HELLO.
    let (mut a, mut b) = pair(server.clone(), server, now);
    let (ea, eb) = pump(&mut a, &mut b, now);
    assert_eq!((ea.unwrap(), eb.unwrap()), (vec![], vec![]));
    assert_eq!(
        a.handle_timeout(now + Duration::from_secs(30)),
        Err(ProtocolError::HandshakeTimeout)
    );
    let (mut a, mut b) = pair(client.clone(), client, now);
    let (ea, _) = pump(&mut a, &mut b, now);
    assert_eq!(ea, Err(ProtocolError::UnexpectedCommand("HELLO".into())));
}

#[test]
fn null_with_authentication_asks_before_ready() {
    let now = Instant::now();
    let (mut a, mut b) = pair(
        config(SocketType::Pull, MechanismConfig::Null, true),
        Config::new(SocketType::Push),
        now,
    );
    let (ea, eb) = pump(&mut a, &mut b, now);
    assert_eq!(
        ea.unwrap(),
        vec![Event::AuthRequest(AuthRequest {
            mechanism: MechanismName::Null,
            credentials: vec![],
        })]
    );
    assert_eq!(eb.unwrap(), vec![]);
    a.auth_reply(AuthReply::allow("anon")).unwrap();
    let mut ea = events(&mut a).unwrap();
    let (more, eb) = pump(&mut a, &mut b, now);
    ea.extend(more.unwrap());
    assert_eq!(ea, vec![Event::HandshakeComplete]);
    assert_eq!(eb.unwrap(), vec![Event::HandshakeComplete]);
    assert_eq!(&a.peer().unwrap().user_id[..], b"anon");
}

// ---- CURVE ---------------------------------------------------------------

fn curve_connected(client_type: SocketType, server_type: SocketType) -> (Connection, Connection) {
    let now = Instant::now();
    let (c, s, _, _) = curve_configs(client_type, server_type, false);
    let (mut client, mut server) = pair(c, s, now);
    let (ec, es) = pump(&mut client, &mut server, now);
    assert_eq!(ec.unwrap(), vec![Event::HandshakeComplete]);
    assert_eq!(es.unwrap(), vec![Event::HandshakeComplete]);
    (client, server)
}

#[test]
fn curve_handshake_and_messages_both_ways() {
    let (mut client, mut server) = curve_connected(SocketType::Dealer, SocketType::Router);
    assert_eq!(client.peer().unwrap().socket_type, SocketType::Router);
    assert_eq!(server.peer().unwrap().socket_type, SocketType::Dealer);

    let secret: &'static [u8] = b"attack at dawn";
    client.send(&[Part::from_static(secret)]).unwrap();
    let wire = drain(&mut client);
    assert!(!wire.windows(secret.len()).any(|w| w == secret));
    // A MESSAGE is a data frame with no flags, as libzmq sends it.
    assert_eq!(wire[0], 0x00);
    assert_eq!(&wire[2..10], b"\x07MESSAGE");
    server.feed(&wire, Instant::now());
    assert_eq!(events(&mut server).unwrap(), vec![message(&[secret])]);

    assert_eq!(
        deliver(&mut server, &mut client, &[b"a", b"", b"c"]),
        vec![message(&[b"a", b"", b"c"])]
    );
    let big: &'static [u8] = Box::leak(vec![7u8; 100_000].into_boxed_slice());
    assert_eq!(
        deliver(&mut client, &mut server, &[big]),
        vec![message(&[big])]
    );
}

#[test]
fn curve_boxes_subscriptions_and_heartbeats() {
    let (mut sub, mut publ) = curve_connected(SocketType::Sub, SocketType::Pub);
    sub.subscribe(b"news").unwrap();
    let wire = drain(&mut sub);
    assert!(!wire.windows(9).any(|w| w == b"SUBSCRIBE"));
    publ.feed(&wire, Instant::now());
    assert_eq!(
        events(&mut publ).unwrap(),
        vec![Event::Subscribe(Bytes::from_static(b"news"))]
    );

    // A PING and its PONG go boxed too.
    let now = Instant::now();
    let mut c = curve_configs(SocketType::Pair, SocketType::Pair, false);
    c.0.heartbeat_ivl = Some(Duration::from_secs(1));
    let (mut a, mut b) = pair(c.0, c.1, now);
    let (e1, e2) = pump(&mut a, &mut b, now);
    e1.unwrap();
    e2.unwrap();
    assert!(a.is_ready() && b.is_ready());
    a.handle_timeout(a.poll_timeout().unwrap()).unwrap();
    let ping = drain(&mut a);
    assert!(!ping.windows(4).any(|w| w == b"PING"));
    b.feed(&ping, now);
    assert_eq!(events(&mut b).unwrap(), vec![]);
    let pong = drain(&mut b);
    assert!(pong.starts_with(b"\x00") && !pong.windows(4).any(|w| w == b"PONG"));
    a.feed(&pong, now);
    assert_eq!(events(&mut a).unwrap(), vec![]);
}

#[test]
fn curve_client_with_the_wrong_server_key_is_refused() {
    let now = Instant::now();
    let (mut c, s, _, _) = curve_configs(SocketType::Req, SocketType::Rep, false);
    if let MechanismConfig::CurveClient { server_public, .. } = &mut c.mechanism {
        *server_public = CurveKeyPair::generate().public;
    }
    let (mut client, mut server) = pair(c, s, now);
    let (ec, es) = pump(&mut client, &mut server, now);
    assert!(matches!(es, Err(ProtocolError::Cryptographic(_))), "{es:?}");
    assert!(matches!(ec, Err(ProtocolError::PeerError(_))), "{ec:?}");
}

#[test]
fn curve_auth_hook_sees_the_client_key() {
    for allow in [true, false] {
        let now = Instant::now();
        let (c, s, client_keys, _) = curve_configs(SocketType::Push, SocketType::Pull, true);
        let (mut client, mut server) = pair(c, s, now);
        let (_, es) = pump(&mut client, &mut server, now);
        assert_eq!(
            es.unwrap(),
            vec![Event::AuthRequest(AuthRequest {
                mechanism: MechanismName::Curve,
                credentials: vec![Bytes::copy_from_slice(client_keys.public.as_bytes())],
            })]
        );
        if allow {
            server
                .auth_reply(AuthReply::allow(client_keys.public.to_z85()))
                .unwrap();
            let mut es = events(&mut server).unwrap();
            let (ec, more) = pump(&mut client, &mut server, now);
            es.extend(more.unwrap());
            assert_eq!(es, vec![Event::HandshakeComplete]);
            assert_eq!(ec.unwrap(), vec![Event::HandshakeComplete]);
            assert_eq!(
                &server.peer().unwrap().user_id[..],
                client_keys.public.to_z85().as_bytes()
            );
            assert_eq!(
                deliver(&mut client, &mut server, &[b"hi"]),
                vec![message(&[b"hi"])]
            );
        } else {
            server
                .auth_reply(AuthReply::deny("not on the list"))
                .unwrap();
            assert!(matches!(
                server.poll_event(),
                Err(ProtocolError::AuthFailed { status: 400, .. })
            ));
            client.feed(&drain(&mut server), now);
            assert_eq!(
                events(&mut client),
                Err(ProtocolError::PeerRefusedAuth { status: 400 })
            );
        }
    }
}

#[test]
fn replayed_message_nonce_fails() {
    let (mut client, mut server) = curve_connected(SocketType::Push, SocketType::Pull);
    client.send(&[Part::from_static(b"once")]).unwrap();
    let wire = drain(&mut client);
    server.feed(&wire, Instant::now());
    assert_eq!(events(&mut server).unwrap(), vec![message(&[b"once"])]);
    server.feed(&wire, Instant::now());
    assert!(matches!(
        events(&mut server),
        Err(ProtocolError::BadNonce { .. })
    ));
}

#[test]
fn reordered_message_nonces_fail() {
    let (mut client, mut server) = curve_connected(SocketType::Push, SocketType::Pull);
    client.send(&[Part::from_static(b"one")]).unwrap();
    client.send(&[Part::from_static(b"two")]).unwrap();
    let f = frames(&drain(&mut client));
    assert_eq!(f.len(), 2);
    server.feed(&f[1], Instant::now());
    assert_eq!(events(&mut server).unwrap(), vec![message(&[b"two"])]);
    server.feed(&f[0], Instant::now());
    assert_eq!(
        events(&mut server),
        Err(ProtocolError::BadNonce {
            received: 3,
            last: 4
        })
    );
}

#[test]
fn tampered_boxes_fail() {
    // Flip one byte each in the nonce, the MAC, the flags and the body.
    for offset in [10, 20, 34, 36] {
        let (mut client, mut server) = curve_connected(SocketType::Push, SocketType::Pull);
        client.send(&[Part::from_static(b"payload")]).unwrap();
        let mut wire = drain(&mut client);
        wire[offset] ^= 0x01;
        server.feed(&wire, Instant::now());
        assert!(
            matches!(events(&mut server), Err(ProtocolError::Cryptographic(_))),
            "offset {offset}"
        );
    }
    // A NULL-style frame in clear is refused too.
    let (_, mut server) = curve_connected(SocketType::Push, SocketType::Pull);
    server.feed(b"\x00\x02hi", Instant::now());
    assert!(matches!(
        events(&mut server),
        Err(ProtocolError::UnexpectedCommand(_))
    ));
}

/// The client's greeting and HELLO command body, for hand-made variants.
fn client_hello() -> (Vec<u8>, Vec<u8>, Config) {
    let (c, s, _, _) = curve_configs(SocketType::Req, SocketType::Rep, false);
    let mut client = Connection::new(c, Instant::now()).unwrap();
    // The client sends HELLO once it has the server's greeting.
    let server = Connection::new(s.clone(), Instant::now()).unwrap();
    let mut server = server;
    client.feed(&drain(&mut server), Instant::now());
    assert_eq!(events(&mut client).unwrap(), vec![]);
    let wire = drain(&mut client);
    let (greeting, hello) = wire.split_at(64);
    assert_eq!(&hello[..2], b"\x04\xc8"); // one 200-byte command
    (greeting.to_vec(), hello[2..].to_vec(), s)
}

#[test]
fn hello_with_wrong_version_or_padding_is_refused() {
    let (greeting, hello, server_config) = client_hello();
    assert_eq!(&hello[..6], b"\x05HELLO");
    let variants: Vec<Vec<u8>> = vec![
        // Version 2.0.
        {
            let mut h = hello.clone();
            h[6] = 2;
            h
        },
        // Version 1.1.
        {
            let mut h = hello.clone();
            h[7] = 1;
            h
        },
        // One padding byte short.
        {
            let mut h = hello.clone();
            h.remove(8);
            h
        },
        // One padding byte too many.
        {
            let mut h = hello.clone();
            h.insert(8, 0);
            h
        },
    ];
    for h in variants {
        let mut server = Connection::new(server_config.clone(), Instant::now()).unwrap();
        server.feed(&greeting, Instant::now());
        server.feed(&command_frame(&h), Instant::now());
        assert!(
            matches!(
                events(&mut server),
                Err(ProtocolError::MalformedCommand { ref command, .. }) if command == "HELLO"
            ),
            "{:?}",
            &h[..8]
        );
    }
    // The original is accepted (a WELCOME goes out).
    let mut server = Connection::new(server_config, Instant::now()).unwrap();
    server.feed(&greeting, Instant::now());
    server.feed(&command_frame(&hello), Instant::now());
    assert_eq!(events(&mut server).unwrap(), vec![]);
    let out = drain(&mut server);
    assert!(out[64..].starts_with(b"\x04\xa8\x07WELCOME"));
}

#[test]
fn a_client_that_stops_mid_handshake_times_out() {
    let now = Instant::now();
    // Stalls after HELLO: the server has sent WELCOME and waits.
    let (greeting, hello, s) = client_hello();
    let mut server = Connection::new(s, now).unwrap();
    server.feed(&greeting, now);
    server.feed(&command_frame(&hello), now);
    assert_eq!(events(&mut server).unwrap(), vec![]);
    let deadline = server.poll_timeout().unwrap();
    assert_eq!(deadline, now + Duration::from_secs(30));
    assert_eq!(server.handle_timeout(now + Duration::from_secs(29)), Ok(()));
    assert_eq!(
        server.handle_timeout(deadline),
        Err(ProtocolError::HandshakeTimeout)
    );

    // An auth request that is never answered runs into the same deadline.
    let (mut client, mut server) = plain_pair(now);
    let (e1, e2) = pump(&mut client, &mut server, now);
    e1.unwrap();
    e2.unwrap();
    assert_eq!(server.poll_timeout(), Some(now + Duration::from_secs(30)));
    assert_eq!(
        server.handle_timeout(now + Duration::from_secs(30)),
        Err(ProtocolError::HandshakeTimeout)
    );
    assert_eq!(
        server.auth_reply(AuthReply::allow("")),
        Err(UsageError::Closed)
    );
}

// ---- Z85 -----------------------------------------------------------------

#[test]
fn z85_spec_vector() {
    let bytes = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B];
    assert_eq!(z85::encode(&bytes).unwrap(), "HelloWorld");
    assert_eq!(z85::decode("HelloWorld").unwrap(), bytes);
}

proptest! {
    #[test]
    fn z85_round_trips(words in proptest::collection::vec(any::<[u8; 4]>(), 0..64)) {
        let bytes: Vec<u8> = words.concat();
        let text = z85::encode(&bytes).unwrap();
        prop_assert_eq!(text.len(), bytes.len() / 4 * 5);
        prop_assert_eq!(z85::decode(&text).unwrap(), bytes);
    }
}
