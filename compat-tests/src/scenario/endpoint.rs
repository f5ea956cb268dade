//! Endpoints and addresses (libzmq's test_last_endpoint,
//! test_ipc_wildcard, test_unbind_wildcard, test_inproc_connect,
//! test_bind_src_address, test_capabilities-style checks).

use super::{recv_text, Fabric, Outcome, Pair, Scenario, Sides, ALL, INPROC, TCP, WIRE};
use crate::adapter::{Errno, Kind, Transport};
use crate::{ensure, ensure_eq};

/// The scenarios of this group.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "last_endpoint_tcp_wildcard",
            about: "bind tcp://127.0.0.1:* (ofi+P:// alike): LAST_ENDPOINT has the chosen port and is connectable",
            transports: TCP,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: last_endpoint_tcp_wildcard,
        },
        Scenario {
            name: "ipc_wildcard",
            about: "bind ipc://* : LAST_ENDPOINT names a real path that peers can connect to",
            transports: &[Transport::Ipc],
            sides: Sides::Two,
            fabric: Fabric::Excluded(super::FABRIC_NOT_IPC),
            run: ipc_wildcard,
        },
        Scenario {
            name: "unbind_resolved_wildcard",
            about: "unbind with the resolved LAST_ENDPOINT of a wildcard bind; the address is free again",
            transports: WIRE,
            sides: Sides::One,
            fabric: Fabric::Runs,
            run: unbind_resolved_wildcard,
        },
        Scenario {
            name: "unbind_wildcard_text_enoent",
            about: "unbind with the wildcard text itself (tcp://127.0.0.1:*, ofi+P:// alike) is ENOENT",
            transports: TCP,
            sides: Sides::One,
            fabric: Fabric::Runs,
            run: unbind_wildcard_text_enoent,
        },
        Scenario {
            name: "unbind_unknown_enoent",
            about: "unbind/disconnect of an endpoint never bound/connected is ENOENT",
            transports: ALL,
            sides: Sides::One,
            fabric: Fabric::Runs,
            run: unbind_unknown_enoent,
        },
        Scenario {
            name: "inproc_connect_before_bind",
            about: "inproc: connect first, send, then bind; nothing is lost",
            transports: INPROC,
            sides: Sides::Two,
            fabric: Fabric::Excluded(super::FABRIC_NOT_INPROC),
            run: inproc_connect_before_bind,
        },
        Scenario {
            name: "inproc_connect_before_bind_identity",
            about: "inproc connect-before-bind: a connecting ROUTER sees the binder's identity",
            transports: INPROC,
            sides: Sides::Two,
            fabric: Fabric::Excluded(super::FABRIC_NOT_INPROC),
            run: inproc_connect_before_bind_identity,
        },
        Scenario {
            name: "bind_eaddrinuse",
            about: "a second bind to a taken tcp (or ofi+P control) port is EADDRINUSE (across libraries too)",
            transports: TCP,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: bind_eaddrinuse,
        },
        Scenario {
            name: "bad_endpoints",
            about: "unknown transport (or fabric provider) is EPROTONOSUPPORT; missing port, provider or garbage is EINVAL",
            transports: TCP,
            sides: Sides::One,
            fabric: Fabric::Runs,
            run: bad_endpoints,
        },
        Scenario {
            name: "bind_port_out_of_range",
            about: "bind to tcp (or ofi+P) port 70000 is EINVAL",
            transports: TCP,
            sides: Sides::One,
            fabric: Fabric::Runs,
            run: bind_port_out_of_range,
        },
        Scenario {
            name: "bind_hostname_enodev",
            about: "bind to tcp://localhost:* (a host name, not an interface; ofi+P:// alike) is ENODEV",
            transports: TCP,
            sides: Sides::One,
            fabric: Fabric::Runs,
            run: bind_hostname_enodev,
        },
        Scenario {
            name: "connect_hostname",
            about: "connect to tcp://localhost:PORT (ofi+P:// alike) resolves the name",
            transports: TCP,
            sides: Sides::Two,
            fabric: Fabric::Runs,
            run: connect_hostname,
        },
    ]
}

fn last_endpoint_tcp_wildcard(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    pull.bind(&t.local("*"))?;
    let endpoint = pull.last_endpoint()?;
    let port: u16 = endpoint
        .strip_prefix(&t.local(""))
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
        Transport::Ipc => "ipc://*".to_string(),
        _ => t.local("*"),
    };
    let pull = p.a(Kind::Pull)?;
    pull.bind(&wildcard)?;
    let endpoint = pull.last_endpoint()?;
    pull.unbind(&endpoint)?;
    // The address is free: another socket can take it.
    let other = p.a(Kind::Pull)?;
    super::lifecycle::rebind(&other, &endpoint)?;
    other.unbind(&endpoint)?;
    Ok(())
}

fn unbind_wildcard_text_enoent(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    pull.bind(&t.local("*"))?;
    match pull.unbind(&t.local("*")) {
        Err(f) if f.is(Errno::ENOENT) => Ok(()),
        other => Err(format!(
            "unbind with the wildcard text: {other:?}, expected ENOENT"
        )),
    }
}

fn unbind_unknown_enoent(p: &Pair, t: Transport) -> Outcome {
    let s = p.a(Kind::Pull)?;
    let endpoint = match t {
        Transport::Ipc => crate::adapter::ipc_endpoint(),
        Transport::Inproc => "inproc://compat-never".to_string(),
        _ => t.local("5"),
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

fn bind_eaddrinuse(p: &Pair, t: Transport) -> Outcome {
    let first = p.a(Kind::Pull)?;
    let endpoint = first.bind_any(t)?;
    let second = p.b(Kind::Pull)?;
    match second.bind(&endpoint) {
        Err(f) if f.is(Errno::EADDRINUSE) => Ok(()),
        other => Err(format!(
            "second bind to {endpoint}: {other:?}, expected EADDRINUSE"
        )),
    }
}

fn bad_endpoints(p: &Pair, t: Transport) -> Outcome {
    let s = p.a(Kind::Pull)?;
    let scheme = t.host_port_scheme().unwrap_or("tcp");
    let mut cases = vec![
        ("nope://127.0.0.1:5555".to_string(), Errno::EPROTONOSUPPORT),
        (format!("{scheme}://127.0.0.1"), Errno::EINVAL),
        (format!("{scheme}://127.0.0.1:"), Errno::EINVAL),
        ("127.0.0.1:5555".to_string(), Errno::EINVAL),
    ];
    if t.is_fabric() {
        // A provider libfabric does not have, and none at all.
        cases.push((
            "ofi+nosuchprovider://127.0.0.1:5555".to_string(),
            Errno::EPROTONOSUPPORT,
        ));
        cases.push(("ofi+://127.0.0.1:5555".to_string(), Errno::EINVAL));
    }
    for (endpoint, want) in cases {
        for op in ["bind", "connect"] {
            let r = if op == "bind" {
                s.bind(&endpoint)
            } else {
                s.connect(&endpoint)
            };
            match r {
                Err(f) if f.errno == want => {}
                other => return Err(format!("{op} {endpoint:?}: {other:?}, expected {want:?}")),
            }
        }
    }
    Ok(())
}

fn bind_port_out_of_range(p: &Pair, t: Transport) -> Outcome {
    let s = p.a(Kind::Pull)?;
    let endpoint = t.local("70000");
    match s.bind(&endpoint) {
        Err(f) if f.is(Errno::EINVAL) => Ok(()),
        Ok(()) => Err(format!(
            "bind {endpoint} succeeded; LAST_ENDPOINT {}",
            s.last_endpoint()?
        )),
        Err(f) => Err(format!("bind {endpoint}: {f}, expected EINVAL")),
    }
}

/// `SCHEME://localhost:PORT` for a transport with `HOST:PORT` addresses.
fn by_name(t: Transport, port: &str) -> String {
    t.local(port).replacen("127.0.0.1", "localhost", 1)
}

fn bind_hostname_enodev(p: &Pair, t: Transport) -> Outcome {
    let s = p.a(Kind::Pull)?;
    let endpoint = by_name(t, "*");
    match s.bind(&endpoint) {
        Err(f) if f.is(Errno::ENODEV) => Ok(()),
        Ok(()) => Err(format!(
            "bind {endpoint} succeeded; LAST_ENDPOINT {}",
            s.last_endpoint()?
        )),
        Err(f) => Err(format!("bind {endpoint}: {f}, expected ENODEV")),
    }
}

fn connect_hostname(p: &Pair, t: Transport) -> Outcome {
    let pull = p.a(Kind::Pull)?;
    pull.bind(&t.local("*"))?;
    let endpoint = pull.last_endpoint()?;
    let port = endpoint.rsplit(':').next().unwrap_or_default().to_string();
    let push = p.b(Kind::Push)?;
    push.connect(&by_name(t, &port))?;
    push.send(b"by name", 0)?;
    ensure_eq!(recv_text(&pull)?, "by name", "message");
    Ok(())
}
