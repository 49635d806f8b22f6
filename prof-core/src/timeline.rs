//! The run in time order: every sample of the program with its time and thread, and every look
//! that found one of its threads blocked (`--off-cpu`), so a report can be of any window of
//! the run and a timeline can show its phases. The session's aggregates (bins, samples,
//! stacks) are sums of the same [`Sample`]s; this keeps what they lose, the order.
//!
//! Times are the backend's clock (Linux: the perf records' CLOCK_MONOTONIC), in ns. Records of
//! different CPUs arrive in no common order: [`Timeline::sorted`] puts them in time order.

use crate::sample::{CallStack, Sample, Sampled};

/// A sample kept by the session: its stack by number (a run's samples share few stacks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub time: u64,
    pub tid: u32,
    pub at: Sampled,
    /// An index into [`Timeline::stacks`].
    pub stack: Option<u32>,
}

/// The program's samples in the order they came, with the stacks they name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    pub entries: Vec<Entry>,
    pub stacks: Vec<CallStack>,
    /// Each stack's number, by hash: this is looked up once a sample while the program runs.
    index: rustc_hash::FxHashMap<CallStack, u32>,
    /// Whole waits, where the backend times both ends (Redox).
    pub waits: Vec<WaitSpan>,
}

/// A daemon's thread `tid` working, from `from` to `to` (ns), on a request of the program's
/// thread `for_tid`, which waited for it at wait site `site` (numbered as the session numbers
/// them) where it was seen waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServedSpan {
    pub tid: u32,
    pub from: u64,
    pub to: u64,
    pub for_tid: u32,
    pub site: Option<u32>,
}

/// A thread blocked from `from` to `to` (the backend's clock, ns) at wait site `site`
/// (numbered as the session numbers them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitSpan {
    pub tid: u32,
    pub from: u64,
    pub to: u64,
    pub site: u32,
}

impl Timeline {
    /// Keep `s` where it has a time, its stack by number (a new one copied once); the stack's
    /// number, where it kept one.
    pub fn push(&mut self, s: &Sample) -> Option<u32> {
        let time = s.time?;
        let stack = s.stack.as_ref().map(|st| self.stack_number(st));
        self.entries.push(Entry { time, tid: s.tid, at: s.at, stack });
        stack
    }

    /// A look that found thread `tid` blocked at wait site `site` at `time`.
    pub fn blocked(&mut self, tid: u32, time: u64, site: u32) {
        self.entries.push(Entry { time, tid, at: Sampled::Blocked(site), stack: None });
    }

    fn stack_number(&mut self, stack: &CallStack) -> u32 {
        if let Some(&n) = self.index.get(stack) {
            return n;
        }
        let n = u32::try_from(self.stacks.len()).unwrap_or(u32::MAX);
        self.index.insert(stack.clone(), n);
        self.stacks.push(stack.clone());
        n
    }

    /// The entries in time order (one thread's keep their order where times tie).
    pub fn sorted(&self) -> Vec<Entry> {
        let mut entries = self.entries.clone();
        entries.sort_by_key(|e| e.time);
        entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(time: u64, ip: u64, frames: Option<&[u64]>) -> Sample {
        let stack = frames.map(|f| CallStack { frames: f.to_vec(), truncated: false });
        Sample::user(Some(time), 7, ip, stack)
    }

    #[test]
    fn stacks_are_kept_once_and_named_by_number() {
        let mut t = Timeline::default();
        let numbers: Vec<Option<u32>> = [at(30, 1, Some(&[1, 9])), at(10, 2, Some(&[2, 9])), at(20, 1, Some(&[1, 9]))].iter().map(|s| t.push(s)).collect();
        assert_eq!(numbers, [Some(0), Some(1), Some(0)]);
        assert_eq!(t.stacks.len(), 2);
        assert_eq!(t.entries.iter().map(|e| e.stack).collect::<Vec<_>>(), [Some(0), Some(1), Some(0)]);
        assert_eq!(t.sorted().iter().map(|e| e.time).collect::<Vec<_>>(), [10, 20, 30]);
    }

    #[test]
    fn a_sample_without_a_time_is_not_kept_nor_its_stack() {
        let mut t = Timeline::default();
        let untimed = Sample { time: None, ..at(0, 1, Some(&[1, 9])) };
        assert_eq!(t.push(&untimed), None);
        assert!(t.is_empty() && t.stacks.is_empty());
    }
}
