//! ZMTP heartbeats (libzmq's test_heartbeats): a peer that goes silent is
//! detected. The silence is made by a TCP relay between the two sockets
//! that can be frozen: it keeps both connections open but stops passing
//! bytes, like a peer whose host hangs. Over the fabric transports the relay
//! carries the TCP control connection (handshake and heartbeats) while
//! messages take the fabric: the heartbeat watches the control connection.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::{recv_text, Fabric, Outcome, Pair, Scenario, Sides, TCP};
use crate::adapter::{event, Kind, Transport};
use crate::ensure_eq;

/// The scenarios of this group.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "heartbeat_timeout_detects_dead_peer",
            about: "HEARTBEAT_IVL+TIMEOUT: the side that pings drops a silent peer",
            transports: TCP,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: heartbeat_timeout,
        },
        Scenario {
            name: "heartbeat_ttl_detects_dead_peer",
            about: "HEARTBEAT_TTL in the peer's PINGs: the pinged side drops the silent pinger",
            transports: TCP,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: heartbeat_ttl,
        },
        Scenario {
            name: "heartbeat_keeps_idle_connection",
            about: "with heartbeats on, an idle but live connection stays up",
            transports: TCP,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: heartbeat_keeps_idle,
        },
    ]
}

/// A TCP relay for one connection: listens on a port of its own, passes
/// bytes to `target` both ways until frozen.
struct Relay {
    transport: Transport,
    port: u16,
    frozen: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    /// A relay to `target`, an endpoint on `t` (tcp, or a fabric
    /// transport: then the relay carries the TCP control connection, with
    /// the handshake and heartbeats, while messages take the fabric).
    fn start(t: Transport, target: &str) -> Result<Relay, String> {
        let scheme = t
            .host_port_scheme()
            .ok_or_else(|| format!("no relay for {}", t.name()))?;
        let target = target
            .strip_prefix(scheme)
            .and_then(|rest| rest.strip_prefix("://"))
            .ok_or_else(|| format!("not a {scheme} endpoint: {target}"))?
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let frozen = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (f, s) = (frozen.clone(), stop.clone());
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        thread::spawn(move || {
            // Accept one connection (polling, so `stop` ends the wait).
            let client = loop {
                match listener.accept() {
                    Ok((c, _)) => break c,
                    Err(_) if !s.load(Ordering::Relaxed) => thread::sleep(Duration::from_millis(5)),
                    Err(_) => return,
                }
            };
            let Ok(server) = TcpStream::connect(&target) else {
                return;
            };
            for (from, to) in [
                (client.try_clone(), server.try_clone()),
                (server.try_clone(), client.try_clone()),
            ] {
                let (Ok(from), Ok(to)) = (from, to) else {
                    return;
                };
                let (f, s) = (f.clone(), s.clone());
                thread::spawn(move || pump(from, to, &f, &s));
            }
        });
        Ok(Relay {
            transport: t,
            port,
            frozen,
            stop,
        })
    }

    fn endpoint(&self) -> String {
        self.transport.local(&self.port.to_string())
    }

    fn freeze(&self) {
        self.frozen.store(true, Ordering::Relaxed);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Copies `from` to `to`; while frozen, reads and discards.
fn pump(mut from: TcpStream, mut to: TcpStream, frozen: &AtomicBool, stop: &AtomicBool) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if !frozen.load(Ordering::Relaxed) && to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
}

fn heartbeat_timeout(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    pull.set_heartbeat_ivl(100)?;
    pull.set_heartbeat_timeout(300)?;
    let mon = pull.monitor(event::HANDSHAKE_SUCCEEDED | event::DISCONNECTED)?;
    let endpoint = pull.bind_any(t)?;
    let relay = Relay::start(t, &endpoint)?;
    let push = p.b(Kind::Push)?;
    push.connect(&relay.endpoint())?;
    push.send(b"alive", 0)?;
    ensure_eq!(recv_text(&pull)?, "alive", "through the relay");
    mon.expect(event::HANDSHAKE_SUCCEEDED, 3000)?;
    relay.freeze();
    mon.expect(event::DISCONNECTED, 3000)
        .map_err(|e| format!("silent peer not dropped: {e}"))?;
    Ok(())
}

fn heartbeat_ttl(p: &Pair, t: Transport) -> Outcome {
    // A pings with TTL 500 ms; B has no heartbeat of its own and must
    // drop A when nothing comes for 500 ms.
    let pull = p.b(Kind::Pull)?;
    let mon = pull.monitor(event::HANDSHAKE_SUCCEEDED | event::DISCONNECTED)?;
    let endpoint = pull.bind_any(t)?;
    let relay = Relay::start(t, &endpoint)?;
    let push = p.a(Kind::Push)?;
    push.set_heartbeat_ivl(100)?;
    push.set_heartbeat_ttl(500)?;
    push.connect(&relay.endpoint())?;
    push.send(b"alive", 0)?;
    ensure_eq!(recv_text(&pull)?, "alive", "through the relay");
    mon.expect(event::HANDSHAKE_SUCCEEDED, 3000)?;
    // Let at least one PING (carrying the TTL) through.
    std::thread::sleep(Duration::from_millis(250));
    relay.freeze();
    mon.expect(event::DISCONNECTED, 3000)
        .map_err(|e| format!("silent pinger not dropped by TTL: {e}"))?;
    Ok(())
}

fn heartbeat_keeps_idle(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    // Timeouts generous enough for a loaded machine; eight PINGs still
    // pass while the connection idles.
    pull.set_heartbeat_ivl(100)?;
    pull.set_heartbeat_timeout(1000)?;
    let mon = pull.monitor(event::DISCONNECTED)?;
    let endpoint = pull.bind_any(t)?;
    let push = p.b(Kind::Push)?;
    push.set_heartbeat_ivl(100)?;
    push.set_heartbeat_timeout(1000)?;
    push.connect(&endpoint)?;
    push.send(b"first", 0)?;
    ensure_eq!(recv_text(&pull)?, "first", "first message");
    let events = mon.collect(800)?;
    ensure_eq!(events, Vec::new(), "monitor events while idle");
    push.send(b"second", 0)?;
    ensure_eq!(recv_text(&pull)?, "second", "after idling");
    Ok(())
}
