//! The omq worker in tiny runs: for each pattern and transport it moves
//! exactly the timed count (receivers fail on a lost, extra-size or
//! out-of-place message), and omq interoperates with fabriq and libzmq
//! through the same worker code. Sides run as threads of this test with
//! their own contexts, driven by a gate like the runner's.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fabriq_bench::scenario::{Impl, Pattern, Scenario, Transport};
use fabriq_bench::worker::{Gate, Outcome, Role, WorkerSpec};
use fabriq_bench::zmqlike::{fabriq, libzmq, omq};

/// The runner's go/done protocol, between threads.
#[derive(Default)]
struct TestGate {
    bound: Mutex<Vec<String>>,
    ready: AtomicUsize,
    go: AtomicBool,
    done: AtomicBool,
}

impl Gate for TestGate {
    fn bound(&self, endpoint: &str) {
        self.bound.lock().unwrap().push(endpoint.to_string());
    }
    fn ready(&self) {
        self.ready.fetch_add(1, Ordering::AcqRel);
    }
    fn go(&self) -> Result<bool, String> {
        Ok(self.go.load(Ordering::Acquire))
    }
    fn wait_done(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.done.load(Ordering::Acquire) {
            if Instant::now() > deadline {
                return Err("no done".into());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }
}

fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn scenario(pattern: Pattern, transport: Transport, subs: usize) -> Scenario {
    Scenario {
        pattern,
        transport,
        size: 64,
        subs,
        count: if pattern == Pattern::Reqrep { 30 } else { 500 },
        warm: 10,
        reps: 1,
        variant: Default::default(),
    }
}

fn spec(imp: Impl, role: Role, sc: &Scenario, endpoints: Vec<String>) -> WorkerSpec {
    WorkerSpec {
        role,
        implementation: imp,
        scenario: sc.clone(),
        endpoints,
        cpus: Vec::new(),
        cpus_peer: Vec::new(),
        stall_ms: 5000,
        curve: None,
    }
}

type Side = fn(&WorkerSpec, Role, &dyn Gate) -> Result<Outcome, String>;

fn side(imp: Impl) -> Side {
    match imp {
        Impl::Omq => omq::process,
        Impl::Fabriq => fabriq::process,
        Impl::Libzmq => libzmq::process,
        Impl::Raw | Impl::FiPingpong => unreachable!("not a ZeroMQ implementation"),
    }
}

/// One tcp/ipc trial, `binder` binding (receivers / REP) and `connector`
/// connecting: returns the connecting side's outcome, then the binders'.
fn trial(sc: &Scenario, connector: Impl, binder: Impl) -> (Outcome, Vec<Outcome>) {
    let reqrep = sc.pattern == Pattern::Reqrep;
    let (bind_role, connect_role) = if reqrep {
        (Role::Server, Role::Client)
    } else {
        (Role::Receiver, Role::Sender)
    };
    let n = if sc.pattern == Pattern::Pubsub {
        sc.subs
    } else {
        1
    };
    let gate = TestGate::default();
    std::thread::scope(|s| {
        let binders: Vec<_> = (0..n)
            .map(|_| {
                let (gate, spec) = (&gate, spec(binder, bind_role, sc, Vec::new()));
                s.spawn(move || side(binder)(&spec, bind_role, gate))
            })
            .collect();
        wait_for("bind", || gate.bound.lock().unwrap().len() == n);
        let endpoints = gate.bound.lock().unwrap().clone();
        let conn_spec = spec(connector, connect_role, sc, endpoints);
        let gate_ref = &gate;
        let conn = s.spawn(move || side(connector)(&conn_spec, connect_role, gate_ref));
        if !reqrep {
            wait_for("ready", || gate.ready.load(Ordering::Acquire) == n);
            gate.go.store(true, Ordering::Release);
        }
        let outs: Vec<Outcome> = binders
            .into_iter()
            .map(|b| b.join().expect("binder thread").expect("binder"))
            .collect();
        gate.done.store(true, Ordering::Release);
        let c = conn.join().expect("connector thread").expect("connector");
        (c, outs)
    })
}

#[test]
fn omq_moves_exactly_the_timed_count_in_every_pattern() {
    for transport in [Transport::Tcp, Transport::Ipc] {
        for (pattern, subs) in [
            (Pattern::Pushpull, 1),
            (Pattern::Pubsub, 1),
            (Pattern::Pubsub, 2),
            (Pattern::Reqrep, 1),
        ] {
            let sc = scenario(pattern, transport, subs);
            let (conn, binders) = trial(&sc, Impl::Omq, Impl::Omq);
            let what = format!("{} via omq", sc.key());
            assert_eq!(conn.messages, sc.count, "{what}: connecting side");
            for b in &binders {
                assert_eq!(b.messages, sc.count, "{what}: each receiver / server");
            }
            if pattern == Pattern::Reqrep {
                assert!(conn.latency.is_some(), "{what}: round trips timed");
            }
        }
    }
}

#[test]
fn omq_inproc_moves_exactly_the_timed_count() {
    for (pattern, subs) in [
        (Pattern::Pushpull, 1),
        (Pattern::Pubsub, 2),
        (Pattern::Reqrep, 1),
    ] {
        let sc = scenario(pattern, Transport::Inproc, subs);
        let out = omq::inproc(&spec(Impl::Omq, Role::Inproc, &sc, Vec::new()))
            .unwrap_or_else(|e| panic!("{}: {e}", sc.key()));
        assert_eq!(out.messages, sc.count, "{}", sc.key());
        if pattern != Pattern::Reqrep {
            assert_eq!(out.per_receiver_rates.len(), subs, "{}", sc.key());
        }
    }
}

#[test]
fn omq_interoperates_with_fabriq_and_libzmq() {
    let push = scenario(Pattern::Pushpull, Transport::Tcp, 1);
    for (connector, binder) in [
        (Impl::Omq, Impl::Fabriq),
        (Impl::Fabriq, Impl::Omq),
        (Impl::Omq, Impl::Libzmq),
    ] {
        let (conn, binders) = trial(&push, connector, binder);
        assert_eq!(conn.messages, push.count, "{connector:?} -> {binder:?}");
        assert_eq!(
            binders[0].messages, push.count,
            "{connector:?} -> {binder:?}"
        );
    }
    let req = scenario(Pattern::Reqrep, Transport::Tcp, 1);
    let (conn, _) = trial(&req, Impl::Omq, Impl::Fabriq);
    assert_eq!(conn.messages, req.count, "omq REQ -> fabriq REP");
}
