//! `--children`: the processes the program started, each profiled on its own and all of them
//! together with the program. Each child's samples are named like the program's foreign ones,
//! from the mappings it had (inherited, or its own after an exec), with the run's one
//! [`Symbolizer`], so a function is the same entry in every process and in the total.

use std::fmt::Write;

use crate::flat::FlatProfile;
use crate::objects::lines::Sources;
use crate::profile::{ChildProfile, Profile};
use crate::report::{count, percent};
use crate::stacks::StackProfile;
use crate::objects::symbolize::{Sample, Symbolizer};

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
        self.profile.user_ticks.saturating_add(self.profile.kernel_ticks.unwrap_or(0))
    }
}

/// The base name of a program path.
pub fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The root frame of a process's stacks in the exports: `spin [pid 1234]`.
pub fn root_frame(program: &str, pid: u32) -> String {
    format!("{} [pid {pid}]", base_name(program))
}

/// Locate and name every child's samples and stacks (inlined functions as their own with
/// `inline`, as the program's).
pub fn analyse(children: &[ChildProfile], symbolizer: &mut Symbolizer, inline: Option<&Sources>) -> Vec<ProcessAnalysis> {
    children
        .iter()
        .map(|c| {
            let (samples, stacks, flat) = crate::flat::analyse(&c.profile, symbolizer, inline);
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

/// The section: every process with its share of the tree's samples, each child's top
/// functions, then the top functions of all processes together. `own` is the program's
/// located samples.
pub fn render(
    program: &str,
    p: &Profile,
    own: &[Sample],
    processes: &[ProcessAnalysis],
    symbolizer: &Symbolizer,
) -> String {
    let mut out = String::new();
    let own_ticks = p.user_ticks.saturating_add(p.kernel_ticks.unwrap_or(0));
    let all = processes.iter().fold(own_ticks, |n, c| n.saturating_add(c.ticks()));
    let started = match processes.len() {
        0 => "no other process".to_string(),
        n => process_count(n),
    };
    let _ = writeln!(out, "Processes (--children): '{program}' and the {started} it started, {}:", count(all, "sample"));
    let _ = writeln!(out, "      pid   parent   samples       %  program");
    let _ = writeln!(out, "{:>9} {:>8} {own_ticks:>9} {:>7.2}  {program}", p.pid, "-", percent(own_ticks, all));
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
        let parent = c.parent.map_or("-".to_string(), |p| p.to_string());
        let running = if c.running { "  (still running)" } else { "" };
        let _ = writeln!(out, "{:>9} {parent:>8} {:>9} {:>7.2}  {}{running}", c.pid, c.ticks(), percent(c.ticks(), all), c.program);
    }
    if shown.len() < processes.len() {
        let rest = processes.len() - shown.len();
        let samples = processes.iter().filter(|c| !shown.iter().any(|s| s.pid == c.pid)).fold(0u64, |n, c| n.saturating_add(c.ticks()));
        let _ = writeln!(out, "{:>9} {:>8} {samples:>9} {:>7.2}  ({rest} more processes, the least busy: By program below, --json has each)", "", "", percent(samples, all));
    }
    // A program run more than once: its runs together, a row each program.
    let mut by_program: Vec<(String, usize, u64)> = Vec::new();
    for (name, ticks) in std::iter::once((program, own_ticks)).chain(processes.iter().map(|c| (c.program.as_str(), c.ticks()))) {
        match by_program.iter_mut().find(|g| g.0 == name) {
            Some(g) => {
                g.1 += 1;
                g.2 = g.2.saturating_add(ticks);
            }
            None => by_program.push((name.to_string(), 1, ticks)),
        }
    }
    if by_program.iter().any(|g| g.1 > 1) {
        by_program.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        let _ = writeln!(out);
        let _ = writeln!(out, "By program (its runs together):");
        let _ = writeln!(out, "     runs   samples       %  program");
        for (name, runs, ticks) in &by_program {
            let _ = writeln!(out, "{runs:>9} {ticks:>9} {:>7.2}  {name}", percent(*ticks, all));
        }
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
    let mut busiest: Vec<&ProcessAnalysis> = processes.iter().filter(|c| c.flat.total > 0).collect();
    busiest.sort_by_key(|c| (std::cmp::Reverse(c.flat.total), c.pid));
    for c in busiest.iter().take(TOP_PROCESSES) {
        let _ = writeln!(out);
        let kernel = c.profile.kernel_ticks.map_or(String::new(), |k| format!(", {k} in the kernel"));
        let _ = writeln!(out, "{} ({}): {}{kernel}:", root_frame(&c.program, c.pid), c.program, count(c.flat.total, "user sample"));
        top_functions(&mut out, &c.flat, TOP_FUNCTIONS);
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
    if !processes.is_empty() {
        let together: Vec<Sample> = own.iter().chain(processes.iter().flat_map(|c| &c.samples)).cloned().collect();
        let total = FlatProfile::build(&together, symbolizer, None);
        let _ = writeln!(out);
        let _ = writeln!(out, "All {} together: {}:", process_count(processes.len() + 1), count(total.total, "user sample"));
        top_functions(&mut out, &total, TOP_TOTAL);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::object_file::ObjectFile;
    use crate::objects::symbols::{Function, SymbolTable};
    use prof_core::sampler::Mapping;
    use std::path::Path;

    fn object(path: &str, functions: &[(u64, &str)]) -> ObjectFile {
        let symbols = functions.iter().map(|&(addr, name)| Function { addr, size: 0x100, name: name.into() }).collect();
        let mut f = ObjectFile::from_symbols(Path::new(path), SymbolTable::new(symbols));
        f.set_test_code(0x1000, &[0x90; 0x400]);
        f
    }

    /// The program (pid 10) forked 11 (the same file: its functions are the program's), which
    /// exec'd `/bin/tool`. Each process's table row and section (the busiest first), and the
    /// functions of all three together, where `work` of the program and of its fork are one
    /// entry.
    #[test]
    fn each_process_and_all_together() {
        let mut symbolizer = Symbolizer::new(object("/bin/prog", &[(0x1000, "work"), (0x1100, "main")]), "./prog")
            .program_also_at("/bin/prog")
            .with_object("/bin/tool", object("/bin/tool", &[(0x1000, "crunch"), (0x1200, "parse")]));
        let map = |path: &str, start: u64| Mapping { start, len: 0x1000, pgoff: 0, path: path.into(), ..Default::default() };
        let program = Profile {
            pid: 10,
            image_samples: vec![(0x1010, 6), (0x1110, 2)],
            user_ticks: 8,
            kernel_ticks: Some(2),
            ..Default::default()
        };
        let forked = ChildProfile {
            pid: 11,
            parent: Some(10),
            program: "./prog".into(),
            profile: Profile {
                pid: 11,
                foreign_samples: vec![(0x5555_0010, 4)],
                mappings: vec![map("/bin/prog", 0x5555_0000)],
                user_ticks: 4,
                kernel_ticks: Some(0),
                ..Default::default()
            },
            running: false,
        };
        let tool = ChildProfile {
            pid: 12,
            parent: Some(11),
            program: "/bin/tool".into(),
            profile: Profile {
                pid: 12,
                foreign_samples: vec![(0x4000_0010, 15), (0x4000_0210, 3), (0x9000_0000, 1)],
                mappings: vec![map("/bin/tool", 0x4000_0000)],
                user_ticks: 19,
                kernel_ticks: Some(1),
                ..Default::default()
            },
            running: true,
        };
        let own = symbolizer.locate(&program);
        let children = analyse(&[forked, tool], &mut symbolizer, None);
        assert_eq!(
            render("./prog", &program, &own, &children, &symbolizer),
            "Processes (--children): './prog' and the 2 processes it started, 34 samples:\n\
             \x20     pid   parent   samples       %  program\n\
             \x20      10        -        10   29.41  ./prog\n\
             \x20      11       10         4   11.76  ./prog\n\
             \x20      12       11        20   58.82  /bin/tool  (still running)\n\
             \n\
             By program (its runs together):\n\
             \x20    runs   samples       %  program\n\
             \x20       1        20   58.82  /bin/tool\n\
             \x20       2        14   41.18  ./prog\n\
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
        assert_eq!(root_frame(&children[1].program, children[1].pid), "tool [pid 12]");
    }

    /// A build runs hundreds of processes: the table has every one, sections only the
    /// busiest, and a line says how much the others had.
    #[test]
    fn only_the_busiest_processes_get_a_section() {
        let mut symbolizer = Symbolizer::new(object("/bin/prog", &[(0x1000, "work")]), "prog").program_also_at("/bin/prog");
        let children: Vec<ChildProfile> = (1..=12u64)
            .map(|i| ChildProfile {
                pid: 100 + i as u32,
                parent: Some(10),
                program: "prog".into(),
                profile: Profile {
                    foreign_samples: vec![(0x5555_0010, i)],
                    mappings: vec![Mapping { start: 0x5555_0000, len: 0x1000, path: "/bin/prog".into(), ..Default::default() }],
                    user_ticks: i,
                    kernel_ticks: Some(0),
                    ..Default::default()
                },
                running: false,
            })
            .collect();
        let analysed = analyse(&children, &mut symbolizer, None);
        let text = render("prog", &Profile { pid: 10, ..Default::default() }, &[], &analysed, &symbolizer);
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
        let mut symbolizer = Symbolizer::new(object("/bin/prog", &[(0x1000, "work")]), "prog").program_also_at("/bin/prog");
        let n = MAX_PROCESS_ROWS as u64 + 10;
        let children: Vec<ChildProfile> = (1..=n)
            .map(|i| ChildProfile {
                pid: 1000 + i as u32,
                parent: Some(10),
                program: "/bin/true".into(),
                profile: Profile { user_ticks: i, kernel_ticks: Some(0), ..Default::default() },
                running: false,
            })
            .collect();
        let analysed = analyse(&children, &mut symbolizer, None);
        let text = render("prog", &Profile { pid: 10, ..Default::default() }, &[], &analysed, &symbolizer);
        let rows = text.lines().filter(|l| l.ends_with("  /bin/true")).count();
        // 50 rows, then the group's.
        assert_eq!(rows, MAX_PROCESS_ROWS + 1, "{text}");
        // The 10 least busy (1 to 10 samples: 55) on one line.
        assert!(text.contains("       55    3.01  (10 more processes, the least busy: By program below, --json has each)\n"), "{text}");
        assert!(!text.contains("  1010 ") && text.contains("     1011 "), "{text}");
        let all = n * (n + 1) / 2;
        assert!(text.contains(&format!("\n{n:>9} {all:>9}  100.00  /bin/true\n")), "{text}");
    }
}
