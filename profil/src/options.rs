//! profil's options, defined once: the parser (getopts), `--help`, the manual page
//! (`--man`) and the README's table are made from [`OPTIONS`], so none of them drifts from
//! another.

use getopts::{Matches, Options, ParsingStyle};

use crate::asked::*;

/// How profil is called (`--help`'s first lines, the manual's SYNOPSIS).
pub const SYNOPSIS: &str = "\
Usage: profil [-s startaddr] [-e endaddr] [-i interval] [-F hz] [-f] [--asm] [-o gmon.out]
              [-g | --call-graph dwarf|fp] [--callers] [--inline] [--children] [--lines]
              [--report FILE] [--collapsed FILE] [--svg FILE] [--pprof FILE] [--json FILE]
              [--save FILE] program [args...]
       profil [options] -p PID [-t SECONDS] [program-file]
       profil [report and export options] --load FILE";

/// What it does (`--help`, the manual's DESCRIPTION).
pub const DESCRIPTION: &str = "\
Runs PROGRAM with ARGS under profiling, then prints a histogram of where its time went
over bins of its text segment (at most 1024 bins) and a flat profile by function.
Addresses are the program's link-time addresses (as nm shows them), in decimal or 0x-hex.
A #! script runs as the kernel runs it; the bins cover its interpreter's text (through
#!/usr/bin/env NAME, the NAME env would run), and the report says so.
Ctrl-C (or SIGTERM, SIGHUP) ends the program as usual and still prints the profile. The banner
and the report go to standard error, as time and strace write theirs, so the program's output
stays its own (at a terminal: the banner, the program's output, the statistics, as in Minix);
--report - sends them to standard output, --report FILE to a file. With --load, -p and -a the
report goes to standard output. An export written to stdout (-) sends the program's output to
stderr. With -p, profil profiles a process that is already running (all its threads) until it
exits, -t SECONDS pass, or Ctrl-C; its file is /proc/PID/exe unless named (on Redox, name it).
With -g, every sample's call stack is recorded too: the flat profile gains each function's
total % (samples with it anywhere on the stack), and the exports carry whole stacks. On Redox
the stacks are the kernel's frame-pointer walks: build programs with frame pointers.";

/// What an option takes after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    Nothing,
    Value,
    /// A value, repeatable.
    Values,
    /// A value or none (`--lines`, `--lines=all`).
    MaybeValue,
}

/// One option of profil's.
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    /// One letter, or "".
    pub short: &'static str,
    /// Its long name, or "".
    pub long: &'static str,
    /// The value's name in the help (`FILE`), "" for none.
    pub value: &'static str,
    pub takes: Takes,
    /// One line: `--help` and the README's table.
    pub help: &'static str,
    /// What it is without the option, where that is worth saying.
    pub default: &'static str,
    /// The manual's paragraph (the README's Markdown: `code`), "" for the help alone.
    pub more: &'static str,
    /// It says how a run is recorded: a saved run (`--load`) was recorded with its own.
    pub recorded: bool,
    /// It is about one program (its bins, threads, children, lines): not with `-a`.
    pub one_program: bool,
    /// Its value (`None` where it takes none, or `--lines` without one) into what the user
    /// asked, checked; once for each time it is given.
    pub set: fn(&mut Asked, Value) -> Result<(), UsageError>,
}

/// How an option's value follows its name where it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    Nothing,
    /// `-F HZ`.
    Space,
    /// `--lines[=all]`.
    Equals,
}

impl Opt {
    /// Its names as written, each with how its value follows: `-F` then ` HZ`, `--frequency`
    /// alone (the value is shown once, with the first name); `--lines` then `[=all]`.
    pub fn spellings(&self) -> Vec<(String, After)> {
        let after = match self.takes {
            Takes::Nothing => After::Nothing,
            Takes::MaybeValue => After::Equals,
            Takes::Value | Takes::Values => After::Space,
        };
        match (self.short, self.long) {
            ("", long) => vec![(format!("--{long}"), after)],
            (short, "") => vec![(format!("-{short}"), after)],
            (short, long) => vec![(format!("-{short}"), after), (format!("--{long}"), After::Nothing)],
        }
    }

    /// The name getopts knows it by: its letter, else its long name.
    pub fn key(&self) -> &'static str {
        match self.short {
            "" => self.long,
            short => short,
        }
    }

    /// How an error names it: `-p`, `--children`.
    pub fn flag(&self) -> String {
        match self.short {
            "" => format!("--{}", self.long),
            short => format!("-{short}"),
        }
    }

    /// Take what `m` has of it into `asked`: each value it was given, in order.
    fn take(&self, m: &Matches, asked: &mut Asked) -> Result<bool, UsageError> {
        let key = self.key();
        let values = match self.takes {
            Takes::Nothing => match m.opt_present(key) {
                true => vec![None],
                false => vec![],
            },
            Takes::Value => m.opt_str(key).map(Some).into_iter().collect(),
            Takes::Values => m.opt_strs(key).into_iter().map(Some).collect(),
            Takes::MaybeValue => match m.opt_present(key) {
                true => vec![m.opt_str(key)],
                false => vec![],
            },
        };
        for v in &values {
            (self.set)(asked, v.as_deref())?;
        }
        Ok(!values.is_empty())
    }

    /// How it is written: `-F HZ`, `--frequency`; `--kernel FILE`; `--lines[=all]`.
    pub fn names(&self) -> Vec<String> {
        self.spellings()
            .into_iter()
            .map(|(name, after)| match after {
                After::Nothing => name,
                After::Space => format!("{name} {}", self.value),
                After::Equals => format!("{name}[={}]", self.value),
            })
            .collect()
    }
}

/// The `--help` line of an option: its help and default.
fn help_line(o: &Opt) -> String {
    match o.default {
        "" => o.help.to_string(),
        d => format!("{} (default: {d})", o.help),
    }
}

/// The parser of profil's options, from [`OPTIONS`].
pub fn parser() -> Options {
    let mut o = Options::new();
    // Options end at the program name: everything after it belongs to the program.
    o.parsing_style(ParsingStyle::StopAtFirstFree);
    for opt in OPTIONS {
        let help = help_line(opt);
        match opt.takes {
            Takes::Nothing => o.optflag(opt.short, opt.long, &help),
            Takes::Value => o.optopt(opt.short, opt.long, &help, opt.value),
            Takes::Values => o.optmulti(opt.short, opt.long, &help, opt.value),
            Takes::MaybeValue => o.optflagopt(opt.short, opt.long, &help, opt.value),
        };
    }
    o
}

/// What `args` ask, each option's value taken by its own declaration, and the options
/// given (in [`OPTIONS`]' order), for the checks of how they go together.
pub fn asked(args: &[String]) -> Result<(Asked, Vec<&'static Opt>, Vec<String>), UsageError> {
    let m = parser().parse(args).map_err(|e| UsageError(e.to_string()))?;
    let (mut asked, mut present, mut first_error) = (Asked::default(), Vec::new(), None);
    for opt in OPTIONS {
        match opt.take(&m, &mut asked) {
            Ok(true) => present.push(opt),
            Ok(false) => {}
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    // `--help`, `--version` and `--man` answer whatever else is on the line.
    match first_error.filter(|_| !(asked.help || asked.version || asked.man)) {
        Some(e) => Err(e),
        None => Ok((asked, present, m.free)),
    }
}

/// Every option, in `--help`'s order.
pub const OPTIONS: &[Opt] = &[
    Opt {
        short: "s",
        long: "",
        value: "ADDR",
        takes: Takes::Value,
        help: "start of the profiled range (a link-time address, decimal or 0x hex)",
        default: "start of the text segment",
        more: "start of the profiled range (link-time address, decimal or `0x` hex)",
        recorded: true,
        one_program: true,
        set: |a, v| {
            a.start = number(v, "s", "address")?;
            Ok(())
        },
    },
    Opt {
        short: "e",
        long: "",
        value: "ADDR",
        takes: Takes::Value,
        help: "end of the profiled range, exclusive",
        default: "end of the text segment",
        more: "end of the profiled range, exclusive",
        recorded: true,
        one_program: true,
        set: |a, v| {
            a.end = number(v, "e", "address")?;
            Ok(())
        },
    },
    Opt {
        short: "i",
        long: "",
        value: "BYTES",
        takes: Takes::Value,
        help: "bytes per bin",
        default: "the smallest that fits in 1024 bins",
        more: "bytes per bin",
        recorded: true,
        one_program: true,
        set: |a, v| {
            a.interval = number(v, "i", "interval")?;
            Ok(())
        },
    },
    Opt {
        short: "F",
        long: "frequency",
        value: "HZ",
        takes: Takes::Value,
        help: "samples per second (Linux: of CPU time, 1 to 100000; Redox: per CPU, 100 to 10000)",
        default: "1000",
        more: "samples per second. Linux: of the program's CPU time, 1 to 100000 (each sample costs the program the kernel's timer interrupt, the same as under `perf record`: 15 µs in the KVM guest this was measured on, 1.5 % at 1 kHz, linear in the rate; rates far above 1–4 kHz slow the program; docs/proof.md). Redox: per CPU, 100 to 10000, for upstream's profiler with kernel-patch/events (its NMIs, which sample the kernel's work too); a stock kernel samples at its own rate, which the report's `Sampling:` line measures from the records' clock",
        recorded: true,
        one_program: false,
        set: |a, v| {
            a.frequency_hz = Some(frequency(v)?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "kernel",
        value: "FILE",
        takes: Takes::Value,
        help: "name the kernel's samples from FILE (Redox: its ELF; Linux: a kallsyms file or a vmlinux; none: not at all)",
        default: "the running kernel's: Linux /proc/kallsyms where it shows addresses, Redox /usr/lib/boot/kernel",
        more: "name the kernel's samples, as functions of their own (`vfs_write [kernel]`) in the flat profile, the stacks (the kernel's function as the leaf above the system call) and the exports, from FILE: Redox, the kernel's ELF; Linux, a kallsyms file or a vmlinux. By default, as perf does, from the running kernel's symbols: on Linux `/proc/kallsyms`, where kernel samples are allowed (root, or `perf_event_paranoid` ≤ 1) and it shows this user the kernel's addresses (not `kernel.kptr_restrict`'s zeros; otherwise the kernel's samples are one number and the report says why). A saved run (`--load`, `--diff`) is named by default only where it was recorded on this boot of this kernel (its boot id and `_stext`, saved with it: KASLR moves the kernel at every boot); otherwise its kernel samples keep their addresses and the report says why, and `--kernel FILE` names them from FILE, whatever kernel it is. `--kernel none`: the kernel's samples are counted, not named (a file called none: `./none`)",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.kernel = kernel(v)?;
            Ok(())
        },
    },
    Opt {
        short: "p",
        long: "pid",
        value: "PID",
        takes: Takes::Value,
        help: "profile the running process PID instead of starting a program",
        default: "",
        more: "profile the running process PID instead of starting a program",
        recorded: true,
        one_program: true,
        set: |a, v| {
            a.pid = Some(pid(v)?);
            Ok(())
        },
    },
    Opt {
        short: "a",
        long: "system-wide",
        value: "",
        takes: Takes::Nothing,
        help: "profile every process of the system instead of one program",
        default: "",
        more: "profile every process of the system instead of one program (Linux: root, or `kernel.perf_event_paranoid` ≤ 0; Redox: root); with `-t`, `-F`, `-g`, `--kernel`, `--report`, `--save` and every export but `-o`",
        recorded: true,
        one_program: false,
        set: |a, _| {
            a.system = true;
            Ok(())
        },
    },
    Opt {
        short: "t",
        long: "duration",
        value: "SECONDS",
        takes: Takes::Value,
        help: "with -p or -a: stop after SECONDS",
        default: "until it exits or Ctrl-C",
        more: "with `-p` or `-a`: stop after this long (decimal, e.g. `2.5`)",
        recorded: true,
        one_program: false,
        set: |a, v| {
            a.duration = Some(duration(v)?);
            Ok(())
        },
    },
    Opt {
        short: "f",
        long: "flat",
        value: "",
        takes: Takes::Nothing,
        help: "print the flat profile only, without the Minix histogram",
        default: "",
        more: "print the flat profile by function only, without the Minix histogram",
        recorded: false,
        one_program: false,
        set: |a, _| {
            a.flat_only = true;
            Ok(())
        },
    },
    Opt {
        short: "g",
        long: "",
        value: "",
        takes: Takes::Nothing,
        help: "record every sample's call stack (as --call-graph dwarf)",
        default: "",
        more: "record every sample's call stack (as `--call-graph dwarf`): the flat profile gains `total %`",
        recorded: true,
        one_program: false,
        set: |a, _| {
            a.g = true;
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "call-graph",
        value: "MODE",
        takes: Takes::Value,
        help: "record call stacks: dwarf (the objects' CFI) or fp (frame pointers)",
        default: "",
        more: "how: `dwarf` copies the user stack and unwinds it with the objects' CFI (no frame pointers needed); `fp` walks the frame-pointer chain. On Redox both mean the kernel's frame-pointer walk",
        recorded: true,
        one_program: false,
        set: |a, v| {
            a.call_graph = Some(stack_mode(v)?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "stack-size",
        value: "BYTES",
        takes: Takes::Value,
        help: "with dwarf stacks: bytes of user stack copied per sample",
        default: "16384",
        more: "with `dwarf`: bytes of user stack copied per sample (a multiple of 8, at most 65528)",
        recorded: true,
        one_program: false,
        set: |a, v| {
            a.stack_size = Some(stack_size(v)?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "callers",
        value: "",
        takes: Takes::Nothing,
        help: "print the callers and callees of the top functions (implies -g)",
        default: "",
        more: "print the callers and callees of the 10 functions with the most total samples (implies `-g`); with `--off-cpu` also of the 10 with the most blocked time under them, in seconds; `--callgraph`, its former name, one hyphen from `--call-graph`, still works",
        recorded: false,
        one_program: true,
        set: |a, _| {
            a.callers = true;
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "callgraph",
        value: "",
        takes: Takes::Nothing,
        help: "the same as --callers (its former name)",
        default: "",
        more: "print the callers and callees of the 10 functions with the most total samples (implies `-g`); with `--off-cpu` also of the 10 with the most blocked time under them, in seconds; `--callgraph`, its former name, one hyphen from `--call-graph`, still works",
        recorded: false,
        one_program: true,
        set: |a, _| {
            a.callers = true;
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "inline",
        value: "",
        takes: Takes::Nothing,
        help: "inlined functions as functions of their own (needs debug info)",
        default: "",
        more: "inlined functions become functions of their own, `name (inlined)` as perf marks them: their own samples in the flat profile, frames of the `-g` stacks under the function they were inlined into, in `--callers` and every export (needs debug info; with `--lines` or `--inline`, `--pprof` carries source lines, so `go tool pprof -list FUNC` and `-lines` work)",
        recorded: false,
        one_program: false,
        set: |a, _| {
            a.inline = true;
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "children",
        value: "",
        takes: Takes::Nothing,
        help: "profile the processes the program starts too, to any depth",
        default: "",
        more: "profile the processes the program starts too, forked copies and programs they exec, to any depth (Linux and Redox): after the program's report (before it where the program itself did next to nothing, as a driver such as `make` or `sh` does), a table of every process with its share (past 50, the busiest and one line for the rest), a program run more than once also as one row of `By program` (`make`'s 30 `cc` runs together), each busy one's top functions and the top functions of all together; exports root each process's stacks at `name [pid N]` (pprof: tags `pid` and `process`). The Minix bins stay the program's. Profiling ends with the program: a process still running then is marked `(still running)`, its later samples not counted",
        recorded: true,
        one_program: true,
        set: |a, _| {
            a.children = true;
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "top",
        value: "N",
        takes: Takes::Value,
        help: "the flat profile's N busiest functions, the rest summed in one line",
        default: "all",
        more: "the flat profile's N functions with the most samples, then one line summing the rest",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.top = Some(count(v, "top")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "percent-limit",
        value: "PCT",
        takes: Takes::Value,
        help: "the flat profile's functions with PCT % of the samples or more",
        default: "all",
        more: "the flat profile's functions with PCT % of the samples or more, then one line summing the rest (as `perf report --percent-limit`)",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.percent_limit = Some(percent_limit(v)?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "comm",
        value: "NAME,...",
        takes: Takes::Values,
        help: "report only the processes running these programs",
        default: "all",
        more: "report only these processes: the program, its children (`--children`), `-a`'s processes, by program (a file's name or path, or its comm, the name cut to 15 bytes as ps and perf print it) or pid; live or `--load`ed runs (`-p`/`--pid` attaches, as `perf record`'s)",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.comms.extend(words(v));
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "pids",
        value: "PID,...",
        takes: Takes::Values,
        help: "report only these processes",
        default: "all",
        more: "report only these processes: the program, its children (`--children`), `-a`'s processes, by program (a file's name or path) or pid; live or `--load`ed runs (`-p`/`--pid` attaches, as `perf record`'s)",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.pids.extend(ids(v, "pids")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "tid",
        value: "TID,...",
        takes: Takes::Values,
        help: "report only these threads' samples",
        default: "all",
        more: "report only these threads' samples (tids as `--threads` lists them); call stacks are not kept by thread, so they are left out",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.tids.extend(ids(v, "tid")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "dso",
        value: "NAME,...",
        takes: Takes::Values,
        help: "report only the samples in these objects ([kernel]: the kernel's)",
        default: "all",
        more: "report only the samples in these objects (a file's name or path, `[kernel]` for the kernel's); the Minix bins are made again from the program's samples kept. A note on standard error says how many samples the filters kept; `--save` keeps the whole run (filter when loading)",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.dsos.extend(words(v));
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "percentage",
        value: "MODE",
        takes: Takes::Value,
        help: "with the filters: shares of the whole run (absolute) or of the samples kept (relative)",
        default: "absolute",
        more: "how the flat profile's shares are taken when the filters keep fewer samples than the run had, as `perf report --percentage`: `absolute`, of all the program's samples (of the `--time` window, which is cut first), so a function's share is what it is in the whole run; `relative`, of the samples kept. The header says which (`Flat profile (170 user ticks kept of 4226; % of all 4226)`)",
        recorded: false,
        one_program: true,
        set: |a, v| {
            a.relative = relative(v)?;
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "time",
        value: "START,END",
        takes: Takes::Value,
        help: "report only this window of the run: seconds from its start, or 10%,20%",
        default: "the whole run",
        more: "report only the samples of this window of the run, as `perf report --time` takes it: `START,END` in seconds from the program's start (`1.5,3`) or percentages of its span (`10%,20%`); either may be left out (`2,`: from 2 s to the end). Every section and export is of the window, each process's samples in it (`--children`, `-a`); the clock and the waits by the clock are of the whole run, so they are left out. Needs a run whose samples have times (Linux, and Redox from the kernel's records; a run saved by an older profil has none)",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.window = Some(window(v)?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "short-names",
        value: "",
        takes: Takes::Nothing,
        help: "C++ and Rust names without template arguments and parameters",
        default: "",
        more: "C++ and Rust names without template arguments, parameters and return types (`std::vector::push_back`), in the report and every export",
        recorded: false,
        one_program: false,
        set: |a, _| {
            a.short_names = true;
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "asm",
        value: "",
        takes: Takes::Nothing,
        help: "show the instructions of the hottest functions, with their hits",
        default: "",
        more: "the instructions of the hottest functions, with their hits",
        recorded: false,
        one_program: true,
        set: |a, _| {
            a.asm = true;
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "lines",
        value: "all",
        takes: Takes::MaybeValue,
        help: "samples by source line after the flat profile: the top 30, or all",
        default: "",
        more: "after the flat profile, samples by source line (`file:line  function`, the innermost line, inside inlined code, as `addr2line -i` gives it first); needs the objects' DWARF line tables (`-g` builds; Rust release builds with `debug = 1`)",
        recorded: false,
        one_program: true,
        set: |a, v| {
            a.lines = Some(lines(v)?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "debug-dir",
        value: "DIR",
        takes: Takes::Values,
        help: "look for debug files and a saved run's objects in DIR first (repeatable)",
        default: "",
        more: "where to look first for separate debug files (line tables, and the symbols of stripped objects), repeatable; then `$PROFIL_DEBUG_DIRS` (`:`-separated), then `/usr/lib/debug`",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.debug_dirs.push(v.unwrap_or_default().into());
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "asm-top",
        value: "N",
        takes: Takes::Value,
        help: "as --asm, for the N hottest functions",
        default: "3",
        more: "as `--asm`, for the N hottest functions",
        recorded: false,
        one_program: true,
        set: |a, v| {
            a.asm_top = Some(count(v, "asm-top")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "report",
        value: "FILE",
        takes: Takes::Value,
        help: "write the report to FILE (-: standard output, beside the program's)",
        default: "standard error",
        more: "write the report to FILE (checked before the run and written when it is over, as the exports are), without profil's banner; `-` streams the banner and the report to standard output, beside the program's output (the spec's layout on one stream)",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.report = Some(file(v, "report")?);
            Ok(())
        },
    },
    Opt {
        short: "o",
        long: "gmon",
        value: "FILE",
        takes: Takes::Value,
        help: "write gmon.out for GNU gprof to FILE",
        default: "",
        more: "write `gmon.out` for GNU `gprof` (with `-g`: and its call graph, whose \"called\" counts are samples in which the caller called the callee: sampling sees no calls)",
        recorded: false,
        one_program: true,
        set: |a, v| {
            a.gmon = Some(file(v, "gmon")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "collapsed",
        value: "FILE",
        takes: Takes::Value,
        help: "write folded stacks for flamegraph.pl and inferno to FILE",
        default: "",
        more: "write folded stacks for `flamegraph.pl` / inferno",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.collapsed = Some(file(v, "collapsed")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "svg",
        value: "FILE",
        takes: Takes::Value,
        help: "write an interactive flame graph (SVG) to FILE",
        default: "",
        more: "write an interactive flame graph (SVG, drawn by inferno)",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.svg = Some(file(v, "svg")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "pprof",
        value: "FILE",
        takes: Takes::Value,
        help: "write the profile for go tool pprof to FILE",
        default: "",
        more: "write the profile for `go tool pprof` (gzipped `profile.proto`)",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.pprof = Some(file(v, "pprof")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "json",
        value: "FILE",
        takes: Takes::Value,
        help: "write the whole run as JSON to FILE",
        default: "",
        more: "write the whole run as JSON",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.json = Some(file(v, "json")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "samples",
        value: "FILE",
        takes: Takes::Value,
        help: "write every sample in time order to FILE, a line each, for scripts",
        default: "",
        more: "write every sample of the program in time order to FILE (`-` for stdout), a line each, as `perf script` prints perf's: `SECONDS TID STATE STACK`, tab-separated, after a `#` line naming them; SECONDS from the program's start, STATE `cpu` or `blocked` (a look of `--off-cpu`), STACK folded as `--collapsed` writes it (root first, `;` between frames; the function alone without `-g`; a wait's ends in `[off-CPU: call]`). `awk -F'\\t' '$2 == 1234'` keeps a thread. Linux and Redox (a run without times writes the header alone)",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.samples = Some(file(v, "samples")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "speedscope",
        value: "FILE",
        takes: Takes::Value,
        help: "write the run in speedscope's format to FILE",
        default: "",
        more: "write the run in speedscope's file format (`-` for stdout): `npx speedscope FILE` opens it in a browser, offline (time order, left heavy and sandwich views); a profile per process, one of the daemons working for it (Redox), one by the clock with `--off-cpu`, and for a program of several threads one per thread, its functions; weights in nanoseconds of the samples' time. With the run's samples in time order (Linux, Redox), each thread also has a profile over time (`fib thread 1234 (fib): over time`, in the profile menu), whose time-order view is the thread as it ran, phase after phase, and its waits with `--off-cpu`; the sampled profiles' time-order view is by stack",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.speedscope = Some(file(v, "speedscope")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "firefox",
        value: "FILE",
        takes: Takes::Value,
        help: "write the run over time in the Firefox Profiler's format to FILE",
        default: "",
        more: "write the run in the Firefox Profiler's format (`-` for stdout; gzipped where FILE ends in `.gz`, as samply's `profile.json.gz`), for profiler.firefox.com's \"Load a profile from file\" (offline: a local build of it): the program a process (on Redox each daemon that worked for it another; with `--children` each process it started; with `-a` every process sampled), each thread a track, its samples at their times with their stacks and CPU time, libraries with their build-ids and the functions hit; with `--off-cpu`, each wait a marker on its thread (call, what it waited on, stack, length: on Linux as the looks saw it, on Redox exactly, from the kernel's switches). A run without times has the process and no samples",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.firefox = Some(file(v, "firefox")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "save",
        value: "FILE",
        takes: Takes::Value,
        help: "save the run, unsymbolized, to FILE, for --load",
        default: "",
        more: "save the run itself, unsymbolized (addresses, stacks, mappings, bins, threads, waits, processes), for `--load`",
        recorded: true,
        one_program: false,
        set: |a, v| {
            a.save = Some(file(v, "save")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "load",
        value: "FILE",
        takes: Takes::Value,
        help: "report a run saved with --save instead of running a program (a file, or a stream: <(zcat run.gz))",
        default: "",
        more: "report a saved run instead of running a program: any report and export option, the same bytes as the live run gave (below), but that a run loaded on another system than its own has its kernel functions named only with `--kernel FILE` (a note says so); the options that record (`-F`, `-g`, `--children`, `--off-cpu`, `-s`, `-e`, `-i`, `-p`) are refused, the run has its own; a library the run names that is not on this machine, or not in the run's build (GNU build-id), is named in one warning, its samples kept by address; `--debug-dir DIR` finds objects by build-id under `DIR/.build-id/`",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.load = Some(file(v, "load")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "off-cpu",
        value: "",
        takes: Takes::Nothing,
        help: "also the time off a CPU: each thread by the clock, and where it waited",
        default: "off",
        more: "also explain the time the program's threads wait (Linux, no privilege needed): each thread is looked at `-F` times a second (`/proc/PID/task/TID/syscall` and `schedstat`); its time on a CPU and waiting for one are the kernel's own figures, its blocked time the rest, split over the calls it was found blocked in (system call, what it waits on: file, pipe, socket, child; user stack); the `By the clock` and `Waiting` sections, and the waits in every export (below). Costs two `pread`s of `/proc` per thread per period and a stack copy and unwind per new wait, in profil, not in the program (a program blocking 220,000 times a second: its CPU time 1.19x under profil with or without the option, as under `perf record` alone: the sampling timer's cost at each switch; docs/proof.md); the time of waits shorter than the period is right on average, their count is not (`< 2.0 ms` for their mean). Redox: the kernel times every block of every thread at its user stack, in every session (its cost is the kernel's: a frame-pointer walk per block, 6 % of a program blocking 11,000 times a second under QEMU), and this shows them, exact, with each daemon's work for a wait",
        recorded: true,
        one_program: true,
        set: |a, _| {
            a.off_cpu = true;
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "requests",
        value: "",
        takes: Takes::Nothing,
        help: "a Requests section: count and latencies of each system call (Linux: root; -g: where from; -a: every process) or scheme request (Redox)",
        default: "off",
        more: "a `Requests` section: what the program asked of the system and how long each request took, per what it went to, most total time first: count, total, minimum, median, 90th and 99th percentile and maximum latency, and a log2 histogram of the busiest three. Linux: every system call, enter to exit, from the kernel's `raw_syscalls` tracepoints (what `perf trace -s` reads; root, `CAP_PERFMON`, or `kernel.perf_event_paranoid` -1, and tracefs readable), of the program's threads and, with `--children`, of the processes it starts (the table is then the tree's, as `strace -f -c`'s), or with `-a` of every process but profil's (the processes by time in their calls, the five busiest ones' tables, then all together; `--comm`/`--pids` keep those processes'); with `-g`, under each of the top rows the busiest three sites the calls were made from and each site's caller (the site: the first frame outside the C library and Rust's runtime of the user stack at the call, its top, 512 bytes copied with the registers, unwound by the objects' unwind tables through the C library's frames, the rest the kernel's frame-pointer walk; each call then takes about a microsecond more: dd's one-byte writes, median 0.68 us without `-g`, 1.6 us with; `--time` counts the sites of its window's calls; a process's calls before its exec are counted apart, as its files name only the image it became), the rest in one line; a call seen to end without its start (the program's own exec, armed at it; a child's return from `clone`) or to start without its end (`exit_group`) is counted as unfinished, not timed. Without that privilege it turns on `--off-cpu`'s looks and shows, in the same table, the blocked time per call they saw, labelled as such, with a hint. Redox: every request to a scheme, by scheme and the daemon that served it, from the daemon's taking it to its answer by the kernel's request records (profd's `/scheme/prof/requests`; no privilege beyond profd's; with `-a` every process's but profil's, as on Linux), then the same requests from the caller's side (the system call that made it, its entry to its return, where the kernel records system calls: `kernel-patch/events` 0012; else its switch into the call to its switch back), and the chains: what the daemons asked of other schemes while serving them; with `-g` the sites as on Linux, from the user stack where the caller blocked in the call (the first frame outside relibc and Rust's runtime). Quantiles are exact up to 4096 calls of a kind, then within 0.8 % (a log-linear histogram); saved runs keep the table. Each latency holds the writing of its enter record; recording costs two records a call (a program reading 4 KiB of /dev/zero at a time: 0.25 us a call alone, 2.1 us under `--requests`, 41 us under `perf trace -s`; docs/proof.md)",
        recorded: true,
        one_program: false,
        set: |a, _| {
            a.requests = true;
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "threads",
        value: "",
        takes: Takes::Nothing,
        help: "a By thread section: each thread's samples, share and top functions",
        default: "",
        more: "a `By thread` section after the flat profile: each thread of the program (with `--children` or `-a`, of every process, with its pid) with its tid, name (as the kernel had it when the thread was first sampled; on Redox, where threads share their process's name, the program's), samples, share and top functions (on Redox the tid is the kernel's context id, the clock's, and the samples those with a call stack: all but the few taken in a context switch)",
        recorded: false,
        one_program: false,
        set: |a, _| {
            a.threads = true;
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "timeline",
        value: "N",
        takes: Takes::MaybeValue,
        help: "a Timeline section: the run in N slices (20), each with its CPU use, top function and main wait",
        default: "",
        more: "a `Timeline` section after the flat profile: the run (or the `--time` window) cut in N slices of equal time (20 unless given), each with the CPU the program used in it (its samples over the slice's time at the sampling rate: 100 % is one CPU), its busiest function and that function's share of the slice's samples, and, with `--off-cpu`, the call its threads were most found blocked in. A phase change shows as a change of function; then `--time` reports one phase alone. Needs a run whose samples have times (Linux, and Redox from the kernel's records)",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.timeline = Some(slices(v)?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "sysroot",
        value: "DIR",
        takes: Takes::Value,
        help: "with --load or --diff: look for the run's files under DIR first",
        default: "",
        more: "with `--load` or `--diff`: look for the files the saved run names (its program, its libraries, a Redox daemon's executable, the kernel's ELF) under `DIR` first, then where the run found them: a run saved on another machine, or in a Redox guest, reported with a copy of its files",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.sysroot = Some(directory(v, "sysroot")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "diff",
        value: "BASE",
        takes: Takes::Value,
        help: "compare this run with the saved run BASE, with a noise verdict",
        default: "",
        more: "compare this run (live, or `--load`) with a saved one: a `Compared with` section after the flat profile, each function's share in both, its change in percentage points with a 95 % interval (for the whole table) and the verdict `significant` or `noise`, and the change of its own time in seconds; `--collapsed`, `--svg` and `--pprof` then write the difference (inferno's differential folded lines, `stack base now`, the base scaled to this run; a differential flame graph, red where this run has more; pprof samples of this run less the base's, as `go tool pprof -diff_base` makes them)",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.diff = Some(file(v, "diff")?);
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "fail-above",
        value: "PP",
        takes: Takes::Value,
        help: "with --diff: exit 3 when a function's share grew by more than PP points",
        default: "",
        more: "with `--diff`: exit with status 3, after the report and the exports, when a function's own share grew beyond sampling noise by more than `PP` points (the interval's lower end above it); for a CI job",
        recorded: false,
        one_program: false,
        set: |a, v| {
            a.fail_above = Some(points(v)?);
            Ok(())
        },
    },
    Opt {
        short: "h",
        long: "help",
        value: "",
        takes: Takes::Nothing,
        help: "print this help and exit",
        default: "",
        more: "",
        recorded: false,
        one_program: false,
        set: |a, _| {
            a.help = true;
            Ok(())
        },
    },
    Opt {
        short: "V",
        long: "version",
        value: "",
        takes: Takes::Nothing,
        help: "print the version and exit",
        default: "",
        more: "",
        recorded: false,
        one_program: false,
        set: |a, _| {
            a.version = true;
            Ok(())
        },
    },
    Opt {
        short: "",
        long: "man",
        value: "",
        takes: Takes::Nothing,
        help: "print the manual page (roff: profil --man | man -l -) and exit",
        default: "",
        more: "",
        recorded: false,
        one_program: false,
        set: |a, _| {
            a.man = true;
            Ok(())
        },
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Each option is declared once, and its declaration alone takes it: given on its own,
    /// with a value its parser takes, it changes what was asked (so no declaration forgets
    /// to land its value), and every spelling of it lands the same.
    #[test]
    fn each_option_lands_by_its_own_declaration() {
        let candidates = ["1000", "0x10", "8", "fp", "relative", "all", "/", "10%,20%", "x"];
        for opt in OPTIONS {
            let lands = |spelling: &str| -> Option<Asked> {
                let tries: Vec<Vec<String>> = match opt.takes {
                    Takes::Nothing => vec![vec![spelling.to_string()]],
                    Takes::MaybeValue => vec![vec![spelling.to_string()]],
                    Takes::Value | Takes::Values => candidates.iter().map(|v| vec![spelling.to_string(), v.to_string()]).collect(),
                };
                tries.into_iter().find_map(|args| asked(&args).ok().map(|(a, present, _)| (a, present))).map(|(a, present)| {
                    assert_eq!(present.iter().map(|o| o.key()).collect::<Vec<_>>(), [opt.key()], "{spelling}");
                    a
                })
            };
            let spellings: Vec<String> = opt.spellings().into_iter().map(|(s, _)| s).collect();
            let first = lands(&spellings[0]).unwrap_or_else(|| panic!("no value taken by {}", spellings[0]));
            assert_ne!(first, Asked::default(), "{} lands nowhere", spellings[0]);
            for other in &spellings[1..] {
                assert_eq!(lands(other).as_ref(), Some(&first), "{other} lands as {} does", spellings[0]);
            }
        }
    }

    /// A bad value is refused by the option's own parser, naming it.
    #[test]
    fn a_bad_value_is_refused_by_its_option() {
        let refused = |args: &[&str]| asked(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap_err().0;
        assert_eq!(refused(&["-F", "0"]), format!("invalid frequency '0' for -F: expected {} to {} (Hz)", crate::platform::FREQUENCIES.start(), crate::platform::FREQUENCIES.end()));
        assert_eq!(refused(&["--percentage", "most"]), "invalid mode 'most' for --percentage: expected absolute or relative");
        assert_eq!(refused(&["--pids", "1,x"]), "invalid id 'x' for --pids: expected a list of numbers, such as 42,43");
        // --help answers whatever else is on the line.
        assert!(asked(&["-F".into(), "0".into(), "--help".into()]).is_ok_and(|(a, _, _)| a.help));
    }
}

