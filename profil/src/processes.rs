//! `--children`: the processes the program started, each profiled on its own and all of them
//! together with the program. Each child's samples are named like the program's foreign ones,
//! from the mappings it had (inherited, or its own after an exec), with the run's one
//! [`Names`] of the run, so a function is the same entry in every process and in the total.

use std::fmt::Write;

use crate::flat::FlatProfile;
use crate::naming::Names;
use crate::profile::{ChildProfile, Profile};
use crate::words::{count, percent};
use crate::stacks::StackProfile;
use prof_objects::symbolize::Sample;

/// Functions shown per child process.
pub const TOP_FUNCTIONS: usize = 10;
/// Child processes with a section of their own (the busiest); the table lists every one.
pub const TOP_PROCESSES: usize = 10;
/// Functions shown in the profile of all processes together.
pub const TOP_TOTAL: usize = 20;

/// Rows of the process table: past it, the busiest are kept and the rest counted (the
/// `By program` table and `--json` have them all).
pub const MAX_PROCESS_ROWS: usize = 50;

/// A child process with its samples located and named.
#[derive(Debug, Clone)]
pub struct ProcessAnalysis {
    pub pid: u32,
    pub parent: Option<u32>,
    /// Its program's path (as mapped), or the program's name for a forked copy of it.
    pub program: String,
    pub profile: Profile,
    pub samples: Vec<Sample>,
    pub flat: FlatProfile,
    pub stacks: Option<StackProfile>,
    /// Still running when the session ended ([`ChildProfile::running`]).
    pub running: bool,
}

impl ProcessAnalysis {
    /// Its samples, user and kernel.
    pub fn ticks(&self) -> u64 {
        self.profile.ticks()
    }
}

/// The base name of a program path; a kernel thread's name as it is (`[kworker/0:1]`).
pub fn base_name(path: &str) -> &str {
    if path.starts_with('[') && path.ends_with(']') {
        return path;
    }
    path.rsplit('/').next().unwrap_or(path)
}

/// The root frame of a process's stacks in the exports: `spin [pid 1234]`.
pub fn root_frame(program: &str, pid: u32) -> String {
    crate::profile::process_label(base_name(program), pid)
}

/// The root frame of one of `p`'s processes, by the word its ids are
/// ([`Profile::process_id_word`]): `spin [pid 1234]`, or a stock kernel's `-a` row `fib
/// [context 24]`.
pub fn row_frame(p: &Profile, program: &str, id: u32) -> String {
    crate::profile::row_label(base_name(program), id, p.process_id_word())
}

/// "1 process", "2 processes"; "1 context", "2 contexts" where the rows are contexts.
fn rows_count(n: usize, word: &str) -> String {
    match word {
        crate::profile::CONTEXT => count(n as u64, "context"),
        _ => process_count(n),
    }
}

/// A run's processes named: each one's own profile, and what the sections show of them
/// together, so the sections only render it.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// The processes the program started (`--children`), or every process (`-a`).
    pub processes: Vec<ProcessAnalysis>,
    /// Their user samples together: with the program's own in a tree (its kernel samples,
    /// named by address where its children's are only counted, are the table's rows).
    pub together: FlatProfile,
    /// Each program run more than once (`-a`): its runs' samples together.
    pub runs: Vec<(String, FlatProfile)>,
}

impl Tree {
    /// The program's tree: the processes it started and, together, them with `own` (the
    /// program's located samples).
    pub fn of_program(own: &[Sample], children: &[ChildProfile], names: &Names) -> Tree {
        let processes = analyse(children, names);
        let together = match processes.is_empty() {
            true => FlatProfile::default(),
            false => {
                let user = |s: &&Sample| !names.is_kernel(s.location.object);
                let all: Vec<Sample> = own.iter().chain(processes.iter().flat_map(|c| &c.samples)).filter(user).cloned().collect();
                FlatProfile::build(&all, names, None)
            }
        };
        Tree { processes, together, runs: Vec::new() }
    }

    /// A system-wide run's processes, together and by program.
    pub fn of_system(processes: &[ChildProfile], names: &Names) -> Tree {
        let processes = analyse(processes, names);
        let all: Vec<Sample> = processes.iter().flat_map(|c| &c.samples).cloned().collect();
        let together = FlatProfile::build(&all, names, None);
        // The runs with samples of each program: how many, and their samples together.
        let mut runs: Vec<(String, usize, Vec<Sample>)> = Vec::new();
        for c in processes.iter().filter(|c| c.flat.total > 0) {
            match runs.iter_mut().find(|r| r.0 == c.program) {
                Some(r) => {
                    r.1 += 1;
                    r.2.extend(c.samples.iter().cloned());
                }
                None => runs.push((c.program.clone(), 1, c.samples.clone())),
            }
        }
        let runs = runs.into_iter().filter(|r| r.1 > 1).map(|(program, _, samples)| (program, FlatProfile::build(&samples, names, None))).collect();
        Tree { processes, together, runs }
    }
}

/// Every child's samples and stacks by the run's names (inlined functions as their own with
/// `--inline`, as the program's).
fn analyse(children: &[ChildProfile], names: &Names) -> Vec<ProcessAnalysis> {
    children
        .iter()
        .map(|c| {
            let (samples, stacks, flat) = crate::flat::analyse(&c.profile, names);
            ProcessAnalysis {
                pid: c.pid,
                parent: c.parent,
                program: c.program.clone(),
                profile: c.profile.clone(),
                samples,
                flat,
                stacks,
                running: c.running,
            }
        })
        .collect()
}

/// "1 process", "2 processes".
fn process_count(n: usize) -> String {
    match n {
        1 => "1 process".into(),
        n => format!("{n} processes"),
    }
}

/// Up to `top` entries of a flat profile, then one line for the rest.
fn top_functions(out: &mut String, flat: &FlatProfile, top: usize) {
    let _ = writeln!(out, "  samples       %  function");
    let shown = flat.entries.iter().filter(|e| e.samples > 0);
    for e in shown.clone().take(top) {
        let _ = writeln!(out, "{:>9} {:>7.2}  {}", e.samples, flat.share(e.samples), e.name());
    }
    let rest: Vec<u64> = shown.skip(top).map(|e| e.samples).collect();
    if !rest.is_empty() {
        let n: u64 = rest.iter().sum();
        let more = count(rest.len() as u64, "more function");
        let _ = writeln!(out, "{n:>9} {:>7.2}  ({more})", flat.share(n));
    }
}

/// Processes grouped by program: (program, runs, samples), most samples first.
fn by_program<'a>(processes: impl Iterator<Item = (&'a str, u64)>) -> Vec<(String, usize, u64)> {
    let mut groups: Vec<(String, usize, u64)> = Vec::new();
    let mut index: rustc_hash::FxHashMap<&'a str, usize> = Default::default();
    for (name, ticks) in processes {
        match index.get(name) {
            Some(&i) => {
                groups[i].1 += 1;
                groups[i].2 = groups[i].2.saturating_add(ticks);
            }
            None => {
                index.insert(name, groups.len());
                groups.push((name.to_string(), 1, ticks));
            }
        }
    }
    groups.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    groups
}

/// The `By program` table, each program's share of `all`.
fn by_program_table(out: &mut String, groups: &[(String, usize, u64)], all: u64) {
    let _ = writeln!(out, "By program (its runs together):");
    let _ = writeln!(out, "     runs   samples       %  program");
    for (name, runs, ticks) in groups {
        let _ = writeln!(out, "{runs:>9} {ticks:>9} {:>7.2}  {name}", percent(*ticks, all));
    }
}

/// A row of a process table: its pid, parent, samples, their share of `all`, its program,
/// then `note`.
fn process_row(out: &mut String, c: &ProcessAnalysis, all: u64, note: &str) {
    let parent = c.parent.map_or("-".to_string(), |p| p.to_string());
    let _ = writeln!(out, "{:>9} {parent:>8} {:>9} {:>7.2}  {}{note}", c.pid, c.ticks(), percent(c.ticks(), all), c.program);
}

/// The busiest processes' top functions, each in a section of its own, and a line for the
/// rest.
fn busiest_sections(out: &mut String, processes: &[ProcessAnalysis]) {
    let mut busiest: Vec<&ProcessAnalysis> = processes.iter().filter(|c| c.flat.total > 0).collect();
    busiest.sort_by_key(|c| (std::cmp::Reverse(c.flat.total), c.pid));
    for c in busiest.iter().take(TOP_PROCESSES) {
        let _ = writeln!(out);
        let kernel = c.profile.kernel_ticks().map_or(String::new(), |k| format!(", {k} in the kernel"));
        let _ = writeln!(out, "{} ({}): {}{kernel}:", root_frame(&c.program, c.pid), c.program, count(c.flat.total, "user sample"));
        top_functions(out, &c.flat, TOP_FUNCTIONS);
    }
    if let Some(rest) = busiest.get(TOP_PROCESSES..).filter(|r| !r.is_empty()) {
        let samples = rest.iter().fold(0u64, |n, c| n.saturating_add(c.flat.total));
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "({} more {}, with {} between them: in the table above; --json has each one's profile)",
            rest.len(),
            if rest.len() == 1 { "process" } else { "processes" },
            count(samples, "user sample")
        );
    }
}

/// The busiest programs' top functions, a section each: a program run once as its process
/// (`fib [pid 4242]`), one run many times as its runs together (`true ×300`); those with at
/// least a hundredth of the processes' user samples, [`TOP_PROCESSES`] at most.
fn program_sections(out: &mut String, p: &Profile, processes: &[ProcessAnalysis], runs_together: &[(String, FlatProfile)]) {
    let mut groups: Vec<(&str, Vec<&ProcessAnalysis>)> = Vec::new();
    for c in processes.iter().filter(|c| c.flat.total > 0) {
        match groups.iter_mut().find(|g| g.0 == c.program) {
            Some(g) => g.1.push(c),
            None => groups.push((&c.program, vec![c])),
        }
    }
    let user = |g: &[&ProcessAnalysis]| g.iter().fold(0u64, |n, c| n.saturating_add(c.flat.total));
    let all = groups.iter().fold(0u64, |n, g| n.saturating_add(user(&g.1)));
    groups.sort_by_key(|g| (std::cmp::Reverse(user(&g.1)), g.1[0].pid));
    for (program, runs) in groups.iter().filter(|g| user(&g.1).saturating_mul(100) >= all).take(TOP_PROCESSES) {
        let _ = writeln!(out);
        let kernel = runs.iter().fold(0u64, |n, c| n.saturating_add(c.profile.kernel_ticks().unwrap_or(0)));
        match runs[..] {
            [c] => {
                let _ = writeln!(out, "{} ({program}): {}, {kernel} in the kernel:", row_frame(p, program, c.pid), count(c.flat.total, "user sample"));
                top_functions(out, &c.flat, TOP_FUNCTIONS);
            }
            _ => {
                let Some((_, flat)) = runs_together.iter().find(|r| r.0 == *program) else { continue };
                let _ = writeln!(
                    out,
                    "{} ×{} ({program}, the runs with samples together): {}, {kernel} in the kernel:",
                    base_name(program),
                    runs.len(),
                    count(flat.total, "user sample")
                );
                top_functions(out, flat, TOP_FUNCTIONS);
            }
        }
    }
}

/// A system-wide run (`-a`): where the CPUs' time went (processes in user mode, in the
/// kernel, idle), every process with samples and its share (the busiest
/// [`MAX_PROCESS_ROWS`]), the processes by program (a storm of short runs as one row), the
/// busiest ones' top functions, the kernel's (`kernel`: its samples named, where they are;
/// `kernel_note`: why they are not, where they are not), and all processes together.
pub fn render_system(p: &Profile, tree: &Tree, kernel: &FlatProfile, kernel_note: Option<&str>) -> String {
    let processes = &tree.processes[..];
    let mut out = String::new();
    let idle = p.idle_ticks().unwrap_or(0);
    let user = processes.iter().fold(0u64, |n, c| n.saturating_add(c.profile.user_ticks()));
    let in_kernel = processes.iter().fold(0u64, |n, c| n.saturating_add(c.profile.kernel_ticks().unwrap_or(0)));
    let all = user.saturating_add(in_kernel).saturating_add(idle);
    let seconds = p.clock().elapsed.map_or(String::new(), |e| format!(" in {:.2} s", e.as_secs_f64()));
    let cpus = match (p.source().cpus, p.sampled_cpus()) {
        (None, _) => String::new(),
        // Upstream's profiler: a CPU of its own sends the NMIs, with no ring, sampling nothing.
        (Some(n), Some(sampled)) if sampled < n => {
            let why = match (n - sampled, p.source().sampling.is_some_and(|s| s.is_upstreams())) {
                (1, true) => "the other sends the NMIs",
                (1, false) => "the other has no ring",
                _ => "the others have no ring",
            };
            format!(" on {sampled} of {} ({why})", count(n, "CPU"))
        }
        (Some(n), _) => format!(" on {}", count(n, "CPU")),
    };
    let _ = writeln!(out, "System-wide (-a){seconds}{cpus}: {}:", count(all, "sample"));
    let _ = writeln!(out, "  samples       %  where");
    let _ = writeln!(out, "{user:>9} {:>7.2}  processes, in user mode", percent(user, all));
    let _ = writeln!(out, "{in_kernel:>9} {:>7.2}  processes, in the kernel (their system calls and faults, kernel threads)", percent(in_kernel, all));
    // Upstream's profiler records no kernel code running with interrupts on, the idle loop
    // included, and (a stock kernel's records) names contexts, not processes.
    let upstream = p.source().sampling.is_some_and(|s| s.is_upstreams());
    // Each row's samples are in the total, so the rows add up to it.
    match upstream {
        true if idle == 0 => {
            let _ = writeln!(out, "{}", crate::report::UPSTREAM_IDLE_ROW);
        }
        true => {
            let _ = writeln!(out, "{idle:>9} {:>7.2}  {}", percent(idle, all), crate::report::UPSTREAM_IDLE);
        }
        false => {
            let _ = writeln!(out, "{idle:>9} {:>7.2}  idle", percent(idle, all));
        }
    }
    if p.lost() > 0 {
        let _ = writeln!(out, "{:>9}           lost (the sampler's buffer or table was full): not in the counts", p.lost());
    }
    crate::report::sampling_lines(&mut out, p);
    let busy: Vec<&ProcessAnalysis> = {
        let mut b: Vec<&ProcessAnalysis> = processes.iter().filter(|c| c.ticks() > 0).collect();
        b.sort_by_key(|c| (std::cmp::Reverse(c.ticks()), c.pid));
        b
    };
    // The rows: the busiest, down to a thousandth of the samples (the first always).
    let rows = busy.iter().enumerate().take_while(|(i, c)| *i == 0 || c.ticks().saturating_mul(1000) >= all).count();
    let rows = rows.min(MAX_PROCESS_ROWS);
    let _ = writeln!(out);
    // Its typed records name each sample's process.
    let word = p.process_id_word();
    match word == crate::profile::CONTEXT {
        true => {
            let _ = writeln!(out, "Contexts: {} seen, {} with samples (upstream's profiler names threads by debug_id, not processes):", processes.len(), busy.len());
            let _ = writeln!(out, "  context   parent   samples       %  program");
        }
        false => {
            let _ = writeln!(out, "Processes: {} seen, {} with samples:", processes.len(), busy.len());
            let _ = writeln!(out, "      pid   parent   samples       %  program");
        }
    }
    for c in &busy[..rows] {
        process_row(&mut out, c, all, "");
    }
    if let Some(rest) = busy.get(rows..).filter(|r| !r.is_empty()) {
        let samples = rest.iter().fold(0u64, |n, c| n.saturating_add(c.ticks()));
        // "1 more process", "2 more contexts".
        let more = rows_count(rest.len(), word).replacen(' ', " more ", 1);
        let _ = writeln!(out, "{:>9} {:>8} {samples:>9} {:>7.2}  ({more}, each with less: By program below, --json has each)", "", "", percent(samples, all));
    }
    // Programs with samples, or run more than once (a storm of short runs); the rest counted.
    let groups = by_program(processes.iter().map(|c| (c.program.as_str(), c.ticks())));
    let (shown, quiet): (Vec<_>, Vec<_>) = groups.into_iter().partition(|g| g.2 > 0 || g.1 > 1);
    if !shown.is_empty() {
        let _ = writeln!(out);
        by_program_table(&mut out, &shown[..shown.len().min(MAX_PROCESS_ROWS)], all);
        if let Some(rest) = shown.get(MAX_PROCESS_ROWS..).filter(|r| !r.is_empty()) {
            let samples = rest.iter().fold(0u64, |n, g| n.saturating_add(g.2));
            let _ = writeln!(out, "{:>9} {samples:>9} {:>7.2}  ({})", "", percent(samples, all), count(rest.len() as u64, "more program"));
        }
    }
    if !quiet.is_empty() {
        let _ = writeln!(out, "{:>9} {:>9} {:>7.2}  ({}, each run once, without samples)", quiet.len(), 0, 0.0, count(quiet.len() as u64, "more program"));
    }
    program_sections(&mut out, p, processes, &tree.runs);
    if kernel.total > 0 {
        let _ = writeln!(out);
        let _ = writeln!(out, "The kernel, for every process: {}:", count(kernel.total, "sample"));
        top_functions(&mut out, kernel, TOP_FUNCTIONS);
        if let Some(note) = kernel_note {
            let _ = write!(out, "\n{note}");
        }
    }
    if !processes.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "All {} together: {}:", rows_count(processes.len(), word), count(tree.together.total, "user sample"));
        top_functions(&mut out, &tree.together, TOP_TOTAL);
    }
    out
}

/// The section: every process with its share of the tree's samples, each child's top
/// functions, then the top functions of all processes together.
/// `file`: the program's file as its children's are named (its path without links), so a
/// program that also runs in its children is one row of `By program`.
pub fn render<'a>(
    program: &'a str,
    file: Option<&'a str>,
    p: &Profile,
    tree: &'a Tree,
) -> String {
    let processes = &tree.processes[..];
    let mut out = String::new();
    let own_ticks = p.ticks();
    let all = processes.iter().fold(own_ticks, |n, c| n.saturating_add(c.ticks()));
    let started = match processes.len() {
        0 => format!("'{program}', which started no other process"),
        n => format!("'{program}' and the {} it started", process_count(n)),
    };
    let _ = writeln!(out, "Processes (--children): {started}, {}:", count(all, "sample"));
    let _ = writeln!(out, "      pid   parent   samples       %  program");
    // A program that exec'd again ran those images in its own pid: its row says so.
    let row = match p.later_execs().is_empty() {
        true => program.to_string(),
        false => format!("{program} (exec'd {})", p.later_execs().join(", ")),
    };
    let _ = writeln!(out, "{:>9} {:>8} {own_ticks:>9} {:>7.2}  {row}", p.pid(), "-", percent(own_ticks, all));
    // Many processes: the busiest rows, in their order of start, and the rest counted.
    let shown: Vec<&ProcessAnalysis> = if processes.len() > MAX_PROCESS_ROWS {
        let mut busiest: Vec<&ProcessAnalysis> = processes.iter().collect();
        busiest.sort_by_key(|c| (std::cmp::Reverse(c.ticks()), c.pid));
        busiest.truncate(MAX_PROCESS_ROWS);
        processes.iter().filter(|c| busiest.iter().any(|b| b.pid == c.pid)).collect()
    } else {
        processes.iter().collect()
    };
    for c in &shown {
        process_row(&mut out, c, all, if c.running { "  (still running)" } else { "" });
    }
    if shown.len() < processes.len() {
        let rest = processes.len() - shown.len();
        let samples = processes.iter().filter(|c| !shown.iter().any(|s| s.pid == c.pid)).fold(0u64, |n, c| n.saturating_add(c.ticks()));
        let _ = writeln!(out, "{:>9} {:>8} {samples:>9} {:>7.2}  ({rest} more processes, the least busy: By program below, --json has each)", "", "", percent(samples, all));
    }
    // A program run more than once: its runs together, a row each program.
    // The program as typed (its own row, its forks) is its file, as the runs it exec'd are named.
    let key = |name: &'a str| if name == program { file.unwrap_or(program) } else { name };
    let by_program = by_program(std::iter::once((key(program), own_ticks)).chain(processes.iter().map(|c| (key(c.program.as_str()), c.ticks()))));
    if by_program.iter().any(|g| g.1 > 1) {
        let _ = writeln!(out);
        by_program_table(&mut out, &by_program, all);
    }
    // The session follows the program: a process it started that outlives it is counted up
    // to the program's exit only.
    let running = processes.iter().filter(|c| c.running).count();
    if running > 0 {
        let (was, it) = if running == 1 { ("was", "its") } else { ("were", "their") };
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Note: {} {was} still running when '{program}' exited and profiling stopped: {it} samples after that are not counted (profil -p PID profiles a running process).",
            process_count(running)
        );
    }
    busiest_sections(&mut out, processes);
    if !processes.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "All {} together: {}:", process_count(processes.len() + 1), count(tree.together.total, "user sample"));
        top_functions(&mut out, &tree.together, TOP_TOTAL);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::profile::Parts;
    use super::*;
    use prof_objects::object_file::ObjectFile;
    use prof_objects::symbols::{Function, SymbolTable};
    use prof_core::sampler::Mapping;
    use prof_objects::symbolize::Symbolizer;
    use std::path::Path;

    /// The tree of `program` and `children`, named with `symbolizer` as a run of them is.
    fn tree_of(symbolizer: Symbolizer, program: &Profile, children: &[ChildProfile]) -> Tree {
        let run = Profile::from(Parts { processes: children.to_vec(), ..program.clone().into_parts() });
        let names = Names::of_run(symbolizer, &run, Default::default());
        Tree::of_program(&names.samples(program), children, &names)
    }

    fn object(path: &str, functions: &[(u64, &str)]) -> ObjectFile {
        let symbols = functions.iter().map(|&(addr, name)| Function { addr, size: 0x100, name: name.into() }).collect();
        let mut f = ObjectFile::from_symbols(Path::new(path), SymbolTable::new(symbols));
        f.set_test_code(0x1000, &[0x90; 0x400]);
        f
    }

    /// The program (pid 10) forked 11 (the same file: its functions are the program's), which
    /// exec'd `/bin/tool`. Each process's table row and section (the busiest first), and the
    /// functions of all three together, where `work` of the program and of its fork are one
    /// entry, and the program's kernel samples (by address, as the kernel's symbols name them)
    /// are not among the user samples.
    #[test]
    fn each_process_and_all_together() {
        let symbolizer = Symbolizer::new(object("/bin/prog", &[(0x1000, "work"), (0x1100, "main")]), "./prog", Default::default())
            .program_also_at("/bin/prog")
            .with_object("/bin/tool", object("/bin/tool", &[(0x1000, "crunch"), (0x1200, "parse")]))
            .with_kernel_object(object("/proc/kallsyms", &[(0xffff_ffff_8100_0000, "do_syscall_64")]));
        let map = |path: &str, start: u64| Mapping { start, len: 0x1000, pgoff: 0, path: path.into(), ..Default::default() };
        let program = Profile::from(Parts {
            pid: 10,
            image_samples: vec![(0x1010, 6), (0x1110, 2)],
            kernel_samples: vec![(0xffff_ffff_8100_0010, 2)],
            user_ticks: 8,
            kernel_ticks: Some(2),
            ..Default::default()
        });
        let forked = ChildProfile {
            pid: 11,
            parent: Some(10),
            program: "./prog".into(),
            profile: Profile::from(Parts {
                pid: 11,
                foreign_samples: vec![(0x5555_0010, 4)],
                mappings: vec![map("/bin/prog", 0x5555_0000)],
                user_ticks: 4,
                kernel_ticks: Some(0),
                ..Default::default()
            }),
            running: false,
        };
        let tool = ChildProfile {
            pid: 12,
            parent: Some(11),
            program: "/bin/tool".into(),
            profile: Profile::from(Parts {
                pid: 12,
                foreign_samples: vec![(0x4000_0010, 15), (0x4000_0210, 3), (0x9000_0000, 1)],
                mappings: vec![map("/bin/tool", 0x4000_0000)],
                user_ticks: 19,
                kernel_ticks: Some(1),
                ..Default::default()
            }),
            running: true,
        };
        let tree = tree_of(symbolizer, &program, &[forked, tool]);
        assert_eq!(
            render("./prog", Some("/bin/prog"), &program, &tree),
            "Processes (--children): './prog' and the 2 processes it started, 34 samples:\n\
             \x20     pid   parent   samples       %  program\n\
             \x20      10        -        10   29.41  ./prog\n\
             \x20      11       10         4   11.76  ./prog\n\
             \x20      12       11        20   58.82  /bin/tool  (still running)\n\
             \n\
             By program (its runs together):\n\
             \x20    runs   samples       %  program\n\
             \x20       1        20   58.82  /bin/tool\n\
             \x20       2        14   41.18  /bin/prog\n\
             \n\
             Note: 1 process was still running when './prog' exited and profiling stopped: its samples after that are not counted (profil -p PID profiles a running process).\n\
             \n\
             tool [pid 12] (/bin/tool): 19 user samples, 1 in the kernel:\n\
             \x20 samples       %  function\n\
             \x20      15   78.95  crunch [tool]\n\
             \x20       3   15.79  parse [tool]\n\
             \x20       1    5.26  [unknown]\n\
             \n\
             prog [pid 11] (./prog): 4 user samples, 0 in the kernel:\n\
             \x20 samples       %  function\n\
             \x20       4  100.00  work\n\
             \n\
             All 3 processes together: 31 user samples:\n\
             \x20 samples       %  function\n\
             \x20      15   48.39  crunch [tool]\n\
             \x20      10   32.26  work\n\
             \x20       3    9.68  parse [tool]\n\
             \x20       2    6.45  main\n\
             \x20       1    3.23  [unknown]\n"
        );
        assert_eq!(root_frame(&tree.processes[1].program, tree.processes[1].pid), "tool [pid 12]");
    }

    /// A system-wide run: the CPUs' time (user, kernel, idle), the busy processes, a program
    /// run three times as one row and one section (`tool ×3`), a kernel thread by its name,
    /// quiet programs counted, the kernel's own functions, and all processes together.
    #[test]
    fn a_system_wide_run() {
        let empty = ObjectFile::from_symbols(Path::new(""), SymbolTable::new(Vec::new()));
        let symbolizer = Symbolizer::new(empty, "system", Default::default())
            .with_object("/bin/hog", object("/bin/hog", &[(0x1000, "spin")]))
            .with_object("/bin/tool", object("/bin/tool", &[(0x1000, "crunch"), (0x1200, "parse")]))
            .with_kernel_object(object("/proc/kallsyms", &[(0x1000, "schedule")]));
        let map = |path: &str| vec![Mapping { start: 0x4000_0000, len: 0x1000, pgoff: 0, path: path.into(), ..Default::default() }];
        let process = |pid: u32, parent: Option<u32>, program: &str, user: &[(u64, u64)], kernel: u64| ChildProfile {
            pid,
            parent,
            program: program.into(),
            profile: Profile::from(Parts {
                pid,
                foreign_samples: user.to_vec(),
                mappings: if program.starts_with('/') { map(program) } else { Vec::new() },
                user_ticks: user.iter().map(|s| s.1).sum(),
                kernel_ticks: Some(kernel),
                ..Default::default()
            }),
            running: true,
        };
        let all = [
            process(2, None, "[kworker/0:1]", &[], 1),
            process(10, Some(1), "/bin/hog", &[(0x4000_0010, 30)], 2),
            process(11, Some(1), "/bin/tool", &[(0x4000_0010, 2)], 0),
            process(12, Some(1), "/bin/tool", &[(0x4000_0210, 1)], 0),
            process(13, Some(1), "/bin/tool", &[], 0),
            process(14, Some(1), "/bin/quiet", &[], 0),
        ];
        let p = Profile::from(Parts {
            kernel_samples: vec![(0x1010, 3)],
            idle_ticks: Some(64),
            source: crate::profile::Source { cpus: Some(2), ..Default::default() },
            clock: crate::profile::Clock { elapsed: Some(std::time::Duration::from_millis(50)), ..Default::default() },
            ..Default::default()
        });
        let run = Profile::from(Parts { processes: all.to_vec(), ..p.clone().into_parts() });
        let names = Names::of_run(symbolizer, &run, Default::default());
        let (_, _, kernel) = crate::flat::analyse(&p, &names);
        let processes = Tree::of_system(&all, &names);
        assert_eq!(
            render_system(&p, &processes, &kernel, None),
            "System-wide (-a) in 0.05 s on 2 CPUs: 100 samples:\n\
             \x20 samples       %  where\n\
             \x20      33   33.00  processes, in user mode\n\
             \x20       3    3.00  processes, in the kernel (their system calls and faults, kernel threads)\n\
             \x20      64   64.00  idle\n\
             \n\
             Processes: 6 seen, 4 with samples:\n\
             \x20     pid   parent   samples       %  program\n\
             \x20      10        1        32   32.00  /bin/hog\n\
             \x20      11        1         2    2.00  /bin/tool\n\
             \x20       2        -         1    1.00  [kworker/0:1]\n\
             \x20      12        1         1    1.00  /bin/tool\n\
             \n\
             By program (its runs together):\n\
             \x20    runs   samples       %  program\n\
             \x20       1        32   32.00  /bin/hog\n\
             \x20       3         3    3.00  /bin/tool\n\
             \x20       1         1    1.00  [kworker/0:1]\n\
             \x20       1         0    0.00  (1 more program, each run once, without samples)\n\
             \n\
             hog [pid 10] (/bin/hog): 30 user samples, 2 in the kernel:\n\
             \x20 samples       %  function\n\
             \x20      30  100.00  spin [hog]\n\
             \n\
             tool ×2 (/bin/tool, the runs with samples together): 3 user samples, 0 in the kernel:\n\
             \x20 samples       %  function\n\
             \x20       2   66.67  crunch [tool]\n\
             \x20       1   33.33  parse [tool]\n\
             \n\
             The kernel, for every process: 3 samples:\n\
             \x20 samples       %  function\n\
             \x20       3  100.00  schedule [kernel]\n\
             \n\
             All 6 processes together: 33 user samples:\n\
             \x20 samples       %  function\n\
             \x20      30   90.91  spin [hog]\n\
             \x20       2    6.06  crunch [tool]\n\
             \x20       1    3.03  parse [tool]\n"
        );
        assert_eq!(root_frame("[kworker/0:1]", 2), "[kworker/0:1] [pid 2]");
        // On upstream's profiler (a stock Redox kernel): contexts, no idle, the source named.
        let stock = Profile::from(Parts { idle_ticks: None, source: crate::profile::Source { sampling: Some(prof_core::sampler::Sampling { source: "nmi-ipi", rate: 0 }), ..p.source().clone() }, ..p.into_parts() });
        let text = render_system(&stock, &processes, &kernel, None);
        let head: Vec<&str> = text.lines().take(8).collect();
        assert_eq!(
            head,
            [
                // Its NMIs come from a CPU of their own, which has no ring: the other is sampled.
                "System-wide (-a) in 0.05 s on 1 of 2 CPUs (the other sends the NMIs): 36 samples:",
                "  samples       %  where",
                "       33   91.67  processes, in user mode",
                "        3    8.33  processes, in the kernel (their system calls and faults, kernel threads)",
                "        -       -  idle: not recorded by upstream's profiler (nor kernel code with interrupts on)",
                "Sampling: nmi-ipi, the kernel's rate: upstream's profiler: NMIs from a CPU of its own at the kernel's rate (-F has no effect), kernel code with interrupts off only; the daemons' work for the program, the clock and the waits need kernel-patch/events",
                "",
                "Contexts: 6 seen, 4 with samples (upstream's profiler names threads by debug_id, not processes):",
            ]
        );
        // A row is a context by its debug id, not a process by its pid, wherever it is named.
        assert!(text.contains("\nhog [context 10] (/bin/hog): 30 user samples, 2 in the kernel:\n"), "{text}");
        assert!(text.contains("\nAll 6 contexts together: 33 user samples:\n"), "{text}");
        assert!(!text.contains("[pid"), "{text}");
        assert_eq!(row_frame(&stock, "/bin/hog", 10), "hog [context 10]");
        assert_eq!(row_frame(&stock, "", 24), "[context 24]");
        // Where upstream's records have idle samples, they are a row: the rows add up.
        let idle = Profile::from(Parts { idle_ticks: Some(4), ..stock.clone().into_parts() });
        let text = render_system(&idle, &processes, &kernel, None);
        let head: Vec<&str> = text.lines().take(5).collect();
        assert_eq!(
            head,
            [
                "System-wide (-a) in 0.05 s on 1 of 2 CPUs (the other sends the NMIs): 40 samples:",
                "  samples       %  where",
                "       33   82.50  processes, in user mode",
                "        3    7.50  processes, in the kernel (their system calls and faults, kernel threads)",
                "        4   10.00  idle, what upstream's profiler records of it (kernel code with interrupts off only)",
            ]
        );
        // With typed records (kernel-patch/events) each row is a process.
        let typed = Profile::from(Parts { source: crate::profile::Source { typed_records: true, ..stock.source().clone() }, ..stock.into_parts() });
        let text = render_system(&typed, &processes, &kernel, None);
        let head: Vec<&str> = text.lines().skip(4).take(4).collect();
        assert_eq!(
            head,
            [
                "        -       -  idle: not recorded by upstream's profiler (nor kernel code with interrupts on)",
                "Sampling: nmi-ipi, the kernel's rate: upstream's profiler with typed records (kernel-patch/events): NMIs from a CPU of its own at the kernel's rate (-F has no effect), kernel code with interrupts off only; the clock and the daemons' work from its switch and request records",
                "",
                "Processes: 6 seen, 4 with samples:",
            ]
        );
        assert!(text.contains("\nhog [pid 10] (/bin/hog)") && text.contains("\nAll 6 processes together:"), "{text}");
        // The CPUs sampled as profd says, the kernel's rings: every one with a ring of its own.
        let four = Profile::from(Parts { source: crate::profile::Source { cpus: Some(4), rings: Some(4), ..typed.source().clone() }, ..typed.clone().into_parts() });
        assert!(render_system(&four, &processes, &kernel, None).starts_with("System-wide (-a) in 0.05 s on 4 CPUs: 36 samples:\n"));
        let three = Profile::from(Parts { source: crate::profile::Source { rings: Some(3), ..four.source().clone() }, ..four.into_parts() });
        let text = render_system(&three, &processes, &kernel, None);
        assert!(text.starts_with("System-wide (-a) in 0.05 s on 3 of 4 CPUs (the other sends the NMIs): 36 samples:\n"), "{text}");
        assert_eq!(row_frame(&typed, "/bin/hog", 10), "hog [pid 10]");
    }

    /// `sh -c 'fib 26 100'` with --children: dash execs fib in its own pid, so the program's
    /// row says what it became, not `sh` alone, beside 4,100 samples of fib's.
    #[test]
    fn a_program_that_execd_says_what_it_became() {
        let p = Profile::from(Parts { pid: 177, user_ticks: 4100, later_execs: vec!["/scheme/initfs/bin/fib".into()], ..Default::default() });
        let text = render("sh", None, &p, &Tree::default());
        assert!(text.contains("\n      177        -      4100  100.00  sh (exec'd /scheme/initfs/bin/fib)\n"), "{text}");
    }

    /// A build runs hundreds of processes: the table has every one, sections only the
    /// busiest, and a line says how much the others had.
    #[test]
    fn only_the_busiest_processes_get_a_section() {
        let symbolizer = Symbolizer::new(object("/bin/prog", &[(0x1000, "work")]), "prog", Default::default()).program_also_at("/bin/prog");
        let children: Vec<ChildProfile> = (1..=12u64)
            .map(|i| ChildProfile {
                pid: 100 + i as u32,
                parent: Some(10),
                program: "prog".into(),
                profile: Profile::from(Parts {
                    foreign_samples: vec![(0x5555_0010, i)],
                    mappings: vec![Mapping { start: 0x5555_0000, len: 0x1000, path: "/bin/prog".into(), ..Default::default() }],
                    user_ticks: i,
                    kernel_ticks: Some(0),
                    ..Default::default()
                }),
                running: false,
            })
            .collect();
        let tree = tree_of(symbolizer, &Profile::default(), &children);
        let text = render("prog", None, &Profile::from(Parts { pid: 10, ..Default::default() }), &tree);
        let sections: Vec<&str> = text.lines().filter(|l| l.starts_with("prog [pid ")).collect();
        assert_eq!(sections.len(), TOP_PROCESSES, "{text}");
        assert!(sections[0].starts_with("prog [pid 112] ") && sections[9].starts_with("prog [pid 103] "), "{text}");
        assert!(text.contains("\n(2 more processes, with 3 user samples between them: in the table above; --json has each one's profile)\n"), "{text}");
        // 13 rows of the table, one of By program: 13 runs, 78 samples.
        assert_eq!(text.lines().filter(|l| l.ends_with("  prog")).count(), 14, "{text}");
        assert!(text.contains("\n       13        78  100.00  prog\n"), "{text}");
    }

    /// Hundreds of processes: the table keeps the busiest rows, in their order, and one line
    /// for the rest; `By program` has them all.
    #[test]
    fn a_long_table_keeps_its_busiest_rows() {
        let symbolizer = Symbolizer::new(object("/bin/prog", &[(0x1000, "work")]), "prog", Default::default()).program_also_at("/bin/prog");
        let n = MAX_PROCESS_ROWS as u64 + 10;
        let children: Vec<ChildProfile> = (1..=n)
            .map(|i| ChildProfile {
                pid: 1000 + i as u32,
                parent: Some(10),
                program: "/bin/true".into(),
                profile: Profile::from(Parts { user_ticks: i, kernel_ticks: Some(0), ..Default::default() }),
                running: false,
            })
            .collect();
        let tree = tree_of(symbolizer, &Profile::default(), &children);
        let text = render("prog", None, &Profile::from(Parts { pid: 10, ..Default::default() }), &tree);
        let rows = text.lines().filter(|l| l.ends_with("  /bin/true")).count();
        // 50 rows, then the group's.
        assert_eq!(rows, MAX_PROCESS_ROWS + 1, "{text}");
        // The 10 least busy (1 to 10 samples: 55) on one line.
        assert!(text.contains("       55    3.01  (10 more processes, the least busy: By program below, --json has each)\n"), "{text}");
        assert!(!text.contains("  1010 ") && text.contains("     1011 "), "{text}");
        let all = n * (n + 1) / 2;
        assert!(text.contains(&format!("\n{n:>9} {all:>9}  100.00  /bin/true\n")), "{text}");
    }

    /// `profil --children make` where make runs make: the program as typed and the runs of its
    /// file it exec'd are one program in `By program`, named by the file.
    #[test]
    fn the_program_and_its_exec_d_runs_are_one_program() {
        let symbolizer = Symbolizer::new(object("/usr/bin/make", &[(0x1000, "work")]), "make", Default::default()).program_also_at("/usr/bin/make");
        let run = |pid: u32, program: &str| ChildProfile {
            pid,
            parent: Some(10),
            program: program.into(),
            profile: Profile::from(Parts { user_ticks: 3, kernel_ticks: Some(0), ..Default::default() }),
            running: false,
        };
        let tree = tree_of(symbolizer, &Profile::default(), &[run(11, "/usr/bin/make"), run(12, "make"), run(13, "/usr/bin/dash")]);
        let main = Profile::from(Parts { pid: 10, user_ticks: 1, kernel_ticks: Some(0), ..Default::default() });
        let text = render("make", Some("/usr/bin/make"), &main, &tree);
        let by_program = &text[text.find("By program").unwrap()..];
        assert!(by_program.contains("\n        3         7   70.00  /usr/bin/make\n        1         3   30.00  /usr/bin/dash\n"), "{text}");
        assert!(!by_program.contains("  make\n"), "{text}");
    }
}
