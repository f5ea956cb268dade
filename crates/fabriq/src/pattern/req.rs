//! REQ: strict send/receive alternation. Each request goes to the next
//! peer with room, behind an empty delimiter (and, with REQ_CORRELATE, a
//! request id); only the reply from the peer asked is accepted, anything
//! else is dropped.

use fabriq_zmtp::Multipart;
use fabriq_zmtp::Part;

use super::{Pattern, Pipes, PullWaits, Received};
use crate::error::{err, Error, Result};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd, PipeId};

#[derive(Default)]
pub(crate) struct Req {
    pipes: Pipes,
    target: Option<PipeId>,
    /// The request in flight: the pipe asked and the request id.
    waiting: Option<(PipeId, u32)>,
    next_request_id: u32,
}

impl Pattern for Req {
    fn attach(&mut self, pipe: PipeEnd, _: &Options) {
        self.pipes.push(pipe);
    }

    fn prune(&mut self, _: &Options) {
        self.pipes.prune();
    }

    fn start_send(&mut self, _: &Part, opts: &Options) -> Result<()> {
        if self.waiting.is_some() && !opts.req_relaxed {
            return err(
                Error::EFSM,
                "REQ must receive the reply before sending another request",
            );
        }
        let i = self.pipes.pick_out().ok_or(Error::EAGAIN)?;
        self.target = Some(self.pipes.list[i].id);
        Ok(())
    }

    fn send(&mut self, msg: Multipart, opts: &Options) -> Result<()> {
        let Some(target) = self.target.take() else {
            return Ok(());
        };
        self.next_request_id = self.next_request_id.wrapping_add(1);
        let id = self.next_request_id;
        let mut out = Multipart::with_capacity(msg.len() + 2);
        if opts.req_correlate {
            out.push(Part::copy_from_slice(&id.to_be_bytes()));
        }
        out.push(Part::new());
        out.extend(msg);
        if let Some(i) = self.pipes.index_of(target) {
            self.pipes.list[i].tx.push(Item::Msg(out));
        }
        self.waiting = Some((target, id));
        Ok(())
    }

    fn recv(&mut self, opts: &Options) -> Result<Received> {
        let Some((asked, id)) = self.waiting else {
            return err(Error::EFSM, "REQ must send a request before receiving");
        };
        while let Some((i, item)) = self.pipes.fair_recv() {
            let from = self.pipes.list[i].id;
            let meta = self.pipes.list[i].peer.metadata.clone();
            let Item::Msg(mut msg) = item else { continue };
            if from != asked {
                continue; // a late reply from a peer we no longer wait for
            }
            let header = if opts.req_correlate { 2 } else { 1 };
            let well_formed = msg.len() > header
                && msg[header - 1].is_empty()
                && (!opts.req_correlate || msg[0][..] == id.to_be_bytes());
            if !well_formed {
                tracing::debug!("REQ dropped a reply with a bad envelope");
                continue;
            }
            msg.drain(..header);
            self.waiting = None;
            return Ok(Received { msg, meta });
        }
        Err(Error::EAGAIN)
    }

    fn can_send(&mut self, opts: &Options) -> bool {
        (self.waiting.is_none() || opts.req_relaxed) && self.pipes.has_room_out()
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
    }

    fn pull_waits(&self, out: &mut PullWaits) {
        self.pipes.pull_waits(out);
    }
}
