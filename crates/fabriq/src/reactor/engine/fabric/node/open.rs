//! Opening a node: the provider's endpoint, chosen with RMA where the
//! provider has it, its page pool, posted receives and wake-up sources.

use super::*;

impl Node {
    /// Opens the provider's first RDM endpoint on `local` (an address to
    /// bind to, for providers that have addresses), registers its pages
    /// and posts its receives.
    pub(crate) fn open(
        provider: Option<&str>,
        local: Option<&str>,
        fabric: &FabricOptions,
    ) -> Result<Node, String> {
        let (info, rma) = Self::choose(provider, local)?;
        let page_size = usize::try_from(fabric.page_size).unwrap_or(0) + HEADER_ROOM;
        let pages = usize::try_from(fabric.page_count).unwrap_or(0);
        let max = info.max_msg_size();
        if max > 0 && page_size > max {
            return Err(format!(
                "fabric_page_size {} is more than provider {} sends in one message ({max})",
                fabric.page_size,
                info.provider()
            ));
        }
        let posted = POSTED.min(pages / 4).max(1);
        let window = WINDOW.min(posted as u32);
        let domain = fabriq_ofi::Domain::open_info(&info).map_err(|e| e.to_string())?;
        let config = PagedConfig {
            max_sends: pages,
            max_recvs: posted,
            ..PagedConfig::default()
        };
        let ep = PagedEndpoint::open(&domain, &info, config).map_err(|e| e.to_string())?;
        let pool = PagePool::new(&domain, pages, page_size)
            .map_err(|e| format!("cannot register {pages} pages of {page_size} bytes: {e}"))?;
        let name = ep.name().map_err(|e| e.to_string())?;
        let mut fds: Vec<RawFd> = ep.wait_fd().into_iter().collect();
        if !wake::wait_fds_wake(&info.provider()) {
            // Its descriptors exist but never become readable: treat it
            // like a provider without them (doorbell and polling).
            fds.clear();
        }
        let cq_waitable = !fds.is_empty();
        // For a socket's thread blocked in a receive to sleep on the CQ's
        // descriptor too, and ring the I/O thread for what it reaped and
        // did not pull.
        let (cq_fd, nudge) = match cq_waitable {
            false => (None, None),
            true => match (ep.dup_wait_fd(), wake::Doorbell::open()) {
                (Ok(Some(fd)), Ok(bell)) => {
                    fds.push(bell.fd().as_raw_fd());
                    (Some(fd), Some(Arc::new(bell)))
                }
                (Ok(None), _) => (None, None),
                (Err(e), _) => {
                    tracing::debug!(
                        "cannot duplicate the CQ descriptor ({e}): receives wait on the I/O thread"
                    );
                    (None, None)
                }
                (_, Err(e)) => {
                    tracing::debug!("no nudge socket ({e}): receives wait on the I/O thread");
                    (None, None)
                }
            },
        };
        let doorbell = match cq_waitable {
            true => None,
            false => match wake::Doorbell::open() {
                Ok(bell) => {
                    fds.push(bell.fd().as_raw_fd());
                    Some(Arc::new(bell))
                }
                Err(e) => {
                    tracing::debug!(
                        "no doorbell socket ({e}): peers ring over the control connection"
                    );
                    None
                }
            },
        };
        let spinners = doorbell
            .as_ref()
            .and_then(|_| match SharedCounter::create() {
                Ok(c) => Some(Arc::new(c)),
                Err(e) => {
                    tracing::debug!("no spinner count ({e}): peers ring every time");
                    None
                }
            });
        let app_bell = match (&doorbell, &spinners) {
            (Some(bell), Some(_)) => match wake::Doorbell::open_app(bell) {
                Ok(app) => Some(Arc::new(app)),
                Err(e) => {
                    tracing::debug!("no application bell ({e}): receives sleep on the doorbell");
                    None
                }
            },
            _ => None,
        };
        let mut state = NodeState {
            ep,
            reads: 0,
            domain: domain.clone(),
            posted,
            pool,
            conns: HashMap::new(),
            by_peer: HashMap::new(),
            next_key: 1,
            events: Vec::new(),
            pending_ready: Vec::new(),
            page_waiters: Vec::new(),
            wanting: Vec::new(),
            unclaimed: 0,
            more: false,
        };
        state.post_receives();
        Ok(Node {
            state: Mutex::new(state),
            fds,
            cq_waitable,
            doorbell,
            app_bell,
            nudge,
            cq_fd,
            spinners,
            // No connection reads more than the default cap in one go
            // (each may lower it with ZMQ_MAXMSGSIZE): the pool refuses
            // longer buffers before mapping them.
            reads_pool: fabriq_ofi::ReadPool::new(
                &domain,
                READ_POOL_BYTES,
                usize::try_from(Limits::default().read_max).unwrap_or(usize::MAX),
            ),
            ringer: Ringer::default(),
            name,
            provider: info.provider(),
            page_size,
            window,
            rma,
        })
    }

    /// The provider's first RDM endpoint description on `local`, with
    /// RMA if it has it (and whether it does).
    fn choose(
        provider: Option<&str>,
        local: Option<&str>,
    ) -> Result<(fabriq_ofi::Info, bool), String> {
        // `ofi://`: the first provider offered, named, so that an
        // address-based one is bound like `ofi+NAME://` would be.
        let first;
        let provider = match provider {
            Some(p) => Some(p),
            None => {
                let infos = fabriq_ofi::getinfo(&crate::transport::ofi::hints(None))
                    .map_err(|e| e.to_string())?;
                let info = infos.first().ok_or("fi_getinfo offered no endpoint")?;
                first = info.provider().split(';').next().unwrap_or("").to_string();
                Some(first.as_str())
            }
        };
        let mut hints = crate::transport::ofi::hints(provider);
        if let Some(ip) = local.filter(|ip| !ip.is_empty()) {
            // Providers with IP addresses bind where the control
            // connection is, so the fabric traffic takes the same path.
            if matches!(
                provider,
                Some("tcp") | Some("sockets") | Some("net") | Some("udp")
            ) {
                hints = hints.node(ip).source(true);
            }
        }
        // RMA (for rendezvous) where the provider has it; messages only
        // otherwise.
        // On shm, with virtual addresses, a read is a `process_vm_readv`
        // in the reader, done when `fi_read` returns; with offsets it is a
        // request the lender's progress serves while the reader polls.
        // CMA needs ptrace rights over the lender, which read all of its
        // memory anyway; a peer without them gets the request path, where
        // the lender's provider checks the key (docs/security.md).
        let with_rma = hints
            .clone()
            .caps(fabriq_ofi::Caps::MSG | fabriq_ofi::Caps::RMA)
            .prefer_virt_addr(provider == Some("shm"));
        if let Some(info) = fabriq_ofi::getinfo(&with_rma)
            .ok()
            .and_then(|i| i.into_iter().next())
        {
            return Ok((info, true));
        }
        let info = fabriq_ofi::getinfo(&hints)
            .map_err(|e| e.to_string())?
            .into_iter()
            .next()
            .ok_or("fi_getinfo offered no endpoint")?;
        Ok((info, false))
    }
}
