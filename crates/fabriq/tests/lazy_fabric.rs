//! libfabric is opened when a fabric endpoint is first used, not when a
//! program starts: a program that only speaks tcp, ipc or inproc never
//! maps it nor the provider libraries it depends on (on Debian, one of
//! them sleeps about 0.2 s in its constructor).
//!
//! One test in its own binary, so that no other test in the process can
//! have opened the library first.

use fabriq::{Context, PULL, PUSH};

/// Whether the process has a file whose name starts with `libfabric.so`
/// mapped, as /proc/self/maps lists it.
fn libfabric_mapped() -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    maps.lines().any(|line| {
        line.rsplit('/')
            .next()
            .is_some_and(|file| file.starts_with("libfabric.so"))
    })
}

#[test]
fn libfabric_is_opened_by_the_first_fabric_endpoint_and_not_before() {
    assert!(!libfabric_mapped(), "libfabric mapped at start-up");

    let ctx = Context::new();
    let pull = ctx.socket(PULL).unwrap();
    pull.set_rcvtimeo(5000).unwrap();
    pull.bind("tcp://127.0.0.1:*").unwrap();
    let push = ctx.socket(PUSH).unwrap();
    push.connect(&pull.get_last_endpoint().unwrap().unwrap())
        .unwrap();
    push.send("over tcp", 0).unwrap();
    assert_eq!(pull.recv_bytes(0).unwrap(), b"over tcp");
    assert!(!libfabric_mapped(), "a tcp-only program mapped libfabric");

    if !fabriq_ofi::compiled_in() {
        // A build without libfabric: the fabric endpoint must say so.
        let err = ctx
            .socket(PULL)
            .unwrap()
            .bind("ofi+tcp://127.0.0.1:*")
            .unwrap_err();
        eprintln!("built without libfabric: {err}");
        return;
    }
    let fabric = ctx.socket(PULL).unwrap();
    fabric.bind("ofi+tcp://127.0.0.1:*").unwrap();
    assert!(
        libfabric_mapped(),
        "a fabric endpoint is bound but libfabric is not mapped"
    );
}
