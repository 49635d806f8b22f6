//! prof-objects: object files as the samplers (unwinding) and profil (naming) read them.
//!
//! * [`bounded`] — any other file read with a bound, a regular file only.
//! * [`file_bytes`] — an object file's bytes, mapped from disk.
//! * [`elf_headers`] — its headers alone, parsed without its symbol tables.
//! * [`vdso`] — the vdso's image (Linux's), to name and unwind code in it.

pub mod bounded;
pub mod elf_headers;
pub mod file_bytes;
pub mod vdso;
