//! The command line: subcommands, their options and their `--help` texts.
//!
//! Option groups that several subcommands share (endpoints, socket
//! options, run limits, message format, synthetic load) are separate
//! `clap::Args` structs flattened into each subcommand, so every
//! subcommand shows exactly the options that mean something for it.

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::format::Format;

/// Endpoint forms, shown in help and in endpoint errors.
pub const ENDPOINT_FORMS: &str = "tcp://HOST:PORT (bind: tcp://*:PORT, tcp://127.0.0.1:* \
     for a free port), ipc://PATH, ipc://@NAME (abstract), ipc://*, \
     ofi+PROVIDER://HOST:PORT (libfabric, e.g. ofi+tcp, ofi+shm; see `fabriq info`)";

const TOP_HELP: &str = "\
Examples:
  fabriq pull --bind tcp://127.0.0.1:5555            # print what arrives
  seq 3 | fabriq push --connect tcp://127.0.0.1:5555 # send three lines
  fabriq sub --connect tcp://127.0.0.1:5556 --topic weather.
  fabriq proxy --kind xsub-xpub --frontend tcp://*:5559 --backend tcp://*:5560
  fabriq monitor tcp://127.0.0.1:5555 --type push

Endpoints: tcp://HOST:PORT, tcp://*:PORT, tcp://127.0.0.1:* (free port, printed
as `bound ENDPOINT` on stderr), ipc://PATH, ipc://@NAME, ipc://*, and
ofi+PROVIDER://HOST:PORT (libfabric: ZMTP's handshake over a TCP connection to
HOST:PORT, the messages over the provider's fabric, e.g. ofi+tcp, ofi+shm;
`fabriq info` lists what this machine offers).

Each line of stdin is one message; frames of a multipart message are separated
by --sep (a tab by default). Received messages are printed the same way, one per
line. A summary goes to stderr at the end.

Exit status: 0 done, 1 runtime error (or --timeout before -n was reached),
2 usage error, 130 interrupted (Ctrl-C).";

const PUB_HELP: &str = "\
Examples:
  fabriq pub --bind tcp://*:5556                     # publish stdin lines
  fabriq pub --bind tcp://*:5556 --topic 'weather.'  # prefix each line
  fabriq pub --connect tcp://127.0.0.1:5556 --size 100 -n 100000 --rate 10000

PUB drops messages while nobody subscribes: a subscriber that connects late
misses what was sent before its subscription arrived.";

const SUB_HELP: &str = "\
Examples:
  fabriq sub --connect tcp://127.0.0.1:5556                      # everything
  fabriq sub --connect tcp://127.0.0.1:5556 --topic a. --topic b.
  fabriq sub --bind tcp://*:5556 -n 10 --format hex";

const PUSH_HELP: &str = "\
Examples:
  seq 10 | fabriq push --connect tcp://127.0.0.1:5557
  fabriq push --bind tcp://*:5557 --data hello -n 5
  fabriq push --connect tcp://127.0.0.1:5557 --size 1024 -n 1000000
  printf 'a\\tb\\n' | fabriq push --connect tcp://127.0.0.1:5557  # two frames

PUSH waits for a peer before sending; at the end it waits up to --linger ms
for queued messages to leave.";

const PULL_HELP: &str = "\
Examples:
  fabriq pull --bind tcp://*:5557
  fabriq pull --bind tcp://127.0.0.1:* -n 1 --timeout 10
  fabriq pull --connect ipc:///tmp/feed --format json
  fabriq pull --bind ofi+tcp://127.0.0.1:5601        # libfabric's tcp provider";

const REQ_HELP: &str = "\
Examples:
  echo ping | fabriq req --connect tcp://127.0.0.1:5555   # prints the reply
  fabriq req --connect tcp://127.0.0.1:5555 --data ping -n 3

Each message is sent when the reply to the previous one has arrived; with
-n N the command ends after N replies. With --req-relaxed each input line is
sent as soon as it is read, answered or not (add --req-correlate so that a
late reply to an abandoned request is dropped, as libzmq does).";

const REP_HELP: &str = "\
Examples:
  fabriq rep --bind tcp://*:5555                 # echo every request
  fabriq rep --bind tcp://*:5555 --reply pong -n 1

Each request is printed, then answered.";

const DEALER_HELP: &str = "\
Examples:
  fabriq dealer --connect tcp://127.0.0.1:5555 --identity alice
  printf '\\thello\\n' | fabriq dealer --connect tcp://127.0.0.1:5555  # to a REP

DEALER sends each line as typed: a REP or REQ peer needs the empty delimiter
frame, i.e. a line starting with the separator.";

const ROUTER_HELP: &str = "\
Examples:
  fabriq router --bind tcp://*:5555
  printf 'alice\\thi\\n' | fabriq router --bind tcp://*:5555   # to dealer alice

Received messages are printed with the sender's routing id as the first field:
as text when it is printable, else as 0x followed by hex (ids libzmq and fabriq
make up look like 0x0080000001). The first field of each input line names the
peer to send to, in the same form. A line for an unknown peer is reported on
stderr and dropped.";

const PAIR_HELP: &str = "\
Examples:
  fabriq pair --bind tcp://*:5555
  fabriq pair --connect tcp://127.0.0.1:5555 --data hi -n 1";

const XPUB_HELP: &str = "\
Examples:
  fabriq xpub --bind tcp://*:5556

Subscription messages received are printed as +TOPIC (subscribe) and -TOPIC
(unsubscribe) in text format; stdin lines are published.";

const XSUB_HELP: &str = "\
Examples:
  fabriq xsub --connect tcp://127.0.0.1:5556 --topic weather.
  echo '+news' | fabriq xsub --connect tcp://127.0.0.1:5556 --topic ''

Subscribes to each --topic (everything if none is given) at the start; stdin
lines are sent upstream, +TOPIC and -TOPIC as (un)subscriptions in text format.";

const PROXY_HELP: &str = "\
Examples:
  fabriq proxy --kind xsub-xpub --frontend tcp://*:5559 --backend tcp://*:5560
  fabriq proxy --kind router-dealer --frontend tcp://*:5555 \\
               --backend connect:tcp://workers.example:5556
  fabriq proxy --kind pull-push --frontend tcp://*:5557 --backend tcp://*:5558 \\
               --capture tcp://127.0.0.1:*

Endpoints bind by default (a proxy is usually the stable point others connect
to); write connect:EP to connect instead, bind:EP to be explicit. Each bound
endpoint is printed on stderr as `bound frontend|backend|capture ENDPOINT`.
The capture socket gets a copy of every message in both directions; it never
slows the proxy down (copies are dropped when it cannot keep up).";

const MONITOR_HELP: &str = "\
Examples:
  fabriq monitor tcp://127.0.0.1:5555 --type dealer
  fabriq monitor bind:tcp://127.0.0.1:* --type pull -n 3

Prints one line per socket event: NAME ENDPOINT value=VALUE, e.g.
  CONNECTED tcp://127.0.0.1:5555 value=7
  HANDSHAKE_SUCCEEDED tcp://127.0.0.1:5555 value=0
The endpoint is connected to by default; bind:EP binds instead.";

const KEYGEN_HELP: &str = "\
Examples:
  fabriq keygen > server.keys
  fabriq pull --bind tcp://*:5557 --curve-server \"$(awk '/^secret/{print $2}' server.keys)\"
  fabriq push --connect tcp://127.0.0.1:5557 --data hi \\
      --curve-serverkey \"$(awk '/^public/{print $2}' server.keys)\" \\
      --curve-secretkey \"$(fabriq keygen | awk '/^secret/{print $2}')\"

Prints two lines, `public: KEY` and `secret: KEY`, each KEY 40 characters of
Z85 (what zmq_curve_keypair and pyzmq's zmq.curve_keypair() make). Keep the
secret key secret.";

const INFO_HELP: &str = "\
Examples:
  fabriq info                   # every RDM provider, one line each
  fabriq info --provider tcp -v # one provider, with fi_info's full text

Lists what fi_getinfo offers for reliable datagram (RDM) endpoints, the kind
`ofi+PROVIDER://HOST:PORT` endpoints use: provider, fabric, domain, whether
data and control progress on their own (auto) or only while fabriq reads
the completion queues (manual), and the endpoint to write. Exits 1 with
libfabric's reason when the provider is not available.";

/// Options of `fabriq info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Only this provider (tcp, shm, verbs, psm2, efa, ...).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Also print fi_info's full description of each.
    #[arg(short, long)]
    pub verbose: bool,
}

/// ZeroMQ pattern testers: send and receive lines over tcp and ipc with any
/// ZeroMQ peer (libzmq, pyzmq, fabriq), and between fabriq peers over
/// libfabric (ofi+PROVIDER:// endpoints).
#[derive(Parser, Debug)]
#[command(name = "fabriq", version, after_help = TOP_HELP)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Publish stdin lines or synthetic messages (PUB)
    #[command(after_help = PUB_HELP)]
    Pub(PubArgs),
    /// Print published messages (SUB)
    #[command(after_help = SUB_HELP)]
    Sub(SubArgs),
    /// Send stdin lines or synthetic messages to pullers (PUSH)
    #[command(after_help = PUSH_HELP)]
    Push(SendArgs),
    /// Print pushed messages (PULL)
    #[command(after_help = PULL_HELP)]
    Pull(RecvArgs),
    /// Send requests and print the replies (REQ)
    #[command(after_help = REQ_HELP)]
    Req(ReqArgs),
    /// Print requests and answer them (REP)
    #[command(after_help = REP_HELP)]
    Rep(RepArgs),
    /// Send stdin lines, print what arrives (DEALER)
    #[command(after_help = DEALER_HELP)]
    Dealer(DuplexArgs),
    /// Print messages with their sender's id; send to the id each line names (ROUTER)
    #[command(after_help = ROUTER_HELP)]
    Router(DuplexArgs),
    /// Send stdin lines, print what arrives (PAIR)
    #[command(after_help = PAIR_HELP)]
    Pair(DuplexArgs),
    /// Publish stdin lines, print subscriptions (XPUB)
    #[command(after_help = XPUB_HELP)]
    Xpub(DuplexArgs),
    /// Subscribe and print messages, send stdin lines upstream (XSUB)
    #[command(after_help = XSUB_HELP)]
    Xsub(XsubArgs),
    /// Forward messages between a frontend and a backend (zmq_proxy)
    #[command(after_help = PROXY_HELP)]
    Proxy(ProxyArgs),
    /// Connect a socket to an endpoint and print its events
    #[command(after_help = MONITOR_HELP)]
    Monitor(MonitorArgs),
    /// Print a new CURVE key pair in Z85: `public: KEY`, then `secret: KEY`
    #[command(after_help = KEYGEN_HELP)]
    Keygen,
    /// List the libfabric providers this machine offers for ofi+ endpoints
    #[command(after_help = INFO_HELP)]
    Info(InfoArgs),
    /// Benchmark fabriq against libzmq and a raw floor (`fabriq bench --help`)
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Bench {
        /// Arguments for the benchmark (see `fabriq bench --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

/// Where the socket binds and connects.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = true)]
pub struct Endpoints {
    /// Accept connections on EP (repeatable); port * picks a free one
    #[arg(long, value_name = "EP")]
    pub bind: Vec<String>,
    /// Connect to EP (repeatable); the connection is made in the background
    #[arg(long, value_name = "EP")]
    pub connect: Vec<String>,
}

/// Socket options that apply to any socket, the proxy's included.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Socket options")]
pub struct Tuning {
    /// High-water mark: messages queued per peer and direction (0: no limit) [default: 1000]
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(i32).range(0..)
    )]
    pub hwm: Option<i32>,
    /// Wait between reconnection attempts, in ms (-1: never reconnect) [default: 100]
    #[arg(
        long,
        value_name = "MS",
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(i32).range(-1..)
    )]
    pub reconnect_ivl: Option<i32>,
    /// Send a ZMTP heartbeat every MS ms and drop silent peers (0: off) [default: 0]
    #[arg(
        long,
        value_name = "MS",
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(i32).range(0..)
    )]
    pub heartbeat_ivl: Option<i32>,
    /// With --heartbeat-ivl: drop the connection when nothing came from the peer for MS ms
    /// (ZMQ_HEARTBEAT_TIMEOUT; 0: the interval) [default: the heartbeat interval]
    #[arg(
        long,
        value_name = "MS",
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(i32).range(0..)
    )]
    pub heartbeat_timeout: Option<i32>,
}

/// Socket options of the pattern subcommands: the shared ones, linger
/// and the routing id.
#[derive(Args, Debug, Clone)]
pub struct SocketOpts {
    /// The shared options.
    #[command(flatten)]
    pub tuning: Tuning,
    /// How long to keep delivering queued messages at exit, in ms (-1: forever)
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 1000,
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(i32).range(-1..),
        help_heading = "Socket options"
    )]
    pub linger: i32,
    /// Routing id announced to peers: text, or 0x followed by hex
    #[arg(long, value_name = "ID", help_heading = "Socket options")]
    pub identity: Option<String>,
    /// CURVE and PLAIN.
    #[command(flatten)]
    pub security: SecurityOpts,
}

/// Security: CURVE and PLAIN, server or client side. Keys are 40-character
/// Z85 text, as `fabriq keygen` prints them.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Security (keys in Z85, as `fabriq keygen` prints them)")]
pub struct SecurityOpts {
    /// Be a CURVE server with this secret key; without --curve-allow* any client that knows
    /// the public key gets in
    #[arg(
        long,
        value_name = "SECRETKEY",
        allow_hyphen_values = true,
        conflicts_with_all = ["curve_serverkey", "plain_server", "plain_username"]
    )]
    pub curve_server: Option<String>,
    /// With --curve-server: let in the client with this public key (repeatable; checked over ZAP)
    #[arg(
        long,
        value_name = "PUBKEY",
        allow_hyphen_values = true,
        requires = "curve_server"
    )]
    pub curve_allow: Vec<String>,
    /// With --curve-server: let in the clients whose public certificates (czmq zcert files,
    /// as pyzmq's zmq.auth.create_certificates writes them) are in DIR
    #[arg(long, value_name = "DIR", requires = "curve_server")]
    pub curve_allow_dir: Option<std::path::PathBuf>,
    /// Be a CURVE client of the server with this public key (needs --curve-secretkey)
    #[arg(
        long,
        value_name = "PUBKEY",
        allow_hyphen_values = true,
        requires = "curve_secretkey",
        conflicts_with_all = ["plain_server", "plain_username"]
    )]
    pub curve_serverkey: Option<String>,
    /// The CURVE client's secret key (its public key is derived from it)
    #[arg(
        long,
        value_name = "SECRETKEY",
        allow_hyphen_values = true,
        requires = "curve_serverkey"
    )]
    pub curve_secretkey: Option<String>,
    /// Be a PLAIN server; the --plain-user table decides who gets in (checked over ZAP)
    #[arg(long, requires = "plain_user", conflicts_with = "plain_username")]
    pub plain_server: bool,
    /// With --plain-server: accept this user name and password (repeatable)
    #[arg(
        long,
        value_name = "USER:PASS",
        allow_hyphen_values = true,
        requires = "plain_server"
    )]
    pub plain_user: Vec<String>,
    /// Be a PLAIN client with this user name (needs --plain-password)
    #[arg(
        long,
        value_name = "USER",
        allow_hyphen_values = true,
        requires = "plain_password"
    )]
    pub plain_username: Option<String>,
    /// The PLAIN client's password
    #[arg(
        long,
        value_name = "PASS",
        allow_hyphen_values = true,
        requires = "plain_username"
    )]
    pub plain_password: Option<String>,
}

/// When to stop, and how much to say about it.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Run")]
pub struct RunOpts {
    /// Stop after N messages: sent by push and pub and with --data/--size, received by sub,
    /// pull and two-way types, exchanged by req and rep
    #[arg(
        short = 'n',
        long = "count",
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub count: Option<u64>,
    /// Stop after S seconds in all (e.g. 2.5); an unmet -n then exits with 1
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    pub timeout: Option<Duration>,
    /// Print neither `bound` lines nor the summary on stderr
    #[arg(short, long)]
    pub quiet: bool,
}

/// How messages are written to stdout and read from stdin.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Message format")]
pub struct FormatOpts {
    /// How frames are written and read
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Separator between the frames of a message on one line ('' reads each line as one frame) [default: a tab]
    #[arg(
        long,
        value_name = "S",
        default_value = "\t",
        hide_default_value = true
    )]
    pub sep: String,
}

/// Where outgoing messages come from, when not from stdin.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Input (default: one message per stdin line)")]
pub struct LoadOpts {
    /// Send S (read like an input line) instead of stdin, -n times (default once)
    #[arg(long, value_name = "S", conflicts_with = "size")]
    pub data: Option<String>,
    /// Send synthetic messages of BYTES bytes (at most 1 GiB) instead of stdin, -n times
    /// (default once)
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub size: Option<usize>,
    /// Send at most MSG_PER_S messages per second
    #[arg(long, value_name = "MSG_PER_S", value_parser = parse_rate)]
    pub rate: Option<f64>,
}

/// `pub`.
#[derive(Args, Debug, Clone)]
pub struct PubArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
    /// Prefix the first frame of every message with T
    #[arg(long, value_name = "T")]
    pub topic: Option<String>,
    #[command(flatten)]
    pub load: LoadOpts,
    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub format: FormatOpts,
    #[command(flatten)]
    pub socket: SocketOpts,
}

/// `sub`.
#[derive(Args, Debug, Clone)]
pub struct SubArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
    /// Receive messages starting with T (repeatable; default: everything)
    #[arg(long, value_name = "T")]
    pub topic: Vec<String>,
    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub format: FormatOpts,
    #[command(flatten)]
    pub socket: SocketOpts,
}

/// Sending types: `push`, `req`.
#[derive(Args, Debug, Clone)]
pub struct SendArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
    #[command(flatten)]
    pub load: LoadOpts,
    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub format: FormatOpts,
    #[command(flatten)]
    pub socket: SocketOpts,
}

/// `req`: a sending type with REQ's own options.
#[derive(Args, Debug, Clone)]
pub struct ReqArgs {
    #[command(flatten)]
    pub send: SendArgs,
    /// Let a new request go out while the last one is unanswered (ZMQ_REQ_RELAXED): the
    /// next input line is sent at once, so a request whose REP died can be asked again
    #[arg(long, help_heading = "Socket options")]
    pub req_relaxed: bool,
    /// Number requests and drop replies that are not to the last one (ZMQ_REQ_CORRELATE)
    #[arg(long, help_heading = "Socket options")]
    pub req_correlate: bool,
}

/// Receiving types: `pull`.
#[derive(Args, Debug, Clone)]
pub struct RecvArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub format: FormatOpts,
    #[command(flatten)]
    pub socket: SocketOpts,
}

/// `rep`.
#[derive(Args, Debug, Clone)]
pub struct RepArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
    /// Answer every request with S (read like an input line) instead of echoing it
    #[arg(long, value_name = "S")]
    pub reply: Option<String>,
    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub format: FormatOpts,
    #[command(flatten)]
    pub socket: SocketOpts,
}

/// Two-way types: `dealer`, `router`, `pair`, `xpub`.
#[derive(Args, Debug, Clone)]
pub struct DuplexArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
    #[command(flatten)]
    pub load: LoadOpts,
    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub format: FormatOpts,
    #[command(flatten)]
    pub socket: SocketOpts,
}

/// `xsub`.
#[derive(Args, Debug, Clone)]
pub struct XsubArgs {
    /// The options of the two-way types.
    #[command(flatten)]
    pub duplex: DuplexArgs,
    /// Subscribe to T at the start (repeatable; default: everything)
    #[arg(long, value_name = "T")]
    pub topic: Vec<String>,
}

/// The socket pairs a proxy can run.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    /// XSUB frontend (publishers connect), XPUB backend (subscribers connect)
    XsubXpub,
    /// ROUTER frontend (clients connect), DEALER backend (workers connect)
    RouterDealer,
    /// PULL frontend (pushers connect), PUSH backend (pullers connect)
    PullPush,
}

/// The socket type of a proxy's capture socket.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureType {
    /// PUB: any number of `fabriq sub` listeners
    Pub,
    /// PUSH: one `fabriq pull` gets every copy
    Push,
}

/// `proxy`.
#[derive(Args, Debug, Clone)]
pub struct ProxyArgs {
    /// Sockets to run
    #[arg(long, value_enum)]
    pub kind: ProxyKind,
    /// Frontend endpoint: EP or bind:EP binds, connect:EP connects (repeatable)
    #[arg(long, value_name = "EP", required = true)]
    pub frontend: Vec<String>,
    /// Backend endpoint: EP or bind:EP binds, connect:EP connects (repeatable)
    #[arg(long, value_name = "EP", required = true)]
    pub backend: Vec<String>,
    /// Also send a copy of every message to EP (bind:EP / connect:EP as above)
    #[arg(long, value_name = "EP")]
    pub capture: Vec<String>,
    /// Socket type of the capture socket
    #[arg(long, value_enum, default_value_t = CaptureType::Pub)]
    pub capture_type: CaptureType,
    /// Stop after S seconds (e.g. 2.5)
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    pub timeout: Option<Duration>,
    /// Print neither `bound` lines nor the summary on stderr
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub tuning: Tuning,
}

/// Socket types `monitor` can watch.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum SocketKind {
    Pub,
    Sub,
    Push,
    Pull,
    Req,
    Rep,
    Dealer,
    Router,
    Pair,
    Xpub,
    Xsub,
}

impl SocketKind {
    /// The library's socket type.
    pub fn socket_type(self) -> fabriq::SocketType {
        match self {
            SocketKind::Pub => fabriq::PUB,
            SocketKind::Sub => fabriq::SUB,
            SocketKind::Push => fabriq::PUSH,
            SocketKind::Pull => fabriq::PULL,
            SocketKind::Req => fabriq::REQ,
            SocketKind::Rep => fabriq::REP,
            SocketKind::Dealer => fabriq::DEALER,
            SocketKind::Router => fabriq::ROUTER,
            SocketKind::Pair => fabriq::PAIR,
            SocketKind::Xpub => fabriq::XPUB,
            SocketKind::Xsub => fabriq::XSUB,
        }
    }
}

/// How `monitor` prints events.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventFormat {
    /// NAME ENDPOINT value=VALUE
    Text,
    /// {"event":NAME,"value":VALUE,"endpoint":ENDPOINT}
    Json,
}

/// `monitor`.
#[derive(Args, Debug, Clone)]
pub struct MonitorArgs {
    /// Endpoint to watch: EP or connect:EP connects, bind:EP binds
    #[arg(value_name = "EP")]
    pub endpoint: String,
    /// Type of the socket that connects (or binds)
    #[arg(long = "type", value_enum, value_name = "T")]
    pub socket_type: SocketKind,
    /// How events are printed
    #[arg(long, value_enum, default_value_t = EventFormat::Text)]
    pub format: EventFormat,
    /// Stop after N events
    #[arg(
        short = 'n',
        long = "count",
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub count: Option<u64>,
    /// Stop after S seconds (e.g. 2.5)
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    pub timeout: Option<Duration>,
    /// Print neither the `bound` line nor the summary on stderr
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub tuning: Tuning,
    /// Routing id announced to peers: text, or 0x followed by hex
    #[arg(long, value_name = "ID", help_heading = "Socket options")]
    pub identity: Option<String>,
}

/// Parses a positive number of seconds ("2", "0.5").
fn parse_seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds (e.g. 5 or 0.5)"))?;
    if !(secs.is_finite() && secs > 0.0 && secs < 1e9) {
        return Err(format!("{text:?}: seconds must be more than 0"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Largest `--size`: one synthetic message is built in memory.
const MAX_SIZE: usize = 1 << 30;

/// Parses a message size in bytes, up to [`MAX_SIZE`].
fn parse_size(text: &str) -> Result<usize, String> {
    let size: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of bytes"))?;
    if size > MAX_SIZE {
        return Err(format!(
            "{size} bytes is more than the 1 GiB limit ({MAX_SIZE})"
        ));
    }
    Ok(size)
}

/// Parses a positive message rate.
fn parse_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of messages per second"))?;
    if !(rate.is_finite() && rate > 0.0) {
        return Err(format!("{text:?}: the rate must be more than 0"));
    }
    Ok(rate)
}

/// An endpoint with an optional `bind:` / `connect:` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    /// Bind the endpoint.
    Bind,
    /// Connect to the endpoint.
    Connect,
}

/// Splits `bind:EP` / `connect:EP`; `EP` alone gets `default`.
pub fn split_attach(text: &str, default: Attach) -> (Attach, &str) {
    if let Some(rest) = text.strip_prefix("bind:") {
        (Attach::Bind, rest)
    } else if let Some(rest) = text.strip_prefix("connect:") {
        (Attach::Connect, rest)
    } else {
        (default, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn req_options_and_heartbeat_timeout() {
        let parsed = Cli::try_parse_from([
            "fabriq",
            "req",
            "--connect",
            "tcp://127.0.0.1:1",
            "--req-relaxed",
            "--req-correlate",
            "--heartbeat-ivl",
            "200",
            "--heartbeat-timeout",
            "1000",
        ]);
        match parsed.map(|c| c.command) {
            Ok(Command::Req(a)) => {
                assert!(a.req_relaxed && a.req_correlate);
                assert_eq!(a.send.socket.tuning.heartbeat_ivl, Some(200));
                assert_eq!(a.send.socket.tuning.heartbeat_timeout, Some(1000));
            }
            other => panic!("{other:?}"),
        }
        // REQ's own options belong to req alone.
        let push = ["fabriq", "push", "--connect", "tcp://127.0.0.1:1"];
        assert!(Cli::try_parse_from(push.iter().chain(&["--req-relaxed"])).is_err());
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("soon").is_err());
        assert!(parse_seconds("inf").is_err());
    }

    #[test]
    fn keys_and_passwords_may_start_with_a_hyphen() {
        // '-' is one of Z85's 85 characters: one key in 85 starts with it.
        let key = "-0b01].3$Y>WqhBWb9^6Vu!thlvbs0=BF-e+*XwB";
        let args = |extra: &[&str]| {
            let mut all = vec!["fabriq", "push", "--connect", "tcp://127.0.0.1:1"];
            all.extend_from_slice(extra);
            match Cli::try_parse_from(all).map(|c| c.command) {
                Ok(Command::Push(a)) => a.socket.security,
                other => panic!("{extra:?}: {other:?}"),
            }
        };
        let client = args(&["--curve-serverkey", key, "--curve-secretkey", key]);
        assert_eq!(client.curve_serverkey.as_deref(), Some(key));
        assert_eq!(client.curve_secretkey.as_deref(), Some(key));
        let server = args(&["--curve-server", key, "--curve-allow", key]);
        assert_eq!(server.curve_server.as_deref(), Some(key));
        assert_eq!(server.curve_allow, [key]);
        let plain = args(&["--plain-username", "-u", "--plain-password", "-p"]);
        assert_eq!(plain.plain_username.as_deref(), Some("-u"));
        assert_eq!(plain.plain_password.as_deref(), Some("-p"));
        let plain = args(&["--plain-server", "--plain-user", "-u:-p"]);
        assert_eq!(plain.plain_user, ["-u:-p"]);
    }

    #[test]
    fn attach_prefixes() {
        assert_eq!(
            split_attach("connect:tcp://a:1", Attach::Bind),
            (Attach::Connect, "tcp://a:1")
        );
        assert_eq!(
            split_attach("bind:tcp://*:1", Attach::Connect),
            (Attach::Bind, "tcp://*:1")
        );
        assert_eq!(
            split_attach("tcp://*:1", Attach::Bind),
            (Attach::Bind, "tcp://*:1")
        );
    }
}
