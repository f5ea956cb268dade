//! ROUTER: every message in is prefixed with the routing id of the peer it
//! came from; every message out starts with the routing id of the peer it
//! goes to. Peers announce an identity or get a generated one (`0x00` and
//! a 32-bit counter). Unroutable messages are dropped, or refused with
//! EHOSTUNREACH / EAGAIN under ROUTER_MANDATORY.

use fabriq_zmtp::Multipart;
use fabriq_zmtp::Part;

use super::routing::RoutingIds;
use super::{Pattern, Pipes, PullWaits, Received};
use crate::error::{err, Error, Result};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd, PipeId};

pub(crate) struct Router {
    pipes: Pipes,
    ids: RoutingIds,
    /// Destination of the message being sent; `None` drops it.
    target: Option<PipeId>,
}

impl Router {
    pub(crate) fn new() -> Router {
        Router {
            pipes: Pipes::default(),
            ids: RoutingIds::new(),
            target: None,
        }
    }

    fn forget(&mut self, pipe: PipeId) {
        self.ids.forget(pipe);
    }
}

impl Pattern for Router {
    fn attach(&mut self, pipe: PipeEnd, opts: &Options) {
        let announced = pipe.peer.identity.clone();
        let id = if announced.is_empty() {
            self.ids.generate()
        } else if let Some(old) = self.ids.pipe(&announced) {
            if !opts.router_handover {
                tracing::debug!("ROUTER refused a peer with a duplicate identity");
                pipe.close();
                return;
            }
            // Handover: the new connection takes the identity over.
            if let Some(i) = self.pipes.index_of(old) {
                self.pipes.remove(i).close();
            }
            self.forget(old);
            announced
        } else {
            announced
        };
        self.ids.insert(id, pipe.id);
        self.pipes.push(pipe);
    }

    fn prune(&mut self, _: &Options) {
        for dead in self.pipes.prune() {
            self.forget(dead.id);
        }
    }

    fn start_send(&mut self, first: &Part, opts: &Options) -> Result<()> {
        self.target = None;
        match self.ids.pipe(first) {
            None if opts.router_mandatory => err(
                Error::EHOSTUNREACH,
                "ROUTER_MANDATORY: no peer with this routing id",
            ),
            None => Ok(()),
            Some(pipe) => {
                let has_room = self
                    .pipes
                    .index_of(pipe)
                    .is_some_and(|i| self.pipes.list[i].has_room_to_send());
                if has_room {
                    self.target = Some(pipe);
                    Ok(())
                } else if opts.router_mandatory {
                    Err(Error::EAGAIN)
                } else {
                    Ok(())
                }
            }
        }
    }

    fn send(&mut self, mut msg: Multipart, _: &Options) -> Result<()> {
        let Some(pipe) = self.target.take() else {
            return Ok(());
        };
        if msg.len() < 2 {
            return Ok(()); // a routing id with no body: nothing to send
        }
        msg.remove(0);
        if let Some(i) = self.pipes.index_of(pipe) {
            self.pipes.list[i].tx.push(Item::Msg(msg));
        }
        Ok(())
    }

    fn recv(&mut self, _: &Options) -> Result<Received> {
        while let Some((i, item)) = self.pipes.fair_recv() {
            let from = self.pipes.list[i].id;
            let meta = self.pipes.list[i].peer.metadata.clone();
            let Item::Msg(msg) = item else { continue };
            let Some(id) = self.ids.id(from) else {
                continue;
            };
            let mut out = Multipart::with_capacity(msg.len() + 1);
            out.push(Part::from(id.clone()));
            out.extend(msg);
            return Ok(Received { msg: out, meta });
        }
        Err(Error::EAGAIN)
    }

    fn can_send(&mut self, _: &Options) -> bool {
        true
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
        self.ids.clear();
    }

    fn pull_waits(&self, out: &mut PullWaits) {
        self.pipes.pull_waits(out);
    }
}
