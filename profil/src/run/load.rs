//! `--load FILE`: the report and the exports of a saved run, as they were made of the live one.

use super::finish::{ending_of_report, Ending, RunError};
use super::program_report::report_run;
use super::saved_file::{parse_saved, saved_program};
use crate::cli::Args;
use crate::exports::Exports;
use crate::profile::Recording;

/// `--load FILE`: the report and the exports of a saved run, as they were made of the live
/// one. The program file is read again from where the run recorded it; how the run was
/// recorded (`-g`'s kind, `--children`, `-F`) is the run's, not the options'.
pub(super) fn load(args: &Args, file: &std::path::Path) -> Result<Ending, RunError> {
    let saved = parse_saved(file, "load")?;
    let recording = Recording { call_graph: saved.call_graph, children: saved.children };
    // A system-wide run (-a) has no program: its report is of every process.
    if saved.run.profile.is_system_wide() {
        return crate::run::system::load(args, file, &saved.run, recording);
    }
    let (program, image) = saved_program(&saved, "saved", &args.objects)?;
    let program = &program;
    let exports = Exports::create(args, program, recording)?;
    let out = exports.report_out(false);
    ending_of_report(report_run(args, recording, program, image, exports, out, &saved.run))
}
