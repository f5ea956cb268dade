//! [`PipeEnd`], the socket's end of a pipe, and what the socket knows of
//! the peer behind it ([`PeerMeta`]).

use std::sync::Arc;

use bytes::Bytes;

use crate::message::{LateMeta, Metadata};

use super::{Flush, Item, PeerIo, PipeId, PullWait, Queue, ReaderSide};

/// What a socket knows about the peer at the other end of a pipe.
#[derive(Debug, Clone)]
pub(crate) struct PeerMeta {
    /// The identity the peer announced (may be empty).
    pub identity: Bytes,
    /// For `Message::gets`.
    pub metadata: Option<Arc<Metadata>>,
    /// The peer takes every group (a RADIO's `udp://` pipe: DISHes on
    /// the far side filter, as libzmq's `subscribe_to_all`).
    pub all_groups: bool,
    /// A pipe made before its connection's handshake (a connect's): the
    /// session puts the peer's metadata here once it is known, and the
    /// socket's end takes it into `metadata` as it reads.
    pub late: Option<Arc<LateMeta>>,
}

/// The socket's end of a pipe.
#[derive(Debug)]
pub(crate) struct PipeEnd {
    pub id: PipeId,
    /// Messages from the peer.
    pub rx: Arc<Queue>,
    /// Messages to the peer.
    pub tx: Arc<Queue>,
    pub peer: PeerMeta,
    /// For the socket's end of a tcp or ipc pipe: the connection's engine,
    /// which may read on the socket's thread when `rx` runs dry.
    pub peer_io: Option<Arc<dyn PeerIo>>,
    /// The reader's side of `rx` when read with [`PipeEnd::pop`].
    pub reader: ReaderSide,
}

impl PipeEnd {
    /// Takes the oldest item from the peer, as [`Queue::pop`] does, with
    /// the reader's side this end owns (no lock). A socket reads its pipes
    /// only this way; an engine given `&rx` would read past this end's
    /// cache, so the two are never mixed on one queue.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Item> {
        let item = self.rx.pop_from(&mut self.reader);
        if let Some(late) = &self.peer.late {
            if let Some(meta) = late.changed(&mut self.reader.late_seen) {
                self.peer.metadata = meta;
            }
        }
        item
    }

    /// Whether one more message to the peer fits under the high-water
    /// mark, for patterns that drop (or refuse) a message when it does not
    /// rather than wait: a full pipe is first written out by the
    /// connection's engine on this thread, or, when the I/O thread holds
    /// the engine mid-turn, may go up to twice its HWM ([`Flush`]), so what
    /// is dropped is what the peer did not take, not what the I/O thread
    /// had not yet reached (see `reactor/engine/mod.rs`). Never waits.
    /// Blocking patterns ask `tx.has_room()` and sleep until the I/O
    /// thread makes room.
    #[inline]
    pub(crate) fn has_room_to_send(&self) -> bool {
        if self.tx.has_room() {
            return true;
        }
        match self.peer_io.as_ref().map(|peer| peer.flush(&self.tx)) {
            Some(Flush::Busy) => self.tx.has_overdraft_room(),
            // Look again even when the engine wrote nothing here: the
            // session may have emptied the pipe since the first look (the
            // loom model in reactor/engine/link.rs found that drop).
            Some(Flush::Wrote | Flush::Nothing) => self.tx.has_room(),
            None => false,
        }
    }

    /// Whether the pipe can be forgotten: the peer is gone and everything
    /// it sent has been read. (A peer that closes stops reading at the
    /// same moment, but what it sent before must still be delivered.)
    pub(crate) fn is_dead(&self) -> bool {
        self.rx.is_finished()
    }

    /// Asks the connection behind the pipe, if any, to read what the peer
    /// sent on the calling thread. Returns whether anything arrived.
    ///
    /// The queue's wake-up is stopped first: what the pull delivers is
    /// pushed on the caller's thread, which is awake. The caller must look
    /// at the queue again afterwards ([`Queue::pop`] re-arms the wake-up
    /// when it finds the queue empty), or it could sleep through a push
    /// the I/O thread made meanwhile.
    pub(crate) fn pull(&self) -> bool {
        let Some(peer) = self.peer_io.as_ref() else {
            return false;
        };
        self.rx.stop_waiting();
        peer.pull(&self.rx)
    }

    /// What the caller may sleep on while it waits for this pipe's input,
    /// beside the socket's signal (see [`PullWait`]).
    pub(crate) fn pull_wait(&self) -> Option<Arc<dyn PullWait>> {
        self.peer_io.as_ref()?.pull_wait(&self.rx)
    }

    /// Closes our side: the peer's end sees the end of its inbound queue,
    /// and anything it still sends is dropped.
    pub(crate) fn close(&self) {
        self.tx.close_writer();
        self.rx.close_reader();
    }
}
