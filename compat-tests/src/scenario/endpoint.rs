//! Endpoints and addresses (libzmq's test_last_endpoint,
//! test_ipc_wildcard, test_unbind_wildcard, test_inproc_connect,
//! test_bind_src_address, test_capabilities-style checks).

use super::{recv_text, Outcome, Pair, Scenario, Sides, ALL, INPROC, TCP, WIRE};
use crate::adapter::{Errno, Kind, Transport};
use crate::{ensure, ensure_eq};

/// The scenarios of this group.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "last_endpoint_tcp_wildcard",
            about: "bind tcp://127.0.0.1:* : LAST_ENDPOINT has the chosen port and is connectable",
            transports: TCP,
            sides: Sides::Two,
            run: last_endpoint_tcp_wildcard,
        },
        Scenario {
            name: "ipc_wildcard",
            about: "bind ipc://* : LAST_ENDPOINT names a real path that peers can connect to",
            transports: &[Transport::Ipc],
            sides: Sides::Two,
            run: ipc_wildcard,
        },
        Scenario {
            name: "unbind_resolved_wildcard",
            about: "unbind with the resolved LAST_ENDPOINT of a wildcard bind; the address is free again",
            transports: WIRE,
            sides: Sides::One,
            run: unbind_resolved_wildcard,
        },
        Scenario {
            name: "unbind_wildcard_text_enoent",
            about: "unbind with the wildcard text itself (tcp://127.0.0.1:*) is ENOENT",
            transports: TCP,
            sides: Sides::One,
            run: unbind_wildcard_text_enoent,
        },
        Scenario {
            name: "unbind_unknown_enoent",
            about: "unbind/disconnect of an endpoint never bound/connected is ENOENT",
            transports: ALL,
            sides: Sides::One,
            run: unbind_unknown_enoent,
        },
        Scenario {
            name: "inproc_connect_before_bind",
            about: "inproc: connect first, send, then bind; nothing is lost",
            transports: INPROC,
            sides: Sides::Two,
            run: inproc_connect_before_bind,
        },
        Scenario {
            name: "inproc_connect_before_bind_identity",
            about: "inproc connect-before-bind: a connecting ROUTER sees the binder's identity",
            transports: INPROC,
            sides: Sides::Two,
            run: inproc_connect_before_bind_identity,
        },
        Scenario {
            name: "bind_eaddrinuse",
            about: "a second bind to a taken tcp port is EADDRINUSE (across libraries too)",
            transports: TCP,
            sides: Sides::Two,
            run: bind_eaddrinuse,
        },
        Scenario {
            name: "bad_endpoints",
            about: "unknown transport is EPROTONOSUPPORT; missing port or garbage is EINVAL",
            transports: TCP,
            sides: Sides::One,
            run: bad_endpoints,
        },
        Scenario {
            name: "bind_port_out_of_range",
            about: "bind to tcp port 70000 is EINVAL",
            transports: TCP,
            sides: Sides::One,
            run: bind_port_out_of_range,
        },
        Scenario {
            name: "bind_hostname_enodev",
            about: "bind to tcp://localhost:* (a host name, not an interface) is ENODEV",
            transports: TCP,
            sides: Sides::One,
            run: bind_hostname_enodev,
        },
        Scenario {
            name: "connect_hostname",
            about: "connect to tcp://localhost:PORT resolves the name",
            transports: TCP,
            sides: Sides::Two,
            run: connect_hostname,
        },
    ]
}

fn last_endpoint_tcp_wildcard(p: &Pair, _t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    pull.bind("tcp://127.0.0.1:*")?;
    let endpoint = pull.last_endpoint()?;
    let port: u16 = endpoint
        .strip_prefix("tcp://127.0.0.1:")
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("LAST_ENDPOINT {endpoint:?}"))?;
    ensure!(port != 0, "LAST_ENDPOINT has port 0");
    let push = p.b(Kind::Push)?;
    push.connect(&endpoint)?;
    push.send(b"hi", 0)?;
    ensure_eq!(recv_text(&pull)?, "hi", "message");
    Ok(())
}

fn ipc_wildcard(p: &Pair, _t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    pull.bind("ipc://*")?;
    let endpoint = pull.last_endpoint()?;
    let path = endpoint
        .strip_prefix("ipc://")
        .ok_or_else(|| format!("LAST_ENDPOINT {endpoint:?}"))?;
    ensure!(
        !path.contains('*'),
        "LAST_ENDPOINT still has the wildcard: {endpoint}"
    );
    ensure!(
        std::path::Path::new(path).exists(),
        "LAST_ENDPOINT {endpoint} names no file"
    );
    let push = p.b(Kind::Push)?;
    push.connect(&endpoint)?;
    push.send(b"hi", 0)?;
    ensure_eq!(recv_text(&pull)?, "hi", "message");
    Ok(())
}

fn unbind_resolved_wildcard(p: &Pair, t: Transport) -> Outcome {
    let wildcard = match t {
        Transport::Tcp => "tcp://127.0.0.1:*",
        _ => "ipc://*",
    };
    let pull = p.a(Kind::Pull)?;
    pull.bind(wildcard)?;
    let endpoint = pull.last_endpoint()?;
    pull.unbind(&endpoint)?;
    // The address is free: another socket can take it.
    let other = p.a(Kind::Pull)?;
    super::lifecycle::rebind(&other, &endpoint)?;
    other.unbind(&endpoint)?;
    Ok(())
}

fn unbind_wildcard_text_enoent(p: &Pair, _t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    pull.bind("tcp://127.0.0.1:*")?;
    match pull.unbind("tcp://127.0.0.1:*") {
        Err(f) if f.is(Errno::ENOENT) => Ok(()),
        other => Err(format!(
            "unbind with the wildcard text: {other:?}, expected ENOENT"
        )),
    }
}

fn unbind_unknown_enoent(p: &Pair, t: Transport) -> Outcome {
    let s = p.a(Kind::Pull)?;
    let endpoint = match t {
        Transport::Tcp => "tcp://127.0.0.1:5".to_string(),
        Transport::Ipc => crate::adapter::ipc_endpoint(),
        Transport::Inproc => "inproc://compat-never".to_string(),
    };
    match s.unbind(&endpoint) {
        Err(f) if f.is(Errno::ENOENT) => {}
        other => return Err(format!("unbind {endpoint}: {other:?}, expected ENOENT")),
    }
    match s.disconnect(&endpoint) {
        Err(f) if f.is(Errno::ENOENT) => Ok(()),
        other => Err(format!("disconnect {endpoint}: {other:?}, expected ENOENT")),
    }
}

fn inproc_connect_before_bind(p: &Pair, _t: Transport) -> Outcome {
    let endpoint = format!("inproc://compat-early-{}", crate::adapter::unique());
    let push = p.b(Kind::Push)?;
    push.connect(&endpoint)?;
    for i in 0..3 {
        push.send(format!("early {i}").as_bytes(), 0)?;
    }
    let pull = p.a(Kind::Pull)?;
    pull.bind(&endpoint)?;
    for i in 0..3 {
        ensure_eq!(recv_text(&pull)?, format!("early {i}"), "message {i}");
    }
    push.send(b"late", 0)?;
    ensure_eq!(recv_text(&pull)?, "late", "after bind");
    Ok(())
}

fn inproc_connect_before_bind_identity(p: &Pair, _t: Transport) -> Outcome {
    let endpoint = format!("inproc://compat-early-id-{}", crate::adapter::unique());
    let router = p.b(Kind::Router)?;
    router.connect(&endpoint)?;
    let dealer = p.a(Kind::Dealer)?;
    dealer.set_identity(b"binder")?;
    dealer.bind(&endpoint)?;
    dealer.send(b"hello", 0)?;
    let m = router.recv_parts(0)?;
    ensure_eq!(
        m,
        vec![b"binder".to_vec(), b"hello".to_vec()],
        "at the connecting ROUTER"
    );
    Ok(())
}

fn bind_eaddrinuse(p: &Pair, _t: Transport) -> Outcome {
    let first = p.a(Kind::Pull)?;
    let endpoint = first.bind_any(Transport::Tcp)?;
    let second = p.b(Kind::Pull)?;
    match second.bind(&endpoint) {
        Err(f) if f.is(Errno::EADDRINUSE) => Ok(()),
        other => Err(format!(
            "second bind to {endpoint}: {other:?}, expected EADDRINUSE"
        )),
    }
}

fn bad_endpoints(p: &Pair, _t: Transport) -> Outcome {
    let s = p.a(Kind::Pull)?;
    for (endpoint, want) in [
        ("nope://127.0.0.1:5555", Errno::EPROTONOSUPPORT),
        ("tcp://127.0.0.1", Errno::EINVAL),
        ("tcp://127.0.0.1:", Errno::EINVAL),
        ("127.0.0.1:5555", Errno::EINVAL),
    ] {
        for op in ["bind", "connect"] {
            let r = if op == "bind" {
                s.bind(endpoint)
            } else {
                s.connect(endpoint)
            };
            match r {
                Err(f) if f.errno == want => {}
                other => return Err(format!("{op} {endpoint:?}: {other:?}, expected {want:?}")),
            }
        }
    }
    Ok(())
}

fn bind_port_out_of_range(p: &Pair, _t: Transport) -> Outcome {
    let s = p.a(Kind::Pull)?;
    match s.bind("tcp://127.0.0.1:70000") {
        Err(f) if f.is(Errno::EINVAL) => Ok(()),
        Ok(()) => Err(format!(
            "bind tcp://127.0.0.1:70000 succeeded; LAST_ENDPOINT {}",
            s.last_endpoint()?
        )),
        Err(f) => Err(format!("bind tcp://127.0.0.1:70000: {f}, expected EINVAL")),
    }
}

fn bind_hostname_enodev(p: &Pair, _t: Transport) -> Outcome {
    let s = p.a(Kind::Pull)?;
    match s.bind("tcp://localhost:*") {
        Err(f) if f.is(Errno::ENODEV) => Ok(()),
        Ok(()) => Err(format!(
            "bind tcp://localhost:* succeeded; LAST_ENDPOINT {}",
            s.last_endpoint()?
        )),
        Err(f) => Err(format!("bind tcp://localhost:*: {f}, expected ENODEV")),
    }
}

fn connect_hostname(p: &Pair, _t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    pull.bind("tcp://127.0.0.1:*")?;
    let endpoint = pull.last_endpoint()?;
    let port = endpoint.rsplit(':').next().unwrap_or_default().to_string();
    let push = p.b(Kind::Push)?;
    push.connect(&format!("tcp://localhost:{port}"))?;
    push.send(b"by name", 0)?;
    ensure_eq!(recv_text(&pull)?, "by name", "message");
    Ok(())
}
