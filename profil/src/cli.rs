//! The command line: every option, with its help text, in one place.

use std::ffi::OsString;
use std::path::PathBuf;

use getopts::Options;
use prof_core::sampler::{is_valid_stack_size, CallGraph, DEFAULT_STACK_SIZE, MAX_STACK_SIZE};

use crate::disasm;

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

/// A command-line mistake, with the message to print (exit status 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

/// Where a Redox image installs the kernel it boots.
pub const DEFAULT_KERNEL: &str = crate::platform::REDOX_KERNEL;

fn options() -> Options {
    crate::options::parser()
}

/// Parse `args` (without the program name of profil itself). The program and its arguments
/// may be any bytes; profil's own options must be UTF-8.
pub fn parse<I: IntoIterator<Item = S>, S: Into<OsString>>(args: I) -> Result<Command, UsageError> {
    let raw: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let lossy: Vec<String> = raw.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let m = options().parse(&lossy).map_err(|e| UsageError(e.to_string()))?;
    // Options stop at the program name, so the program and its arguments are the tail.
    let first_free = raw.len() - m.free.len();
    if let Some(bad) = raw[..first_free].iter().find(|a| a.to_str().is_none()) {
        return Err(UsageError(format!("option argument '{}' is not valid UTF-8", bad.to_string_lossy())));
    }
    if m.opt_present("h") {
        return Ok(Command::Help(options().usage(&format!("{}\n\n{}", crate::options::SYNOPSIS, crate::options::DESCRIPTION))));
    }
    if m.opt_present("man") {
        return Ok(Command::Help(crate::manual::page()));
    }
    if m.opt_present("V") {
        return Ok(Command::Version);
    }
    let number = |name: &str, what: &str| -> Result<u64, UsageError> {
        match m.opt_str(name) {
            None => Ok(0),
            Some(s) => parse_number(&s)
                .ok_or_else(|| UsageError(format!("invalid {what} '{s}' for -{name}: {}", number_problem(&s)))),
        }
    };
    let start = number("s", "address")?;
    let end = number("e", "address")?;
    let interval = number("i", "interval")?;
    let frequency_hz = match m.opt_str("F") {
        None => 1000,
        Some(s) => match parse_number(&s) {
            Some(f) if crate::platform::FREQUENCIES.contains(&f) => f,
            _ => {
                let (lo, hi) = (crate::platform::FREQUENCIES.start(), crate::platform::FREQUENCIES.end());
                return Err(UsageError(format!("invalid frequency '{s}' for -F: expected {lo} to {hi} (Hz)")));
            }
        },
    };
    let kernel = match m.opt_str("kernel").as_deref() {
        Some("") => return Err(UsageError("empty file name for --kernel".into())),
        // A file of that name is `./none`.
        Some("none") => crate::kernel::KernelChoice::Off,
        Some(s) => crate::kernel::KernelChoice::File(PathBuf::from(s)),
        None => crate::kernel::KernelChoice::Running,
    };
    let asm_top = match m.opt_str("asm-top") {
        Some(s) => match parse_number(&s) {
            Some(n) if n >= 1 => Some(n as usize),
            _ => return Err(UsageError(format!("invalid count '{s}' for --asm-top: expected a positive number"))),
        },
        None => m.opt_present("asm").then_some(disasm::DEFAULT_TOP),
    };
    let lines = match (m.opt_present("lines"), m.opt_str("lines").as_deref()) {
        (false, _) => None,
        (true, None) => Some(Some(prof_objects::lines::DEFAULT_TOP)),
        (true, Some("all")) => Some(None),
        (true, Some(other)) => return Err(UsageError(format!("invalid value '{other}' for --lines: expected --lines or --lines=all"))),
    };
    let file = |name: &str| -> Result<Option<PathBuf>, UsageError> {
        match m.opt_str(name) {
            Some(s) if s.is_empty() => Err(UsageError(format!("empty file name for --{name}"))),
            other => Ok(other.map(PathBuf::from)),
        }
    };
    let (gmon, collapsed, json) = (file("gmon")?, file("collapsed")?, file("json")?);
    let (svg, pprof, report) = (file("svg")?, file("pprof")?, file("report")?);
    let (save, load) = (file("save")?, file("load")?);
    let speedscope = file("speedscope")?;
    let samples = file("samples")?;
    let firefox = file("firefox")?;
    let diff = file("diff")?;
    let threads = m.opt_present("threads");
    let sysroot = match file("sysroot")? {
        Some(_) if load.is_none() && diff.is_none() => return Err(UsageError("--sysroot goes with --load or --diff: a live run reads this machine's files".into())),
        Some(d) if !d.is_dir() => return Err(UsageError(format!("--sysroot {}: not a directory", d.display()))),
        other => other,
    };
    let fail_above = match m.opt_str("fail-above") {
        None => None,
        Some(_) if diff.is_none() => return Err(UsageError("--fail-above goes with --diff".into())),
        Some(s) => match s.parse::<f64>() {
            Ok(pp) if (0.0..=100.0).contains(&pp) => Some((pp * 100.0).round() as u32),
            _ => return Err(UsageError(format!("invalid points '{s}' for --fail-above: expected a number from 0 to 100"))),
        },
    };
    let callers = m.opt_present("callers") || m.opt_present("callgraph");
    let stack_size = match m.opt_str("stack-size") {
        None => DEFAULT_STACK_SIZE,
        Some(s) => match parse_number(&s) {
            Some(n) if is_valid_stack_size(n) => n as u32,
            _ => {
                return Err(UsageError(format!(
                    "invalid size '{s}' for --stack-size: expected a multiple of 8 from 8 to {MAX_STACK_SIZE} (bytes)"
                )))
            }
        },
    };
    let call_graph = match m.opt_str("call-graph").as_deref() {
        None if m.opt_present("g") || callers || m.opt_present("stack-size") => CallGraph::Dwarf { stack_size },
        None => CallGraph::None,
        Some("dwarf") => CallGraph::Dwarf { stack_size },
        Some("fp") if m.opt_present("stack-size") => {
            return Err(UsageError("--stack-size goes with dwarf call stacks, not fp".into()))
        }
        Some("fp") => CallGraph::FramePointers,
        Some(other) => return Err(UsageError(format!("invalid mode '{other}' for --call-graph: expected dwarf or fp"))),
    };
    let flat_only = m.opt_present("f");
    let children = m.opt_present("children");
    let inline = m.opt_present("inline");
    let short_names = m.opt_present("short-names");
    let top = match m.opt_str("top") {
        Some(s) => match parse_number(&s) {
            Some(n) if n >= 1 => Some(n as usize),
            _ => return Err(UsageError(format!("invalid count '{s}' for --top: expected a positive number"))),
        },
        None => None,
    };
    let percent_limit = match m.opt_str("percent-limit") {
        Some(s) => match s.trim_end_matches('%').parse::<f64>() {
            Ok(p) if (0.0..=100.0).contains(&p) => Some((p * 100.0).round() as u32),
            _ => return Err(UsageError(format!("invalid share '{s}' for --percent-limit: expected a percentage from 0 to 100"))),
        },
        None => None,
    };
    let words = |name: &str| -> Vec<String> {
        m.opt_strs(name).iter().flat_map(|v| v.split(',')).map(str::trim).filter(|w| !w.is_empty()).map(str::to_string).collect()
    };
    let ids = |name: &str| -> Result<Vec<u32>, UsageError> {
        words(name)
            .iter()
            .map(|w| match parse_number(w) {
                Some(n) if n <= u64::from(u32::MAX) => Ok(n as u32),
                _ => Err(UsageError(format!("invalid id '{w}' for --{name}: expected a list of numbers, such as 42,43"))),
            })
            .collect()
    };
    let window = match m.opt_str("time") {
        Some(t) => Some(crate::timeline::Window::parse(&t).map_err(|e| UsageError(format!("invalid window for --time: {e}")))?),
        None => None,
    };
    let relative = match m.opt_str("percentage").as_deref() {
        None | Some("absolute") => false,
        Some("relative") => true,
        Some(other) => return Err(UsageError(format!("invalid mode '{other}' for --percentage: expected absolute or relative"))),
    };
    let filter = crate::filter::Filter { pids: ids("pids")?, tids: ids("tid")?, comms: words("comm"), dsos: words("dso"), window, relative };
    let timeline = match (m.opt_present("timeline"), m.opt_str("timeline")) {
        (false, _) => None,
        (true, None) => Some(crate::slices::DEFAULT_SLICES),
        (true, Some(n)) => match parse_number(&n) {
            Some(n @ 1..=1000) => Some(n as usize),
            _ => return Err(UsageError(format!("invalid count '{n}' for --timeline: expected slices from 1 to 1000"))),
        },
    };
    if !filter.is_empty() && m.opt_present("save") {
        return Err(UsageError(
            "--save keeps the whole run: give --comm, --pids, --tid, --dso and --time when it is loaded (--load)".to_string(),
        ));
    }
    let off_cpu = m.opt_present("off-cpu");
    let attach = match m.opt_str("p") {
        None => None,
        Some(s) => match parse_number(&s) {
            Some(pid) if (1..=u64::from(u32::MAX)).contains(&pid) => Some(pid as u32),
            _ => return Err(UsageError(format!("invalid pid '{s}' for -p: expected a process id above 0"))),
        },
    };
    let system = m.opt_present("a");
    let duration = match m.opt_str("t") {
        None => None,
        Some(_) if attach.is_none() && !system => return Err(UsageError("-t goes with -p or -a".into())),
        Some(s) => match s.parse::<f64>() {
            Ok(t) if t > 0.0 && t <= 1e9 => Some(std::time::Duration::from_secs_f64(t)),
            _ => return Err(UsageError(format!("invalid duration '{s}' for -t: expected seconds above 0"))),
        },
    };
    let mut free = raw.into_iter().skip(first_free);
    if load.is_some() {
        // The run was recorded already: only how it is reported can be chosen.
        let recording = ["p", "t", "a", "F", "g", "call-graph", "stack-size", "children", "off-cpu", "s", "e", "i", "save"];
        if let Some(o) = recording.iter().find(|o| m.opt_present(o)) {
            let dash = if o.len() == 1 { "-" } else { "--" };
            return Err(UsageError(format!("{dash}{o} does not go with --load: the saved run was recorded with its own")));
        }
        if free.len() > 0 {
            return Err(UsageError("--load reports a saved run: no program to run".into()));
        }
    }
    if system {
        // Every process: nothing of one program's (its bins, its threads, its children, its
        // file's lines) and nothing to start.
        // (The timeline is of one program's samples too, for now.)
        let one_program = [
            "p", "s", "e", "i", "o", "children", "threads", "off-cpu", "lines", "asm", "asm-top", "callers", "callgraph", "diff", "time", "percentage",
            "timeline",
        ];
        if let Some(o) = one_program.iter().find(|o| m.opt_present(o)) {
            let dash = if o.len() == 1 { "-" } else { "--" };
            return Err(UsageError(format!("{dash}{o} does not go with -a: it profiles every process, not one program")));
        }
        if free.len() > 0 {
            return Err(UsageError("-a profiles every process: no program to run (-t SECONDS says how long)".into()));
        }
    }
    let target = match (free.next(), attach, load) {
        (Some(_), Some(_), _) if free.len() > 0 => {
            return Err(UsageError("with -p, name at most the process's program file: it runs already".into()))
        }
        // An empty file name names none, as before the modes were one enum.
        (file, Some(pid), _) => Target::Attach { pid, file: file.filter(|f| !f.is_empty()) },
        (None, None, Some(file)) => Target::Load(file),
        (None, None, None) if system => Target::System,
        (Some(program), None, _) => Target::Launch { program, args: free.collect() },
        (None, None, None) => return Err(UsageError("no program to profile".into())),
    };
    let objects = prof_objects::Options::new(
        &m.opt_strs("debug-dir").into_iter().map(PathBuf::from).collect::<Vec<_>>(),
        sysroot.as_deref(),
        short_names,
    );
    Ok(Command::Profile(Box::new(Args {
        bins: BinRange { start, end, interval },
        frequency_hz,
        call_graph,
        children,
        off_cpu,
        kernel,
        objects,
        inline,
        sections: Sections { flat_only, top, percent_limit, lines, callers, asm_top, threads, timeline },
        filter,
        diff,
        fail_above,
        report,
        exports: ExportFiles { gmon, collapsed, svg, pprof, json, speedscope, samples, firefox, save },
        target,
        duration,
    })))
}

/// The short usage line printed after a usage error.
pub fn short_usage() -> &'static str {
    "Usage: profil [-s startaddr] [-e endaddr] [-i interval] [-F hz] [-f] [-g] [--asm] [-o gmon.out] program [args...]  (profil --help for more)"
}

/// Why `s` is not a number: well-formed but too large, or not a number at all.
fn number_problem(s: &str) -> &'static str {
    let s = s.trim();
    let digits = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        None => !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()),
    };
    if digits {
        "out of range (at most 0xffffffffffffffff)"
    } else {
        "expected a decimal or 0x-hex number"
    }
}

/// A decimal or `0x`-prefixed hexadecimal number.
/// (The same grammar as the `prof:` control file's numbers, so one parser serves both.)
pub fn parse_number(s: &str) -> Option<u64> {
    prof_core::ctl::number(s.trim()).ok()
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
        for (bad, why) in [
            (&["-a", "fib"][..], "-a profiles every process: no program to run (-t SECONDS says how long)"),
            (&["-a", "-p", "1"], "-p does not go with -a: it profiles every process, not one program"),
            (&["-a", "-o", "g.out"], "-o does not go with -a: it profiles every process, not one program"),
            (&["-a", "--children"], "--children does not go with -a: it profiles every process, not one program"),
            (&["-a", "--diff", "r"], "--diff does not go with -a: it profiles every process, not one program"),
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
