//! prof-objects: object files as the samplers (unwinding) and profil (naming) read them, and
//! the symbolizer, as samply's `wholesym` is a crate of its own: built from its [`Options`]
//! (debug directories, a sysroot, short names), asked what is at the addresses of a run's
//! mappings, knowing nothing of profiles or reports.
//!
//! One entry point, [`Symbolizer`] (which object and function an address is in), and
//! [`Sources`] (which source lines and inlined functions, read only when asked for):
//!
//! * [`elf`] — finding and reading the program (goblin); [`object_file`] — one ELF object's
//!   segments, bytes and functions.
//! * [`symbols`] — function names and how unnamed code is named; [`eh_frame`] — function
//!   ranges of stripped code; [`plt`] — PLT stubs named by what they call; [`short_names`] —
//!   names without template arguments and parameters.
//! * [`debug_file`] — separate debug files (build-id, `.gnu_debuglink`, `--debug-dir`);
//!   [`sysroot`] — where a saved run's files are here.
//! * [`symbolize`] — which object and function each sample fell in; [`kallsyms`] and
//!   [`perf_map`] — the kernel's and a JIT's symbols.
//! * [`lines`] — source lines and inline chains (DWARF through addr2line).
//! * [`bounded`] — any other file read with a bound, a regular file only.
//! * [`file_bytes`] — an object file's bytes, mapped from disk.
//! * [`elf_headers`] — its headers alone, parsed without its symbol tables.
//! * [`vdso`] — the vdso's image (Linux's), to name and unwind code in it.

pub mod bounded;
pub mod debug_file;
pub mod eh_frame;
pub mod elf;
pub mod elf_headers;
pub mod file_bytes;
pub mod kallsyms;
pub mod lines;
pub mod object_file;
mod options;
pub mod perf_map;
pub mod plt;
pub mod short_names;
pub mod symbolize;
pub mod symbols;
pub mod sysroot;
pub mod vdso;

pub use lines::{LineProfile, Sources};
pub use options::Options;
pub use symbolize::{FunctionKey, Location, Sample, Symbolizer, PROGRAM};

/// An I/O error's message without its `(os error N)`: what a user is told.
pub fn os_message(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
