//! The pattern commands (`pub`, `sub`, `push`, ... `xsub`): from the
//! parsed options to a configured socket and a [`Job`] for the loop in
//! [`crate::run`], then the summary.

use std::time::Instant;

use bytes::Bytes;
use fabriq::{Context, SocketType};

use crate::args::{DuplexArgs, Endpoints, FormatOpts, LoadOpts, RunOpts, SocketOpts};
use crate::error::{runtime, CliError, Ending};
use crate::format::{Codec, Format};
use crate::recv::Printer;
use crate::run::{self, Job, Reply, Role};
use crate::security;
use crate::send::Source;
use crate::sockets::{self, Target};
use crate::stats::human_duration;
use crate::wake::Wake;

/// A pattern command, whatever its subcommand's option struct.
pub struct Spec {
    /// The subcommand, for messages.
    pub command: &'static str,
    /// The socket type.
    pub kind: SocketType,
    /// What the socket does with messages.
    pub role: Role,
    /// `--bind`, `--connect`.
    pub endpoints: Endpoints,
    /// Socket options.
    pub socket: SocketOpts,
    /// `-n`, `--timeout`, `--quiet`.
    pub run: RunOpts,
    /// `--format`, `--sep`.
    pub format: FormatOpts,
    /// `--data`, `--size`, `--rate` (sending types).
    pub load: Option<LoadOpts>,
    /// SUB and XSUB topics (empty: everything).
    pub subscribe: Option<Vec<String>>,
    /// `pub --topic`.
    pub prefix: Option<String>,
    /// `rep --reply`.
    pub reply: Option<String>,
    /// `req --req-relaxed`, `--req-correlate`.
    pub req: ReqMode,
}

/// REQ's own options (both off elsewhere).
#[derive(Debug, Clone, Copy, Default)]
pub struct ReqMode {
    /// ZMQ_REQ_RELAXED: a request may go out before the last one's reply.
    pub relaxed: bool,
    /// ZMQ_REQ_CORRELATE: replies to older requests are dropped.
    pub correlate: bool,
}

impl Spec {
    /// A spec with the options every pattern command has.
    pub fn new(
        command: &'static str,
        kind: SocketType,
        role: Role,
        endpoints: Endpoints,
        socket: SocketOpts,
        run: RunOpts,
        format: FormatOpts,
    ) -> Spec {
        Spec {
            command,
            kind,
            role,
            endpoints,
            socket,
            run,
            format,
            load: None,
            subscribe: None,
            prefix: None,
            reply: None,
            req: ReqMode::default(),
        }
    }

    /// A two-way type (dealer, router, pair, xpub, xsub).
    pub fn duplex(command: &'static str, kind: SocketType, a: DuplexArgs) -> Spec {
        Spec {
            load: Some(a.load),
            ..Spec::new(
                command,
                kind,
                Role::Duplex,
                a.endpoints,
                a.socket,
                a.run,
                a.format,
            )
        }
    }
}

/// Sets up the socket for a pattern command, runs it, prints the summary.
pub fn run_pattern(spec: Spec, wake: &Wake) -> Result<Ending, CliError> {
    let started = Instant::now();
    let mut codec = Codec::new(spec.format.format, &spec.format.sep);
    codec.identity_first = spec.kind == fabriq::ROUTER;
    codec.marks_out = spec.kind == fabriq::XPUB;
    codec.marks_in = spec.kind == fabriq::XSUB;
    if codec.identity_first && codec.sep.is_empty() && spec.format.format != Format::Json {
        return Err(CliError::Usage(
            "router lines need a separator between the routing id and the message: \
             give a non-empty --sep"
                .to_string(),
        ));
    }
    let decode = |option: &str, text: &str| {
        codec
            .decode(text.as_bytes())
            .map_err(|e| CliError::Usage(format!("{option}: {e}")))
    };

    // Everything that can be checked is checked before the socket exists.
    let count = spec.run.count;
    let data = match spec.load.as_ref().and_then(|l| l.data.as_ref()) {
        Some(text) => Some(decode("--data", text)?),
        None => None,
    };
    let reply = match &spec.reply {
        Some(text) => Reply::Fixed(decode("--reply", text)?),
        None => Reply::Echo,
    };

    let ctx = Context::new();
    let socket = sockets::open(
        &ctx,
        spec.kind,
        &spec.socket.tuning,
        Some(spec.socket.linger),
        spec.socket.identity.as_deref(),
    )?;
    // Before any bind or connect: options apply to connections made later.
    let authenticator = security::secure(&ctx, &socket, &spec.socket.security)?;
    if spec.kind == fabriq::SUB {
        for topic in topics(&spec.subscribe) {
            socket
                .set_subscribe(topic.as_bytes())
                .map_err(|e| runtime("cannot subscribe", e))?;
        }
    }
    if spec.req.relaxed {
        socket
            .set_req_relaxed(true)
            .map_err(|e| runtime("cannot set --req-relaxed", e))?;
    }
    if spec.req.correlate {
        socket
            .set_req_correlate(true)
            .map_err(|e| runtime("cannot set --req-correlate", e))?;
    }
    if spec.kind == fabriq::ROUTER {
        // Report messages for unknown peers instead of dropping them.
        socket
            .set_router_mandatory(true)
            .map_err(|e| runtime("cannot set up the router", e))?;
    }
    let preload = if spec.kind == fabriq::XSUB {
        topics(&spec.subscribe)
            .iter()
            .map(|t| vec![Bytes::from([&[1u8][..], t.as_bytes()].concat())])
            .collect()
    } else {
        Vec::new()
    };
    let targets = Target::from_lists(&spec.endpoints.bind, &spec.endpoints.connect);
    sockets::attach(&socket, &targets, "", spec.run.quiet)?;

    let source = match &spec.load {
        None => None,
        Some(load) => {
            let total = count.unwrap_or(1);
            let source = match (data, load.size) {
                (Some(msg), _) => Source::repeat(msg, total),
                (None, Some(size)) => Source::synthetic(size, total),
                (None, None) => {
                    let waker = wake
                        .waker()
                        .map_err(|e| CliError::Runtime(format!("cannot read stdin: {e}")))?;
                    Source::stdin(codec.clone(), waker)
                }
            };
            let prefix = spec.prefix.as_ref().map(|p| Bytes::from(p.clone()));
            Some(source.with_prefix(prefix).with_rate(load.rate))
        }
    };
    let receives = spec.role != Role::Send;
    let job = Job {
        command: spec.command,
        role: spec.role,
        socket,
        source,
        printer: receives.then(|| Printer::new(codec.clone())),
        reply,
        relaxed: spec.req.relaxed,
        preload,
        count,
        deadline: spec.run.timeout.map(|t| started + t),
        quiet: spec.run.quiet,
    };
    let (ending, stats) = run::run(job, wake)?;
    drop(authenticator);
    // Waits for queued messages to leave (up to --linger).
    drop(ctx);

    if let Ending::TimedOut { unmet: Some(what) } = &ending {
        eprintln!(
            "fabriq {}: timed out after {}: {what}",
            spec.command,
            human_duration(started.elapsed())
        );
    }
    if !spec.run.quiet {
        let sends = spec.role != Role::Recv;
        eprintln!("{}", stats.summary(spec.command, sends, receives));
    }
    Ok(ending)
}

/// The topics to subscribe to: those given, or everything.
fn topics(given: &Option<Vec<String>>) -> Vec<String> {
    match given {
        Some(list) if !list.is_empty() => list.clone(),
        _ => vec![String::new()],
    }
}
