//! SUB and XSUB: fair-queued input, filtered by the subscribed prefixes
//! on a SUB (an XSUB passes everything, as libzmq's).
//! Subscriptions are counted; each subscribe is sent to every publisher,
//! a cancel only when its count drops to zero, and a new (or reconnected)
//! publisher gets every current topic once.
//!
//! SUB subscribes through the SUBSCRIBE/UNSUBSCRIBE options; XSUB through
//! `0x01 + topic` / `0x00 + topic` messages, and passes any other message
//! it is given upstream to every publisher.

use bytes::Bytes;
use fabriq_zmtp::{Multipart, Part, SocketType};

use super::{not_supported, Pattern, Pipes, PullWaits, Received, Topics};
use crate::error::{Error, Result};
use crate::options::Options;
use crate::pipe::{Item, PipeEnd};

pub(crate) struct Subscribe {
    xsub: bool,
    pipes: Pipes,
    topics: Topics,
}

impl Subscribe {
    pub(crate) fn new(xsub: bool) -> Subscribe {
        Subscribe {
            xsub,
            pipes: Pipes::default(),
            topics: Topics::default(),
        }
    }

    fn apply(&mut self, topic: &[u8], add: bool) {
        let forward = if add {
            self.topics.add(topic);
            true
        } else {
            self.topics.remove(topic)
        };
        if forward {
            let topic = Bytes::copy_from_slice(topic);
            for p in &self.pipes.list {
                p.tx.push(if add {
                    Item::Subscribe(topic.clone())
                } else {
                    Item::Cancel(topic.clone())
                });
            }
        }
    }
}

impl Pattern for Subscribe {
    fn attach(&mut self, pipe: PipeEnd, _: &Options) {
        for t in self.topics.iter() {
            pipe.tx.push(Item::Subscribe(t.clone()));
        }
        self.pipes.push(pipe);
    }

    fn prune(&mut self, _: &Options) {
        self.pipes.prune();
    }

    fn start_send(&mut self, _: &Part, _: &Options) -> Result<()> {
        if self.xsub {
            Ok(())
        } else {
            not_supported(SocketType::Sub, "send")
        }
    }

    fn send(&mut self, msg: Multipart, _: &Options) -> Result<()> {
        if msg.len() == 1 {
            match msg[0].first() {
                Some(1) => {
                    self.apply(&msg[0][1..], true);
                    return Ok(());
                }
                Some(0) => {
                    self.apply(&msg[0][1..], false);
                    return Ok(());
                }
                _ => {}
            }
        }
        for p in &self.pipes.list {
            if p.tx.has_room() {
                p.tx.push(Item::Msg(msg.clone()));
            }
        }
        Ok(())
    }

    fn recv(&mut self, opts: &Options) -> Result<Received> {
        while let Some((i, item)) = self.pipes.fair_recv() {
            let Item::Msg(msg) = item else { continue };
            let first = msg.first().map(|f| &f[..]).unwrap_or_default();
            // XSUB passes everything (libzmq's xsub has no filter: the
            // publishers filter); SUB keeps what matches, or with
            // INVERT_MATCHING what does not.
            if self.xsub || self.topics.matches(first) != opts.invert_matching {
                return Ok(Received {
                    msg,
                    meta: self.pipes.list[i].peer.metadata.clone(),
                });
            }
        }
        Err(Error::EAGAIN)
    }

    fn can_send(&mut self, _: &Options) -> bool {
        self.xsub
    }

    fn subscribe(&mut self, topic: &[u8], add: bool) -> Result<()> {
        if self.xsub {
            return crate::error::err(
                Error::EINVAL,
                "XSUB subscribes by sending 0x01+topic messages, not with the option",
            );
        }
        self.apply(topic, add);
        Ok(())
    }

    fn close_all(&mut self) {
        self.pipes.close_all();
    }

    fn pull_waits(&self, out: &mut PullWaits) {
        self.pipes.pull_waits(out);
    }
}
