//! Everything profil reads from object files and their debug information, to name addresses:
//! one entry point, [`Symbolizer`] (which object and function an address is in), and
//! [`Sources`] (which source lines and inlined functions, read only when asked for).
//!
//! * [`elf`] — finding and reading the program (goblin); [`object_file`] — one ELF object's
//!   segments, bytes and functions.
//! * [`symbols`] — function names and how unnamed code is named; [`eh_frame`] — function
//!   ranges of stripped code.
//! * [`debug_file`] — separate debug files (build-id, `.gnu_debuglink`, `--debug-dir`).
//! * [`symbolize`] — which object and function each sample fell in.
//! * [`lines`] — source lines and inline chains (DWARF through addr2line).

pub mod debug_file;
pub mod eh_frame;
pub mod elf;
pub mod kallsyms;
pub mod lines;
pub mod object_file;
pub mod perf_map;
pub mod plt;
pub mod short_names;
pub mod symbolize;
pub mod symbols;
pub mod sysroot;

pub use lines::{LineProfile, Sources};
pub use symbolize::{FunctionKey, Location, Sample, Symbolizer, PROGRAM};
