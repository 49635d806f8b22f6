//! `--json FILE`: the whole run as one JSON document (schema in docs/exports.md, version 8:
//! version 7 had no `ticks.idle`, version 6 no `clock.off_cpu`, version 5 no `clock`, 4 no `processes` and `lines`, 3 no `sampling`, version 2 no
//! `servers` and `server_stacks`, version 1 no call stacks).
//!
//! The layout is ours (one row of a table per line, so a diff of two runs reads well, and the
//! golden file pins it); every string is serde_json's. The tests parse the output with
//! serde_json.
//! Addresses and counts are JSON integers; user-space addresses stay below 2^53, kernel ones
//! (Redox's kernel samples) do not: they are exact for parsers with 64-bit integers (serde_json,
//! Python), not for those that read every number as a double (JavaScript).

use std::fmt::Write;

use crate::exports::Analysis;
use crate::report::ExitKind;
use prof_objects::symbolize::PROGRAM;

/// Bumped on any change of the document's shape (2: `stacks`, and `total` in `flat`; 3:
/// `servers` and `server_stacks`; 4: `sampling`; 5: `processes`, `lines`; 6: `clock`; 7:
/// `clock.off_cpu`; 8: `ticks.idle`).
pub const SCHEMA_VERSION: u32 = 8;

/// The JSON document of a run.
pub fn render(a: &Analysis) -> String {
    let Analysis { run, flat, samples, symbolizer, stacks, processes, lines, .. } = *a;
    let p = &run.profile;
    let d = &p.data;
    let mut o = String::new();
    let _ = writeln!(o, "{{");
    let _ = writeln!(o, "  \"format\": \"profil\",");
    let _ = writeln!(o, "  \"version\": {SCHEMA_VERSION},");
    let _ = writeln!(o, "  \"program\": {},", string(&run.program));
    let args: Vec<String> = run.arguments.iter().map(|a| string(a)).collect();
    let _ = writeln!(o, "  \"arguments\": [{}],", args.join(", "));
    let _ = writeln!(o, "  \"frequency_hz\": {},", run.frequency_hz);
    let sampling = p.sampling.map_or("null".into(), |s| format!("{{\"source\": {}, \"rate\": {}}}", string(s.source), s.rate));
    let _ = writeln!(o, "  \"sampling\": {sampling},");
    let _ = writeln!(
        o,
        "  \"layout\": {{\"start_addr\": {}, \"end_addr\": {}, \"nr_bins\": {}, \"bin_sz\": {}}},",
        d.start_addr, d.end_addr, d.nr_bins, d.bin_sz
    );
    let nr_bins = (d.nr_bins as usize).min(d.bin.len());
    let bins: Vec<String> = d.bin[..nr_bins].iter().map(u64::to_string).collect();
    let _ = writeln!(o, "  \"bins\": [{}],", bins.join(", "));
    let _ = writeln!(
        o,
        "  \"ticks\": {{\"user\": {}, \"in_bins\": {}, \"kernel\": {}, \"lost\": {}, \"idle\": {}}},",
        p.user_ticks,
        d.total(),
        p.kernel_ticks.map_or("null".into(), |k| k.to_string()),
        p.lost,
        p.idle_ticks.map_or("null".into(), |k| k.to_string())
    );
    let _ = writeln!(o, "  \"stop_reason\": {},", p.stop_reason.map_or("null".into(), |r| string(r.as_str())));
    let null = || "null".to_string();
    let (code, signal, attached) = match run.exit {
        ExitKind::Exited(c) => (c.to_string(), null(), String::new()),
        ExitKind::Signaled(s) => (null(), s.to_string(), String::new()),
        // Not profil's child: no status. "running": still running when profiling stopped.
        ExitKind::Attached { pid, exited } => (null(), null(), format!(", \"attached_pid\": {pid}, \"running\": {}", !exited)),
    };
    let _ = writeln!(o, "  \"exit\": {{\"code\": {code}, \"signal\": {signal}{attached}}},");
    let objects: Vec<String> = symbolizer.objects()[PROGRAM + 1..]
        .iter()
        .map(|ob| format!("\n    {{\"name\": {}, \"path\": {}}}", string(&ob.name), string(&ob.path)))
        .collect();
    let _ = writeln!(o, "  \"objects\": {},", array(&objects, "  "));
    let _ = writeln!(o, "  \"flat\": {},", flat_array(flat, "  "));
    let sample_rows: Vec<String> = samples
        .iter()
        .map(|s| {
            let l = &s.location;
            let object = (l.object != PROGRAM).then(|| symbolizer.object(l.object).name.as_str());
            format!(
                "\n    {{\"address\": {}, \"count\": {}, \"object\": {}, \"object_address\": {}, \"function\": {}}}",
                s.address,
                s.count,
                optional(object),
                l.address.map_or("null".into(), |a| a.to_string()),
                optional(l.function.as_ref().map(|f| f.name.as_str()))
            )
        })
        .collect();
    let _ =
        writeln!(o, "  \"samples\": {},", array(&sample_rows, "  "));
    // The account of the run and the daemons that worked for the program (Redox); null
    // where the backend does not label servers.
    match &run.profile.servers {
        None => {
            let _ = writeln!(o, "  \"servers\": null,");
        }
        Some(r) => {
            let a = &r.account;
            let daemons: Vec<String> = r
                .servers
                .iter()
                .map(|s| format!("\n      {{\"pid\": {}, \"path\": {}, \"ticks\": {}}}", s.pid, string(&s.path), s.ticks))
                .collect();
            let _ = writeln!(
                o,
                "  \"servers\": {{\"own_user\": {}, \"own_kernel\": {}, \"server_user\": {}, \"server_kernel\": {}, \
                 \"servers_dropped\": {}, \"idle\": {}, \"other\": {}, \"daemons\": {}}},",
                r.own_user,
                r.own_kernel,
                a.server_user,
                a.server_kernel,
                a.servers_dropped,
                a.idle,
                a.other,
                array(&daemons, "    ")
            );
        }
    }
    // Call stacks (-g): each distinct stack of functions, outermost first; null without -g.
    // The daemons' stacks, each rooted at its daemon (`ramfs [pid 7]`), apart.
    match stacks {
        None => {
            let _ = writeln!(o, "  \"stacks\": null,");
            let _ = writeln!(o, "  \"server_stacks\": null,");
        }
        Some(sp) => {
            let _ = writeln!(o, "  \"stacks\": {},", stack_array(sp, &sp.stacks, "  "));
            let _ = writeln!(o, "  \"server_stacks\": {},", stack_array(sp, &sp.servers, "  "));
        }
    }
    // The profile by source line (--lines): every line, most samples first; null without it.
    match lines {
        None => {
            let _ = writeln!(o, "  \"lines\": null,");
        }
        Some(lp) => {
            let rows: Vec<String> = lp
                .lines
                .iter()
                .map(|(l, object, n)| {
                    let object = (*object != PROGRAM).then(|| symbolizer.object(*object).name.as_str());
                    format!(
                        "\n    {{\"file\": {}, \"line\": {}, \"function\": {}, \"object\": {}, \"samples\": {n}}}",
                        string(&l.file),
                        l.line,
                        string(&l.function),
                        optional(object)
                    )
                })
                .collect();
            let _ = writeln!(o, "  \"lines\": {},", array(&rows, "  "));
        }
    }
    // The processes the program started (--children), each with its own profile; null when
    // none was followed (not asked, or none started).
    if processes.is_empty() {
        let _ = writeln!(o, "  \"processes\": null,");
    } else {
        let rows: Vec<String> = processes
            .iter()
            .map(|c| {
                let p = &c.profile;
                format!(
                    "\n    {{\"pid\": {}, \"parent\": {}, \"program\": {}, \"running\": {}, \"ticks\": {{\"user\": {}, \"kernel\": {}}},\n                          \"flat\": {},\n     \"stacks\": {}}}",
                    c.pid,
                    c.parent.map_or("null".into(), |p| p.to_string()),
                    string(&c.program),
                    c.running,
                    p.user_ticks,
                    p.kernel_ticks.map_or("null".into(), |k| k.to_string()),
                    flat_array(&c.flat, "     "),
                    c.stacks.as_ref().map_or("null".into(), |sp| stack_array(sp, &sp.stacks, "     "))
                )
            })
            .collect();
        let _ = writeln!(o, "  \"processes\": {},", array(&rows, "  "));
    }
    // The run by the clock: its wall time and each thread's account (Linux), ns.
    let threads: Vec<String> = p
        .threads
        .iter()
        .map(|t| {
            // A thread no look saw: the part of its life not known (absent where none is).
            let unknown = match t.unknown {
                0 => String::new(),
                ns => format!(", \"unknown_ns\": {ns}"),
            };
            format!(
                "\n    {{\"tid\": {}, \"wall_ns\": {}, \"on_cpu_ns\": {}, \"blocked_ns\": {}, \"preempted_ns\": {}{unknown}}}",
                t.tid,
                t.wall,
                t.on_cpu(),
                t.blocked,
                t.preempted
            )
        })
        .collect();
    let elapsed = p.elapsed.map_or("null".into(), |e| e.as_nanos().to_string());
    let _ = writeln!(
        o,
        "  \"clock\": {{\"elapsed_ns\": {elapsed}, \"threads\": {},\n    \"off_cpu\": {}}}",
        array(&threads, "  "),
        off_cpu(p, a.waits)
    );
    let _ = writeln!(o, "}}");
    o
}

/// The waits (`--off-cpu`): each call at a stack (outermost frame first), what it waited
/// on, its time and periods, by thread; and the blocked time no look saw. `null` without it.
fn off_cpu(p: &crate::profile::Profile, waits: &[crate::waiting::Wait]) -> String {
    let Some(off) = &p.off_cpu else { return "null".into() };
    let (unseen_ns, unseen_waits) = crate::waiting::unseen(p);
    let rows: Vec<String> = waits
        .iter()
        .map(|w| {
            let frames: Vec<String> = w.frames.iter().rev().map(|f| string(f)).collect();
            let targets: Vec<String> =
                w.targets.iter().map(|(t, ns)| format!("{{\"on\": {}, \"ns\": {ns}}}", optional(t.as_deref()))).collect();
            let threads: Vec<String> = w.by_thread.iter().map(|(tid, ns)| format!("{{\"tid\": {tid}, \"ns\": {ns}}}")).collect();
            format!(
                "\n      {{\"pid\": {}, \"call\": {}, \"ns\": {}, \"count\": {}, \"targets\": [{}], \"threads\": [{}],\n       \"frames\": [{}], \"truncated\": {}}}",
                w.process.as_ref().map_or(p.pid, |(_, pid)| *pid),
                string(&w.call),
                w.ns,
                w.count,
                targets.join(", "),
                threads.join(", "),
                frames.join(", "),
                w.truncated
            )
        })
        .collect();
    format!(
        "{{\"rate\": {}, \"problem\": {}, \"unseen_ns\": {unseen_ns}, \"unseen_waits\": {unseen_waits}, \"waits\": {}}}",
        off.rate,
        optional(off.problem.as_deref()),
        array(&rows, "    ")
    )
}

/// A JSON array of `rows` (each starting on a line of its own), its closing bracket on a line
/// indented by `indent`; `[]` when empty.
fn array(rows: &[String], indent: &str) -> String {
    match rows.is_empty() {
        true => "[]".into(),
        false => format!("[{}\n{indent}]", rows.join(",")),
    }
}

/// A flat profile's entries, one a line, the closing bracket indented by `indent`.
fn flat_array(flat: &crate::flat::FlatProfile, indent: &str) -> String {
    let rows: Vec<String> = flat
        .entries
        .iter()
        .map(|e| {
            format!(
                "\n{indent}  {{\"function\": {}, \"object\": {}, \"samples\": {}, \"total\": {}}}",
                optional(e.function.as_deref()),
                optional(e.object.as_deref()),
                e.samples,
                e.total.map_or("null".into(), |t| t.to_string())
            )
        })
        .collect();
    array(&rows, indent)
}

/// Named stacks of `sp`, outermost frame first, one a line.
fn stack_array(sp: &crate::stacks::StackProfile, stacks: &[crate::stacks::NamedStack], indent: &str) -> String {
    let rows: Vec<String> = stacks
        .iter()
        .map(|st| {
            let frames: Vec<String> = st.frames.iter().map(|&f| string(&sp.functions[f].name)).collect();
            format!(
                "\n{indent}  {{\"frames\": [{}], \"truncated\": {}, \"count\": {}}}",
                frames.join(", "),
                st.truncated,
                st.count
            )
        })
        .collect();
    array(&rows, indent)
}

fn optional(s: Option<&str>) -> String {
    s.map_or("null".into(), string)
}

/// A JSON string literal.
pub fn string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flat::FlatProfile;
    use prof_objects::object_file::ObjectFile;
    use crate::profile::{Frame, Outcome, Stack};
    use crate::stacks::StackProfile;
    use prof_objects::symbolize::{Sample, Symbolizer};
    use crate::profile::Profile;
    use prof_objects::symbols::{Function, SymbolTable};
    use prof_core::image::TextSegment;
    use prof_core::sampler::Mapping;
    use prof_core::{BinLayout, ProfData, StopReason};
    use std::path::Path;

    #[test]
    fn strings_are_escaped() {
        let nasty = "a\"b\\c\nd\re\tf\u{1}g\u{1f}h\u{7f}é😀";
        let lit = string(nasty);
        assert_eq!(lit, "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u001fh\u{7f}é😀\"");
        assert_eq!(serde_json::from_str::<String>(&lit).unwrap(), nasty);
    }

    fn outcome() -> (Outcome, FlatProfile, Vec<Sample>, Symbolizer, StackProfile, Vec<crate::waiting::Wait>) {
        let text = TextSegment { start: 0x1000, end: 0x3000 };
        let mut data = ProfData::new(&BinLayout::new(text, 0x1000, 0x1400, 0x100).unwrap());
        data.bin[0] = 6;
        let profile = Profile {
            data,
            image_samples: vec![(0x1000, 5), (0x10ff, 1), (0x2010, 3)],
            foreign_samples: vec![(0x7f00_0000_1010, 2)],
            kernel_samples: Vec::new(),
            sampling: None,
            children: (0, 0),
            mappings: vec![Mapping {
                start: 0x7f00_0000_1000,
                len: 0x1000,
                pgoff: 0,
                path: "/no/such/libc.so.6".into(),
                file: None,
                build_id: None,
            }],
            user_ticks: 11,
            kernel_ticks: Some(4),
            lost: 0,
            stop_reason: Some(StopReason::Exit),
            later_execs: Vec::new(),
            typed_records: false,
            stacks_recorded: true,
            stacks: vec![
                Stack { frames: vec![Frame::Program(0x1000), Frame::Program(0x2010)], truncated: false, count: 6 },
                Stack { frames: vec![Frame::Program(0x2010)], truncated: true, count: 3 },
                Stack { frames: vec![Frame::Foreign(0x7f00_0000_1010), Frame::Program(0x2010)], truncated: false, count: 2 },
            ],
            // A daemon that worked for it (Redox), whose executable cannot be read here.
            servers: Some(prof_core::formats::ServersReport {
                own_user: 11,
                own_kernel: 4,
                account: prof_core::sampler::Account { server_user: 7, server_kernel: 1, servers_dropped: 0, idle: 3, other: 2 },
                servers: vec![prof_core::formats::ServerEntry {
                    pid: 7,
                    ticks: 7,
                    path: "/no/such/ramfs".into(),
                    stacks: vec![(vec![0x40_2010, 0x40_3005], false, 5), (vec![0x40_2020], true, 2)],
                }],
            }),
            pid: 42,
            processes: Vec::new(),
            elapsed: Some(std::time::Duration::from_millis(1250)),
            cpus: None,
            threads: vec![prof_core::ledger::ThreadTime {
                tid: 42,
                wall: 1_250_000_000,
                preempted: 5_000_000,
                blocked: 1_000_000_000,
                waits: vec![
                    prof_core::ledger::Wait { site: 0, ns: 900_000_000, count: 3 },
                    prof_core::ledger::Wait { site: prof_core::ledger::UNSEEN, ns: 100_000_000, count: 40 },
                ],
                unknown: 0,
            }],
            // --off-cpu: three reads of a pipe, from fib by way of libc's read.
            wait_sites: vec![crate::profile::WaitSite {
                pid: 42,
                call: "read".into(),
                target: Some("pipe:[7]".into()),
                stack: Stack { frames: vec![Frame::Foreign(0x7f00_0000_1010), Frame::Program(0x1010)], truncated: false, count: 0 },
            }],
            off_cpu: Some(crate::profile::OffCpu { rate: 1000, problem: None, kernel: false }),
            served: Vec::new(),
            by_thread: Vec::new(),
            idle_ticks: None,
            record_span: None,
            daemons: Vec::new(),
            timeline: Default::default(),
        };
        let symbols = SymbolTable::new(vec![
            Function { addr: 0x1000, size: 0x100, name: "fib".into() },
            Function { addr: 0x2000, size: 0x100, name: "say \"hi\"\n".into() },
        ]);
        let mut symbolizer = Symbolizer::new(ObjectFile::from_symbols(Path::new("/bin/fib"), symbols), "./fib", Default::default());
        let samples = symbolizer.locate(profile.samples());
        let stacks = StackProfile::build(&profile, &mut symbolizer, None).unwrap();
        let flat = FlatProfile::build(&samples, &symbolizer, Some(&stacks));
        let waits = crate::waiting::waits(&profile, &mut symbolizer);
        let run = Outcome {
            program: "./fib".into(),
            arguments: vec!["30".into(), "a b\\".into()],
            frequency_hz: 1000,
            profile,
            exit: ExitKind::Signaled(9),
            interpreters: Vec::new(),
        };
        (run, flat, samples, symbolizer, stacks, waits)
    }

    #[test]
    fn document_matches_the_golden_file() {
        let (run, flat, samples, symbolizer, stacks, waits) = outcome();
        let a = Analysis { run: &run, flat: &flat, samples: &samples, symbolizer: &symbolizer, stacks: Some(&stacks), processes: &[], lines: None, sources: None, waits: &waits, base: None, threads: &[], timeline: None };
        // UPDATE_EXPECT=1 rewrites the file after a deliberate change (review the diff).
        expect_test::expect_file!["../../tests/golden/profile.json"].assert_eq(&render(&a));
    }

    /// Without -g: stacks null, processes null, still one valid document.
    #[test]
    fn a_run_without_stacks_is_valid_json() {
        let (run, flat, samples, symbolizer, _, waits) = outcome();
        let a = Analysis { run: &run, flat: &flat, samples: &samples, symbolizer: &symbolizer, stacks: None, processes: &[], lines: None, sources: None, waits: &waits, base: None, threads: &[], timeline: None };
        let v: serde_json::Value = serde_json::from_str(&render(&a)).unwrap();
        assert!(v["stacks"].is_null() && v["server_stacks"].is_null() && v["processes"].is_null(), "{v}");
    }

    #[test]
    fn document_parses_with_the_documented_fields() {
        let (run, flat, samples, symbolizer, stacks, waits) = outcome();
        let a = Analysis { run: &run, flat: &flat, samples: &samples, symbolizer: &symbolizer, stacks: Some(&stacks), processes: &[], lines: None, sources: None, waits: &waits, base: None, threads: &[], timeline: None };
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
