//! The timeline as a saved run keeps it, beside the run's stacks: `span`, then a row of
//! numbers per sample, `[µs since the previous sample, tid, kind, address, stack]`: a row, not
//! an object, and times as steps of whole µs (the run's times are kept to the µs: the timer's
//! ns jitter would not compress), since a 60 s run keeps 60,000 of them. Kinds: 0 the
//! program's text, 1 elsewhere, 2 the kernel, 3 the kernel unnamed, 4 blocked (the address:
//! the wait site), 5 on a CPU at its stack's first frame (a sample whose stack is saved: the
//! address is left out, 0). Steps make a saved run's samples in time order, whatever the file
//! says; a kind 5 row whose stack has no first frame makes the file a damaged one.

use super::{At, TimedSample, Timeline};
use crate::frame::Frame;

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Row(u64, u32, u8, u64, Option<u32>);

/// The saved form. Whole waits (Redox) are rows `[tid, from µs, to µs, site]`.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SavedTimeline {
    span: u64,
    samples: Vec<Row>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    waits: Vec<(u32, u64, u64, u32)>,
    /// A daemon's work for the program (Redox): `[tid, from µs, to µs, for tid, site]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    served: Vec<(u32, u64, u64, u32, Option<u32>)>,
}

impl SavedTimeline {
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty() && self.waits.is_empty() && self.served.is_empty()
    }
}

/// The sampled frame of stack `i`, of the run's stacks' first frames `firsts`.
fn first_frame(firsts: &[Option<Frame>], i: Option<u32>) -> Option<Frame> {
    *firsts.get(i? as usize)?
}

impl Timeline {
    /// Saved beside the run's stacks, whose first frames are `firsts`.
    pub fn saved(&self, firsts: &[Option<Frame>]) -> SavedTimeline {
        let mut previous = 0;
        let samples = self
            .samples
            .iter()
            .map(|s| {
                let (kind, address) = match s.at {
                    At::Cpu(f) if first_frame(firsts, s.stack) == Some(f) => (5, 0),
                    At::Cpu(Frame::Program(a)) => (0, a),
                    At::Cpu(Frame::Foreign(a)) => (1, a),
                    At::Cpu(Frame::Kernel(a)) => (2, a),
                    At::Kernel(a) => (3, a),
                    At::Blocked(site) => (4, u64::from(site)),
                };
                let step = s.time.saturating_sub(previous) / 1000;
                previous = s.time;
                Row(step, s.tid, kind, address, s.stack)
            })
            .collect();
        let waits = self.waits.iter().map(|w| (w.tid, w.from / 1000, w.to / 1000, w.site)).collect();
        let served = self.served.iter().map(|w| (w.tid, w.from / 1000, w.to / 1000, w.for_tid, w.site)).collect();
        SavedTimeline { span: self.span, samples, waits, served }
    }

    /// Read back beside the saved run's stacks, whose first frames are `firsts`.
    pub fn from_saved(saved: SavedTimeline, firsts: &[Option<Frame>]) -> Result<Timeline, String> {
        let mut previous = 0u64;
        let samples = saved
            .samples
            .into_iter()
            .map(|Row(step, tid, kind, address, stack)| {
                let at = match kind {
                    0 => At::Cpu(Frame::Program(address)),
                    1 => At::Cpu(Frame::Foreign(address)),
                    2 => At::Cpu(Frame::Kernel(address)),
                    3 => At::Kernel(address),
                    // A site number past u32 is no site of the run: the report names it unknown.
                    4 => At::Blocked(u32::try_from(address).unwrap_or(u32::MAX)),
                    5 => At::Cpu(first_frame(firsts, stack).ok_or("a sample at its stack's first frame names no stack")?),
                    k => return Err(format!("a sample of kind {k}")),
                };
                previous = previous.saturating_add(step.saturating_mul(1000));
                Ok(TimedSample { time: previous, tid, at, stack })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let waits = saved
            .waits
            .into_iter()
            .map(|(tid, from, to, site)| super::TimedWait { tid, from: from.saturating_mul(1000), to: to.saturating_mul(1000), site })
            .collect();
        let ms = |us: u64| us.saturating_mul(1000);
        let served = saved
            .served
            .into_iter()
            .map(|(tid, from, to, for_tid, site)| super::TimedServed { tid, from: ms(from), to: ms(to), for_tid, site })
            .collect();
        Ok(Timeline { span: saved.span, samples, waits, served })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_saved_as_rows_of_numbers_timed_by_steps() {
        let stacks = [Some(Frame::Program(0x10))];
        let sample = |us: u64, at, stack| TimedSample { time: us * 1000, tid: 9, at, stack };
        let t = Timeline {
            span: 100_000,
            // A whole wait (Redox): thread 9 at site 3 from 3 to 8 ms.
            waits: vec![super::super::TimedWait { tid: 9, from: 3_000_000, to: 8_000_000, site: 3 }],
            // A daemon's thread 4 serving thread 9's wait at site 3 from 4 to 6 ms.
            served: vec![super::super::TimedServed { tid: 4, from: 4_000_000, to: 6_000_000, for_tid: 9, site: Some(3) }],
            samples: vec![
                sample(5, At::Cpu(Frame::Foreign(0x7f00)), None),
                sample(7, At::Blocked(3), None),
                sample(7, At::Kernel(3), None),
                sample(20, At::Cpu(Frame::Program(0x10)), Some(0)),
                sample(90, At::Cpu(Frame::Kernel(u64::MAX)), None),
            ],
        };
        let json = serde_json::to_string(&t.saved(&stacks)).unwrap();
        assert_eq!(
            json,
            format!(r#"{{"span":100000,"samples":[[5,9,1,32512,null],[2,9,4,3,null],[0,9,3,3,null],[13,9,5,0,0],[70,9,2,{},null]],"waits":[[9,3000,8000,3]],"served":[[4,4000,6000,9,3]]}}"#, u64::MAX)
        );
        let back = |json: &str| Timeline::from_saved(serde_json::from_str(json).unwrap(), &stacks);
        assert_eq!(back(&json), Ok(t));
        // Steps past the clock's end stop there.
        let far = back(&format!(r#"{{"span":1,"samples":[[{},1,0,0,null],[5,1,0,0,null]]}}"#, u64::MAX)).unwrap();
        assert_eq!(far.samples.iter().map(|s| s.time).collect::<Vec<_>>(), [u64::MAX, u64::MAX]);
        // A row that takes its address from a stack the run does not have, or of no kind.
        assert!(back(r#"{"span":1,"samples":[[0,1,5,0,3]]}"#).is_err());
        assert!(back(r#"{"span":1,"samples":[[0,1,5,0,null]]}"#).is_err());
        assert_eq!(back(r#"{"span":1,"samples":[[0,1,6,0,null]]}"#), Err("a sample of kind 6".to_string()));
    }
}
