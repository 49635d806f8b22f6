//! "Where the time went": the program's own ticks beside the ticks of the daemons that worked
//! for it, of idle and of other processes, then the top functions of each daemon named from
//! its own executable. On Redox most of what a program asks for (files, the console, the
//! network) is done by scheme daemons, and the kernel labels a daemon as working for the
//! profiled program from taking its request to answering it (pkprof's "server process"
//! labelling); on Linux the section shows the program's own and kernel ticks only.

use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write;
use std::path::Path;

use profd::formats::{ServerEntry, ServersReport};

use crate::objects::object_file::ObjectFile;
use crate::profile::Profile;
use crate::report::percent;

/// Functions shown per daemon.
pub const TOP_FUNCTIONS: usize = 5;

/// One daemon's samples by function: (function, samples), most first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFunctions {
    pub pid: u32,
    /// The executable's file name (`ramfs`), or its path as the kernel gave it.
    pub name: String,
    pub path: String,
    pub ticks: u64,
    pub functions: Vec<(String, u64)>,
}

/// Name each daemon's samples (their innermost frame) with the symbols of its executable, read
/// through `open`. Redox daemons are static, linked at their run addresses; a daemon whose file
/// cannot be read keeps its addresses.
pub fn name_servers(
    report: &ServersReport,
    mut open: impl FnMut(&Path) -> Option<ObjectFile>,
) -> Vec<ServerFunctions> {
    report
        .servers
        .iter()
        .map(|s: &ServerEntry| {
            let file = open(Path::new(&s.path));
            let mut by_name: HashMap<String, u64> = HashMap::default();
            for (frames, _, count) in &s.stacks {
                let Some(&pc) = frames.first() else { continue };
                let name = match &file {
                    Some(f) => f.symbols.resolve(pc).name,
                    None => format!("{pc:#x}"),
                };
                *by_name.entry(name).or_insert(0) += count;
            }
            let mut functions: Vec<(String, u64)> = by_name.into_iter().collect();
            functions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let name = Path::new(&s.path).file_name().map_or(s.path.clone(), |n| n.to_string_lossy().into_owned());
            ServerFunctions { pid: s.pid, name, path: s.path.clone(), ticks: s.ticks, functions }
        })
        .collect()
}

/// The section. `servers` is `None` where the backend does not label servers (Linux).
pub fn render(program: &str, p: &Profile, servers: Option<(&ServersReport, &[ServerFunctions])>) -> String {
    let mut out = String::new();
    let kernel = p.kernel_ticks.unwrap_or(0);
    let Some((report, named)) = servers else {
        let all = p.user_ticks.saturating_add(kernel);
        let _ = writeln!(out, "Where the time went ({all} ticks of '{program}'):");
        let _ = writeln!(out, "    ticks       %  where");
        let _ = writeln!(out, "{:>9} {:>7.2}  its own code", p.user_ticks, percent(p.user_ticks, all));
        match p.kernel_ticks {
            Some(k) => {
                let _ = writeln!(out, "{k:>9} {:>7.2}  the kernel, for it", percent(k, all));
            }
            None => {
                let _ = writeln!(out, "        -       -  the kernel, for it (not counted: not permitted)");
            }
        }
        let _ = writeln!(
            out,
            "The work of the servers a program calls, idle time and other processes are accounted on Redox,\n\
             where the kernel labels the scheme daemons working for the profiled program."
        );
        return out;
    };
    let a = &report.account;
    let rows: Vec<(u64, String)> = [
        (p.user_ticks, "its own code".to_string()),
        (kernel, "the kernel, for it".to_string()),
    ]
    .into_iter()
    .chain(named.iter().map(|s| (s.ticks, format!("{} [pid {}] working for it", s.name, s.pid))))
    .chain((a.servers_dropped > 0).then(|| (a.servers_dropped, "daemons working for it, samples not kept".to_string())))
    .chain([
        (a.server_kernel, "the kernel, for those daemons".to_string()),
        (a.idle, "idle".to_string()),
        (a.other, "other processes".to_string()),
    ])
    .collect();
    let all = rows.iter().fold(0u64, |n, r| n.saturating_add(r.0));
    let _ = writeln!(out, "Where the time went ({all} ticks of the run, every CPU):");
    let _ = writeln!(out, "    ticks       %  where");
    for (ticks, what) in &rows {
        let _ = writeln!(out, "{ticks:>9} {:>7.2}  {what}", percent(*ticks, all));
    }
    let for_it = p.user_ticks.saturating_add(kernel).saturating_add(a.servers());
    let _ = writeln!(
        out,
        "'{program}' and the daemons working for it: {for_it} ticks ({:.2} %), {:.2} % of them in the daemons.",
        percent(for_it, all),
        percent(a.servers(), for_it)
    );
    for s in named {
        let _ = writeln!(out);
        let samples = crate::report::count(s.ticks, "sample");
        let _ = writeln!(out, "{} [pid {}] ({}), {samples} working for '{program}':", s.name, s.pid, s.path);
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
    use super::*;
    use crate::objects::symbols::{Function, SymbolTable};
    use profd::sampler::Account;

    fn report() -> ServersReport {
        ServersReport {
            own_user: 10,
            own_kernel: 0,
            account: Account { server_user: 25, server_kernel: 2, servers_dropped: 1, idle: 40, other: 22 },
            servers: vec![
                ServerEntry {
                    pid: 20,
                    ticks: 20,
                    path: "/scheme/initfs/bin/ramfs".into(),
                    stacks: vec![
                        (vec![0x40_2010, 0x40_3005], false, 12),
                        (vec![0x40_2020, 0x40_3005], false, 6),
                        (vec![0x40_2110], true, 2),
                    ],
                },
                ServerEntry { pid: 21, ticks: 4, path: "/usr/lib/drivers/ahcid".into(), stacks: vec![(vec![0x40_9000], true, 4)] },
            ],
        }
    }

    fn ramfs(path: &Path) -> Option<ObjectFile> {
        (path == Path::new("/scheme/initfs/bin/ramfs")).then(|| {
            ObjectFile::from_symbols(
                path,
                SymbolTable::new(vec![
                    Function { addr: 0x40_2000, size: 0x100, name: "read_block".into() },
                    Function { addr: 0x40_2100, size: 0x100, name: "handle".into() },
                ]),
            )
        })
    }

    #[test]
    fn daemons_are_named_from_their_own_executables() {
        let named = name_servers(&report(), ramfs);
        assert_eq!(named[0].name, "ramfs");
        assert_eq!(named[0].functions, vec![("read_block".to_string(), 18), ("handle".to_string(), 2)]);
        // A file that cannot be read: addresses.
        assert_eq!((named[1].name.as_str(), named[1].functions.clone()), ("ahcid", vec![("0x409000".to_string(), 4)]));
    }

    #[test]
    fn the_account_closes_over_every_tick_of_the_run() {
        let r = report();
        let named = name_servers(&r, ramfs);
        let p = Profile { user_ticks: 10, kernel_ticks: Some(0), ..Default::default() };
        assert_eq!(
            render("iowork", &p, Some((&r, &named))),
            "Where the time went (99 ticks of the run, every CPU):\n\
             \x20   ticks       %  where\n\
             \x20      10   10.10  its own code\n\
             \x20       0    0.00  the kernel, for it\n\
             \x20      20   20.20  ramfs [pid 20] working for it\n\
             \x20       4    4.04  ahcid [pid 21] working for it\n\
             \x20       1    1.01  daemons working for it, samples not kept\n\
             \x20       2    2.02  the kernel, for those daemons\n\
             \x20      40   40.40  idle\n\
             \x20      22   22.22  other processes\n\
             'iowork' and the daemons working for it: 37 ticks (37.37 %), 72.97 % of them in the daemons.\n\
             \n\
             ramfs [pid 20] (/scheme/initfs/bin/ramfs), 20 samples working for 'iowork':\n\
             \x20 samples       %  function\n\
             \x20      18   90.00  read_block\n\
             \x20       2   10.00  handle\n\
             \n\
             ahcid [pid 21] (/usr/lib/drivers/ahcid), 4 samples working for 'iowork':\n\
             \x20 samples       %  function\n\
             \x20       4  100.00  0x409000\n"
        );
    }

    #[test]
    fn on_linux_the_section_has_the_program_and_the_kernel() {
        let p = Profile { user_ticks: 2923, kernel_ticks: Some(11), ..Default::default() };
        let text = render("fib", &p, None);
        assert!(text.starts_with(
            "Where the time went (2934 ticks of 'fib'):\n\
             \x20   ticks       %  where\n\
             \x20    2923   99.63  its own code\n\
             \x20      11    0.37  the kernel, for it\n"
        ), "{text}");
        assert!(text.contains("accounted on Redox"), "{text}");
        let p = Profile { user_ticks: 5, kernel_ticks: None, ..Default::default() };
        assert!(render("fib", &p, None).contains("(not counted: not permitted)"));
    }
}
