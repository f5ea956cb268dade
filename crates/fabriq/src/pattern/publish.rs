//! PUB and XPUB: each message goes to every peer subscribed to a prefix of
//! its first frame. Filtering happens here, at the publisher. A peer whose
//! pipe is full misses the message (PUB never blocks).
//!
//! XPUB also hands subscriptions to the application as `0x01 + topic` /
//! `0x00 + topic` messages: a subscription when a topic gets its first
//! subscriber (every one with XPUB_VERBOSE), a cancellation when it loses
//! its last or was not subscribed by that peer (every one with
//! XPUB_VERBOSER), including when a subscriber disconnects. Other messages
//! from subscribers pass through. As libzmq 4.3's xpub.cpp:
//!
//! - INVERT_MATCHING: a message goes to the peers none of whose
//!   subscriptions match it instead.
//! - XPUB_MANUAL: a peer's (un)subscriptions are all handed up and not
//!   applied; the application applies them with `set_subscribe` /
//!   `set_unsubscribe` on the XPUB, for the peer whose (un)subscription it
//!   received last. A peer that goes away has a cancellation handed up for
//!   every topic it asked for.
//! - XPUB_NODROP: a message that a matching peer has no room for is
//!   refused with EAGAIN (blocking sends wait) instead of being dropped
//!   for that peer.

use std::collections::VecDeque;

use bytes::{BufMut, BytesMut};
use fabriq_zmtp::{Multipart, Part, SocketType};

use super::{not_supported, ByPipe, Pattern, Pipes, Received, Topics};
use crate::error::{Error, Result};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd, PipeId};

pub(crate) struct Publish {
    xpub: bool,
    pipes: Pipes,
    /// Each peer's topics (a set: a peer subscribes to a topic once).
    subs: ByPipe<Topics>,
    /// How many peers subscribe to each topic.
    all: Topics,
    /// Messages for an XPUB application; for (un)subscriptions under
    /// XPUB_MANUAL, `Some(the peer)` (`Some(None)`: one that went away).
    up: VecDeque<(Multipart, Option<Option<PipeId>>)>,
    /// XPUB_MANUAL: what each peer asked for.
    requested: ByPipe<Topics>,
    /// XPUB_MANUAL: the peer `set_subscribe` applies to.
    last_pipe: Option<PipeId>,
}

impl Publish {
    pub(crate) fn new(xpub: bool) -> Publish {
        Publish {
            xpub,
            pipes: Pipes::default(),
            subs: ByPipe::default(),
            all: Topics::default(),
            up: VecDeque::new(),
            requested: ByPipe::default(),
            last_pipe: None,
        }
    }

    fn notify(&mut self, subscribe: bool, topic: &[u8]) {
        self.notify_from(subscribe, topic, None);
    }

    fn notify_from(&mut self, subscribe: bool, topic: &[u8], from: Option<Option<PipeId>>) {
        if self.xpub {
            let mut m = BytesMut::with_capacity(topic.len() + 1);
            m.put_u8(u8::from(subscribe));
            m.put_slice(topic);
            self.up
                .push_back(([Part::from(m.freeze())].into_iter().collect(), from));
        }
    }

    /// Applies what subscribers have sent. With `skip_idle`, pipes that
    /// hold nothing are not looked into (a pop takes the pipe's locks, and
    /// a publisher sends far more often than its subscribers write);
    /// receiving (XPUB) looks into every pipe, which also registers it for
    /// a wake-up when something arrives.
    fn process_input(&mut self, opts: &Options, skip_idle: bool) {
        let up_limit = Options::hwm(opts.rcvhwm).max(1);
        for i in 0..self.pipes.list.len() {
            if skip_idle && self.pipes.list[i].rx.len() == 0 {
                continue;
            }
            let id = self.pipes.list[i].id;
            let manual = self.xpub && opts.xpub_manual;
            while let Some(item) = self.pipes.list[i].pop() {
                match item {
                    Item::Subscribe(t) if manual => {
                        let asked = self.requested.entry(id).or_default();
                        if !asked.contains(&t) {
                            asked.add(&t);
                        }
                        self.notify_from(true, &t, Some(Some(id)));
                    }
                    Item::Cancel(t) if manual => {
                        if let Some(asked) = self.requested.get_mut(&id) {
                            asked.remove_all(&t);
                        }
                        self.notify_from(false, &t, Some(Some(id)));
                    }
                    Item::Subscribe(t) => {
                        let topics = self.subs.entry(id).or_default();
                        let new_for_peer = !topics.contains(&t) && topics.add(&t);
                        let new_overall = new_for_peer && self.all.add(&t);
                        if new_overall || (self.xpub && opts.xpub_verbose) {
                            self.notify(true, &t);
                        }
                    }
                    Item::Cancel(t) => {
                        let topics = self.subs.entry(id).or_default();
                        // libzmq hands up every cancellation but those
                        // of a topic other peers still have (its trie
                        // says "values remain"), unless XPUB_VERBOSER.
                        let had = topics.remove_all(&t);
                        let gone = had && self.all.remove(&t);
                        if !had || gone || (self.xpub && opts.xpub_verbose_unsubscribe) {
                            self.notify(false, &t);
                        }
                    }
                    Item::Msg(m) => {
                        // Upstream messages reach an XPUB application,
                        // within its receive HWM; PUB drops them.
                        if self.xpub && self.up.len() < up_limit {
                            self.up.push_back((m, None));
                        }
                    }
                }
            }
        }
    }
}

impl Pattern for Publish {
    fn attach(&mut self, pipe: PipeEnd, opts: &Options) {
        if self.xpub {
            if let Some(welcome) = opts.xpub_welcome_msg.as_ref().filter(|w| !w.is_empty()) {
                pipe.tx.push(Item::Msg(
                    [Part::from(welcome.clone())].into_iter().collect(),
                ));
            }
        }
        self.subs.insert(pipe.id, Topics::default());
        self.pipes.push(pipe);
    }

    fn prune(&mut self, opts: &Options) {
        for dead in self.pipes.prune() {
            let applied = self.subs.remove(&dead.id).unwrap_or_default();
            let asked = self.requested.remove(&dead.id);
            if self.last_pipe == Some(dead.id) {
                self.last_pipe = None;
            }
            for t in applied.iter() {
                let gone = self.all.remove(t);
                if asked.is_none() && (gone || (self.xpub && opts.xpub_verbose_unsubscribe)) {
                    self.notify(false, &t.clone());
                }
            }
            // XPUB_MANUAL: every topic the peer asked for.
            for t in asked.iter().flat_map(|a| a.iter()) {
                self.notify_from(false, &t.clone(), Some(None));
            }
        }
    }

    fn start_send(&mut self, first: &Part, opts: &Options) -> Result<()> {
        if self.xpub && opts.xpub_nodrop {
            self.process_input(opts, true);
            let full = self.pipes.list.iter().any(|pipe| {
                self.subs.get(&pipe.id).is_some_and(|t| t.matches(first)) != opts.invert_matching
                    && !pipe.has_room_to_send()
            });
            if full {
                return Err(Error::EAGAIN);
            }
        }
        Ok(())
    }

    fn subscribe(&mut self, topic: &[u8], add: bool) -> Result<()> {
        // Only reached for an XPUB with XPUB_MANUAL (the socket checks):
        // the topic is applied for the peer whose (un)subscription was
        // received last; with none, nothing happens, as in libzmq.
        let Some(pipe) = self.last_pipe else {
            return Ok(());
        };
        let topics = self.subs.entry(pipe).or_default();
        if add {
            if !topics.contains(topic) && topics.add(topic) {
                self.all.add(topic);
            }
        } else if topics.remove_all(topic) {
            self.all.remove(topic);
        }
        Ok(())
    }

    fn send(&mut self, msg: Multipart, opts: &Options) -> Result<()> {
        self.process_input(opts, true);
        let first: &[u8] = msg.first().map_or(&[], |b| &b[..]);
        // XPUB_NODROP: `start_send` found room (or the overdraft of a
        // connection its I/O thread holds) in every matching pipe; asking
        // again here could say no (the engine let go meanwhile and the
        // wire is full) and drop a message the send then reports as sent.
        let nodrop = self.xpub && opts.xpub_nodrop;
        // The last peer to take the message gets it without a copy of its
        // frame list (with one subscriber, no copy at all).
        let mut last = None;
        for (i, pipe) in self.pipes.list.iter().enumerate() {
            // INVERT_MATCHING: the peers that do not match, as libzmq's
            // dist_t::reverse_match.
            let matched =
                self.subs.get(&pipe.id).is_some_and(|t| t.matches(first)) != opts.invert_matching;
            if matched && (nodrop || pipe.has_room_to_send()) {
                if let Some(prev) = last.replace(i) {
                    self.pipes.list[prev].tx.push(Item::Msg(msg.clone()));
                }
            }
        }
        if let Some(i) = last {
            self.pipes.list[i].tx.push(Item::Msg(msg));
        }
        Ok(())
    }

    fn recv(&mut self, opts: &Options) -> Result<Received> {
        if !self.xpub {
            return not_supported(SocketType::Pub, "receive");
        }
        self.process_input(opts, false);
        let (msg, from) = self.up.pop_front().ok_or(Error::EAGAIN)?;
        if let Some(pipe) = from {
            self.last_pipe = pipe;
        }
        Ok(Received { msg, meta: None })
    }

    fn can_send(&mut self, _: &Options) -> bool {
        true
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
    }
}
