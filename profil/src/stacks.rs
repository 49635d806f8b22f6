//! Call stacks by function: each recorded stack named frame by frame, and what the reports
//! derive from them: inclusive ("total") samples per function and caller → callee arcs.
//!
//! A function is counted once per sample however often it appears on the stack (recursion),
//! and an arc once per sample however often the caller called the callee in it, so every
//! share is a share of samples. A recursive call is an arc from a function to itself, as
//! gprof and perf show it.
//!
//! A stack is whole once it reaches the start routine of a process (`_start`, libc's start
//! function), even where the walk could not read past it: a libc built without frame pointers
//! leaves garbage in the frame-pointer register above its start routine, so a frame-pointer
//! walk (the Redox kernel's) ends there "truncated" with every frame of the program on it.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::naming::Names;
use crate::profile::{Frame, Profile};
use prof_objects::symbolize::{FunctionKey, Location};

/// A function that appears on some stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackFunction {
    pub key: FunctionKey,
    /// As the flat profile names it (`fib`, `memcpy [libc.so.6]`, `[vdso]`).
    pub name: String,
    /// Where it is: the object and, where readable, the function's link-time range.
    pub location: Location,
    /// A daemon's function (or the root of a daemon's stacks, `ramfs [pid 7]`), not the
    /// program's: the flat profile leaves it out.
    pub server: bool,
}

/// One distinct stack of functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedStack {
    /// Indexes into [`StackProfile::functions`], outermost caller first.
    pub frames: Vec<usize>,
    pub truncated: bool,
    pub count: u64,
    /// A daemon's stack hung under the program's wait it served (Redox): `Some`, with whether
    /// that wait's stack is truncated (its frames, the program's part, may be none at all);
    /// `None` for the program's stacks and a daemon's work under no wait of the program's.
    pub under_wait: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StackProfile {
    pub functions: Vec<StackFunction>,
    /// Stacks of functions, root first, most samples first.
    pub stacks: Vec<NamedStack>,
    /// Stacks of the daemons that worked for the program (Redox), each rooted at its daemon
    /// (`ramfs [pid 7]`), most samples first. Not in `total` and `truncated`.
    pub servers: Vec<NamedStack>,
    /// Samples with a stack.
    pub total: u64,
    /// Samples whose stack is truncated.
    pub truncated: u64,
    /// Samples whose stack reaches a process's or thread's start routine (`_start`,
    /// `__libc_start_main`, `clone3`…).
    pub rooted: u64,
    /// Where each address of the recorded stacks is (its function, not its inlined ones).
    pub frame_locations: HashMap<Frame, Location>,
}

impl StackProfile {
    /// Frame-pointer walks end silently where a frame has no frame pointer: such a stack
    /// looks whole, yet it stops short of a start routine, its outer callers missing (code
    /// built without frame pointers). Count every stack that does not reach one as truncated,
    /// as dwarf stacks cut short are.
    pub fn count_unrooted_as_truncated(&mut self) {
        let functions = &self.functions;
        let mut truncated = 0u64;
        for st in &mut self.stacks {
            st.truncated |= !st.frames.first().is_some_and(|&f| functions[f].starts_a_process());
            if st.truncated {
                truncated = truncated.saturating_add(st.count);
            }
        }
        self.truncated = truncated;
    }

    /// Every frame of the profile's stacks by its function in the run's names; `None` when no
    /// stacks were recorded. Where the names have inlined functions (`--inline`), a frame in
    /// inlined code is its function then the functions inlined into it there, each a frame
    /// named `name (inlined)`, as perf shows them.
    pub fn build(p: &Profile, names: &Names) -> Option<StackProfile> {
        if !p.stacks_recorded() {
            return None;
        }
        let mut out = StackProfile::default();
        let space = names.space(p.mappings());
        // Each address's functions, outermost first (more than one: inlined code).
        let mut by_frame: HashMap<Frame, Vec<usize>> = HashMap::default();
        let mut by_key: HashMap<FunctionKey, usize> = HashMap::default();
        // Stacks that differ only in addresses inside the same functions are one stack.
        let mut merged: HashMap<(Vec<usize>, bool, Option<bool>), u64> = HashMap::default();
        for st in p.stacks() {
            let mut frames: Vec<usize> = Vec::with_capacity(st.frames.len());
            for &f in st.frames.iter().rev() {
                let functions = by_frame.entry(f).or_insert_with(|| {
                    let named = names.frame(space, f);
                    out.frame_locations.insert(f, named.location.clone());
                    std::iter::once(&named.location)
                        .chain(&named.inlined)
                        .map(|location| {
                            let key = FunctionKey::of(location);
                            intern(&mut out.functions, &mut by_key, key, || StackFunction {
                                key,
                                name: names.name(location).to_string(),
                                location: location.clone(),
                                server: false,
                            })
                        })
                        .collect()
                });
                frames.extend_from_slice(functions);
            }
            let (rooted, cut) = root(&out.functions, &mut frames);
            if rooted {
                out.rooted = out.rooted.saturating_add(st.count);
            }
            let truncated = (st.truncated || cut) && !rooted;
            let n = merged.entry((frames, truncated, None)).or_insert(0);
            *n = n.saturating_add(st.count);
            out.total = out.total.saturating_add(st.count);
            if truncated {
                out.truncated = out.truncated.saturating_add(st.count);
            }
        }
        out.stacks = sorted(merged);
        if let Some(report) = p.servers() {
            out.add_servers(report, p, names);
        }
        Some(out)
    }

    /// Name the daemons' stacks, each from its own executable, under a root frame per daemon;
    /// a sample the kernel tied to the program's wait it served (Redox, `Profile::served`)
    /// under that wait's stack: `main;read;ramfs [pid 7];handle_read;memcpy`.
    fn add_servers(&mut self, report: &prof_core::formats::ServersReport, p: &Profile, names: &Names) {
        let space = names.space(p.mappings());
        let mut by_key: HashMap<FunctionKey, usize> =
            self.functions.iter().enumerate().map(|(i, f)| (f.key, i)).collect();
        // The program's stack at each wait site, outermost first, named as its own stacks are,
        // and whether it is truncated (a wait whose stack the kernel did not walk has none).
        let mut site_frames: HashMap<u32, (Vec<usize>, bool)> = HashMap::default();
        for s in &p.clock().served {
            if site_frames.contains_key(&s.site) {
                continue;
            }
            let Some(site) = p.clock().wait_sites.get(s.site as usize) else { continue };
            let mut named: Vec<usize> = site
                .stack
                .frames
                .iter()
                .rev()
                .map(|&f| {
                    let named = names.frame(space, f);
                    let key = FunctionKey::of(&named.location);
                    intern(&mut self.functions, &mut by_key, key, || StackFunction {
                        key,
                        name: named.name.to_string(),
                        location: named.location.clone(),
                        server: false,
                    })
                })
                .collect();
            // Rooted and cut as the program's own stacks are.
            let (rooted, cut) = root(&self.functions, &mut named);
            let truncated = (site.stack.truncated || cut || named.is_empty()) && !rooted;
            site_frames.insert(s.site, (named, truncated));
        }
        for server in &report.servers {
            let Some(object) = names.server_object(&server.path) else { continue };
            let root_location = Location { object, address: None, function: None, inlined: None };
            // One root per daemon, even for two instances of one executable.
            let root_key = FunctionKey { object, function: Some(u64::MAX - u64::from(server.pid)), inlined: None };
            // A daemon profd could not name: by its pid.
            let short = match server.path.as_str() {
                "" => "",
                _ => names.object(root_location.object).name.as_str(),
            };
            let name = crate::profile::process_label(short, server.pid);
            let root = intern(&mut self.functions, &mut by_key, root_key, || StackFunction {
                key: root_key,
                name,
                location: root_location,
                server: true,
            });
            let mut merged: HashMap<(Vec<usize>, bool, Option<bool>), u64> = HashMap::default();
            // Its samples under the program's waits (each with its wait's truncation), and the
            // rest under its root alone.
            let stitched: Vec<(&[usize], Option<bool>, &crate::profile::ServedStack)> = p
                .clock().served
                .iter()
                .filter(|s| s.pid == server.pid)
                .filter_map(|s| site_frames.get(&s.site).map(|(prefix, cut)| (prefix.as_slice(), Some(*cut), s)))
                .collect();
            let stacks = stitched
                .iter()
                .map(|(prefix, under_wait, s)| (*prefix, *under_wait, &s.frames, &s.truncated, s.count))
                .chain(server.stacks.iter().filter_map(|(frames, truncated, count)| {
                    let under_waits = stitched
                        .iter()
                        .filter(|(_, _, s)| &s.frames == frames && s.truncated == *truncated)
                        .fold(0u64, |n, (_, _, s)| n.saturating_add(s.count));
                    let rest = count.saturating_sub(under_waits);
                    (rest > 0).then_some((&[][..], None, frames, truncated, rest))
                }));
            for (prefix, under_wait, frames, truncated, count) in stacks {
                let mut named = prefix.to_vec();
                named.push(root);
                // Outermost first; a caller is named by its return address minus one.
                for (i, &addr) in frames.iter().enumerate().rev() {
                    // A daemon's kernel frames (the NMI source samples the kernel) are the
                    // kernel's, named from its ELF as in the daemon's flat table.
                    let frame = names.server_frame(&server.path, addr.wrapping_sub(u64::from(i > 0)));
                    let key = FunctionKey::of(&frame.location);
                    named.push(intern(&mut self.functions, &mut by_key, key, || StackFunction {
                        key,
                        name: frame.name.to_string(),
                        location: frame.location.clone(),
                        server: true,
                    }));
                }
                let n = merged.entry((named, *truncated, under_wait)).or_insert(0);
                *n = n.saturating_add(count);
            }
            self.servers.extend(sorted(merged));
        }
    }

    /// A daemon's stack (one of [`StackProfile::servers`]) in its two parts: the program's
    /// frames it hangs under (outermost first; empty where it served no wait of the
    /// program's), then the daemon's root and its own frames. A truncated daemon stack lacks
    /// its outermost frames between its root and the rest.
    pub fn stitched_parts<'s>(&self, st: &'s NamedStack) -> (&'s [usize], &'s [usize]) {
        let at = st.frames.iter().position(|&f| self.functions[f].server).unwrap_or(0);
        st.frames.split_at(at)
    }

    /// The program's stacks, then the daemons'.
    pub fn all_stacks(&self) -> impl Iterator<Item = &NamedStack> {
        self.stacks.iter().chain(&self.servers)
    }

    /// Samples in the daemons' stacks.
    pub fn server_samples(&self) -> u64 {
        self.servers.iter().fold(0u64, |n, s| n.saturating_add(s.count))
    }

    /// Samples with each function anywhere on their stack (indexed like `functions`), the
    /// daemons' stacks included.
    pub fn inclusive(&self) -> Vec<u64> {
        self.inclusive_over(self.all_stacks())
    }

    /// As [`StackProfile::inclusive`], over the program's own stacks only: the flat profile's
    /// "total" (a daemon's samples stitched under the program's calls are the daemon's).
    pub fn inclusive_own(&self) -> Vec<u64> {
        self.inclusive_over(self.stacks.iter())
    }

    fn inclusive_over<'a>(&self, stacks: impl Iterator<Item = &'a NamedStack>) -> Vec<u64> {
        let mut total = vec![0u64; self.functions.len()];
        let mut seen = HashSet::default();
        for s in stacks {
            seen.clear();
            for &f in &s.frames {
                if seen.insert(f) {
                    total[f] = total[f].saturating_add(s.count);
                }
            }
        }
        total
    }

    /// Samples in which `caller` called `callee` directly: (caller, callee) -> samples.
    /// Recursive calls are arcs from a function to itself.
    pub fn arcs(&self) -> BTreeMap<(usize, usize), u64> {
        let mut arcs = BTreeMap::new();
        let mut seen = HashSet::default();
        for s in self.all_stacks() {
            seen.clear();
            for w in s.frames.windows(2) {
                if seen.insert((w[0], w[1])) {
                    let n: &mut u64 = arcs.entry((w[0], w[1])).or_insert(0);
                    *n = n.saturating_add(s.count);
                }
            }
        }
        arcs
    }

    /// The inclusive samples of the function named `name` (tests, reports).
    pub fn inclusive_of(&self, name: &str) -> u64 {
        let inclusive = self.inclusive();
        self.functions.iter().position(|f| f.name == name).map_or(0, |i| inclusive[i])
    }
}

/// The index of function `key` in `functions`, added as `make` builds it on first sight.
fn intern(
    functions: &mut Vec<StackFunction>,
    by_key: &mut HashMap<FunctionKey, usize>,
    key: FunctionKey,
    make: impl FnOnce() -> StackFunction,
) -> usize {
    *by_key.entry(key).or_insert_with(|| {
        functions.push(make());
        functions.len() - 1
    })
}

/// Merged stacks, most samples first.
fn sorted(merged: HashMap<(Vec<usize>, bool, Option<bool>), u64>) -> Vec<NamedStack> {
    let mut stacks: Vec<NamedStack> = merged
        .into_iter()
        .map(|((frames, truncated, under_wait), count)| NamedStack { frames, truncated, count, under_wait })
        .collect();
    stacks.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.frames.cmp(&b.frames)));
    stacks
}

/// A stack's root (its `frames` outermost first, named in `functions`): `(rooted, cut)`.
/// Rooted where it reaches a process's start routine, nothing but unnamed frames above it:
/// those are dropped (what a frame-pointer walk read past a start routine whose caller left
/// no frame record, relibc's entry stub: garbage, none of the program's). Cut where it does
/// not, and its outermost frame names nothing (`[unknown]`, in no object's function): the
/// walk went astray there, its callers are missing.
fn root(functions: &[StackFunction], frames: &mut Vec<usize>) -> (bool, bool) {
    let unnamed = |f: usize| functions[f].location.function.is_none() && functions[f].name == "[unknown]";
    match frames.iter().position(|&f| functions[f].starts_a_process()) {
        Some(at) if frames[..at].iter().all(|&f| unnamed(f)) => {
            frames.drain(..at);
            (true, false)
        }
        _ => (false, frames.first().is_some_and(|&f| unnamed(f))),
    }
}

/// Where the stacks of processes start: the ELF entry stub and the C libraries' start routines
/// (glibc's and Redox's relibc). Nothing above them is the program's.
const PROCESS_START_FUNCTIONS: &[&str] = &[
    "_start",
    "__libc_start_main",
    "__libc_start_call_main",
    "relibc_crt0",
    "relibc_start_v1",
    // A thread's: glibc's start_thread under clone3 (clone before glibc 2.34).
    "clone3",
    "clone",
    "start_thread",
];

impl StackFunction {
    /// Is this a process's start routine, the root of its stacks?
    fn starts_a_process(&self) -> bool {
        starts_a_process(&self.location)
    }
}

/// Is `l` in a process's start routine, the root of its stacks?
pub fn starts_a_process(l: &Location) -> bool {
    l.function.as_ref().is_some_and(|f| PROCESS_START_FUNCTIONS.contains(&f.name.as_str()))
}

#[cfg(test)]
pub mod tests {
    use crate::profile::Parts;
    use super::*;
    use prof_objects::object_file::ObjectFile;
    use crate::profile::Stack;
    use prof_objects::symbolize::Symbolizer;
    use prof_objects::symbols::{Function, SymbolTable};
    use std::path::Path;

    /// `p`'s stacks named with `s`, and the names.
    pub fn built(s: Symbolizer, p: &Profile) -> (Option<StackProfile>, Names) {
        let names = Names::of_run(s, p, Default::default());
        (StackProfile::build(p, &names), names)
    }

    pub fn symbolizer() -> Symbolizer {
        let symbols = SymbolTable::new(vec![
            Function { addr: 0x1000, size: 0x100, name: "main".into() },
            Function { addr: 0x1100, size: 0x100, name: "a".into() },
            Function { addr: 0x1200, size: 0x100, name: "b".into() },
            Function { addr: 0x1300, size: 0x100, name: "c".into() },
        ]);
        Symbolizer::new(ObjectFile::from_symbols(Path::new("/bin/abc"), symbols), "abc", Default::default())
    }

    fn stack(frames: &[u64], truncated: bool, count: u64) -> Stack {
        Stack { frames: frames.iter().map(|&a| Frame::Program(a)).collect(), truncated, count }
    }

    /// main → a → c three times as often as main → b → c; c recursing once in one sample.
    pub fn profile() -> Profile {
        Profile::from(Parts {
            stacks_recorded: true,
            stacks: vec![
                stack(&[0x1310, 0x1150, 0x1020], false, 2),
                stack(&[0x1320, 0x1150, 0x1020], false, 1),
                stack(&[0x1310, 0x1340, 0x1150, 0x1020], false, 3),
                stack(&[0x1310, 0x1250, 0x1020], false, 2),
                stack(&[0x1250], true, 1),
            ],
            ..Default::default()
        })
    }

    #[test]
    fn names_merges_and_counts_stacks() {
        let sp = built(symbolizer(), &profile()).0.unwrap();
        let names = |st: &NamedStack| st.frames.iter().map(|&f| sp.functions[f].name.as_str()).collect::<Vec<_>>();
        let got: Vec<_> = sp.stacks.iter().map(|st| (names(st), st.truncated, st.count)).collect();
        assert_eq!(
            got,
            vec![
                (vec!["main", "a", "c"], false, 3),
                (vec!["main", "a", "c", "c"], false, 3),
                (vec!["main", "b", "c"], false, 2),
                (vec!["b"], true, 1),
            ]
        );
        assert_eq!((sp.total, sp.truncated), (9, 1));
        // c counted once in the recursive samples.
        let inclusive: Vec<(&str, u64)> =
            sp.functions.iter().zip(sp.inclusive()).map(|(f, n)| (f.name.as_str(), n)).collect();
        assert_eq!(inclusive, vec![("main", 8), ("a", 6), ("c", 8), ("b", 3)]);
        let arcs: Vec<(&str, &str, u64)> = sp
            .arcs()
            .into_iter()
            .map(|((a, b), n)| (sp.functions[a].name.as_str(), sp.functions[b].name.as_str(), n))
            .collect();
        // c's recursion is an arc from c to itself, once per sample.
        assert_eq!(arcs, vec![("main", "a", 6), ("main", "b", 2), ("a", "c", 6), ("c", "c", 3), ("b", "c", 2)]);
    }

    #[test]
    fn stacks_that_reach_a_process_start_routine_are_whole() {
        let symbols = SymbolTable::new(vec![
            Function { addr: 0x1000, size: 0x100, name: "main".into() },
            Function { addr: 0x1100, size: 0x100, name: "fib".into() },
            Function { addr: 0x1400, size: 0x100, name: "relibc_start_v1".into() },
            Function { addr: 0x1500, size: 0x40, name: "_start".into() },
        ]);
        let s = Symbolizer::new(ObjectFile::from_symbols(Path::new("/bin/fib"), symbols), "fib", Default::default());
        let p = Profile::from(Parts {
            stacks_recorded: true,
            stacks: vec![
                // A frame-pointer walk cut above a libc start routine without frames.
                stack(&[0x1110, 0x1020, 0x1410], true, 5),
                // Cut higher up still, at the entry stub.
                stack(&[0x1110, 0x1020, 0x1410, 0x1520], true, 1),
                // Cut inside the program: its callers are missing.
                stack(&[0x1110, 0x1120], true, 2),
                // Complete as walked: the same stack as the first.
                stack(&[0x1110, 0x1020, 0x1410], false, 3),
            ],
            ..Default::default()
        });
        let sp = built(s, &p).0.unwrap();
        let got = named(&sp);
        assert_eq!(
            got,
            vec![
                (vec!["relibc_start_v1", "main", "fib"], false, 8),
                (vec!["fib", "fib"], true, 2),
                (vec!["_start", "relibc_start_v1", "main", "fib"], false, 1),
            ]
        );
        assert_eq!((sp.total, sp.truncated), (11, 2));
    }

    /// Each stack of `sp` as its functions' names, whether truncated, and its count.
    fn named(sp: &StackProfile) -> Vec<(Vec<&str>, bool, u64)> {
        sp.stacks.iter().map(|st| (st.frames.iter().map(|&f| sp.functions[f].name.as_str()).collect(), st.truncated, st.count)).collect()
    }

    /// A Redox walk that read past relibc's start routine into its entry stub's garbage (an
    /// address in no object: `[unknown]`) reached the root all the same: the garbage is
    /// dropped and the stack is whole. One whose outermost frame is such garbage without a
    /// start routine under it went astray: it is truncated, and counted so.
    #[test]
    fn garbage_above_a_start_routine_is_dropped_and_garbage_alone_is_a_cut() {
        let symbols = SymbolTable::new(vec![
            Function { addr: 0x1000, size: 0x100, name: "main".into() },
            Function { addr: 0x1100, size: 0x100, name: "fib".into() },
            Function { addr: 0x1400, size: 0x100, name: "relibc_start_v1".into() },
        ]);
        let s = Symbolizer::new(ObjectFile::from_symbols(Path::new("/bin/fib"), symbols), "fib", Default::default());
        let garbage = Frame::Foreign(0x7f00_dead_0000);
        let frames = |addrs: &[u64], above: bool| -> Vec<Frame> {
            addrs.iter().map(|&a| Frame::Program(a)).chain(above.then_some(garbage)).collect()
        };
        let p = Profile::from(Parts {
            stacks_recorded: true,
            stacks: vec![
                Stack { frames: frames(&[0x1110, 0x1020, 0x1410], true), truncated: false, count: 32 },
                Stack { frames: frames(&[0x1110, 0x1020, 0x1410], false), truncated: false, count: 5 },
                Stack { frames: frames(&[0x1110, 0x1020], true), truncated: false, count: 3 },
                Stack { frames: frames(&[0x1110], false), truncated: true, count: 1 },
            ],
            ..Default::default()
        });
        let sp = built(s, &p).0.unwrap();
        let got = named(&sp);
        assert_eq!(
            got,
            vec![
                (vec!["relibc_start_v1", "main", "fib"], false, 37),
                (vec!["[unknown]", "main", "fib"], true, 3),
                (vec!["fib"], true, 1),
            ]
        );
        assert_eq!((sp.total, sp.truncated, sp.rooted), (41, 4, 37));
    }

    /// The test symbolizer, with ramfs's executable (`read_block`, `handle`) at /bin/ramfs.
    pub fn with_ramfs() -> Symbolizer {
        let ramfs = SymbolTable::new(vec![
            Function { addr: 0x40_2000, size: 0x100, name: "read_block".into() },
            Function { addr: 0x40_3000, size: 0x100, name: "handle".into() },
        ]);
        symbolizer().with_object("/bin/ramfs", ObjectFile::from_symbols(Path::new("/bin/ramfs"), ramfs))
    }

    /// ramfs worked for the program: its stacks, named from its own executable, under a root
    /// of their own; the program's stacks, totals and flat profile are untouched.
    pub fn with_a_server() -> (StackProfile, Names) {
        let mut p = profile();
        p.parts_mut().servers = Some(ramfs_worked());
        let (sp, names) = built(with_ramfs(), &p);
        (sp.unwrap(), names)
    }

    /// ramfs's work for the program: 6 samples at three stacks.
    pub fn ramfs_worked() -> prof_core::formats::ServersReport {
        prof_core::formats::ServersReport {
            servers: vec![prof_core::formats::ServerEntry {
                pid: 7,
                ticks: 6,
                path: "/bin/ramfs".into(),
                stacks: vec![
                    (vec![0x40_2010, 0x40_3005], false, 4),
                    (vec![0x40_2020, 0x40_3005], false, 1),
                    (vec![0x40_3010], true, 1),
                ],
            }],
            ..Default::default()
        }
    }

    /// Redox: the kernel tied 3 of ramfs's samples to the program's wait in `c` (a read):
    /// those go under the program's stack there, the rest stay under ramfs's own root.
    pub fn with_a_stitched_server() -> (StackProfile, Names, Profile) {
        let mut p = profile();
        p.parts_mut().servers = Some(prof_core::formats::ServersReport {
            servers: vec![prof_core::formats::ServerEntry {
                pid: 7,
                ticks: 6,
                path: "/bin/ramfs".into(),
                stacks: vec![(vec![0x40_2010, 0x40_3005], false, 4), (vec![0x40_3010], true, 2)],
            }],
            ..Default::default()
        });
        p.parts_mut().clock.wait_sites = vec![crate::profile::WaitSite {
            pid: 0,
            call: "scheme call".into(),
            target: Some("ramfs [pid 7]".into()),
            stack: crate::profile::Stack {
                frames: vec![Frame::Program(0x1310), Frame::Program(0x114f), Frame::Program(0x101f)],
                truncated: false,
                count: 0,
            },
        }];
        p.parts_mut().clock.served = vec![
            crate::profile::ServedStack { site: 0, pid: 7, frames: vec![0x40_2010, 0x40_3005], truncated: false, count: 3 },
            crate::profile::ServedStack { site: 0, pid: 7, frames: vec![0x40_3010], truncated: true, count: 2 },
        ];
        let (sp, names) = built(with_ramfs(), &p);
        (sp.unwrap(), names, p)
    }

    #[test]
    fn a_daemons_samples_are_stitched_under_the_wait_they_served() {
        let (sp, _, _) = with_a_stitched_server();
        let names = |st: &NamedStack| st.frames.iter().map(|&f| sp.functions[f].name.as_str()).collect::<Vec<_>>();
        let got: Vec<_> = sp.servers.iter().map(|st| (names(st), st.truncated, st.count)).collect();
        assert_eq!(
            got,
            vec![
                (vec!["main", "a", "c", "ramfs [pid 7]", "handle [ramfs]", "read_block [ramfs]"], false, 3),
                (vec!["main", "a", "c", "ramfs [pid 7]", "handle [ramfs]"], true, 2),
                (vec!["ramfs [pid 7]", "handle [ramfs]", "read_block [ramfs]"], false, 1),
            ]
        );
        // As many daemon samples as before; the program's own stacks and totals untouched.
        assert_eq!(sp.server_samples(), 6);
        assert_eq!((sp.total, sp.stacks.len()), (9, 4));
        // The program's functions now hold the daemon's work done for them (the call graph's
        // view), but not in the flat profile's totals, which are the program's own.
        assert_eq!(sp.inclusive_of("main"), 8 + 5);
        let main = sp.functions.iter().position(|f| f.name == "main").unwrap();
        assert_eq!(sp.inclusive_own()[main], 8);
        assert!(!sp.functions.iter().find(|f| f.name == "c").unwrap().server);
        // Its two parts: the program's frames, then the daemon's root and frames.
        let (program, daemon) = sp.stitched_parts(&sp.servers[1]);
        assert_eq!((program.len(), daemon.len()), (3, 2));
        assert_eq!(sp.stitched_parts(&sp.servers[2]).0.len(), 0);
    }

    #[test]
    fn daemons_stacks_have_roots_of_their_own() {
        let (sp, _) = with_a_server();
        let names = |st: &NamedStack| st.frames.iter().map(|&f| sp.functions[f].name.as_str()).collect::<Vec<_>>();
        let got: Vec<_> = sp.servers.iter().map(|st| (names(st), st.truncated, st.count)).collect();
        assert_eq!(
            got,
            vec![
                (vec!["ramfs [pid 7]", "handle [ramfs]", "read_block [ramfs]"], false, 5),
                (vec!["ramfs [pid 7]", "handle [ramfs]"], true, 1),
            ]
        );
        assert_eq!(sp.server_samples(), 6);
        // The program's own: as without the daemon.
        assert_eq!((sp.total, sp.truncated, sp.stacks.len()), (9, 1, 4));
        assert_eq!(sp.inclusive_of("main"), 8);
        assert_eq!(sp.inclusive_of("ramfs [pid 7]"), 6);
        assert!(sp.functions.iter().filter(|f| f.name.contains("ramfs")).all(|f| f.server));
    }

    /// A daemon's kernel frames are named as the kernel's (they were looked up in the
    /// daemon's executable, each address a function of its own).
    #[test]
    fn a_daemons_kernel_frames_are_the_kernels() {
        let ramfs = SymbolTable::new(vec![Function { addr: 0x40_3000, size: 0x100, name: "handle".into() }]);
        let s = symbolizer()
            .with_object("/bin/ramfs", ObjectFile::from_symbols(Path::new("/bin/ramfs"), ramfs))
            .with_kernel(Path::new("/no/such/kernel"));
        let mut p = profile();
        let kernel = prof_core::sampler::KERNEL_SPACE_START + 0x1000;
        p.parts_mut().servers = Some(prof_core::formats::ServersReport {
            servers: vec![prof_core::formats::ServerEntry {
                pid: 7,
                ticks: 2,
                path: "/bin/ramfs".into(),
                stacks: vec![(vec![kernel + 0x10, kernel + 0x20, 0x40_3005], false, 2)],
            }],
            ..Default::default()
        });
        let sp = built(s, &p).0.unwrap();
        let names: Vec<&str> = sp.servers[0].frames.iter().map(|&f| sp.functions[f].name.as_str()).collect();
        assert_eq!(names, ["ramfs [pid 7]", "handle [ramfs]", "[kernel]", "[kernel]"]);
    }

    #[test]
    fn no_stacks_recorded_is_none() {
        assert_eq!(built(symbolizer(), &Profile::default()).0, None);
    }
}
