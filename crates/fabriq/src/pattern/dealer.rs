//! DEALER: PUSH's round-robin output with PULL's fair-queued input, no
//! envelopes.

use fabriq_zmtp::Multipart;
use fabriq_zmtp::Part;

use super::push::Push;
use super::{Pattern, PullWaits, Received};
use crate::error::Result;
use crate::options::Options;
use crate::pipe::PipeEnd;

#[derive(Default)]
pub(crate) struct Dealer {
    out: Push,
}

impl Pattern for Dealer {
    fn attach(&mut self, pipe: PipeEnd, opts: &Options) {
        self.out.attach(pipe, opts);
    }

    fn prune(&mut self, opts: &Options) {
        self.out.prune(opts);
    }

    fn start_send(&mut self, first: &Part, opts: &Options) -> Result<()> {
        self.out.start_send(first, opts)
    }

    fn send(&mut self, msg: Multipart, opts: &Options) -> Result<()> {
        self.out.send(msg, opts)
    }

    fn recv(&mut self, _: &Options) -> Result<Received> {
        super::fair_recv_msg(&mut self.out.pipes)
    }

    fn can_send(&mut self, opts: &Options) -> bool {
        self.out.can_send(opts)
    }

    fn close_all(&mut self) {
        self.out.close_all();
    }

    fn pull_waits(&self, out: &mut PullWaits) {
        self.out.pipes.pull_waits(out);
    }
}
