//! Files a run writes besides the report, each in a format other tools read:
//!
//! * [`gmon`] — `-o FILE`: gmon.out for GNU gprof;
//! * [`collapsed`] — `--collapsed FILE`: folded stacks for flamegraph.pl / inferno;
//! * [`svg`] — `--svg FILE`: a flame graph, drawn by inferno;
//! * [`pprof`] — `--pprof FILE`: pprof's gzipped `profile.proto`;
//! * [`json`] — `--json FILE`: the whole run, for scripts;
//! * [`speedscope`] — `--speedscope FILE`: speedscope's file format, for its viewer;
//! * [`samples`] — `--samples FILE`: every sample in time order, a line each, for scripts;
//! * [`firefox`] — `--firefox FILE`: the Firefox Profiler's format, the run over time;
//!
//! ([`time_order`] names the samples in time order for the exports that keep the order)
//! and the report itself where `--report FILE` sends it.
//!
//! No export ever damages a file: the paths are checked before the program starts (an
//! unwritable path, the program itself, or two exports naming one file fail at once), and a
//! regular file is written to a temporary file beside it and renamed into place only when the
//! run has succeeded, so a refused, failed or killed run leaves what was there; the new file
//! gets the old one's mode and owner, and a symbolic link stays a link to the file written;
//! a link another user made in a sticky world-writable directory is not followed (as the
//! kernel's `fs.protected_symlinks` would not: profil resolves links itself).
//! Where a file cannot be replaced without changing it (its directory takes no new file, or
//! removes none, it has other hard links, or it is another user's), it is written in place as
//! `>` would, and so
//! are FIFOs and devices, which are never opened before the run is over. `-` (or a path naming
//! the file standard output already is, like `/dev/stdout`) writes to standard output; the
//! report and the program's output then go to standard error; a path naming standard error's
//! file (`/dev/stderr`) writes to standard error. Binary exports are not written to a terminal.

pub mod collapsed;
mod file_target;
pub mod firefox;
pub mod gmon;
pub mod json;
pub mod pprof;
pub mod samples;
pub mod speedscope;
pub mod time_order;
pub mod svg;

use std::io;
use std::path::{Path, PathBuf};

use file_target::Target;

use crate::cli::Args;
use crate::flat::FlatProfile;
use crate::profile::Outcome;
use crate::stacks::StackProfile;
use prof_objects::symbolize::Sample;
#[cfg(test)]
use crate::naming::Names;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// The report (`--report`).
    Report,
    Gmon,
    Collapsed,
    Svg,
    Pprof,
    Json,
    Speedscope,
    /// Every sample in time order (`--samples`).
    Samples,
    /// The Firefox Profiler's format (`--firefox`).
    Firefox,
    /// The run itself, for `--load` (`--save`).
    Saved,
}

impl Format {
    /// Not text: never written to a terminal (as gzip refuses to).
    fn is_binary(self) -> bool {
        matches!(self, Format::Gmon | Format::Pprof | Format::Saved)
    }
}

/// The call-graph arcs between the program's own functions, for gmon.out.
fn program_arcs(stacks: Option<&StackProfile>) -> Vec<gmon::Arc> {
    let Some(sp) = stacks else { return Vec::new() };
    let start = |f: usize| {
        let k = sp.functions[f].key;
        k.function.filter(|_| k.object == prof_objects::symbolize::PROGRAM)
    };
    sp.arcs()
        .into_iter()
        .filter_map(|((caller, callee), count)| Some(gmon::Arc { from_pc: start(caller)?, self_pc: start(callee)?, count }))
        .collect()
}

/// A finished run with its samples and stacks named: what every export is made from.
pub struct Analysis<'a> {
    pub run: &'a Outcome,
    pub flat: &'a FlatProfile,
    pub samples: &'a [Sample],
    /// The objects the run's samples were named from (the program first), as named.
    pub objects: &'a [prof_objects::symbolize::Object],
    pub stacks: Option<&'a StackProfile>,
    /// The processes the program started, where followed (`--children`).
    pub processes: &'a [crate::processes::ProcessAnalysis],
    /// The profile by source line (`--lines`).
    pub lines: Option<&'a prof_objects::lines::LineProfile>,
    /// The sampled addresses' names and source lines, where lines were asked for (`--lines`,
    /// `--inline`): pprof then has a location per address with its lines.
    pub address_lines: Option<&'a crate::address_lines::AddressLines>,
    /// Where the program waited (`--off-cpu`), most blocked time first; empty without it.
    pub waits: &'a [crate::waiting::Wait],
    /// `--diff`: the base run; `--collapsed` and `--svg` then write the difference.
    pub base: Option<&'a crate::compare::Base>,
    /// The program's samples by thread, named (Linux), most first.
    pub threads: &'a [crate::threads::ThreadView],
    /// The program's samples in time order, named, where an export keeps the order
    /// (`--samples`, `--speedscope`, `--firefox`) and the run has them (Linux).
    pub timeline: Option<&'a crate::exports::time_order::NamedTimeline>,
}

#[cfg(test)]
impl<'a> Analysis<'a> {
    /// The analysis of `run` with only its flat profile, names and stacks (tests of an export).
    pub(crate) fn bare(run: &'a Outcome, flat: &'a FlatProfile, names: &'a Names, stacks: Option<&'a StackProfile>) -> Analysis<'a> {
        let (processes, waits, threads, objects) = (&[][..], &[][..], &[][..], names.objects());
        Analysis { run, flat, samples: &[], objects, stacks, processes, lines: None, address_lines: None, waits, base: None, threads, timeline: None }
    }
}

#[cfg(test)]
impl Outcome {
    /// A run of `program` at 1 kHz that exited with 0, of `profile` (tests of an export).
    pub(crate) fn exited(program: &str, profile: crate::profile::Profile) -> Outcome {
        Outcome { program: program.into(), arguments: vec![], frequency_hz: 1000, profile, exit: crate::report::ExitKind::Exited(0), interpreters: Vec::new() }
    }
}

/// The export files asked for, checked and ready to write.
pub struct Exports {
    targets: Vec<(Format, PathBuf, Target)>,
    /// What a saved run records besides the run: its program file, how stacks were recorded,
    /// whether children were followed.
    /// The program's file and how the run was recorded, for a saved run.
    recording: (PathBuf, crate::profile::Recording),
}

/// An export file that cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("Cannot write '{}': {}", path.display(), prof_objects::os_message(error))]
pub struct ExportError {
    pub path: PathBuf,
    #[source]
    pub error: io::Error,
}

impl Exports {
    /// Check every file the options name, before `program` runs: each must be writable, none
    /// may be the program itself, and no two may name the same file.
    pub fn create(args: &Args, program: &Path, recording: crate::profile::Recording) -> Result<Exports, ExportError> {
        let wanted = [
            (Format::Report, &args.report),
            (Format::Gmon, &args.exports.gmon),
            (Format::Collapsed, &args.exports.collapsed),
            (Format::Svg, &args.exports.svg),
            (Format::Pprof, &args.exports.pprof),
            (Format::Json, &args.exports.json),
            (Format::Speedscope, &args.exports.speedscope),
            (Format::Samples, &args.exports.samples),
            (Format::Firefox, &args.exports.firefox),
            (Format::Saved, &args.exports.save),
        ];
        let mut targets = Vec::new();
        let mut seen = Vec::new();
        for (format, path) in wanted {
            let Some(path) = path else { continue };
            let fail = |error| ExportError { path: path.clone(), error };
            let (target, key) = Target::check(path, program).map_err(fail)?;
            let stream = match target {
                Target::Stdout => Some((1, "standard output")),
                Target::Stderr => Some((2, "standard error")),
                _ => None,
            };
            if let Some((fd, name)) = stream.filter(|_| format.is_binary()) {
                // SAFETY: isatty only asks about the descriptor.
                if unsafe { libc::isatty(fd) } == 1 {
                    return Err(fail(io::Error::other(format!(
                        "{name} is a terminal, and this export is binary (redirect it to a file or a pipe)"
                    ))));
                }
            }
            if let Some(key) = key {
                if seen.contains(&key) {
                    return Err(fail(io::Error::other("another export names the same file")));
                }
                seen.push(key);
            }
            targets.push((format, path.clone(), target));
        }
        Ok(Exports { targets, recording: (program.to_path_buf(), recording) })
    }

    /// The file a saved run names as its program, where it is not the file named to run (a
    /// script's: its interpreter, whose text the bins cover).
    pub fn record_program(&mut self, file: &Path) {
        self.recording.0 = file.to_path_buf();
    }

    /// Does an export go to standard output (so the report and the program's output must
    /// not)?
    pub fn uses_stdout(&self) -> bool {
        self.targets.iter().any(|t| t.0 != Format::Report && t.2 == Target::Stdout)
    }

    /// Where the report goes with these exports: kept for its file (`--report FILE`), on
    /// standard output with `--report -`, on standard error with `--report /dev/stderr`.
    /// Otherwise on standard error `beside_program` (profil runs a program, whose standard
    /// output stays the program's own, as under `time` and `strace`), and on standard output
    /// where no program's output is there (`--load`, `-p`, `-a`) unless an export takes it.
    pub fn report_out(&self, beside_program: bool) -> crate::report_out::ReportOut {
        use crate::report_out::ReportOut;
        match self.report_target() {
            Some(Target::Stdout) => ReportOut::new(false),
            Some(Target::Stderr) => ReportOut::new(true),
            Some(_) => ReportOut::kept_for_file(),
            None => ReportOut::new(beside_program || self.uses_stdout()),
        }
    }

    /// Where `--report` sends the report, if it names a place.
    fn report_target(&self) -> Option<&Target> {
        self.targets.iter().find(|t| t.0 == Format::Report).map(|t| &t.2)
    }

    /// Does the report go to a file of its own (`--report FILE`), rather than stream to
    /// standard error (or output) as the program runs?
    pub fn takes_report(&self) -> bool {
        self.report_target().is_some_and(|t| !matches!(t, Target::Stdout | Target::Stderr))
    }

    /// Write every export of the finished run, and `report` where `--report` sends it.
    pub fn write(self, a: &Analysis, report: &[u8]) -> Result<(), ExportError> {
        let run = a.run;
        for (format, path, target) in self.targets {
            if format == Format::Report && matches!(target, Target::Stdout | Target::Stderr) {
                // Streamed as the run went.
                continue;
            }
            let bytes = match format {
                Format::Report => Ok(report.to_vec()),
                Format::Gmon => {
                    let p = &run.profile;
                    Ok(gmon::render(p.image_samples(), p.data().start_addr, run.frequency_hz, &program_arcs(a.stacks)))
                }
                Format::Collapsed => match a.base {
                    Some(base) => collapsed::render_diff(a, base).map(String::into_bytes),
                    None => Ok(collapsed::render_all(a).into_bytes()),
                },
                Format::Svg => match a.base {
                    Some(base) => svg::render_diff(a, base),
                    None => svg::render_all(a),
                },
                Format::Pprof => match a.base {
                    Some(base) => pprof::render_diff(a, base),
                    None => pprof::render(a),
                },
                Format::Json => Ok(json::render(a).into_bytes()),
                Format::Speedscope => Ok(speedscope::render(a).into_bytes()),
                Format::Samples => Ok(a.timeline.map(samples::render).unwrap_or_else(|| format!("{}\n", samples::HEADER)).into_bytes()),
                Format::Firefox => Ok(firefox::render(a, path.extension().is_some_and(|e| e == "gz"))),
                Format::Saved => Ok(crate::saved::render(run, &self.recording.0, self.recording.1.call_graph, self.recording.1.children)),
            };
            bytes.and_then(|b| target.write(&b)).map_err(|error| ExportError { path, error })?;
        }
        Ok(())
    }
}
