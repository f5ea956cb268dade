//! C programs written for libzmq, compiled with `cc` against the crate's
//! zmq.h and libzmq.so.5 (a prefix like `scripts/capi` makes) and run.

mod common;

use std::process::Command;
use std::time::Duration;

fn run_c(name: &str) {
    let program = common::compile_c(name);
    common::run_ok(&mut Command::new(&program), Duration::from_secs(60), name);
}

/// REQ/REP, PUSH/PULL, PUB/SUB over tcp, ipc and inproc.
#[test]
fn patterns() {
    run_c("patterns");
}

/// Null and closed handles, option sizes, EAGAIN, EFSM, ETERM.
#[test]
fn errors() {
    run_c("errors");
}

/// zmq_poll, ZMQ_FD/ZMQ_EVENTS, free callbacks, copy/move, metadata.
#[test]
fn poll_and_messages() {
    run_c("poll_msg");
}

/// A stream of messages at each size the C layer treats apart (inline,
/// chunked, allocated), sent with `zmq_send` and `zmq_msg_send`, received
/// into one message; receives that wait or time out, sends that cannot
/// go, frames that outlive their sender; over inproc and tcp.
#[test]
fn message_paths() {
    run_c("msg_paths");
}

/// The draft API: CLIENT/SERVER routing ids, RADIO/DISH groups, the
/// poller over a thread-safe socket and a pipe, timers.
#[test]
fn draft_api() {
    let program = common::compile_c_with("draft", &["-DZMQ_BUILD_DRAFT_API"]);
    common::run_ok(
        &mut Command::new(&program),
        Duration::from_secs(60),
        "draft",
    );
}

/// The program links against the soname libzmq.so.5, as a libzmq one does.
#[test]
fn programs_record_the_libzmq_soname() {
    let program = common::compile_c("patterns");
    let out = Command::new("readelf")
        .arg("-d")
        .arg(&program)
        .output()
        .expect("readelf (binutils) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[libzmq.so.5]"), "{text}");
}

/// A cppzmq program (Debian's cppzmq-dev) built with `pkg-config --cflags
/// --libs libzmq` against the prefix, over tcp and, with only the endpoint
/// changed, over `ofi+shm://`.
#[test]
fn cppzmq_program_over_tcp_and_ofi_shm() {
    let flags = common::pkg_config_libzmq();
    assert!(flags.iter().any(|f| f.starts_with("-I")), "{flags:?}");
    let out = common::prefix().join("cppzmq");
    let status = Command::new("c++")
        .arg("-std=c++17")
        .arg("-o")
        .arg(&out)
        .arg(common::crate_dir().join("tests/c/cppzmq.cpp"))
        .args(&flags)
        .arg(format!(
            "-Wl,-rpath,{}",
            common::prefix().join("lib").display()
        ))
        .status()
        .expect("c++ runs");
    assert!(status.success());
    for ep in ["tcp://127.0.0.1:*", "ofi+shm://127.0.0.1:*"] {
        common::run_ok(Command::new(&out).arg(ep), Duration::from_secs(60), ep);
    }
}

/// The message and error programs under valgrind: no invalid access and
/// no definitely lost memory (zmq_msg_t records, free callbacks, closed
/// handles, chunks of closed sockets).
#[test]
fn no_leaks_or_invalid_accesses_under_valgrind() {
    // msg_paths with 2 rounds of its stream (valgrind is slow).
    for (name, args) in [
        ("poll_msg", &[][..]),
        ("errors", &[]),
        ("msg_paths", &["2"]),
    ] {
        let program = common::compile_c(name);
        common::run_ok(
            Command::new("valgrind")
                .args([
                    "--quiet",
                    "--leak-check=full",
                    "--errors-for-leak-kinds=definite",
                    "--error-exitcode=9",
                ])
                .arg(&program)
                .args(args),
            Duration::from_secs(300),
            name,
        );
    }
}
