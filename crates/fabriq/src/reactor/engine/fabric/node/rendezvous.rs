//! Rendezvous: frames larger than a page, lent to the peer to read, and
//! the reads of those the peer lends.

use super::*;

impl Node {
    /// Registers `bytes` for the peer to read.
    pub(crate) fn lend(&self, bytes: Bytes) -> Result<fabriq_ofi::Lent, String> {
        let domain = self.lock().domain.clone();
        fabriq_ofi::Lent::new(&domain, bytes).map_err(|e| e.to_string())
    }

    /// Posts a read of `len` bytes the peer `src` lent, for connection
    /// `key`; the data comes back through [`Node::take_read`]. Returns
    /// false when the provider is busy (try again later).
    pub(crate) fn read(
        &self,
        key: u32,
        src: FiAddr,
        len: usize,
        addr: u64,
        rkey: u64,
    ) -> Result<bool, String> {
        // Mapped and registered before the lock is taken, placed like the
        // lent bytes within a page (only addr's low bits count) so that
        // the copy runs aligned.
        let buf = self
            .reads_pool
            .get_placed(len, addr)
            .map_err(|e| e.to_string())?;
        let mut s = self.lock();
        match s.ep.read(buf, src, addr, rkey, u64::from(key)) {
            Ok(()) => {
                s.reads += 1;
                // Providers that copy at once (shm's CMA) complete it here.
                s.reap_pending();
                Ok(true)
            }
            Err(refused) if matches!(refused.error, fabriq_ofi::Error::Again { .. }) => {
                s.reap_pending();
                Ok(false)
            }
            Err(refused) => Err(refused.error.to_string()),
        }
    }

    /// The rendezvous read of `key` that completed, if any.
    pub(crate) fn take_read(&self, key: u32) -> Option<Bytes> {
        self.lock().conns.get_mut(&key)?.read.take()
    }
}
