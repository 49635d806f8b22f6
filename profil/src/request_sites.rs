//! The call sites of a run's requests (`--requests -g`), named: each process's call stacks of
//! each key (`prof_core::requests::Stacks`, runtime addresses) as the site the request was
//! made from and that site's caller, the one place they are named; the Requests section
//! (`crate::requests`) renders what this gives.
//!
//! A stack is the user stack at the call's entry as the sampler recorded it: its top (the
//! C library's frames, which keep no frame pointer, and their callers) unwound by the objects'
//! unwind tables, then the kernel's frame-pointer walk; its first frame, the `syscall`
//! instruction's address, is exact. The site is the first frame outside the C library (the C
//! library, the dynamic linker, the vdso) and Rust's runtime (std, core, alloc) before the walk
//! went astray (a frame in no mapping: code without frame pointers), else the first frame; its
//! caller, the frame after it.
//!
//! On Redox a program is static: relibc is linked into it, so no object tells its frames from
//! the program's. There the stack is the user stack the kernel walked where the caller blocked
//! in the call (its `Block` sample), at the program's link addresses; relibc's frames are told
//! by their crates' names (`redox_rt::…`, `relibc::…`, `syscall::…`), and a C function called
//! from them directly (`read`, its C entry point: a program's C code calls no Rust) is relibc's
//! too.

use std::collections::BTreeMap;

use prof_core::requests::RequestKey;
use crate::naming::Names;

use crate::frame::Frame;
use crate::profile::Profile;

/// Requests of one key made from one site: the site's name (`log_line [naps]`) and its
/// caller's (`None`: the stack ends at the site).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub site: String,
    pub caller: Option<String>,
    pub count: u64,
}

/// One key's sites, most requests first, the requests whose stacks were not kept (past
/// `prof_core::requests::MAX_STACKS` distinct ones, or empty), and those made before the
/// process's latest exec (by the image it replaced, which its mappings no longer name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeySites {
    pub sites: Vec<Site>,
    pub other: u64,
    pub earlier: u64,
}

impl KeySites {
    /// Another process's sites of the same key, as if made here (sites of the same names
    /// add up).
    pub fn merge(&mut self, other: &KeySites) {
        for s in &other.sites {
            match self.sites.iter_mut().find(|m| m.site == s.site && m.caller == s.caller) {
                Some(m) => m.count = m.count.saturating_add(s.count),
                None => self.sites.push(s.clone()),
            }
        }
        self.other = self.other.saturating_add(other.other);
        self.earlier = self.earlier.saturating_add(other.earlier);
        sort(&mut self.sites);
    }

    /// Every request it counts.
    pub fn count(&self) -> u64 {
        self.sites.iter().fold(self.other.saturating_add(self.earlier), |n, s| n.saturating_add(s.count))
    }
}

/// Each process's sites, by key, by pid: of every process of the run's request log that has
/// stacks (the program, the processes it started, `-a`'s), named with that process's
/// mappings. Empty where the run recorded no stacks.
pub fn sites(p: &Profile, names: &Names) -> BTreeMap<u32, BTreeMap<RequestKey, KeySites>> {
    let Some(log) = p.requests() else { return BTreeMap::new() };
    let mut out = BTreeMap::new();
    for (&pid, requests) in log.by_pid.iter().filter(|(_, r)| !r.stacks.is_empty()) {
        let (mappings, at_link) = (crate::naming::mappings_of(p, pid), crate::naming::stacks_at_link_addresses(p, pid));
        let space = names.space(mappings);
        // No C library of its own: a static program (Redox's), relibc linked into it.
        let static_program = !mappings.iter().any(|m| is_c_library(m.path.rsplit('/').next().unwrap_or(&m.path)));
        let mut by_key = BTreeMap::new();
        for (key, stacks) in &requests.stacks {
            let mut named: BTreeMap<(String, Option<String>), u64> = BTreeMap::new();
            for (stack, &n) in &stacks.counts {
                // Each frame's object and name.
                let mut frames: Vec<Named> = stack
                    .iter()
                    .enumerate()
                    .map(|(i, &a)| {
                        let frame = names.frame(space, Frame::of_call_stack(at_link, i, a));
                        let object = &names.object(frame.location.object).name;
                        let function = names.function_name(&frame.location).unwrap_or_else(|| frame.name.to_string());
                        let kind = match object.as_str() {
                            "unknown" => Kind::Unmapped,
                            o if is_c_library(o) => Kind::CLibrary,
                            _ => kind_by_name(&function),
                        };
                        Named { kind, name: frame.name.to_string(), function }
                    })
                    .collect();
                if static_program {
                    relibc_entries(&mut frames);
                }
                let Some((site, caller)) = site_of(&frames) else { continue };
                let e = named.entry((site.to_string(), caller.map(String::from))).or_insert(0);
                *e = e.saturating_add(n);
            }
            let mut sites: Vec<Site> = named.into_iter().map(|((site, caller), count)| Site { site, caller, count }).collect();
            sort(&mut sites);
            by_key.insert(key.clone(), KeySites { sites, other: stacks.other, earlier: stacks.earlier });
        }
        out.insert(pid, by_key);
    }
    out
}

/// The crates relibc is made of, as their functions are named: its frames in a static Redox
/// program.
const RELIBC: [&str; 5] = ["relibc::", "redox_rt::", "syscall::", "libredox::", "redox_path::"];
/// Rust's runtime linked into a program.
const RUNTIME: [&str; 3] = ["std::", "core::", "alloc::"];
const PRIMITIVES: [&str; 17] = ["u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "bool", "char", "str"];

/// A frame of code in an object of its own (not the C library's) by its function's name:
/// relibc's crates, Rust's runtime, or other code.
fn kind_by_name(name: &str) -> Kind {
    // `<std::fs::File as std::io::Read>::read`: by the type's crate.
    let path = name.trim_start_matches(['<', '&', '*']).trim_start_matches("mut ").trim_start_matches("dyn ");
    // relibc's start (`_start`, `relibc_crt0`, `relibc_start_v1`), linked into every program.
    if RELIBC.iter().any(|c| path.starts_with(c)) || name.starts_with("relibc_") || name.starts_with("__relibc_") || name == "_start" {
        return Kind::CLibrary;
    }
    // `<u64 as core::fmt::Display>::fmt`: a primitive type's impls are core's.
    let primitive = path.split([' ', ':', '>']).next().is_some_and(|t| PRIMITIVES.contains(&t) || t.starts_with('['));
    match primitive || RUNTIME.iter().any(|c| path.starts_with(c)) {
        true => Kind::Runtime,
        false => Kind::Code,
    }
}

/// A static Redox program's frames: a C function called from relibc's Rust directly is
/// relibc's entry point (`read`), not the program's (whose C code calls no Rust).
fn relibc_entries(frames: &mut [Named]) {
    for i in 1..frames.len() {
        let c_function = !frames[i].function.contains("::") && frames[i].kind == Kind::Code;
        if c_function && frames[i - 1].kind == Kind::CLibrary && RELIBC.iter().any(|c| frames[i - 1].function.contains(c)) {
            frames[i].kind = Kind::CLibrary;
        }
    }
}

/// What a frame is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The C library, the dynamic linker, the vdso; relibc (Redox).
    CLibrary,
    /// Rust's runtime (std, core, alloc): between a Rust program's code and the C library.
    Runtime,
    /// Other code: the program's, another library's.
    Code,
    /// No mapping of the process: where the walk went astray (a frame pointer register used
    /// for something else, in code built without frame pointers).
    Unmapped,
}

/// A frame named.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Named {
    kind: Kind,
    /// As reports name it (`read [iowork]`).
    name: String,
    /// Its function's name alone (`read`).
    function: String,
}

/// A stack's site and its caller: the first frame of other code (not the C library's nor
/// Rust's runtime) before the walk went astray, else its first frame (the call's own address);
/// the caller, the frame after the site, where the walk did not go astray there.
fn site_of(frames: &[Named]) -> Option<(&str, Option<&str>)> {
    let sane = frames.iter().position(|f| f.kind == Kind::Unmapped).unwrap_or(frames.len());
    let at = frames[..sane].iter().position(|f| f.kind == Kind::Code).unwrap_or(0);
    let site = frames.get(at)?;
    let caller = frames.get(at + 1).filter(|f| f.kind != Kind::Unmapped);
    Some((site.name.as_str(), caller.map(|f| f.name.as_str())))
}

/// Most requests first, then by name.
fn sort(sites: &mut [Site]) {
    sites.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| (&a.site, &a.caller).cmp(&(&b.site, &b.caller))));
}

/// Is the object (by its short name) the C library, the dynamic linker or the vdso: what
/// stands between a program's code and the kernel on a system call.
fn is_c_library(object: &str) -> bool {
    let object = object.trim_start_matches('[').trim_end_matches(']');
    ["libc.so", "libc-", "ld-linux", "ld-musl", "libpthread.so", "libpthread-"].iter().any(|p| object.starts_with(p)) || object == "vdso" || object.starts_with("linux-vdso")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_library_is_told_by_its_object_s_name() {
        for libc in ["libc.so.6", "libc-2.31.so", "ld-linux-x86-64.so.2", "ld-musl-x86_64.so.1", "[vdso]", "vdso", "linux-vdso.so.1", "libpthread.so.0"] {
            assert!(is_c_library(libc), "{libc}");
        }
        for other in ["naps", "libcrypto.so.3", "libcurl.so.4", "ld.so.conf", "busybox"] {
            assert!(!is_c_library(other), "{other}");
        }
    }

    #[test]
    fn the_site_is_the_first_frame_of_other_code_before_the_walk_goes_astray() {
        let f = |kind, name: &str| Named { kind, name: name.into(), function: name.into() };
        let (libc, code, lost) = (Kind::CLibrary, Kind::Code, Kind::Unmapped);
        // write in libc, called from main, from libc's start.
        let stack = [f(libc, "write [libc.so.6]"), f(code, "main [w]"), f(libc, "__libc_start_call_main [libc.so.6]")];
        assert_eq!(site_of(&stack), Some(("main [w]", Some("__libc_start_call_main [libc.so.6]"))));
        // The call made in the program itself (no wrapper): the first frame is the site.
        assert_eq!(site_of(&[f(code, "raw [w]"), f(code, "main [w]")]), Some(("raw [w]", Some("main [w]"))));
        // The walk went astray in the dynamic linker: its frame is the site, nothing after.
        assert_eq!(site_of(&[f(libc, "mmap [ld-linux-x86-64.so.2]"), f(lost, "[unknown]"), f(code, "x [w]")]), Some(("mmap [ld-linux-x86-64.so.2]", None)));
        assert_eq!(site_of(&[f(libc, "brk [ld-linux-x86-64.so.2]")]), Some(("brk [ld-linux-x86-64.so.2]", None)));
        assert_eq!(site_of(&[]), None);
    }

    /// A static Redox program's stack at a read, as the kernel walked it where the caller
    /// blocked (named as `-a` names a process's frames, by its executable), told by the
    /// functions' names: relibc's system call (its crates by name), its C entry point `read` (called from
    /// them directly), Rust's runtime, then the program. A C program's `main` calling `read`
    /// is the program's; so is a C function that calls relibc's C entry point.
    #[test]
    fn on_redox_relibc_is_told_by_its_crates_and_its_entry_points() {
        let named = |names: &[&str]| {
            let mut frames: Vec<Named> = names.iter().map(|n| Named { kind: kind_by_name(n), name: format!("{n} [iowork]"), function: n.to_string() }).collect();
            relibc_entries(&mut frames);
            frames
        };
        let rust = named(&[
            "syscall::arch::x86_64::syscall3",
            "redox_rt::sys::posix_read",
            "read",
            "<std::sys::fs::unix::File>::read",
            "<std::fs::File as std::io::Read>::read",
            "iowork::count::read::<std::fs::File>",
            "iowork::calls",
        ]);
        assert_eq!(rust.iter().map(|f| f.kind).collect::<Vec<_>>(), [Kind::CLibrary, Kind::CLibrary, Kind::CLibrary, Kind::Runtime, Kind::Runtime, Kind::Code, Kind::Code]);
        assert_eq!(site_of(&rust), Some(("iowork::count::read::<std::fs::File> [iowork]", Some("iowork::calls [iowork]"))));
        let c = named(&["redox_rt::sys::posix_read", "read", "copy", "main", "relibc_start_v1", "relibc_crt0", "_start"]);
        assert_eq!(site_of(&c), Some(("copy [iowork]", Some("main [iowork]"))));
        // Made in relibc's start, before main: all relibc's, so the call's own frame.
        let start = named(&["redox_rt::sys::this_proc_call", "relibc::platform::init", "relibc_start_v1", "relibc_crt0", "_start"]);
        assert_eq!(site_of(&start), Some(("redox_rt::sys::this_proc_call [iowork]", Some("relibc::platform::init [iowork]"))));
        // A number formatted into a write: core's, then the program's call.
        let fmt = named(&["redox_rt::sys::posix_write", "write", "<u128 as core::fmt::Display>::fmt", "core::fmt::write", "waits::main"]);
        assert_eq!(site_of(&fmt), Some(("waits::main [iowork]", None)));
        // relibc's frames alone (a call made before main): the call's own frame.
        assert_eq!(site_of(&named(&["redox_rt::sys::open", "<relibc::platform::Sys>::open"])), Some(("redox_rt::sys::open [iowork]", Some("<relibc::platform::Sys>::open [iowork]"))));
        for (name, kind) in [("<&std::fs::File as std::io::Read>::read", Kind::Runtime), ("<alloc::vec::Vec<u8>>::push", Kind::Runtime), ("standalone::run", Kind::Code), ("libredox::call::read", Kind::CLibrary), ("<[u8]>::to_vec", Kind::Runtime), ("<str as core::fmt::Display>::fmt", Kind::Runtime), ("<u8x::Thing>::go", Kind::Code)] {
            assert_eq!(kind_by_name(name), kind, "{name}");
        }
    }

    #[test]
    fn a_process_s_sites_merge_into_another_s_by_name() {
        let site = |site: &str, caller: Option<&str>, count| Site { site: site.into(), caller: caller.map(String::from), count };
        let mut a = KeySites { sites: vec![site("log_line [naps]", Some("main [naps]"), 5), site("emit [naps]", None, 1)], other: 2, earlier: 0 };
        let b = KeySites { sites: vec![site("emit [naps]", None, 7), site("log_line [naps]", Some("run [naps]"), 1)], other: 1, earlier: 4 };
        a.merge(&b);
        assert_eq!(a, KeySites {
            sites: vec![site("emit [naps]", None, 8), site("log_line [naps]", Some("main [naps]"), 5), site("log_line [naps]", Some("run [naps]"), 1)],
            other: 3,
            earlier: 4
        });
        assert_eq!(a.count(), 21);
    }
}
