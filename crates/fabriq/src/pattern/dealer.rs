//! DEALER: round-robin output, fair-queued input, no envelopes.

use bytes::Bytes;
use fabriq_zmtp::Multipart;

use super::push::push_to;
use super::{Pattern, Pipes, Received};
use crate::error::{Error, Result};
use crate::options::Options;
use crate::pipe::{PipeEnd, PipeId};

#[derive(Default)]
pub(crate) struct Dealer {
    pipes: Pipes,
    target: Option<PipeId>,
}

impl Pattern for Dealer {
    fn attach(&mut self, pipe: PipeEnd, _: &Options) {
        self.pipes.push(pipe);
    }

    fn prune(&mut self, _: &Options) {
        self.pipes.prune();
    }

    fn start_send(&mut self, _: &Bytes, _: &Options) -> Result<()> {
        let i = self.pipes.pick_out().ok_or(Error::EAGAIN)?;
        self.target = Some(self.pipes.list[i].id);
        Ok(())
    }

    fn send(&mut self, msg: Multipart, _: &Options) -> Result<()> {
        push_to(&self.pipes, self.target.take(), msg);
        Ok(())
    }

    fn recv(&mut self, _: &Options) -> Result<Received> {
        super::fair_recv_msg(&mut self.pipes)
    }

    fn can_send(&mut self, _: &Options) -> bool {
        self.pipes.pick_out().is_some()
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
    }
}
