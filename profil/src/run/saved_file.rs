//! A saved run read from its file (`--load`, `--diff`), and its program file found and read.

use std::path::PathBuf;

use prof_objects::elf::{self, ProgramImage};

use super::finish::{RunError, SavedError};

/// The saved run in `file`, read and parsed (`verb` names what profil would do with it).
pub(super) fn parse_saved(file: &std::path::Path, verb: &str) -> Result<crate::saved::SavedRun, RunError> {
    let bytes = prof_objects::bounded::read_file_or_stream(file, crate::saved::MAX_FILE)
        .map_err(|source| SavedError::Read { file: file.to_path_buf(), source })?;
    Ok(crate::saved::parse(&bytes).map_err(|why| SavedError::NotARun { file: file.to_path_buf(), verb: verb.into(), why })?)
}

/// The program file of a saved run, found and read (`role` names the run in the errors).
pub(super) fn saved_program(saved: &crate::saved::SavedRun, role: &str, options: &prof_objects::Options) -> Result<(PathBuf, ProgramImage), RunError> {
    use prof_objects::sysroot::Located;
    let program = match options.locate_build(&saved.file, saved.build_id.as_deref()) {
        Located::At(path) => path,
        Located::OtherBuild(path) => {
            let build_id = saved.build_id.clone().unwrap_or_default();
            return Err(SavedError::OtherBuild { path, role: role.into(), build_id }.into());
        }
    };
    let image = elf::read_program(&program, options)
        .map_err(|source| SavedError::Program { path: program.clone(), role: role.into(), source })?;
    Ok((program, image))
}
