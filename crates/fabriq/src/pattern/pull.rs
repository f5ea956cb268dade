//! PULL: fair-queued input from all peers.

use fabriq_zmtp::{Multipart, Part, SocketType};

use super::{not_supported, Pattern, Pipes, PullWaits, Received};
use crate::error::Result;
use crate::options::Options;
use crate::pipe::PipeEnd;

#[derive(Default)]
pub(crate) struct Pull {
    pipes: Pipes,
}

impl Pattern for Pull {
    fn attach(&mut self, pipe: PipeEnd, _: &Options) {
        self.pipes.push(pipe);
    }

    fn prune(&mut self, _: &Options) {
        self.pipes.prune();
    }

    fn start_send(&mut self, _: &Part, _: &Options) -> Result<()> {
        not_supported(SocketType::Pull, "send")
    }

    fn send(&mut self, _: Multipart, _: &Options) -> Result<()> {
        not_supported(SocketType::Pull, "send")
    }

    fn recv(&mut self, _: &Options) -> Result<Received> {
        super::fair_recv_msg(&mut self.pipes)
    }

    fn can_send(&mut self, _: &Options) -> bool {
        false
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
    }

    fn pull_waits(&self, out: &mut PullWaits) {
        self.pipes.pull_waits(out);
    }
}
