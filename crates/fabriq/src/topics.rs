//! Subscription topics: prefixes with reference counts, as a publisher
//! matches them and as a subscriber's session remembers what it carried
//! (to replay after a reconnect).

use std::collections::HashMap;

use bytes::Bytes;

/// Topic prefixes with counts (two subscribes need two cancels).
#[derive(Debug, Default, Clone)]
pub(crate) struct Topics {
    counts: HashMap<Bytes, usize>,
    longest: usize,
}

impl Topics {
    /// Adds one reference; returns whether the topic is new.
    pub fn add(&mut self, topic: &[u8]) -> bool {
        self.longest = self.longest.max(topic.len());
        let c = self
            .counts
            .entry(Bytes::copy_from_slice(topic))
            .or_insert(0);
        *c += 1;
        *c == 1
    }

    /// Drops one reference; returns whether the topic is now gone.
    pub fn remove(&mut self, topic: &[u8]) -> bool {
        match self.counts.get_mut(topic) {
            Some(c) if *c > 1 => {
                *c -= 1;
                false
            }
            Some(_) => {
                self.counts.remove(topic);
                true
            }
            None => false,
        }
    }

    /// Whether the topic is subscribed.
    pub fn contains(&self, topic: &[u8]) -> bool {
        self.counts.contains_key(topic)
    }

    /// Removes a topic whatever its count; returns whether it was there.
    pub fn remove_all(&mut self, topic: &[u8]) -> bool {
        self.counts.remove(topic).is_some()
    }

    /// Whether some subscribed prefix starts `data`.
    pub fn matches(&self, data: &[u8]) -> bool {
        if self.counts.is_empty() {
            return false;
        }
        if self.counts.len() <= self.longest.min(data.len()) + 1 {
            self.counts.keys().any(|t| data.starts_with(t))
        } else {
            (0..=self.longest.min(data.len())).any(|n| self.counts.contains_key(&data[..n]))
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Bytes> {
        self.counts.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::Topics;

    #[test]
    fn topics_match_prefixes_and_count() {
        let mut t = Topics::default();
        assert!(!t.matches(b"anything"));
        assert!(t.add(b"ab"));
        assert!(!t.add(b"ab"));
        assert!(t.matches(b"abc"));
        assert!(!t.matches(b"a"));
        assert!(!t.remove(b"ab"));
        assert!(t.matches(b"ab"));
        assert!(t.remove(b"ab"));
        assert!(!t.matches(b"ab"));
        t.add(b"");
        assert!(t.matches(b""));
        assert!(t.matches(b"zzz"));
        for i in 0..100u8 {
            t.add(&[b'x', i]);
        }
        assert!(t.matches(&[b'x', 42, 1]));
    }
}
