//! The routing ids of ROUTER and STREAM: which pipe answers to which id.

use std::collections::HashMap;

use bytes::Bytes;

use crate::pipe::PipeId;

/// A two-way map between routing ids and pipes, and the generator of the
/// ids given to peers that announce none: a zero byte and a 32-bit
/// counter, as libzmq's ROUTER makes them, starting at a value taken
/// from the clock (libzmq starts at a random one) and skipping ids in use.
#[derive(Debug)]
pub(crate) struct RoutingIds {
    by_id: HashMap<Bytes, PipeId>,
    id_of: HashMap<PipeId, Bytes>,
    next_generated: u32,
}

impl RoutingIds {
    pub(crate) fn new() -> RoutingIds {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        RoutingIds {
            by_id: HashMap::new(),
            id_of: HashMap::new(),
            next_generated: seed,
        }
    }

    /// A fresh id, in use by no pipe.
    pub(crate) fn generate(&mut self) -> Bytes {
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

    /// Records that `pipe` answers to `id`.
    pub(crate) fn insert(&mut self, id: Bytes, pipe: PipeId) {
        self.by_id.insert(id.clone(), pipe);
        self.id_of.insert(pipe, id);
    }

    /// The pipe that answers to `id`.
    pub(crate) fn pipe(&self, id: &[u8]) -> Option<PipeId> {
        self.by_id.get(id).copied()
    }

    /// The id `pipe` answers to.
    pub(crate) fn id(&self, pipe: PipeId) -> Option<&Bytes> {
        self.id_of.get(&pipe)
    }

    /// Forgets `pipe`; returns the id it had.
    pub(crate) fn forget(&mut self, pipe: PipeId) -> Option<Bytes> {
        let id = self.id_of.remove(&pipe)?;
        self.by_id.remove(&id);
        Some(id)
    }

    pub(crate) fn clear(&mut self) {
        self.by_id.clear();
        self.id_of.clear();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_skip_those_in_use_and_forget_frees_both_ways() {
        let mut ids = RoutingIds::new();
        ids.next_generated = u32::MAX - 1;
        let taken = Bytes::from_static(&[0, 0, 0, 0, 0]);
        ids.insert(taken.clone(), 7);
        // MAX, then 0 (taken, skipped), then 1.
        assert_eq!(&ids.generate()[..], &[0, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(&ids.generate()[..], &[0, 0, 0, 0, 1]);
        assert_eq!(ids.pipe(&taken), Some(7));
        assert_eq!(ids.id(7), Some(&taken));
        assert_eq!(ids.forget(7), Some(taken.clone()));
        assert_eq!((ids.pipe(&taken), ids.id(7)), (None, None));
        assert_eq!(ids.forget(7), None);
    }
}
