//! The libzmq, fabriq and omq sides of every scenario, from one source.
//!
//! fabriq's API has the shape of the `zmq` crate, and [`crate::omqzmq`]
//! gives omq.rs's blocking API that shape, so the same code (one timing
//! loop) is compiled by `zmq_like!` against `zmq` (libzmq), against
//! `fabriq`, against `omqzmq` (omq), and against [`crate::syszmq`] (the
//! system's libzmq5 with CURVE, for the CURVE scenarios). All send from a
//! `&[u8]` and receive into a reused `Message`, as a program written for
//! the `zmq` crate would (fabriq's sender sends by reference in the
//! fabric's `zc` variant, [`Payload`]). Each socket also goes through the scenario's
//! security hooks ([`crate::security`]: CURVE server on the binding side,
//! client on the connecting side; nothing for NULL).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::scenario::{FabricVariant, Scenario};
use crate::worker::Gate;

/// The gate between the threads of an inproc worker.
#[derive(Default)]
pub struct InprocGate {
    bound: AtomicUsize,
    ready: AtomicUsize,
    go: AtomicBool,
    done: AtomicBool,
    failed: AtomicBool,
}

impl InprocGate {
    /// Waits until `n` receivers are bound (false if one failed).
    pub fn wait_bound(&self, n: usize) -> bool {
        self.wait(|g| g.bound.load(Ordering::Acquire) >= n)
    }

    /// Waits until `n` receivers are ready (false if one failed).
    pub fn wait_ready(&self, n: usize) -> bool {
        self.wait(|g| g.ready.load(Ordering::Acquire) >= n)
    }

    /// Lets the sender start the timed section.
    pub fn set_go(&self) {
        self.go.store(true, Ordering::Release);
    }

    /// Lets the sender close.
    pub fn set_done(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// A side failed: waiters give up.
    pub fn fail(&self) {
        self.failed.store(true, Ordering::Release);
        self.done.store(true, Ordering::Release);
    }

    fn wait(&self, cond: impl Fn(&InprocGate) -> bool) -> bool {
        loop {
            if cond(self) {
                return true;
            }
            if self.failed.load(Ordering::Acquire) {
                return false;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

impl Gate for InprocGate {
    fn bound(&self, _endpoint: &str) {
        self.bound.fetch_add(1, Ordering::AcqRel);
    }

    fn ready(&self) {
        self.ready.fetch_add(1, Ordering::AcqRel);
    }

    fn go(&self) -> Result<bool, String> {
        if self.failed.load(Ordering::Acquire) {
            return Err("another thread failed".into());
        }
        Ok(self.go.load(Ordering::Acquire))
    }

    fn wait_done(&self) -> Result<(), String> {
        if self.wait(|g| g.done.load(Ordering::Acquire)) && !self.failed.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err("another thread failed".into())
        }
    }
}

/// Sets the fabric variant's socket options on a fabriq socket of a
/// fabric trial (ofi+ transports only; the R trials over ipc / tcp and the
/// ZeroMQ scenarios are left alone). The default variant sets nothing.
///
/// Sets the socket options of the scenario's [`FabricVariant`].
/// The busy variant (tcp and ipc REQ/REP) sets `spin_us` on every socket.
pub fn fabric_tune(sock: &::fabriq::Socket, sc: &Scenario) -> Result<(), String> {
    if sc.variant == FabricVariant::Busy {
        return sock
            .set_spin_us(crate::scenario::BUSY_US)
            .map_err(|e| format!("busy variant: {e}"));
    }
    if !sc.transport.is_fabric() {
        return Ok(());
    }
    match sc.variant {
        FabricVariant::Default
        | FabricVariant::Busy
        | FabricVariant::NoCma
        | FabricVariant::ZeroCopy => Ok(()),
        FabricVariant::Unbuffered => sock.set_fabric_buffered(false),
        FabricVariant::Spin => sock.set_spin_us(crate::scenario::SPIN_US),
    }
    .map_err(|e| format!("fabric variant {:?}: {e}", sc.variant))
}

/// [`fabric_tune`] for the libraries without a fabric: nothing to set.
pub fn no_tune<S>(_sock: &S, _sc: &Scenario) -> Result<(), String> {
    Ok(())
}

/// What a streaming sender sends: the same bytes every time, from a
/// `&[u8]` (copied into each message, as the `zmq` crate's `send` does),
/// or, in the [`FabricVariant::ZeroCopy`] variant, by reference.
pub struct Payload {
    bytes: bytes::Bytes,
    by_reference: bool,
}

impl Payload {
    /// `sc.size` bytes of `fill`.
    pub fn new(fill: u8, sc: &Scenario) -> Payload {
        Payload {
            bytes: bytes::Bytes::from(vec![fill; sc.size]),
            by_reference: sc.variant == FabricVariant::ZeroCopy,
        }
    }
}

/// Sends `payload` on a libzmq socket (always copied).
pub fn send_zmq(sock: &::zmq::Socket, payload: &Payload) -> Result<(), ::zmq::Error> {
    sock.send(&payload.bytes[..], 0)
}

/// Sends `payload` on the system libzmq's socket (always copied).
pub fn send_syszmq(
    sock: &crate::syszmq::Socket,
    payload: &Payload,
) -> Result<(), crate::syszmq::Error> {
    sock.send(&payload.bytes[..], 0)
}

/// Sends `payload` on an omq socket (always copied).
pub fn send_omq(
    sock: &crate::omqzmq::Socket,
    payload: &Payload,
) -> Result<(), crate::omqzmq::Error> {
    sock.send(&payload.bytes[..], 0)
}

/// Sends `payload` on a fabriq socket: copied, or by reference (a
/// `Message` sharing the payload's `Bytes`, no copy: fabriq's zero-copy
/// send, as `zmq_msg_init_data` is libzmq's).
pub fn send_fabriq(sock: &::fabriq::Socket, payload: &Payload) -> Result<(), ::fabriq::Error> {
    if payload.by_reference {
        sock.send(::fabriq::Message::from(payload.bytes.clone()), 0)
    } else {
        sock.send(&payload.bytes[..], 0)
    }
}

/// Generates one implementation module from the shared source.
macro_rules! zmq_like {
    ($name:ident, $krate:path, $tune:path, $send:path, $sec:path, $doc:literal) => {
        #[doc = $doc]
        pub mod $name {
            use std::time::Instant;

            use $krate as z;
            use $sec as sec;

            use crate::scenario::{Pattern, Scenario};
            use crate::sys::{pin_current_thread, Usage};
            use crate::worker::{
                bind_endpoint, time_round_trips, warm_burst, Gate, Outcome, Role, WorkerSpec,
                WARM_PAUSE,
            };
            use crate::zmqlike::InprocGate;

            fn err(what: &str) -> impl Fn(z::Error) -> String + '_ {
                move |e| format!("{what}: {e}")
            }

            /// Runs one side of a tcp or ipc trial in this process.
            pub fn process(
                spec: &WorkerSpec,
                role: Role,
                gate: &dyn Gate,
            ) -> Result<Outcome, String> {
                let ctx = z::Context::new();
                let sc = &spec.scenario;
                let ep = bind_endpoint(sc.transport, 0);
                match role {
                    Role::Sender => sender(&ctx, sc, &spec.endpoints, gate),
                    Role::Receiver => receiver(&ctx, sc, &ep, spec.stall_ms, gate),
                    Role::Client if sc.pattern == Pattern::CurveHandshake => {
                        handshake_client(&ctx, sc, &spec.endpoints[0], spec.stall_ms)
                    }
                    Role::Client => client(&ctx, sc, &spec.endpoints[0]),
                    Role::Server => server(&ctx, sc, &ep, gate),
                    Role::Inproc => Err("inproc runs in one process".into()),
                }
            }

            /// Sends warm-up messages until `go`, then the timed ones;
            /// closes when the receivers are done.
            pub fn sender(
                ctx: &z::Context,
                sc: &Scenario,
                endpoints: &[String],
                gate: &dyn Gate,
            ) -> Result<Outcome, String> {
                let kind = if sc.pattern == Pattern::Pubsub {
                    z::PUB
                } else {
                    z::PUSH
                };
                let sock = ctx.socket(kind).map_err(err("socket"))?;
                $tune(&sock, sc)?;
                sec::client(&sock, sc)?;
                sock.set_sndhwm(sc.hwm()).map_err(err("sndhwm"))?;
                sock.set_linger(0).map_err(err("linger"))?;
                for ep in endpoints {
                    sock.connect(ep).map_err(err("connect"))?;
                }
                let warm = crate::zmqlike::Payload::new(b'W', sc);
                let timed = crate::zmqlike::Payload::new(b'T', sc);
                let burst = warm_burst(sc.size);
                let mut warm_sent = 0u64;
                loop {
                    for _ in 0..burst {
                        $send(&sock, &warm).map_err(err("send warm-up"))?;
                    }
                    warm_sent += burst;
                    if warm_sent >= sc.warm {
                        if gate.go()? {
                            break;
                        }
                        std::thread::sleep(WARM_PAUSE);
                    }
                }
                let before = Usage::now();
                let start = Instant::now();
                for _ in 0..sc.count {
                    $send(&sock, &timed).map_err(err("send"))?;
                }
                let elapsed_s = start.elapsed().as_secs_f64();
                gate.wait_done()?;
                let usage = Usage::now().since(&before);
                drop(sock);
                Ok(Outcome::sent(sc, elapsed_s, usage))
            }

            /// Binds, skips warm-up messages, then times and checks
            /// exactly `count` timed messages.
            pub fn receiver(
                ctx: &z::Context,
                sc: &Scenario,
                ep: &str,
                stall_ms: u64,
                gate: &dyn Gate,
            ) -> Result<Outcome, String> {
                let kind = if sc.pattern == Pattern::Pubsub {
                    z::SUB
                } else {
                    z::PULL
                };
                let sock = ctx.socket(kind).map_err(err("socket"))?;
                $tune(&sock, sc)?;
                sec::server(&sock, sc)?;
                sock.set_rcvhwm(sc.hwm()).map_err(err("rcvhwm"))?;
                sock.set_linger(0).map_err(err("linger"))?;
                if sc.pattern == Pattern::Pubsub {
                    sock.set_subscribe(b"").map_err(err("subscribe"))?;
                }
                sock.bind(ep).map_err(err("bind"))?;
                let bound = sock
                    .get_last_endpoint()
                    .map_err(err("last endpoint"))?
                    .map_err(|_| "endpoint not UTF-8".to_string())?;
                gate.bound(&bound);
                let mut msg = z::Message::new();
                sock.recv(&mut msg, 0).map_err(err("recv warm-up"))?;
                if msg.len() != sc.size || msg[0] != b'W' {
                    return Err(format!(
                        "first message: {} bytes, expected a {}-byte warm-up",
                        msg.len(),
                        sc.size
                    ));
                }
                gate.ready();
                sock.set_rcvtimeo(stall_ms as i32)
                    .map_err(err("rcvtimeo"))?;
                loop {
                    match sock.recv(&mut msg, 0) {
                        Ok(()) => {}
                        Err(z::Error::EAGAIN) => continue,
                        Err(e) => return Err(format!("recv warm-up: {e}")),
                    }
                    if msg.len() != sc.size {
                        return Err(format!(
                            "warm-up message of {} bytes, expected {}",
                            msg.len(),
                            sc.size
                        ));
                    }
                    if msg[0] == b'T' {
                        break;
                    }
                }
                let before = Usage::now();
                let start = Instant::now();
                let started_at = crate::worker::wall_now();
                let mut got = 1u64;
                while got < sc.count {
                    match sock.recv(&mut msg, 0) {
                        Ok(()) => {}
                        Err(z::Error::EAGAIN) => {
                            return Err(format!(
                                "lost {} of {} messages (nothing for {stall_ms} ms)",
                                sc.count - got,
                                sc.count
                            ))
                        }
                        Err(e) => return Err(format!("recv: {e}")),
                    }
                    if msg.len() != sc.size || msg[0] != b'T' {
                        return Err(format!(
                            "message {got}: {} bytes starting {:?}, expected {} bytes of 'T'",
                            msg.len(),
                            msg.first(),
                            sc.size
                        ));
                    }
                    got += 1;
                }
                let elapsed_s = start.elapsed().as_secs_f64();
                let span = Some((started_at, crate::worker::wall_now()));
                let usage = Usage::now().since(&before);
                Ok(Outcome {
                    messages: got,
                    bytes: got * sc.size as u64,
                    elapsed_s,
                    rate: (got - 1).max(1) as f64 / elapsed_s,
                    usage,
                    span,
                    ..Outcome::default()
                })
            }

            /// REQ: warm-up round trips, then timed ones into a histogram.
            pub fn client(ctx: &z::Context, sc: &Scenario, ep: &str) -> Result<Outcome, String> {
                let sock = ctx.socket(z::REQ).map_err(err("socket"))?;
                $tune(&sock, sc)?;
                sec::client(&sock, sc)?;
                sock.set_linger(0).map_err(err("linger"))?;
                sock.connect(ep).map_err(err("connect"))?;
                let payload = vec![b'R'; sc.size];
                let mut msg = z::Message::new();
                time_round_trips(sc, || {
                    sock.send(&payload[..], 0).map_err(err("send"))?;
                    sock.recv(&mut msg, 0).map_err(err("recv"))?;
                    if msg.len() != sc.size {
                        return Err(format!(
                            "reply of {} bytes, expected {}",
                            msg.len(),
                            sc.size
                        ));
                    }
                    Ok(())
                })
            }

            /// The handshake scenario's client: each round makes a new REQ
            /// socket (CURVE client in CURVE scenarios), connects, sends one
            /// request, waits at most `timeout_ms` for its reply (else the
            /// handshake did not complete: an error), and closes the
            /// socket; `sc.warm` untimed rounds, then `sc.count` timed
            /// ones, each round's time in the histogram.
            pub fn handshake_client(
                ctx: &z::Context,
                sc: &Scenario,
                ep: &str,
                timeout_ms: u64,
            ) -> Result<Outcome, String> {
                let payload = vec![b'H'; sc.size];
                let mut msg = z::Message::new();
                let mut round = 0u64;
                time_round_trips(sc, || {
                    round += 1;
                    let sock = ctx.socket(z::REQ).map_err(err("socket"))?;
                    $tune(&sock, sc)?;
                    sec::client(&sock, sc)?;
                    sock.set_linger(0).map_err(err("linger"))?;
                    sock.set_rcvtimeo(timeout_ms as i32)
                        .map_err(err("rcvtimeo"))?;
                    sock.connect(ep).map_err(err("connect"))?;
                    sock.send(&payload[..], 0).map_err(err("send"))?;
                    match sock.recv(&mut msg, 0) {
                        Ok(()) => {}
                        Err(z::Error::EAGAIN) => {
                            return Err(format!(
                                "round {round}: no reply within {timeout_ms} ms: the handshake did not complete"
                            ))
                        }
                        Err(e) => return Err(format!("round {round}: recv: {e}")),
                    }
                    if msg.len() != sc.size {
                        return Err(format!(
                            "reply of {} bytes, expected {}",
                            msg.len(),
                            sc.size
                        ));
                    }
                    drop(sock);
                    Ok(())
                })
            }

            /// REP: answers exactly warm + count requests.
            pub fn server(
                ctx: &z::Context,
                sc: &Scenario,
                ep: &str,
                gate: &dyn Gate,
            ) -> Result<Outcome, String> {
                let sock = ctx.socket(z::REP).map_err(err("socket"))?;
                $tune(&sock, sc)?;
                sec::server(&sock, sc)?;
                sock.set_linger(0).map_err(err("linger"))?;
                sock.bind(ep).map_err(err("bind"))?;
                let bound = sock
                    .get_last_endpoint()
                    .map_err(err("last endpoint"))?
                    .map_err(|_| "endpoint not UTF-8".to_string())?;
                gate.bound(&bound);
                let reply = vec![b'A'; sc.size];
                let mut msg = z::Message::new();
                let mut before = Usage::now();
                let mut start = Instant::now();
                for i in 0..sc.warm + sc.count {
                    sock.recv(&mut msg, 0).map_err(err("recv"))?;
                    if i == sc.warm {
                        before = Usage::now();
                        start = Instant::now();
                    }
                    if msg.len() != sc.size {
                        return Err(format!(
                            "request of {} bytes, expected {}",
                            msg.len(),
                            sc.size
                        ));
                    }
                    sock.send(&reply[..], 0).map_err(err("send"))?;
                }
                let outcome = Outcome::round_trips(sc, start, &before, None);
                // Let the last reply leave before the socket closes.
                std::thread::sleep(std::time::Duration::from_millis(20));
                Ok(outcome)
            }

            /// Both sides as threads of this process: the sending side on
            /// `spec.cpus`, the receiving side(s) on `spec.cpus_peer` (each
            /// unpinned when empty).
            pub fn inproc(spec: &WorkerSpec) -> Result<Outcome, String> {
                let ctx = z::Context::new();
                let sc = &spec.scenario;
                let gate = InprocGate::default();
                let receivers = if sc.pattern == Pattern::Reqrep {
                    1
                } else {
                    sc.subs
                };
                let pin = |cpus: &[usize]| {
                    if !cpus.is_empty() {
                        // Pinning failures were already reported for the main thread.
                        let _ = pin_current_thread(cpus);
                    }
                };
                let endpoints: Vec<String> = (0..receivers)
                    .map(|i| bind_endpoint(sc.transport, i))
                    .collect();
                std::thread::scope(|s| {
                    let peers: Vec<_> = (0..receivers)
                        .map(|i| {
                            let (ctx, gate) = (&ctx, &gate);
                            s.spawn(move || {
                                pin(&spec.cpus_peer);
                                let ep = bind_endpoint(sc.transport, i);
                                let r = if sc.pattern == Pattern::Reqrep {
                                    server(ctx, sc, &ep, gate)
                                } else {
                                    receiver(ctx, sc, &ep, spec.stall_ms, gate)
                                };
                                if r.is_err() {
                                    gate.fail();
                                }
                                r
                            })
                        })
                        .collect();
                    let (ctx, gate, endpoints) = (&ctx, &gate, &endpoints);
                    let main = s.spawn(move || {
                        pin(&spec.cpus);
                        if !gate.wait_bound(receivers) {
                            return Err("a receiver failed to bind".to_string());
                        }
                        let r = if sc.pattern == Pattern::Reqrep {
                            client(ctx, sc, &endpoints[0])
                        } else {
                            sender(ctx, sc, endpoints, gate)
                        };
                        if r.is_err() {
                            gate.fail();
                        }
                        r
                    });
                    let mut usage_start = None;
                    if sc.pattern != Pattern::Reqrep && gate.wait_ready(receivers) {
                        usage_start = Some(Usage::now());
                        gate.set_go();
                    }
                    let mut rates = Vec::new();
                    let mut first_err = None;
                    let mut recv_outcome = None;
                    for p in peers {
                        match p
                            .join()
                            .map_err(|_| "receiver thread panicked".to_string())
                            .and_then(|r| r)
                        {
                            Ok(o) => {
                                rates.push(o.rate);
                                recv_outcome.get_or_insert(o);
                            }
                            Err(e) => {
                                first_err.get_or_insert(e);
                            }
                        }
                    }
                    let usage_end = Usage::now();
                    gate.set_done();
                    let sent = main
                        .join()
                        .map_err(|_| "sender thread panicked".to_string())
                        .and_then(|r| r);
                    if let Some(e) = first_err {
                        return Err(e);
                    }
                    let sent = sent?;
                    let recv_outcome = recv_outcome.ok_or("no receiver")?;
                    if sc.pattern == Pattern::Reqrep {
                        return Ok(sent);
                    }
                    let usage = usage_start.map(|u| usage_end.since(&u)).unwrap_or_default();
                    Ok(Outcome {
                        rate: rates.iter().sum::<f64>() / rates.len() as f64,
                        per_receiver_rates: rates,
                        usage,
                        ..recv_outcome
                    })
                })
            }
        }
    };
}

zmq_like!(
    libzmq,
    ::zmq,
    crate::zmqlike::no_tune,
    crate::zmqlike::send_zmq,
    crate::security::libzmq,
    "libzmq through the `zmq` crate."
);
zmq_like!(
    libzmq_curve,
    crate::syszmq,
    crate::zmqlike::no_tune,
    crate::zmqlike::send_syszmq,
    crate::security::syszmq,
    "The system's libzmq (Debian's `libzmq5`, with CURVE) loaded at run time through [`crate::syszmq`], with the same code as the other sides: the libzmq side of the CURVE scenarios."
);
zmq_like!(
    fabriq,
    ::fabriq,
    crate::zmqlike::fabric_tune,
    crate::zmqlike::send_fabriq,
    crate::security::fabriq,
    "fabriq sockets, with the same code as the libzmq side."
);
zmq_like!(
    omq,
    crate::omqzmq,
    crate::omqzmq::tune,
    crate::zmqlike::send_omq,
    crate::security::omq,
    "omq.rs (`omq-tokio`, blocking API) through [`crate::omqzmq`], with the same code as the libzmq side."
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Pattern, Transport};

    fn scenario(variant: FabricVariant) -> Scenario {
        Scenario {
            pattern: Pattern::Pushpull,
            transport: Transport::Inproc,
            size: 4096,
            subs: 1,
            count: 1,
            warm: 0,
            reps: 1,
            variant,
        }
    }

    /// fabriq's sender sends the payload's own bytes in the zc variant
    /// (inproc hands the message over as it is, so the receiver sees the
    /// payload's memory) and a copy otherwise.
    #[test]
    fn the_zc_variant_sends_the_payload_by_reference() {
        let ctx = ::fabriq::Context::new();
        let push = ctx.socket(::fabriq::PUSH).unwrap();
        let pull = ctx.socket(::fabriq::PULL).unwrap();
        pull.bind("inproc://zc").unwrap();
        push.connect("inproc://zc").unwrap();
        for (variant, shared) in [
            (FabricVariant::ZeroCopy, true),
            (FabricVariant::Default, false),
        ] {
            let payload = Payload::new(b'T', &scenario(variant));
            send_fabriq(&push, &payload).unwrap();
            pull.set_rcvtimeo(5000).unwrap();
            let msg = pull.recv_msg(0).unwrap();
            assert_eq!(&msg[..], &payload.bytes[..]);
            assert_eq!(
                msg.as_ptr() == payload.bytes.as_ptr(),
                shared,
                "{variant:?}"
            );
        }
    }
}
