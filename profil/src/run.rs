//! One profiled run: read the program, fork it at the gate, start profiling its pid, let it
//! exec, wait for it, print the report, write the exports.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use prof_core::sampler::{CallGraph, CountFrom};
use prof_core::{ProfError, StartRequest, StopReason};

use crate::backend::Profiler;
use crate::cli::Args;
use crate::callgraph;
use crate::disasm;
use crate::objects::elf::{self, ElfError, ProgramImage};
use crate::exports::{Analysis, Exports};
use crate::launch::spawn_gated;
use crate::profile::Outcome;
use crate::processes;
use crate::report::{self, ExitKind};
use crate::servers;
use crate::report_out::ReportOut;
use crate::objects::symbolize::Symbolizer;

/// Why a run produced no report.
#[derive(Debug)]
pub enum RunError {
    /// The program cannot be run (message ready for "Profil Error: ...").
    Program(String),
    /// Profiling failed; the message is the spec's.
    Profiling(ProfError),
    /// The child already printed the error (the spec's 0xCC protocol).
    Reported,
    /// The report could not be written (its message says so); the exports were.
    ReportLost(io::Error),
    /// `--fail-above`: a function's share grew beyond the gate; the report and the exports
    /// were written (the message names them).
    Regressed(String),
    Io(io::Error),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Program(m) => f.write_str(m),
            RunError::Profiling(e) => write!(f, "{e}"),
            RunError::Reported => f.write_str("reported by the child"),
            RunError::Io(e) | RunError::ReportLost(e) => f.write_str(&os_message(e)),
            RunError::Regressed(m) => f.write_str(m),
        }
    }
}

impl From<io::Error> for RunError {
    fn from(e: io::Error) -> Self {
        RunError::Io(e)
    }
}

impl From<ProfError> for RunError {
    fn from(e: ProfError) -> Self {
        RunError::Profiling(e)
    }
}

/// An I/O error as `strerror` words it, without Rust's " (os error N)" suffix.
pub fn os_message(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The second line of "Address range invalid": what the range must be, for this program.
pub fn address_range_hint(text: &prof_core::TextSegment, args: &Args) -> String {
    let mut hint = format!(
        "  The text segment is {:#x}-{:#x}: -s and -e must lie within it, -s below -e (-e is exclusive).",
        text.start, text.end
    );
    if let Ok(layout) = prof_core::BinLayout::new(*text, args.start, args.end, 0) {
        if args.interval != 0 && args.interval < layout.min_bin_size() {
            hint = format!(
                "  -i {:#x} is below the smallest bin size for {:#x}-{:#x}: {} ({:#x}), as at most {} bins are kept.",
                args.interval,
                layout.start,
                layout.end,
                layout.min_bin_size(),
                layout.min_bin_size(),
                prof_core::MAX_BINS
            );
        }
    }
    hint
}

/// The program's file, read and checked, and where the report and exports go.
struct Prepared {
    /// The name reports show.
    name: String,
    /// What is exec'd (a script's interpreter, given the script); its `path` is the file whose
    /// text the bins cover.
    launch: crate::script::Launch,
    image: ProgramImage,
    read_elf: std::time::Duration,
    /// How long starting the session took (Linux: the kernel's first per-task perf event
    /// waits for an RCU grace period; timed for the benchmark).
    session_start: std::time::Duration,
    exports: Exports,
    out: ReportOut,
    profiler: Profiler,
}

/// Would exec of `path` be allowed (execute permission, for us)? `-p` files are only read.
fn may_execute(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: a NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// Read and check the program file at `path` (named `name`; a `#!` script: the interpreter
/// it leads to), check the exports, open the profiler.
fn prepare(args: &Args, name: String, path: PathBuf) -> Result<Prepared, RunError> {
    let argv: Vec<std::ffi::OsString> =
        std::iter::once(args.program.clone()).chain(args.program_args.iter().cloned()).collect();
    let launch = crate::script::resolve(&path, &argv).map_err(|e| RunError::Program(format!("Cannot execute '{name}': {e}")))?;
    let cannot = |e: &io::Error| RunError::Program(format!("Cannot execute '{name}': {}", os_message(e)));
    // Reading the ELF (symbols included) is analysis work too: timed with the post-processing.
    let read_start = std::time::Instant::now();
    let image = elf::read_program(&launch.path).map_err(|e| match e {
        ElfError::Io(io) => cannot(&io),
        ElfError::Elf32 => RunError::Program(format!("'{name}': 32-bit ELF executables are not supported")),
        other if launch.interpreters.is_empty() => RunError::Program(format!("'{name}' is {other}")),
        other => RunError::Program(format!("'{name}' is a script whose interpreter '{}' is {other}", launch.path.display())),
    })?;
    let read_elf = read_start.elapsed();
    // The exports never overwrite the file named (the script, when it is one).
    let mut exports = Exports::create(args, &path).map_err(|e| RunError::Program(e.to_string()))?;
    exports.record_program(&launch.path);
    // The report goes to standard error beside a program's output; with --report FILE it
    // waits for its file.
    let out = exports.report_out(args.attach.is_none());
    let profiler = Profiler::new(&launch.path, args)
        .map_err(|e| RunError::Program(os_message(&e)))?;
    Ok(Prepared { name, launch, image, read_elf, session_start: std::time::Duration::ZERO, exports, out, profiler })
}

/// `--kernel FILE`, checked before anything runs: a file that cannot name kernel samples is
/// refused (Redox's default kernel, where the image has none, names nothing, as before), and
/// one that names nothing (hidden addresses) is warned about.
fn check_kernel(args: &Args) -> Result<(), RunError> {
    let Some(kernel) = &args.kernel else { return Ok(()) };
    // A saved run's kernel is looked for under --sysroot first, as the symbolizer reads it.
    match crate::objects::kallsyms::check(&crate::objects::sysroot::locate(kernel)) {
        Ok(warning) => {
            if let Some(w) = warning {
                crate::report_out::to_stderr(format_args!("{w}"));
            }
            Ok(())
        }
        Err(_) if crate::platform::default_kernel().as_ref() == Some(kernel) && !kernel.exists() => Ok(()),
        Err(e) => Err(RunError::Program(e)),
    }
}

/// Why the kernel refuses to let us profile a process of our own (Linux: the
/// `kernel.perf_event_paranoid` policy), if that can be said.
fn perf_policy_hint() -> Option<String> {
    let level = crate::platform::paranoid_level();
    if level.is_empty() {
        return None;
    }
    Some(format!(
        "  The kernel's policy forbids it: kernel.perf_event_paranoid is {level}; at 2 or below a user may \
         profile their own processes (sysctl kernel.perf_event_paranoid=2), or run profil as root."
    ))
}

/// Run `args.program` under profiling (or, with `-p`, profile a running process) and print
/// the report (on standard output, or on standard error when an export takes standard
/// output).  Returns how profil ends: with the program's exit status, or by the signal that
/// killed it ([`Ending`]); with 0 for an attached process.
pub fn run(args: &Args) -> Result<Ending, RunError> {
    crate::objects::debug_file::use_dirs(&args.debug_dirs);
    if let Some(dir) = &args.sysroot {
        crate::objects::sysroot::use_sysroot(dir);
    }
    crate::objects::short_names::use_short_names(args.short_names);
    check_kernel(args)?;
    // A base that is no saved run is said before the program runs, not after.
    if let (Some(base), None) = (&args.diff, &args.load) {
        parse_saved(base, "compare with")?;
    }
    if let Some(file) = &args.load {
        return load(args, file);
    }
    if let Some(pid) = args.attach {
        return attach(args, pid).map(Ending::Code);
    }
    if args.system {
        return crate::system::run(args);
    }
    // The name as reports show it; the program runs with its exact bytes.
    let name = args.program.to_string_lossy().into_owned();
    let path = elf::find_program(&args.program)
        .map_err(|e| RunError::Program(format!("Cannot execute '{name}': {}", os_message(&e))))?;
    // SAFETY: geteuid/getegid have no preconditions.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    crate::privilege::check_may_profile(&path, euid, egid).map_err(RunError::Program)?;
    let named = path.clone();
    let mut p = prepare(args, name, path)?;
    // A file we may not execute is refused before its run's banner (a script: it and each
    // interpreter, as the kernel checks them).
    if !may_execute(&named) {
        return Err(RunError::Program(format!("Cannot execute '{}': Permission denied", p.name)));
    }
    if let Some(denied) = p.launch.interpreters.iter().find(|i| !may_execute(Path::new(i))) {
        return Err(RunError::Program(format!("Cannot execute '{}': its interpreter '{denied}': Permission denied", p.name)));
    }
    let mut child = spawn_gated(&p.launch.path, &p.launch.argv, p.exports.uses_stdout())?;
    // The child waits at the gate, then execs: only the program's own run is counted.
    let req = StartRequest {
        pid: child.pid,
        start: args.start,
        end: args.end,
        interval: args.interval,
        from: CountFrom::Exec,
        rate: Some(args.frequency_hz),
        children: args.children,
    };
    let session_start = std::time::Instant::now();
    let started = p.profiler.start(req, &p.image.layout);
    p.session_start = session_start.elapsed();
    if let Err(e) = started {
        child.refuse(e)?;
        child.wait()?;
        if e == ProfError::AddressRange {
            crate::report_out::to_stderr(format_args!("{}", address_range_hint(&p.image.layout.text, args)));
        }
        // Our own child refused: on Linux that is the kernel's perf_event policy.
        if let (ProfError::Permission, Some(hint)) = (e, perf_policy_hint()) {
            crate::report_out::to_stderr(format_args!("{hint}"));
        }
        if let (ProfError::Busy, Some(hint)) = (e, crate::platform::busy_hint()) {
            crate::report_out::to_stderr(format_args!("{hint}"));
        }
        // The child said the spec's message (an errno crossed the gate); the cause is ours.
        if let Some(cause) = e.cause() {
            crate::report_out::to_stderr(format_args!("  {cause}"));
        }
        return Err(RunError::Reported);
    }
    // The program runs: its output comes under the banner (not with --report: the program's
    // output then stands alone).
    if !p.out.is_kept() {
        p.out.write_all(report::output_banner(&p.name).as_bytes())?;
        p.out.flush()?;
    }
    let started = std::time::Instant::now();
    child.release()?;
    let sampled = p.profiler.wait_for_end(false, None);
    let exit = child.wait()?;
    let elapsed = started.elapsed();
    if child.exec_error().is_some() {
        return Err(RunError::Reported);
    }
    sampled?;
    let ending = match exit {
        ExitKind::Exited(code) => Ending::Code(code as u8),
        ExitKind::Signaled(sig) => Ending::Signal(sig),
        ExitKind::Attached { .. } => Ending::Code(0),
    };
    match report_and_export(args, p, exit, elapsed) {
        Ok(()) => Ok(ending),
        // The report is lost: never a success, but a program's own failure keeps its status.
        Err(RunError::ReportLost(e)) => {
            crate::report_out::to_stderr(format_args!("Profil Error: {}", os_message(&e)));
            Ok(match ending {
                Ending::Code(0) => Ending::Code(1),
                other => other,
            })
        }
        Err(e) => Err(e),
    }
}

/// How profil ends once the report and the exports are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// With this exit status (the program's, or 0 for an attached process).
    Code(u8),
    /// The program died of this signal: profil ends the same way (`interrupt::end_like`).
    Signal(i32),
}

/// A warning when `file`, named with `-p PID FILE`, is not the program the process runs (Linux:
/// neither the file behind `/proc/PID/exe` nor a copy of the same build, by GNU build-id):
/// its symbols would name the samples wrongly. `None` where it is, or where that cannot be told.
fn other_program_warning(pid: u32, file: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let exe = PathBuf::from(format!("/proc/{pid}/exe"));
    let (running, named) = (std::fs::metadata(&exe).ok()?, std::fs::metadata(file).ok()?);
    if (running.dev(), running.ino()) == (named.dev(), named.ino()) {
        return None;
    }
    let (a, b) = (crate::objects::elf::build_id(&exe), crate::objects::elf::build_id(file));
    if a.is_some() && a == b {
        return None;
    }
    let runs = std::fs::read_link(&exe).map_or_else(|_| exe.display().to_string(), |t| t.display().to_string());
    Some(format!(
        "Warning: '{}' is not the program pid {pid} runs ({runs}); its symbols may name the samples wrongly",
        file.display()
    ))
}

/// `-p PID`: profile a process that runs already, until it exits, `-t` passes or Ctrl-C.
fn attach(args: &Args, pid: u32) -> Result<u8, RunError> {
    let no_process = || RunError::Profiling(ProfError::NoProcess);
    // Its program file: named, or (Linux) the kernel's link to it, readable even if deleted.
    let path = if args.program.is_empty() {
        crate::platform::program_of(pid)
            .ok_or_else(|| RunError::Program(format!("name the program file of pid {pid}: profil -p {pid} PROGRAM")))?
    } else {
        elf::find_program(&args.program).map_err(|e| {
            RunError::Program(format!("Cannot read '{}': {}", args.program.to_string_lossy(), os_message(&e)))
        })?
    };
    // Linux: whose process it is (a missing /proc entry: no such process).
    let owner = match crate::platform::owner_of(pid) {
        Some(owner) => Some(owner.ok_or_else(no_process)?),
        None => None,
    };
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let not_ours = || {
        RunError::Program(format!(
            "Permission denied: pid {pid} is another user's process; only root or its owner may profile it"
        ))
    };
    if owner.is_some_and(|uid| euid != 0 && uid != euid) {
        return Err(not_ours());
    }
    if !args.program.is_empty() {
        if let Some(warning) = other_program_warning(pid, &path) {
            crate::report_out::to_stderr(format_args!("{warning}"));
        }
    }
    let name = match std::fs::read_link(&path) {
        Ok(target) if args.program.is_empty() => target.to_string_lossy().into_owned(),
        // The kernel keeps a process's links from those who may not trace it (another
        // user's, a set-user-ID one, or one outside our namespace), root included.
        Err(e) if args.program.is_empty() && e.kind() == io::ErrorKind::PermissionDenied => {
            return Err(RunError::Program(format!(
                "Permission denied: cannot read {}, pid {pid}'s program (the kernel keeps it from this user)",
                path.display()
            )))
        }
        Err(_) if args.program.is_empty() => return Err(no_process()),
        _ => args.program.to_string_lossy().into_owned(),
    };
    let mut p = prepare(args, name, path)?;
    let req = StartRequest {
        pid,
        start: args.start,
        end: args.end,
        interval: args.interval,
        from: CountFrom::Now,
        rate: Some(args.frequency_hz),
        children: args.children,
    };
    // Installed before counting starts, so Ctrl-C ends the session rather than profil.
    crate::interrupt::install();
    if let Err(e) = p.profiler.start(req, &p.image.layout) {
        return Err(match (e, perf_policy_hint()) {
            (ProfError::AddressRange, _) => {
                RunError::Program(format!("{e}\n{}", address_range_hint(&p.image.layout.text, args)))
            }
            (ProfError::Permission, Some(hint)) => RunError::Program(format!("{e}\n{hint}")),
            (ProfError::Busy, _) => match crate::platform::busy_hint() {
                Some(hint) => RunError::Program(format!("{e}\n{hint}")),
                None => RunError::Profiling(e),
            },
            _ => RunError::Profiling(e),
        });
    }
    let started = std::time::Instant::now();
    let deadline = args.duration.map(|d| started + d);
    p.profiler.wait_for_end(true, deadline)?;
    // Whether it exited is the session's stop reason (filled in with the profile).
    report_and_export(args, p, ExitKind::Attached { pid, exited: false }, started.elapsed())?;
    Ok(0)
}

/// The report and the exports of a finished session, which lasted `elapsed`.
fn report_and_export(args: &Args, p: Prepared, exit: ExitKind, elapsed: std::time::Duration) -> Result<(), RunError> {
    let Prepared { name, launch, image, read_elf, session_start, exports, out, mut profiler } = p;
    // Post-processing starts here (timed for the benchmark with PROFIL_TIMINGS=1).
    let post = std::time::Instant::now();
    let mut profile = profiler.profile(&name)?;
    profile.elapsed = Some(elapsed);
    let unwind = profiler.unwind_time();
    let exit = match exit {
        ExitKind::Attached { pid, .. } => ExitKind::Attached { pid, exited: profile.stop_reason == Some(StopReason::Exit) },
        other => other,
    };
    let run = Outcome {
        program: name.clone(),
        arguments: args.program_args.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        frequency_hz: args.frequency_hz,
        profile,
        exit,
        interpreters: launch.interpreters,
    };
    report_run(args, &launch.path, image, exports, out, &run)?;
    if std::env::var_os("PROFIL_TIMINGS").is_some() {
        let (read, post) = (read_elf.as_secs_f64(), post.elapsed().as_secs_f64());
        // Unwinding (-g dwarf) happens while the program runs; it is analysis work too.
        let unwind = unwind.as_secs_f64();
        crate::report_out::to_stderr(format_args!(
            "profil.read_elf: {read:.6}\nprofil.report: {post:.6}\nprofil.unwind: {unwind:.6}\nprofil.post: {:.6}\nprofil.start: {:.6}",
            read + post + unwind,
            session_start.as_secs_f64()
        ));
    }
    Ok(())
}

/// The run as the report filters keep it (`--comm`, `--pids`, `--tid`, `--dso`), with a note
/// on standard error of what they kept; `program_file` holds the program's own samples.
pub(crate) fn filtered<'a>(args: &Args, run: &'a Outcome, program_file: &str) -> std::borrow::Cow<'a, Outcome> {
    if args.filter.is_empty() {
        return std::borrow::Cow::Borrowed(run);
    }
    let mut kept = run.clone();
    if let Some(note) = crate::filter::apply(&mut kept, program_file, &args.filter) {
        crate::report_out::to_stderr(format_args!("{note}"));
    }
    std::borrow::Cow::Owned(kept)
}

/// `--load FILE`: the report and the exports of a saved run, as they were made of the live
/// one. The program file is read again from where the run recorded it; the options that say
/// how the run was recorded (`-g`'s kind, `--children`, `-F`) are the run's.
fn load(args: &Args, file: &std::path::Path) -> Result<Ending, RunError> {
    let saved = parse_saved(file, "load")?;
    let mut args = args.clone();
    args.call_graph = saved.call_graph;
    args.frequency_hz = saved.run.frequency_hz;
    // A system-wide run (-a) has no program: its report is of every process.
    if saved.run.profile.is_system_wide() {
        return crate::system::load(&args, &saved.run);
    }
    let (program, image) = saved_program(&saved, "saved")?;
    let program = &program;
    args.children = saved.children;
    let exports = Exports::create(&args, program).map_err(|e| RunError::Program(e.to_string()))?;
    let out = exports.report_out(false);
    ending_of_report(report_run(&args, program, image, exports, out, &saved.run))
}

/// How profil ends after reporting a run it did not run (`--load`, `-a`): 0, or 1 where the
/// report was lost (said here; the exports were written).
pub(crate) fn ending_of_report(reported: Result<(), RunError>) -> Result<Ending, RunError> {
    match reported {
        Ok(()) => Ok(Ending::Code(0)),
        Err(RunError::ReportLost(e)) => {
            crate::report_out::to_stderr(format_args!("Profil Error: {}", os_message(&e)));
            Ok(Ending::Code(1))
        }
        Err(e) => Err(e),
    }
}

/// The exports written after the report (`out`, which keeps it for `--report`): an error of
/// each said, the exports' first; the report's is `ReportLost`.
pub(crate) fn write_exports(exports: Exports, analysis: &Analysis, out: &mut ReportOut) -> Result<(), RunError> {
    let written = out.error();
    let exported = exports.write(analysis, out.kept());
    if let (Err(_), Err(e)) = (&exported, &written) {
        crate::report_out::to_stderr(format_args!("Profil Error: {e}"));
    }
    exported.map_err(|e| RunError::Program(e.to_string()))?;
    written.map_err(RunError::ReportLost)
}

/// The report (to `out`) and the exports of the run `run` of the program file `path`.
fn report_run(args: &Args, path: &std::path::Path, image: ProgramImage, exports: Exports, mut out: ReportOut, run: &Outcome) -> Result<(), RunError> {
    let run = &*filtered(args, run, &path.to_string_lossy());
    let name = run.program.clone();
    let mut symbolizer = Symbolizer::new(image.object, &name).with_perf_map(run.profile.pid);
    if let Some(kernel) = &args.kernel {
        symbolizer = symbolizer.with_kernel(kernel);
    }
    // A child running the program's own file (a fork of it) is named as the program.
    let real = std::fs::canonicalize(path).ok().filter(|_| args.children).map(|r| r.to_string_lossy().into_owned());
    if let Some(real) = &real {
        symbolizer = symbolizer.program_also_at(real);
    }
    // Source lines are read (DWARF parsed) only when asked for.
    let sources = crate::objects::lines::Sources::new(crate::objects::debug_file::dirs());
    let inline = args.inline.then_some(&sources);
    let (samples, mut stacks, flat) = crate::flat::analyse(&run.profile, &mut symbolizer, inline);
    let mut children = processes::analyse(&run.profile.processes, &mut symbolizer, inline);
    // Linux's frame-pointer chains end without a word where frame pointers are missing.
    if args.call_graph == CallGraph::FramePointers && crate::platform::STACKS_ARE_CHOSEN {
        for sp in stacks.iter_mut().chain(children.iter_mut().filter_map(|c| c.stacks.as_mut())) {
            sp.count_unrooted_as_truncated();
        }
    }

    // A saved run reported elsewhere: the files it names that are not here, in one warning
    // (their samples keep their addresses).
    if args.load.is_some() {
        if let Some(warning) = unread_objects_warning(symbolizer.objects()) {
            crate::report_out::to_stderr(format_args!("{warning}"));
        }
    }
    let lines = args.lines.map(|_| crate::objects::lines::LineProfile::build(&samples, &symbolizer, &sources));
    // --diff: the base run, named from its own program file.
    let base = match &args.diff {
        Some(file) => Some(load_base(args, file)?),
        None => None,
    };
    if let Some(warning) = base.as_ref().and_then(|b| base_warning(b, &run.program, stacks.is_some())) {
        crate::report_out::to_stderr(format_args!("{warning}"));
    }
    let changes = base.as_ref().map(|b| {
        let (old, new) = (crate::compare::Side::of(&b.flat, b.frequency_hz), crate::compare::Side::of(&flat, run.frequency_hz));
        let changes = crate::compare::compare(&old, &new);
        (old, new, changes)
    });
    // A report that cannot be written (a full disk) does not cost the exports: ReportOut
    // keeps its error, the exports are written, then the error is returned.
    out.start_line()?;
    // The banner introduces the Minix statistics: with -f there are none.
    if !args.flat_only {
        out.write_all(report::statistics_banner().as_bytes())?;
        out.write_all(report::minix_statistics(&run.profile.data).as_bytes())?;
        out.write_all(b"\n")?;
    }
    // A driver (make, sh, g++ under --children) does next to nothing itself: the report leads
    // with where the time went in its processes, then its own flat profile.
    let own = run.profile.user_ticks.saturating_add(run.profile.kernel_ticks.unwrap_or(0));
    let theirs = children.iter().fold(0u64, |n, c| n.saturating_add(c.ticks()));
    let driver = args.children && own.saturating_mul(20) < theirs;
    let processes_section = args.children.then(|| processes::render(&name, real.as_deref(), &run.profile, &samples, &children, &symbolizer));
    if let Some(section) = processes_section.as_ref().filter(|_| driver) {
        out.write_all(section.as_bytes())?;
        out.write_all(b"\n")?;
    }
    let top = match args.percent_limit {
        Some(limit) => Some(args.top.unwrap_or(usize::MAX).min(flat.rows_at_least(f64::from(limit) / 100.0))),
        None => args.top,
    };
    out.write_all(flat.render(top).as_bytes())?;
    out.write_all(b"\n")?;
    // The thread view is named only where it is shown: the section, or the speedscope file.
    let threads = match args.threads || args.speedscope.is_some() {
        true => crate::threads::threads(&run.profile, &name, &mut symbolizer),
        false => Vec::new(),
    };
    if args.threads {
        out.write_all(crate::threads::render(&threads).as_bytes())?;
        out.write_all(b"\n")?;
    }
    if let (Some(b), Some((old, new, changes))) = (&base, &changes) {
        let top = args.top.unwrap_or(crate::compare::DEFAULT_TOP);
        out.write_all(crate::compare::render(&b.file, old, new, changes, top).as_bytes())?;
        out.write_all(b"\n")?;
    }
    if let (Some(top), Some(lines)) = (args.lines, &lines) {
        out.write_all(lines.render(top).as_bytes())?;
        out.write_all(b"\n")?;
    }
    if let Some(sp) = stacks.as_ref().filter(|_| args.callgraph_report) {
        out.write_all(callgraph::render(sp, &flat, callgraph::DEFAULT_TOP).as_bytes())?;
        out.write_all(b"\n")?;
    }
    if let Some(top) = args.asm_top {
        out.write_all(disasm::render(&flat, &symbolizer, top, Some(&sources)).as_bytes())?;
        out.write_all(b"\n")?;
    }
    let servers = run.profile.servers.as_ref().map(|r| {
        (r, servers::name_servers(r, &mut symbolizer))
    });
    out.write_all(servers::render(&name, &run.profile, servers.as_ref().map(|(r, n)| (*r, n.as_slice()))).as_bytes())?;
    out.write_all(report::time_line(&run.profile, args.frequency_hz).as_bytes())?;
    out.write_all(report::clock_section(&run.profile).as_bytes())?;
    let waits = crate::waiting::waits(&run.profile, &mut symbolizer);
    out.write_all(crate::waiting::render(&run.profile, &waits, args.top.unwrap_or(crate::waiting::DEFAULT_TOP)).as_bytes())?;
    out.write_all(b"\n")?;
    if args.callgraph_report && !waits.is_empty() {
        out.write_all(callgraph::render_waits(&waits, callgraph::DEFAULT_TOP).as_bytes())?;
        out.write_all(b"\n")?;
    }
    if let Some(section) = processes_section.as_ref().filter(|_| !driver) {
        out.write_all(section.as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.write_all(report::summary(&run.profile, stacks.as_ref(), &name, &run.interpreters, run.exit).as_bytes())?;
    // The hints are for stacks the user chose how to take (Linux); a Redox run's, loaded here,
    // were the kernel's walk (its sampling source says it is one).
    if run.profile.sampling.is_none() {
        out.write_all(report::hints(stacks.as_ref(), args.call_graph).as_bytes())?;
    }
    out.flush()?;
    let analysis = Analysis {
        run,
        flat: &flat,
        samples: &samples,
        symbolizer: &symbolizer,
        stacks: stacks.as_ref(),
        processes: &children,
        lines: lines.as_ref(),
        sources: (args.lines.is_some() || args.inline).then_some(&sources),
        waits: &waits,
        base: base.as_ref(),
        threads: &threads,
    };
    write_exports(exports, &analysis, &mut out)?;
    // The gate, last: everything asked for is written.
    if let (Some(points), Some((_, _, changes))) = (args.fail_above.map(|h| f64::from(h) / 100.0), &changes) {
        let grew = crate::compare::regressions(changes, points);
        if !grew.is_empty() {
            let names: Vec<String> = grew.iter().map(|c| format!("{} ({:+.2} pp ± {:.2})", c.name, c.own.pp, c.own.within)).collect();
            return Err(RunError::Regressed(format!(
                "{} grew by more than {points} points of the samples since {}: {}",
                if grew.len() == 1 { "1 function's share" } else { "functions' shares" },
                base.as_ref().map_or("", |b| b.file.as_str()),
                names.join(", ")
            )));
        }
    }
    Ok(())
}

/// What makes a comparison with `base` say less than it seems to, in one warning: a base of
/// another program (every function then differs), or a base without call stacks against a
/// run with them (the total shares and the stacks' difference compare with nothing).
fn base_warning(base: &crate::compare::Base, program: &str, with_stacks: bool) -> Option<String> {
    let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let mut parts = Vec::new();
    if name(&base.program) != name(program) {
        parts.push(format!("the base run is of another program ('{}', this run '{program}'): the changes compare two programs", base.program));
    }
    if with_stacks && base.stacks.is_none() {
        parts.push("the base run has no call stacks (record it with -g): total shares and the stack exports compare with nothing".to_string());
    }
    (!parts.is_empty()).then(|| format!("profil: warning: {}", parts.join("; ")))
}

/// `--diff FILE`: the saved base run, its flat profile and stacks named from its own program
/// file (so two builds compare by function name).
fn load_base(args: &Args, file: &std::path::Path) -> Result<crate::compare::Base, RunError> {
    let (saved, _, image) = read_saved(file, "compare with", "base")?;
    let mut symbolizer = Symbolizer::new(image.object, &saved.run.program);
    if let Some(kernel) = &args.kernel {
        symbolizer = symbolizer.with_kernel(kernel);
    }
    let (_, stacks, flat) = crate::flat::analyse(&saved.run.profile, &mut symbolizer, None);
    Ok(crate::compare::Base {
        file: file.display().to_string(),
        program: saved.run.program.clone(),
        flat,
        stacks,
        frequency_hz: saved.run.frequency_hz,
    })
}

/// The one warning for the objects of a saved run that could not be read here: those not
/// found, and those found only in another build than the run's. `None` where all were read.
pub(crate) fn unread_objects_warning(objects: &[crate::objects::symbolize::Object]) -> Option<String> {
    let unread = objects.iter().filter(|o| o.file.is_none() && (o.path.starts_with('/') || o.other_build.is_some()));
    let (other, missing): (Vec<_>, Vec<_>) = unread.partition(|o| o.other_build.is_some());
    let mut parts = Vec::new();
    if !missing.is_empty() {
        let paths: Vec<&str> = missing.iter().map(|o| o.path.as_str()).collect();
        let what = if paths.len() == 1 { "a file" } else { "files" };
        parts.push(format!("cannot read {what} of the saved run: {}", paths.join(", ")));
    }
    if !other.is_empty() {
        let paths: Vec<String> = other.iter().filter_map(|o| o.other_build.as_ref()).map(|p| p.display().to_string()).collect();
        let what = if paths.len() == 1 { "a file is" } else { "files are" };
        parts.push(format!("{what} another build than the saved run's: {}", paths.join(", ")));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "profil: warning: {}; {} samples keep their addresses (--sysroot DIR finds files under DIR, --debug-dir DIR by build-id)",
            parts.join("; "),
            if missing.len() + other.len() == 1 { "its" } else { "their" }
        )
    })
}

/// A saved run (`--load`, `--diff`) and its program file, found where the run recorded it or
/// under `--sysroot`, and read: what profil does with it (`verb`) and which run it is (`role`)
/// name it in the errors.
fn read_saved(file: &std::path::Path, verb: &str, role: &str) -> Result<(crate::saved::SavedRun, PathBuf, ProgramImage), RunError> {
    let saved = parse_saved(file, verb)?;
    if saved.run.profile.is_system_wide() {
        return Err(RunError::Program(format!("'{}' is a system-wide run (-a): it has no program to {verb}", file.display())));
    }
    let (program, image) = saved_program(&saved, role)?;
    Ok((saved, program, image))
}

/// The saved run in `file`, read and parsed (`verb` names what profil would do with it).
fn parse_saved(file: &std::path::Path, verb: &str) -> Result<crate::saved::SavedRun, RunError> {
    let shown = file.display();
    let bytes = prof_objects::bounded::read(file, crate::saved::MAX_FILE)
        .map_err(|e| RunError::Program(format!("Cannot read '{shown}': {}", os_message(&e))))?;
    crate::saved::parse(&bytes).map_err(|e| RunError::Program(format!("'{shown}' is not a run profil can {verb}: {e}")))
}

/// The program file of a saved run, found and read (`role` names the run in the errors).
fn saved_program(saved: &crate::saved::SavedRun, role: &str) -> Result<(PathBuf, ProgramImage), RunError> {
    use crate::objects::sysroot::{locate_build, Located};
    let program = match locate_build(&saved.file, saved.build_id.as_deref(), &crate::objects::debug_file::dirs()) {
        Located::At(path) => path,
        Located::OtherBuild(path) => {
            return Err(RunError::Program(format!(
                "'{}' is another build than the program of the {role} run (build-id {}), whose samples it would name wrongly (--sysroot DIR and --debug-dir DIR look for that build under DIR)",
                path.display(),
                saved.build_id.as_deref().unwrap_or_default()
            )))
        }
    };
    let image = elf::read_program(&program).map_err(|e| {
        RunError::Program(format!("Cannot read '{}', the program of the {role} run: {e} (--sysroot DIR looks for it under DIR)", program.display()))
    })?;
    Ok((program, image))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn the_perf_policy_hint_names_the_setting_and_its_value() {
        let level = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap();
        let hint = perf_policy_hint().unwrap();
        assert!(hint.contains(&format!("kernel.perf_event_paranoid is {}; at 2 or below", level.trim())), "{hint}");
    }
}
