//! Separate debug information, found the way gdb and perf find it: for an object without DWARF
//! line tables of its own, the file its GNU build-id names (`.build-id/xx/rest.debug` under
//! `/usr/lib/debug` and each debug directory), then the file its `.gnu_debuglink` names (beside
//! it, in its `.debug/`, under each debug directory with its own directory, and in each debug
//! directory itself). A candidate whose build-id differs from the object's is not its.

use std::path::{Path, PathBuf};


/// Where distributions install debug files (Debian's `-dbgsym` packages).
pub const SYSTEM_DEBUG_DIR: &str = "/usr/lib/debug";

/// Debug directories named by this environment variable (`:`-separated) are searched after
/// `--debug-dir`'s and before the system's.
pub const DEBUG_DIRS_VARIABLE: &str = "PROFIL_DEBUG_DIRS";

/// The debug directories to search, in order: `given` (`--debug-dir`), the environment
/// variable's, then `/usr/lib/debug`.
pub fn search_dirs(given: &[PathBuf]) -> Vec<PathBuf> {
    let from_env = std::env::var_os(DEBUG_DIRS_VARIABLE).map(|v| std::env::split_paths(&v).collect::<Vec<_>>()).unwrap_or_default();
    given.iter().cloned().chain(from_env).chain(std::iter::once(PathBuf::from(SYSTEM_DEBUG_DIR))).collect()
}

/// What an object says about its debug information.
struct Facts {
    has_lines: bool,
    build_id: Option<Vec<u8>>,
    debuglink: Option<String>,
}

fn facts(path: &Path) -> Option<Facts> {
    // Mapped, not read, and only its headers parsed: a program's debug file can be hundreds of
    // megabytes, with a symbol table to match.
    let bytes = crate::file_bytes::FileBytes::open(path).ok()?;
    let (elf, _) = crate::elf_headers::parse(&bytes)?;
    let section = |name: &str| {
        let sh = elf.section_headers.iter().find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(name))?;
        // NOBITS sections (a debug file's text) have no bytes in the file.
        (sh.sh_type != goblin::elf::section_header::SHT_NOBITS)
            .then(|| crate::elf_headers::section_range(sh, bytes.len()))
            .flatten()
            .map(|range| &bytes[range])
    };
    let has_lines = section(".debug_line").is_some_and(|b| !b.is_empty()) || section(".zdebug_line").is_some();
    let build_id = crate::elf_headers::build_id_in(&elf, &bytes);
    // The file name, NUL-terminated (then padding and a CRC, which the build-id check stands in for).
    let debuglink = section(".gnu_debuglink").and_then(|b| {
        let name = b.split(|&c| c == 0).next()?;
        (!name.is_empty()).then(|| String::from_utf8_lossy(name).into_owned())
    });
    Some(Facts { has_lines, build_id, debuglink })
}

/// `object`'s separate debug file under `dirs` (see the module's doc), where it has one with
/// line tables (stripped objects: their symbols are there too).
pub fn separate(object: &Path, dirs: &[PathBuf]) -> Option<PathBuf> {
    Some(find(object, dirs)).filter(|found| found != object)
}

/// The file that holds `object`'s DWARF: itself where it has line tables, else its separate
/// debug file under `dirs` (see the module's doc), else itself.
pub fn find(object: &Path, dirs: &[PathBuf]) -> PathBuf {
    let Some(f) = facts(object) else { return object.to_path_buf() };
    if f.has_lines {
        return object.to_path_buf();
    }
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(id) = f.build_id.as_ref().filter(|id| id.len() > 1) {
        let (head, rest) = (hex(&id[..1]), hex(&id[1..]));
        candidates.extend(dirs.iter().map(|d| d.join(".build-id").join(&head).join(format!("{rest}.debug"))));
    }
    if let Some(link) = &f.debuglink {
        let dir = object.parent().unwrap_or(Path::new("/"));
        let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        candidates.push(dir.join(link));
        candidates.push(dir.join(".debug").join(link));
        for d in dirs {
            candidates.push(d.join(canonical.strip_prefix("/").unwrap_or(&canonical)).join(link));
            candidates.push(d.join(link));
        }
    }
    candidates
        .into_iter()
        .find(|c| {
            c != object
                && facts(c).is_some_and(|cf| cf.has_lines && (f.build_id.is_none() || cf.build_id == f.build_id))
        })
        .unwrap_or_else(|| object.to_path_buf())
}
