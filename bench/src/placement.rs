//! Placement: which CPUs each worker process of a trial may run on.
//!
//! The default is **unpinned**: no affinity is set, every process (and
//! every thread of it, the libraries' I/O threads too) is free to run on
//! any CPU, as users run. The other modes set a process's affinity to a
//! *set* of CPUs; only the modes named `*-core` confine a multi-threaded
//! process to one core, and they say so.

use crate::cli::Pin;

/// Which side of a trial a process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The sending / client process (inproc: the whole worker).
    Sending,
    /// A receiving / server process.
    Receiving,
}

/// The CPUs of one worker process; an empty set means no affinity is set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuSets {
    /// The process (set on its main thread at start, so inherited by every
    /// thread it starts, the library's I/O thread included).
    pub process: Vec<usize>,
    /// An inproc worker's receiving threads.
    pub peer_threads: Vec<usize>,
}

/// A run's placement mode over the CPUs this process may use.
#[derive(Debug, Clone)]
pub struct Placement {
    /// The mode.
    pub mode: Pin,
    /// The usable CPUs (the runner's affinity mask), in order.
    pub cpus: Vec<usize>,
}

impl Placement {
    /// The placement `mode` over `cpus`.
    pub fn new(mode: Pin, cpus: Vec<usize>) -> Placement {
        Placement { mode, cpus }
    }

    /// The mode in force: `mode`'s name, or `unpinned` where the affinity
    /// mask could not be read (then nothing is pinned).
    pub fn effective_name(&self) -> &'static str {
        if self.cpus.is_empty() {
            Pin::Unpinned.name()
        } else {
            self.mode.name()
        }
    }

    /// The two CPUs of `split-core` (one if there is only one).
    fn split(&self) -> Option<(usize, usize)> {
        let a = *self.cpus.first()?;
        Some((a, self.cpus.get(1).copied().unwrap_or(a)))
    }

    /// The single CPUs of the sending and receiving sides in the `*-core`
    /// modes (None otherwise).
    pub fn side_cpus(&self) -> (Option<usize>, Option<usize>) {
        match (self.mode, self.split()) {
            (Pin::SplitCore, Some((a, b))) => (Some(a), Some(b)),
            (Pin::SameCore, Some((a, _))) => (Some(a), Some(a)),
            _ => (None, None),
        }
    }

    /// The placement in words, as the header and the JSON give it.
    pub fn describe(&self) -> String {
        let cpus = &self.cpus;
        match (self.mode, self.split()) {
            (Pin::Unpinned, _) => {
                "unpinned: every process free to run on any CPU, no affinity set".to_string()
            }
            (_, None) => format!(
                "unpinned: --pin {} asked, but the affinity mask could not be read",
                self.mode.name()
            ),
            (Pin::Spread, _) => format!(
                "spread: each process on CPUs of its own, one per busy thread, when the {} \
                 usable CPUs {cpus:?} suffice for a trial's processes, else on all of them",
                cpus.len()
            ),
            (Pin::SplitCore, Some((a, b))) => format!(
                "split-core: every thread of the sender/client process on CPU {a}, every thread \
                 of the receiver/server processes on CPU {b} (inproc: sending thread on {a}, \
                 receiving threads on {b}), for every implementation"
            ),
            (Pin::SameCore, Some((a, _))) => format!(
                "same-core: every thread of every process on CPU {a}, for every implementation"
            ),
        }
    }

    /// The CPU sets of a trial's processes; `procs[i]` is the i-th
    /// process's side and busy threads.
    pub fn assign(&self, procs: &[(Side, usize)]) -> Vec<CpuSets> {
        let same = |set: Vec<usize>| CpuSets {
            process: set.clone(),
            peer_threads: set,
        };
        let Some((a, b)) = self.split() else {
            return vec![CpuSets::default(); procs.len()];
        };
        match self.mode {
            Pin::Unpinned => vec![CpuSets::default(); procs.len()],
            Pin::SameCore => vec![same(vec![a]); procs.len()],
            Pin::SplitCore => procs
                .iter()
                .map(|(side, _)| match side {
                    Side::Sending => CpuSets {
                        process: vec![a],
                        peer_threads: vec![b],
                    },
                    Side::Receiving => same(vec![b]),
                })
                .collect(),
            Pin::Spread => {
                let need: usize = procs.iter().map(|(_, t)| (*t).max(1)).sum();
                if need > self.cpus.len() {
                    return vec![same(self.cpus.clone()); procs.len()];
                }
                let mut next = 0;
                procs
                    .iter()
                    .map(|(_, t)| {
                        let set = self.cpus[next..next + (*t).max(1)].to_vec();
                        next += (*t).max(1);
                        same(set)
                    })
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRIAL: &[(Side, usize)] = &[(Side::Sending, 2), (Side::Receiving, 2)];

    #[test]
    fn unpinned_sets_nothing() {
        let p = Placement::new(Pin::Unpinned, vec![0, 1]);
        assert!(p.assign(TRIAL).iter().all(|s| s.process.is_empty()));
        assert_eq!(p.side_cpus(), (None, None));
        assert!(p.describe().starts_with("unpinned"));
    }

    #[test]
    fn spread_never_puts_a_two_thread_process_on_one_core() {
        // Two CPUs, two 2-thread processes: both get both CPUs.
        let p = Placement::new(Pin::Spread, vec![0, 1]);
        for s in p.assign(TRIAL) {
            assert_eq!(s.process, vec![0, 1]);
        }
        // Four CPUs: two each, disjoint.
        let p = Placement::new(Pin::Spread, vec![0, 1, 2, 3]);
        let sets = p.assign(TRIAL);
        assert_eq!(sets[0].process, vec![0, 1]);
        assert_eq!(sets[1].process, vec![2, 3]);
    }

    #[test]
    fn core_modes_say_one_core() {
        let p = Placement::new(Pin::SplitCore, vec![0, 1]);
        let sets = p.assign(TRIAL);
        assert_eq!(
            (sets[0].process.clone(), sets[1].process.clone()),
            (vec![0], vec![1])
        );
        assert_eq!(p.side_cpus(), (Some(0), Some(1)));
        let p = Placement::new(Pin::SameCore, vec![0, 1]);
        assert!(p.assign(TRIAL).iter().all(|s| s.process == vec![0]));
    }
}
