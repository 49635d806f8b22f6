//! One profiled run: read the program, fork it at the gate, start profiling its pid, let it
//! exec, wait for it, print the report, write the exports.

use std::fmt;
use std::io::{self, Write};

use profd::sampler::CountFrom;
use profd::{ProfError, StartRequest};

use crate::backend::Profiler;
use crate::cli::Args;
use crate::disasm;
use crate::elf::{self, ElfError};
use crate::exports::Exports;
use crate::flat::FlatProfile;
use crate::launch::spawn_gated;
use crate::profile::Outcome;
use crate::report::{self, ExitKind};
use crate::report_out::ReportOut;
use crate::symbolize::Symbolizer;

/// Why a run produced no report.
#[derive(Debug)]
pub enum RunError {
    /// The program cannot be run (message ready for "Profil Error: ...").
    Program(String),
    /// Profiling failed; the message is the spec's.
    Profiling(ProfError),
    /// The child already printed the error (the spec's 0xCC protocol).
    Reported,
    Io(io::Error),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Program(m) => f.write_str(m),
            RunError::Profiling(e) => write!(f, "{e}"),
            RunError::Reported => f.write_str("reported by the child"),
            RunError::Io(e) => write!(f, "{e}"),
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
pub fn address_range_hint(text: &profd::TextSegment, args: &Args) -> String {
    let mut hint = format!(
        "  The text segment is {:#x}-{:#x}: -s and -e must lie within it, -s below -e (-e is exclusive).",
        text.start, text.end
    );
    if let Ok(layout) = profd::BinLayout::new(*text, args.start, args.end, 0) {
        if args.interval != 0 && args.interval < layout.min_bin_size() {
            hint = format!(
                "  -i {:#x} is below the smallest bin size for {:#x}-{:#x}: {} ({:#x}), as at most {} bins are kept.",
                args.interval,
                layout.start,
                layout.end,
                layout.min_bin_size(),
                layout.min_bin_size(),
                profd::MAX_BINS
            );
        }
    }
    hint
}

/// Run `args.program` under profiling and print the report (on standard output, or on standard
/// error when an export takes standard output).  Returns the exit status for profil: the
/// program's own (128 + signal if it was killed).
pub fn run(args: &Args) -> Result<u8, RunError> {
    // The name as reports show it; the program runs with its exact bytes.
    let name = &args.program.to_string_lossy().into_owned();
    let cannot = |e: &io::Error| RunError::Program(format!("Cannot execute '{name}': {}", os_message(e)));
    let path = elf::find_program(&args.program).map_err(|e| cannot(&e))?;
    // Reading the ELF (symbols included) is analysis work too: timed with the post-processing.
    let read_start = std::time::Instant::now();
    let image = elf::read_program(&path).map_err(|e| match e {
        ElfError::Io(io) => cannot(&io),
        ElfError::Elf32 => RunError::Program(format!("'{name}': 32-bit ELF executables are not supported")),
        ElfError::Script(interpreter) if !interpreter.is_empty() => RunError::Program(format!(
            "'{name}' is a script for {interpreter}, not an ELF executable: profile its interpreter \
             (profil {interpreter} {name})"
        )),
        other => RunError::Program(format!("'{name}' is {other}")),
    })?;
    let read_elf = read_start.elapsed();
    // SAFETY: geteuid/getegid have no preconditions.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    crate::privilege::check_may_profile(&path, euid, egid).map_err(RunError::Program)?;
    let exports = Exports::create(args, &path).map_err(|e| RunError::Program(e.to_string()))?;
    // With an export on standard output, the report and the program's output go to stderr.
    let to_stderr = exports.uses_stdout();
    let out = &mut ReportOut::new(to_stderr);
    let mut profiler = Profiler::new(&path, args.frequency_hz).map_err(|e| RunError::Program(os_message(&e)))?;

    let argv: Vec<std::ffi::OsString> =
        std::iter::once(args.program.clone()).chain(args.program_args.iter().cloned()).collect();
    let mut child = spawn_gated(&path, &argv, to_stderr)?;
    // The child waits at the gate, then execs: only the program's own run is counted.
    let req = StartRequest {
        pid: child.pid,
        start: args.start,
        end: args.end,
        interval: args.interval,
        from: CountFrom::Exec,
    };
    if let Err(e) = profiler.start(req, &image.layout) {
        child.refuse(e)?;
        child.wait()?;
        if e == ProfError::AddressRange {
            eprintln!("{}", address_range_hint(&image.layout.text, args));
        }
        return Err(RunError::Reported);
    }
    // The program runs: its output comes under the banner.
    out.write_all(report::output_banner(name).as_bytes())?;
    out.flush()?;
    child.release()?;
    let sampled = profiler.wait_for_end();
    let exit = child.wait()?;
    if child.exec_error().is_some() {
        return Err(RunError::Reported);
    }
    sampled?;
    // Post-processing starts here (timed for the benchmark with PROFIL_TIMINGS=1).
    let post = std::time::Instant::now();
    let profile = profiler.profile()?;
    let run = Outcome {
        program: name.clone(),
        arguments: args.program_args.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        frequency_hz: args.frequency_hz,
        profile,
        exit,
    };
    let mut symbolizer = Symbolizer::new(image.object, name);
    let samples = symbolizer.locate(&run.profile);
    let flat = FlatProfile::build(&samples, &symbolizer);

    out.write_all(report::statistics_banner().as_bytes())?;
    if !args.flat_only {
        out.write_all(report::minix_statistics(&run.profile.data).as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.write_all(flat.render().as_bytes())?;
    out.write_all(b"\n")?;
    if let Some(top) = args.asm_top {
        out.write_all(disasm::render(&flat, &symbolizer, top).as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.write_all(report::summary(&run.profile, name, exit).as_bytes())?;
    out.flush()?;
    exports.write(&run, &flat, &samples, &symbolizer).map_err(|e| RunError::Program(e.to_string()))?;
    if std::env::var_os("PROFIL_TIMINGS").is_some() {
        let (read, post) = (read_elf.as_secs_f64(), post.elapsed().as_secs_f64());
        eprintln!("profil.read_elf: {read:.6}\nprofil.report: {post:.6}\nprofil.post: {:.6}", read + post);
    }
    Ok(match exit {
        ExitKind::Exited(code) => code as u8,
        ExitKind::Signaled(sig) => 128u8.wrapping_add(sig as u8),
    })
}
