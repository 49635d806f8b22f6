//! profil: run a program under Minix-style profiling and report where its time went.
//!
//! * [`cli`] — the options (one place, with their help).
//! * `prof_objects` (a crate of its own) reads the program and the other objects, their
//!   symbols and debug information: which object, function and source line each address is in.
//! * [`kernel`] — which symbols name the kernel's samples (`--kernel`; a saved run's boot).
//! * [`privilege`] — whose process the program will be (set-user-ID programs).
//! * [`launch`] — fork, the gate, exec, wait: the spec's child protocol; [`interrupt`] —
//!   Ctrl-C and other signals that end a run early.
//! * [`backend`] — where profiling happens: embedded profd on Linux, `/scheme/prof` on Redox.
//! * [`run`] — the whole run, one mode per file (launch, attach, load, `-a`), wiring the
//!   above together.
//! * [`profile`] — the run's model ([`frame`]: an address placed); [`timeline`] — its
//!   samples in time order, a window of it (`--time`); [`slices`] — the Timeline section.
//! * [`report`] — the Minix report; [`report_out`] — where it goes; [`flat`] — the
//!   per-function profile; [`disasm`] — the instruction view.
//! * [`stacks`] — call stacks by function (`-g`): inclusive totals and arcs;
//!   [`callgraph`] — the callers-and-callees report.
//! * [`waiting`] — where the program waited (`--off-cpu`): blocked time by call and stack;
//!   [`requests`] — what it asked of the system and how long each took (`--requests`),
//!   [`request_sites`] — where it asked from (`-g`), named.
//! * [`processes`] — the processes the program started (`--children`), each and together;
//!   `run::system` — every process of the system (`-a`).
//! * [`servers`] — where the run's time went: the program, the daemons working for it
//!   (Redox), idle and other processes.
//! * [`exports`] — gmon.out (gprof), folded stacks, flame graph SVG, pprof, JSON;
//!   [`saved`] — the run itself, saved and loaded (`--save`, `--load`).

pub mod address_lines;
pub mod asked;
pub mod backend;
pub mod callgraph;
pub mod cli;
pub mod compare;
pub mod disasm;
pub mod exports;
pub mod filter;
pub mod flat;
pub mod frame;
pub mod interrupt;
pub mod kernel;
pub mod launch;
pub mod manual;
pub mod naming;
pub mod options;
pub mod privilege;
pub mod platform;
pub mod processes;
pub mod profile;
pub mod report;
pub mod request_sites;
pub mod requests;
pub mod report_out;
pub mod run;
pub mod saved;
pub mod script;
pub mod servers;
pub mod slices;
pub mod stacks;
pub mod threads;
pub mod timeline;
pub mod waiting;
pub mod words;
