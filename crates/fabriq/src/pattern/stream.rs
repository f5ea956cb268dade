//! STREAM: raw TCP peers, as libzmq's stream.cpp. Every message in is
//! `[routing id, data]`: the bytes one read brought, or an empty frame
//! when the peer connected (the engine delivers it) or went away (this
//! pattern adds it once the pipe's messages are read). Every message out
//! is `[routing id, data]`: the bytes are written as they are, and empty
//! data closes that connection (`ZMQ_STREAM_NOTIFY` off: no empty
//! messages in). Routing ids are generated (`0x00` and a
//! 32-bit counter); an unknown one is EHOSTUNREACH and a full peer EAGAIN,
//! always (a STREAM is always "mandatory").

use std::collections::VecDeque;

use bytes::Bytes;
use fabriq_zmtp::Multipart;
use fabriq_zmtp::Part;

use super::routing::RoutingIds;
use super::{Pattern, Pipes, PullWaits, Received};
use crate::error::{err, Error, Result};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd, PipeId};

pub(crate) struct Stream {
    pipes: Pipes,
    ids: RoutingIds,
    /// Destination of the message being sent.
    target: Option<PipeId>,
    /// Disconnection notices, `[id, ""]`, for peers that went away.
    gone: VecDeque<Bytes>,
    /// The id generated for the newest peer.
    last_generated: Option<Bytes>,
}

impl Stream {
    pub(crate) fn new() -> Stream {
        Stream {
            pipes: Pipes::default(),
            ids: RoutingIds::new(),
            target: None,
            gone: VecDeque::new(),
            last_generated: None,
        }
    }

    fn forget(&mut self, pipe: PipeId) -> Option<Bytes> {
        self.ids.forget(pipe)
    }
}

impl Pattern for Stream {
    fn attach(&mut self, pipe: PipeEnd, _: &Options) {
        // A connect's peer named with CONNECT_ROUTING_ID keeps that name
        // (unless it is taken); every other peer gets a generated one.
        let named = &pipe.peer.identity;
        let id = if named.is_empty() || self.ids.pipe(named).is_some() {
            let id = self.ids.generate();
            self.last_generated = Some(id.clone());
            id
        } else {
            named.clone()
        };
        self.ids.insert(id, pipe.id);
        self.pipes.push(pipe);
    }

    fn prune(&mut self, _: &Options) {
        for dead in self.pipes.prune() {
            if let Some(id) = self.forget(dead.id) {
                self.gone.push_back(id);
            }
        }
    }

    fn start_send(&mut self, first: &Part, _: &Options) -> Result<()> {
        self.target = None;
        let Some(pipe) = self.ids.pipe(first) else {
            return err(Error::EHOSTUNREACH, "STREAM: no peer with this routing id");
        };
        let has_room = self
            .pipes
            .index_of(pipe)
            .is_some_and(|i| self.pipes.list[i].has_room_to_send());
        if !has_room {
            return Err(Error::EAGAIN);
        }
        self.target = Some(pipe);
        Ok(())
    }

    fn send(&mut self, mut msg: Multipart, _: &Options) -> Result<()> {
        let Some(pipe) = self.target.take() else {
            return Ok(());
        };
        let Some(i) = self.pipes.index_of(pipe) else {
            return Ok(());
        };
        if msg.len() < 2 {
            return Ok(()); // a routing id alone: nothing to write
        }
        let data = msg.remove(1);
        if data.is_empty() {
            // [id, ""]: close the connection (no notice for it, as libzmq).
            let p = self.pipes.remove(i);
            p.close();
            self.forget(p.id);
            let _ = self.pipes.prune();
            return Ok(());
        }
        self.pipes.list[i]
            .tx
            .push(Item::Msg([data].into_iter().collect()));
        Ok(())
    }

    fn recv(&mut self, opts: &Options) -> Result<Received> {
        while let Some((i, item)) = self.pipes.fair_recv() {
            let from = self.pipes.list[i].id;
            let meta = self.pipes.list[i].peer.metadata.clone();
            let Item::Msg(msg) = item else { continue };
            let Some(id) = self.ids.id(from) else {
                continue;
            };
            let data = msg.into_iter().next().unwrap_or_default();
            if data.is_empty() && !opts.stream_notify {
                continue; // the connect notice, not wanted
            }
            let mut out = Multipart::with_capacity(2);
            out.push(Part::from(id.clone()));
            out.push(data);
            return Ok(Received { msg: out, meta });
        }
        if !opts.stream_notify {
            self.gone.clear();
        }
        if let Some(id) = self.gone.pop_front() {
            return Ok(Received {
                msg: [Part::from(id), Part::new()].into_iter().collect(),
                meta: None,
            });
        }
        Err(Error::EAGAIN)
    }

    fn can_send(&mut self, _: &Options) -> bool {
        true
    }

    fn last_generated_id(&self) -> Option<Bytes> {
        self.last_generated.clone()
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
        self.ids.clear();
    }

    fn pull_waits(&self, out: &mut PullWaits) {
        self.pipes.pull_waits(out);
    }
}
