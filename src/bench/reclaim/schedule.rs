//! The repetitions of one size and reclaim path, in the order they run.
//!
//! Each repetition is a [`Slot`]: unobserved (the reclaim and the clock
//! alone, pinned or not), probed (the gap probe on the reclaiming CPU, with
//! or without lookup contenders), or victims (nothing on the reclaiming CPU;
//! the victims of `--victims` on the others). They alternate, and the order
//! is reversed every other repetition, so that a drift of the machine over
//! the sweep hits every kind alike. Pure: `run` walks it.

use serde::{Deserialize, Serialize};

/// What one repetition measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Slot {
    /// The reclaim timed with nothing of ours running beside it; `pinned`
    /// false: the reclaiming task may run on any allowed CPU.
    Unobserved { pinned: bool },
    /// The gap probe on the reclaiming CPU and the control probe on
    /// another; `contenders` lookup threads on the other CPUs (0: none).
    Probed { contenders: usize },
    /// The victims on the other CPUs, timing their own operations; no
    /// probe, so that the probed figures stay as they are.
    Victims,
}

impl Slot {
    /// Whether the gap probe runs.
    pub(crate) fn observed(self) -> bool {
        matches!(self, Slot::Probed { .. })
    }

    /// Whether the reclaiming task is pinned to the reclaiming CPU.
    pub(crate) fn pinned(self) -> bool {
        !matches!(self, Slot::Unobserved { pinned: false })
    }

    /// Lookup threads running during the reclaim.
    pub(crate) fn contenders(self) -> usize {
        match self {
            Slot::Probed { contenders } => contenders,
            Slot::Unobserved { .. } | Slot::Victims => 0,
        }
    }
}

/// How many repetitions of each kind one size gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Counts {
    pub probed: u32,
    pub unobserved: u32,
    pub unpinned: u32,
    pub victims: u32,
    /// The contender counts each probed repetition runs with (`[0]`, or
    /// `[0, T]` with `--contend T`).
    pub contention: Vec<usize>,
}

/// The repetitions of one size and path: `(repetition index, slot)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Schedule(Vec<(u32, Slot)>);

impl Schedule {
    pub(crate) fn of(c: &Counts) -> Schedule {
        let rounds = c.probed.max(c.unobserved).max(c.unpinned).max(c.victims);
        let mut all = Vec::new();
        for rep in 0..rounds {
            let mut round: Vec<Slot> = Vec::new();
            if rep < c.unobserved {
                round.push(Slot::Unobserved { pinned: true });
            }
            if rep < c.unpinned {
                round.push(Slot::Unobserved { pinned: false });
            }
            if rep < c.probed {
                round.extend(c.contention.iter().map(|&contenders| Slot::Probed { contenders }));
            }
            if rep < c.victims {
                round.push(Slot::Victims);
            }
            if rep % 2 == 1 {
                round.reverse();
            }
            all.extend(round.into_iter().map(|s| (rep, s)));
        }
        Schedule(all)
    }

    pub(crate) fn slots(&self) -> &[(u32, Slot)] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(probed: u32, unobserved: u32, unpinned: u32, victims: u32, contention: &[usize]) -> Counts {
        Counts { probed, unobserved, unpinned, victims, contention: contention.to_vec() }
    }

    #[test]
    fn every_kind_gets_its_count_of_repetitions() {
        let s = Schedule::of(&counts(3, 2, 1, 2, &[0, 4]));
        let n = |f: &dyn Fn(Slot) -> bool| s.slots().iter().filter(|(_, x)| f(*x)).count();
        assert_eq!(n(&|x| x == Slot::Probed { contenders: 0 }), 3);
        assert_eq!(n(&|x| x == Slot::Probed { contenders: 4 }), 3);
        assert_eq!(n(&|x| x == Slot::Unobserved { pinned: true }), 2);
        assert_eq!(n(&|x| x == Slot::Unobserved { pinned: false }), 1);
        assert_eq!(n(&|x| x == Slot::Victims), 2);
        assert_eq!(s.slots().len(), 11);
    }

    #[test]
    fn the_order_is_reversed_every_other_repetition() {
        let s = Schedule::of(&counts(2, 2, 0, 2, &[0]));
        let slots: Vec<(u32, Slot)> = s.slots().to_vec();
        assert_eq!(
            slots,
            vec![
                (0, Slot::Unobserved { pinned: true }),
                (0, Slot::Probed { contenders: 0 }),
                (0, Slot::Victims),
                (1, Slot::Victims),
                (1, Slot::Probed { contenders: 0 }),
                (1, Slot::Unobserved { pinned: true }),
            ]
        );
    }

    #[test]
    fn no_victims_leaves_the_old_schedule() {
        let s = Schedule::of(&counts(3, 3, 3, 0, &[0]));
        assert!(s.slots().iter().all(|(_, x)| *x != Slot::Victims));
        assert_eq!(s.slots().len(), 9);
        assert_eq!(s.slots()[0], (0, Slot::Unobserved { pinned: true }));
        assert_eq!(s.slots()[1], (0, Slot::Unobserved { pinned: false }));
        assert_eq!(s.slots()[2], (0, Slot::Probed { contenders: 0 }));
    }

    #[test]
    fn slots_say_what_runs() {
        assert!(Slot::Probed { contenders: 2 }.observed());
        assert!(!Slot::Victims.observed());
        assert!(Slot::Victims.pinned());
        assert!(!Slot::Unobserved { pinned: false }.pinned());
        assert_eq!(Slot::Probed { contenders: 2 }.contenders(), 2);
        assert_eq!(Slot::Victims.contenders(), 0);
    }
}
