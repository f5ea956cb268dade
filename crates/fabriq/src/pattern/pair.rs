//! PAIR: exactly one peer; further peers are refused.

use fabriq_zmtp::Multipart;
use fabriq_zmtp::Part;

use super::{Pattern, Pipes, PullWaits, Received};
use crate::error::{Error, Result};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd};

#[derive(Default)]
pub(crate) struct Pair {
    pipes: Pipes,
}

impl Pattern for Pair {
    fn attach(&mut self, pipe: PipeEnd, _: &Options) {
        if self.pipes.list.is_empty() {
            self.pipes.push(pipe);
        } else {
            tracing::debug!("PAIR already has a peer; refusing another");
            pipe.close();
        }
    }

    fn prune(&mut self, _: &Options) {
        self.pipes.prune();
    }

    fn start_send(&mut self, _: &Part, _: &Options) -> Result<()> {
        match self.pipes.list.first() {
            Some(p) if p.tx.has_room() => Ok(()),
            _ => Err(Error::EAGAIN),
        }
    }

    fn send(&mut self, msg: Multipart, _: &Options) -> Result<()> {
        if let Some(p) = self.pipes.list.first() {
            p.tx.push(Item::Msg(msg));
        }
        Ok(())
    }

    fn recv(&mut self, _: &Options) -> Result<Received> {
        super::fair_recv_msg(&mut self.pipes)
    }

    fn can_send(&mut self, _: &Options) -> bool {
        self.pipes.list.first().is_some_and(|p| p.tx.has_room())
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
    }

    fn pull_waits(&self, out: &mut PullWaits) {
        self.pipes.pull_waits(out);
    }
}
