//! Reading the program to profile: find it as `execvp` would, check that it is an ELF
//! executable, and take its text segment, executable segments and the object itself (bytes and
//! function symbols).

use std::fmt;
use crate::Options;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use goblin::elf::{header, program_header, Elf};
use prof_core::image::{ImageLayout, LoadSegment, TextSegment};

use crate::object_file::{parse_elf_lazily, FileBytes, ObjectFile};
use crate::symbols::{Names, SymbolTable};

/// The program about to be profiled.
#[derive(Debug, Clone)]
pub struct ProgramImage {
    /// The file that will be executed (found on `PATH` if the name had no slash).
    pub path: PathBuf,
    pub layout: ImageLayout,
    /// The file's bytes and function symbols, for naming and disassembling samples.
    pub object: ObjectFile,
    /// Position independent (`ET_DYN`): placed at a load base chosen at run time.
    pub pie: bool,
}

/// Why a file cannot be profiled.
#[derive(Debug)]
pub enum ElfError {
    /// The file could not be found or read.
    Io(std::io::Error),
    /// Not an ELF file at all (a source file, ...).
    NotElf,
    /// A `#!` script, run by this interpreter.
    Script(String),
    /// A 32-bit ELF executable.
    Elf32,
    /// An ELF file, but not something that can run (object file, core dump, no code).
    NotExecutable(&'static str),
}

impl std::error::Error for ElfError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ElfError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElfError::Io(e) => write!(f, "{e}"),
            ElfError::NotElf => f.write_str("not an ELF executable"),
            ElfError::Script(interpreter) if interpreter.is_empty() => {
                f.write_str("a script with no interpreter, not an ELF executable")
            }
            ElfError::Script(interpreter) => write!(f, "a script for {interpreter}, not an ELF executable"),
            ElfError::Elf32 => f.write_str("a 32-bit ELF executable"),
            ElfError::NotExecutable(why) => write!(f, "not an ELF executable ({why})"),
        }
    }
}

/// Find `name` the way `execvp(3)` does: as given if it has a slash, else on `PATH`.
pub fn find_program(name: &std::ffi::OsStr) -> Result<PathBuf, std::io::Error> {
    use std::os::unix::ffi::OsStrExt;
    if name.as_bytes().contains(&b'/') {
        return Ok(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable_file(p))
        .ok_or_else(|| {
            // As execvp, a name without a slash is not looked for here; say so if it is here.
            let here = Path::new(name).exists();
            let why = if here {
                format!("not found on PATH; for the file in this directory, say ./{}", name.to_string_lossy())
            } else {
                "not found on PATH".to_string()
            };
            std::io::Error::new(std::io::ErrorKind::NotFound, why)
        })
}

fn is_executable_file(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

impl ProgramImage {
    pub fn symbols(&self) -> &SymbolTable {
        &self.object.symbols
    }
}

/// Map, check and describe the ELF file at `path`, its functions named as `options` say.
pub fn read_program(path: &Path, options: &Options) -> Result<ProgramImage, ElfError> {
    let bytes = FileBytes::open(path).map_err(ElfError::Io)?;
    parse_program(path, bytes, options)
}

/// Check and describe an ELF executable given as bytes.
pub fn parse_program(path: &Path, bytes: impl Into<FileBytes>, options: &Options) -> Result<ProgramImage, ElfError> {
    describe(path, &Arc::new(bytes.into()), options)
}

fn describe(path: &Path, bytes: &Arc<FileBytes>, options: &Options) -> Result<ProgramImage, ElfError> {
    if let Some(line) = bytes.strip_prefix(b"#!") {
        let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
        let interpreter = String::from_utf8_lossy(line).split_whitespace().next().unwrap_or("").to_string();
        return Err(ElfError::Script(interpreter));
    }
    if !bytes.starts_with(b"\x7fELF") {
        return Err(ElfError::NotElf);
    }
    // EI_CLASS 1: ELFCLASS32.
    if bytes.get(4) == Some(&1) {
        return Err(ElfError::Elf32);
    }
    // The quick parse where the file allows it, else goblin's whole one (see parse_elf_lazily).
    match parse_elf_lazily(bytes) {
        Some((elf, names)) => describe_elf(path, &elf, names, bytes, options),
        None => {
            let elf = Elf::parse(bytes).map_err(|_| ElfError::NotExecutable("malformed headers"))?;
            describe_elf(path, &elf, [Names::Parsed(&elf.strtab), Names::Parsed(&elf.dynstrtab)], bytes, options)
        }
    }
}

fn describe_elf(path: &Path, elf: &Elf, names: [Names; 2], bytes: &Arc<FileBytes>, options: &Options) -> Result<ProgramImage, ElfError> {
    let pie = match elf.header.e_type {
        header::ET_EXEC => false,
        header::ET_DYN => true,
        header::ET_REL => return Err(ElfError::NotExecutable("relocatable object")),
        header::ET_CORE => return Err(ElfError::NotExecutable("core file")),
        _ => return Err(ElfError::NotExecutable("unknown ELF type")),
    };
    if !elf.is_64 {
        return Err(ElfError::Elf32);
    }
    let exec_segments: Vec<LoadSegment> = elf
        .program_headers
        .iter()
        .filter(|ph| ph.p_type == program_header::PT_LOAD && ph.is_executable() && ph.p_memsz > 0)
        .map(|ph| LoadSegment { vaddr: ph.p_vaddr, memsz: ph.p_memsz, offset: ph.p_offset })
        .collect();
    let start = exec_segments.iter().map(|s| s.vaddr).min();
    let end = exec_segments.iter().map(|s| s.vaddr.saturating_add(s.memsz)).max();
    let (Some(start), Some(end)) = (start, end) else {
        return Err(ElfError::NotExecutable("no executable segment"));
    };
    Ok(ProgramImage {
        path: path.to_path_buf(),
        layout: ImageLayout { text: TextSegment { start, end }, exec_segments },
        object: ObjectFile::from_elf(path, elf, names, bytes, options),
        pie,
    })
}



pub use crate::elf_headers::{build_id, build_id_in};

/// The executable mappings of a static program at `path` as its process has them (its run
/// addresses are its link addresses: Redox's programs and daemons), for naming its samples
/// as any process's (found under `options`' sysroot); none where the file cannot be read.
pub fn static_mappings(path: &str, options: &Options) -> Vec<prof_core::sampler::Mapping> {
    let Ok(file) = crate::object_file::ObjectFile::read(&options.locate(Path::new(path)), options) else {
        return Vec::new();
    };
    file.segments()
        .iter()
        .filter(|s| s.executable)
        .map(|s| prof_core::sampler::Mapping {
            start: s.vaddr & !0xfff,
            len: s.memsz + (s.vaddr & 0xfff),
            pgoff: s.offset & !0xfff,
            path: path.to_string(),
            ..Default::default()
        })
        .collect()
}

/// Is the file at `path` a program of its own (as a process exec'd it): `ET_EXEC`, or a PIE,
/// which has an interpreter and no soname (glibc's libc.so.6 has both)?
pub fn is_program(path: &Path) -> bool {
    crate::file_bytes::FileBytes::open(path).ok().is_some_and(|bytes| {
        Elf::parse(&bytes).is_ok_and(|e| {
            e.header.e_type == goblin::elf::header::ET_EXEC || (e.interpreter.is_some() && e.soname.is_none())
        })
    })
}

/// Does the file at `path` start as an ELF file does?
pub fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == *b"\x7fELF"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The object's build ID (its segments' note) is the one the file's note says.
    #[test]
    fn the_build_id_is_the_one_in_the_files_note() {
        let path = std::env::current_exe().unwrap();
        let id = ObjectFile::read(&path, &Options::default()).unwrap().build_id();
        assert_eq!(id, build_id(&path));
        assert!(id.is_some_and(|id| id.len() >= 16));
    }

    #[test]
    fn text_files_are_not_elf() {
        let e = parse_program(Path::new("fib.c"), b"#include <stdio.h>\nint main() {}\n".to_vec(), &Options::default()).unwrap_err();
        assert!(matches!(e, ElfError::NotElf));
        assert_eq!(e.to_string(), "not an ELF executable");
    }

    #[test]
    fn scripts_and_32_bit_programs_are_named_as_such() {
        let e = parse_program(Path::new("x.sh"), b"#!/bin/sh -e\necho hi\n".to_vec(), &Options::default()).unwrap_err();
        assert!(matches!(&e, ElfError::Script(i) if i == "/bin/sh"), "{e:?}");
        let e = parse_program(Path::new("x"), b"#!".to_vec(), &Options::default()).unwrap_err();
        assert!(matches!(&e, ElfError::Script(i) if i.is_empty()), "{e:?}");
        assert_eq!(e.to_string(), "a script with no interpreter, not an ELF executable");
        let e = parse_program(Path::new("x"), b"\x7fELF\x01\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\x03\0".to_vec(), &Options::default()).unwrap_err();
        assert!(matches!(e, ElfError::Elf32), "{e:?}");
    }

    #[test]
    fn truncated_elf_is_an_error_not_a_panic() {
        let e = parse_program(Path::new("x"), b"\x7fELF\x02\x01\x01".to_vec(), &Options::default()).unwrap_err();
        assert!(matches!(e, ElfError::NotExecutable(_)));
    }

    #[test]
    fn reads_this_test_binary() {
        let me = std::env::current_exe().unwrap();
        let img = read_program(&me, &Options::default()).unwrap();
        assert!(img.layout.text.size() > 0);
        assert!(!img.layout.exec_segments.is_empty());
        assert!(!img.symbols().is_empty());
    }

    #[test]
    fn finds_programs_like_execvp() {
        assert_eq!(find_program("./fib".as_ref()).unwrap(), PathBuf::from("./fib"));
        let sh = find_program("sh".as_ref()).unwrap();
        assert!(sh.is_absolute() && sh.ends_with("sh"));
        assert!(find_program("no-such-program-profil-test".as_ref()).is_err());
    }
}
