//! One process's samples as a session sums them, the same for the program, each child the
//! session follows and each process of a system-wide run: its user samples by address, its
//! ticks, its stacks, its samples in time order. What only the program has (the Minix bins, the
//! kernel's addresses, its threads) is the session's.

use std::collections::BTreeMap;

use crate::sample::{CallStack, Sample, Sampled};
use crate::timeline::Timeline;

/// One more at `key`.
pub(crate) fn add_one<K: Ord>(counts: &mut BTreeMap<K, u64>, key: K) {
    let c = counts.entry(key).or_insert(0);
    *c = c.saturating_add(1);
}

/// A stack's ticks in the session, and its number among the timeline's stacks where its
/// samples were timed: found while the stack is at hand, so placing a long run's timeline
/// compares no stacks (tens of thousands of deep ones cost 30 ms of cache misses).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StackTicks {
    pub ticks: u64,
    pub timed: Option<u32>,
}

/// One process's samples, summed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessSamples {
    /// User-mode samples: runtime address -> ticks.
    pub user: BTreeMap<u64, u64>,
    pub user_ticks: u64,
    pub kernel_ticks: u64,
    /// The call stacks of the samples counted by address (user ones, and kernel ones the
    /// backend names), where the backend records them (runtime addresses, innermost first).
    pub stacks: BTreeMap<CallStack, StackTicks>,
    /// Its samples in time order, where the backend times them.
    pub timeline: Timeline,
}

impl ProcessSamples {
    /// Fold in one sample.
    pub fn add(&mut self, sample: Sample) {
        match sample.at {
            Sampled::User(ip) => {
                add_one(&mut self.user, ip);
                self.user_ticks = self.user_ticks.saturating_add(1);
            }
            Sampled::Kernel { .. } => self.kernel_ticks = self.kernel_ticks.saturating_add(1),
            Sampled::Blocked(_) => return,
        }
        let timed = self.timeline.push(&sample);
        if let Some(stack) = sample.stack.filter(|_| sample.at.is_named()) {
            // A lookup first: most samples repeat a stack, which is then not copied.
            match self.stacks.get_mut(&stack) {
                Some(c) => {
                    c.ticks = c.ticks.saturating_add(1);
                    c.timed = c.timed.or(timed);
                }
                None => {
                    self.stacks.insert(stack, StackTicks { ticks: 1, timed });
                }
            }
        }
    }

    /// Each stack with its ticks.
    pub fn stack_ticks(&self) -> impl Iterator<Item = (&CallStack, u64)> {
        self.stacks.iter().map(|(stack, c)| (stack, c.ticks))
    }

    /// Its samples so far, counted at address 0 with an empty (truncated) stack: what a process
    /// ran before an exec is not in the image it runs after. In time order, where it ran stays,
    /// not what it ran.
    pub fn forget_addresses(&mut self) {
        let user: u64 = self.user.values().fold(0, |n, &c| n.saturating_add(c));
        self.user.clear();
        if user > 0 {
            self.user.insert(0, user);
        }
        let stacked: u64 = self.stacks.values().fold(0, |n, c| n.saturating_add(c.ticks));
        self.stacks.clear();
        if stacked > 0 {
            self.stacks.insert(CallStack { frames: Vec::new(), truncated: true }, StackTicks { ticks: stacked, timed: None });
        }
        for e in &mut self.timeline.entries {
            if let Sampled::User(_) = e.at {
                e.at = Sampled::User(0);
            }
            e.stack = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_sums_its_samples_by_address_ticks_stack_and_time() {
        let mut p = ProcessSamples::default();
        let st = CallStack { frames: vec![0x1010, 0x1800], truncated: false };
        p.add(Sample::user(Some(5), 1, 0x1010, Some(st.clone())));
        p.add(Sample::user(None, 1, 0x1010, Some(st.clone())));
        // A kernel sample the backend does not name is a tick: its stack is not counted.
        p.add(Sample::kernel(Some(9), 1, 0xffff_ffff_8000_0000, false, Some(st.clone())));
        assert_eq!((p.user_ticks, p.kernel_ticks), (2, 1));
        assert_eq!(p.user, BTreeMap::from([(0x1010, 2)]));
        assert_eq!(p.stacks, BTreeMap::from([(st.clone(), StackTicks { ticks: 2, timed: Some(0) })]));
        assert_eq!(p.timeline.entries.len(), 2);
        p.forget_addresses();
        assert_eq!(p.user, BTreeMap::from([(0, 2)]));
        assert_eq!(p.stack_ticks().map(|(s, n)| (s.frames.len(), s.truncated, n)).collect::<Vec<_>>(), [(0, true, 2)]);
        assert!(p.timeline.entries.iter().all(|e| e.stack.is_none() && e.at != Sampled::User(0x1010)));
    }
}
