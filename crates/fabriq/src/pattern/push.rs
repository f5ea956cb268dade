//! PUSH: round-robin to peers with room; blocks when none has room.

use fabriq_zmtp::{Multipart, Part, SocketType};

use super::{not_supported, Pattern, Pipes, Received};
use crate::error::{Error, Result};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd, PipeId};

#[derive(Default)]
pub(crate) struct Push {
    pub(super) pipes: Pipes,
    /// The pipe `start_send` chose, and where it was in the list.
    target: Option<(PipeId, usize)>,
}

impl Pattern for Push {
    fn attach(&mut self, pipe: PipeEnd, _: &Options) {
        self.pipes.push(pipe);
    }

    fn prune(&mut self, _: &Options) {
        self.pipes.prune();
    }

    fn start_send(&mut self, _: &Part, _: &Options) -> Result<()> {
        let i = self.pipes.pick_out().ok_or(Error::EAGAIN)?;
        self.target = Some((self.pipes.list[i].id, i));
        Ok(())
    }

    fn send(&mut self, msg: Multipart, _: &Options) -> Result<()> {
        if let Some((id, at)) = self.target.take() {
            if let Some(i) = self.pipes.index_near(id, at) {
                self.pipes.list[i].tx.push(Item::Msg(msg));
            }
        }
        Ok(())
    }

    fn recv(&mut self, _: &Options) -> Result<Received> {
        not_supported(SocketType::Push, "receive")
    }

    fn can_send(&mut self, _: &Options) -> bool {
        self.pipes.has_room_out()
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
    }
}

/// Pushes to the pipe with id `target`, if it is still there.
pub(crate) fn push_to(pipes: &Pipes, target: Option<PipeId>, msg: Multipart) {
    if let Some(i) = target.and_then(|id| pipes.index_of(id)) {
        pipes.list[i].tx.push(Item::Msg(msg));
    }
}
