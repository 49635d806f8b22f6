//! A saved run read from its file (`--load`, `--diff`), and its program file found and read.

use std::path::PathBuf;

use prof_objects::elf::{self, ProgramImage};
use prof_objects::os_message;

use super::finish::RunError;

/// A saved run (`--load`, `--diff`) and its program file, found where the run recorded it or
/// under `--sysroot`, and read: what profil does with it (`verb`) and which run it is (`role`)
/// name it in the errors.
pub(super) fn read_saved(file: &std::path::Path, verb: &str, role: &str, options: &prof_objects::Options) -> Result<(crate::saved::SavedRun, PathBuf, ProgramImage), RunError> {
    let saved = parse_saved(file, verb)?;
    if saved.run.profile.is_system_wide() {
        return Err(RunError::Program(format!("'{}' is a system-wide run (-a): it has no program to {verb}", file.display())));
    }
    let (program, image) = saved_program(&saved, role, options)?;
    Ok((saved, program, image))
}

/// The saved run in `file`, read and parsed (`verb` names what profil would do with it).
pub(super) fn parse_saved(file: &std::path::Path, verb: &str) -> Result<crate::saved::SavedRun, RunError> {
    let shown = file.display();
    let bytes = prof_objects::bounded::read_file_or_stream(file, crate::saved::MAX_FILE)
        .map_err(|e| RunError::Program(format!("Cannot read '{shown}': {}", os_message(&e))))?;
    crate::saved::parse(&bytes).map_err(|e| RunError::Program(format!("'{shown}' is not a run profil can {verb}: {e}")))
}

/// The program file of a saved run, found and read (`role` names the run in the errors).
pub(super) fn saved_program(saved: &crate::saved::SavedRun, role: &str, options: &prof_objects::Options) -> Result<(PathBuf, ProgramImage), RunError> {
    use prof_objects::sysroot::Located;
    let program = match options.locate_build(&saved.file, saved.build_id.as_deref()) {
        Located::At(path) => path,
        Located::OtherBuild(path) => {
            return Err(RunError::Program(format!(
                "'{}' is another build than the program of the {role} run (build-id {}), whose samples it would name wrongly (--sysroot DIR and --debug-dir DIR look for that build under DIR)",
                path.display(),
                saved.build_id.as_deref().unwrap_or_default()
            )))
        }
    };
    let image = elf::read_program(&program, options).map_err(|e| {
        RunError::Program(format!("Cannot read '{}', the program of the {role} run: {e} (--sysroot DIR looks for it under DIR)", program.display()))
    })?;
    Ok((program, image))
}
