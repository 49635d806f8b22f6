//! The run's call stacks as a saved run keeps them (version 3): a row a stack, `[count,
//! truncated, frames]`, the frames flat as `kind, address` pairs, innermost first (kinds as
//! the timeline's rows number them: 0 the program's text at a link-time address, 1 elsewhere
//! at a runtime address, 2 the kernel). A long `-g` run has tens of thousands of stacks of
//! tens of frames: as `{"Program": A}` objects (versions 1 and 2, inside the profile) they
//! were most of the file's JSON and of the time it took to write.

use crate::frame::Frame;
use crate::profile::Stack;

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Row(u64, bool, Vec<u64>);

/// The saved form of a process's stacks.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct SavedStacks(Vec<Row>);

impl SavedStacks {
    pub fn of(stacks: &[Stack]) -> SavedStacks {
        let row = |s: &Stack| {
            let frames = s.frames.iter().flat_map(|f| match *f {
                Frame::Program(a) => [0, a],
                Frame::Foreign(a) => [1, a],
                Frame::Kernel(a) => [2, a],
            });
            Row(s.count, s.truncated, frames.collect())
        };
        SavedStacks(stacks.iter().map(row).collect())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The stacks read back; the error says what makes a row none.
    pub fn stacks(self) -> Result<Vec<Stack>, String> {
        self.0
            .into_iter()
            .map(|Row(count, truncated, flat)| {
                if flat.len() % 2 != 0 {
                    return Err("a stack whose frames are not kind and address pairs".to_string());
                }
                let frames = flat
                    .chunks_exact(2)
                    .map(|pair| match pair[0] {
                        0 => Ok(Frame::Program(pair[1])),
                        1 => Ok(Frame::Foreign(pair[1])),
                        2 => Ok(Frame::Kernel(pair[1])),
                        k => Err(format!("a stack frame of kind {k}")),
                    })
                    .collect::<Result<Vec<Frame>, String>>()?;
                Ok(Stack { frames, truncated, count })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_read_back_as_they_were_and_damaged_rows_are_named() {
        let stacks = vec![
            Stack { frames: vec![Frame::Program(0x1010), Frame::Foreign(0x7f00_0000_2000), Frame::Kernel(u64::MAX)], truncated: false, count: 7 },
            Stack { frames: Vec::new(), truncated: true, count: 1 },
        ];
        let json = serde_json::to_string(&SavedStacks::of(&stacks)).unwrap();
        assert_eq!(json, "[[7,false,[0,4112,1,139637976735744,2,18446744073709551615]],[1,true,[]]]");
        assert_eq!(serde_json::from_str::<SavedStacks>(&json).unwrap().stacks().unwrap(), stacks);
        let odd: SavedStacks = serde_json::from_str("[[1,false,[0,4112,1]]]").unwrap();
        assert_eq!(odd.stacks().unwrap_err(), "a stack whose frames are not kind and address pairs");
        let kind: SavedStacks = serde_json::from_str("[[1,false,[3,4112]]]").unwrap();
        assert_eq!(kind.stacks().unwrap_err(), "a stack frame of kind 3");
    }
}
