//! The run in time order with its functions named, for the exports that keep the order (the
//! per-sample dump, speedscope's evented profiles): each sample's stack as names, root first,
//! each distinct stack named once. A sample on a CPU is its call stack (`-g`) or its function;
//! a look at a blocked thread is the wait's stack ending in its `[off-CPU: call]` frame, as the
//! folded stacks write waits.

use rustc_hash::FxHashMap as HashMap;

use prof_objects::symbolize::Symbolizer;

use super::collapsed::{off_cpu_frame, TRUNCATED};
use crate::timeline::At;
use crate::profile::{Frame, Profile, Stack};

/// One sample: ns from the program's start, its thread, on a CPU or not, its stack (an index
/// of [`NamedTimeline::stacks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamedSample {
    pub time: u64,
    pub tid: u32,
    pub on_cpu: bool,
    pub stack: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamedTimeline {
    /// The program's span, ns.
    pub span: u64,
    pub samples: Vec<NamedSample>,
    /// Stacks as function names, root first.
    pub stacks: Vec<Vec<String>>,
}

/// What a sample's stack is named from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Stack(u32),
    Frame(Frame),
    Kernel,
    Wait(u32),
}

/// `p`'s samples in time order, named.
pub fn name(p: &Profile, symbolizer: &mut Symbolizer) -> NamedTimeline {
    let mut ids: HashMap<Key, u32> = HashMap::default();
    let mut stacks: Vec<Vec<String>> = Vec::new();
    let frame_name = |symbolizer: &mut Symbolizer, f: Frame| {
        let location = symbolizer.frame(f.into(), &p.mappings);
        symbolizer.name(&location)
    };
    let named_stack = |symbolizer: &mut Symbolizer, st: &Stack| -> Vec<String> {
        let mut names: Vec<String> = Vec::with_capacity(st.frames.len() + 1);
        if st.truncated {
            names.push(TRUNCATED.to_string());
        }
        names.extend(st.frames.iter().rev().map(|&f| frame_name(symbolizer, f)));
        names
    };
    let samples = p
        .timeline
        .samples
        .iter()
        .map(|s| {
            let stack = s.stack.filter(|&i| (i as usize) < p.stacks.len());
            let key = match (s.at, stack) {
                (At::Blocked(site), _) => Key::Wait(site),
                (_, Some(i)) => Key::Stack(i),
                (At::Cpu(f), None) => Key::Frame(f),
                (At::Kernel(_), None) => Key::Kernel,
            };
            let id = *ids.entry(key).or_insert_with(|| {
                let names = match key {
                    Key::Stack(i) => named_stack(symbolizer, &p.stacks[i as usize]),
                    Key::Frame(f) => vec![frame_name(symbolizer, f)],
                    Key::Kernel => vec!["[kernel]".to_string()],
                    Key::Wait(site) => match p.wait_sites.get(site as usize) {
                        Some(w) => {
                            let mut names = named_stack(symbolizer, &w.stack);
                            names.push(off_cpu_frame(&w.call));
                            names
                        }
                        None => vec![off_cpu_frame("[unknown]")],
                    },
                };
                stacks.push(names);
                (stacks.len() - 1) as u32
            });
            NamedSample { time: s.time, tid: s.tid, on_cpu: !matches!(s.at, At::Blocked(_)), stack: id }
        })
        .collect();
    NamedTimeline { span: p.timeline.span, samples, stacks }
}
