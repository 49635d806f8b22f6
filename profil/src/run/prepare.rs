//! The program modes' shared start: the program's file read and checked, the exports opened,
//! the profiler opened; and what a refused start says.

use std::path::PathBuf;

use prof_objects::elf::{self, ElfError, ProgramImage};

use super::finish::RunError;
use crate::backend::Profiler;
use crate::cli::Args;
use crate::exports::Exports;
use crate::report_out::ReportOut;

/// The second line of "Address range invalid": what the range must be, for this program.
pub(super) fn address_range_hint(text: &prof_core::TextSegment, args: &Args) -> String {
    let mut hint = format!(
        "  The text segment is {:#x}-{:#x}: -s and -e must lie within it, -s below -e (-e is exclusive).",
        text.start, text.end
    );
    if let Ok(layout) = prof_core::BinLayout::new(*text, args.bins.start, args.bins.end, 0) {
        if args.bins.interval != 0 && args.bins.interval < layout.min_bin_size() {
            hint = format!(
                "  -i {:#x} is below the smallest bin size for {:#x}-{:#x}: {} ({:#x}), as at most {} bins are kept.",
                args.bins.interval,
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
pub(super) struct Prepared {
    /// The name reports show.
    pub(super) name: String,
    /// What is exec'd (a script's interpreter, given the script); its `path` is the file whose
    /// text the bins cover.
    pub(super) launch: crate::script::Launch,
    pub(super) image: ProgramImage,
    pub(super) read_elf: std::time::Duration,
    /// How long starting the session took (Linux: the kernel's first per-task perf event
    /// waits for an RCU grace period; timed for the benchmark).
    pub(super) session_start: std::time::Duration,
    pub(super) exports: Exports,
    pub(super) out: ReportOut,
    pub(super) profiler: Profiler,
}

/// Would exec of `path` be allowed (execute permission, for us)? `-p` files are only read.
pub(super) fn may_execute(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: a NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// Read and check the program file at `path` (named `name`, run as `argv`; a `#!` script: the
/// interpreter it leads to), check the exports, open the profiler.
pub(super) fn prepare(args: &Args, name: String, path: PathBuf, argv: &[std::ffi::OsString]) -> Result<Prepared, RunError> {
    let launch = crate::script::resolve(&path, argv).map_err(|why| RunError::Launch { name: name.clone(), why })?;
    // Reading the ELF (symbols included) is analysis work too: timed with the post-processing.
    let read_start = std::time::Instant::now();
    let image = elf::read_program(&launch.path, &args.objects).map_err(|e| match e {
        ElfError::Io(source) => RunError::Execute { name: name.clone(), source },
        other => RunError::NotAProgram {
            name: name.clone(),
            interpreter: (!launch.interpreters.is_empty()).then(|| launch.path.clone()),
            source: other,
        },
    })?;
    let read_elf = read_start.elapsed();
    // The exports never overwrite the file named (the script, when it is one).
    let mut exports = Exports::create(args, &path, args.recording())?;
    exports.record_program(&launch.path);
    // The report goes to standard error beside a program's output; with --report FILE it
    // waits for its file.
    let out = exports.report_out(matches!(args.target, crate::cli::Target::Launch { .. }));
    let profiler = Profiler::new(&launch.path, args).map_err(RunError::Sampler)?;
    Ok(Prepared { name, launch, image, read_elf, session_start: std::time::Duration::ZERO, exports, out, profiler })
}

/// Why the kernel refuses to let us profile a process of our own (Linux: the
/// `kernel.perf_event_paranoid` policy), if that can be said.
pub(super) fn perf_policy_hint() -> Option<String> {
    let level = crate::platform::paranoid_level();
    if level.is_empty() {
        return None;
    }
    Some(format!(
        "  The kernel's policy forbids it: kernel.perf_event_paranoid is {level}; at 2 or below a user may \
         profile their own processes (sysctl kernel.perf_event_paranoid=2), or run profil as root."
    ))
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
