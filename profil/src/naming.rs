//! The naming pass: every address of every process of a run located and named once, into
//! tables shared by all of them, before any section or export is made.
//!
//! A run's addresses are of three kinds (`Frame`): the program's link-time addresses and the
//! kernel's, the same in every process, and runtime addresses, which only a process's
//! mappings place. So a frame is named in its *space*: the one shared space, or the mappings
//! of the process it is of (two processes with the same mappings share one). [`Names::of_run`]
//! walks the run once, in one order (the program's samples and stacks, the daemons' work,
//! every process it started or `-a` saw, threads, waits, the samples in time order), asks the
//! symbolizer where each distinct frame is, and keeps the answers in a frame table, each
//! frame pointing into a function table. The objects are numbered in that walk's order, so
//! every export's object table is the same whichever sections are asked for.
//!
//! After the pass nothing locates an address or reads a symbol table: the sections and the
//! exports look frames up ([`Names::frame`], [`Names::server_frame`]) and render. This module
//! is also where a file's source lines and code are read for what was named ([`Names::lines`],
//! [`Names::source_frames`], [`Names::code`]), so the run's files are read in one place.

use std::cell::Cell;
use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;

use prof_core::sampler::Mapping;
use prof_objects::lines::{LineProfile, Sources, SourceLine};
use prof_objects::symbolize::{FunctionKey, Location, Object, Sample, Symbolizer};

use crate::profile::{Frame, Profile};
use crate::timeline::At;

/// The space a frame is named in: 0 the shared one (the program's and the kernel's
/// addresses), else a process's mappings.
pub type Space = u32;

/// The shared space.
const SHARED: Space = 0;

/// One distinct frame of the run, named.
#[derive(Debug, Clone)]
pub struct NamedFrame {
    /// Where it is (its function, not its inlined ones).
    pub location: Location,
    /// How reports name it: `fib`, `memcpy [libc.so.6]`, `[vdso]`.
    pub name: Rc<str>,
    /// With `--inline`: the functions inlined at it, outermost first (each a location of its
    /// own, named by [`Names::name`]).
    pub inlined: Vec<Location>,
}

/// What the walk names beyond the samples and stacks every report shows.
#[derive(Clone, Copy, Default)]
pub struct Wanted<'s> {
    /// The samples by thread (`--threads`, speedscope).
    pub threads: bool,
    /// The samples in time order (`--timeline`, `--samples`, the Firefox Profiler, speedscope).
    pub timeline: bool,
    /// `--inline`: inlined functions as frames of their own, from these source lines.
    pub inline: Option<&'s Sources>,
    /// `--lines`: the program's samples by source line, from these.
    pub lines: Option<&'s Sources>,
}

/// A run named: the frame and function tables every section and export is made from.
pub struct Names {
    /// Private: after the pass it only answers what objects are and how locations are named.
    symbolizer: Symbolizer,
    spaces: HashMap<Vec<Mapping>, Space>,
    frames: Vec<NamedFrame>,
    at: HashMap<(Space, Frame), u32>,
    /// A daemon's frames: by its object (its executable) and address.
    servers: HashMap<(usize, u64), u32>,
    server_objects: HashMap<String, usize>,
    /// Each function's name, once (inlined functions' included).
    functions: HashMap<FunctionKey, Rc<str>>,
    /// `--lines`: the program's samples by source line.
    lines: Option<LineProfile>,
    /// `--inline`: the inlined functions at each location (object, address) that has any.
    inline: Option<HashMap<(usize, u64), Vec<Location>>>,
    /// Frames asked for that the walk did not name (a bug if ever non-zero).
    misses: Cell<u64>,
    unknown: NamedFrame,
}

impl Names {
    /// Nothing named yet.
    fn new(symbolizer: Symbolizer) -> Names {
        let location = Location { object: usize::MAX, address: None, function: None, inlined: None };
        Names {
            symbolizer,
            spaces: HashMap::default(),
            frames: Vec::new(),
            at: HashMap::default(),
            servers: HashMap::default(),
            server_objects: HashMap::default(),
            functions: HashMap::default(),
            inline: None,
            lines: None,
            misses: Cell::new(0),
            unknown: NamedFrame { location, name: Rc::from("[unknown]"), inlined: Vec::new() },
        }
    }

    /// Name every address of the run `p` (the program's, or a system-wide run's) that the
    /// views `wanted` show, with `symbolizer`, which is the names' from then on.
    pub fn of_run(symbolizer: Symbolizer, p: &Profile, wanted: Wanted) -> Names {
        let mut pass = Pass { names: Names::new(symbolizer), inline: wanted.inline };
        pass.names.inline = wanted.inline.map(|_| HashMap::default());
        pass.process(p);
        pass.daemons_work(p);
        for c in p.processes() {
            pass.process(&c.profile);
        }
        if wanted.threads {
            for process in p.with_processes() {
                pass.threads(process);
            }
        }
        pass.servers_samples(p);
        for site in &p.clock().wait_sites {
            let mappings = mappings_of(p, site.pid);
            let space = pass.space(mappings);
            pass.frames(space, mappings, &site.stack.frames);
        }
        if wanted.timeline {
            for process in p.with_processes().chain(p.daemons().iter().map(|d| &d.profile)) {
                pass.timeline(process, &p.clock().wait_sites);
            }
        }
        // Last: the objects the requests' call sites bring in come after every view's.
        pass.request_sites(p);
        let mut names = pass.names;
        if let Some(sources) = wanted.lines {
            names.lines = Some(LineProfile::build(&names.samples(p), &names.symbolizer, sources));
        }
        names
    }

    /// The space of a process with `mappings` (its runtime addresses are named in).
    pub fn space(&self, mappings: &[Mapping]) -> Space {
        self.spaces.get(mappings).copied().unwrap_or(SHARED)
    }

    /// The frame `f` of a process whose space is `space`.
    pub fn frame(&self, space: Space, f: Frame) -> &NamedFrame {
        let space = if matches!(f, Frame::Foreign(_)) { space } else { SHARED };
        self.found(self.at.get(&(space, f)))
    }

    /// A frame of the daemon whose executable is `path`, at `addr` (its own address, or the
    /// kernel's).
    pub fn server_frame(&self, path: &str, addr: u64) -> &NamedFrame {
        match addr >= prof_core::sampler::KERNEL_SPACE_START {
            true => self.frame(SHARED, Frame::Kernel(addr)),
            false => self.found(self.server_objects.get(path).and_then(|&o| self.servers.get(&(o, addr)))),
        }
    }

    /// The object of the daemon whose executable is `path`.
    pub fn server_object(&self, path: &str) -> Option<usize> {
        self.server_objects.get(path).copied()
    }

    fn found(&self, i: Option<&u32>) -> &NamedFrame {
        match i {
            Some(&i) => &self.frames[i as usize],
            None => {
                self.misses.set(self.misses.get() + 1);
                &self.unknown
            }
        }
    }

    /// Frames asked for that the pass had not named (each named `[unknown]`): none, unless
    /// a view reads an address the walk does not.
    pub fn misses(&self) -> u64 {
        self.misses.get()
    }

    /// How reports name a location: `fib`, `memcpy [libc.so.6]`, `[vdso]`, `square (inlined)`.
    pub fn name(&self, l: &Location) -> Rc<str> {
        match self.functions.get(&FunctionKey::of(l)) {
            Some(name) => name.clone(),
            None => Rc::from(self.symbolizer.name(l)),
        }
    }

    /// The function's part of a location's name (`None` where its object could not be read).
    pub fn function_name(&self, l: &Location) -> Option<String> {
        self.symbolizer.function_name(l)
    }

    /// The run's objects, numbered as the walk met them.
    pub fn objects(&self) -> &[Object] {
        self.symbolizer.objects()
    }

    pub fn object(&self, i: usize) -> &Object {
        self.symbolizer.object(i)
    }

    /// Is object `i` the kernel?
    pub fn is_kernel(&self, i: usize) -> bool {
        self.symbolizer.is_kernel(i)
    }

    /// The source frames at `l`, innermost first (none without line tables).
    pub fn source_frames(&self, sources: &Sources, l: &Location) -> Rc<[SourceLine]> {
        sources.frames(&self.symbolizer, l)
    }

    /// The program's samples per source line, where `--lines` asked for them.
    pub fn lines(&self) -> Option<&LineProfile> {
        self.lines.as_ref()
    }

    /// The code of object `object` from `start` to `end` (link-time addresses), where its file
    /// was read.
    pub fn code(&self, object: usize, start: u64, end: u64) -> Option<&[u8]> {
        self.object(object).file.as_ref()?.code(start, end)
    }

    /// `samples` with each one's location replaced by the innermost inlined function it is
    /// in, where it is in one; `None` where the names have no inlined functions (without
    /// `--inline`): the flat profile's self samples go to inlined code.
    pub fn innermost_inlined(&self, samples: &[Sample]) -> Option<Vec<Sample>> {
        let inline = self.inline.as_ref()?;
        let innermost = |s: &Sample| s.location.address.and_then(|a| inline.get(&(s.location.object, a))?.last().cloned());
        Some(samples.iter().map(|s| Sample { location: innermost(s).unwrap_or_else(|| s.location.clone()), ..s.clone() }).collect())
    }

    /// Each exact sample of `p` placed: its program's, then elsewhere, then the kernel's.
    pub fn samples(&self, p: &Profile) -> Vec<Sample> {
        let space = self.space(p.mappings());
        let placed = |frames: &[(u64, u64)], frame: fn(u64) -> Frame| -> Vec<Sample> {
            frames.iter().map(|&(address, count)| Sample { address, count, location: self.frame(space, frame(address)).location.clone() }).collect()
        };
        let mut out = placed(p.image_samples(), Frame::Program);
        out.extend(placed(p.foreign_samples(), Frame::Foreign));
        out.extend(placed(p.kernel_samples(), Frame::Kernel));
        out
    }
}

/// The mappings of the process `pid` of the run `p` (the program's where it is no other).
pub fn mappings_of(p: &Profile, pid: u32) -> &[Mapping] {
    match p.processes().iter().find(|c| c.pid == pid && pid != p.pid()) {
        Some(child) => child.profile.mappings(),
        None => p.mappings(),
    }
}

/// Are process `pid`'s request call stacks (`--requests -g`) at the program's link addresses:
/// a process without mappings (a static Redox program), or the program of a Redox run, whose
/// stacks are all of its first image (profd keeps none after a later exec, whose image's
/// mappings the program's profile gains)?
pub fn stacks_at_link_addresses(p: &Profile, pid: u32) -> bool {
    mappings_of(p, pid).is_empty() || (pid == p.pid() && p.source().typed_records)
}

/// The walk: the names as they grow.
struct Pass<'s> {
    names: Names,
    inline: Option<&'s Sources>,
}

impl Pass<'_> {
    fn space(&mut self, mappings: &[Mapping]) -> Space {
        if mappings.is_empty() {
            return SHARED;
        }
        if let Some(&space) = self.names.spaces.get(mappings) {
            return space;
        }
        let space = self.names.spaces.len() as Space + 1;
        self.names.spaces.insert(mappings.to_vec(), space);
        space
    }

    /// Name frame `f` of a process whose mappings are `mappings` (its space `space`), once.
    fn frame(&mut self, space: Space, mappings: &[Mapping], f: Frame) {
        let space = if matches!(f, Frame::Foreign(_)) { space } else { SHARED };
        if self.names.at.contains_key(&(space, f)) {
            return;
        }
        let location = self.names.symbolizer.frame(f.into(), mappings);
        let i = self.add(location);
        self.names.at.insert((space, f), i);
    }

    fn frames(&mut self, space: Space, mappings: &[Mapping], frames: &[Frame]) {
        for &f in frames {
            self.frame(space, mappings, f);
        }
    }

    /// A location named, into the frame table: its index there.
    fn add(&mut self, location: Location) -> u32 {
        let named = self.named(location);
        self.names.frames.push(named);
        (self.names.frames.len() - 1) as u32
    }

    /// A location named, its function in the table, its inlined functions with it.
    fn named(&mut self, location: Location) -> NamedFrame {
        let inlined = match self.inline {
            Some(sources) => {
                let frames = sources.frames(&self.names.symbolizer, &location);
                let inner = frames.len().saturating_sub(1);
                frames[..inner].iter().rev().map(|f| self.names.symbolizer.inlined_at(&location, &f.function)).collect()
            }
            None => Vec::new(),
        };
        for l in std::iter::once(&location).chain(&inlined) {
            self.function(l);
        }
        if let (Some(map), Some(a), false) = (self.names.inline.as_mut(), location.address, inlined.is_empty()) {
            map.insert((location.object, a), inlined.clone());
        }
        let name = self.names.name(&location);
        NamedFrame { location, name, inlined }
    }

    fn function(&mut self, l: &Location) -> Rc<str> {
        let symbolizer = &self.names.symbolizer;
        self.names.functions.entry(FunctionKey::of(l)).or_insert_with(|| Rc::from(symbolizer.name(l))).clone()
    }

    /// A process's exact samples and its stacks.
    fn process(&mut self, p: &Profile) {
        let (space, m) = (self.space(p.mappings()), p.mappings());
        for &(a, _) in p.image_samples() {
            self.frame(space, m, Frame::Program(a));
        }
        for &(a, _) in p.foreign_samples() {
            self.frame(space, m, Frame::Foreign(a));
        }
        for &(a, _) in p.kernel_samples() {
            self.frame(space, m, Frame::Kernel(a));
        }
        if p.stacks_recorded() {
            for st in p.stacks() {
                for &f in st.frames.iter().rev() {
                    self.frame(space, m, f);
                }
            }
        }
    }

    /// The daemons' work for the program (Redox): the program's stacks at the waits they
    /// served, each daemon's object and its stacks' frames.
    fn daemons_work(&mut self, p: &Profile) {
        let Some(report) = p.servers() else { return };
        if p.stacks_recorded() {
            let space = self.space(p.mappings());
            for s in &p.clock().served {
                if let Some(site) = p.clock().wait_sites.get(s.site as usize) {
                    for &f in site.stack.frames.iter().rev() {
                        self.frame(space, p.mappings(), f);
                    }
                }
            }
        }
        for server in &report.servers {
            self.server_object(&server.path);
            if !p.stacks_recorded() {
                continue;
            }
            let served = p.clock().served.iter().filter(|s| s.pid == server.pid).map(|s| &s.frames);
            let stacks: Vec<&Vec<u64>> = served.chain(server.stacks.iter().map(|(frames, _, _)| frames)).collect();
            for frames in stacks {
                // Outermost first; a caller by its return address minus one.
                for (i, &addr) in frames.iter().enumerate().rev() {
                    self.server_frame(&server.path, addr.wrapping_sub(u64::from(i > 0)));
                }
            }
        }
    }

    /// Each daemon's sampled addresses (the innermost frame of its stacks).
    fn servers_samples(&mut self, p: &Profile) {
        let Some(report) = p.servers() else { return };
        for server in &report.servers {
            for (frames, _, _) in &server.stacks {
                if let Some(&pc) = frames.first() {
                    self.server_frame(&server.path, pc);
                }
            }
        }
    }

    fn server_object(&mut self, path: &str) -> usize {
        if let Some(&o) = self.names.server_objects.get(path) {
            return o;
        }
        let o = self.names.symbolizer.server_object(path);
        self.names.server_objects.insert(path.to_string(), o);
        // A daemon's object alone (its stacks' root) has a name too.
        self.function(&Location { object: o, address: None, function: None, inlined: None });
        o
    }

    fn server_frame(&mut self, path: &str, addr: u64) {
        if addr >= prof_core::sampler::KERNEL_SPACE_START {
            return self.frame(SHARED, &[], Frame::Kernel(addr));
        }
        let object = self.server_object(path);
        if self.names.servers.contains_key(&(object, addr)) {
            return;
        }
        let location = self.names.symbolizer.server_sample(path, addr);
        let i = self.add(location);
        self.names.servers.insert((object, addr), i);
    }

    /// The call stacks of each process's requests (`--requests -g`): runtime addresses in its
    /// mappings (a static Redox program's, the program's own), a caller by its return address
    /// minus one.
    fn request_sites(&mut self, p: &Profile) {
        let Some(log) = p.requests() else { return };
        for (&pid, requests) in log.by_pid.iter().filter(|(_, r)| !r.stacks.is_empty()) {
            let (mappings, at_link) = (mappings_of(p, pid), stacks_at_link_addresses(p, pid));
            let space = self.space(mappings);
            for stacks in requests.stacks.values() {
                for stack in stacks.counts.keys() {
                    for (i, &a) in stack.iter().enumerate() {
                        self.frame(space, mappings, Frame::of_call_stack(at_link, i, a));
                    }
                }
            }
        }
    }

    /// A process's samples by thread: kept so (the program's), else its timed samples'.
    fn threads(&mut self, p: &Profile) {
        let (space, m) = (self.space(p.mappings()), p.mappings());
        for t in p.by_thread() {
            for &(f, _) in &t.samples {
                self.frame(space, m, f);
            }
        }
        if p.by_thread().is_empty() {
            for s in &p.timeline().samples {
                if let At::Cpu(f) = s.at {
                    self.frame(space, m, f);
                }
            }
        }
    }

    /// A process's samples in time order: their frames, and the wait sites' stacks (named in
    /// the process's space, as its track shows them).
    fn timeline(&mut self, p: &Profile, sites: &[crate::profile::WaitSite]) {
        if p.timeline().is_empty() {
            return;
        }
        let (space, m) = (self.space(p.mappings()), p.mappings());
        for s in &p.timeline().samples {
            if let At::Cpu(f) = s.at {
                self.frame(space, m, f);
            }
        }
        for st in p.stacks() {
            self.frames(space, m, &st.frames);
        }
        for site in sites {
            self.frames(space, m, &site.stack.frames);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::profile::Parts;
    use super::*;
    use crate::profile::{ChildProfile, ThreadSamples};
    use crate::timeline::{TimedSample, Timeline};
    use prof_objects::object_file::ObjectFile;
    use prof_objects::symbols::{Function, SymbolTable};
    use std::path::Path;

    fn object(path: &str, functions: &[(u64, &str)]) -> ObjectFile {
        let functions = functions.iter().map(|&(addr, name)| Function { addr, size: 0x100, name: name.into() }).collect();
        ObjectFile::from_symbols(Path::new(path), SymbolTable::new(functions))
    }

    fn map(path: &str) -> Vec<Mapping> {
        vec![Mapping { start: 0x7f00_0000_0000, len: 0x2000, pgoff: 0, path: path.into(), ..Default::default() }]
    }

    /// The golden run (program, libc, stacks, a daemon, a wait) with two children: one whose
    /// library sits at the very runtime address the program's libc does, one with the
    /// program's mappings; each sampled over time.
    pub(crate) fn tree() -> (Symbolizer, Profile) {
        // The libraries are not here: each is named as an object of its own.
        let symbolizer = Symbolizer::new(object("/bin/fib", &[(0x1000, "fib"), (0x2000, "main")]), "fib", Default::default())
            .with_object("/no/such/ramfs", object("/no/such/ramfs", &[(0x40_2000, "read_block"), (0x40_3000, "handle")]));
        let mut p = crate::profile::example();
        p.parts_mut().mappings = map("/no/such/libc.so.6");
        p.parts_mut().foreign_samples = vec![(0x7f00_0000_0010, 2)];
        let timed = |frame| Timeline { span: 10, samples: vec![TimedSample { time: 1, tid: 50, at: At::Cpu(frame), stack: None }], ..Default::default() };
        let child = |pid: u32, mappings: Vec<Mapping>| ChildProfile {
            pid,
            parent: Some(42),
            program: "/bin/child".into(),
            profile: Profile::from(Parts { pid, foreign_samples: vec![(0x7f00_0000_0010, 3)], mappings, timeline: timed(Frame::Foreign(0x7f00_0000_0010)), ..Default::default() }),
            running: false,
        };
        p.parts_mut().processes = vec![child(50, map("/lib/libm.so")), child(51, map("/no/such/libc.so.6"))];
        p.parts_mut().by_thread = vec![ThreadSamples { tid: 42, name: "fib".into(), samples: vec![(Frame::Program(0x1000), 5)] }];
        p.parts_mut().timeline = timed(Frame::Program(0x1050));
        (symbolizer, p)
    }

    /// An address no walk named is `[unknown]`, and counted, never located afresh.
    #[test]
    fn a_frame_the_pass_did_not_name_is_a_miss() {
        let (symbolizer, p) = tree();
        let names = Names::of_run(symbolizer, &p, Wanted::default());
        assert_eq!(&*names.frame(names.space(p.mappings()), Frame::Program(0x1000)).name, "fib");
        assert_eq!(names.misses(), 0);
        // The program's time order was not asked for: its address was not named.
        assert_eq!(&*names.frame(SHARED, Frame::Program(0x1050)).name, "[unknown]");
        assert_eq!(names.misses(), 1);
    }

    /// The objects are numbered as the walk meets them whatever views are asked for (a view
    /// asked for only adds the objects it alone shows, after the others), so the exports'
    /// object tables do not depend on the sections.
    #[test]
    fn the_objects_order_is_the_walks_whatever_is_asked() {
        let order = |wanted: Wanted| {
            let (_, mut p) = tree();
            // A daemon's track over time, in a file only it maps.
            let daemon = Profile::from(Parts { mappings: map("/no/such/netd"), timeline: Timeline { span: 10, samples: vec![TimedSample { time: 1, tid: 9, at: At::Cpu(Frame::Foreign(0x7f00_0000_0010)), stack: None }], ..Default::default() }, ..Default::default() });
            p.parts_mut().daemons = vec![ChildProfile { pid: 9, parent: None, program: "/no/such/netd".into(), profile: daemon, running: true }];
            // The libraries are read as the walk meets them (here: not found, by their names).
            let symbolizer = Symbolizer::new(object("/bin/fib", &[(0x1000, "fib")]), "fib", Default::default());
            Names::of_run(symbolizer, &p, wanted).objects().iter().map(|o| o.name.clone()).collect::<Vec<_>>()
        };
        let all = order(Wanted { threads: true, timeline: true, ..Default::default() });
        let none = order(Wanted::default());
        assert_eq!(none, ["fib", "libc.so.6", "ramfs", "libm.so"]);
        assert_eq!(all, ["fib", "libc.so.6", "ramfs", "libm.so", "netd"]);
    }
}
