//! The run over time: the program's samples in time order, each with its thread, where it
//! was (placed as the flat profile's samples are) and its stack; looks that found a thread
//! blocked (`--off-cpu`) among them. Kept in the run (and its saved file) where the backend
//! times its samples (Linux), so a report can be of a window of the run (`--time`) and the
//! timeline section can show the run's phases.
//!
//! * [`window`] — a window of the run as `--time` takes it.
//! * [`rows`] — the timeline as a saved run keeps it.
//!
//! (The Timeline section, the run in slices, is `crate::slices`.)

pub mod rows;
pub mod window;

pub use window::Window;

use prof_core::session::{Placed, PlacedSample, Session};

use crate::frame::Frame;

/// What a sample found its thread doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// On a CPU, at this address.
    Cpu(Frame),
    /// On a CPU in the kernel at this address, where kernel addresses are not named (counted
    /// as the kernel's ticks, not its samples).
    Kernel(u64),
    /// Blocked at this wait site (an index of the profile's `wait_sites`).
    Blocked(u32),
}

/// One sample of the run: ns from the program's start, its thread, where it was, its stack
/// (an index of the profile's `stacks`: the stacks of the flat profile, each kept once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedSample {
    /// ns, to the µs (a multiple of 1000).
    pub time: u64,
    pub tid: u32,
    pub at: At,
    pub stack: Option<u32>,
}

impl Timeline {
    /// The samples as the session (or profd's `timeline` file) places them, over `span`; no
    /// whole waits.
    pub fn of_placed(span: u64, placed: &[PlacedSample]) -> Timeline {
        Timeline { span, samples: placed.iter().map(TimedSample::of_placed).collect(), ..Default::default() }
    }
}

impl TimedSample {
    /// A sample as the session (or profd's `timeline` file) places it.
    pub fn of_placed(p: &PlacedSample) -> TimedSample {
        let at = match p.at {
            Placed::Cpu(frame) => At::Cpu(Frame::placed(frame)),
            Placed::Kernel(ip) => At::Kernel(ip),
            Placed::Blocked(site) => At::Blocked(site),
        };
        TimedSample { time: p.time, tid: p.tid, at, stack: p.stack }
    }
}

/// The program's run in time order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The program's span, ns: from its start (its exec, or the attach) to its end.
    pub span: u64,
    /// In time order.
    pub samples: Vec<TimedSample>,
    /// Its threads' whole waits, where the backend times both ends (Redox's switch records),
    /// in the order they began.
    pub waits: Vec<TimedWait>,
    /// A daemon's: the requests of the program's it worked on, whole (Redox).
    pub served: Vec<TimedServed>,
}

/// A daemon's thread `tid` working from `from` to `to` (ns from the program's start) on a
/// request of the program's thread `for_tid`, which waited for it at `site` (an index of the
/// program's `wait_sites`) where known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedServed {
    pub tid: u32,
    pub from: u64,
    pub to: u64,
    pub for_tid: u32,
    pub site: Option<u32>,
}

/// A thread blocked from `from` to `to` (ns from the program's start, to the µs) at wait site
/// `site` (an index of the profile's `wait_sites`): the session's whole wait, placed.
pub type TimedWait = prof_core::timeline::WaitSpan;


impl Timeline {
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The timeline of a finished session's program, where its backend timed the samples; its
    /// stacks by their place among the session's stacks (the profile's `stacks`, in order).
    pub fn of_session(s: &Session) -> Timeline {
        let (span, placed) = s.placed_timeline(s.program.stacks.values());
        let waits = s.placed_waits();
        Timeline { span, samples: placed.iter().map(TimedSample::of_placed).collect(), waits, served: Vec::new() }
    }

    /// The samples from `from` to `to` (ns from the start; `to` not included).
    pub fn between(&self, from: u64, to: u64) -> &[TimedSample] {
        let first = self.samples.partition_point(|s| s.time < from);
        let end = self.samples.partition_point(|s| s.time < to);
        &self.samples[first..end.max(first)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn between_takes_a_half_open_window() {
        let t = Timeline {
            span: 40,
            waits: Vec::new(),
            served: Vec::new(),
            samples: [0, 10, 10, 20, 30].map(|time| TimedSample { time, tid: 1, at: At::Kernel(1), stack: None }).to_vec(),
        };
        assert_eq!(t.between(10, 30).len(), 3);
        assert_eq!(t.between(31, 100).len(), 0);
        assert_eq!(t.between(0, u64::MAX).len(), 5);
    }
}
