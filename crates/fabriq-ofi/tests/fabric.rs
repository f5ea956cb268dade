//! Real libfabric tests over the providers that work without hardware:
//! tcp (RDM through ofi_rxm) and shm.

mod common;

use std::time::Instant;

use common::{deadline, need_fabric, pair, poll_until};
use fabriq_ofi::{
    getinfo, CompletionErrorKind, EpType, Error, Event, Hints, PagedConfig, Progress,
};

#[test]
fn getinfo_finds_tcp_and_shm_rdm() {
    if !need_fabric() {
        return;
    }
    let (major, minor) = fabriq_ofi::runtime_version().unwrap();
    eprintln!("libfabric {major}.{minor}");
    for prov in ["tcp", "shm"] {
        let infos = getinfo(&Hints::new().provider(prov)).unwrap_or_else(|e| panic!("{prov}: {e}"));
        assert!(!infos.is_empty());
        for i in &infos {
            assert!(
                i.provider().split(';').any(|p| p == prov),
                "{}",
                i.provider()
            );
            assert_eq!(i.ep_type(), Some(EpType::Rdm));
            assert!(i.caps().contains(fabriq_ofi::Caps::MSG));
            assert_ne!(i.data_progress(), Progress::Unspec);
        }
        eprintln!("{prov}: {:?}", infos[0]);
    }
    let all = getinfo(&Hints::new()).unwrap();
    let names: std::collections::BTreeSet<_> = all.iter().map(|i| i.provider()).collect();
    eprintln!("RDM providers here: {names:?}");
    assert!(names.iter().any(|n| n.starts_with("tcp")));
    assert!(names.contains("shm"));
    assert!(!common::info("shm").dump().is_empty());
}

#[test]
fn missing_provider_is_a_typed_error_naming_it() {
    if !need_fabric() {
        return;
    }
    let err = getinfo(&Hints::new().provider("verbs")).unwrap_err();
    match &err {
        Error::NotFound { provider, call, .. } => {
            assert_eq!(provider.as_deref(), Some("verbs"));
            assert_eq!(*call, "fi_getinfo");
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("provider \"verbs\" is not available"),
        "{text}"
    );
    assert!(text.contains("fi_getinfo"), "{text}");
    eprintln!("{text}");
    let err = getinfo(&Hints::new().provider("no-such-provider")).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
}

#[test]
fn unavailable_path() {
    if fabriq_ofi::compiled_in() {
        // Built with libfabric: the unavailable path is the other build
        // (FABRIQ_OFI_DISABLE=1); here the same entry point must work.
        assert!(getinfo(&Hints::new()).is_ok());
        return;
    }
    need_fabric(); // panics unless FABRIQ_OFI_DISABLE=1 was set on purpose
    let err = getinfo(&Hints::new().provider("tcp")).unwrap_err();
    assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("built without libfabric"), "{text}");
    assert!(text.contains("libfabric-dev"), "{text}");
    assert!(fabriq_ofi::runtime_version().is_err());
}

/// Size of message `i`: 0 B .. 1 MiB, small ones most often.
fn size_of(i: usize) -> usize {
    match i % 10 {
        0 => 0,
        1 => 1,
        2 => 63,
        3 => 4096,
        4 => 4097,
        5 => 16 * 1024 + i,
        6 => 65536,
        7 => 200_000 + i,
        8 => 3,
        _ if i % 100 == 9 => 1 << 20,
        _ => 512 * 1024 + 7,
    }
}

const PAGE: usize = 1 << 20;

/// A pattern that differs per message: message i is pattern[i % 251..].
fn pattern() -> Vec<u8> {
    (0..PAGE + 256).map(|j| (j % 251) as u8).collect()
}

fn exchange(provider: &str, count: usize) {
    let started = Instant::now();
    let config = PagedConfig {
        max_sends: 16,
        max_recvs: 16,
        ..PagedConfig::default()
    };
    let (mut a, mut b) = pair(provider, 16, PAGE, config);
    let pat = pattern();
    let dl = deadline(25);
    // Matching order: the k-th posted receive must get the k-th message
    // (FI_ORDER_SAS). Completion order may differ: tcp;ofi_rxm completes a
    // rendezvous (large) message after smaller eager messages sent later.
    let mut posted_as = std::collections::HashMap::new();
    let mut posts = 0u64;
    let post = |b: &mut common::Side,
                posted_as: &mut std::collections::HashMap<usize, u64>,
                posts: &mut u64| {
        let page = b.pool.get().expect("receive page back in the pool");
        posted_as.insert(page.index(), *posts);
        *posts += 1;
        b.ep.post_recv(page).unwrap();
    };
    for _ in 0..16 {
        post(&mut b, &mut posted_as, &mut posts);
    }
    let mut seen = vec![false; count];
    let (mut next_send, mut sent_done, mut received, mut bytes) = (0usize, 0usize, 0usize, 0usize);
    let (mut last_seq, mut reordered) = (None::<usize>, 0usize);
    let mut events = Vec::new();
    while received < count || sent_done < count {
        assert!(
            Instant::now() < dl,
            "{provider}: timed out: sent {next_send}, send completions {sent_done}, received {received}"
        );
        while next_send < count && a.ep.sends_in_flight() < config.max_sends {
            let Some(mut page) = a.pool.get() else { break };
            let len = size_of(next_send);
            let off = next_send % 251;
            page.fill(&pat[off..off + len]).unwrap();
            match a.ep.send(page, a.peer, Some(next_send as u64), 0) {
                Ok(()) => next_send += 1,
                // Queue full / connection still being set up: progress first.
                Err(e) if e.error.is_again() => break,
                Err(e) => panic!("{provider}: send {next_send}: {}", e.error),
            }
        }
        a.ep.poll(&mut events, 64).unwrap();
        b.ep.poll(&mut events, 64).unwrap();
        for ev in events.drain(..) {
            match ev {
                Event::Sent { page, dest, .. } => {
                    assert_eq!(dest, a.peer);
                    drop(page);
                    sent_done += 1;
                }
                Event::Received { page, data, .. } => {
                    let seq = data.expect("CQ data carries the sequence number") as usize;
                    assert!(seq < count && !seen[seq], "{provider}: message {seq} twice");
                    seen[seq] = true;
                    assert_eq!(
                        posted_as.remove(&page.index()),
                        Some(seq as u64),
                        "{provider}: message {seq} matched the wrong posted receive"
                    );
                    if last_seq.is_some_and(|l| seq < l) {
                        reordered += 1;
                    }
                    last_seq = Some(last_seq.map_or(seq, |l| l.max(seq)));
                    let len = size_of(seq);
                    assert_eq!(page.len(), len, "{provider}: message {seq} length");
                    let off = seq % 251;
                    // Zero-copy hand-off: the page goes back to the pool
                    // when this Bytes is dropped.
                    let view = page.into_bytes();
                    assert!(
                        view[..] == pat[off..off + len],
                        "{provider}: message {seq} content"
                    );
                    bytes += len;
                    received += 1;
                    drop(view);
                    if (posts as usize) < count {
                        post(&mut b, &mut posted_as, &mut posts);
                    }
                }
                Event::SendFailed { error, .. } => panic!("{provider}: send failed: {error}"),
                Event::RecvFailed { error, .. } => panic!("{provider}: receive failed: {error}"),
                other => panic!("{provider}: no reads were posted: {other:?}"),
            }
        }
    }
    assert!(seen.iter().all(|&s| s));
    assert_eq!(a.ep.sends_in_flight(), 0);
    assert_eq!(
        a.pool.available(),
        a.pool.count(),
        "every send page returned"
    );
    assert_eq!(
        b.pool.available() + b.ep.recvs_posted(),
        b.pool.count(),
        "every receive page returned or posted"
    );
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "{provider}: {count} messages, {bytes} bytes, {secs:.2} s ({:.0} MB/s), \
         {reordered} receive completions out of send order",
        bytes as f64 / secs / 1e6
    );
}

#[test]
fn exchange_1000_messages_tcp() {
    if need_fabric() {
        exchange("tcp", 1000);
    }
}

#[test]
fn exchange_1000_messages_shm() {
    if need_fabric() {
        exchange("shm", 1000);
    }
}

fn truncation(provider: &str) {
    // The receiver's pages are 16 bytes, the message is 100.
    let (mut a, mut b) = common::pair_sized(provider, 4, 4096, 16, PagedConfig::default());
    let a_to_b = a.peer;
    let page = b.pool.get().unwrap();
    b.ep.post_recv(page).unwrap();
    let mut page = a.pool.get().unwrap();
    page.fill(&[0x5a; 100]).unwrap();
    let dl = deadline(10);
    common::send_retry(&mut a, &mut b, page, a_to_b, dl);
    let mut events = Vec::new();
    let mut failed = None;
    while failed.is_none() {
        assert!(
            Instant::now() < dl,
            "{provider}: no truncation error within 10 s"
        );
        a.ep.poll(&mut events, 16).unwrap();
        b.ep.poll(&mut events, 16).unwrap();
        for ev in events.drain(..) {
            match ev {
                Event::RecvFailed { page, error } => failed = Some((page, error)),
                Event::Received { page, .. } => {
                    panic!(
                        "{provider}: a 100-byte message fit into {} bytes",
                        page.len()
                    )
                }
                Event::Sent { .. } | Event::SendFailed { .. } => {}
                other => panic!("{provider}: no reads were posted: {other:?}"),
            }
        }
    }
    let (page, error) = failed.unwrap();
    eprintln!("{provider}: {error}");
    match error.kind {
        // olen is what the provider reports: neither shm nor tcp;ofi_rxm
        // fill it in on 1.17 (0); if one does, it must be right.
        CompletionErrorKind::Truncated { olen } => {
            assert!(olen == 0 || olen == 100 - 16, "{provider}: olen {olen}")
        }
        other => panic!("{provider}: expected Truncated, got {other:?}"),
    }
    assert!(error.to_string().contains("FI_ETRUNC"));
    assert_eq!(page.capacity(), 16);
    assert_eq!(b.ep.recvs_posted(), 0);
}

#[test]
fn truncated_receive_is_a_typed_error_tcp() {
    if need_fabric() {
        truncation("tcp");
    }
}

#[test]
fn truncated_receive_is_a_typed_error_shm() {
    if need_fabric() {
        truncation("shm");
    }
}

/// poll(2) on a wait fd, bounded.
fn readable(fd: std::os::fd::RawFd, timeout_ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    assert!(n >= 0, "poll: {}", std::io::Error::last_os_error());
    n == 1 && pfd.revents & libc::POLLIN != 0
}

fn wait_fd(provider: &str) {
    let (mut a, mut b) = pair(provider, 4, 4096, PagedConfig::default());
    let rx_fd = b.ep.wait_fd();
    let Some(rx_fd) = rx_fd else {
        // No wait fd: the documented fallback is polling; try_wait must
        // then say "do not sleep".
        eprintln!("{provider}: no FI_WAIT_FD wait object; caller polls");
        assert!(!b.ep.try_wait().unwrap());
        return;
    };
    eprintln!("{provider}: wait fd {rx_fd:?}");
    // Warm-up message: sets up the connection (both sides progressing).
    let page = b.pool.get().unwrap();
    b.ep.post_recv(page).unwrap();
    let mut page = a.pool.get().unwrap();
    page.fill(b"hello").unwrap();
    let peer = a.peer;
    common::send_retry(&mut a, &mut b, page, peer, deadline(10));
    let dl = deadline(10);
    let (mut sent, mut got) = (false, false);
    let mut events = Vec::new();
    while !(sent && got) {
        assert!(
            Instant::now() < dl,
            "{provider}: warm-up message not delivered"
        );
        a.ep.poll(&mut events, 16).unwrap();
        b.ep.poll(&mut events, 16).unwrap();
        for ev in events.drain(..) {
            match ev {
                Event::Sent { .. } => sent = true,
                Event::Received { page, .. } => {
                    assert_eq!(page.as_slice(), b"hello");
                    got = true;
                }
                other => panic!("{provider}: {other:?}"),
            }
        }
    }

    let page = b.pool.get().unwrap();
    b.ep.post_recv(page).unwrap();
    // Nothing pending: after draining, try_wait must allow sleeping and the
    // fd must not be readable.
    let dl = deadline(10);
    loop {
        b.ep.poll(&mut events, 16).unwrap();
        assert!(events.is_empty());
        if b.ep.try_wait().unwrap() {
            break;
        }
        assert!(
            Instant::now() < dl,
            "{provider}: try_wait never allowed sleeping"
        );
    }
    assert!(
        !readable(rx_fd, 0),
        "{provider}: wait fd readable with nothing pending"
    );

    let mut page = a.pool.get().unwrap();
    page.fill(b"wake up").unwrap();
    a.ep.send(page, peer, None, 0).map_err(|e| e.error).unwrap();
    // Sender side progress (manual-progress providers) until its send
    // completes; the receiver does not touch its CQ meanwhile.
    poll_until(&mut a, deadline(10), "send completion", |e| match e {
        Event::Sent { .. } => Some(e),
        other => panic!("{provider}: {other:?}"),
    });
    let t = Instant::now();
    assert!(
        readable(rx_fd, 5000),
        "{provider}: wait fd not readable within 5 s of a send completing"
    );
    eprintln!("{provider}: wait fd readable after {:?}", t.elapsed());
    // A completion (or progress to make) is pending: try_wait refuses, or
    // the read finds it.
    let ev = poll_until(&mut b, deadline(10), "receive", Some);
    match ev {
        Event::Received { page, .. } => assert_eq!(page.as_slice(), b"wake up"),
        other => panic!("{provider}: {other:?}"),
    }
}

#[test]
fn cq_wait_fd_and_try_wait_tcp() {
    if need_fabric() {
        wait_fd("tcp");
    }
}

#[test]
fn cq_wait_fd_and_try_wait_shm() {
    if need_fabric() {
        wait_fd("shm");
    }
}

#[test]
fn pool_pages_return_when_last_slice_drops() {
    if !need_fabric() {
        return;
    }
    let domain = fabriq_ofi::Domain::open_info(&common::info("shm")).unwrap();
    let pool = fabriq_ofi::PagePool::new(&domain, 2, 4096).unwrap();
    let mut p0 = pool.get().unwrap();
    let p1 = pool.get().unwrap();
    assert!(pool.get().is_none(), "pool of 2 hands out 2 pages");
    assert_eq!(pool.available(), 0);
    assert_ne!(p0.index(), p1.index());
    p0.fill(b"hello, fabric").unwrap();
    drop(p1);
    assert_eq!(pool.available(), 1);
    let whole = p0.into_bytes();
    let world = whole.slice(7..);
    let clone = world.clone();
    drop(whole);
    assert_eq!(pool.available(), 1, "slices still hold the page");
    assert_eq!(&world[..], b"fabric");
    drop(world);
    assert_eq!(pool.available(), 1);
    drop(clone);
    assert_eq!(pool.available(), 2, "last slice dropped: page is back");
    // The pool outlives its handle while pages are out.
    let p = pool.get().unwrap();
    drop(pool);
    assert_eq!(p.capacity(), 4096);
    drop(p);
    drop(domain);
}

/// RMA read (the engine's rendezvous): one side lends bytes it owns, the
/// other reads them with `fi_read` into a registered buffer from a
/// `ReadPool`, and gets them as `Bytes` without a copy.
fn rma_read(provider: &str) {
    if !need_fabric() {
        return;
    }
    let caps = fabriq_ofi::Caps::MSG | fabriq_ofi::Caps::RMA;
    let info = |_: ()| {
        fabriq_ofi::getinfo(&common::hints(provider).caps(caps))
            .unwrap_or_else(|e| panic!("{provider} with FI_RMA: {e}"))
            .into_iter()
            .next()
            .expect("an RMA endpoint")
    };
    let open = |_: ()| {
        let info = info(());
        let domain = fabriq_ofi::Domain::open_info(&info).unwrap();
        let ep = fabriq_ofi::PagedEndpoint::open(&domain, &info, PagedConfig::default()).unwrap();
        (domain, ep)
    };
    let ((da, mut ea), (db, mut eb)) = (open(()), open(()));
    let a_at_b = eb.insert_peer(&ea.name().unwrap()).unwrap();
    let _b_at_a = ea.insert_peer(&eb.name().unwrap()).unwrap();
    let data = bytes::Bytes::from(
        (0..3_000_000u32)
            .map(|i| (i % 253) as u8)
            .collect::<Vec<u8>>(),
    );
    let lent = fabriq_ofi::Lent::new(&da, data.slice(1000..2_001_000)).unwrap();
    assert_eq!(lent.len(), 2_000_000);
    let pool = fabriq_ofi::ReadPool::new(&db, 16 << 20, 16 << 20);
    for round in 0..3u64 {
        // The first operation to a new peer is EAGAIN until both sides
        // progressed (connection setup).
        let mut buf = pool.get(lent.len()).unwrap();
        let dl = deadline(10);
        let mut events = Vec::new();
        while let Err(refused) = eb.read(buf, a_at_b, lent.rma_addr(), lent.key(), 40 + round) {
            assert!(refused.error.is_again(), "{provider}: {}", refused.error);
            assert!(
                Instant::now() < dl,
                "{provider}: read {round} refused for 10 s"
            );
            buf = *refused.buffer;
            ea.poll(&mut events, 16).unwrap();
            eb.poll(&mut events, 16).unwrap();
            assert!(events.is_empty(), "{provider}: {events:?}");
        }
        let dl = deadline(10);
        let mut events = Vec::new();
        let got = loop {
            // Both sides progress: some providers serve reads at the target.
            ea.poll(&mut events, 16).unwrap();
            eb.poll(&mut events, 16).unwrap();
            if let Some(i) = events
                .iter()
                .position(|e| matches!(e, Event::ReadDone { .. } | Event::ReadFailed { .. }))
            {
                break events.swap_remove(i);
            }
            events.clear();
            assert!(
                Instant::now() < dl,
                "{provider}: read {round} did not complete"
            );
        };
        match got {
            Event::ReadDone { data: read, tag } => {
                assert_eq!(tag, 40 + round);
                assert!(
                    read[..] == data[1000..2_001_000],
                    "{provider}: read {round} content"
                );
            }
            other => panic!("{provider}: read {round}: {other:?}"),
        }
    }
    drop(lent);
}

#[test]
fn rma_read_of_lent_bytes_tcp() {
    rma_read("tcp");
}

#[test]
fn rma_read_of_lent_bytes_shm() {
    rma_read("shm");
}

/// A page and an unregistered tail sent as one message arrive as one
/// contiguous message, in order, with the CQ data. The test lets go of
/// its own handle on each tail right after posting it: what arrives is
/// what the endpoint kept alive until the completion.
fn pieces(provider: &str) {
    let (mut a, mut b) = pair(provider, 8, 128 * 1024, PagedConfig::default());
    if !a.ep.sends_pieces() {
        // Only a provider that needs local registration (FI_MR_LOCAL)
        // refuses, and tcp and shm do not.
        panic!("{provider}: sends_pieces() is false");
    }
    let pat = pattern();
    let dl = deadline(20);
    // Lengths around the shm inject size (4 KiB) and rxm's eager size
    // (16 KiB), and a page-sized tail.
    let tails = [1usize, 100, 4000, 5000, 16 * 1024, 17 * 1024, 64 * 1024];
    for (seq, &tlen) in tails.iter().enumerate() {
        b.ep.post_recv(b.pool.get().unwrap()).unwrap();
        let head = 9 + seq;
        let mut page = a.pool.get().unwrap();
        page.fill(&pat[..head]).unwrap();
        let mut tail = bytes::BytesMut::from(&pat[head..head + tlen]);
        let sent_tail = tail.split().freeze();
        let mut events = Vec::new();
        let (mut page, mut tail_next) = (Some(page), Some(sent_tail.clone()));
        while let (Some(p), Some(t)) = (page.take(), tail_next.take()) {
            match a.ep.send_pieces(p, t, a.peer, Some(seq as u64), 7) {
                Ok(()) => break,
                Err(e) if e.error.is_again() => {
                    page = Some(e.page);
                    tail_next = Some(e.tail);
                }
                Err(e) => panic!("{provider}: send_pieces: {}", e.error),
            }
            a.ep.poll(&mut events, 16).unwrap();
            b.ep.poll(&mut events, 16).unwrap();
            assert!(events.is_empty(), "{provider}: {events:?}");
            assert!(Instant::now() < dl, "{provider}: EAGAIN at the deadline");
            std::thread::yield_now();
        }
        drop(sent_tail);
        let (mut sent, mut got) = (false, None);
        while !sent || got.is_none() {
            assert!(Instant::now() < dl, "{provider}: tail {tlen}: timed out");
            a.ep.poll(&mut events, 16).unwrap();
            b.ep.poll(&mut events, 16).unwrap();
            for ev in events.drain(..) {
                match ev {
                    Event::Sent { tag, .. } => {
                        assert_eq!(tag, 7);
                        sent = true;
                    }
                    Event::Received { page, data, .. } => {
                        assert_eq!(data, Some(seq as u64));
                        got = Some(page.into_bytes());
                    }
                    other => panic!("{provider}: tail {tlen}: {other:?}"),
                }
            }
        }
        let got = got.unwrap();
        assert_eq!(got.len(), head + tlen, "{provider}: tail {tlen}: length");
        assert!(
            got[..] == pat[..head + tlen],
            "{provider}: tail {tlen}: content"
        );
    }
    assert_eq!(a.ep.sends_in_flight(), 0);
    assert_eq!(a.pool.available(), a.pool.count(), "every page returned");
}

#[test]
fn page_and_tail_arrive_as_one_message_tcp() {
    if need_fabric() {
        pieces("tcp");
    }
}

#[test]
fn page_and_tail_arrive_as_one_message_shm() {
    if need_fabric() {
        pieces("shm");
    }
}
