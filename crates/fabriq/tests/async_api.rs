//! The async API (`fabriq::asynchronous`, feature `tokio`): send/recv over
//! every transport, try_*, Stream/Sink, split halves in two tasks, moving
//! sockets between tasks, mixing with the sync API, a connect that never
//! blocks, the monitor as a Stream, cancellation, and a libzmq peer.
//!
//! Every wait is bounded by `within` (tokio's timeout), endpoints are
//! ephemeral (tcp port `*`, `ipc://*`, unique inproc names), and each test
//! has its own context, so the tests run in parallel.

#![cfg(feature = "tokio")]

use std::future::{ready, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use fabriq::asynchronous::{AsyncSocket, MonitorEvent, MonitorStream, Multipart};
use fabriq::{Context, Error, SocketEvent, SocketType, SNDMORE};
use futures_util::{stream, SinkExt, StreamExt};
use tokio::time::timeout;

/// Upper bound of any wait for something that should happen.
const LIMIT: Duration = Duration::from_secs(10);

async fn within<F: Future>(what: &str, f: F) -> F::Output {
    match timeout(LIMIT, f).await {
        Ok(v) => v,
        Err(_) => panic!("timed out: {what}"),
    }
}

fn unique() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[derive(Clone, Copy, Debug)]
enum Transport {
    Tcp,
    Ipc,
    Inproc,
}

impl Transport {
    fn bind_address(self) -> String {
        match self {
            Transport::Tcp => "tcp://127.0.0.1:*".into(),
            Transport::Ipc => "ipc://*".into(),
            Transport::Inproc => format!("inproc://async-api-{}", unique()),
        }
    }
}

fn socket(ctx: &Context, kind: SocketType) -> AsyncSocket {
    ctx.socket(kind).unwrap().into_async().unwrap()
}

/// `bound` binds on `transport`, `connecting` connects to it.
fn link(bound: &AsyncSocket, connecting: &AsyncSocket, transport: Transport) -> String {
    bound.bind(&transport.bind_address()).unwrap();
    let endpoint = bound.sync().get_last_endpoint().unwrap().unwrap();
    connecting.connect(&endpoint).unwrap();
    endpoint
}

fn texts(frames: &[fabriq::Message]) -> Vec<&str> {
    frames.iter().map(|f| f.as_str().unwrap()).collect()
}

/// A waker that records being woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Flag {
    fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

// ---- send and receive ---------------------------------------------------

async fn send_and_receive(transport: Transport) {
    let ctx = Context::new();
    let mut pull = socket(&ctx, fabriq::PULL);
    let mut push = socket(&ctx, fabriq::PUSH);
    link(&pull, &push, transport);

    push.send("one", 0).await.unwrap();
    let one = within("one frame", pull.recv()).await.unwrap();
    assert_eq!(one.as_str(), Some("one"));
    assert!(!one.get_more());

    push.send_multipart(["a", "b", "c"], 0).await.unwrap();
    let abc = within("a multipart message", pull.recv_multipart())
        .await
        .unwrap();
    assert_eq!(texts(&abc), ["a", "b", "c"]);
    let more: Vec<bool> = abc.iter().map(|f| f.get_more()).collect();
    assert_eq!(more, [true, true, false]);

    // A message built frame by frame, received whole.
    push.send("x", SNDMORE).await.unwrap();
    push.send(b"y".to_vec(), 0).await.unwrap();
    let xy = within("x, y", pull.recv_multipart()).await.unwrap();
    assert_eq!(texts(&xy), ["x", "y"]);

    // A message sent whole, received frame by frame and then the rest.
    push.send_multipart(vec!["p", "q", "r"], 0).await.unwrap();
    let p = within("p", pull.recv()).await.unwrap();
    assert_eq!((p.as_str(), p.get_more()), (Some("p"), true));
    let rest = pull.recv_multipart().await.unwrap();
    assert_eq!(texts(&rest), ["q", "r"]);

    // Both ways with routing envelopes: DEALER and ROUTER.
    let mut router = socket(&ctx, fabriq::ROUTER);
    let mut dealer = socket(&ctx, fabriq::DEALER);
    dealer.sync().set_identity(b"dealer-1").unwrap();
    link(&router, &dealer, transport);
    dealer.send_multipart(["", "hello"], 0).await.unwrap();
    let request = within("request at the router", router.recv_multipart())
        .await
        .unwrap();
    assert_eq!(texts(&request), ["dealer-1", "", "hello"]);
    router
        .send_multipart([&request[0][..], b"", b"world"], 0)
        .await
        .unwrap();
    let reply = within("reply at the dealer", dealer.recv_multipart())
        .await
        .unwrap();
    assert_eq!(texts(&reply), ["", "world"]);
}

#[tokio::test]
async fn send_and_receive_over_tcp() {
    send_and_receive(Transport::Tcp).await;
}

#[tokio::test]
async fn send_and_receive_over_ipc() {
    send_and_receive(Transport::Ipc).await;
}

#[tokio::test]
async fn send_and_receive_over_inproc() {
    send_and_receive(Transport::Inproc).await;
}

// ---- try_send / try_recv --------------------------------------------------

#[tokio::test]
async fn try_send_and_try_recv_say_eagain_and_then_work() {
    let ctx = Context::new();
    let pull = socket(&ctx, fabriq::PULL);
    let mut push = socket(&ctx, fabriq::PUSH);
    pull.sync().set_rcvhwm(2).unwrap();
    push.sync().set_sndhwm(2).unwrap();

    assert_eq!(pull.try_recv().unwrap_err(), Error::EAGAIN);
    assert_eq!(pull.try_recv_multipart().unwrap_err(), Error::EAGAIN);
    // PUSH without a peer cannot send.
    assert_eq!(push.try_send("nobody", 0), Err(Error::EAGAIN));
    assert_eq!(
        push.try_send_multipart(["no", "body"], 0),
        Err(Error::EAGAIN)
    );

    link(&pull, &push, Transport::Inproc);
    push.try_send("first", 0).unwrap();
    assert_eq!(pull.try_recv().unwrap().as_str(), Some("first"));
    assert_eq!(pull.try_recv().unwrap_err(), Error::EAGAIN);

    // Fill the pipe until the high-water mark refuses more.
    let mut sent = 0;
    loop {
        match push.try_send_multipart(["fill".to_string(), sent.to_string()], 0) {
            Ok(()) => sent += 1,
            Err(Error::EAGAIN) => break,
            Err(e) => panic!("try_send_multipart: {e}"),
        }
        assert!(sent < 100, "the high-water mark never applied");
    }
    assert!(sent >= 2, "only {sent} messages fit under HWM 2+2");
    let mut got = 0;
    while let Ok(frames) = pull.try_recv_multipart() {
        assert_eq!(texts(&frames), ["fill", got.to_string().as_str()]);
        got += 1;
    }
    assert_eq!(got, sent);
    // Room again: the send goes at once.
    push.try_send("after", 0).unwrap();
    assert_eq!(pull.try_recv().unwrap().as_str(), Some("after"));
}

// ---- Stream and Sink ------------------------------------------------------

#[tokio::test]
async fn stream_and_sink_with_futures_combinators() {
    let ctx = Context::new();
    let pull = socket(&ctx, fabriq::PULL);
    let mut push = socket(&ctx, fabriq::PUSH);
    link(&pull, &push, Transport::Tcp);

    // A pipeline stage: the stream of one socket mapped into the sink of
    // another.
    let mut sink_end = socket(&ctx, fabriq::PULL);
    let stage_out = socket(&ctx, fabriq::PUSH);
    link(&sink_end, &stage_out, Transport::Inproc);
    let stage = tokio::spawn(
        pull.take(100)
            .map(|m| {
                m.map(|frames| {
                    let mut out: Vec<Vec<u8>> = frames.iter().map(|f| f.to_vec()).collect();
                    out.push(b"seen".to_vec());
                    out
                })
            })
            .forward(stage_out),
    );

    let mut messages = stream::iter((0..100).map(|i| Ok(vec![format!("k{i}"), format!("v{i}")])));
    within("send_all", push.send_all(&mut messages))
        .await
        .unwrap();
    within("the stage", stage).await.unwrap().unwrap();

    let received: Vec<Multipart> = within(
        "100 messages through the stage",
        sink_end.by_ref().take(100).map(|m| m.unwrap()).collect(),
    )
    .await;
    for (i, frames) in received.iter().enumerate() {
        let (k, v) = (format!("k{i}"), format!("v{i}"));
        assert_eq!(texts(frames), [k.as_str(), v.as_str(), "seen"]);
    }

    // feed + flush, and SinkExt::send.
    let mut direct = socket(&ctx, fabriq::PULL);
    let mut push2 = socket(&ctx, fabriq::PUSH);
    link(&direct, &push2, Transport::Ipc);
    push2.feed(["fed"]).await.unwrap();
    push2.flush().await.unwrap();
    SinkExt::send(&mut push2, vec!["sent", "whole"])
        .await
        .unwrap();
    let got: Vec<Multipart> = within(
        "two messages from the sink",
        (&mut direct).take(2).map(|m| m.unwrap()).collect(),
    )
    .await;
    assert_eq!(texts(&got[0]), ["fed"]);
    assert_eq!(texts(&got[1]), ["sent", "whole"]);
}

// ---- split halves, moving between tasks ------------------------------------

/// Echoes `n` messages on `pair`.
async fn echo(mut pair: AsyncSocket, n: usize) -> AsyncSocket {
    for _ in 0..n {
        let msg = pair.recv_multipart().await.unwrap();
        pair.send_multipart(msg, 0).await.unwrap();
    }
    pair
}

async fn halves_in_two_tasks(transport: Transport) {
    const N: usize = 3000;
    let ctx = Context::new();
    let client = socket(&ctx, fabriq::PAIR);
    let server = socket(&ctx, fabriq::PAIR);
    // Small queues, so both halves of the client block on each other.
    for s in [&client, &server] {
        s.sync().set_sndhwm(4).unwrap();
        s.sync().set_rcvhwm(4).unwrap();
    }
    link(&server, &client, transport);
    let server = tokio::spawn(echo(server, N));

    let (mut tx, mut rx) = client.split();
    let sender = tokio::spawn(async move {
        for i in 0..N {
            tx.send_multipart([format!("{i}"), "payload".into()], 0)
                .await
                .unwrap();
        }
        tx
    });
    let receiver = tokio::spawn(async move {
        for i in 0..N {
            let frames = rx.recv_multipart().await.unwrap();
            assert_eq!(texts(&frames), [i.to_string().as_str(), "payload"]);
        }
        rx
    });
    let tx = within("the send half", sender).await.unwrap();
    let rx = within("the receive half", receiver).await.unwrap();
    within("the echo server", server).await.unwrap();
    let client = tx.reunite(rx).unwrap();
    assert_eq!(client.try_recv().unwrap_err(), Error::EAGAIN);
    assert!(client.try_recv_multipart().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_halves_work_from_two_tasks_over_tcp() {
    halves_in_two_tasks(Transport::Tcp).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_halves_work_from_two_tasks_over_inproc() {
    halves_in_two_tasks(Transport::Inproc).await;
}

#[tokio::test]
async fn reunite_refuses_halves_of_two_sockets() {
    let ctx = Context::new();
    let (tx_a, rx_a) = socket(&ctx, fabriq::PAIR).split();
    let (tx_b, rx_b) = socket(&ctx, fabriq::PAIR).split();
    let (tx_a, rx_b) = tx_a.reunite(rx_b).unwrap_err();
    assert!(rx_a.reunite(tx_a).is_ok());
    assert!(tx_b.reunite(rx_b).is_ok());
}

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>(_: &T) {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_move_between_tasks_and_threads() {
    assert_send_sync::<AsyncSocket>();
    assert_send_sync::<fabriq::asynchronous::SendHalf>();
    assert_send_sync::<fabriq::asynchronous::RecvHalf>();
    assert_send_sync::<MonitorStream>();

    let ctx = Context::new();
    let mut pull = socket(&ctx, fabriq::PULL);
    let mut push = socket(&ctx, fabriq::PUSH);
    link(&pull, &push, Transport::Tcp);
    {
        let recv = pull.recv();
        assert_send(&recv);
        let send = push.send("x", 0);
        assert_send(&send);
    }

    // The socket goes from task to task (and so from worker thread to
    // worker thread), each taking the next messages.
    let sender = tokio::spawn(async move {
        for i in 0..300 {
            push.send(i.to_string(), 0).await.unwrap();
        }
        push
    });
    let mut next = 0;
    for _ in 0..3 {
        (pull, next) = within(
            "a task with the socket",
            tokio::spawn(async move {
                for _ in 0..100 {
                    let m = pull.recv().await.unwrap();
                    assert_eq!(m.as_str(), Some(next.to_string().as_str()));
                    next += 1;
                    // Give the scheduler a chance to move this task.
                    tokio::task::yield_now().await;
                }
                (pull, next)
            }),
        )
        .await
        .unwrap();
    }
    assert_eq!(next, 300);
    within("the sender", sender).await.unwrap();
    assert_eq!(pull.try_recv().unwrap_err(), Error::EAGAIN);
    // And it can be handed back to sync code in a plain thread.
    let plain = pull.into_inner();
    std::thread::spawn(move || {
        assert_eq!(plain.recv_msg(fabriq::DONTWAIT).unwrap_err(), Error::EAGAIN);
    })
    .join()
    .unwrap();
}

// ---- sync and async on one socket ------------------------------------------

#[tokio::test]
async fn sync_and_async_calls_mix_on_one_socket() {
    let ctx = Context::new();
    let mut a = socket(&ctx, fabriq::PAIR);
    let mut b = socket(&ctx, fabriq::PAIR);
    link(&a, &b, Transport::Tcp);
    a.sync().set_rcvtimeo(10_000).unwrap();

    // sync send, async receive
    a.sync().send("from sync", 0).unwrap();
    assert_eq!(
        within("async recv", b.recv()).await.unwrap().as_str(),
        Some("from sync")
    );
    a.sync().send_multipart(["s1", "s2"], 0).unwrap();
    let got = within("async recv_multipart", b.recv_multipart())
        .await
        .unwrap();
    assert_eq!(texts(&got), ["s1", "s2"]);

    // async send, sync (blocking, bounded by rcvtimeo) receive
    b.send_multipart(["a1", "a2"], 0).await.unwrap();
    assert_eq!(
        a.sync().recv_multipart(0).unwrap(),
        [b"a1".to_vec(), b"a2".to_vec()]
    );

    // get_events through the sync API prefetches; async recv gets it.
    b.send("polled", 0).await.unwrap();
    let deadline = Instant::now() + LIMIT;
    while !a.sync().get_events().unwrap().contains(fabriq::POLLIN) {
        assert!(Instant::now() < deadline, "POLLIN never came");
        // Wait for the socket's wake-up without consuming anything.
        let _ = a.sync().poll(fabriq::POLLIN, 100);
    }
    assert_eq!(
        within("recv after get_events", a.recv())
            .await
            .unwrap()
            .as_str(),
        Some("polled")
    );
}

/// A receive waiting on a socket is woken even when a sync call on the same
/// socket, not the receive, took the wake-up off the descriptor.
#[tokio::test]
async fn a_sync_call_that_takes_the_wakeup_wakes_the_waiting_future() {
    let ctx = Context::new();
    let (a_tx, mut a_rx) = socket(&ctx, fabriq::PAIR).split();
    let mut b = socket(&ctx, fabriq::PAIR);
    let endpoint = format!("inproc://async-api-{}", unique());
    a_tx.sync().bind(&endpoint).unwrap();
    b.connect(&endpoint).unwrap();

    let flag = Arc::new(Flag::default());
    let waker = Waker::from(flag.clone());
    let mut cx = TaskContext::from_waker(&waker);
    let mut recv = pin!(a_rx.recv());
    assert!(recv.as_mut().poll(&mut cx).is_pending());
    flag.take();
    // The message raises a's signal; get_events (sync) clears it, before
    // tokio's driver could see the descriptor readable.
    b.try_send("behind your back", 0).unwrap();
    assert!(a_tx.sync().get_events().unwrap().contains(fabriq::POLLIN));
    assert!(flag.take(), "the waiting receive was not woken");
    match recv.as_mut().poll(&mut cx) {
        Poll::Ready(m) => assert_eq!(m.unwrap().as_str(), Some("behind your back")),
        Poll::Pending => panic!("woken, yet no message"),
    }
}

/// The two halves share one wake-up descriptor: an operation of one half
/// that takes a wake-up meant for the other wakes the other.
#[tokio::test]
async fn one_half_taking_the_wakeup_wakes_the_other() {
    let ctx = Context::new();
    let (mut a_tx, mut a_rx) = socket(&ctx, fabriq::PAIR).split();
    let mut b = socket(&ctx, fabriq::PAIR);
    for s in [&a_tx.sync(), &b.sync()] {
        s.set_sndhwm(1).unwrap();
        s.set_rcvhwm(1).unwrap();
    }
    let endpoint = format!("inproc://async-api-{}", unique());
    a_tx.sync().bind(&endpoint).unwrap();
    b.connect(&endpoint).unwrap();
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(flag.clone());
    let mut cx = TaskContext::from_waker(&waker);

    // A receive waits; a send of the other half takes its wake-up.
    {
        let mut recv = pin!(a_rx.recv());
        assert!(recv.as_mut().poll(&mut cx).is_pending());
        flag.take();
        b.try_send("for the receiver", 0).unwrap();
        a_tx.try_send("for b", 0).unwrap();
        assert!(flag.take(), "the receive half was not woken");
        match recv.as_mut().poll(&mut cx) {
            Poll::Ready(m) => assert_eq!(m.unwrap().as_str(), Some("for the receiver")),
            Poll::Pending => panic!("woken, yet no message"),
        }
    }
    assert_eq!(b.try_recv().unwrap().as_str(), Some("for b"));

    // A send waits on the high-water mark; b makes room, and a receive of
    // the other half takes the wake-up.
    let mut filled = 0;
    while a_tx.try_send("fill", 0).is_ok() {
        filled += 1;
        assert!(filled < 100, "the high-water mark never applied");
    }
    let mut send = pin!(a_tx.send("waits for room", 0));
    assert!(send.as_mut().poll(&mut cx).is_pending());
    flag.take();
    for _ in 0..filled {
        assert_eq!(b.try_recv().unwrap().as_str(), Some("fill"));
    }
    assert_eq!(a_rx.try_recv().unwrap_err(), Error::EAGAIN);
    assert!(flag.take(), "the send half was not woken");
    match send.as_mut().poll(&mut cx) {
        Poll::Ready(r) => r.unwrap(),
        Poll::Pending => panic!("woken, yet no room"),
    }
    assert_eq!(b.try_recv().unwrap().as_str(), Some("waits for room"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminating_the_context_ends_the_stream() {
    let ctx = Context::new();
    let pull = socket(&ctx, fabriq::PULL);
    pull.bind(&Transport::Inproc.bind_address()).unwrap();
    let reader = tokio::spawn(async move {
        let mut pull = pull;
        // Waits until the context is terminated.
        let next = pull.next().await;
        let recv = pull.recv().await.map(|m| m.to_vec());
        (next.map(|m| m.map(|_| ())), recv)
        // (the socket is dropped here, which lets destroy return)
    });
    let mut terminating = ctx.clone();
    let destroy = tokio::task::spawn_blocking(move || terminating.destroy());
    let (next, recv) = within("the stream to end", reader).await.unwrap();
    assert_eq!(next, None);
    assert_eq!(recv, Err(Error::ETERM));
    within("destroy", destroy).await.unwrap().unwrap();
}

// ---- connect ---------------------------------------------------------------

#[tokio::test]
async fn connect_to_nothing_returns_at_once() {
    // A port that was free a moment ago: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let ctx = Context::new();
    let mut push = socket(&ctx, fabriq::PUSH);
    push.sync().set_reconnect_ivl(20).unwrap();
    // Only completed connections take messages (else a PUSH queues them
    // for the pending one, as libzmq does); and nothing lingers at close.
    push.sync().set_immediate(true).unwrap();
    push.sync().set_linger(0).unwrap();
    let mut events = push.monitor(SocketEvent::ALL as i32).unwrap();
    let started = Instant::now();
    push.connect(&format!("tcp://127.0.0.1:{port}")).unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(500), "connect took {took:?}");
    // A host name is looked up by the I/O thread, not here (its own
    // context, so a slow resolver delays nothing else in this test).
    let other = Context::new();
    let named = socket(&other, fabriq::PUSH);
    let started = Instant::now();
    named.connect("tcp://no-such-host.invalid:5555").unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(500), "connect took {took:?}");

    // Sends wait for a peer (without blocking the runtime: the timeout
    // fires), and fail at once when asked not to wait.
    assert!(timeout(Duration::from_millis(50), push.send("x", 0))
        .await
        .is_err());
    assert_eq!(push.try_send("x", 0), Err(Error::EAGAIN));
    // The refused connection is retried in the background.
    let seen = within(
        "CONNECT_RETRIED",
        next_event_of(&mut events, SocketEvent::CONNECT_RETRIED),
    )
    .await;
    assert!(!seen.contains(&SocketEvent::CONNECTED), "{seen:?}");
}

// ---- the monitor as a Stream -----------------------------------------------

/// Reads events until `wanted`; returns the kinds seen, `wanted` last.
async fn next_event_of(events: &mut MonitorStream, wanted: SocketEvent) -> Vec<SocketEvent> {
    let mut seen = Vec::new();
    loop {
        let e: MonitorEvent = events
            .next()
            .await
            .unwrap_or_else(|| panic!("the stream ended before {wanted:?}; saw {seen:?}"))
            .unwrap();
        seen.push(e.event);
        if e.event == wanted {
            return seen;
        }
    }
}

#[tokio::test]
async fn the_monitor_is_a_stream_of_events() {
    let ctx = Context::new();
    let server = socket(&ctx, fabriq::ROUTER);
    let mut server_events = server.monitor(SocketEvent::ALL as i32).unwrap();
    server.bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = server.sync().get_last_endpoint().unwrap().unwrap();
    let first = within("LISTENING", server_events.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.event, SocketEvent::LISTENING);
    assert_eq!(first.endpoint, endpoint);

    let client = socket(&ctx, fabriq::DEALER);
    let mut client_events = client.monitor(SocketEvent::ALL as i32).unwrap();
    client.connect(&endpoint).unwrap();
    let seen = within(
        "client CONNECTED",
        next_event_of(&mut client_events, SocketEvent::CONNECTED),
    )
    .await;
    assert!(
        seen.iter()
            .all(|e| matches!(e, SocketEvent::CONNECT_DELAYED | SocketEvent::CONNECTED)),
        "{seen:?}"
    );
    within(
        "client HANDSHAKE_SUCCEEDED",
        next_event_of(&mut client_events, SocketEvent::HANDSHAKE_SUCCEEDED),
    )
    .await;
    let seen = within(
        "server ACCEPTED",
        next_event_of(&mut server_events, SocketEvent::ACCEPTED),
    )
    .await;
    assert_eq!(seen, [SocketEvent::ACCEPTED]);
    within(
        "server HANDSHAKE_SUCCEEDED",
        next_event_of(&mut server_events, SocketEvent::HANDSHAKE_SUCCEEDED),
    )
    .await;

    drop(client);
    within(
        "server DISCONNECTED",
        next_event_of(&mut server_events, SocketEvent::DISCONNECTED),
    )
    .await;
    // The client's stream ends with its socket.
    let rest: Vec<SocketEvent> = within(
        "the client's stream to end",
        client_events.map(|e| e.unwrap().event).collect(),
    )
    .await;
    assert_eq!(rest.last(), Some(&SocketEvent::MONITOR_STOPPED), "{rest:?}");

    // Stopping the monitor ends the stream; without MONITOR_STOPPED in the
    // mask, the stream ends without showing it.
    let mut quiet = server.monitor(SocketEvent::ACCEPTED as i32).unwrap();
    // (a new monitor stopped the first one)
    let rest: Vec<SocketEvent> = within(
        "the first server stream to end",
        server_events.map(|e| e.unwrap().event).collect(),
    )
    .await;
    assert_eq!(rest.last(), Some(&SocketEvent::MONITOR_STOPPED), "{rest:?}");
    server.sync().monitor("", 0).unwrap();
    assert!(within("the quiet stream to end", quiet.next())
        .await
        .is_none());
}

// ---- cancellation ----------------------------------------------------------

#[tokio::test]
async fn a_cancelled_recv_loses_nothing_select() {
    let ctx = Context::new();
    let mut pull = socket(&ctx, fabriq::PULL);
    let mut push = socket(&ctx, fabriq::PUSH);
    link(&pull, &push, Transport::Inproc);
    let mut cancelled = 0;
    for i in 0..100 {
        // Nothing there: the receive is polled, pends, and loses to the
        // ready branch, which drops it.
        tokio::select! {
            biased;
            m = pull.recv() => panic!("received {m:?} before anything was sent"),
            _ = ready(()) => cancelled += 1,
        }
        push.send_multipart([format!("{i}"), "tail".into()], 0)
            .await
            .unwrap();
        // Now a receive wins against the same ready branch.
        tokio::select! {
            biased;
            m = pull.recv_multipart() => {
                assert_eq!(texts(&m.unwrap()), [i.to_string().as_str(), "tail"]);
            }
            _ = ready(()) => panic!("message {i} was not there"),
        }
    }
    assert_eq!(cancelled, 100);
    assert_eq!(pull.try_recv().unwrap_err(), Error::EAGAIN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_recvs_lose_nothing_under_traffic() {
    const N: usize = 600;
    let ctx = Context::new();
    let mut pull = socket(&ctx, fabriq::PULL);
    let mut push = socket(&ctx, fabriq::PUSH);
    link(&pull, &push, Transport::Tcp);
    // The sender sends a burst each time the receiver gave up waiting, so
    // receives are both cancelled and completed, many times.
    let (go, mut bursts) = tokio::sync::mpsc::unbounded_channel::<()>();
    let sender = tokio::spawn(async move {
        let mut i = 0;
        while i < N {
            if bursts.recv().await.is_none() {
                break;
            }
            for _ in 0..(i % 4 + 1) {
                if i == N {
                    break;
                }
                let frames: Vec<String> = (0..(i % 3 + 1)).map(|f| format!("{i}.{f}")).collect();
                push.send_multipart(frames, 0).await.unwrap();
                i += 1;
            }
        }
    });
    let mut next = 0;
    let mut cancelled = 0;
    let deadline = Instant::now() + LIMIT;
    while next < N {
        assert!(Instant::now() < deadline, "stuck at message {next}");
        // Frame-level receives too: the first frame, then the rest.
        let attempt = async {
            let first = pull.recv().await?;
            let mut frames = vec![first];
            if frames[0].get_more() {
                frames.extend(pull.recv_multipart().await?);
            }
            Ok::<_, Error>(frames)
        };
        match timeout(Duration::from_millis(2), attempt).await {
            Ok(frames) => {
                let frames = frames.unwrap();
                let want: Vec<String> =
                    (0..(next % 3 + 1)).map(|f| format!("{next}.{f}")).collect();
                assert_eq!(texts(&frames), want, "message {next}");
                next += 1;
            }
            Err(_) => {
                cancelled += 1;
                let _ = go.send(());
            }
        }
    }
    within("the sender", sender).await.unwrap();
    assert!(cancelled > 0);
    assert_eq!(pull.try_recv().unwrap_err(), Error::EAGAIN);
}

#[tokio::test]
async fn a_send_cancelled_on_hwm_sends_nothing() {
    let ctx = Context::new();
    let mut pull = socket(&ctx, fabriq::PULL);
    let mut push = socket(&ctx, fabriq::PUSH);
    pull.sync().set_rcvhwm(2).unwrap();
    push.sync().set_sndhwm(2).unwrap();
    link(&pull, &push, Transport::Inproc);
    let mut filled = 0;
    while push.try_send_multipart(["fill", "x"], 0).is_ok() {
        filled += 1;
        assert!(filled < 100, "the high-water mark never applied");
    }

    // Cancelled by a timeout, by select!, and a Sink send cancelled after
    // the sink accepted its item.
    assert!(timeout(
        Duration::from_millis(20),
        push.send_multipart(["cancelled", "by", "timeout"], 0)
    )
    .await
    .is_err());
    tokio::select! {
        biased;
        r = push.send("cancelled by select", 0) => panic!("sent {r:?} over a full pipe"),
        _ = ready(()) => {}
    }
    assert!(timeout(
        Duration::from_millis(20),
        SinkExt::send(&mut push, ["held", "by the sink"])
    )
    .await
    .is_err());

    let (mut tx, rx) = push.split();
    let later = tokio::spawn(async move {
        // Goes after the message the sink holds.
        tx.send_multipart(["after", "drain"], 0).await.unwrap();
        tx
    });
    let mut got = Vec::new();
    for _ in 0..filled + 2 {
        let m = within("a message", pull.recv_multipart()).await.unwrap();
        got.push(texts(&m).join(" "));
    }
    let tx = within("the later send", later).await.unwrap();
    let mut want = vec!["fill x".to_string(); filled];
    want.push("held by the sink".into());
    want.push("after drain".into());
    assert_eq!(got, want);
    assert_eq!(pull.try_recv().unwrap_err(), Error::EAGAIN);
    drop(tx.reunite(rx).unwrap());
}

#[tokio::test]
async fn a_send_cancelled_on_hwm_over_tcp_is_whole_or_absent() {
    let ctx = Context::new();
    let mut pull = socket(&ctx, fabriq::PULL);
    let mut push = socket(&ctx, fabriq::PUSH);
    pull.sync().set_rcvhwm(1).unwrap();
    push.sync().set_sndhwm(1).unwrap();
    // (Default kernel buffers: tiny SO_SNDBUF/SO_RCVBUF would fill sooner
    // but make TCP crawl through zero-window probes, ~0.6 s a message.)
    link(&pull, &push, Transport::Tcp);
    let big = vec![7u8; 64 << 10];
    let mut sent = 0;
    // Fill until a send has waited 20 ms, then cancel that one.
    let cancelled = loop {
        let frames = [format!("{sent}").into_bytes(), big.clone(), big.clone()];
        match timeout(Duration::from_millis(20), push.send_multipart(frames, 0)).await {
            Ok(r) => {
                r.unwrap();
                sent += 1;
                assert!(sent < 10_000, "the queues never filled");
            }
            Err(_) => break sent,
        }
    };
    let end = tokio::spawn(async move {
        push.send_multipart([b"end".to_vec()], 0).await.unwrap();
        push
    });
    let mut seen = 0;
    loop {
        let m = within("a message", pull.recv_multipart()).await.unwrap();
        if m.len() == 1 {
            assert_eq!(m[0].as_str(), Some("end"));
            break;
        }
        // A message is whole: its number and both big frames.
        assert_eq!(m.len(), 3, "a partial message arrived");
        assert_eq!(m[0].as_str(), Some(seen.to_string().as_str()));
        assert!(m[1].len() == big.len() && m[2].len() == big.len());
        seen += 1;
    }
    // The cancelled message never went.
    assert_eq!(seen, cancelled);
    within("the end marker's sender", end).await.unwrap();
}

// ---- a libzmq peer ---------------------------------------------------------

#[tokio::test]
async fn works_with_a_libzmq_peer() {
    // libzmq REP echoing, in its own thread; fabriq async REQ.
    let zctx = zmq::Context::new();
    let rep = zctx.socket(zmq::REP).unwrap();
    rep.set_rcvtimeo(10_000).unwrap();
    rep.set_sndtimeo(10_000).unwrap();
    rep.bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = rep.get_last_endpoint().unwrap().unwrap();
    let server = std::thread::spawn(move || {
        for _ in 0..20 {
            let request = rep.recv_multipart(0).unwrap();
            rep.send_multipart(request.iter().rev(), 0).unwrap();
        }
    });
    let ctx = Context::new();
    let mut req = socket(&ctx, fabriq::REQ);
    req.connect(&endpoint).unwrap();
    for i in 0..20 {
        req.send_multipart([format!("{i}"), "to libzmq".into()], 0)
            .await
            .unwrap();
        let reply = within("libzmq's reply", req.recv_multipart())
            .await
            .unwrap();
        assert_eq!(texts(&reply), ["to libzmq", i.to_string().as_str()]);
    }
    server.join().unwrap();

    // libzmq PUSH, fabriq async PULL read as a Stream.
    let push = zctx.socket(zmq::PUSH).unwrap();
    push.set_sndtimeo(10_000).unwrap();
    let pull = socket(&ctx, fabriq::PULL);
    pull.bind("tcp://127.0.0.1:*").unwrap();
    push.connect(&pull.sync().get_last_endpoint().unwrap().unwrap())
        .unwrap();
    let pusher = std::thread::spawn(move || {
        for i in 0..100 {
            push.send_multipart([format!("m{i}").into_bytes(), b"from libzmq".to_vec()], 0)
                .unwrap();
        }
        push
    });
    let got: Vec<Multipart> = within(
        "100 messages from libzmq",
        pull.take(100).map(|m| m.unwrap()).collect(),
    )
    .await;
    for (i, m) in got.iter().enumerate() {
        assert_eq!(texts(m), [format!("m{i}").as_str(), "from libzmq"]);
    }
    drop(pusher.join().unwrap());
}

#[test]
fn outside_a_runtime_is_einval() {
    let ctx = Context::new();
    let s = ctx.socket(fabriq::PAIR).unwrap();
    assert_eq!(s.into_async().unwrap_err(), Error::EINVAL);
}
