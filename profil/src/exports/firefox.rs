//! `--firefox FILE`: the run in the Firefox Profiler's processed format, as samply writes it
//! (through samply's own writer, `fxprof-processed-profile`), which profiler.firefox.com
//! opens ("Load a profile from file"): the program as a process, each of its threads a track
//! with its samples at their times, each with its stack and the CPU time it stands for, and
//! with `--off-cpu` each wait a marker on its thread (its call, what it waited on, its stack
//! and its length) and the looks that found the thread blocked as samples without CPU time.
//!
//! Frames are addresses in their libraries, each library with its GNU build-id (as the
//! profiler's breakpad and code ids) and a symbol table of the functions the run hit, so the
//! file is named without a symbol server; labels (`[kernel]`, `[off-CPU: call]`,
//! `[truncated]`) are frames of their own. A `.gz` FILE is gzipped (as samply's
//! `profile.json.gz`). Made from the run's samples in time order (Linux): a run without them
//! has the process and no samples.
//!
//! A wait is a thread's consecutive looks at one wait site: it began half a look's period
//! before the first (not before the thread's previous sample) and ended half a period after
//! the last (not after its next one). Two waits at one site with no sample of the thread
//! between them (less than a period on a CPU) are one marker.

use std::collections::BTreeMap;
use std::sync::Arc;

use fxprof_processed_profile::debugid::DebugId;
use fxprof_processed_profile::{
    CategoryColor, CategoryHandle, CategoryPairHandle, CpuDelta, Frame, FrameFlags, FrameInfo, LibraryHandle, LibraryInfo, MarkerFieldFlags,
    MarkerFieldFormat, MarkerTiming, Profile, ReferenceTimestamp, SamplingInterval, StaticSchemaMarker, StaticSchemaMarkerField,
    StackHandle, StringHandle, Symbol, SymbolTable, ThreadHandle, Timestamp,
};
use prof_objects::symbolize::Location;
use rustc_hash::FxHashMap as HashMap;

use crate::exports::time_order::{NamedFrame, NamedSample, NamedTimeline};
use crate::exports::Analysis;

/// The run's file: JSON, gzipped where `gzip`.
pub fn render(a: &Analysis, gzip: bool) -> Vec<u8> {
    let profile = build(a);
    let mut doc = serde_json::to_value(&profile).unwrap_or_default();
    flow_fields(&mut doc);
    let mut json = serde_json::to_vec(&doc).unwrap_or_default();
    // A text file ends its line (`cat` shows it whole, a line-buffered log keeps it).
    json.push(b'\n');
    if !gzip {
        return json;
    }
    use std::io::Write;
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = z.write_all(&json);
    z.finish().unwrap_or_default()
}

/// The flow fields of the document's schemas as the profiler reads flows: the writer
/// (`fxprof-processed-profile` 0.8) has no flow format, so they are written as its strings
/// (`unique-string`: an index of the thread's string table, which is how the processed format
/// of its version, 55, keeps a `flow-id` too) and their format is named here.
fn flow_fields(doc: &mut serde_json::Value) {
    let Some(schemas) = doc.pointer_mut("/meta/markerSchema").and_then(|s| s.as_array_mut()) else { return };
    for schema in schemas.iter_mut().filter(|s| s["name"] == SchemeRequestSchema::TYPE) {
        let Some(fields) = schema["fields"].as_array_mut() else { continue };
        for f in fields.iter_mut().filter(|f| f["key"] == FLOW) {
            f["format"] = serde_json::Value::from("flow-id");
        }
    }
}

/// The key of a request's flow field.
const FLOW: &str = "flow";

/// A marker's schema whose fields are all strings: its type, how the profiler labels it, its
/// fields in order.
trait StringsSchema {
    const TYPE: &'static str;
    const DESCRIPTION: &'static str;
    const CHART_LABEL: &'static str;
    const TOOLTIP_LABEL: &'static str;
    const FIELDS: &'static [StaticSchemaMarkerField];
}

/// A string field of a marker, searchable.
const fn field(key: &'static str, label: &'static str) -> StaticSchemaMarkerField {
    StaticSchemaMarkerField { key, label, format: MarkerFieldFormat::String, flags: MarkerFieldFlags::SEARCHABLE }
}

/// A marker of schema `S`: its name, category and its `N` string fields' values, in the
/// schema's order.
struct StringsMarker<S, const N: usize> {
    name: StringHandle,
    category: CategoryHandle,
    fields: [StringHandle; N],
    schema: std::marker::PhantomData<S>,
}

impl<S, const N: usize> StringsMarker<S, N> {
    fn new(name: StringHandle, category: CategoryHandle, fields: [StringHandle; N]) -> Self {
        StringsMarker { name, category, fields, schema: std::marker::PhantomData }
    }
}

impl<S: StringsSchema, const N: usize> StaticSchemaMarker for StringsMarker<S, N> {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = S::TYPE;
    const DESCRIPTION: Option<&'static str> = Some(S::DESCRIPTION);
    const CHART_LABEL: Option<&'static str> = Some(S::CHART_LABEL);
    const TOOLTIP_LABEL: Option<&'static str> = Some(S::TOOLTIP_LABEL);
    const TABLE_LABEL: Option<&'static str> = Some(S::TOOLTIP_LABEL);
    const FIELDS: &'static [StaticSchemaMarkerField] = S::FIELDS;

    fn name(&self, _: &mut Profile) -> StringHandle {
        self.name
    }

    fn category(&self, _: &mut Profile) -> CategoryHandle {
        self.category
    }

    fn string_field_value(&self, field: u32) -> StringHandle {
        self.fields[(field as usize).min(N - 1)]
    }

    fn number_field_value(&self, _: u32) -> f64 {
        0.0
    }
}

/// One wait of a thread, as its marker shows it: its call and what it waited on.
struct WaitSchema;

impl StringsSchema for WaitSchema {
    const TYPE: &'static str = "Wait";
    const DESCRIPTION: &'static str = "A thread blocked (profil --off-cpu): the call it waited in and on what.";
    const CHART_LABEL: &'static str = "{marker.data.call}";
    const TOOLTIP_LABEL: &'static str = "{marker.data.call} {marker.data.target}";
    const FIELDS: &'static [StaticSchemaMarkerField] = &[field("call", "Call"), field("target", "Waiting on")];
}

/// One request of a thread (`--requests`): what it went to (a system call; a scheme) and,
/// on Redox, the daemon that served it.
struct RequestSchema;

impl StringsSchema for RequestSchema {
    const TYPE: &'static str = "Request";
    const DESCRIPTION: &'static str = "A request of the thread (profil --requests): a system call, enter to exit; on Redox a scheme's, taken to answered.";
    const CHART_LABEL: &'static str = "{marker.data.to}";
    const TOOLTIP_LABEL: &'static str = "{marker.data.to} {marker.data.server}";
    const FIELDS: &'static [StaticSchemaMarkerField] = &[field("to", "Request to"), field("server", "Served by")];
}

/// One request to a scheme (Redox, `--requests`), taken to answered: a marker on the caller's
/// thread and one on the thread of the daemon that took it, both in one flow.
struct SchemeRequestSchema;

impl StringsSchema for SchemeRequestSchema {
    const TYPE: &'static str = "SchemeRequest";
    const DESCRIPTION: &'static str =
        "A request to a scheme (profil --requests on Redox), from its daemon taking it to its answer: on the caller's thread and on the daemon's, one flow.";
    const CHART_LABEL: &'static str = "{marker.data.to}";
    const TOOLTIP_LABEL: &'static str = "{marker.data.to} {marker.data.server} for {marker.data.caller}";
    const FIELDS: &'static [StaticSchemaMarkerField] =
        &[field("to", "Request to"), field("server", "Served by"), field("caller", "For"), field(FLOW, "Flow")];
}

/// A daemon's work on a request of the program's: the wait it served and whose.
struct ServedSchema;

impl StringsSchema for ServedSchema {
    const TYPE: &'static str = "Served";
    const DESCRIPTION: &'static str = "A daemon working on a request of the profiled program's (Redox): from taking it to answering it.";
    const CHART_LABEL: &'static str = "{marker.data.call} of {marker.data.thread}";
    const TOOLTIP_LABEL: &'static str = "served {marker.data.call} {marker.data.target} of thread {marker.data.thread}";
    const FIELDS: &'static [StaticSchemaMarkerField] =
        &[field("call", "The program's call"), field("target", "Waiting on"), field("thread", "The program's thread")];
}

/// The categories frames are drawn in.
struct Categories {
    user: CategoryPairHandle,
    kernel: CategoryPairHandle,
    /// A wait's frame, and the markers of waits and of the daemons' work for them.
    blocked: CategoryHandle,
    /// The markers of requests (`--requests`; a category of its own only where there are
    /// any, so a run without them is written as before).
    requests: CategoryHandle,
}

fn build(a: &Analysis) -> Profile {
    let run = a.run;
    let p = &run.profile;
    let name = crate::processes::base_name(&run.program);
    let interval = match run.frequency_hz {
        0 => SamplingInterval::from_millis(1),
        hz => SamplingInterval::from_nanos(1_000_000_000 / hz),
    };
    // profil keeps no wall-clock date: times are from the program's start.
    let mut out = Profile::new(name, ReferenceTimestamp::from_millis_since_unix_epoch(0.0), interval);
    out.set_os_name(std::env::consts::OS);
    out.set_symbolicated(true);
    let empty = NamedTimeline::default();
    let t = a.timeline.unwrap_or(&empty);
    let blocked = out.add_category("Blocked", CategoryColor::Blue);
    let (user, kernel) = (out.add_category("User", CategoryColor::Yellow).into(), out.add_category("Kernel", CategoryColor::Orange).into());
    let any_requests = std::iter::once(t).chain(t.processes.iter().map(|c| &c.timeline)).any(|t| !t.requests.is_empty() || !t.taken.is_empty());
    let requests = if any_requests { out.add_category("Requests", CategoryColor::Green) } else { blocked };
    let categories = Categories { blocked, user, kernel, requests };
    let all_stacks = std::iter::once(t).chain(t.processes.iter().map(|c| &c.timeline)).flat_map(|t| t.stacks.iter());
    let libs = Libraries::of(&mut out, a.objects, all_stacks);
    let period = 1_000_000_000u64.checked_div(run.frequency_hz).unwrap_or(0);
    let look = p.clock().off_cpu.as_ref().and_then(|o| 1_000_000_000u64.checked_div(o.rate)).unwrap_or(period);
    let mut tracks = Tracks { out: &mut out, libs: &libs, categories: &categories, period, look, wait_sites: &p.clock().wait_sites };
    let names: HashMap<u32, &str> = p.by_thread().iter().map(|t| (t.tid, t.name.as_str())).collect();
    // A look of `--off-cpu` at a thread of a process the program started is that process's.
    let own = |s: &&NamedSample| t.waits.get(s.stack as usize).copied().flatten().is_none_or(|w| p.clock().wait_sites.get(w as usize).is_none_or(|w| w.pid == p.pid()));
    let samples: Vec<&NamedSample> = t.samples.iter().filter(own).collect();
    // A system-wide run (`-a`) has no program: its processes are all there is.
    if !p.is_system_wide() {
        tracks.process(p.pid(), name, &names, t, &samples, Some(0));
    }
    // Each process it started (`--children`), its track beside the program's.
    for c in &t.processes {
        let samples: Vec<&NamedSample> = c.timeline.samples.iter().collect();
        // A daemon that served the program but was never sampled may have no name yet.
        let name = match crate::processes::base_name(&c.program) {
            "" => format!("[pid {}]", c.pid),
            name => name.to_string(),
        };
        tracks.process(c.pid, &name, &HashMap::default(), &c.timeline, &samples, None);
    }
    out
}

/// What the tracks of a file are made with.
struct Tracks<'a> {
    out: &'a mut Profile,
    libs: &'a Libraries,
    categories: &'a Categories,
    /// ns a sample stands for; ns between two looks of `--off-cpu`.
    period: u64,
    look: u64,
    wait_sites: &'a [crate::profile::WaitSite],
}

/// Stack `stack` of timeline `t` as a stack of `thread`'s.
fn intern(libs: &Libraries, c: &Categories, out: &mut Profile, thread: ThreadHandle, t: &NamedTimeline, stack: u32) -> Option<StackHandle> {
    let frames = t.stacks.get(stack as usize).map_or(&[][..], Vec::as_slice);
    let infos: Vec<FrameInfo> = frames.iter().map(|f| libs.frame(out, f, c)).collect();
    out.intern_stack_frames(thread, infos.into_iter())
}

impl Tracks<'_> {
    /// Process `pid`, named `name`, its threads named by `names` (else as it is), with
    /// `samples` of its timeline `t`: a track a thread, its main thread (tid `pid`) first. It
    /// began at `start` (ns), else at its first sample.
    fn process(&mut self, pid: u32, name: &str, names: &HashMap<u32, &str>, t: &NamedTimeline, samples: &[&NamedSample], start: Option<u64>) {
        let start = start.unwrap_or_else(|| samples.iter().map(|s| s.time).min().unwrap_or(0));
        let process = self.out.add_process(name, pid, Timestamp::from_nanos_since_reference(start));
        let end = samples.iter().map(|s| s.time).max().unwrap_or(0).max(t.span);
        self.out.set_process_end_time(process, Timestamp::from_nanos_since_reference(end));
        let mut by_thread: BTreeMap<(bool, u32), Vec<&NamedSample>> = BTreeMap::new();
        for &s in samples {
            by_thread.entry((s.tid != pid, s.tid)).or_default().push(s);
        }
        // A daemon's thread that worked for the program but was never sampled has a track
        // too, as a thread with requests but no sample.
        for tid in t.served.iter().map(|w| w.tid).chain(t.requests.iter().chain(&t.taken).map(|r| r.tid)) {
            by_thread.entry((tid != pid, tid)).or_default();
        }
        if by_thread.is_empty() {
            by_thread.insert((false, pid), Vec::new());
        }
        let (libs, categories) = (self.libs, self.categories);
        let out = &mut *self.out;
        for ((_, tid), samples) in by_thread {
            let start = samples.first().map_or(0, |s| s.time);
            let thread = out.add_thread(process, tid, Timestamp::from_nanos_since_reference(start), tid == pid);
            out.set_thread_name(thread, names.get(&tid).copied().filter(|n| !n.is_empty()).unwrap_or(name));
            // The waits drawn on the thread's track, not only in the marker chart; every
            // thread shown, however idle (the profiler hides idle ones unless told).
            out.set_thread_show_markers_in_timeline(thread, true);
            out.add_initial_visible_thread(thread);
            let mut stacks: HashMap<u32, Option<StackHandle>> = HashMap::default();
            let mut previous: Option<u64> = None;
            for s in &samples {
                let stack = *stacks.entry(s.stack).or_insert_with(|| intern(libs, categories, out, thread, t, s.stack));
                // A sample stands for a period of CPU time, never more than since the previous.
                let cpu = match (s.on_cpu, previous) {
                    (false, _) => 0,
                    (true, Some(before)) => self.period.min(s.time - before),
                    (true, None) => self.period,
                };
                out.add_sample(thread, Timestamp::from_nanos_since_reference(s.time), stack, CpuDelta::from_nanos(cpu), 1);
                previous = Some(s.time);
            }
            // Whole waits where the kernel timed them (Redox), else as the looks saw them.
            let exact: Vec<Wait> = t
                .spans
                .iter()
                .filter(|w| w.tid == tid)
                .filter_map(|w| Some(Wait { site: t.waits.get(w.stack as usize).copied().flatten()?, stack: w.stack, from: w.from, to: w.to }))
                .collect();
            let thread_waits = if exact.is_empty() { waits(&samples, t, self.look) } else { exact };
            for w in t.served.iter().filter(|w| w.tid == tid) {
                let timing = MarkerTiming::Interval(Timestamp::from_nanos_since_reference(w.from), Timestamp::from_nanos_since_reference(w.to));
                let name = out.intern_string("served");
                let call = out.intern_string(if w.call.is_empty() { "a request" } else { &w.call });
                let fields = [call, out.intern_string(&w.target), out.intern_string(&w.for_tid.to_string())];
                out.add_marker(thread, timing, StringsMarker::<ServedSchema, 3>::new(name, categories.blocked, fields));
            }
            for r in t.requests.iter().chain(&t.taken).filter(|r| r.tid == tid) {
                let timing = MarkerTiming::Interval(Timestamp::from_nanos_since_reference(r.from), Timestamp::from_nanos_since_reference(r.till));
                let to = out.intern_string(&r.to);
                let server = out.intern_string(r.server.as_deref().unwrap_or(""));
                let Some(flow) = &r.flow else {
                    out.add_marker(thread, timing, StringsMarker::<RequestSchema, 2>::new(to, categories.requests, [to, server]));
                    continue;
                };
                // Redox: the caller's end and the daemon's, one flow.
                let (pid, caller) = r.caller.unwrap_or((pid, tid));
                let name = match r.caller {
                    Some(_) => out.intern_string(&format!("served {}", r.to)),
                    None => to,
                };
                let fields = [to, server, out.intern_string(&format!("thread {caller} of pid {pid}")), out.intern_string(flow)];
                out.add_marker(thread, timing, StringsMarker::<SchemeRequestSchema, 4>::new(name, categories.requests, fields));
            }
            for w in thread_waits {
                let Some(site) = self.wait_sites.get(w.site as usize) else { continue };
                let call = out.intern_string(&site.call);
                let target = out.intern_string(site.target.as_deref().unwrap_or(""));
                let timing = MarkerTiming::Interval(Timestamp::from_nanos_since_reference(w.from), Timestamp::from_nanos_since_reference(w.to));
                let marker = out.add_marker(thread, timing, StringsMarker::<WaitSchema, 2>::new(call, categories.blocked, [call, target]));
                let stack = *stacks.entry(w.stack).or_insert_with(|| intern(libs, categories, out, thread, t, w.stack));
                out.set_marker_stack(thread, marker, stack);
            }
        }
    }
}

/// One wait of a thread, as its looks saw it: ns from the program's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Wait {
    site: u32,
    stack: u32,
    from: u64,
    to: u64,
}

/// The waits of one thread's samples (in time order), looks `look` ns apart.
fn waits(samples: &[&NamedSample], t: &NamedTimeline, look: u64) -> Vec<Wait> {
    let site_of = |s: &NamedSample| t.waits.get(s.stack as usize).copied().flatten().filter(|_| !s.on_cpu);
    let mut out = Vec::new();
    let mut i = 0;
    while i < samples.len() {
        let Some(site) = site_of(samples[i]) else {
            i += 1;
            continue;
        };
        let mut j = i;
        while j + 1 < samples.len() && site_of(samples[j + 1]) == Some(site) {
            j += 1;
        }
        let half = look / 2;
        let from = samples[i].time.saturating_sub(half).max(i.checked_sub(1).map_or(0, |k| samples[k].time));
        let to = samples[j].time.saturating_add(half).min(samples.get(j + 1).map_or(t.span.max(samples[j].time), |s| s.time));
        out.push(Wait { site, stack: samples[i].stack, from, to });
        i = j + 1;
    }
    out
}

/// The run's libraries, each added once with the functions its frames fell in.
struct Libraries {
    /// By object (an index of the symbolizer's objects).
    handles: HashMap<usize, LibraryHandle>,
}

impl Libraries {
    fn of<'a>(out: &mut Profile, objects: &[prof_objects::symbolize::Object], stacks: impl Iterator<Item = &'a Vec<NamedFrame>>) -> Libraries {
        let mut symbols: BTreeMap<usize, Vec<Symbol>> = BTreeMap::new();
        for f in stacks.flatten() {
            let Some(location) = f.place.as_ref().map(|p| &p.location) else { continue };
            let Some(address) = relative(location) else { continue };
            let list = symbols.entry(location.object).or_default();
            if let Some(function) = &location.function {
                let start = u32::try_from(function.addr).unwrap_or(address);
                let size = u32::try_from(function.size).ok().filter(|&n| n > 0);
                // The function's own name: the profiler shows its library beside it.
                list.push(Symbol { address: start, size, name: function.name.clone() });
            }
        }
        let mut handles = HashMap::default();
        for (object, list) in symbols {
            let o = &objects[object];
            let build_id = o.file.as_ref().and_then(|f| f.build_id());
            // Each file by its real path, where it is here: the same for a run and the run
            // saved and loaded (which records the program's so), whatever link named it.
            let path = match o.path.as_str() {
                "" => o.file.as_ref().map_or_else(|| std::path::PathBuf::from(&o.name), |f| f.path.clone()),
                p => std::path::PathBuf::from(p),
            };
            let path = crate::platform::real_path(&path).unwrap_or(path).to_string_lossy().into_owned();
            let info = LibraryInfo {
                name: o.name.clone(),
                debug_name: o.name.clone(),
                path: path.clone(),
                debug_path: path,
                debug_id: build_id.as_deref().map_or_else(DebugId::nil, debug_id),
                code_id: build_id.as_deref().map(prof_objects::sysroot::hex),
                arch: Some(std::env::consts::ARCH.to_string()),
                symbol_table: Some(Arc::new(SymbolTable::new(list))),
            };
            handles.insert(object, out.add_lib(info));
        }
        Libraries { handles }
    }

    /// A frame of a sample's stack, as the profile has it.
    fn frame(&self, out: &mut Profile, f: &NamedFrame, c: &Categories) -> FrameInfo {
        let in_lib = f.place.as_ref().and_then(|p| Some((self.handles.get(&p.location.object)?, relative(&p.location)?, p.caller)));
        let (frame, category) = match in_lib {
            Some((&lib, address, false)) => (Frame::RelativeAddressFromInstructionPointer(lib, address), c.user),
            Some((&lib, address, true)) => (Frame::RelativeAddressFromAdjustedReturnAddress(lib, address), c.user),
            None => {
                let category = match f.name.as_str() {
                    n if n.starts_with("[off-CPU") => c.blocked.into(),
                    "[kernel]" => c.kernel,
                    _ => c.user,
                };
                (Frame::Label(out.intern_string(&f.name)), category)
            }
        };
        FrameInfo { frame, category_pair: category, flags: FrameFlags::empty() }
    }
}

/// A location's address relative to its object's base (an ELF's link-time addresses are),
/// where it is known and fits the format's 32 bits.
fn relative(l: &Location) -> Option<u32> {
    l.address.and_then(|a| u32::try_from(a).ok()).filter(|_| l.function.is_some())
}

/// The breakpad id of an ELF build-id: its first 16 bytes as a little-endian GUID, age 0 (as
/// breakpad's `dump_syms` and samply make it).
fn debug_id(build_id: &[u8]) -> DebugId {
    let mut guid = [0u8; 16];
    let n = build_id.len().min(16);
    guid[..n].copy_from_slice(&build_id[..n]);
    DebugId::from_guid_age(&guid, 0).unwrap_or_else(|_| DebugId::nil())
}

#[cfg(test)]
mod tests {
    use crate::profile::Parts;
    use super::*;

    #[test]
    fn a_build_id_is_breakpads_guid_with_age_zero() {
        let id: Vec<u8> = (1..=20).collect();
        // The first three fields byte-swapped, the rest as they are, then the age.
        assert_eq!(debug_id(&id).breakpad().to_string(), "0403020106050807090A0B0C0D0E0F100");
        assert_eq!(debug_id(&[0xab]).breakpad().to_string(), "000000AB0000000000000000000000000");
    }

    /// Redox: the kernel timed a wait from its switch out to its switch back: the marker is
    /// that span exactly, at its site, with the wait's stack; no look is needed.
    #[test]
    fn a_wait_the_kernel_timed_is_a_marker_of_its_own_length() {
        use crate::exports::time_order::{NamedServed, ProcessTimeline};
        use crate::profile::{Frame, Stack, WaitSite};
        use crate::timeline::{At, TimedSample, TimedWait, Timeline};
        let (sp, _) = crate::stacks::tests::with_a_server();
        let site = WaitSite { pid: 42, call: "scheme call".into(), target: Some("ramfs [pid 7]".into()), stack: Stack { frames: vec![Frame::Program(0x40_1010)], truncated: false, count: 0 } };
        let on_cpu = |time| TimedSample { time, tid: 42, at: At::Cpu(Frame::Program(0x40_1010)), stack: None };
        let timeline = Timeline {
            span: 9_000_000,
            samples: vec![on_cpu(1_000_000), on_cpu(8_000_000)],
            waits: vec![TimedWait { tid: 42, from: 2_000_000, to: 7_500_000, site: 0 }],
            served: Vec::new(),
        };
        let profile = crate::profile::Profile::from(Parts { pid: 42, timeline, clock: crate::profile::Clock { wait_sites: vec![site], ..Default::default() }, ..Default::default() });
        let run = crate::profile::Outcome::exited("/bin/fib", profile);
        // Named as a run with ramfs's work is, its samples in time order shown.
        let with_ramfs = crate::profile::Profile::from(Parts { servers: Some(crate::stacks::tests::ramfs_worked()), ..run.profile.clone().into_parts() });
        let wanted = crate::naming::Wanted { timeline: true, ..Default::default() };
        let names = crate::naming::Names::of_run(crate::stacks::tests::with_ramfs(), &with_ramfs, wanted);
        let mut named = crate::exports::time_order::name(&run.profile, &names);
        // ramfs's thread 8 worked on that wait's request from 2.5 to 7 ms, never sampled.
        let served = NamedServed { tid: 8, from: 2_500_000, to: 7_000_000, for_tid: 42, call: "scheme call".into(), target: "ramfs [pid 7]".into() };
        let daemon = NamedTimeline { served: vec![served], ..Default::default() };
        named.processes.push(ProcessTimeline { pid: 7, program: "/bin/ramfs".into(), timeline: daemon });
        let flat = crate::flat::FlatProfile { entries: vec![], total: 0, kernel: 0, with_totals: true, whole: None };
        let a = Analysis { timeline: Some(&named), ..Analysis::bare(&run, &flat, &names, Some(&sp)) };
        let doc: serde_json::Value = serde_json::from_slice(&render(&a, false)).unwrap();
        let thread = &doc["threads"][0];
        let m = &thread["markers"];
        assert_eq!(m["length"], 1);
        let strings = thread["stringArray"].as_array().unwrap();
        let string = |v: &serde_json::Value| strings[v.as_u64().unwrap() as usize].as_str().unwrap();
        assert_eq!((string(&m["name"][0]), m["startTime"][0].as_f64(), m["endTime"][0].as_f64()), ("scheme call", Some(2.0), Some(7.5)));
        assert_eq!(string(&m["data"][0]["target"]), "ramfs [pid 7]");
        // Its stack: the wait's, ending in its `[off-CPU: …]` frame.
        let stack = m["data"][0]["cause"]["stack"].as_u64().expect("the wait's stack") as usize;
        let frame = thread["stackTable"]["frame"][stack].as_u64().unwrap() as usize;
        let func = thread["frameTable"]["func"][frame].as_u64().unwrap() as usize;
        assert_eq!(string(&thread["funcTable"]["name"][func]), "[off-CPU: scheme call]");
        // The daemon's track: its thread, the request it served as a marker naming the wait.
        let ramfs = &doc["threads"][1];
        assert_eq!((ramfs["processName"].as_str(), ramfs["tid"].as_str()), (Some("ramfs"), Some("8")));
        let strings = ramfs["stringArray"].as_array().unwrap();
        let string = |v: &serde_json::Value| strings[v.as_u64().unwrap() as usize].as_str().unwrap();
        let m = &ramfs["markers"];
        assert_eq!((string(&m["name"][0]), m["startTime"][0].as_f64(), m["endTime"][0].as_f64()), ("served", Some(2.5), Some(7.0)));
        assert_eq!((string(&m["data"][0]["call"]), string(&m["data"][0]["thread"])), ("scheme call", "42"));
    }

    fn sample(time: u64, on_cpu: bool, stack: u32) -> NamedSample {
        NamedSample { time, tid: 5, on_cpu, stack }
    }

    #[test]
    fn a_wait_runs_from_half_a_look_before_its_first_to_half_after_its_last() {
        // Stack 0 runs; stack 1 is a wait at site 3, stack 2 one at site 4. Looks 1 ms apart.
        let t = NamedTimeline { span: 20_000_000, stacks: vec![Vec::new(); 3], waits: vec![None, Some(3), Some(4)], ..Default::default() };
        let ms = 1_000_000;
        let samples = [
            sample(ms, true, 0),
            sample(2 * ms, false, 1),
            sample(3 * ms, false, 1),
            sample(4 * ms, false, 1),
            sample(4 * ms + 100_000, false, 2),
            sample(9 * ms, true, 0),
            sample(19 * ms + 800_000, false, 1),
        ];
        let refs: Vec<&NamedSample> = samples.iter().collect();
        let w = waits(&refs, &t, ms);
        assert_eq!(
            w,
            [
                // 1.5 to 4.1 ms: from half a look before, to the next sample (another site's).
                Wait { site: 3, stack: 1, from: 1_500_000, to: 4_100_000 },
                // Its previous sample was at 4 ms: 3.6 ms is after it.
                Wait { site: 4, stack: 2, from: 4 * ms, to: 4_600_000 },
                // The run's end bounds the last.
                Wait { site: 3, stack: 1, from: 19_300_000, to: 20 * ms },
            ]
        );
    }
}
