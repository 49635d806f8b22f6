//! `--speedscope FILE`: the run in speedscope's file format
//! (<https://www.speedscope.app/file-format-schema.json>), which `npx speedscope FILE` (or the
//! page at speedscope.app, offline once loaded) opens: its time-ordered, left-heavy and
//! sandwich views of the same stacks the flame graph draws.
//!
//! One sampled profile per process (the program; with `--children` each process it started),
//! one for the daemons that worked for it (Redox, each stack under its daemon, or under the
//! program's call it served), with `--off-cpu` one of the program by the clock (its CPU and
//! its waits, each wait ending in its `[off-CPU: call]` frame), and, for a program of several
//! threads, one per thread: its functions (the sums keep each sample's thread, not a
//! stack per thread). Each stack is one sample weighted by its count; with a known rate the
//! unit is nanoseconds (a sample stands for `1 / rate` s), else samples.
//!
//! Where the run keeps its samples in time order (Linux), each thread also has an evented
//! profile, the run as it happened: each sample's stack open for the period it stands for
//! (the `1 / rate` s up to its time), frames opened and closed where the stack changes, all
//! closed where the thread was not sampled; a look that found it blocked (`--off-cpu`) is its
//! wait's stack. Speedscope's time-order view of one of these shows the thread's phases left
//! to right; the left-heavy and sandwich views of the sampled profiles are as before.

use rustc_hash::FxHashMap as HashMap;
use serde_json::{json, Value};

use crate::exports::collapsed::off_cpu_frame;
use crate::exports::Analysis;
use crate::flat::FlatProfile;
use crate::stacks::{NamedStack, StackProfile};
use crate::exports::time_order::NamedSample;

/// The format's `$schema`.
pub const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// The file's shared frames, a name each.
#[derive(Default)]
struct Frames {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl Frames {
    fn of(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }
}

/// One sampled profile: stacks root first, their weights.
struct Profile {
    name: String,
    unit: &'static str,
    samples: Vec<Vec<usize>>,
    weights: Vec<u64>,
}

impl Profile {
    fn new(name: String, unit: &'static str) -> Profile {
        Profile { name, unit, samples: Vec::new(), weights: Vec::new() }
    }

    fn push(&mut self, stack: Vec<usize>, weight: u64) {
        if weight > 0 {
            self.samples.push(stack);
            self.weights.push(weight);
        }
    }

    fn json(&self) -> Value {
        let end: u64 = self.weights.iter().fold(0u64, |n, w| n.saturating_add(*w));
        json!({
            "type": "sampled",
            "name": self.name,
            "unit": self.unit,
            "startValue": 0,
            "endValue": end,
            "samples": self.samples,
            "weights": self.weights,
        })
    }
}

/// One thread's samples in time order as an evented profile, each sample's stack open from
/// `period` ns before its time (not before the previous sample) to its time.
fn evented(name: String, samples: &[&NamedSample], stacks: &[Vec<usize>], period: u64, span: u64) -> Value {
    let mut events: Vec<Value> = Vec::new();
    let mut open: &[usize] = &[];
    // The previous sample's time (none before the first).
    let mut previous: Option<u64> = None;
    let mut event = |kind: &str, frame: usize, at: u64| events.push(json!({ "type": kind, "frame": frame, "at": at }));
    for s in samples {
        let stack: &[usize] = stacks.get(s.stack as usize).map_or(&[], Vec::as_slice);
        let last = previous.unwrap_or(0);
        // A gap (the thread was not sampled for more than half a period beyond the one a
        // sample stands for: it was off the CPU) ends what was open with the previous sample;
        // samples come a period apart give or take the timer's jitter, and follow on.
        let gap = previous.is_none_or(|last| s.time.saturating_sub(period) > last.saturating_add(period / 2));
        let from = if gap { s.time.saturating_sub(period) } else { last };
        let keep = if gap { 0 } else { open.iter().zip(stack).take_while(|(a, b)| a == b).count() };
        for &f in open[keep..].iter().rev() {
            event("C", f, last);
        }
        for &f in &stack[keep..] {
            event("O", f, from);
        }
        open = stack;
        previous = Some(s.time.max(from));
    }
    let last = previous.unwrap_or(0);
    for &f in open.iter().rev() {
        event("C", f, last);
    }
    json!({
        "type": "evented",
        "name": name,
        "unit": "nanoseconds",
        "startValue": 0,
        "endValue": span.max(last),
        "events": events,
    })
}

/// The named stacks of `stacks` (root first) as frame indexes.
fn named(frames: &mut Frames, sp: &StackProfile, st: &NamedStack) -> Vec<usize> {
    let mut out = Vec::with_capacity(st.frames.len() + 1);
    if st.truncated {
        out.push(frames.of(crate::exports::collapsed::TRUNCATED));
    }
    out.extend(st.frames.iter().map(|&f| frames.of(&sp.functions[f].name)));
    out
}

/// A process's CPU samples: its stacks, or one frame per function without them.
fn add_process(p: &mut Profile, frames: &mut Frames, flat: &FlatProfile, stacks: Option<&StackProfile>, per_sample: u64) {
    match stacks {
        Some(sp) => {
            for st in &sp.stacks {
                let stack = named(frames, sp, st);
                p.push(stack, st.count.saturating_mul(per_sample));
            }
        }
        None => {
            for e in &flat.entries {
                let stack = vec![frames.of(&e.name())];
                p.push(stack, e.samples.saturating_mul(per_sample));
            }
        }
    }
}

/// The name of a process's profile of its samples merged by stack, whose time order (in
/// speedscope's menu beside each thread's profile over time) is no run's order.
const BY_STACK: &str = "CPU samples merged by stack, not in time order";

/// The speedscope file of a run.
pub fn render(a: &Analysis) -> String {
    let run = a.run;
    let name = crate::processes::base_name(&run.program).to_string();
    // A sample stands for 1/rate s where the rate is known.
    let (unit, per_sample) = match run.frequency_hz {
        0 => ("none", 1),
        hz => ("nanoseconds", 1_000_000_000 / hz),
    };
    let mut frames = Frames::default();
    let mut profiles = Vec::new();

    let mut program = Profile::new(format!("{name} (pid {}): {BY_STACK}", run.profile.pid()), unit);
    add_process(&mut program, &mut frames, a.flat, a.stacks, per_sample);
    profiles.push(program);
    if let Some(sp) = a.stacks.filter(|sp| !sp.servers.is_empty()) {
        let mut daemons = Profile::new(format!("daemons working for {name}"), unit);
        for st in &sp.servers {
            let stack = named(&mut frames, sp, st);
            daemons.push(stack, st.count.saturating_mul(per_sample));
        }
        profiles.push(daemons);
    }
    // A system-wide run (-a) saw every process: those that were sampled have a profile.
    let system = run.profile.is_system_wide();
    for c in a.processes.iter().filter(|c| !system || c.ticks() > 0) {
        // A stock kernel's -a rows are contexts by debug id, not processes by pid.
        let word = run.profile.process_id_word();
        let mut p = Profile::new(format!("{} ({word} {}): {BY_STACK}", crate::processes::base_name(&c.program), c.pid), unit);
        add_process(&mut p, &mut frames, &c.flat, c.stacks.as_ref(), per_sample);
        profiles.push(p);
    }
    if run.profile.clock().off_cpu.is_some() && per_sample > 1 {
        // By the clock: the CPU samples as time, then each wait's time, in nanoseconds.
        let mut clock = Profile::new(format!("{name}: by the clock (on a CPU and waiting)"), "nanoseconds");
        add_process(&mut clock, &mut frames, a.flat, a.stacks, per_sample);
        for w in a.waits.iter().filter(|w| w.process.is_none()) {
            let mut stack: Vec<usize> = Vec::with_capacity(w.frames.len() + 2);
            if w.truncated {
                stack.push(frames.of(crate::exports::collapsed::TRUNCATED));
            }
            stack.extend(w.frames.iter().rev().map(|f| frames.of(f)));
            stack.push(frames.of(&off_cpu_frame(&w.call)));
            clock.push(stack, w.ns);
        }
        profiles.push(clock);
    }
    if a.threads.len() > 1 {
        for t in a.threads {
            // A thread of another process of the run (--children, -a) says whose.
            let whose = match t.pid == run.profile.pid() {
                true => name.to_string(),
                false => format!("{name} pid {}", t.pid),
            };
            let mut p = Profile::new(format!("{whose} thread {} ({}): functions", t.tid, t.name), unit);
            for (function, n) in &t.functions {
                let stack = vec![frames.of(function)];
                p.push(stack, n.saturating_mul(per_sample));
            }
            profiles.push(p);
        }
    }
    let mut profiles: Vec<Value> = profiles.iter().map(Profile::json).collect();
    // The page opens on the program's main thread over time where there is one: its time
    // order is the run as it went, and its left-heavy view the same stacks merged.
    let mut opens = 0;
    if let (Some(t), true) = (a.timeline, per_sample > 1) {
        let stacks: Vec<Vec<usize>> = t.stacks.iter().map(|st| st.iter().map(|f| frames.of(&f.name)).collect()).collect();
        // Each thread's samples, in time order, threads by tid.
        let mut by_thread: std::collections::BTreeMap<u32, Vec<&NamedSample>> = Default::default();
        for s in &t.samples {
            by_thread.entry(s.tid).or_default().push(s);
        }
        let names: HashMap<u32, &str> = a.threads.iter().map(|t| (t.tid, t.name.as_str())).collect();
        for (tid, samples) in by_thread {
            if opens == 0 || tid == run.profile.pid() {
                opens = profiles.len();
            }
            let thread = names.get(&tid).map_or(String::new(), |n| format!(" ({n})"));
            profiles.push(evented(format!("{name} thread {tid}{thread}: over time"), &samples, &stacks, per_sample, t.span));
        }
    }
    let doc = json!({
        "$schema": SCHEMA,
        "name": format!("profil: {name}"),
        "exporter": format!("profil {}", env!("CARGO_PKG_VERSION")),
        "activeProfileIndex": opens,
        "shared": { "frames": frames.names.iter().map(|n| json!({ "name": n })).collect::<Vec<_>>() },
        "profiles": profiles,
    });
    let mut text = doc.to_string();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use crate::profile::Parts;
    use super::*;

    #[test]
    fn stacks_root_first_weighted_by_their_time() {
        let (sp, s) = crate::stacks::tests::with_a_server();
        let flat = FlatProfile { entries: vec![], total: 0, kernel: 0, with_totals: true, whole: None };
        let run = crate::profile::Outcome::exited("/bin/fib", crate::profile::Profile::from(Parts { pid: 42, ..Default::default() }));
        let a = Analysis::bare(&run, &flat, &s, Some(&sp));
        let doc: Value = serde_json::from_str(&render(&a)).unwrap();
        assert_eq!(doc["$schema"], SCHEMA);
        let frames: Vec<&str> = doc["shared"]["frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
        let program = &doc["profiles"][0];
        assert_eq!((program["name"].as_str(), program["unit"].as_str()), (Some("fib (pid 42): CPU samples merged by stack, not in time order"), Some("nanoseconds")));
        let stacks: Vec<(Vec<&str>, u64)> = program["samples"]
            .as_array()
            .unwrap()
            .iter()
            .zip(program["weights"].as_array().unwrap())
            .map(|(s, w)| (s.as_array().unwrap().iter().map(|i| frames[i.as_u64().unwrap() as usize]).collect(), w.as_u64().unwrap()))
            .collect();
        // main;a;c 3 samples at 1 kHz: 3 ms.
        assert_eq!(stacks[0], (vec!["main", "a", "c"], 3_000_000));
        assert!(stacks.contains(&(vec!["[truncated]", "b"], 1_000_000)), "{stacks:?}");
        assert_eq!(program["endValue"].as_u64(), Some(9_000_000));
        // The daemon's stacks, each under its daemon.
        let daemons = &doc["profiles"][1];
        assert_eq!(daemons["name"], "daemons working for fib");
        assert_eq!(daemons["endValue"].as_u64(), Some(6_000_000));
        let first = daemons["samples"][0].as_array().unwrap();
        assert_eq!(frames[first[0].as_u64().unwrap() as usize], "ramfs [pid 7]");
    }

    #[test]
    fn a_thread_over_time_opens_and_closes_its_frames_where_its_stack_changes() {
        let sample = |time, stack| NamedSample { time, tid: 7, on_cpu: true, stack };
        // main;fib at 1 and 2 ms, main;loop at 3 ms, a gap, main;loop at 10 ms.
        let samples = [sample(1_000_000, 0), sample(2_000_000, 0), sample(3_000_000, 1), sample(10_000_000, 1)];
        let refs: Vec<&NamedSample> = samples.iter().collect();
        let stacks = vec![vec![0, 1], vec![0, 2]];
        let p = evented("t".into(), &refs, &stacks, 1_000_000, 12_000_000);
        let events: Vec<(String, u64, u64)> = p["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["type"].as_str().unwrap().to_string(), e["frame"].as_u64().unwrap(), e["at"].as_u64().unwrap()))
            .collect();
        let e = |k: &str, f, at| (k.to_string(), f, at);
        assert_eq!(
            events,
            [
                e("O", 0, 0),
                e("O", 1, 0),
                e("C", 1, 2_000_000),
                e("O", 2, 2_000_000),
                e("C", 2, 3_000_000),
                e("C", 0, 3_000_000),
                e("O", 0, 9_000_000),
                e("O", 2, 9_000_000),
                e("C", 2, 10_000_000),
                e("C", 0, 10_000_000),
            ]
        );
        assert_eq!((p["type"].as_str(), p["endValue"].as_u64()), (Some("evented"), Some(12_000_000)));
    }
}
