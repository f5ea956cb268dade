//! fabriq's draft sockets against libzmq 4.3.4 built with its draft API
//! (the `draft-peer` binary of this crate), over tcp, in both directions
//! and with either side binding: CLIENT/SERVER (routing ids, replies,
//! EHOSTUNREACH), SCATTER/GATHER, RADIO/DISH (groups, JOIN/LEAVE),
//! CHANNEL, and a refused pair.
//!
//! Every wait is bounded: the peer's answers are awaited with a 10 s
//! limit, fabriq's sockets have 5 s timeouts, and the retry loops that wait
//! for a JOIN to reach a RADIO have deadlines.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fabriq::{Context, Error, Message, Socket, SocketType};

const TIMEOUT_MS: i32 = 5000;

/// One libzmq socket in a `draft-peer` process.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Peer {
    fn new(socket_type: &str) -> Peer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_draft-peer"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start draft-peer");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut p = Peer {
            child,
            stdin,
            lines,
        };
        p.ok(&format!("socket {socket_type}"));
        p
    }

    /// Sends a command; returns its answer.
    fn ask(&mut self, cmd: &str) -> String {
        writeln!(self.stdin, "{cmd}").unwrap();
        self.stdin.flush().unwrap();
        self.lines
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("draft-peer did not answer {cmd:?}"))
    }

    /// Sends a command that must succeed; returns what follows "ok".
    fn ok(&mut self, cmd: &str) -> String {
        let answer = self.ask(cmd);
        assert!(answer.starts_with("ok"), "{cmd:?} -> {answer:?}");
        answer.trim_start_matches("ok").trim().to_string()
    }

    /// Receives one message: (routing id, group, body).
    fn recv(&mut self) -> (u32, Option<String>, String) {
        let answer = self.ask("recv");
        let words: Vec<&str> = answer.split(' ').collect();
        match words.as_slice() {
            ["msg", id, group, body] => (
                id.parse().unwrap(),
                (*group != "-").then(|| group.to_string()),
                body.to_string(),
            ),
            _ => panic!("libzmq recv: {answer:?}"),
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sock(ctx: &Context, ty: SocketType) -> Socket {
    let s = ctx.socket(ty).unwrap();
    s.set_rcvtimeo(TIMEOUT_MS).unwrap();
    s.set_sndtimeo(TIMEOUT_MS).unwrap();
    s.set_linger(0).unwrap();
    s
}

fn fabriq_bind(s: &Socket) -> String {
    s.bind("tcp://127.0.0.1:*").unwrap();
    s.get_last_endpoint().unwrap().unwrap()
}

// ---- CLIENT / SERVER ---------------------------------------------------

#[test]
fn libzmq_client_to_fabriq_server() {
    for fabriq_binds in [true, false] {
        let ctx = Context::new();
        let server = sock(&ctx, fabriq::SERVER);
        let mut a = Peer::new("CLIENT");
        let mut b = Peer::new("CLIENT");
        if fabriq_binds {
            let ep = fabriq_bind(&server);
            a.ok(&format!("connect {ep}"));
            b.ok(&format!("connect {ep}"));
        } else {
            let ep = a.ok("bind tcp://127.0.0.1:*");
            server.connect(&ep).unwrap();
            let ep = b.ok("bind tcp://127.0.0.1:*");
            server.connect(&ep).unwrap();
        }
        for round in 0..3 {
            a.ok(&format!("send a{round}"));
            b.ok(&format!("send b{round}"));
            let mut ids = Vec::new();
            for _ in 0..2 {
                let m = server.recv_msg(0).unwrap();
                let id = m.routing_id().expect("routing id");
                ids.push(id);
                let mut reply = Message::from(format!("re-{}", m.as_str().unwrap()));
                reply.set_routing_id(id).unwrap();
                server.send(reply, 0).unwrap();
            }
            assert_ne!(ids[0], ids[1]);
            assert_eq!(a.recv(), (0, None, format!("re-a{round}")));
            assert_eq!(b.recv(), (0, None, format!("re-b{round}")));
        }
        let mut m = Message::from("x");
        m.set_routing_id(0x7fff_fff0).unwrap();
        assert_eq!(server.send(m, 0), Err(Error::EHOSTUNREACH));
    }
}

#[test]
fn fabriq_client_to_libzmq_server() {
    for fabriq_binds in [true, false] {
        let ctx = Context::new();
        let client = sock(&ctx, fabriq::CLIENT);
        let mut server = Peer::new("SERVER");
        if fabriq_binds {
            let ep = fabriq_bind(&client);
            server.ok(&format!("connect {ep}"));
        } else {
            let ep = server.ok("bind tcp://127.0.0.1:*");
            client.connect(&ep).unwrap();
        }
        for i in 0..5 {
            client.send(format!("q{i}").as_str(), 0).unwrap();
            let (id, group, body) = server.recv();
            assert_ne!(id, 0, "libzmq gives the fabriq CLIENT a routing id");
            assert_eq!((group, body), (None, format!("q{i}")));
            server.ok(&format!("send r{i} {id}"));
            assert_eq!(client.recv_string(0).unwrap().unwrap(), format!("r{i}"));
        }
        // libzmq's errors for the same misuse, next to fabriq's.
        assert!(server.ask("send x 12345").starts_with("err EHOSTUNREACH"));
        assert!(server.ask("sendmore x 1").starts_with("err EINVAL"));
        assert_eq!(client.send("x", fabriq::SNDMORE), Err(Error::EINVAL));
    }
}

// ---- SCATTER / GATHER --------------------------------------------------

#[test]
fn scatter_gather_both_ways() {
    for fabriq_binds in [true, false] {
        let ctx = Context::new();
        // libzmq SCATTER -> fabriq GATHER.
        let gather = sock(&ctx, fabriq::GATHER);
        let mut scatter = Peer::new("SCATTER");
        if fabriq_binds {
            let ep = fabriq_bind(&gather);
            scatter.ok(&format!("connect {ep}"));
        } else {
            let ep = scatter.ok("bind tcp://127.0.0.1:*");
            gather.connect(&ep).unwrap();
        }
        for i in 0..20 {
            scatter.ok(&format!("send s{i}"));
        }
        for i in 0..20 {
            assert_eq!(gather.recv_string(0).unwrap().unwrap(), format!("s{i}"));
        }
        assert!(scatter.ask("sendmore x").starts_with("err EINVAL"));

        // fabriq SCATTER -> libzmq GATHER.
        let out = sock(&ctx, fabriq::SCATTER);
        let mut sink = Peer::new("GATHER");
        if fabriq_binds {
            let ep = fabriq_bind(&out);
            sink.ok(&format!("connect {ep}"));
        } else {
            let ep = sink.ok("bind tcp://127.0.0.1:*");
            out.connect(&ep).unwrap();
        }
        for i in 0..20 {
            out.send(format!("g{i}").as_str(), 0).unwrap();
        }
        for i in 0..20 {
            assert_eq!(sink.recv(), (0, None, format!("g{i}")));
        }
    }
}

// ---- RADIO / DISH --------------------------------------------------------

#[test]
fn libzmq_radio_to_fabriq_dish() {
    for fabriq_binds in [true, false] {
        let ctx = Context::new();
        let dish = sock(&ctx, fabriq::DISH);
        dish.join("movies").unwrap();
        dish.join("tv").unwrap();
        let mut radio = Peer::new("RADIO");
        if fabriq_binds {
            let ep = fabriq_bind(&dish);
            radio.ok(&format!("connect {ep}"));
        } else {
            let ep = radio.ok("bind tcp://127.0.0.1:*");
            dish.connect(&ep).unwrap();
        }
        // The joins reach libzmq's RADIO asynchronously: probe until one
        // arrives, bounded.
        for group in ["movies", "tv"] {
            let until = Instant::now() + Duration::from_millis(TIMEOUT_MS as u64);
            loop {
                radio.ok(&format!("send probe - {group}"));
                if dish.poll(fabriq::POLLIN, 20).unwrap() > 0 {
                    break;
                }
                assert!(
                    Instant::now() < until,
                    "libzmq RADIO never saw JOIN {group}"
                );
            }
            // A "sync" marks where the probes in flight end.
            radio.ok(&format!("send sync - {group}"));
            loop {
                let m = dish.recv_msg(0).unwrap();
                assert_eq!(m.group(), Some(group));
                if m.as_str() == Some("sync") {
                    break;
                }
            }
        }
        radio.ok("send m1 - movies");
        radio.ok("send w1 - weather");
        radio.ok("send t1 - tv");
        let got: Vec<_> = (0..2)
            .map(|_| {
                let m = dish.recv_msg(0).unwrap();
                (
                    m.group().unwrap().to_string(),
                    m.as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("movies".to_string(), "m1".to_string()),
                ("tv".to_string(), "t1".to_string())
            ]
        );
        // After LEAVE, libzmq's RADIO stops sending "movies" (the DISH
        // would filter it anyway; the raw-wire test checks the bytes).
        dish.leave("movies").unwrap();
        radio.ok("send m2 - movies");
        radio.ok("send t2 - tv");
        let m = dish.recv_msg(0).unwrap();
        assert_eq!((m.group(), m.as_str()), (Some("tv"), Some("t2")));
    }
}

#[test]
fn fabriq_radio_to_libzmq_dish() {
    for fabriq_binds in [true, false] {
        let ctx = Context::new();
        let radio = sock(&ctx, fabriq::RADIO);
        let mut dish = Peer::new("DISH");
        dish.ok("join news");
        if fabriq_binds {
            let ep = fabriq_bind(&radio);
            dish.ok(&format!("connect {ep}"));
        } else {
            let ep = dish.ok("bind tcp://127.0.0.1:*");
            radio.connect(&ep).unwrap();
        }
        // Until libzmq's JOIN reaches the fabriq RADIO, what it sends is
        // dropped: probe with a short receive timeout on libzmq's side,
        // bounded; then a "sync" marks where the probes in flight end.
        dish.ok("rcvtimeo 20");
        let until = Instant::now() + Duration::from_millis(TIMEOUT_MS as u64);
        loop {
            let mut m = Message::from("probe");
            m.set_group("news").unwrap();
            radio.send(m, 0).unwrap();
            if dish.ask("recv").starts_with("msg") {
                break;
            }
            assert!(
                Instant::now() < until,
                "the libzmq DISH's JOIN never took effect"
            );
        }
        dish.ok("rcvtimeo 5000");
        let mut m = Message::from("sync");
        m.set_group("news").unwrap();
        radio.send(m, 0).unwrap();
        while dish.recv() != (0, Some("news".into()), "sync".into()) {}
        for (group, body) in [("news", "n1"), ("sport", "s1"), ("news", "n2")] {
            let mut m = Message::from(body);
            m.set_group(group).unwrap();
            radio.send(m, 0).unwrap();
        }
        assert_eq!(dish.recv(), (0, Some("news".into()), "n1".into()));
        assert_eq!(dish.recv(), (0, Some("news".into()), "n2".into()));
    }
}

// ---- CHANNEL -----------------------------------------------------------

#[test]
fn channel_both_ways() {
    for fabriq_binds in [true, false] {
        let ctx = Context::new();
        let ours = sock(&ctx, fabriq::CHANNEL);
        let mut theirs = Peer::new("CHANNEL");
        if fabriq_binds {
            let ep = fabriq_bind(&ours);
            theirs.ok(&format!("connect {ep}"));
        } else {
            let ep = theirs.ok("bind tcp://127.0.0.1:*");
            ours.connect(&ep).unwrap();
        }
        ours.send("ping", 0).unwrap();
        assert_eq!(theirs.recv(), (0, None, "ping".into()));
        theirs.ok("send pong");
        assert_eq!(ours.recv_string(0).unwrap().unwrap(), "pong");
        assert!(theirs.ask("sendmore x").starts_with("err EINVAL"));
    }
}

// ---- refused pairs ---------------------------------------------------

#[test]
fn libzmq_refuses_what_fabriq_refuses() {
    // A fabriq DEALER connecting to libzmq's SERVER: libzmq's
    // check_socket_type says no, so nothing reaches the SERVER; a fabriq
    // CLIENT then does get through.
    let ctx = Context::new();
    let mut server = Peer::new("SERVER");
    let ep = server.ok("bind tcp://127.0.0.1:*");
    let dealer = sock(&ctx, fabriq::DEALER);
    let mon_ep = "inproc://draft-peer-mon";
    dealer.monitor(mon_ep, 0xffff).unwrap();
    let mon = sock(&ctx, fabriq::PAIR);
    mon.connect(mon_ep).unwrap();
    dealer.connect(&ep).unwrap();
    // fabriq itself refuses the SERVER peer (HANDSHAKE_FAILED_PROTOCOL).
    loop {
        let head = mon.recv_bytes(0).expect("a handshake event within 5 s");
        mon.recv_bytes(0).unwrap();
        let ev = u16::from_le_bytes([head[0], head[1]]);
        assert_ne!(ev, 0x1000, "a DEALER completed a handshake with SERVER");
        if ev == 0x2000 {
            break;
        }
    }
    let client = sock(&ctx, fabriq::CLIENT);
    client.connect(&ep).unwrap();
    client.send("only-me", 0).unwrap();
    let (_, _, body) = server.recv();
    assert_eq!(body, "only-me");
}
