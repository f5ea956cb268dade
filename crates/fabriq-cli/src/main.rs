//! `fabriq`: ZeroMQ pattern testers on the command line.
//!
//! `fabriq pull --bind tcp://127.0.0.1:5555` prints what arrives,
//! `seq 3 | fabriq push --connect tcp://127.0.0.1:5555` sends lines, and so
//! on for every socket type; `fabriq proxy` runs a zmq_proxy and
//! `fabriq monitor` prints a socket's events. Endpoints are tcp://, ipc://
//! and libfabric's ofi+PROVIDER:// (`fabriq info` lists the providers).
//! See `fabriq --help` and the README's "The `fabriq` command" section.

#![forbid(unsafe_code)]

mod args;
mod error;
mod format;
mod info;
mod monitor;
mod pattern;
mod proxy;
mod recv;
mod run;
mod security;
mod send;
mod sockets;
mod stats;
mod wake;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use error::{CliError, Ending};
use pattern::{run_pattern, ReqMode, Spec};
use run::Role;
use wake::Wake;

fn main() -> ExitCode {
    // Usage errors exit with 2, --help and --version with 0.
    let cli = Cli::parse();
    if let Command::Bench { args } = cli.command {
        // The bench re-executes this binary as `fabriq bench worker ...`.
        let argv = std::iter::once(std::ffi::OsString::from("fabriq bench")).chain(args);
        return fabriq_bench::main(&["bench"], argv);
    }
    let name = command_name(&cli.command);
    let wake = match Wake::new() {
        Ok(wake) => wake,
        Err(e) => {
            eprintln!("fabriq {name}: error: cannot set up a wake-up channel: {e}");
            return ExitCode::from(1);
        }
    };
    match wake.waker() {
        Ok(waker) => wake::install_interrupt_handler(waker),
        Err(e) => eprintln!("fabriq {name}: warning: Ctrl-C will end the run abruptly ({e})"),
    }
    match dispatch(cli.command, &wake) {
        Ok(ending) => ExitCode::from(ending.exit_code()),
        Err(e) => {
            eprintln!("fabriq {name}: error: {e}");
            if let CliError::Usage(_) = e {
                eprintln!("Run `fabriq {name} --help` for the options and examples.");
            }
            ExitCode::from(e.exit_code())
        }
    }
}

fn command_name(command: &Command) -> &'static str {
    match command {
        Command::Pub(_) => "pub",
        Command::Sub(_) => "sub",
        Command::Push(_) => "push",
        Command::Pull(_) => "pull",
        Command::Req(_) => "req",
        Command::Rep(_) => "rep",
        Command::Dealer(_) => "dealer",
        Command::Router(_) => "router",
        Command::Pair(_) => "pair",
        Command::Xpub(_) => "xpub",
        Command::Xsub(_) => "xsub",
        Command::Proxy(_) => "proxy",
        Command::Monitor(_) => "monitor",
        Command::Keygen => "keygen",
        Command::Info(_) => "info",
        Command::Bench { .. } => "bench",
    }
}

fn dispatch(command: Command, wake: &Wake) -> Result<Ending, CliError> {
    let name = command_name(&command);
    let spec = match command {
        Command::Proxy(a) => return proxy::run(&a, wake),
        Command::Monitor(a) => return monitor::run(&a, wake),
        Command::Keygen => return security::keygen(),
        Command::Info(a) => return info::run(&a),
        Command::Bench { .. } => unreachable!("bench is run before dispatch"),
        Command::Pub(a) => Spec {
            prefix: a.topic,
            load: Some(a.load),
            ..Spec::new(
                name,
                fabriq::PUB,
                Role::Send,
                a.endpoints,
                a.socket,
                a.run,
                a.format,
            )
        },
        Command::Sub(a) => Spec {
            subscribe: Some(a.topic),
            ..Spec::new(
                name,
                fabriq::SUB,
                Role::Recv,
                a.endpoints,
                a.socket,
                a.run,
                a.format,
            )
        },
        Command::Push(a) => Spec {
            load: Some(a.load),
            ..Spec::new(
                name,
                fabriq::PUSH,
                Role::Send,
                a.endpoints,
                a.socket,
                a.run,
                a.format,
            )
        },
        Command::Pull(a) => Spec::new(
            name,
            fabriq::PULL,
            Role::Recv,
            a.endpoints,
            a.socket,
            a.run,
            a.format,
        ),
        Command::Req(a) => Spec {
            load: Some(a.send.load),
            req: ReqMode {
                relaxed: a.req_relaxed,
                correlate: a.req_correlate,
            },
            ..Spec::new(
                name,
                fabriq::REQ,
                Role::Req,
                a.send.endpoints,
                a.send.socket,
                a.send.run,
                a.send.format,
            )
        },
        Command::Rep(a) => Spec {
            reply: a.reply,
            ..Spec::new(
                name,
                fabriq::REP,
                Role::Rep,
                a.endpoints,
                a.socket,
                a.run,
                a.format,
            )
        },
        Command::Dealer(a) => Spec::duplex(name, fabriq::DEALER, a),
        Command::Router(a) => Spec::duplex(name, fabriq::ROUTER, a),
        Command::Pair(a) => Spec::duplex(name, fabriq::PAIR, a),
        Command::Xpub(a) => Spec::duplex(name, fabriq::XPUB, a),
        Command::Xsub(a) => Spec {
            subscribe: Some(a.topic),
            ..Spec::duplex(name, fabriq::XSUB, a.duplex)
        },
    };
    run_pattern(spec, wake)
}
