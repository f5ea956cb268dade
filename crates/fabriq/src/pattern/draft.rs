//! libzmq's draft socket types, all single-part:
//!
//! - CLIENT: DEALER's round robin out and fair queue in.
//! - SERVER: fair-queued input, each message tagged with its peer's 32-bit
//!   routing id; output to the peer with the routing id the message names
//!   (EHOSTUNREACH if none, EAGAIN if that peer's pipe is full).
//! - SCATTER / GATHER: PUSH / PULL.
//! - CHANNEL: PAIR.
//! - RADIO: each message goes to every peer that joined its group (exact
//!   match, not a prefix); a full peer misses it. On pipes a message is
//!   `[group, body]`, which is also how libzmq's `radio_session_t` frames
//!   it on the wire (the group frame with MORE, then the body).
//! - RADIO over `udp://`: the pipe to the udp socket takes every group
//!   (`PeerMeta::all_groups`); DISHes filter on receive, as in libzmq.
//! - DISH: joins and leaves groups (pipes carry them as `Item::Subscribe`
//!   / `Item::Cancel`, the engine writes JOIN / LEAVE commands); receives
//!   `[group, body]` and keeps only the groups it joined.
//!
//! What every single-part type receives as a multipart message is dropped,
//! as libzmq does. Sending multipart is refused above, in `socket/draft.rs`.
//!
//! SERVER and DISH hand the socket a two-frame message, routing id (4
//! bytes, big endian) or group first; [`take_prefix`] and
//! [`apply_prefix`] turn it into a [`Message`] with `routing_id` /
//! `group` set. SERVER and RADIO take the same shape to send.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use fabriq_zmtp::{Multipart, Part, SocketType};

use super::{not_supported, Pattern, Pipes, PullWaits, Received};
use crate::error::{err, Error, Result};
use crate::message::{Message, GROUP_MAX_LENGTH};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd, PipeId};

/// A pattern whose input keeps single-part messages only.
pub(crate) struct SinglePart<P>(pub P);

impl<P: Pattern> Pattern for SinglePart<P> {
    fn attach(&mut self, pipe: PipeEnd, opts: &Options) {
        self.0.attach(pipe, opts);
    }

    fn prune(&mut self, opts: &Options) {
        self.0.prune(opts);
    }

    fn start_send(&mut self, first: &Part, opts: &Options) -> Result<()> {
        self.0.start_send(first, opts)
    }

    fn send(&mut self, msg: Multipart, opts: &Options) -> Result<()> {
        self.0.send(msg, opts)
    }

    fn recv(&mut self, opts: &Options) -> Result<Received> {
        loop {
            let r = self.0.recv(opts)?;
            if r.msg.len() == 1 {
                return Ok(r);
            }
        }
    }

    fn can_send(&mut self, opts: &Options) -> bool {
        self.0.can_send(opts)
    }

    fn close_all(&mut self) {
        self.0.close_all();
    }

    fn pull_waits(&self, out: &mut PullWaits) {
        self.0.pull_waits(out);
    }
}

/// SERVER: routing ids are given to peers as they attach, counting up
/// from a value taken from the clock (libzmq starts at a random one),
/// skipping 0 and ids in use.
pub(crate) struct Server {
    pipes: Pipes,
    by_id: HashMap<u32, PipeId>,
    id_of: HashMap<PipeId, u32>,
    next_id: u32,
    target: Option<PipeId>,
    /// The id given by the last `attach`.
    last_id: Option<u32>,
}

impl Server {
    pub(crate) fn new() -> Server {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        Server {
            pipes: Pipes::default(),
            by_id: HashMap::new(),
            id_of: HashMap::new(),
            next_id: seed,
            target: None,
            last_id: None,
        }
    }
}

/// The routing id frame SERVER puts before a received body.
pub(crate) fn routing_id_frame(id: u32) -> Part {
    Part::copy_from_slice(&id.to_be_bytes())
}

/// The routing id in a frame made by [`routing_id_frame`].
pub(crate) fn parse_routing_id(frame: &[u8]) -> Option<u32> {
    <[u8; 4]>::try_from(frame).ok().map(u32::from_be_bytes)
}

/// Takes the routing id (SERVER) or group (DISH) frame off the front of
/// a received message.
pub(crate) fn take_prefix(ty: SocketType, frames: &mut Multipart) -> Option<Part> {
    match ty {
        SocketType::Server | SocketType::Peer | SocketType::Dish if frames.len() == 2 => {
            Some(frames.remove(0))
        }
        _ => None,
    }
}

/// Puts a prefix taken by [`take_prefix`] on the received message.
pub(crate) fn apply_prefix(ty: SocketType, msg: &mut Message, prefix: Part) {
    match ty {
        SocketType::Server | SocketType::Peer => {
            if let Some(id) = parse_routing_id(&prefix) {
                msg.set_routing_id_raw(id);
            }
        }
        SocketType::Dish => msg.set_group_raw(prefix.into_bytes()),
        _ => {}
    }
}

impl Pattern for Server {
    fn attach(&mut self, pipe: PipeEnd, _: &Options) {
        let id = loop {
            self.next_id = self.next_id.wrapping_add(1);
            if self.next_id != 0 && !self.by_id.contains_key(&self.next_id) {
                break self.next_id;
            }
        };
        self.by_id.insert(id, pipe.id);
        self.id_of.insert(pipe.id, id);
        self.last_id = Some(id);
        self.pipes.push(pipe);
    }

    fn last_routing_id(&self) -> Option<u32> {
        self.last_id
    }

    fn prune(&mut self, _: &Options) {
        for dead in self.pipes.prune() {
            if let Some(id) = self.id_of.remove(&dead.id) {
                self.by_id.remove(&id);
            }
        }
    }

    fn start_send(&mut self, first: &Part, _: &Options) -> Result<()> {
        self.target = None;
        let pipe = parse_routing_id(first)
            .and_then(|id| self.by_id.get(&id).copied())
            .and_then(|p| self.pipes.index_of(p).map(|i| (p, i)));
        match pipe {
            None => err(Error::EHOSTUNREACH, "SERVER: no peer with this routing id"),
            Some((p, i)) if self.pipes.list[i].has_room_to_send() => {
                self.target = Some(p);
                Ok(())
            }
            Some(_) => Err(Error::EAGAIN),
        }
    }

    fn send(&mut self, mut msg: Multipart, _: &Options) -> Result<()> {
        let Some(pipe) = self.target.take() else {
            return Ok(());
        };
        if msg.len() != 2 {
            return Ok(());
        }
        msg.remove(0);
        super::push::push_to(&self.pipes, Some(pipe), msg);
        Ok(())
    }

    fn recv(&mut self, _: &Options) -> Result<Received> {
        while let Some((i, item)) = self.pipes.fair_recv() {
            let Item::Msg(msg) = item else { continue };
            if msg.len() != 1 {
                continue;
            }
            let from = self.pipes.list[i].id;
            let Some(&id) = self.id_of.get(&from) else {
                continue;
            };
            let mut out = Multipart::with_capacity(2);
            out.push(routing_id_frame(id));
            out.extend(msg);
            return Ok(Received {
                msg: out,
                meta: self.pipes.list[i].peer.metadata.clone(),
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

    fn pull_waits(&self, out: &mut PullWaits) {
        self.pipes.pull_waits(out);
    }
}

/// RADIO: each peer's joined groups.
#[derive(Default)]
pub(crate) struct Radio {
    pipes: Pipes,
    groups: HashMap<PipeId, HashSet<Bytes>>,
    /// Pipes that take every group (`udp://`: the DISHes filter).
    all_groups: HashSet<PipeId>,
}

impl Radio {
    /// Applies the joins and leaves peers have sent; anything else a peer
    /// sends is dropped (libzmq's RADIO reads nothing else).
    fn process_input(&mut self) {
        for pipe in &mut self.pipes.list {
            if pipe.rx.len() == 0 {
                continue;
            }
            let groups = self.groups.entry(pipe.id).or_default();
            while let Some(item) = pipe.pop() {
                match item {
                    Item::Subscribe(g) => {
                        groups.insert(g);
                    }
                    Item::Cancel(g) => {
                        groups.remove(&g);
                    }
                    Item::Msg(_) => {}
                }
            }
        }
    }
}

impl Pattern for Radio {
    fn attach(&mut self, pipe: PipeEnd, _: &Options) {
        if pipe.peer.all_groups {
            self.all_groups.insert(pipe.id);
        }
        self.groups.insert(pipe.id, HashSet::new());
        self.pipes.push(pipe);
    }

    fn prune(&mut self, _: &Options) {
        for dead in self.pipes.prune() {
            self.groups.remove(&dead.id);
            self.all_groups.remove(&dead.id);
        }
    }

    fn start_send(&mut self, _: &Part, _: &Options) -> Result<()> {
        Ok(())
    }

    fn send(&mut self, msg: Multipart, _: &Options) -> Result<()> {
        self.process_input();
        let Some(group) = msg.first() else {
            return Ok(());
        };
        for pipe in &self.pipes.list {
            let joined = self.all_groups.contains(&pipe.id)
                || self
                    .groups
                    .get(&pipe.id)
                    .is_some_and(|g| g.contains(&group[..]));
            if joined && pipe.has_room_to_send() {
                pipe.tx.push(Item::Msg(msg.clone()));
            }
        }
        Ok(())
    }

    fn recv(&mut self, _: &Options) -> Result<Received> {
        not_supported(SocketType::Radio, "receive")
    }

    fn can_send(&mut self, _: &Options) -> bool {
        true
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
    }
}

/// DISH: the groups joined, sent to every RADIO (and again to each new
/// one).
#[derive(Default)]
pub(crate) struct Dish {
    pipes: Pipes,
    groups: HashSet<Bytes>,
}

impl Pattern for Dish {
    fn attach(&mut self, pipe: PipeEnd, _: &Options) {
        for g in &self.groups {
            pipe.tx.push(Item::Subscribe(g.clone()));
        }
        self.pipes.push(pipe);
    }

    fn prune(&mut self, _: &Options) {
        self.pipes.prune();
    }

    fn start_send(&mut self, _: &Part, _: &Options) -> Result<()> {
        not_supported(SocketType::Dish, "send")
    }

    fn send(&mut self, _: Multipart, _: &Options) -> Result<()> {
        not_supported(SocketType::Dish, "send")
    }

    fn recv(&mut self, _: &Options) -> Result<Received> {
        while let Some((i, item)) = self.pipes.fair_recv() {
            let Item::Msg(msg) = item else { continue };
            // [group, body], from a RADIO that sends only what we joined;
            // a leave may still be on its way.
            if msg.len() == 2 && self.groups.contains(&msg[0][..]) {
                return Ok(Received {
                    msg,
                    meta: self.pipes.list[i].peer.metadata.clone(),
                });
            }
        }
        Err(Error::EAGAIN)
    }

    fn can_send(&mut self, _: &Options) -> bool {
        false
    }

    fn join(&mut self, group: &[u8], join: bool) -> Result<()> {
        if group.len() > GROUP_MAX_LENGTH {
            return err(Error::EINVAL, "a group is at most 255 bytes");
        }
        let group = Bytes::copy_from_slice(group);
        let changed = if join {
            self.groups.insert(group.clone())
        } else {
            self.groups.remove(&group)
        };
        if !changed {
            return err(
                Error::EINVAL,
                if join {
                    "DISH: this group is already joined"
                } else {
                    "DISH: this group was not joined"
                },
            );
        }
        for p in &self.pipes.list {
            p.tx.push(if join {
                Item::Subscribe(group.clone())
            } else {
                Item::Cancel(group.clone())
            });
        }
        Ok(())
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
    }

    fn pull_waits(&self, out: &mut PullWaits) {
        self.pipes.pull_waits(out);
    }
}
