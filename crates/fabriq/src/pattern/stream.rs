//! STREAM: raw TCP peers, as libzmq's stream.cpp. Every message in is
//! `[routing id, data]`: the bytes one read brought, or an empty frame
//! when the peer connected (the engine delivers it) or went away (this
//! pattern adds it once the pipe's messages are read). Every message out
//! is `[routing id, data]`: the bytes are written as they are, and empty
//! data closes that connection. Routing ids are generated (`0x00` and a
//! 32-bit counter); an unknown one is EHOSTUNREACH and a full peer EAGAIN,
//! always (a STREAM is always "mandatory").

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;
use fabriq_zmtp::Multipart;

use super::{Pattern, Pipes, Received};
use crate::error::{err, Error, Result};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd, PipeId};

pub(crate) struct Stream {
    pipes: Pipes,
    by_id: HashMap<Bytes, PipeId>,
    id_of: HashMap<PipeId, Bytes>,
    next_generated: u32,
    /// Destination of the message being sent.
    target: Option<PipeId>,
    /// Disconnection notices, `[id, ""]`, for peers that went away.
    gone: VecDeque<Bytes>,
}

impl Stream {
    pub(crate) fn new() -> Stream {
        // libzmq starts generated ids at a random value.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        Stream {
            pipes: Pipes::default(),
            by_id: HashMap::new(),
            id_of: HashMap::new(),
            next_generated: seed,
            target: None,
            gone: VecDeque::new(),
        }
    }

    fn generate_id(&mut self) -> Bytes {
        loop {
            self.next_generated = self.next_generated.wrapping_add(1);
            let mut id = vec![0u8];
            id.extend_from_slice(&self.next_generated.to_be_bytes());
            let id = Bytes::from(id);
            if !self.by_id.contains_key(&id) {
                return id;
            }
        }
    }

    fn forget(&mut self, pipe: PipeId) -> Option<Bytes> {
        let id = self.id_of.remove(&pipe)?;
        self.by_id.remove(&id);
        Some(id)
    }
}

impl Pattern for Stream {
    fn attach(&mut self, pipe: PipeEnd, _: &Options) {
        let id = self.generate_id();
        self.by_id.insert(id.clone(), pipe.id);
        self.id_of.insert(pipe.id, id);
        self.pipes.push(pipe);
    }

    fn prune(&mut self, _: &Options) {
        for dead in self.pipes.prune() {
            if let Some(id) = self.forget(dead.id) {
                self.gone.push_back(id);
            }
        }
    }

    fn start_send(&mut self, first: &Bytes, _: &Options) -> Result<()> {
        self.target = None;
        let Some(&pipe) = self.by_id.get(first) else {
            return err(Error::EHOSTUNREACH, "STREAM: no peer with this routing id");
        };
        let has_room = self
            .pipes
            .index_of(pipe)
            .is_some_and(|i| self.pipes.list[i].tx.has_room());
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

    fn recv(&mut self, _: &Options) -> Result<Received> {
        while let Some((i, item)) = self.pipes.fair_recv() {
            let from = self.pipes.list[i].id;
            let meta = self.pipes.list[i].peer.metadata.clone();
            let Item::Msg(msg) = item else { continue };
            let Some(id) = self.id_of.get(&from) else {
                continue;
            };
            let mut out = Multipart::with_capacity(2);
            out.push(id.clone());
            out.push(msg.into_iter().next().unwrap_or_default());
            return Ok(Received { msg: out, meta });
        }
        if let Some(id) = self.gone.pop_front() {
            return Ok(Received {
                msg: [id, Bytes::new()].into_iter().collect(),
                meta: None,
            });
        }
        Err(Error::EAGAIN)
    }

    fn can_send(&mut self, _: &Options) -> bool {
        true
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
        self.by_id.clear();
        self.id_of.clear();
    }
}
