//! profil: run a program under Minix-style profiling and report where its time went.
//!
//! * [`cli`] — the options (one place, with their help).
//! * [`elf`] — finding and reading the program (goblin); [`symbols`] — its functions.
//! * [`launch`] — fork, the gate, exec, wait: the spec's child protocol.
//! * [`backend`] — where profiling happens: embedded profd on Linux, `/scheme/prof` on Redox.
//! * [`run`] — the whole run, wiring the above together.
//! * [`report`] — the Minix report; [`flat`] — the per-function profile.

pub mod backend;
pub mod cli;
pub mod elf;
pub mod flat;
pub mod launch;
pub mod profile;
pub mod report;
pub mod run;
pub mod symbols;
