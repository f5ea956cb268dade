//! CURVE and PLAIN through the `fabriq` CLI, against libzmq 4.3 (pyzmq)
//! and against itself: `fabriq keygen`, CURVE both ways over tcp and ipc,
//! PLAIN with a ZAP password check on either side (fabriq's
//! Authenticator behind `--plain-server`, pyzmq's ThreadAuthenticator),
//! `--curve-allow` and `--curve-allow-dir` with certificates pyzmq wrote.
//!
//! Python comes from `$FABRIQ_PYTHON` or `target/pyenv` (made by
//! `scripts/python-env`); without it these tests fail, saying so.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::{fabriq, py, Proc};

/// A key pair from `fabriq keygen`: (public, secret).
fn keygen() -> (String, String) {
    let out = Proc::start("keygen", &mut fabriq(&["keygen"])).success();
    assert_eq!(out.stdout.len(), 2, "{out:?}");
    let public = out.stdout[0].strip_prefix("public: ").expect("public line");
    let secret = out.stdout[1].strip_prefix("secret: ").expect("secret line");
    assert_eq!((public.len(), secret.len()), (40, 40), "{out:?}");
    (public.to_string(), secret.to_string())
}

fn ipc_endpoint() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "ipc://{}/fabriq-cli-sec-{}-{}.ipc",
        std::env::temp_dir().display(),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Checks that pyzmq derives argv[1] (public) from argv[2] (secret).
const PY_CHECK_PAIR: &str = r#"
import sys, zmq
assert zmq.has("curve"), "this libzmq has no CURVE"
assert zmq.curve_public(sys.argv[2].encode()) == sys.argv[1].encode(), "keys do not belong together"
print("ok", flush=True)
"#;

/// CURVE PUSH connecting to argv[1] with server key argv[2] and its own
/// fresh key pair (or argv[3]/argv[4] as public/secret), sending argv[5:].
const PY_CURVE_PUSH: &str = r#"
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PUSH)
s.linger = 5000
s.sndtimeo = 10000
if sys.argv[3] == "-":
    public, secret = zmq.curve_keypair()
else:
    public, secret = sys.argv[3].encode(), sys.argv[4].encode()
s.curve_serverkey = sys.argv[2].encode()
s.curve_publickey = public
s.curve_secretkey = secret
s.connect(sys.argv[1])
for m in sys.argv[5:]:
    s.send_string(m)
s.close()
ctx.term()
"#;

/// CURVE PULL server binding argv[1] ("tcp" for a random port) with
/// secret key argv[2]; prints the bound endpoint, then argv[3] messages.
const PY_CURVE_PULL: &str = r#"
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PULL)
s.rcvtimeo = 10000
s.linger = 0
s.curve_server = True
s.curve_secretkey = sys.argv[2].encode()
if sys.argv[1] == "tcp":
    print("tcp://127.0.0.1:%d" % s.bind_to_random_port("tcp://127.0.0.1"), flush=True)
else:
    s.bind(sys.argv[1])
    print(sys.argv[1], flush=True)
for _ in range(int(sys.argv[3])):
    print(s.recv_string(), flush=True)
"#;

/// PLAIN PUSH connecting to argv[1] as argv[2] with password argv[3],
/// sending argv[4:].
const PY_PLAIN_PUSH: &str = r#"
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PUSH)
s.linger = 3000
s.sndtimeo = 10000
s.plain_username = sys.argv[2].encode()
s.plain_password = sys.argv[3].encode()
s.connect(sys.argv[1])
for m in sys.argv[4:]:
    s.send_string(m)
s.close()
ctx.term()
"#;

/// PLAIN PULL server on a random tcp port (printed) whose
/// ThreadAuthenticator knows user argv[1] with password argv[2]; prints
/// argv[3] messages with their User-Id.
const PY_PLAIN_PULL: &str = r#"
import sys, zmq
from zmq.auth.thread import ThreadAuthenticator
ctx = zmq.Context()
auth = ThreadAuthenticator(ctx)
auth.start()
auth.configure_plain(domain="*", passwords={sys.argv[1]: sys.argv[2]})
s = ctx.socket(zmq.PULL)
s.rcvtimeo = 10000
s.linger = 0
s.plain_server = True
print("tcp://127.0.0.1:%d" % s.bind_to_random_port("tcp://127.0.0.1"), flush=True)
for _ in range(int(sys.argv[3])):
    f = s.recv(copy=False)
    print("%s from %s" % (f.bytes.decode(), f.get("User-Id")), flush=True)
auth.stop()
"#;

/// Writes a certificate pair with zmq.auth.create_certificates into
/// argv[1]; prints the public and secret key.
const PY_CREATE_CERT: &str = r#"
import sys, zmq, zmq.auth
public_file, secret_file = zmq.auth.create_certificates(sys.argv[1], "client")
public, secret = zmq.auth.load_certificate(secret_file)
print(public.decode(), flush=True)
print(secret.decode(), flush=True)
"#;

#[test]
fn keygen_keys_are_accepted_by_pyzmq() {
    let (public, secret) = keygen();
    let check = Proc::start("pyzmq", &mut py(PY_CHECK_PAIR, &[&public, &secret])).success();
    assert_eq!(check.stdout, ["ok"]);
    let (other, _) = keygen();
    assert_ne!(other, public, "two runs made the same key");
}

/// `fabriq pull --curve-server` (keys from `fabriq keygen`) with a pyzmq
/// CURVE PUSH.
fn pull_curve_server_with_pyzmq_push(bind: &str) {
    let (public, secret) = keygen();
    let pull = Proc::start(
        "fabriq pull",
        &mut fabriq(&["pull", "--bind", bind, "-n", "2", "--curve-server", &secret]),
    );
    let endpoint = pull.bound("");
    let push = Proc::start(
        "pyzmq push",
        &mut py(PY_CURVE_PUSH, &[&endpoint, &public, "-", "-", "one", "two"]),
    );
    assert_eq!(pull.line(), "one");
    assert_eq!(pull.line(), "two");
    push.success();
    pull.success();
}

#[test]
fn pull_curve_server_over_tcp_gets_a_pyzmq_curve_push() {
    pull_curve_server_with_pyzmq_push("tcp://127.0.0.1:*");
}

#[test]
fn pull_curve_server_over_ipc_gets_a_pyzmq_curve_push() {
    pull_curve_server_with_pyzmq_push(&ipc_endpoint());
}

/// `fabriq push --curve-serverkey --curve-secretkey` to a pyzmq CURVE
/// server.
fn push_curve_client_to_pyzmq_pull(bind: &str) {
    let (server_public, server_secret) = keygen();
    let (_, client_secret) = keygen();
    let pull = Proc::start(
        "pyzmq pull",
        &mut py(PY_CURVE_PULL, &[bind, &server_secret, "1"]),
    );
    let endpoint = pull.line();
    let push = Proc::start(
        "fabriq push",
        &mut fabriq(&[
            "push",
            "--connect",
            &endpoint,
            "--data",
            "sealed",
            "--curve-serverkey",
            &server_public,
            "--curve-secretkey",
            &client_secret,
        ]),
    );
    assert_eq!(pull.line(), "sealed");
    pull.success();
    push.success();
}

#[test]
fn push_curve_client_over_tcp_reaches_a_pyzmq_curve_server() {
    push_curve_client_to_pyzmq_pull("tcp");
}

#[test]
fn push_curve_client_over_ipc_reaches_a_pyzmq_curve_server() {
    push_curve_client_to_pyzmq_pull(&ipc_endpoint());
}

/// `--plain-server --plain-user` (fabriq's Authenticator): pyzmq with
/// the wrong password is refused, with the right one served.
#[test]
fn pull_plain_server_checks_pyzmq_passwords() {
    let pull = Proc::start(
        "fabriq pull",
        &mut fabriq(&[
            "pull",
            "--bind",
            "tcp://127.0.0.1:*",
            "-n",
            "1",
            "--plain-server",
            "--plain-user",
            "admin:secret",
            "--plain-user",
            "guest:guest",
        ]),
    );
    let endpoint = pull.bound("");
    let wrong = Proc::start(
        "pyzmq wrong",
        &mut py(PY_PLAIN_PUSH, &[&endpoint, "admin", "guess", "refused"]),
    );
    // The refused client's message must not arrive.
    assert_eq!(pull.line_within(Duration::from_millis(700)), None);
    let right = Proc::start(
        "pyzmq right",
        &mut py(PY_PLAIN_PUSH, &[&endpoint, "admin", "secret", "welcome"]),
    );
    assert_eq!(pull.line(), "welcome");
    right.success();
    pull.success();
    wrong.kill();
}

/// `fabriq push --plain-username/--plain-password` to a pyzmq PLAIN
/// server whose ThreadAuthenticator checks the password; the user id
/// pyzmq sees is ours.
#[test]
fn push_plain_client_passes_a_pyzmq_thread_authenticator() {
    let pull = Proc::start(
        "pyzmq pull",
        &mut py(PY_PLAIN_PULL, &["alice", "s3cret", "1"]),
    );
    let endpoint = pull.line();
    let wrong = Proc::start(
        "fabriq push wrong",
        &mut fabriq(&[
            "push",
            "--connect",
            &endpoint,
            "--data",
            "refused",
            "--plain-username",
            "alice",
            "--plain-password",
            "nope",
            "--linger",
            "0",
        ]),
    );
    assert_eq!(pull.line_within(Duration::from_millis(700)), None);
    let right = Proc::start(
        "fabriq push",
        &mut fabriq(&[
            "push",
            "--connect",
            &endpoint,
            "--data",
            "hello",
            "--plain-username",
            "alice",
            "--plain-password",
            "s3cret",
        ]),
    );
    assert_eq!(pull.line(), "hello from alice");
    right.success();
    pull.success();
    wrong.kill();
}

/// `--curve-allow-dir` reads the certificates pyzmq's
/// `zmq.auth.create_certificates` wrote: that client gets in, a pyzmq
/// client with another key does not.
#[test]
fn curve_allow_dir_takes_pyzmq_certificates() {
    let dir = std::env::temp_dir().join(format!("fabriq-cli-certs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dir_text = dir.to_str().unwrap();
    let cert = Proc::start("pyzmq certs", &mut py(PY_CREATE_CERT, &[dir_text])).success();
    let (client_public, client_secret) = (&cert.stdout[0], &cert.stdout[1]);
    let (server_public, server_secret) = keygen();
    let pull = Proc::start(
        "fabriq pull",
        &mut fabriq(&[
            "pull",
            "--bind",
            "tcp://127.0.0.1:*",
            "-n",
            "1",
            "--curve-server",
            &server_secret,
            "--curve-allow-dir",
            dir_text,
        ]),
    );
    let endpoint = pull.bound("");
    let stranger = Proc::start(
        "pyzmq stranger",
        &mut py(
            PY_CURVE_PUSH,
            &[&endpoint, &server_public, "-", "-", "refused"],
        ),
    );
    assert_eq!(pull.line_within(Duration::from_millis(700)), None);
    let known = Proc::start(
        "pyzmq known",
        &mut py(
            PY_CURVE_PUSH,
            &[
                &endpoint,
                &server_public,
                client_public,
                client_secret,
                "known",
            ],
        ),
    );
    assert_eq!(pull.line(), "known");
    known.success();
    pull.success();
    stranger.kill();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two `fabriq` processes: a CURVE push/pull pair with an allow list; a
/// client with another key is refused.
#[test]
fn curve_push_pull_between_two_fabriq_processes() {
    let (server_public, server_secret) = keygen();
    let (client_public, client_secret) = keygen();
    let (_, stranger_secret) = keygen();
    let pull = Proc::start(
        "fabriq pull",
        &mut fabriq(&[
            "pull",
            "--bind",
            "tcp://127.0.0.1:*",
            "-n",
            "2",
            "--curve-server",
            &server_secret,
            "--curve-allow",
            &client_public,
        ]),
    );
    let endpoint = pull.bound("");
    let push = |secret: &str, data: &str| {
        fabriq(&[
            "push",
            "--connect",
            &endpoint,
            "--data",
            data,
            "--curve-serverkey",
            &server_public,
            "--curve-secretkey",
            secret,
            "--linger",
            "2000",
        ])
    };
    let stranger = Proc::start("stranger", &mut push(&stranger_secret, "refused"));
    assert_eq!(pull.line_within(Duration::from_millis(700)), None);
    let client = Proc::start("client", &mut push(&client_secret, "first"));
    assert_eq!(pull.line(), "first");
    client.success();
    let again = Proc::start("client again", &mut push(&client_secret, "second"));
    assert_eq!(pull.line(), "second");
    again.success();
    pull.success();
    stranger.kill();
}

#[test]
fn bad_keys_and_missing_halves_are_usage_errors() {
    let out = Proc::start(
        "fabriq pull",
        &mut fabriq(&[
            "pull",
            "--bind",
            "tcp://127.0.0.1:*",
            "--curve-server",
            "short",
        ]),
    )
    .finish();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.err_text().contains("40 characters of Z85"), "{out:?}");
    let out = Proc::start(
        "fabriq push",
        &mut fabriq(&[
            "push",
            "--connect",
            "tcp://127.0.0.1:1",
            "--plain-username",
            "u",
        ]),
    )
    .finish();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.err_text().contains("--plain-password"), "{out:?}");
}
