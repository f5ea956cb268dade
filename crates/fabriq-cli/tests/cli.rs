//! The `fabriq` CLI on its own: help, usage errors, counts and timeouts,
//! formats, multipart lines, and fabriq-to-fabriq pairs of every kind.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{closed_endpoint, fabriq, publish_until_received, Proc};

const ANY_PORT: &str = "tcp://127.0.0.1:*";

/// Runs `fabriq args` to its end with empty stdin.
fn run(args: &[&str]) -> common::Finished {
    let mut cmd = fabriq(args);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped());
    let (p, out) = Proc::start_with_stdout(&format!("fabriq {args:?}"), &mut cmd);
    // Output is small: read it after the exit.
    let done = p.finish();
    let mut stdout = String::new();
    if let Some(mut out) = out {
        std::io::Read::read_to_string(&mut out, &mut stdout).ok();
    }
    common::Finished {
        stdout: stdout.lines().map(str::to_string).collect(),
        ..done
    }
}

/// A `fabriq pull --bind` on a free port with extra `args`.
fn pull(args: &[&str]) -> (Proc, String) {
    let mut all = vec!["pull", "--bind", ANY_PORT];
    all.extend_from_slice(args);
    let p = Proc::start("fabriq pull", &mut fabriq(&all));
    let ep = p.bound("");
    (p, ep)
}

/// `fabriq push --connect ep args` with `lines` on stdin.
fn push_lines(ep: &str, args: &[&str], lines: &[&str]) -> common::Finished {
    let mut all = vec!["push", "--connect", ep];
    all.extend_from_slice(args);
    let mut p = Proc::start("fabriq push", &mut fabriq(&all));
    for line in lines {
        p.send_line(line);
    }
    p.success()
}

// ---- help and usage errors ---------------------------------------------

#[test]
fn every_subcommand_help_shows_an_example() {
    for sub in [
        "pub", "sub", "push", "pull", "req", "rep", "dealer", "router", "pair", "xpub", "xsub",
        "proxy", "monitor",
    ] {
        let done = run(&[sub, "--help"]);
        assert!(done.status.success(), "{sub}: {done:#?}");
        let text = done.stdout.join("\n");
        assert!(text.contains("Examples:"), "{sub} --help: {text}");
        assert!(
            text.contains(&format!("fabriq {sub} ")),
            "{sub} --help has no example of itself: {text}"
        );
    }
    let top = run(&["--help"]);
    assert!(top.stdout.join("\n").contains("Examples:"));
}

fn assert_usage_error(args: &[&str], expected: &[&str]) {
    let done = run(args);
    assert_eq!(done.status.code(), Some(2), "{args:?}: {done:#?}");
    let text = done.err_text();
    for e in expected {
        assert!(text.contains(e), "{args:?}: {e:?} not in {text}");
    }
}

#[test]
fn a_bad_endpoint_is_a_usage_error_naming_the_accepted_forms() {
    assert_usage_error(
        &["pull", "--bind", "tcp//127.0.0.1:5555"],
        &["tcp//127.0.0.1:5555", "accepted forms", "tcp://HOST:PORT"],
    );
    assert_usage_error(
        &["push", "--connect", "tcp://127.0.0.1"],
        &["--connect", "port", "accepted forms"],
    );
    assert_usage_error(
        &["sub", "--connect", "udp://127.0.0.1:5555"],
        &["udp", "accepted forms"],
    );
    assert_usage_error(
        &[
            "proxy",
            "--kind",
            "pull-push",
            "--frontend",
            "connect:nowhere",
            "--backend",
            ANY_PORT,
        ],
        &["--frontend", "nowhere", "accepted forms"],
    );
    assert_usage_error(
        &["pull", "--bind", "inproc://x"],
        &["inproc", "same process"],
    );
}

#[test]
fn unknown_options_and_bad_values_are_usage_errors() {
    assert_usage_error(
        &["pull", "--bind", ANY_PORT, "--frobnicate"],
        &["--frobnicate"],
    );
    assert_usage_error(&["pull"], &["--bind", "--connect"]);
    assert_usage_error(&["frobnicate"], &["frobnicate"]);
    assert_usage_error(
        &["pull", "--bind", ANY_PORT, "--format", "xml"],
        &["xml", "hex"],
    );
    assert_usage_error(
        &["pull", "--bind", ANY_PORT, "--timeout", "soon"],
        &["seconds"],
    );
    assert_usage_error(&["pull", "--bind", ANY_PORT, "-n", "0"], &["0"]);
    assert_usage_error(&["push", "--bind", ANY_PORT, "--hwm", "-5"], &["--hwm"]);
    assert_usage_error(
        &[
            "dealer",
            "--connect",
            "tcp://127.0.0.1:1",
            "--identity",
            "0xzz",
        ],
        &["--identity", "hex"],
    );
    assert_usage_error(
        &[
            "push", "--bind", ANY_PORT, "--format", "hex", "--data", "xyz",
        ],
        &["--data", "hex"],
    );
    assert_usage_error(
        &["push", "--bind", ANY_PORT, "--data", "a", "--size", "3"],
        &["--size"],
    );
    assert_usage_error(&["monitor", "tcp://127.0.0.1:1"], &["--type"]);
}

// ---- counts and timeouts -------------------------------------------------

#[test]
fn count_stops_a_receiver_after_n_messages() {
    let (p, ep) = pull(&["-n", "2"]);
    let mut push = Proc::start("fabriq push", &mut fabriq(&["push", "--connect", &ep]));
    for i in 0..5 {
        push.send_line(&format!("m{i}"));
    }
    let done = p.success();
    assert_eq!(done.stdout, ["m0", "m1"]);
    assert!(done.err_text().contains("received 2 messages"), "{done:#?}");
    push.kill();
}

#[test]
fn count_stops_a_sender_after_n_messages() {
    let (p, ep) = pull(&["-n", "3"]);
    let sent = push_lines(&ep, &["-n", "2"], &["a", "b", "c", "d"]);
    assert!(sent.err_text().contains("sent 2 messages"), "{sent:#?}");
    let mut push = Proc::start("fabriq push", &mut fabriq(&["push", "--connect", &ep]));
    push.send_line("e");
    assert_eq!(p.success().stdout, ["a", "b", "e"]);
    push.close_stdin();
    push.success();
}

#[test]
fn timeout_ends_a_listener_cleanly() {
    let started = Instant::now();
    let done = run(&["pull", "--bind", ANY_PORT, "--timeout", "0.3"]);
    assert_eq!(done.status.code(), Some(0), "{done:#?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(done.err_text().contains("received 0 messages"), "{done:#?}");
}

#[test]
fn timeout_before_the_count_is_reached_exits_with_1() {
    let done = run(&["pull", "--bind", ANY_PORT, "-n", "2", "--timeout", "0.3"]);
    assert_eq!(done.status.code(), Some(1), "{done:#?}");
    assert!(done.err_text().contains("timed out"), "{done:#?}");
    assert!(
        done.err_text().contains("0 of 2 messages received"),
        "{done:#?}"
    );
}

#[test]
fn timeout_gives_up_on_a_missing_reply_without_lingering() {
    // Nothing listens on the endpoint: the request can never be answered.
    let nowhere = closed_endpoint();
    let started = Instant::now();
    let done = run(&[
        "req",
        "--connect",
        &nowhere,
        "--data",
        "anyone?",
        "--timeout",
        "0.3",
        "--linger",
        "-1",
    ]);
    assert_eq!(done.status.code(), Some(1), "{done:#?}");
    assert!(done.err_text().contains("timed out"), "{done:#?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn ctrl_c_ends_with_the_summary_and_status_130() {
    let (p, _) = pull(&[]);
    // The shell's own kill: no procps needed.
    let kill = std::process::Command::new("sh")
        .args(["-c", &format!("kill -INT {}", p.pid())])
        .status()
        .expect("sh runs");
    assert!(kill.success());
    let done = p.finish();
    assert_eq!(done.status.code(), Some(130), "{done:#?}");
    assert!(done.err_text().contains("received 0 messages"), "{done:#?}");
}

// ---- formats and multipart -------------------------------------------

/// Sends `input` lines (in `in_format`) through push -> pull and returns
/// what pull printed in `out_format`.
fn through(in_args: &[&str], out_args: &[&str], input: &[&str]) -> Vec<String> {
    let count = input.len().to_string();
    let mut args = vec!["-n", count.as_str()];
    args.extend_from_slice(out_args);
    let (p, ep) = pull(&args);
    push_lines(&ep, in_args, input);
    p.success().stdout
}

#[test]
fn format_hex() {
    assert_eq!(
        through(&["--format", "hex"], &["--format", "hex"], &["6869\t00ff"]),
        ["6869\t00ff"]
    );
    assert_eq!(through(&[], &["--format", "hex"], &["hi"]), ["6869"]);
}

#[test]
fn format_base64() {
    assert_eq!(
        through(
            &["--format", "hex"],
            &["--format", "base64"],
            &["6869\t00ff"]
        ),
        ["aGk=\tAP8="]
    );
    assert_eq!(
        through(&["--format", "base64"], &[], &["aGk=\tdGhlcmU="]),
        ["hi\tthere"]
    );
}

#[test]
fn format_json() {
    assert_eq!(
        through(
            &["--format", "hex"],
            &["--format", "json"],
            &["6869\t00ff\t"]
        ),
        [r#"["hi",{"hex":"00ff"},""]"#]
    );
    assert_eq!(
        through(&["--format", "json"], &[], &[r#"["a\tb","c"]"#]),
        ["a\tb\tc"]
    );
}

#[test]
fn multipart_frames_are_joined_with_sep() {
    assert_eq!(
        through(&["--sep", "|"], &["--sep", ","], &["a|b||d", "one"]),
        ["a,b,,d", "one"]
    );
    // An empty --sep reads each line as one frame.
    assert_eq!(
        through(&["--sep", ""], &["--format", "json"], &["a\tb"]),
        [r#"["a\tb"]"#]
    );
}

#[test]
fn bad_input_lines_are_skipped_with_a_message() {
    let (p, ep) = pull(&["-n", "2", "--format", "hex"]);
    let sent = push_lines(&ep, &["--format", "hex"], &["00", "nothex", "ff"]);
    assert!(
        sent.err_text().contains("stdin line 2: bad hex"),
        "{sent:#?}"
    );
    assert_eq!(p.success().stdout, ["00", "ff"]);
}

// ---- fabriq to fabriq --------------------------------------------------

#[test]
fn push_piped_through_a_pull_push_relay_keeps_frames() {
    let (sink, sink_ep) = pull(&["-n", "2"]);
    // relay: fabriq pull --bind ... | fabriq push --connect SINK
    let mut relay_in_cmd = fabriq(&["pull", "--bind", ANY_PORT, "-n", "2"]);
    relay_in_cmd.stdin(Stdio::null()).stdout(Stdio::piped());
    let (relay_in, relay_out) = Proc::start_with_stdout("fabriq pull (relay)", &mut relay_in_cmd);
    let relay_ep = relay_in.bound("");
    let mut relay_push_cmd = fabriq(&["push", "--connect", &sink_ep]);
    relay_push_cmd
        .stdin(Stdio::from(relay_out.expect("piped")))
        .stdout(Stdio::null());
    let (relay_push, _) = Proc::start_with_stdout("fabriq push (relay)", &mut relay_push_cmd);
    push_lines(&relay_ep, &[], &["x\ty", "z"]);
    assert_eq!(sink.success().stdout, ["x\ty", "z"]);
    relay_in.success();
    relay_push.success();
}

#[test]
fn synthetic_load_with_rate() {
    let (p, ep) = pull(&["-n", "5"]);
    let started = Instant::now();
    let sent = run(&[
        "push",
        "--connect",
        &ep,
        "--size",
        "10",
        "-n",
        "5",
        "--rate",
        "50",
    ]);
    assert!(sent.status.success(), "{sent:#?}");
    // 5 messages at 50/s: the last leaves 80 ms after the first.
    assert!(started.elapsed() >= Duration::from_millis(80));
    assert!(
        sent.err_text().contains("sent 5 messages (50 B"),
        "{sent:#?}"
    );
    assert_eq!(p.success().stdout, vec!["abcdefghij"; 5]);
}

#[test]
fn req_and_rep() {
    let rep = Proc::start(
        "fabriq rep",
        &mut fabriq(&["rep", "--bind", ANY_PORT, "--reply", "pong", "-n", "3"]),
    );
    let ep = rep.bound("");
    let req = run(&["req", "--connect", &ep, "--data", "ping", "-n", "3"]);
    assert!(req.status.success(), "{req:#?}");
    assert_eq!(req.stdout, ["pong", "pong", "pong"]);
    assert_eq!(rep.success().stdout, ["ping", "ping", "ping"]);
}

#[test]
fn dealer_and_router_with_identities() {
    let mut router = Proc::start(
        "fabriq router",
        &mut fabriq(&["router", "--bind", ANY_PORT]),
    );
    let ep = router.bound("");
    let mut dealer = Proc::start(
        "fabriq dealer",
        &mut fabriq(&["dealer", "--connect", &ep, "--identity", "alice", "-n", "1"]),
    );
    dealer.send_line("hello");
    assert_eq!(router.line(), "alice\thello");
    router.send_line("nobody\tlost");
    assert!(router
        .err_line("fabriq router: no peer")
        .contains("\"nobody\""));
    router.send_line("alice\thi\tthere");
    let done = dealer.success();
    assert_eq!(done.stdout, ["hi\tthere"]);
    router.kill();
}

#[test]
fn pair_to_pair() {
    let a = Proc::start(
        "fabriq pair a",
        &mut fabriq(&["pair", "--bind", ANY_PORT, "-n", "1"]),
    );
    let ep = a.bound("");
    let b = Proc::start(
        "fabriq pair b",
        &mut fabriq(&["pair", "--connect", &ep, "--data", "from b", "-n", "1"]),
    );
    assert_eq!(a.line(), "from b");
    a.success();
    b.success();
}

#[test]
fn pub_topic_prefix_and_sub_topic_filter() {
    let mut publisher = Proc::start(
        "fabriq pub",
        &mut fabriq(&["pub", "--bind", ANY_PORT, "--topic", "x."]),
    );
    let ep = publisher.bound("");
    let sub = Proc::start(
        "fabriq sub",
        &mut fabriq(&["sub", "--connect", &ep, "--topic", "x.keep"]),
    );
    let first = publish_until_received(
        |i| {
            publisher.send_line(&format!("drop {i}"));
            publisher.send_line(&format!("keep {i}"));
        },
        &sub,
    );
    assert!(first.starts_with("x.keep "), "{first}");
    publisher.close_stdin();
    publisher.success();
    sub.kill();
}

#[test]
fn xpub_shows_subscriptions_of_a_sub() {
    let xpub = Proc::start(
        "fabriq xpub",
        &mut fabriq(&["xpub", "--bind", ANY_PORT, "-n", "2"]),
    );
    let ep = xpub.bound("");
    let sub = Proc::start(
        "fabriq sub",
        &mut fabriq(&[
            "sub",
            "--connect",
            &ep,
            "--topic",
            "news",
            "--topic",
            "sport",
        ]),
    );
    let mut subs = vec![xpub.line(), xpub.line()];
    subs.sort();
    assert_eq!(subs, ["+news", "+sport"]);
    xpub.success();
    sub.kill();
}

#[test]
fn proxy_xsub_xpub_between_fabriq_pub_and_sub() {
    let proxy = Proc::start(
        "fabriq proxy",
        &mut fabriq(&[
            "proxy",
            "--kind",
            "xsub-xpub",
            "--frontend",
            ANY_PORT,
            "--backend",
            ANY_PORT,
            "--timeout",
            "10",
        ]),
    );
    let front = proxy.bound("frontend ");
    let back = proxy.bound("backend ");
    let sub = Proc::start(
        "fabriq sub",
        &mut fabriq(&["sub", "--connect", &back, "--topic", "a."]),
    );
    let mut publisher = Proc::start("fabriq pub", &mut fabriq(&["pub", "--connect", &front]));
    let first = publish_until_received(
        |i| {
            publisher.send_line(&format!("b.{i}"));
            publisher.send_line(&format!("a.{i}"));
        },
        &sub,
    );
    assert!(first.starts_with("a."), "{first}");
    publisher.close_stdin();
    publisher.success();
    sub.kill();
    proxy.kill();
}

#[test]
fn monitor_prints_connection_events() {
    let (p, ep) = pull(&["--timeout", "10"]);
    let done = run(&[
        "monitor", &ep, "--type", "push", "-n", "2", "--format", "json",
    ]);
    assert!(done.status.success(), "{done:#?}");
    let events: Vec<String> = done
        .stdout
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            v["event"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    assert!(events.iter().any(|e| e == "CONNECTED"), "{done:#?}");
    p.kill();
}

#[test]
fn monitor_with_bind_shows_listening() {
    let done = run(&[
        "monitor",
        "bind:tcp://127.0.0.1:*",
        "--type",
        "pull",
        "-n",
        "1",
    ]);
    assert!(done.status.success(), "{done:#?}");
    assert!(
        done.stdout[0].starts_with("LISTENING tcp://127.0.0.1:"),
        "{done:#?}"
    );
}

#[test]
fn info_lists_the_fabric_providers_and_names_a_missing_one() {
    let out = common::fabriq(&["info"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ofi+tcp://HOST:PORT"), "{text}");
    assert!(text.contains("ofi+shm://HOST:PORT"), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let unique: std::collections::HashSet<&&str> = lines.iter().collect();
    assert_eq!(lines.len(), unique.len(), "one line per description");

    let out = common::fabriq(&["info", "--provider", "verbs"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("verbs") && err.contains("not available"),
        "{err}"
    );
}
