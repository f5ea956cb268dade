//! What a node that reaches our fabric endpoint, or a peer that lies, can
//! do to fabriq-ofi: real libfabric endpoints over tcp (RDM through
//! ofi_rxm) and shm, every wait bounded.

mod common;

use std::time::Instant;

use bytes::Bytes;
use common::{deadline, need_fabric, pair};
use fabriq_ofi::{
    Caps, Domain, Error, Event, FiAddr, Info, Lent, MrMode, PagePool, PagedConfig, PagedEndpoint,
    ReadPool,
};

fn rma_info(provider: &str) -> Info {
    fabriq_ofi::getinfo(&common::hints(provider).caps(Caps::MSG | Caps::RMA))
        .unwrap_or_else(|e| panic!("{provider} with FI_RMA: {e}"))
        .remove(0)
}

fn open(info: &Info) -> (Domain, PagedEndpoint) {
    let domain = Domain::open_info(info).unwrap();
    let ep = PagedEndpoint::open(&domain, info, PagedConfig::default()).unwrap();
    (domain, ep)
}

/// Reads 4096 bytes at each `(addr, key)` of `probes` from `lender` (an
/// endpoint of ours to progress meanwhile, or `None` when it lives in
/// another process and `name` is its address), each
/// from an endpoint of its own in `domain` (a provider may drop the
/// connection of a read it refuses: tcp does), all at once, and waits at
/// most `limit` for their outcomes: the bytes, an error, or `None` when
/// the provider never answered (shm leaves refused reads pending).
fn read_all(
    info: &Info,
    domain: &Domain,
    mut lender: Option<&mut PagedEndpoint>,
    name: &[u8],
    probes: &[(u64, u64)],
    limit: std::time::Duration,
) -> Vec<Option<Result<Bytes, String>>> {
    let config = PagedConfig {
        max_sends: 2,
        max_recvs: 1,
        wait: fabriq_ofi::Wait::None,
        av_size: 2,
    };
    let pool = ReadPool::new(domain, 1 << 20, 1 << 20);
    let mut rogues: Vec<(PagedEndpoint, FiAddr)> = probes
        .iter()
        .map(|_| {
            let mut ep = PagedEndpoint::open(domain, info, config).unwrap();
            let at = ep.insert_peer(name).unwrap();
            (ep, at)
        })
        .collect();
    let mut posted = vec![false; probes.len()];
    let mut outcome: Vec<Option<Result<Bytes, String>>> = vec![None; probes.len()];
    let dl = Instant::now() + limit;
    let mut events = Vec::new();
    while outcome.iter().any(Option::is_none) && Instant::now() < dl {
        for (i, &(addr, key)) in probes.iter().enumerate() {
            if posted[i] {
                continue;
            }
            let (ep, at) = &mut rogues[i];
            match ep.read(pool.get(4096).unwrap(), *at, addr, key, i as u64) {
                Ok(()) => posted[i] = true,
                Err(refused) if refused.error.is_again() => {}
                Err(refused) => {
                    posted[i] = true;
                    outcome[i] = Some(Err(refused.error.to_string()));
                }
            }
        }
        if let Some(lender) = lender.as_deref_mut() {
            let _ = lender.poll(&mut events, 16);
            events.clear();
        }
        for (ep, _) in &mut rogues {
            let _ = ep.poll(&mut events, 16);
        }
        for e in events.drain(..) {
            match e {
                Event::ReadDone { data, tag } => outcome[tag as usize] = Some(Ok(data)),
                Event::ReadFailed { error, tag } => {
                    outcome[tag as usize] = Some(Err(error.to_string()))
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    outcome
}

/// A node that reaches the endpoint (and even knows where the lent bytes
/// are) but was not told their key reads nothing: not with keys counted
/// from 1 (the scheme keys were once requested under), not at address 0
/// or at the lent address.
fn guessed_keys_read_nothing(provider: &str) {
    let info = rma_info(provider);
    let (lender_domain, mut lender) = open(&info);
    let rogue_domain = Domain::open_info(&info).unwrap();
    // Pages first, as a fabric node registers them: under the old scheme
    // they took key 1 and the lent bytes key 2.
    let _pages = PagePool::new(&lender_domain, 4, 4096).unwrap();
    let secret = Bytes::from(vec![0x5a; 64 * 1024]);
    let lent = Lent::new(&lender_domain, secret.clone()).unwrap();
    let mut keys: Vec<u64> = (0..=16).collect();
    keys.extend([u64::MAX, 0xffff_ffff, 1 << 32]);
    let mut probes: Vec<(u64, u64)> = keys.iter().map(|&k| (0, k)).collect();
    if lent.rma_addr() != 0 {
        probes.extend(keys.iter().map(|&k| (lent.rma_addr(), k)));
    }
    let limit = std::time::Duration::from_secs(5);
    let name = lender.name().unwrap();
    let outcomes = read_all(
        &info,
        &rogue_domain,
        Some(&mut lender),
        &name,
        &probes,
        limit,
    );
    for ((addr, key), outcome) in probes.iter().zip(outcomes) {
        if let Some(Ok(got)) = outcome {
            assert!(
                !got.contains(&0x5a),
                "{provider}: key {key} at {addr:#x} read the lent bytes"
            );
        }
    }
    // Whoever was told the key reads them.
    let right = [(lent.rma_addr(), lent.key())];
    let limit = std::time::Duration::from_secs(20);
    match read_all(
        &info,
        &rogue_domain,
        Some(&mut lender),
        &name,
        &right,
        limit,
    )
    .remove(0)
    {
        Some(Ok(got)) => assert_eq!(got[..], secret[..4096]),
        other => panic!("{provider}: the right key: {other:?}"),
    }
}

#[test]
fn guessed_keys_read_nothing_tcp() {
    if need_fabric() {
        guessed_keys_read_nothing("tcp");
    }
}

#[test]
fn guessed_keys_read_nothing_shm() {
    if need_fabric() {
        guessed_keys_read_nothing("shm");
    }
}

/// Lent memory is addressed by offset where the provider does not require
/// virtual addresses: a peer learns no address of ours.
#[test]
fn lent_memory_is_addressed_by_offset_where_the_provider_allows() {
    if !need_fabric() {
        return;
    }
    for provider in ["tcp", "shm"] {
        let info = rma_info(provider);
        assert!(
            !info.mr_mode().contains(MrMode::VIRT_ADDR),
            "{provider}: FI_MR_VIRT_ADDR chosen though the provider does not require it"
        );
        let domain = Domain::open_info(&info).unwrap();
        let a = Lent::new(&domain, Bytes::from(vec![1; 100])).unwrap();
        let b = Lent::new(&domain, Bytes::from(vec![2; 100])).unwrap();
        assert_eq!(a.rma_addr(), 0, "{provider}");
        assert_eq!(b.rma_addr(), 0, "{provider}");
        assert_ne!(a.key(), b.key(), "{provider}");
        // Keys are random 64-bit values, not a count.
        assert!(
            a.key() > 1 << 20 || b.key() > 1 << 20,
            "{provider}: {a:?} {b:?}"
        );
    }
}

/// A rendezvous length comes from the peer: huge ones are refused before
/// anything is mapped or registered.
#[test]
fn huge_read_lengths_are_refused_before_any_allocation() {
    if !need_fabric() {
        return;
    }
    let domain = Domain::open_info(&rma_info("shm")).unwrap();
    let max = 1 << 20;
    let pool = ReadPool::new(&domain, 4 << 20, max);
    assert_eq!(pool.max_len(), max);
    for len in [
        1usize << 63,
        (1 << 63) + 1,
        usize::MAX,
        usize::MAX - 4095,
        max + 1,
        0,
    ] {
        match pool.get(len) {
            Err(Error::Invalid(why)) => {
                assert!(why.contains(&format!("{len} bytes")), "{why}");
                assert!(why.contains(&max.to_string()), "{why}");
            }
            Err(other) => panic!("{len}: allocation attempted: {other}"),
            Ok(buf) => panic!("{len}: got a buffer of {}", buf.len()),
        }
    }
    assert_eq!(pool.get(max).unwrap().len(), max);
    assert_eq!(pool.get(1).unwrap().len(), 1);
}

/// A completion the endpoint cannot file (here: a receive posted through
/// the raw API with a context the endpoint does not know) does not cost
/// the completions read with it.
#[test]
fn a_stray_completion_does_not_lose_the_rest_of_its_batch() {
    if !need_fabric() {
        return;
    }
    let (mut a, mut b) = pair("shm", 8, 4096, PagedConfig::default());
    let mut stray_page = b.pool.get().unwrap();
    let stray_ctx = Box::new([0usize; 4]);
    let (ptr, cap, desc) = (
        stray_page.buffer_mut().as_mut_ptr(),
        stray_page.capacity(),
        stray_page.desc(),
    );
    // SAFETY: the page's registered memory and the boxed context stay
    // alive and untouched until `b` (its endpoint) is dropped below.
    unsafe {
        b.ep.endpoint()
            .post_recv_raw(ptr, cap, desc, FiAddr::UNSPEC, stray_ctx.as_ptr() as *mut _)
            .unwrap();
    }
    for _ in 0..3 {
        b.ep.post_recv(b.pool.get().unwrap()).unwrap();
    }
    // Four messages; the first lands in the stray receive (posted first).
    let peer = a.peer;
    let mut page = a.pool.get().unwrap();
    page.fill(b"m0").unwrap();
    common::send_retry(&mut a, &mut b, page, peer, deadline(10));
    for i in 1..4u8 {
        let mut page = a.pool.get().unwrap();
        page.fill(&[b'm', b'0' + i]).unwrap();
        a.ep.send(page, peer, Some(u64::from(i)), 0)
            .map_err(|e| e.error)
            .unwrap();
    }
    // Sender-side completions only: the receiver reads its CQ afterwards,
    // all four completions at once where the provider delivered them.
    let mut sent = 0;
    let dl = deadline(10);
    let mut events = Vec::new();
    while sent < 4 {
        a.ep.poll(&mut events, 16).unwrap();
        sent += events
            .drain(..)
            .filter(|e| matches!(e, Event::Sent { .. }))
            .count();
        assert!(Instant::now() < dl, "sends did not complete");
    }
    let (mut got, mut errors) = (Vec::new(), Vec::new());
    let dl = deadline(10);
    while got.len() < 3 {
        if let Err(e) = b.ep.poll(&mut events, 64) {
            errors.push(e.to_string());
        }
        for e in events.drain(..) {
            match e {
                Event::Received { page, .. } => got.push(page.as_slice().to_vec()),
                other => panic!("{other:?}"),
            }
        }
        assert!(
            Instant::now() < dl,
            "received {got:?} with errors {errors:?}: completions were lost"
        );
    }
    got.sort();
    assert_eq!(got, [b"m1".to_vec(), b"m2".to_vec(), b"m3".to_vec()]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("unknown context"), "{errors:?}");
    assert_eq!(b.ep.recvs_posted(), 0);
    drop(b);
    drop(stray_page);
    drop(stray_ctx);
}

fn send_and_receive(
    from: &mut common::Side,
    to: &mut common::Side,
    dest: FiAddr,
    data: u64,
) -> (Option<u64>, Option<FiAddr>) {
    to.ep.post_recv(to.pool.get().unwrap()).unwrap();
    let mut page = from.pool.get().unwrap();
    page.fill(&data.to_le_bytes()).unwrap();
    let dl = deadline(10);
    let mut events = Vec::new();
    loop {
        match from.ep.send(page, dest, Some(data), 0) {
            Ok(()) => break,
            Err(e) if e.error.is_again() => page = e.page,
            Err(e) => panic!("send: {}", e.error),
        }
        from.ep.poll(&mut events, 16).unwrap();
        to.ep.poll(&mut events, 16).unwrap();
        assert!(events.is_empty(), "{events:?}");
        assert!(Instant::now() < dl, "send refused for 10 s");
    }
    let (mut sent, mut got) = (false, None);
    while !(sent && got.is_some()) {
        from.ep.poll(&mut events, 16).unwrap();
        to.ep.poll(&mut events, 16).unwrap();
        for e in events.drain(..) {
            match e {
                Event::Sent { .. } => sent = true,
                Event::Received { page, data, src } => {
                    assert_eq!(page.as_slice(), data.unwrap_or(!0).to_le_bytes());
                    got = Some((data, src));
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(Instant::now() < dl, "message not delivered in 10 s");
    }
    got.unwrap()
}

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    getrandom::getrandom(&mut b).unwrap();
    u64::from_ne_bytes(b)
}

/// CQ data carries 64 bits exactly (a connection token and a sequence
/// number): random values, the top bit set, all ones, zero.
fn cq_data_round_trips(provider: &str) {
    let (mut a, mut b) = pair(provider, 8, 4096, PagedConfig::default());
    let r = random_u64();
    for data in [r, r | 1 << 63, u64::MAX, 0, 1 << 32, random_u64()] {
        let dest = a.peer;
        let (got, _) = send_and_receive(&mut a, &mut b, dest, data);
        assert_eq!(got, Some(data), "{provider}: {data:#x}");
    }
}

#[test]
fn cq_data_round_trips_tcp() {
    if need_fabric() {
        cq_data_round_trips("tcp");
    }
}

#[test]
fn cq_data_round_trips_shm() {
    if need_fabric() {
        cq_data_round_trips("shm");
    }
}

/// Received pages name their sender as the receiver's AV knows it; a
/// sender missing from the receiver's AV is `None`.
fn sources(provider: &str) {
    let (mut a, mut b) = pair(provider, 8, 4096, PagedConfig::default());
    assert!(
        a.ep.has_source() && b.ep.has_source(),
        "{provider}: no FI_SOURCE"
    );
    let (a_at_b, b_at_a) = (b.peer, a.peer);
    for i in 0..3 {
        let (_, src) = send_and_receive(&mut a, &mut b, b_at_a, i);
        assert_eq!(src, Some(a_at_b), "{provider}: a -> b");
        let (_, src) = send_and_receive(&mut b, &mut a, a_at_b, i);
        assert_eq!(src, Some(b_at_a), "{provider}: b -> a");
    }
    // A third endpoint that b never inserted.
    let info = common::info(provider);
    let domain = Domain::open_info(&info).unwrap();
    let mut c = common::Side {
        pool: PagePool::new(&domain, 8, 4096).unwrap(),
        ep: PagedEndpoint::open(&domain, &info, PagedConfig::default()).unwrap(),
        domain,
        peer: FiAddr::UNSPEC,
    };
    let b_at_c = c.ep.insert_peer(&b.ep.name().unwrap()).unwrap();
    c.peer = b_at_c;
    let (data, src) = send_and_receive(&mut c, &mut b, b_at_c, 77);
    assert_eq!(data, Some(77));
    assert_eq!(src, None, "{provider}: a stranger was given an address");
    let (_, src) = send_and_receive(&mut c, &mut b, b_at_c, 78);
    assert_eq!(src, None, "{provider}: a stranger was given an address");
    // A removed peer: its messages have no source, sends to it are
    // refused, and a peer inserted after it does not inherit its messages
    // (the providers here would give it the removed entry).
    b.ep.remove_peer(a_at_b).unwrap();
    let (_, src) = send_and_receive(&mut a, &mut b, b_at_a, 79);
    assert_eq!(
        src, None,
        "{provider}: a removed peer still has its address"
    );
    let page = b.pool.get().unwrap();
    assert!(b.ep.send(page, a_at_b, None, 0).is_err(), "{provider}");
    let c_at_b = b.ep.insert_peer(&c.ep.name().unwrap()).unwrap();
    assert_ne!(c_at_b, a_at_b, "{provider}: the removed entry was reused");
    let (_, src) = send_and_receive(&mut c, &mut b, b_at_c, 80);
    assert_eq!(src, Some(c_at_b), "{provider}");
    let (_, src) = send_and_receive(&mut a, &mut b, b_at_a, 81);
    assert_eq!(
        src, None,
        "{provider}: the removed peer took the new one's address"
    );
    // Inserted again, it is known again.
    assert_eq!(b.ep.insert_peer(&a.ep.name().unwrap()).unwrap(), a_at_b);
    let (_, src) = send_and_receive(&mut a, &mut b, b_at_a, 82);
    assert_eq!(src, Some(a_at_b), "{provider}");
}

#[test]
fn received_pages_name_their_sender_tcp() {
    if need_fabric() {
        sources("tcp");
    }
}

#[test]
fn received_pages_name_their_sender_shm() {
    if need_fabric() {
        sources("shm");
    }
}

/// The entry fabriq's shm nodes use: RMA with virtual addresses, shm's
/// fast path (the reader copies by CMA when `fi_read` is called).
fn shm_virt_info() -> Info {
    fabriq_ofi::getinfo(
        &common::hints("shm")
            .caps(Caps::MSG | Caps::RMA)
            .prefer_virt_addr(true),
    )
    .expect("shm with FI_RMA")
    .remove(0)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const ROGUE: &str = "FABRIQ_OFI_TEST_SHM_ROGUE";

/// The rogue's side of the test below, in a process of its own with CMA
/// off: reads 4096 bytes at the lent address with each key it was given,
/// each from an endpoint of its own, all at once, for at most 10 s, and
/// prints one line per key: `KEY got-lent-bytes|other-bytes|ERR ..|none`
/// (none: never answered, as shm leaves refused reads pending).
fn shm_rogue(spec: &str) {
    let mut it = spec.split(':');
    let (name, addr) = (unhex(it.next().unwrap()), it.next().unwrap());
    let addr: u64 = addr.parse().unwrap();
    let keys: Vec<u64> = it.map(|k| k.parse().unwrap()).collect();
    let info = shm_virt_info();
    let domain = Domain::open_info(&info).unwrap();
    let probes: Vec<(u64, u64)> = keys.iter().map(|&k| (addr, k)).collect();
    let limit = std::time::Duration::from_secs(10);
    let outcomes = read_all(&info, &domain, None, &name, &probes, limit);
    for (key, o) in keys.iter().zip(outcomes) {
        let what = match o {
            Some(Ok(data)) if data.iter().all(|&b| b == 0x5a) => "got-lent-bytes".to_string(),
            Some(Ok(_)) => "other-bytes".to_string(),
            Some(Err(e)) => format!("ERR {e}"),
            None => "none".to_string(),
        };
        println!("PROBE {key} {what}");
    }
}

/// Runs [`shm_rogue`] in a child process (CMA off when `cma` is false)
/// against `lender`, progressing the lender meanwhile (a peer without
/// CMA is served by it), and returns each key's outcome.
fn rogue_reads(lender: &mut PagedEndpoint, lent: &Lent, keys: &[u64], cma: bool) -> Vec<String> {
    let spec = format!(
        "{}:{}:{}",
        hex(&lender.name().unwrap()),
        lent.rma_addr(),
        keys.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(":")
    );
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "shm_with_virtual_addresses_checks_keys_for_peers_without_cma",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ROGUE, spec)
    .stdout(std::process::Stdio::piped());
    if !cma {
        cmd.env("FI_SHM_DISABLE_CMA", "1");
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut out).map(|_| out)
    });
    let dl = deadline(60);
    let mut events = Vec::new();
    let status = loop {
        let _ = lender.poll(&mut events, 16);
        events.clear();
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < dl, "the rogue did not finish");
        std::thread::yield_now();
    };
    let out = reader.join().unwrap().unwrap();
    assert!(status.success(), "{out}");
    let outcomes: Vec<String> = out
        .split("PROBE ")
        .skip(1)
        .map(|l| l.lines().next().unwrap_or("").to_string())
        .collect();
    assert_eq!(outcomes.len(), keys.len(), "{out}");
    for (o, key) in outcomes.iter().zip(keys) {
        assert!(o.starts_with(&format!("{key} ")), "{o} for {key}");
    }
    outcomes
}

/// fabriq's shm nodes register with virtual addresses (shm's fast RMA: a
/// reader with CMA rights copies the lent bytes itself, so reads need no
/// progress of the lender). On that path the provider does not check the
/// key: shown here, a process with CMA reads the lent bytes with a wrong
/// key. CMA needs ptrace rights over the lender (the kernel's check for
/// `process_vm_readv`), which read any of its memory anyway. A peer
/// without them (here: a process with `FI_SHM_DISABLE_CMA=1`) goes
/// through the lender's provider, which checks the key: even knowing the
/// lent address, guessed keys read nothing, and the right key does (so
/// the reads were served).
#[test]
fn shm_with_virtual_addresses_checks_keys_for_peers_without_cma() {
    if let Ok(spec) = std::env::var(ROGUE) {
        return shm_rogue(&spec);
    }
    if !need_fabric() {
        return;
    }
    let info = shm_virt_info();
    assert!(
        info.mr_mode().contains(MrMode::VIRT_ADDR),
        "shm offers FI_MR_VIRT_ADDR: {info:?}"
    );
    let (domain, mut lender) = open(&info);
    let _pages = PagePool::new(&domain, 4, 4096).unwrap();
    let lent = Lent::new(&domain, Bytes::from(vec![0x5a; 64 * 1024])).unwrap();
    assert_ne!(lent.rma_addr(), 0, "virtual addresses");
    let mut keys: Vec<u64> = (0..=16).collect();
    keys.extend([u64::MAX, 0xffff_ffff, 1 << 32, lent.key() ^ 1]);
    keys.push(lent.key());
    let outcomes = rogue_reads(&mut lender, &lent, &keys, false);
    for (o, key) in outcomes.iter().zip(&keys) {
        let got = o.ends_with("got-lent-bytes");
        if *key == lent.key() {
            assert!(got, "the right key reads the lent bytes: {o}");
        } else {
            assert!(!got, "without CMA a guessed key read the lent bytes: {o}");
        }
    }
    // With CMA (ptrace rights over us) a wrong key reads them.
    let wrong = [lent.key() ^ 1];
    let outcomes = rogue_reads(&mut lender, &lent, &wrong, true);
    assert!(
        outcomes[0].ends_with("got-lent-bytes"),
        "with CMA the key is not checked: {outcomes:?}"
    );
}
