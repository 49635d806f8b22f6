//! The run over time: the program's samples in time order, each with its thread, where it
//! was (placed as the flat profile's samples are) and its stack; looks that found a thread
//! blocked (`--off-cpu`) among them. Kept in the run (and its saved file) where the backend
//! times its samples (Linux), so a report can be of a window of the run (`--time`) and the
//! timeline section can show the run's phases.
//!
//! * [`window`] — a window of the run as `--time` takes it.
//!
//! (The Timeline section, the run in slices, is `crate::slices`.)

pub mod window;

pub use window::Window;

use rustc_hash::FxHashMap as HashMap;

use prof_core::sampler::CallStack;
use prof_core::session::Session;
use prof_core::timeline::Sampled;

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

/// A sample as saved: `[µs since the previous sample, tid, kind, address, stack]`, kind 0 the
/// program's text, 1 elsewhere, 2 the kernel, 3 the kernel unnamed, 4 blocked (the address:
/// the wait site). A row of numbers, not an object, and times as steps of whole µs (the run's
/// times are kept to the µs: the timer's ns jitter would not compress), which compress: a
/// 60 s run keeps 60,000 of them. (Steps also make a saved run's samples in time order,
/// whatever the file says.)
#[derive(serde::Serialize, serde::Deserialize)]
struct Row(u64, u32, u8, u64, Option<u32>);

impl Row {
    fn of(s: &TimedSample, previous: u64) -> Row {
        let (kind, address) = match s.at {
            At::Cpu(Frame::Program(a)) => (0, a),
            At::Cpu(Frame::Foreign(a)) => (1, a),
            At::Cpu(Frame::Kernel(a)) => (2, a),
            At::Kernel(a) => (3, a),
            At::Blocked(site) => (4, u64::from(site)),
        };
        Row(s.time.saturating_sub(previous) / 1000, s.tid, kind, address, s.stack)
    }

    fn sample(self, previous: u64) -> TimedSample {
        let Row(step, tid, kind, address, stack) = self;
        let at = match kind {
            0 => At::Cpu(Frame::Program(address)),
            1 => At::Cpu(Frame::Foreign(address)),
            2 => At::Cpu(Frame::Kernel(address)),
            // A site number past u32 is no site of the run: the report names it as unknown.
            4 => At::Blocked(u32::try_from(address).unwrap_or(u32::MAX)),
            _ => At::Kernel(address),
        };
        TimedSample { time: previous.saturating_add(step.saturating_mul(1000)), tid, at, stack }
    }
}

/// The samples as rows of steps (serde `with`).
mod rows {
    use super::{Row, TimedSample};
    use serde::ser::SerializeSeq;

    pub fn serialize<S: serde::Serializer>(samples: &[TimedSample], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(samples.len()))?;
        let mut previous = 0;
        for sample in samples {
            seq.serialize_element(&Row::of(sample, previous))?;
            previous = sample.time;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<TimedSample>, D::Error> {
        let rows: Vec<Row> = serde::Deserialize::deserialize(d)?;
        let mut previous = 0;
        Ok(rows
            .into_iter()
            .map(|row| {
                let sample = row.sample(previous);
                previous = sample.time;
                sample
            })
            .collect())
    }
}

/// The program's run in time order.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Timeline {
    /// The program's span, ns: from its start (its exec, or the attach) to its end.
    pub span: u64,
    /// In time order.
    #[serde(with = "rows")]
    pub samples: Vec<TimedSample>,
}

/// ns to the µs below: the times a saved run keeps.
fn to_us(ns: u64) -> u64 {
    ns - ns % 1000
}

impl Timeline {
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The timeline of a finished session's program, where its backend timed the samples; its
    /// stacks by their place among the session's stacks (the profile's `stacks`, in order).
    pub fn of_session(s: &Session) -> Timeline {
        let entries = s.timeline.sorted();
        let (Some(first), Some(last)) = (entries.first(), entries.last()) else { return Timeline::default() };
        // The program's main thread from its exec (or the session's start) to its exit.
        let (begin, end) = match s.clock {
            Some((b, e)) => s.ledger.span(s.pid, b, e),
            None => (first.time, last.time),
        };
        let begin = begin.min(first.time);
        let end = end.max(last.time);
        let in_profile: HashMap<&CallStack, u32> = s.stacks.keys().zip(0..).collect();
        let stack_of = |n: Option<u32>| in_profile.get(s.timeline.stacks.get(n? as usize)?).copied();
        let place = |ip: u64| Frame::placed(prof_core::session::place_frames(&[ip], s.load_base, &s.text)[0]);
        let samples = entries
            .iter()
            .map(|e| TimedSample {
                time: to_us(e.time - begin),
                tid: e.tid,
                at: match e.at {
                    Sampled::User(ip) | Sampled::Kernel { ip, named: true } => At::Cpu(place(ip)),
                    Sampled::Kernel { ip, named: false } => At::Kernel(ip),
                    Sampled::Blocked(site) => At::Blocked(site),
                },
                stack: stack_of(e.stack),
            })
            .collect();
        Timeline { span: to_us(end - begin), samples }
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
    fn samples_are_saved_as_rows_of_numbers_timed_by_steps() {
        let sample = |us: u64, at, stack| TimedSample { time: us * 1000, tid: 9, at, stack };
        let t = Timeline {
            span: 100_000,
            samples: vec![
                sample(5, At::Cpu(Frame::Foreign(0x7f00)), Some(2)),
                sample(7, At::Blocked(3), None),
                sample(7, At::Kernel(3), None),
                sample(20, At::Cpu(Frame::Program(1)), Some(0)),
                sample(90, At::Cpu(Frame::Kernel(u64::MAX)), None),
            ],
        };
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(
            json,
            format!(r#"{{"span":100000,"samples":[[5,9,1,32512,2],[2,9,4,3,null],[0,9,3,3,null],[13,9,0,1,0],[70,9,2,{},null]]}}"#, u64::MAX)
        );
        assert_eq!(serde_json::from_str::<Timeline>(&json).unwrap(), t);
        // Times are kept to the µs; steps past the clock's end stop there.
        assert_eq!(to_us(1_999_999), 1_999_000);
        let far: Timeline = serde_json::from_str(&format!(r#"{{"span":1,"samples":[[{},1,0,0,null],[5,1,0,0,null]]}}"#, u64::MAX)).unwrap();
        assert_eq!(far.samples.iter().map(|s| s.time).collect::<Vec<_>>(), [u64::MAX, u64::MAX]);
    }

    #[test]
    fn between_takes_a_half_open_window() {
        let t = Timeline {
            span: 40,
            samples: [0, 10, 10, 20, 30].map(|time| TimedSample { time, tid: 1, at: At::Kernel(1), stack: None }).to_vec(),
        };
        assert_eq!(t.between(10, 30).len(), 3);
        assert_eq!(t.between(31, 100).len(), 0);
        assert_eq!(t.between(0, u64::MAX).len(), 5);
    }
}
