//! PUB and XPUB: each message goes to every peer subscribed to a prefix of
//! its first frame. Filtering happens here, at the publisher. A peer whose
//! pipe is full misses the message (PUB never blocks).
//!
//! XPUB also hands subscriptions to the application as `0x01 + topic` /
//! `0x00 + topic` messages: a subscription when a topic gets its first
//! subscriber (every one with XPUB_VERBOSE), a cancellation when it loses
//! its last (every one with XPUB_VERBOSE_UNSUBSCRIBE), including when a
//! subscriber disconnects. Other messages from subscribers pass through.

use std::collections::VecDeque;

use bytes::{BufMut, Bytes, BytesMut};
use fabriq_zmtp::{Multipart, SocketType};

use super::{not_supported, ByPipe, Pattern, Pipes, Received, Topics};
use crate::error::{Error, Result};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd};

pub(crate) struct Publish {
    xpub: bool,
    pipes: Pipes,
    /// Each peer's topics (a set: a peer subscribes to a topic once).
    subs: ByPipe<Topics>,
    /// How many peers subscribe to each topic.
    all: Topics,
    /// Messages for an XPUB application.
    up: VecDeque<Multipart>,
}

impl Publish {
    pub(crate) fn new(xpub: bool) -> Publish {
        Publish {
            xpub,
            pipes: Pipes::default(),
            subs: ByPipe::default(),
            all: Topics::default(),
            up: VecDeque::new(),
        }
    }

    fn notify(&mut self, subscribe: bool, topic: &[u8]) {
        if self.xpub {
            let mut m = BytesMut::with_capacity(topic.len() + 1);
            m.put_u8(u8::from(subscribe));
            m.put_slice(topic);
            self.up.push_back([m.freeze()].into_iter().collect());
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
            while let Some(item) = self.pipes.list[i].rx.pop() {
                let topics = self.subs.entry(id).or_default();
                match item {
                    Item::Subscribe(t) => {
                        let new_for_peer = !topics.contains(&t) && topics.add(&t);
                        let new_overall = new_for_peer && self.all.add(&t);
                        if new_overall || (self.xpub && opts.xpub_verbose) {
                            self.notify(true, &t);
                        }
                    }
                    Item::Cancel(t) => {
                        if topics.remove_all(&t) {
                            let gone = self.all.remove(&t);
                            if gone || (self.xpub && opts.xpub_verbose_unsubscribe) {
                                self.notify(false, &t);
                            }
                        }
                    }
                    Item::Msg(m) => {
                        // Upstream messages reach an XPUB application,
                        // within its receive HWM; PUB drops them.
                        if self.xpub && self.up.len() < up_limit {
                            self.up.push_back(m);
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
            if let Some(welcome) = &opts.xpub_welcome_msg {
                pipe.tx
                    .push(Item::Msg([welcome.clone()].into_iter().collect()));
            }
        }
        self.subs.insert(pipe.id, Topics::default());
        self.pipes.push(pipe);
    }

    fn prune(&mut self, _: &Options) {
        for dead in self.pipes.prune() {
            if let Some(topics) = self.subs.remove(&dead.id) {
                for t in topics.iter() {
                    if self.all.remove(t) {
                        self.notify(false, &t.clone());
                    }
                }
            }
        }
    }

    fn start_send(&mut self, _: &Bytes, _: &Options) -> Result<()> {
        Ok(())
    }

    fn send(&mut self, msg: Multipart, opts: &Options) -> Result<()> {
        self.process_input(opts, true);
        let first: &[u8] = msg.first().map_or(&[], |b| &b[..]);
        // The last peer to take the message gets it without a copy of its
        // frame list (with one subscriber, no copy at all).
        let mut last = None;
        for (i, pipe) in self.pipes.list.iter().enumerate() {
            let matched = self.subs.get(&pipe.id).is_some_and(|t| t.matches(first));
            if matched && pipe.tx.has_room() {
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
        self.up
            .pop_front()
            .map(|msg| Received { msg, meta: None })
            .ok_or(Error::EAGAIN)
    }

    fn can_send(&mut self, _: &Options) -> bool {
        true
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
    }
}
