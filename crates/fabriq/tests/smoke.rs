//! First end-to-end checks of every transport.

use std::time::Duration;

use fabriq as zmq;

fn endpoints() -> Vec<&'static str> {
    vec!["tcp://127.0.0.1:*", "ipc://*", "inproc://smoke"]
}

#[test]
fn push_pull_every_transport() {
    for ep in endpoints() {
        let ctx = zmq::Context::new();
        let pull = ctx.socket(zmq::PULL).unwrap();
        pull.set_rcvtimeo(5000).unwrap();
        pull.bind(ep).unwrap();
        let bound = pull.get_last_endpoint().unwrap().unwrap();
        let push = ctx.socket(zmq::PUSH).unwrap();
        push.connect(&bound).unwrap();
        for i in 0..1000 {
            push.send(format!("msg {i}").as_str(), 0).unwrap();
        }
        for i in 0..1000 {
            assert_eq!(
                pull.recv_string(0).unwrap().unwrap(),
                format!("msg {i}"),
                "{ep}"
            );
        }
    }
}

#[test]
fn req_rep_every_transport() {
    for ep in endpoints() {
        let ctx = zmq::Context::new();
        let rep = ctx.socket(zmq::REP).unwrap();
        rep.set_rcvtimeo(5000).unwrap();
        rep.bind(ep).unwrap();
        let bound = rep.get_last_endpoint().unwrap().unwrap();
        let req = ctx.socket(zmq::REQ).unwrap();
        req.set_rcvtimeo(5000).unwrap();
        req.connect(&bound).unwrap();
        for i in 0..10 {
            req.send(format!("q{i}").as_str(), 0).unwrap();
            assert_eq!(rep.recv_string(0).unwrap().unwrap(), format!("q{i}"));
            assert_eq!(rep.send("x", 0), Ok(()));
            assert_eq!(req.recv_string(0).unwrap().unwrap(), "x");
        }
        assert_eq!(req.recv_bytes(0), Err(zmq::Error::EFSM));
    }
}

#[test]
fn pub_sub_tcp() {
    let ctx = zmq::Context::new();
    let publisher = ctx.socket(zmq::PUB).unwrap();
    publisher.bind("tcp://127.0.0.1:*").unwrap();
    let ep = publisher.get_last_endpoint().unwrap().unwrap();
    let sub = ctx.socket(zmq::SUB).unwrap();
    sub.set_subscribe(b"a").unwrap();
    sub.connect(&ep).unwrap();
    sub.set_rcvtimeo(20).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        publisher.send("b-skip", 0).unwrap();
        publisher.send("a-take", 0).unwrap();
        if let Ok(m) = sub.recv_string(0) {
            assert_eq!(m.unwrap(), "a-take");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "subscription never arrived"
        );
    }
}

#[test]
fn proxy_router_dealer_and_destroy() {
    let mut ctx = zmq::Context::new();
    let frontend = ctx.socket(zmq::ROUTER).unwrap();
    frontend.bind("tcp://127.0.0.1:*").unwrap();
    let front_ep = frontend.get_last_endpoint().unwrap().unwrap();
    let backend = ctx.socket(zmq::DEALER).unwrap();
    backend.bind("inproc://smoke-proxy-back").unwrap();
    let device = std::thread::spawn(move || {
        let r = zmq::proxy(&frontend, &backend);
        drop((frontend, backend));
        r
    });
    let worker_ctx = ctx.clone();
    let worker = std::thread::spawn(move || {
        let rep = worker_ctx.socket(zmq::REP).unwrap();
        rep.set_rcvtimeo(5000).unwrap();
        rep.connect("inproc://smoke-proxy-back").unwrap();
        for _ in 0..3 {
            let q = rep.recv_string(0).unwrap().unwrap();
            rep.send(format!("re:{q}").as_str(), 0).unwrap();
        }
    });
    let req = ctx.socket(zmq::REQ).unwrap();
    req.set_rcvtimeo(5000).unwrap();
    req.connect(&front_ep).unwrap();
    for i in 0..3 {
        req.send(format!("{i}").as_str(), 0).unwrap();
        assert_eq!(req.recv_string(0).unwrap().unwrap(), format!("re:{i}"));
    }
    worker.join().unwrap();
    drop(req);
    ctx.destroy().unwrap();
    assert_eq!(device.join().unwrap(), Err(zmq::Error::ETERM));
}
