//! REP: strict receive/send alternation. The envelope of each request
//! (everything up to and including the empty delimiter) is kept and put
//! back in front of the reply, which goes to the peer that asked.

use fabriq_zmtp::Multipart;
use fabriq_zmtp::Part;

use super::{Pattern, Pipes, PullWaits, Received};
use crate::error::{err, Error, Result};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd, PipeId};

#[derive(Default)]
pub(crate) struct Rep {
    pipes: Pipes,
    /// The request being answered: its pipe and envelope.
    pending: Option<(PipeId, Multipart)>,
}

impl Pattern for Rep {
    fn attach(&mut self, pipe: PipeEnd, _: &Options) {
        self.pipes.push(pipe);
    }

    fn prune(&mut self, _: &Options) {
        self.pipes.prune();
    }

    fn start_send(&mut self, _: &Part, _: &Options) -> Result<()> {
        if self.pending.is_none() {
            return err(Error::EFSM, "REP must receive a request before replying");
        }
        Ok(())
    }

    fn send(&mut self, msg: Multipart, _: &Options) -> Result<()> {
        let Some((pipe, mut reply)) = self.pending.take() else {
            return Ok(());
        };
        reply.extend(msg);
        if let Some(p) = self.pipes.index_of(pipe).map(|i| &self.pipes.list[i]) {
            // REP never blocks: a reply to a peer that is gone or full is
            // dropped, as in libzmq.
            if p.has_room_to_send() {
                p.tx.push(Item::Msg(reply));
            }
        }
        Ok(())
    }

    fn recv(&mut self, _: &Options) -> Result<Received> {
        if self.pending.is_some() {
            return err(
                Error::EFSM,
                "REP must send the reply before receiving again",
            );
        }
        while let Some((i, item)) = self.pipes.fair_recv() {
            let from = self.pipes.list[i].id;
            let meta = self.pipes.list[i].peer.metadata.clone();
            let Item::Msg(mut msg) = item else { continue };
            let Some(delimiter) = msg.iter().position(|f| f.is_empty()) else {
                tracing::debug!("REP dropped a request without an envelope delimiter");
                continue;
            };
            if delimiter + 1 == msg.len() {
                continue; // envelope but no body
            }
            let body: Multipart = msg.drain(delimiter + 1..).collect();
            self.pending = Some((from, msg));
            return Ok(Received { msg: body, meta });
        }
        Err(Error::EAGAIN)
    }

    fn can_send(&mut self, _: &Options) -> bool {
        self.pending.is_some()
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
    }

    fn pull_waits(&self, out: &mut PullWaits) {
        self.pipes.pull_waits(out);
    }
}
