//! `--json FILE`: the whole run as one JSON document (schema in docs/exports.md, version 8:
//! version 7 had no `ticks.idle`, version 6 no `clock.off_cpu`, version 5 no `clock`, 4 no `processes` and `lines`, 3 no `sampling`, version 2 no
//! `servers` and `server_stacks`, version 1 no call stacks).
//!
//! The document is the types below, one a JSON object, written by serde_json in their fields'
//! order; the layout is ours (one row of a table per line, so a diff of two runs reads well:
//! [`TABLES`] and [`LINE_STARTS`], and the golden file pins it). The tests parse the output with serde_json.
//! Addresses and counts are JSON integers; user-space addresses stay below 2^53, kernel ones
//! (Redox's kernel samples) do not: they are exact for parsers with 64-bit integers (serde_json,
//! Python), not for those that read every number as a double (JavaScript).

use serde::Serialize;

mod layout;

use crate::exports::Analysis;
use layout::LineBreaks;
use crate::report::ExitKind;
use prof_objects::symbolize::PROGRAM;

/// Bumped on any change of the document's shape (2: `stacks`, and `total` in `flat`; 3:
/// `servers` and `server_stacks`; 4: `sampling`; 5: `processes`, `lines`; 6: `clock`; 7:
/// `clock.off_cpu`; 8: `ticks.idle`).
pub const SCHEMA_VERSION: u32 = 8;

/// The whole run (docs/exports.md describes each field).
#[derive(Serialize)]
struct Document<'a> {
    format: &'static str,
    version: u32,
    program: &'a str,
    arguments: &'a [String],
    frequency_hz: u64,
    sampling: Option<Sampling>,
    layout: Layout,
    bins: &'a [u64],
    ticks: Ticks,
    stop_reason: Option<&'static str>,
    exit: Exit,
    objects: Vec<Object<'a>>,
    flat: Vec<FlatRow<'a>>,
    samples: Vec<SampleRow<'a>>,
    /// The account of the run and the daemons that worked for the program (Redox); null
    /// where the backend does not label servers.
    servers: Option<Servers<'a>>,
    /// Call stacks (-g): each distinct stack of functions, outermost first; null without -g.
    stacks: Option<Vec<StackRow<'a>>>,
    /// The daemons' stacks, each rooted at its daemon (`ramfs [pid 7]`).
    server_stacks: Option<Vec<StackRow<'a>>>,
    /// The profile by source line (--lines): every line, most samples first.
    lines: Option<Vec<LineRow<'a>>>,
    /// The processes the program started (--children), each with its own profile; null when
    /// none was followed (not asked, or none started).
    processes: Option<Vec<ProcessRow<'a>>>,
    clock: Clock<'a>,
}

#[derive(Serialize)]
struct Sampling {
    source: &'static str,
    rate: u64,
}

#[derive(Serialize)]
struct Layout {
    start_addr: u64,
    end_addr: u64,
    nr_bins: u64,
    bin_sz: u64,
}

#[derive(Serialize)]
struct Ticks {
    user: u64,
    in_bins: u64,
    kernel: Option<u64>,
    lost: u64,
    idle: Option<u64>,
}

/// How the program ended; a process attached to (`-p`) is not profil's child: no status, and
/// `running` when it still ran as profiling stopped.
#[derive(Serialize)]
struct Exit {
    code: Option<i32>,
    signal: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attached_pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    running: Option<bool>,
}

#[derive(Serialize)]
struct Object<'a> {
    name: &'a str,
    path: &'a str,
}

#[derive(Serialize)]
struct FlatRow<'a> {
    function: Option<&'a str>,
    object: Option<&'a str>,
    samples: u64,
    total: Option<u64>,
}

#[derive(Serialize)]
struct SampleRow<'a> {
    address: u64,
    count: u64,
    object: Option<&'a str>,
    object_address: Option<u64>,
    function: Option<&'a str>,
}

#[derive(Serialize)]
struct Servers<'a> {
    own_user: u64,
    own_kernel: u64,
    server_user: u64,
    server_kernel: u64,
    servers_dropped: u64,
    idle: u64,
    other: u64,
    daemons: Vec<Daemon<'a>>,
}

#[derive(Serialize)]
struct Daemon<'a> {
    pid: u32,
    path: &'a str,
    ticks: u64,
}

#[derive(Serialize)]
struct StackRow<'a> {
    frames: Vec<&'a str>,
    truncated: bool,
    count: u64,
}

#[derive(Serialize)]
struct LineRow<'a> {
    file: &'a str,
    line: u32,
    function: &'a str,
    object: Option<&'a str>,
    samples: u64,
}

#[derive(Serialize)]
struct ProcessRow<'a> {
    pid: u32,
    parent: Option<u32>,
    program: &'a str,
    running: bool,
    ticks: ProcessTicks,
    flat: Vec<FlatRow<'a>>,
    stacks: Option<Vec<StackRow<'a>>>,
}

#[derive(Serialize)]
struct ProcessTicks {
    user: u64,
    kernel: Option<u64>,
}

/// The run by the clock: its wall time and each thread's account (Linux), ns.
#[derive(Serialize)]
struct Clock<'a> {
    elapsed_ns: Option<u128>,
    threads: Vec<ThreadRow>,
    off_cpu: Option<OffCpu<'a>>,
}

#[derive(Serialize)]
struct ThreadRow {
    tid: u32,
    wall_ns: u64,
    on_cpu_ns: u64,
    blocked_ns: u64,
    preempted_ns: u64,
    /// A thread no look saw: the part of its life not known (absent where none is).
    #[serde(skip_serializing_if = "Option::is_none")]
    unknown_ns: Option<u64>,
}

/// The waits (`--off-cpu`), and the blocked time no look saw.
#[derive(Serialize)]
struct OffCpu<'a> {
    rate: u64,
    problem: Option<&'a str>,
    unseen_ns: u64,
    unseen_waits: u64,
    waits: Vec<WaitRow<'a>>,
}

/// A system call at a stack (outermost frame first), what it waited on, its time and
/// periods, by thread.
#[derive(Serialize)]
struct WaitRow<'a> {
    pid: u32,
    call: &'a str,
    ns: u64,
    count: u64,
    targets: Vec<Target<'a>>,
    threads: Vec<ThreadWait>,
    frames: Vec<&'a str>,
    truncated: bool,
}

#[derive(Serialize)]
struct Target<'a> {
    on: Option<&'a str>,
    ns: u64,
}

#[derive(Serialize)]
struct ThreadWait {
    tid: u32,
    ns: u64,
}

/// The JSON document of a run.
pub fn render(a: &Analysis) -> String {
    let mut out = Vec::new();
    let mut writer = serde_json::Serializer::with_formatter(&mut out, LineBreaks::new(TABLES, LINE_STARTS));
    // Writing to memory fails on no input: every map key is a string, every number fits.
    document(a).serialize(&mut writer).expect("a document of strings and integers");
    out.push(b'\n');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

fn document<'a>(a: &Analysis<'a>) -> Document<'a> {
    let Analysis { run, flat, samples, objects, stacks, processes, lines, waits, .. } = *a;
    let p = &run.profile;
    let d = p.data();
    let object = |i: usize| (i != PROGRAM).then(|| objects[i].name.as_str());
    let (code, signal, attached_pid, running) = match run.exit {
        ExitKind::Exited(c) => (Some(c), None, None, None),
        ExitKind::Signaled(s) => (None, Some(s), None, None),
        ExitKind::Attached { pid, exited } => (None, None, Some(pid), Some(!exited)),
    };
    Document {
        format: "profil",
        version: SCHEMA_VERSION,
        program: &run.program,
        arguments: &run.arguments,
        frequency_hz: run.frequency_hz,
        sampling: p.source().sampling.map(|s| Sampling { source: s.source, rate: s.rate }),
        layout: Layout { start_addr: d.start_addr, end_addr: d.end_addr, nr_bins: d.nr_bins, bin_sz: d.bin_sz },
        bins: &d.bin[..(d.nr_bins as usize).min(d.bin.len())],
        ticks: Ticks { user: p.user_ticks(), in_bins: d.total(), kernel: p.kernel_ticks(), lost: p.lost(), idle: p.idle_ticks() },
        stop_reason: p.stop_reason().map(|r| r.as_str()),
        exit: Exit { code, signal, attached_pid, running },
        objects: objects[PROGRAM + 1..].iter().map(|o| Object { name: &o.name, path: &o.path }).collect(),
        flat: flat_rows(flat),
        samples: samples
            .iter()
            .map(|s| {
                let l = &s.location;
                SampleRow {
                    address: s.address,
                    count: s.count,
                    object: object(l.object),
                    object_address: l.address,
                    function: l.function.as_ref().map(|f| f.name.as_str()),
                }
            })
            .collect(),
        servers: p.servers().map(|r| Servers {
            own_user: r.own_user,
            own_kernel: r.own_kernel,
            server_user: r.account.server_user,
            server_kernel: r.account.server_kernel,
            servers_dropped: r.account.servers_dropped,
            idle: r.account.idle,
            other: r.account.other,
            daemons: r.servers.iter().map(|s| Daemon { pid: s.pid, path: &s.path, ticks: s.ticks }).collect(),
        }),
        stacks: stacks.map(|sp| stack_rows(sp, &sp.stacks)),
        server_stacks: stacks.map(|sp| stack_rows(sp, &sp.servers)),
        lines: lines.map(|lp| {
            lp.lines
                .iter()
                .map(|(l, o, n)| LineRow { file: &l.file, line: l.line, function: &l.function, object: object(*o), samples: *n })
                .collect()
        }),
        processes: (!processes.is_empty()).then(|| {
            processes
                .iter()
                .map(|c| ProcessRow {
                    pid: c.pid,
                    parent: c.parent,
                    program: &c.program,
                    running: c.running,
                    ticks: ProcessTicks { user: c.profile.user_ticks(), kernel: c.profile.kernel_ticks() },
                    flat: flat_rows(&c.flat),
                    stacks: c.stacks.as_ref().map(|sp| stack_rows(sp, &sp.stacks)),
                })
                .collect()
        }),
        clock: Clock {
            elapsed_ns: p.clock().elapsed.map(|e| e.as_nanos()),
            threads: p
                .clock().threads
                .iter()
                .map(|t| ThreadRow {
                    tid: t.tid,
                    wall_ns: t.wall,
                    on_cpu_ns: t.on_cpu(),
                    blocked_ns: t.blocked,
                    preempted_ns: t.preempted,
                    unknown_ns: (t.unknown != 0).then_some(t.unknown),
                })
                .collect(),
            off_cpu: off_cpu(p, waits),
        },
    }
}

fn off_cpu<'a>(p: &'a crate::profile::Profile, waits: &'a [crate::waiting::Wait]) -> Option<OffCpu<'a>> {
    let off = p.clock().off_cpu.as_ref()?;
    let (unseen_ns, unseen_waits) = crate::waiting::unseen(p);
    let waits = waits
        .iter()
        .map(|w| WaitRow {
            pid: w.process.as_ref().map_or(p.pid(), |(_, pid)| *pid),
            call: &w.call,
            ns: w.ns,
            count: w.count,
            targets: w.targets.iter().map(|(t, ns)| Target { on: t.as_deref(), ns: *ns }).collect(),
            threads: w.by_thread.iter().map(|&(tid, ns)| ThreadWait { tid, ns }).collect(),
            frames: w.frames.iter().rev().map(String::as_str).collect(),
            truncated: w.truncated,
        })
        .collect();
    Some(OffCpu { rate: off.rate, problem: off.problem.as_deref(), unseen_ns, unseen_waits, waits })
}

fn flat_rows(flat: &crate::flat::FlatProfile) -> Vec<FlatRow<'_>> {
    flat.entries
        .iter()
        .map(|e| FlatRow { function: e.function.as_deref(), object: e.object.as_deref(), samples: e.samples, total: e.total })
        .collect()
}

/// Named stacks of `sp`, outermost frame first.
fn stack_rows<'a>(sp: &'a crate::stacks::StackProfile, stacks: &'a [crate::stacks::NamedStack]) -> Vec<StackRow<'a>> {
    stacks
        .iter()
        .map(|st| StackRow {
            frames: st.frames.iter().map(|&f| sp.functions[f].name.as_str()).collect(),
            truncated: st.truncated,
            count: st.count,
        })
        .collect()
}

/// The arrays written as tables, a row a line: each by its path (its keys from the document's
/// top, array indexes left out) with the indent of its closing bracket (a row is two deeper).
const TABLES: &[(&str, usize)] = &[
    ("objects", 2),
    ("flat", 2),
    ("samples", 2),
    ("servers.daemons", 4),
    ("stacks", 2),
    ("server_stacks", 2),
    ("lines", 2),
    ("processes", 2),
    ("processes.flat", 5),
    ("processes.stacks", 5),
    ("clock.threads", 2),
    ("clock.off_cpu.waits", 4),
];

/// The fields inside a row that begin a line of their own, at this indent (a long row's
/// tables and frames below its numbers).
const LINE_STARTS: &[(&str, usize)] =
    &[("processes.flat", 26), ("processes.stacks", 5), ("clock.off_cpu", 4), ("clock.off_cpu.waits.frames", 7)];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flat::FlatProfile;
    use crate::profile::Outcome;
    use crate::stacks::StackProfile;
    use prof_objects::object_file::ObjectFile;
    use prof_objects::symbolize::{Sample, Symbolizer};
    use crate::naming::Names;
    use prof_objects::symbols::{Function, SymbolTable};
    use std::path::Path;

    /// A value's escapes are serde_json's (a key's text is held apart, a value's is not).
    #[test]
    fn strings_are_escaped() {
        let nasty = "a\"b\\c\nd\re\tf\u{1}g\u{1f}h\u{7f}é😀";
        let mut out = Vec::new();
        nasty.serialize(&mut serde_json::Serializer::with_formatter(&mut out, LineBreaks::new(&[], &[]))).unwrap();
        let lit = String::from_utf8(out).unwrap();
        assert_eq!(lit, "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u001fh\u{7f}é😀\"");
        assert_eq!(serde_json::from_str::<String>(&lit).unwrap(), nasty);
    }

    fn outcome() -> (Outcome, FlatProfile, Vec<Sample>, Names, StackProfile, Vec<crate::waiting::Wait>) {
        let profile = crate::profile::example();
        let symbols = SymbolTable::new(vec![
            Function { addr: 0x1000, size: 0x100, name: "fib".into() },
            Function { addr: 0x2000, size: 0x100, name: "say \"hi\"\n".into() },
        ]);
        let symbolizer = Symbolizer::new(ObjectFile::from_symbols(Path::new("/bin/fib"), symbols), "./fib", Default::default());
        let names = Names::of_run(symbolizer, &profile, Default::default());
        let samples = names.samples(&profile);
        let stacks = StackProfile::build(&profile, &names).unwrap();
        let flat = FlatProfile::build(&samples, &names, Some(&stacks));
        let waits = crate::waiting::waits(&profile, &names);
        let run = Outcome {
            program: "./fib".into(),
            arguments: vec!["30".into(), "a b\\".into()],
            frequency_hz: 1000,
            profile,
            exit: ExitKind::Signaled(9),
            interpreters: Vec::new(),
        };
        (run, flat, samples, names, stacks, waits)
    }

    #[test]
    fn document_matches_the_golden_file() {
        let (run, flat, samples, names, stacks, waits) = outcome();
        let a = Analysis { run: &run, flat: &flat, samples: &samples, objects: names.objects(), stacks: Some(&stacks), processes: &[], lines: None, address_lines: None, waits: &waits, base: None, threads: &[], timeline: None };
        // UPDATE_EXPECT=1 rewrites the file after a deliberate change (review the diff).
        expect_test::expect_file!["../../../tests/golden/profile.json"].assert_eq(&render(&a));
    }

    /// Without -g: stacks null, processes null, still one valid document.
    #[test]
    fn a_run_without_stacks_is_valid_json() {
        let (run, flat, samples, names, _, waits) = outcome();
        let a = Analysis { run: &run, flat: &flat, samples: &samples, objects: names.objects(), stacks: None, processes: &[], lines: None, address_lines: None, waits: &waits, base: None, threads: &[], timeline: None };
        let v: serde_json::Value = serde_json::from_str(&render(&a)).unwrap();
        assert!(v["stacks"].is_null() && v["server_stacks"].is_null() && v["processes"].is_null(), "{v}");
    }

    #[test]
    fn document_parses_with_the_documented_fields() {
        let (run, flat, samples, names, stacks, waits) = outcome();
        let a = Analysis { run: &run, flat: &flat, samples: &samples, objects: names.objects(), stacks: Some(&stacks), processes: &[], lines: None, address_lines: None, waits: &waits, base: None, threads: &[], timeline: None };
        let v: serde_json::Value = serde_json::from_str(&render(&a)).unwrap();
        assert_eq!(v["version"], 8);
        assert!(v["ticks"]["idle"].is_null(), "only a system-wide run has idle samples");
        assert!(v["sampling"].is_null(), "Linux: no kernel source to report");
        // The clock: each thread's parts add up to its life.
        let t = &v["clock"]["threads"][0];
        let part = |k: &str| t[k].as_u64().unwrap();
        assert_eq!(part("on_cpu_ns") + part("blocked_ns") + part("preempted_ns"), part("wall_ns"));
        assert_eq!(v["clock"]["elapsed_ns"], 1_250_000_000u64);
        // --off-cpu: the wait, its stack outermost first, and the time no look saw.
        let off = &v["clock"]["off_cpu"];
        assert_eq!((off["rate"].as_u64(), off["unseen_ns"].as_u64(), off["unseen_waits"].as_u64()), (Some(1000), Some(100_000_000), Some(40)));
        let w = &off["waits"][0];
        assert_eq!((w["call"].as_str(), w["ns"].as_u64(), w["count"].as_u64()), (Some("read"), Some(900_000_000), Some(3)));
        assert_eq!(w["targets"], serde_json::json!([{"on": "pipe:[7]", "ns": 900_000_000u64}]));
        assert_eq!(w["threads"], serde_json::json!([{"tid": 42, "ns": 900_000_000u64}]));
        assert_eq!(w["frames"], serde_json::json!(["fib", "[libc.so.6]"]));
        // The daemons that worked for it, and their stacks under their own roots.
        assert_eq!((v["servers"]["server_user"].as_u64(), v["servers"]["idle"].as_u64()), (Some(7), Some(3)));
        assert_eq!(v["servers"]["daemons"][0]["path"], "/no/such/ramfs");
        // An executable that cannot be read names every frame by its object.
        assert_eq!(v["server_stacks"][0]["frames"], serde_json::json!(["ramfs [pid 7]", "[ramfs]", "[ramfs]"]));
        let in_daemons: u64 = v["server_stacks"].as_array().unwrap().iter().map(|s| s["count"].as_u64().unwrap()).sum();
        assert_eq!(in_daemons, 7);
        assert_eq!(v["flat"][1]["total"], 11);
        assert_eq!(v["stacks"][0]["frames"], serde_json::json!(["say \"hi\"\n", "fib"]));
        assert_eq!((v["stacks"][1]["truncated"].as_bool(), v["stacks"][1]["count"].as_u64()), (Some(true), Some(3)));
        assert_eq!(v["arguments"][1], "a b\\");
        assert_eq!(v["layout"]["nr_bins"], 4);
        assert_eq!(v["bins"].as_array().unwrap().len(), 4);
        assert_eq!(v["ticks"]["kernel"], 4);
        assert_eq!(v["exit"]["signal"], 9);
        assert!(v["exit"]["code"].is_null());
        assert_eq!(v["flat"][1]["function"], "say \"hi\"\n");
        assert_eq!(v["flat"][2]["object"], "libc.so.6");
        assert!(v["flat"][2]["function"].is_null());
        assert_eq!(v["objects"][0]["path"], "/no/such/libc.so.6");
        let counted: u64 = v["samples"].as_array().unwrap().iter().map(|s| s["count"].as_u64().unwrap()).sum();
        assert_eq!(counted, 11);
    }
}
