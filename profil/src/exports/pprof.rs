//! `--pprof FILE`: the profile as pprof's `profile.proto`, gzip-compressed, for `go tool pprof`
//! (and everything that reads it: Grafana Pyroscope, Speedscope, Polar Signals...).
//!
//! Two sample values, `samples/count` and `cpu/nanoseconds` (samples times the sampling
//! period); with `--off-cpu` a third, `off_cpu/nanoseconds`, the blocked time of the waits
//! (`go tool pprof -sample_index=off_cpu`), each wait a sample whose leaf is its call,
//! `[off-CPU: read]`, under the functions of its stack. One location per function, in one mapping per object; each sample is a recorded
//! stack, leaf first (without `-g`, a stack of the one function). Truncated stacks hang under
//! a `[truncated]` function, as in the flame graph.
//!
//! The messages are declared here with prost's derive, field numbers as in
//! github.com/google/pprof/proto/profile.proto (only the fields we fill).

use std::io::Write;

use prost::Message;
use rustc_hash::FxHashMap as HashMap;

use crate::exports::collapsed::TRUNCATED;
use crate::exports::Analysis;
use prof_objects::symbolize::PROGRAM;

#[derive(Clone, PartialEq, Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// A sample's tag: `pid` (a number) and `process` (a string) with `--children`, so `pprof
/// -tagfocus` picks a process.
#[derive(Clone, PartialEq, Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "5")]
    pub filename: i64,
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
}

/// Interned strings; index 0 is "" as the format requires.
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.get("");
        s
    }

    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), self.table.len() as i64 - 1);
        self.table.len() as i64 - 1
    }
}

/// Functions (as locations) and their objects (as mappings), numbered from 1.
#[derive(Default)]
struct Builder {
    strings: Strings,
    profile: Profile,
    /// The sampling period, nanoseconds: a sample's CPU time.
    period: i64,
    /// Samples have a third value, off-CPU time.
    off_cpu: bool,
    /// (object index or usize::MAX for the truncated marker, name) -> location id.
    locations: HashMap<(usize, String), u64>,
    mappings: HashMap<usize, u64>,
    /// With source lines: (object, address) -> location id, (name, file) -> function id.
    addresses: HashMap<(usize, u64), u64>,
    functions: HashMap<(String, String), u64>,
}

impl Builder {
    /// A sample of `n` ticks at `location_id` (leaf first), with `label`.
    fn sample(&mut self, location_id: Vec<u64>, n: u64, label: &[Label]) {
        let mut value = vec![n.min(i64::MAX as u64) as i64, (n as i64).saturating_mul(self.period)];
        if self.off_cpu {
            value.push(0);
        }
        self.profile.sample.push(Sample { location_id, value, label: label.to_vec() });
    }

    /// The mapping of object `i` of `objects`, named by its path (or name, for the vdso).
    fn object_mapping(&mut self, objects: &[prof_objects::symbolize::Object], i: usize) -> u64 {
        let ob = &objects[i];
        self.mapping(i, if ob.path.is_empty() { &ob.name } else { &ob.path })
    }

    /// The mapping of object `i`, whose file is `path`.
    fn mapping(&mut self, i: usize, path: &str) -> u64 {
        if let Some(&m) = self.mappings.get(&i) {
            return m;
        }
        let id = self.profile.mapping.len() as u64 + 1;
        let filename = self.strings.get(path);
        self.profile.mapping.push(Mapping { id, filename, has_functions: true, ..Default::default() });
        self.mappings.insert(i, id);
        id
    }

    /// The function `name` of source file `file` (empty: none known).
    fn function(&mut self, name: &str, file: &str) -> u64 {
        if let Some(&id) = self.functions.get(&(name.to_string(), file.to_string())) {
            return id;
        }
        let id = self.profile.function.len() as u64 + 1;
        let (name_index, filename) = (self.strings.get(name), self.strings.get(file));
        self.profile.function.push(Function { id, name: name_index, system_name: name_index, filename });
        self.functions.insert((name.to_string(), file.to_string()), id);
        id
    }

    /// The location of one address of an object, with its source lines (innermost first,
    /// as pprof lists inlined frames) or, where it has none, the report's name of it.
    fn address(&mut self, a: &Analysis, names: &crate::address_lines::AddressLines, l: &prof_objects::symbolize::Location) -> u64 {
        let key = (l.object, l.address.unwrap_or(u64::MAX));
        if let Some(&id) = self.addresses.get(&key) {
            return id;
        }
        let mapping_id = self.object_mapping(a.objects, l.object);
        // Every address the samples and stacks hit was named with its lines in the naming.
        let (name, frames) = match names.get(l) {
            Some(n) => (n.name.as_str(), &n.frames[..]),
            None => ("[unknown]", &[][..]),
        };
        let line: Vec<Line> = if frames.is_empty() {
            vec![Line { function_id: self.function(name, ""), line: 0 }]
        } else {
            frames.iter().map(|f| Line { function_id: self.function(&f.function, &f.file), line: i64::from(f.line) }).collect()
        };
        if let Some(m) = self.profile.mapping.get_mut(mapping_id as usize - 1).filter(|_| !frames.is_empty()) {
            (m.has_filenames, m.has_line_numbers, m.has_inline_frames) = (true, true, true);
        }
        let id = self.profile.location.len() as u64 + 1;
        self.profile.location.push(Location { id, mapping_id, address: l.address.unwrap_or(0), line });
        self.addresses.insert(key, id);
        id
    }

    /// The location of a function (or of the truncation marker) by name: `object` is its
    /// object's index, mapping and the function's address.
    fn location(&mut self, object: Option<(usize, u64, u64)>, name: &str) -> u64 {
        let obj = object.map_or(usize::MAX, |o| o.0);
        if let Some(&id) = self.locations.get(&(obj, name.to_string())) {
            return id;
        }
        let (mapping_id, address) = object.map_or((0, 0), |o| (o.1, o.2));
        let function_id = self.function(name, "");
        let id = self.profile.location.len() as u64 + 1;
        self.profile.location.push(Location { id, mapping_id, address, line: vec![Line { function_id, line: 0 }] });
        self.locations.insert((obj, name.to_string()), id);
        id
    }
}

/// The gzipped `profile.proto` of the run.
pub fn render(a: &Analysis) -> std::io::Result<Vec<u8>> {
    let run = a.run;
    let period = 1_000_000_000 / run.frequency_hz.max(1) as i64;
    let off_cpu = run.profile.clock().off_cpu.is_some();
    let mut b = Builder { strings: Strings::new(), period, off_cpu, ..Default::default() };
    let vt = |b: &mut Builder, t: &str, u: &str| ValueType { r#type: b.strings.get(t), unit: b.strings.get(u) };
    b.profile.sample_type = vec![vt(&mut b, "samples", "count"), vt(&mut b, "cpu", "nanoseconds")];
    if off_cpu {
        let t = vt(&mut b, "off_cpu", "nanoseconds");
        b.profile.sample_type.push(t);
    }
    b.profile.period_type = Some(vt(&mut b, "cpu", "nanoseconds"));
    b.profile.period = period;
    let comment = b.strings.get(&format!("profil {} ({} Hz)", run.program, run.frequency_hz));
    b.profile.comment = vec![comment];
    // The first mapping is the main file to pprof ("File:"): the program's, whatever comes
    // first among the samples (a library's function, or a child's with --children).
    b.object_mapping(a.objects, prof_objects::symbolize::PROGRAM);
    // With --children every sample says its process; without, none does (one process).
    let labels = |b: &mut Builder, program: &str, pid: u32| -> Vec<Label> {
        if a.processes.is_empty() {
            return Vec::new();
        }
        // A stock kernel's -a rows are contexts by debug id, not processes by pid.
        let (pid_key, process_key) = (b.strings.get(run.profile.process_id_word()), b.strings.get("process"));
        let name = b.strings.get(crate::processes::base_name(program));
        vec![Label { key: pid_key, str: 0, num: i64::from(pid) }, Label { key: process_key, str: name, num: 0 }]
    };
    let label = labels(&mut b, &run.program, run.profile.pid());
    match a.address_lines {
        Some(names) => add_addresses(&mut b, a, names, &run.profile, a.samples, a.stacks, &label),
        None => add_samples(&mut b, a.objects, a.flat, a.stacks, &label),
    }
    for c in a.processes {
        let label = labels(&mut b, &c.program, c.pid);
        match a.address_lines {
            Some(names) => add_addresses(&mut b, a, names, &c.profile, &c.samples, c.stacks.as_ref(), &label),
            None => add_samples(&mut b, a.objects, &c.flat, c.stacks.as_ref(), &label),
        }
    }
    // The waits, each a sample of its blocked time: its call, then its stack, leaf first.
    for w in a.waits {
        let mut ids = vec![b.location(None, &crate::exports::collapsed::off_cpu_frame(&w.call))];
        ids.extend(w.frames.iter().map(|f| b.location(None, f)));
        if w.truncated {
            ids.push(b.location(None, TRUNCATED));
        }
        let ns = i64::try_from(w.ns).unwrap_or(i64::MAX);
        // A child's wait carries its process's tags, as its CPU samples do.
        let label = match &w.process {
            Some((name, pid)) => labels(&mut b, name, *pid),
            None => label.clone(),
        };
        b.profile.sample.push(Sample { location_id: ids, value: vec![0, 0, ns], label });
    }
    // The run's wall time ("Duration:"), as perf and pprof's own profilers give it; the
    // sampled CPU time where it was not measured.
    let user = a.processes.iter().fold(run.profile.user_ticks(), |n, c| n.saturating_add(c.profile.user_ticks()));
    b.profile.duration_nanos = match run.profile.clock().elapsed {
        Some(wall) => i64::try_from(wall.as_nanos()).unwrap_or(i64::MAX),
        None => (user as i64).saturating_mul(period),
    };
    b.profile.string_table = b.strings.table;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&b.profile.encode_to_vec())?;
    gz.finish()
}

/// `--diff`: this run's samples less the base's, by function name, as `go tool pprof
/// -diff_base` makes them: each of this run's stacks with its samples, each of the base's with
/// its samples negated, so `go tool pprof -top FILE` shows each function's change (counts as
/// counted: two runs of different lengths differ by that too; the report's section compares
/// shares).
pub fn render_diff(a: &Analysis, base: &crate::compare::Base) -> std::io::Result<Vec<u8>> {
    let run = a.run;
    let period = 1_000_000_000 / run.frequency_hz.max(1) as i64;
    let base_period = 1_000_000_000 / base.frequency_hz.max(1) as i64;
    let mut b = Builder { strings: Strings::new(), period, ..Default::default() };
    let vt = |b: &mut Builder, t: &str, u: &str| ValueType { r#type: b.strings.get(t), unit: b.strings.get(u) };
    b.profile.sample_type = vec![vt(&mut b, "samples", "count"), vt(&mut b, "cpu", "nanoseconds")];
    b.profile.period_type = Some(vt(&mut b, "cpu", "nanoseconds"));
    b.profile.period = period;
    let comment = b.strings.get(&format!("profil {} ({} Hz) less {}", run.program, run.frequency_hz, base.file));
    b.profile.comment = vec![comment];
    let sides = [(a.flat, a.stacks, 1i64, period), (&base.flat, base.stacks.as_ref(), -1i64, base_period)];
    for (flat, stacks, sign, period) in sides {
        let push = |b: &mut Builder, names: Vec<&str>, n: u64| {
            let location_id = names.into_iter().map(|name| b.location(None, name)).collect();
            let n = n.min(i64::MAX as u64) as i64;
            b.profile.sample.push(Sample { location_id, value: vec![sign * n, sign * n.saturating_mul(period)], label: vec![] });
        };
        match stacks {
            Some(sp) => {
                for st in sp.stacks.iter().chain(&sp.servers) {
                    let mut names: Vec<&str> = st.frames.iter().rev().map(|&f| sp.functions[f].name.as_str()).collect();
                    if st.truncated {
                        names.push(TRUNCATED);
                    }
                    push(&mut b, names, st.count);
                }
            }
            None => {
                for e in flat.entries.iter().filter(|e| e.samples > 0) {
                    let name = e.name();
                    push(&mut b, vec![name.as_str()], e.samples);
                }
            }
        }
    }
    b.profile.string_table = b.strings.table;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&b.profile.encode_to_vec())?;
    gz.finish()
}

/// One process's samples by address, each address a location with its source lines (so `go
/// tool pprof -list` and `-lines` show lines): its recorded stacks, leaf first, or its
/// samples; each with `label`. The daemons' stacks (Redox) stay by function.
fn add_addresses(
    b: &mut Builder,
    a: &Analysis,
    names: &crate::address_lines::AddressLines,
    profile: &crate::profile::Profile,
    samples: &[prof_objects::symbolize::Sample],
    stacks: Option<&crate::stacks::StackProfile>,
    label: &[Label],
) {
    let Some(sp) = stacks else {
        for s in samples {
            let id = b.address(a, names, &s.location);
            b.sample(vec![id], s.count, label);
        }
        return;
    };
    for st in profile.stacks() {
        let located: Vec<&prof_objects::symbolize::Location> = st.frames.iter().filter_map(|f| sp.frame_locations.get(f)).collect();
        let mut ids: Vec<u64> = located.iter().map(|l| b.address(a, names, l)).collect();
        // As in the stacks by function: a stack that reaches a start routine is whole.
        if st.truncated && !located.last().is_some_and(|l| crate::stacks::starts_a_process(l)) {
            ids.push(b.location(None, TRUNCATED));
        }
        b.sample(ids, st.count, label);
    }
    add_named_stacks(b, a.objects, sp, &sp.servers, label);
}

/// One process's samples: its stacks, or its flat profile's functions, each with `label`.
fn add_samples(
    b: &mut Builder,
    objects: &[prof_objects::symbolize::Object],
    flat: &crate::flat::FlatProfile,
    stacks: Option<&crate::stacks::StackProfile>,
    label: &[Label],
) {
    match stacks {
        // The daemons' stacks (Redox) are rooted at their daemon, `ramfs [pid 7]`.
        Some(sp) => {
            add_named_stacks(b, objects, sp, &sp.stacks, label);
            add_named_stacks(b, objects, sp, &sp.servers, label);
        }
        None => {
            for e in flat.entries.iter().filter(|e| e.samples > 0) {
                let object = e.code.as_ref().map_or(PROGRAM, |c| c.object);
                let mapping = b.object_mapping(objects, object);
                let start = e.code.as_ref().map_or(0, |c| c.start);
                let id = b.location(Some((object, mapping, start)), &e.name());
                b.sample(vec![id], e.samples, label);
            }
        }
    }
}

/// `stacks` of `sp`, a location per function, leaf first, each with `label`.
fn add_named_stacks(
    b: &mut Builder,
    objects: &[prof_objects::symbolize::Object],
    sp: &crate::stacks::StackProfile,
    stacks: &[crate::stacks::NamedStack],
    label: &[Label],
) {
    let location = |b: &mut Builder, f: usize| {
        let func = &sp.functions[f];
        let mapping = b.object_mapping(objects, func.location.object);
        b.location(Some((func.location.object, mapping, func.key.function.unwrap_or(0))), &func.name)
    };
    for st in stacks {
        // A daemon's stack: its frames, where truncated the mark, its root, then the
        // program's call it served (Redox), leaf first. A program's: the mark outermost.
        let (program, daemon) = match st.frames.iter().any(|&f| sp.functions[f].server) {
            true => sp.stitched_parts(st),
            false => (&st.frames[..], &[][..]),
        };
        let (daemon_root, rest) = daemon.split_first().map_or((None, &[][..]), |(r, rest)| (Some(*r), rest));
        let mut ids: Vec<u64> = rest.iter().rev().map(|&f| location(b, f)).collect();
        if st.truncated && daemon_root.is_some() {
            ids.push(b.location(None, TRUNCATED));
        }
        ids.extend(daemon_root.map(|r| location(b, r)));
        ids.extend(program.iter().rev().map(|&f| location(b, f)));
        if st.truncated && daemon_root.is_none() {
            ids.push(b.location(None, TRUNCATED));
        }
        b.sample(ids, st.count, label);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flat::FlatProfile;
    use crate::profile::Outcome;
    use crate::report::ExitKind;
    use std::io::Read;

    /// The profile.proto a render gives, gunzipped and decoded.
    fn decoded(a: &Analysis) -> Profile {
        let gz = render(a).unwrap();
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut bytes).unwrap();
        Profile::decode(&bytes[..]).unwrap()
    }

    /// A sample's functions, leaf first.
    fn frame_names<'p>(p: &'p Profile, s: &Sample) -> Vec<&'p str> {
        s.location_id
            .iter()
            .map(|&id| {
                let f = &p.function[p.location[id as usize - 1].line[0].function_id as usize - 1];
                p.string_table[f.name as usize].as_str()
            })
            .collect()
    }

    #[test]
    fn daemons_stacks_are_samples_too() {
        let (sp, s) = crate::stacks::tests::with_a_server();
        let profile = crate::stacks::tests::profile();
        let flat = FlatProfile { entries: Vec::new(), total: 0, kernel: 0, with_totals: true, whole: None };
        let run = Outcome { program: "abc".into(), arguments: vec![], frequency_hz: 1000, profile, exit: ExitKind::Exited(0), interpreters: Vec::new() };
        let a = Analysis { run: &run, flat: &flat, samples: &[], objects: s.objects(), stacks: Some(&sp), processes: &[], lines: None, address_lines: None, waits: &[], base: None, threads: &[], timeline: None };
        let p = decoded(&a);
        let got: Vec<(Vec<&str>, i64)> =
            p.sample.iter().skip(4).map(|s| (frame_names(&p, s), s.value[0])).collect();
        assert_eq!(
            got,
            vec![
                (vec!["read_block [ramfs]", "handle [ramfs]", "ramfs [pid 7]"], 5),
                (vec!["handle [ramfs]", "[truncated]", "ramfs [pid 7]"], 1),
            ]
        );
        assert!(p.mapping.iter().any(|m| p.string_table[m.filename as usize] == "/bin/ramfs"));
    }

    /// A daemon's work stitched under the program's call it served: leaf first, the daemon's
    /// frames, its root, then the program's frames to their outermost.
    #[test]
    fn stitched_daemon_stacks_end_in_the_programs_frames() {
        let (sp, s, profile) = crate::stacks::tests::with_a_stitched_server();
        let flat = FlatProfile { entries: Vec::new(), total: 0, kernel: 0, with_totals: true, whole: None };
        let run = Outcome { program: "abc".into(), arguments: vec![], frequency_hz: 1000, profile, exit: ExitKind::Exited(0), interpreters: Vec::new() };
        let a = Analysis { run: &run, flat: &flat, samples: &[], objects: s.objects(), stacks: Some(&sp), processes: &[], lines: None, address_lines: None, waits: &[], base: None, threads: &[], timeline: None };
        let p = decoded(&a);
        let got: Vec<(Vec<&str>, i64)> = p.sample.iter().skip(4).map(|s| (frame_names(&p, s), s.value[0])).collect();
        assert_eq!(
            got,
            vec![
                (vec!["read_block [ramfs]", "handle [ramfs]", "ramfs [pid 7]", "c", "a", "main"], 3),
                (vec!["handle [ramfs]", "[truncated]", "ramfs [pid 7]", "c", "a", "main"], 2),
                (vec!["read_block [ramfs]", "handle [ramfs]", "ramfs [pid 7]"], 1),
            ]
        );
    }

    #[test]
    fn stacks_leaf_first_with_both_values() {
        let profile = crate::stacks::tests::profile();
        let (sp, s) = crate::stacks::tests::built(crate::stacks::tests::symbolizer(), &profile);
        let sp = sp.unwrap();
        let flat = FlatProfile::build(&s.samples(&profile), &s, Some(&sp));
        let run = Outcome { program: "abc".into(), arguments: vec![], frequency_hz: 1000, profile, exit: ExitKind::Exited(0), interpreters: Vec::new() };
        let a = Analysis { run: &run, flat: &flat, samples: &[], objects: s.objects(), stacks: Some(&sp), processes: &[], lines: None, address_lines: None, waits: &[], base: None, threads: &[], timeline: None };
        let p = decoded(&a);
        let got: Vec<(Vec<&str>, Vec<i64>)> = p.sample.iter().map(|s| (frame_names(&p, s), s.value.clone())).collect();
        assert_eq!(
            got,
            vec![
                (vec!["c", "a", "main"], vec![3, 3_000_000]),
                (vec!["c", "c", "a", "main"], vec![3, 3_000_000]),
                (vec!["c", "b", "main"], vec![2, 2_000_000]),
                (vec!["b", "[truncated]"], vec![1, 1_000_000]),
            ]
        );
        assert_eq!(p.string_table[0], "");
        assert_eq!(p.period, 1_000_000);
        assert_eq!(p.mapping.len(), 1);
        assert_eq!(p.string_table[p.mapping[0].filename as usize], "/bin/abc");
    }

    /// By address (`--lines`, `--inline`): every location's function is its own, the
    /// truncation marker's too (function ids of the two kinds of location once collided).
    #[test]
    fn by_address_stacks_name_every_frame() {
        let profile = crate::stacks::tests::profile();
        let (sp, s) = crate::stacks::tests::built(crate::stacks::tests::symbolizer(), &profile);
        let sp = sp.unwrap();
        let flat = FlatProfile::build(&s.samples(&profile), &s, Some(&sp));
        let run = Outcome { program: "abc".into(), arguments: vec![], frequency_hz: 1000, profile, exit: ExitKind::Exited(0), interpreters: Vec::new() };
        let sources = prof_objects::lines::Sources::new();
        let names = crate::address_lines::AddressLines::of_run(&s, &sources, &[], Some(&sp), &[]);
        let a = Analysis {
            run: &run,
            flat: &flat,
            samples: &[],
            objects: s.objects(),
            stacks: Some(&sp),
            processes: &[],
            lines: None,
            address_lines: Some(&names),
            waits: &[],
            base: None,
            threads: &[],
            timeline: None,
        };
        let p = decoded(&a);
        let mut got: Vec<(Vec<&str>, i64)> = p.sample.iter().map(|s| (frame_names(&p, s), s.value[0])).collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                (vec!["b", "[truncated]"], 1),
                // Two stacks of these functions at different addresses: one location each.
                (vec!["c", "a", "main"], 1),
                (vec!["c", "a", "main"], 2),
                (vec!["c", "b", "main"], 2),
                (vec!["c", "c", "a", "main"], 3),
            ]
        );
        assert!(p.function.iter().enumerate().all(|(i, f)| f.id == i as u64 + 1), "{:?}", p.function);
    }
}
