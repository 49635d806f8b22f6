//! The command line: every option, with its help text, in one place.

use std::ffi::OsString;
use std::path::PathBuf;

use prof_core::sampler::{CallGraph, DEFAULT_STACK_SIZE};

use crate::asked::{Asked, StackMode};
use crate::disasm;
use crate::options::Opt;

/// Parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    /// `-s`, `-e`, `-i`: the Minix range and bins.
    pub bins: BinRange,
    /// `-F`: samples per second of CPU time (Linux), or per CPU from the kernel's NMI source
    /// (Redox).
    pub frequency_hz: u64,
    /// `-g` / `--call-graph`: record call stacks, and how.
    pub call_graph: CallGraph,
    /// `--children`: profile the processes the program starts too, each on its own and in
    /// total (Linux).
    pub children: bool,
    /// `--off-cpu`: why and where the program waited (Linux: looks at each blocked thread at
    /// the sampling rate; Redox: the kernel's account of every block).
    pub off_cpu: bool,
    /// `--requests`: every request with its latency (Linux: the system calls, from the
    /// kernel's tracepoints), in the Requests section.
    pub requests: bool,
    /// `--kernel`: what names kernel samples: a file (the kernel's ELF, kallsyms), none, or by
    /// default the running kernel's symbols ([`crate::kernel`]).
    pub kernel: crate::kernel::KernelChoice,
    /// What the symbolizer is built from: `--debug-dir` (repeatable: where separate debug
    /// files are looked for first), `--sysroot` (with `--load` or `--diff`: the run's files
    /// under DIR first), `--short-names`.
    pub objects: prof_objects::Options,
    /// `--inline`: inlined functions are functions of their own (`name (inlined)`), in the flat
    /// profile, the stacks and the exports.
    pub inline: bool,
    /// The report's sections and how long they are.
    pub sections: Sections,
    /// `--comm`, `--pids`, `--tid`, `--dso`, `--time`: the samples the report and exports are of.
    pub filter: crate::filter::Filter,
    /// `--diff BASE`: compare with this saved run.
    pub diff: Option<PathBuf>,
    /// `--fail-above PP`: with `--diff`, exit 3 when a function's own share grew significantly
    /// by more than PP points; in hundredths of a point.
    pub fail_above: Option<u32>,
    /// `--report`: write the report here (checked and written as an export) instead of
    /// standard output, which then carries the program's output alone.
    pub report: Option<PathBuf>,
    pub exports: ExportFiles,
    /// What is profiled: a program profil starts, a process that runs, every process, or a
    /// saved run.
    pub target: Target,
    /// `-t`: with `-p` or `-a`, stop after this long (default: until the process exits or
    /// Ctrl-C).
    pub duration: Option<std::time::Duration>,
    /// The first option given that is about one program (refused with `-a`): a loaded run
    /// that turns out system-wide refuses it as `-a` does.
    pub one_program: Option<String>,
}

/// What profil profiles, one of its modes (`run/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A program to start, and its own arguments, byte for byte as given.
    Launch { program: OsString, args: Vec<OsString> },
    /// `-p PID`: a process that runs already, and its program file where named (else, on
    /// Linux, `/proc/PID/exe`).
    Attach { pid: u32, file: Option<OsString> },
    /// `-a`: every process of the system.
    System,
    /// `--load FILE`: a run saved with `--save`, reported again.
    Load(PathBuf),
}

impl Args {
    /// How a live run is recorded, as asked.
    pub fn recording(&self) -> crate::profile::Recording {
        crate::profile::Recording { call_graph: self.call_graph, children: self.children }
    }
}

impl Target {
    /// The program's own arguments, where profil starts it.
    pub fn arguments(&self) -> &[OsString] {
        match self {
            Target::Launch { args, .. } => args,
            _ => &[],
        }
    }
}

/// `-s`, `-e`, `-i`: what the Minix bins cover, link-time addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BinRange {
    /// The first address; 0 = the start of the text segment.
    pub start: u64,
    /// The end (exclusive); 0 = the end of the text segment.
    pub end: u64,
    /// Bytes per bin; 0 = the smallest size that fits in 1024 bins.
    pub interval: u64,
}

/// The report's sections beyond the flat profile, and how much of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sections {
    /// `-f`: the flat profile only, without the Minix histogram.
    pub flat_only: bool,
    /// `--top N`: the flat profile's top N functions, the rest summed in one line.
    pub top: Option<usize>,
    /// `--percent-limit PCT`: the flat profile's functions with less than PCT % of the samples
    /// summed in that line too (perf report's option); in hundredths of a percent.
    pub percent_limit: Option<u32>,
    /// `--lines[=all]`: the profile by source line, its top N lines (`None`: all of them).
    pub lines: Option<Option<usize>>,
    /// `--callers` (alias `--callgraph`): the callers and callees of the top functions.
    pub callers: bool,
    /// `--asm` / `--asm-top N`: the instructions of the N hottest functions.
    pub asm_top: Option<usize>,
    /// `--threads`: the thread view.
    pub threads: bool,
    /// `--timeline[=N]`: the Timeline section, in N slices.
    pub timeline: Option<usize>,
}

/// The files the run is exported to (`-` for standard output).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportFiles {
    /// `-o`: gmon.out (gprof).
    pub gmon: Option<PathBuf>,
    /// `--collapsed`: folded stacks (flame graphs).
    pub collapsed: Option<PathBuf>,
    /// `--svg`: a flame graph.
    pub svg: Option<PathBuf>,
    /// `--pprof`: a gzipped pprof `profile.proto`.
    pub pprof: Option<PathBuf>,
    /// `--json`: the whole run as JSON.
    pub json: Option<PathBuf>,
    pub speedscope: Option<PathBuf>,
    /// `--samples`: every sample in time order.
    pub samples: Option<PathBuf>,
    /// `--firefox`: the Firefox Profiler's format.
    pub firefox: Option<PathBuf>,
    /// `--save`: the run, unsymbolized, for `--load`.
    pub save: Option<PathBuf>,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Boxed: the options are large beside the other variants.
    Profile(Box<Args>),
    Help(String),
    Version,
}

pub use crate::asked::{parse_number, UsageError};

/// Where a Redox image installs the kernel it boots.
pub const DEFAULT_KERNEL: &str = crate::platform::REDOX_KERNEL;

/// Parse `args` (without the program name of profil itself). The program and its arguments
/// may be any bytes; profil's own options must be UTF-8. Each option parses its own value
/// (`options::OPTIONS`); here they are checked against each other and make the run's `Args`.
pub fn parse<I: IntoIterator<Item = S>, S: Into<OsString>>(args: I) -> Result<Command, UsageError> {
    let raw: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let lossy: Vec<String> = raw.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let (a, present, free) = crate::options::asked(&lossy)?;
    // Options stop at the program name, so the program and its arguments are the tail.
    let first_free = raw.len() - free.len();
    if let Some(bad) = raw[..first_free].iter().find(|a| a.to_str().is_none()) {
        return Err(UsageError(format!("option argument '{}' is not valid UTF-8", bad.to_string_lossy())));
    }
    if a.help {
        let usage = crate::options::parser().usage(&format!("{}\n\n{}", crate::options::SYNOPSIS, crate::options::DESCRIPTION));
        return Ok(Command::Help(usage));
    }
    if a.man {
        return Ok(Command::Help(crate::manual::page()));
    }
    if a.version {
        return Ok(Command::Version);
    }
    let free: Vec<OsString> = raw.into_iter().skip(first_free).collect();
    let target = target(&a, &present, free)?;
    let one_program = present.iter().find(|o| o.one_program).map(|o| o.flag());
    Ok(Command::Profile(Box::new(Args { one_program, ..args_of(a, target)? })))
}

/// What is profiled, checked against the options that go with it.
fn target(a: &Asked, present: &[&'static Opt], free: Vec<OsString>) -> Result<Target, UsageError> {
    if a.duration.is_some() && a.pid.is_none() && !a.system {
        return Err(UsageError("-t goes with -p or -a".into()));
    }
    if a.load.is_some() {
        // The run was recorded already: only how it is reported can be chosen.
        if let Some(o) = present.iter().find(|o| o.recorded) {
            return Err(UsageError(format!("{} does not go with --load: the saved run was recorded with its own", o.flag())));
        }
        if !free.is_empty() {
            return Err(UsageError("--load reports a saved run: no program to run".into()));
        }
    }
    if a.system {
        // Every process: nothing of one program's (its bins, its threads, its children, its
        // file's lines) and nothing to start.
        if let Some(o) = present.iter().find(|o| o.one_program) {
            return Err(UsageError(format!("{} does not go with -a: it profiles every process, not one program", o.flag())));
        }
        if !free.is_empty() {
            return Err(UsageError("-a profiles every process: no program to run (-t SECONDS says how long)".into()));
        }
    }
    let mut free = free.into_iter();
    Ok(match (free.next(), a.pid, a.load.clone()) {
        (Some(_), Some(_), _) if free.len() > 0 => {
            return Err(UsageError("with -p, name at most the process's program file: it runs already".into()))
        }
        // An empty file name names none, as before the modes were one enum.
        (file, Some(pid), _) => Target::Attach { pid, file: file.filter(|f| !f.is_empty()) },
        (None, None, Some(file)) => Target::Load(file),
        (None, None, None) if a.system => Target::System,
        (Some(program), None, _) => Target::Launch { program, args: free.collect() },
        (None, None, None) => return Err(UsageError("no program to profile".into())),
    })
}

/// The run's `Args` from what was asked, where the options that depend on others are checked.
fn args_of(a: Asked, target: Target) -> Result<Args, UsageError> {
    if a.sysroot.is_some() && a.load.is_none() && a.diff.is_none() {
        return Err(UsageError("--sysroot goes with --load or --diff: a live run reads this machine's files".into()));
    }
    if a.fail_above.is_some() && a.diff.is_none() {
        return Err(UsageError("--fail-above goes with --diff".into()));
    }
    let stack_size = a.stack_size.unwrap_or(DEFAULT_STACK_SIZE);
    let call_graph = match a.call_graph {
        None if a.g || a.callers || a.stack_size.is_some() => CallGraph::Dwarf { stack_size },
        None => CallGraph::None,
        Some(StackMode::Dwarf) => CallGraph::Dwarf { stack_size },
        Some(StackMode::FramePointers) if a.stack_size.is_some() => {
            return Err(UsageError("--stack-size goes with dwarf call stacks, not fp".into()))
        }
        Some(StackMode::FramePointers) => CallGraph::FramePointers,
    };
    let filter = crate::filter::Filter { pids: a.pids, tids: a.tids, comms: a.comms, dsos: a.dsos, window: a.window, relative: a.relative };
    if !filter.is_empty() && a.save.is_some() {
        return Err(UsageError(
            "--save keeps the whole run: give --comm, --pids, --tid, --dso and --time when it is loaded (--load)".to_string(),
        ));
    }
    let asm_top = a.asm_top.or(a.asm.then_some(disasm::DEFAULT_TOP));
    let objects = prof_objects::Options::new(&a.debug_dirs, a.sysroot.as_deref(), a.short_names);
    Ok(Args {
        bins: BinRange { start: a.start, end: a.end, interval: a.interval },
        frequency_hz: a.frequency_hz.unwrap_or(1000),
        call_graph,
        children: a.children,
        off_cpu: a.off_cpu,
        requests: a.requests,
        kernel: a.kernel,
        objects,
        inline: a.inline,
        sections: Sections {
            flat_only: a.flat_only,
            top: a.top,
            percent_limit: a.percent_limit,
            lines: a.lines,
            callers: a.callers,
            asm_top,
            threads: a.threads,
            timeline: a.timeline,
        },
        filter,
        diff: a.diff,
        fail_above: a.fail_above,
        report: a.report,
        exports: ExportFiles {
            gmon: a.gmon,
            collapsed: a.collapsed,
            svg: a.svg,
            pprof: a.pprof,
            json: a.json,
            speedscope: a.speedscope,
            samples: a.samples,
            firefox: a.firefox,
            save: a.save,
        },
        target,
        duration: a.duration,
        one_program: None,
    })
}

/// The short usage line printed after a usage error.
pub fn short_usage() -> &'static str {
    "Usage: profil [-s startaddr] [-e endaddr] [-i interval] [-F hz] [-f] [-g] [--asm] [-o gmon.out] program [args...]  (profil --help for more)"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Result<Command, UsageError> {
        parse(v.iter().map(|s| s.to_string()))
    }

    fn profile(v: &[&str]) -> Args {
        match args(v) {
            Ok(Command::Profile(a)) => *a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn numbers_decimal_and_hex() {
        assert_eq!(parse_number("128"), Some(128));
        assert_eq!(parse_number("0x80"), Some(128));
        assert_eq!(parse_number("0X1A"), Some(26));
        assert_eq!(parse_number("0"), Some(0));
        for bad in ["", "0x", "-1", "12k", "0x1g", "1e3", "+5", "0x10000000000000000"] {
            assert_eq!(parse_number(bad), None, "{bad}");
        }
    }

    #[test]
    fn defaults() {
        let a = profile(&["fib"]);
        assert_eq!((a.bins.start, a.bins.end, a.bins.interval, a.frequency_hz), (0, 0, 0, 1000));
        assert!(!a.sections.flat_only);
        assert_eq!((a.sections.asm_top, a.exports.gmon, a.exports.collapsed, a.exports.json), (None, None, None, None));
        assert_eq!((a.exports.svg, a.exports.pprof, a.call_graph, a.sections.callers), (None, None, CallGraph::None, false));
        assert_eq!(a.target, Target::Launch { program: "fib".into(), args: Vec::new() });
        assert!(!a.children);
    }

    /// `--children` before the program; after it, the program's own argument.
    #[test]
    #[cfg(not(target_os = "redox"))]
    fn children_is_a_flag_of_profil() {
        assert!(profile(&["--children", "sh", "-c", "x"]).children);
        let a = profile(&["sh", "--children"]);
        assert!(!a.children);
        assert_eq!(a.target.arguments(), [std::ffi::OsString::from("--children")]);
    }

    #[test]
    fn options_in_any_order() {
        let a = profile(&["-s", "0x80", "-e", "0x1000", "-i", "128", "fib"]);
        let b = profile(&["-i", "128", "-s", "0x80", "-e", "0x1000", "fib"]);
        assert_eq!(a, b);
        assert_eq!((a.bins.start, a.bins.end, a.bins.interval), (0x80, 0x1000, 128));
    }

    #[test]
    fn program_arguments_pass_through_even_if_they_look_like_options() {
        let a = profile(&["-i", "0x100", "/bin/ls", "-Rl", "/", "-s", "5"]);
        let args = ["-Rl", "/", "-s", "5"].map(OsString::from).to_vec();
        assert_eq!(a.target, Target::Launch { program: "/bin/ls".into(), args });
        assert_eq!(a.bins.start, 0);
    }

    #[test]
    fn frequency_option() {
        assert_eq!(profile(&["-F", "250", "fib"]).frequency_hz, 250);
        assert!(args(&["-F", "0", "fib"]).is_err());
        assert!(args(&["-F", "1000000", "fib"]).is_err());
    }

    #[test]
    fn report_and_export_options() {
        let a = profile(&["-f", "--asm", "-o", "g.out", "--collapsed", "c.txt", "--json", "p.json", "fib", "-f"]);
        assert!(a.sections.flat_only);
        assert_eq!(a.sections.asm_top, Some(3));
        assert_eq!(a.exports.gmon, Some(PathBuf::from("g.out")));
        assert_eq!(a.exports.collapsed, Some(PathBuf::from("c.txt")));
        assert_eq!(a.exports.json, Some(PathBuf::from("p.json")));
        assert_eq!(a.target.arguments(), [OsString::from("-f")]);
        assert_eq!(profile(&["--asm-top", "5", "fib"]).sections.asm_top, Some(5));
        assert_eq!(profile(&["--gmon", "x", "fib"]).exports.gmon, Some(PathBuf::from("x")));
        for bad in [&["--asm-top", "0", "fib"][..], &["--asm-top", "x", "fib"], &["--json", "", "fib"], &["-o"]] {
            assert!(args(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn call_stack_options() {
        let dwarf = CallGraph::Dwarf { stack_size: DEFAULT_STACK_SIZE };
        assert_eq!(profile(&["-g", "fib"]).call_graph, dwarf);
        assert_eq!(profile(&["--call-graph", "dwarf", "fib"]).call_graph, dwarf);
        assert_eq!(profile(&["--call-graph", "fp", "fib"]).call_graph, CallGraph::FramePointers);
        assert_eq!(profile(&["-g", "--stack-size", "0x2000", "fib"]).call_graph, CallGraph::Dwarf { stack_size: 8192 });
        let a = profile(&["--callgraph", "--svg", "f.svg", "--pprof", "p.pb.gz", "fib"]);
        assert_eq!((a.call_graph, a.sections.callers), (dwarf, true));
        assert_eq!((a.exports.svg, a.exports.pprof), (Some(PathBuf::from("f.svg")), Some(PathBuf::from("p.pb.gz"))));
        // Its name that cannot be taken for --call-graph.
        let a = profile(&["--callers", "fib"]);
        assert_eq!((a.call_graph, a.sections.callers), (dwarf, true));
        // --svg alone keeps one address per sample: a flame graph one level deep.
        assert_eq!(profile(&["--svg", "f.svg", "fib"]).call_graph, CallGraph::None);
        for (bad, why) in [
            (&["--call-graph", "lbr", "fib"][..], "invalid mode 'lbr' for --call-graph: expected dwarf or fp"),
            (&["--call-graph", "fp", "--stack-size", "64", "fib"], "--stack-size goes with dwarf call stacks, not fp"),
            (&["-g", "--stack-size", "12", "fib"], "invalid size '12' for --stack-size: expected a multiple of 8 from 8 to 65528 (bytes)"),
            (&["-g", "--stack-size", "65536", "fib"], "invalid size '65536' for --stack-size: expected a multiple of 8 from 8 to 65528 (bytes)"),
        ] {
            assert_eq!(args(bad), Err(UsageError(why.into())), "{bad:?}");
        }
    }

    #[test]
    fn attach_to_a_pid_for_a_while() {
        let a = profile(&["-p", "1234"]);
        assert_eq!((&a.target, a.duration), (&Target::Attach { pid: 1234, file: None }, None));
        let a = profile(&["-f", "-p", "0x10", "-t", "2.5", "/usr/bin/fib"]);
        assert_eq!(a.target, Target::Attach { pid: 16, file: Some("/usr/bin/fib".into()) });
        assert_eq!(profile(&["-p", "16", ""]).target, Target::Attach { pid: 16, file: None });
        assert_eq!(a.duration, Some(std::time::Duration::from_millis(2500)));
        for (bad, why) in [
            (&["-t", "2", "fib"][..], "-t goes with -p or -a"),
            (&["-p", "0"], "invalid pid '0' for -p: expected a process id above 0"),
            (&["-p", "x"], "invalid pid 'x' for -p: expected a process id above 0"),
            (&["-p", "4294967296"], "invalid pid '4294967296' for -p: expected a process id above 0"),
            (&["-p", "1", "-t", "0"], "invalid duration '0' for -t: expected seconds above 0"),
            (&["-p", "1", "-t", "soon"], "invalid duration 'soon' for -t: expected seconds above 0"),
            (&["-p", "1", "fib", "30"], "with -p, name at most the process's program file: it runs already"),
        ] {
            assert_eq!(args(bad), Err(UsageError(why.into())), "{bad:?}");
        }
    }

    #[test]
    fn system_wide_for_a_while() {
        let a = profile(&["-a"]);
        assert_eq!((&a.target, a.duration), (&Target::System, None));
        let a = profile(&["-a", "-t", "1.5", "-g", "--collapsed", "x"]);
        assert_eq!((&a.target, a.duration), (&Target::System, Some(std::time::Duration::from_millis(1500))));
        // The views of every process go with it.
        let a = profile(&["-a", "--threads", "--timeline", "--time", "1,2", "--diff", "r"]);
        assert_eq!((a.sections.threads, a.sections.timeline, a.diff.is_some(), a.one_program), (true, Some(20), true, None));
        // A loaded run learns only later that it is system-wide: the first option about one
        // program is kept to refuse it then.
        assert_eq!(profile(&["--load", "r", "--lines", "--asm"]).one_program.as_deref(), Some("--asm"));
        for (bad, why) in [
            (&["-a", "fib"][..], "-a profiles every process: no program to run (-t SECONDS says how long)"),
            (&["-a", "-p", "1"], "-p does not go with -a: it profiles every process, not one program"),
            (&["-a", "-o", "g.out"], "-o does not go with -a: it profiles every process, not one program"),
            (&["-a", "--children"], "--children does not go with -a: it profiles every process, not one program"),
            (&["-a", "--asm"], "--asm does not go with -a: it profiles every process, not one program"),
            (&["--load", "r", "-a"], "-a does not go with --load: the saved run was recorded with its own"),
        ] {
            assert_eq!(args(bad), Err(UsageError(why.into())), "{bad:?}");
        }
    }

    #[test]
    fn usage_errors() {
        assert_eq!(args(&[]), Err(UsageError("no program to profile".into())));
        let e = args(&["-s", "zz", "fib"]).unwrap_err();
        assert_eq!(e.0, "invalid address 'zz' for -s: expected a decimal or 0x-hex number");
        let e = args(&["-e", "0x1ffffffffffffffff", "fib"]).unwrap_err();
        assert_eq!(e.0, "invalid address '0x1ffffffffffffffff' for -e: out of range (at most 0xffffffffffffffff)");
        let e = args(&["-i", "18446744073709551616", "fib"]).unwrap_err();
        assert_eq!(e.0, "invalid interval '18446744073709551616' for -i: out of range (at most 0xffffffffffffffff)");
        assert!(args(&["-x", "fib"]).is_err());
        assert!(args(&["-s"]).is_err());
        let e = args(&["--percent-limit", "-1", "fib"]).unwrap_err();
        assert_eq!(e.0, "invalid share '-1' for --percent-limit: expected a percentage from 0 to 100");
        assert!(args(&["--percent-limit", "1e3", "fib"]).is_err());
        assert_eq!(profile(&["--percent-limit", "2.5%", "fib"]).sections.percent_limit, Some(250));
        assert_eq!(profile(&["fib"]).sections.percent_limit, None);
        // The kernel: the running one's by default, a file, or none (a file called so: ./none).
        use crate::kernel::KernelChoice;
        assert_eq!(profile(&["fib"]).kernel, KernelChoice::Running);
        assert_eq!(profile(&["--kernel", "/boot/vmlinux", "fib"]).kernel, KernelChoice::File("/boot/vmlinux".into()));
        assert_eq!(profile(&["--kernel", "none", "fib"]).kernel, KernelChoice::Off);
        assert_eq!(profile(&["--kernel", "./none", "fib"]).kernel, KernelChoice::File("./none".into()));
        assert_eq!(args(&["--kernel", "", "fib"]).unwrap_err().0, "empty file name for --kernel");
        // Report filters: lists, repeatable; ids are numbers; --save keeps the run whole.
        let f = profile(&["--comm", "gzip, make", "--comm", "sh", "--pids", "12,0x10", "--tid", "7", "--dso", "[kernel]", "fib"]).filter;
        assert_eq!(f.comms, ["gzip", "make", "sh"]);
        assert_eq!((f.pids, f.tids, f.dsos), (vec![12, 16], vec![7], vec!["[kernel]".to_string()]));
        assert_eq!(args(&["--tid", "7,x", "fib"]).unwrap_err().0, "invalid id 'x' for --tid: expected a list of numbers, such as 42,43");
        assert!(args(&["--pids", "99999999999", "fib"]).is_err());
        assert!(args(&["--dso", "libc.so.6", "--save", "r.profil", "fib"]).unwrap_err().0.starts_with("--save keeps the whole run"));
        // Shares of the whole run by default, as perf report's --percentage.
        assert!(!profile(&["--dso", "libc.so.6", "fib"]).filter.relative);
        assert!(!profile(&["--percentage", "absolute", "fib"]).filter.relative);
        assert!(profile(&["--percentage", "relative", "--dso", "libc.so.6", "fib"]).filter.relative);
        assert!(profile(&["--percentage", "relative", "fib"]).filter.is_empty(), "a way of showing, not a filter");
        assert_eq!(args(&["--percentage", "half", "fib"]).unwrap_err().0, "invalid mode 'half' for --percentage: expected absolute or relative");
    }

    #[test]
    fn help_and_version() {
        match args(&["--help"]) {
            Ok(Command::Help(h)) => {
                assert!(h.starts_with("Usage: profil"));
                for o in [
                    "-s ADDR",
                    "-e ADDR",
                    "-i BYTES",
                    "-F, --frequency HZ",
                    "-f, --flat",
                    "--asm ",
                    "--asm-top N",
                    "-o, --gmon FILE",
                    "--collapsed FILE",
                    "--json FILE",
                    "--svg FILE",
                    "--pprof FILE",
                    "-g ",
                    "--call-graph MODE",
                    "--stack-size BYTES",
                    "--callers ",
                    "--callgraph ",
                    "-h, --help",
                    "-V, --version",
                ] {
                    assert!(h.contains(o), "help lacks {o}:\n{h}");
                }
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(args(&["-V"]), Ok(Command::Version));
    }
}
