//! "Where the time went": the program's own ticks beside the ticks of the daemons that worked
//! for it, of idle and of other processes, then the top functions of each daemon named from
//! its own executable. On Redox most of what a program asks for (files, the console, the
//! network) is done by scheme daemons, and the kernel labels a daemon as working for the
//! profiled program from taking its request to answering it (pkprof's "server process"
//! labelling); on Linux the section shows the program's own and kernel ticks only (the README
//! says what Redox adds).

use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write;
use std::path::Path;

use prof_core::formats::{ServerEntry, ServersReport};

use crate::naming::Names;
use crate::profile::Profile;
use crate::words::percent;

/// Functions shown per daemon.
pub const TOP_FUNCTIONS: usize = 5;

/// One daemon's samples by function: (function, samples), most first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFunctions {
    pub pid: u32,
    /// The executable's file name (`ramfs`), or its path as the kernel gave it.
    pub name: String,
    pub path: String,
    /// Its samples while it worked for the program: in its own code and, with the NMI
    /// source, in the kernel for it (`kernel_ticks` of them).
    pub ticks: u64,
    pub kernel_ticks: u64,
    pub functions: Vec<(String, u64)>,
}

impl ServerFunctions {
    /// The daemon as the report names it: `ramfs [pid 7]`, or by its pid where profd had no
    /// name for it (a profd before it named every daemon it lists).
    pub fn label(&self) -> String {
        crate::profile::process_label(&self.name, self.pid)
    }
}

/// Each daemon's samples (their innermost frame) by the run's `names`: its own code
/// from its executable (Redox daemons are static, linked at their run addresses; a daemon whose
/// file cannot be read keeps its addresses), its kernel samples from the kernel's ELF
/// (`sys_read [kernel]`, as the program's are).
pub fn name_servers(report: &ServersReport, names: &Names) -> Vec<ServerFunctions> {
    report
        .servers
        .iter()
        .map(|s: &ServerEntry| {
            let mut by_name: HashMap<String, u64> = HashMap::default();
            let mut kernel_ticks = 0u64;
            for (frames, _, count) in &s.stacks {
                let Some(&pc) = frames.first() else { continue };
                let in_kernel = pc >= prof_core::sampler::KERNEL_SPACE_START;
                let frame = names.server_frame(&s.path, pc);
                // Without the kernel's ELF its samples are one `[kernel]`, as the program's are.
                let name = match (&frame.location.function, in_kernel) {
                    (_, true) => frame.name.to_string(),
                    (Some(f), false) => f.name.clone(),
                    (None, false) => format!("{pc:#x}"),
                };
                if in_kernel {
                    kernel_ticks = kernel_ticks.saturating_add(*count);
                }
                *by_name.entry(name).or_insert(0) += count;
            }
            let mut functions: Vec<(String, u64)> = by_name.into_iter().collect();
            functions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let name = Path::new(&s.path).file_name().map_or(s.path.clone(), |n| n.to_string_lossy().into_owned());
            ServerFunctions { pid: s.pid, name, path: s.path.clone(), ticks: s.ticks, kernel_ticks, functions }
        })
        .collect()
}

/// The section. `servers` is `None` where the backend does not label servers (Linux).
pub fn render(program: &str, p: &Profile, servers: Option<(&ServersReport, &[ServerFunctions])>) -> String {
    let mut out = String::new();
    let kernel = p.kernel_ticks().unwrap_or(0);
    let Some((report, named)) = servers else {
        let all = p.user_ticks().saturating_add(kernel);
        let _ = writeln!(out, "Where the time went ({all} ticks of '{program}'):");
        let _ = writeln!(out, "    ticks       %  where");
        let _ = writeln!(out, "{:>9} {:>7.2}  its own code", p.user_ticks(), percent(p.user_ticks(), all));
        match p.kernel_ticks() {
            Some(k) => {
                let _ = writeln!(out, "{k:>9} {:>7.2}  the kernel, for it", percent(k, all));
            }
            None => {
                let _ = writeln!(out, "        -       -  the kernel, for it (not counted: not permitted)");
            }
        }
        return out;
    };
    let a = &report.account;
    // Upstream's profiler (a stock kernel) records idle only where interrupts are off, and
    // tells no daemon's work apart.
    let upstream = p.source().sampling.is_some_and(|s| s.is_upstreams());
    // What it records of idle is a row, in the total (as -a's): the rows add up to it.
    let idle = match upstream {
        true => (a.idle > 0).then_some(crate::report::UPSTREAM_IDLE),
        false => Some("idle"),
    };
    // A daemon's row holds its kernel samples already (the NMI source samples the kernel, and
    // keeps them with the daemon's): the kernel's row has only those no daemon's row holds.
    let in_rows = named.iter().fold(0u64, |n, s| n.saturating_add(s.kernel_ticks));
    let kernel_elsewhere = a.server_kernel.saturating_sub(in_rows);
    // The processes it started (`--children`) are the run's too: their ticks are a row, so
    // the rows add up to every tick of the run.
    let started = p.processes().iter().fold(0u64, |n, c| n.saturating_add(c.profile.ticks()));
    let rows: Vec<(u64, String)> = [
        (p.user_ticks(), "its own code".to_string()),
        (kernel, "the kernel, for it".to_string()),
    ]
    .into_iter()
    .chain((!p.processes().is_empty()).then(|| (started, "the processes it started (--children)".to_string())))
    // A daemon with no sample (it took a request no tick fell in) has no row.
    .chain(named.iter().filter(|s| s.ticks > 0).map(|s| (s.ticks, format!("{} working for it", s.label()))))
    .chain((a.servers_dropped > 0).then(|| (a.servers_dropped, "daemons working for it, samples not kept".to_string())))
    .chain((kernel_elsewhere > 0).then(|| (kernel_elsewhere, "the kernel, for those daemons".to_string())))
    .chain(idle.map(|what| (a.idle, what.to_string())))
    .chain([(a.other, "other processes".to_string())])
    .collect();
    let all = rows.iter().fold(0u64, |n, r| n.saturating_add(r.0));
    let _ = writeln!(out, "Where the time went ({all} ticks of the run, every CPU):");
    let _ = writeln!(out, "    ticks       %  where");
    for (ticks, what) in &rows {
        let _ = writeln!(out, "{ticks:>9} {:>7.2}  {what}", percent(*ticks, all));
    }
    if upstream {
        if idle.is_none() {
            let _ = writeln!(out, "{}", crate::report::UPSTREAM_IDLE_ROW);
        }
        // Its typed records have the requests too.
        if !p.source().typed_records {
            let _ = writeln!(out, "The daemons' work for '{program}' is not told apart by upstream's profiler: it is among the other processes.");
            return out;
        }
    }
    let for_it = p.user_ticks().saturating_add(kernel).saturating_add(a.servers());
    let _ = writeln!(
        out,
        "'{program}' and the daemons working for it: {for_it} ticks ({:.2} %), {:.2} % of them in the daemons.",
        percent(for_it, all),
        percent(a.servers(), for_it)
    );
    for s in named.iter().filter(|s| s.ticks > 0) {
        let _ = writeln!(out);
        let samples = crate::words::count(s.ticks, "sample");
        let kernel = match s.kernel_ticks {
            0 => String::new(),
            k => format!(" ({k} in the kernel)"),
        };
        let path = match s.path.as_str() {
            "" => String::new(),
            path => format!(" ({path})"),
        };
        let _ = writeln!(out, "{}{path}, {samples} working for '{program}'{kernel}:", s.label());
        let _ = writeln!(out, "  samples       %  function");
        for (name, n) in s.functions.iter().take(TOP_FUNCTIONS) {
            let _ = writeln!(out, "{n:>9} {:>7.2}  {name}", percent(*n, s.ticks));
        }
        if s.functions.len() > TOP_FUNCTIONS {
            let rest: u64 = s.functions[TOP_FUNCTIONS..].iter().map(|f| f.1).sum();
            let _ = writeln!(out, "{rest:>9} {:>7.2}  ({} more functions)", percent(rest, s.ticks), s.functions.len() - TOP_FUNCTIONS);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::profile::Parts;
    use super::*;
    use prof_objects::object_file::ObjectFile;
    use prof_objects::symbolize::Symbolizer;
    use prof_objects::symbols::{Function, SymbolTable};
    use prof_core::sampler::Account;

    fn report() -> ServersReport {
        ServersReport {
            own_user: 10,
            own_kernel: 0,
            account: Account { server_user: 25, server_kernel: 5, servers_dropped: 1, idle: 40, other: 22 },
            servers: vec![
                ServerEntry {
                    pid: 20,
                    ticks: 23,
                    path: "/scheme/initfs/bin/ramfs".into(),
                    stacks: vec![
                        (vec![0x40_2010, 0x40_3005], false, 12),
                        (vec![0x40_2020, 0x40_3005], false, 6),
                        (vec![0x40_2110], true, 2),
                        // Its kernel samples (the NMI source), kept with its own.
                        (vec![KERNEL_TEXT + 0x10, 0x40_2010], false, 3),
                    ],
                },
                ServerEntry { pid: 21, ticks: 4, path: "/usr/lib/drivers/ahcid".into(), stacks: vec![(vec![0x40_9000], true, 4)] },
            ],
        }
    }

    const KERNEL_TEXT: u64 = 0xffff_ffff_8010_0000;

    /// The daemons of `r` named as a run with them is, with `symbolizer`.
    fn named(r: &ServersReport, symbolizer: Symbolizer) -> Vec<ServerFunctions> {
        let p = Profile::from(Parts { servers: Some(r.clone()), ..Default::default() });
        name_servers(r, &Names::of_run(symbolizer, &p, Default::default()))
    }

    /// The run's symbolizer: ramfs's executable and the kernel's ELF (ahcid's file is not
    /// here).
    fn symbolizer() -> Symbolizer {
        let file = |path: &str, functions| ObjectFile::from_symbols(Path::new(path), SymbolTable::new(functions));
        let ramfs = file(
            "/scheme/initfs/bin/ramfs",
            vec![
                Function { addr: 0x40_2000, size: 0x100, name: "read_block".into() },
                Function { addr: 0x40_2100, size: 0x100, name: "handle".into() },
            ],
        );
        let kernel = file("/usr/lib/boot/kernel", vec![Function { addr: KERNEL_TEXT, size: 0x100, name: "sys_read".into() }]);
        Symbolizer::new(file("/usr/bin/iowork", Vec::new()), "iowork", Default::default())
            .with_object("/scheme/initfs/bin/ramfs", ramfs)
            .with_kernel_object(kernel)
    }

    #[test]
    fn daemons_are_named_from_their_own_executables_and_the_kernel() {
        let daemons = named(&report(), symbolizer());
        assert_eq!(daemons[0].name, "ramfs");
        assert_eq!(
            daemons[0].functions,
            vec![("read_block".to_string(), 18), ("sys_read [kernel]".to_string(), 3), ("handle".to_string(), 2)]
        );
        assert_eq!((daemons[0].ticks, daemons[0].kernel_ticks), (23, 3));
        // A file that cannot be read: addresses.
        assert_eq!((daemons[1].name.as_str(), daemons[1].functions.clone()), ("ahcid", vec![("0x409000".to_string(), 4)]));
    }

    /// On upstream's profiler (a stock kernel) idle is recorded only with interrupts off and no
    /// daemon's work is told apart: the report says so rather than show zeros.
    #[test]
    fn a_stock_kernels_run_says_what_it_cannot_know() {
        let r = ServersReport { own_user: 14748, own_kernel: 310, account: Account { other: 83, ..Default::default() }, servers: Vec::new() };
        let p = Profile::from(Parts {
            user_ticks: 14748,
            kernel_ticks: Some(310),
            source: crate::profile::Source { sampling: Some(prof_core::sampler::Sampling { source: "nmi-ipi", rate: 0 }), ..Default::default() },
            ..Default::default()
        });
        assert_eq!(
            render("fib", &p, Some((&r, &[]))),
            "Where the time went (15141 ticks of the run, every CPU):\n\
             \x20   ticks       %  where\n\
             \x20   14748   97.40  its own code\n\
             \x20     310    2.05  the kernel, for it\n\
             \x20      83    0.55  other processes\n\
             \x20       -       -  idle: not recorded by upstream's profiler (nor kernel code with interrupts on)\n\
             The daemons' work for 'fib' is not told apart by upstream's profiler: it is among the other processes.\n"
        );
        // Where its records have idle samples (kernel code with interrupts off), they are a
        // row, in the total, as -a's: the rows add up to it.
        let r = ServersReport { account: Account { idle: 59, ..r.account }, ..r };
        assert_eq!(
            render("fib", &p, Some((&r, &[]))),
            "Where the time went (15200 ticks of the run, every CPU):\n\
             \x20   ticks       %  where\n\
             \x20   14748   97.03  its own code\n\
             \x20     310    2.04  the kernel, for it\n\
             \x20      59    0.39  idle, what upstream's profiler records of it (kernel code with interrupts off only)\n\
             \x20      83    0.55  other processes\n\
             The daemons' work for 'fib' is not told apart by upstream's profiler: it is among the other processes.\n"
        );
    }

    /// `--children` on Redox: the processes the program started are the run's ticks too, a
    /// row of their own, so the rows add up to every tick of the run (the program `sh` and
    /// the fib it started: 169 and 4659 ticks of 5508).
    #[test]
    fn the_processes_it_started_are_a_row_of_the_run() {
        let r = ServersReport { own_user: 42, own_kernel: 127, account: Account { server_user: 150, other: 497, ..Default::default() }, servers: Vec::new() };
        let fib = |pid, user, kernel| crate::profile::ChildProfile {
            pid,
            parent: Some(17),
            program: "/scheme/initfs/bin/fib".into(),
            profile: Profile::from(Parts { pid, user_ticks: user, kernel_ticks: Some(kernel), ..Default::default() }),
            running: false,
        };
        let p = Profile::from(Parts { pid: 17, user_ticks: 42, kernel_ticks: Some(127), processes: vec![fib(18, 4401, 258), fib(19, 0, 0)], ..Default::default() });
        let text = render("sh", &p, Some((&r, &[])));
        assert_eq!(
            text.lines().take(6).collect::<Vec<_>>(),
            [
                "Where the time went (5325 ticks of the run, every CPU):",
                "    ticks       %  where",
                "       42    0.79  its own code",
                "      127    2.38  the kernel, for it",
                "     4659   87.49  the processes it started (--children)",
                "        0    0.00  idle",
            ],
            "{text}"
        );
        // Without processes started, no such row.
        let alone = Profile::from(Parts { processes: Vec::new(), ..p.into_parts() });
        assert!(!render("sh", &alone, Some((&r, &[]))).contains("processes it started"));
    }

    #[test]
    fn the_account_closes_over_every_tick_of_the_run() {
        let r = report();
        let daemons = named(&r, symbolizer());
        let p = Profile::from(Parts { user_ticks: 10, kernel_ticks: Some(0), ..Default::default() });
        assert_eq!(
            render("iowork", &p, Some((&r, &daemons))),
            "Where the time went (102 ticks of the run, every CPU):\n\
             \x20   ticks       %  where\n\
             \x20      10    9.80  its own code\n\
             \x20       0    0.00  the kernel, for it\n\
             \x20      23   22.55  ramfs [pid 20] working for it\n\
             \x20       4    3.92  ahcid [pid 21] working for it\n\
             \x20       1    0.98  daemons working for it, samples not kept\n\
             \x20       2    1.96  the kernel, for those daemons\n\
             \x20      40   39.22  idle\n\
             \x20      22   21.57  other processes\n\
             'iowork' and the daemons working for it: 40 ticks (39.22 %), 75.00 % of them in the daemons.\n\
             \n\
             ramfs [pid 20] (/scheme/initfs/bin/ramfs), 23 samples working for 'iowork' (3 in the kernel):\n\
             \x20 samples       %  function\n\
             \x20      18   78.26  read_block\n\
             \x20       3   13.04  sys_read [kernel]\n\
             \x20       2    8.70  handle\n\
             \n\
             ahcid [pid 21] (/usr/lib/drivers/ahcid), 4 samples working for 'iowork':\n\
             \x20 samples       %  function\n\
             \x20       4  100.00  0x409000\n"
        );
    }

    /// A daemon that took the program's requests but was never sampled doing so has no row
    /// and no section; one the session could not name is named by its pid (the bootstrap's
    /// managers, pid 0, as such), never by an empty name.
    #[test]
    fn daemons_without_samples_have_no_row_and_none_is_unnamed() {
        let mut r = report();
        r.servers.push(ServerEntry { pid: 7, ticks: 0, path: String::new(), stacks: Vec::new() });
        r.servers.push(ServerEntry { pid: 2, ticks: 0, path: "/scheme/initfs/bin/logd".into(), stacks: Vec::new() });
        r.servers.push(ServerEntry { pid: 9, ticks: 2, path: String::new(), stacks: vec![(vec![0x40_7000], true, 2)] });
        r.servers.push(ServerEntry { pid: 0, ticks: 1, path: String::new(), stacks: vec![(vec![0x9000], true, 1)] });
        r.account.server_user += 3;
        let daemons = named(&r, symbolizer());
        let p = Profile::from(Parts { user_ticks: 10, kernel_ticks: Some(0), ..Default::default() });
        let text = render("iowork", &p, Some((&r, &daemons)));
        assert!(!text.contains("[pid 7]") && !text.contains("[pid 2]"), "{text}");
        assert!(!text.contains("()") && !text.contains(" 0 samples"), "{text}");
        assert!(text.contains("\n        2    1.90  [pid 9] working for it\n"), "{text}");
        assert!(text.contains("\n        1    0.95  [bootstrap] [pid 0] working for it\n"), "{text}");
        assert!(text.contains("\n[pid 9], 2 samples working for 'iowork':\n"), "{text}");
        assert!(text.contains("\n[bootstrap] [pid 0], 1 sample working for 'iowork':\n"), "{text}");
    }

    /// A daemon's kernel samples are in its row; counting them again in the kernel's row made
    /// every share too low (a Redox run: 4,280 ticks in the header for 3,422).
    #[test]
    fn kernel_samples_of_the_daemons_are_counted_once() {
        let mut r = report();
        r.account.server_kernel = 3; // all of them ramfs's
        let daemons = named(&r, symbolizer());
        let p = Profile::from(Parts { user_ticks: 10, kernel_ticks: Some(0), ..Default::default() });
        let text = render("iowork", &p, Some((&r, &daemons)));
        assert!(text.starts_with("Where the time went (100 ticks of the run, every CPU):\n"), "{text}");
        assert!(!text.contains("the kernel, for those daemons"), "{text}");
        let rows: u64 = text.lines().skip(2).take_while(|l| !l.starts_with('\'')).map(|l| l.split_whitespace().next().unwrap().parse::<u64>().unwrap()).sum();
        assert_eq!(rows, 100);
        // No kernel sample of a daemon (the timer source samples no kernel; the NMI source
        // found none): no row of zeros.
        let mut r = report();
        r.account.server_kernel = 0;
        r.servers[0].stacks.pop();
        r.servers[0].ticks = 20;
        let daemons = named(&r, symbolizer());
        assert!(!render("iowork", &p, Some((&r, &daemons))).contains("the kernel, for those daemons"));
    }

    /// Without the kernel's ELF a daemon's kernel samples are `[kernel]`, as the program's are
    /// (they were each their own hex address).
    #[test]
    fn without_the_kernel_elf_a_daemons_kernel_samples_are_one_kernel() {
        let file = |path: &str| ObjectFile::from_symbols(Path::new(path), SymbolTable::new(Vec::new()));
        let s = Symbolizer::new(file("/usr/bin/iowork"), "iowork", Default::default()).with_kernel(Path::new("/no/such/kernel"));
        let mut r = report();
        r.servers[0].stacks.push((vec![KERNEL_TEXT + 0x40], false, 2));
        let daemons = named(&r, s);
        assert!(daemons[0].functions.contains(&("[kernel]".to_string(), 5)), "{:?}", daemons[0].functions);
    }

    #[test]
    fn on_linux_the_section_has_the_program_and_the_kernel() {
        let p = Profile::from(Parts { user_ticks: 2923, kernel_ticks: Some(11), ..Default::default() });
        let text = render("fib", &p, None);
        assert!(text.starts_with(
            "Where the time went (2934 ticks of 'fib'):\n\
             \x20   ticks       %  where\n\
             \x20    2923   99.63  its own code\n\
             \x20      11    0.37  the kernel, for it\n"
        ), "{text}");
        // The Redox account (daemons, idle, other processes) is not promised on every run.
        assert!(!text.contains("Redox"), "{text}");
        let p = Profile::from(Parts { user_ticks: 5, kernel_ticks: None, ..Default::default() });
        assert!(render("fib", &p, None).contains("(not counted: not permitted)"));
    }
}
