//! Kernel samples (Redox with the kernel's NMI source): what profil reads from `/scheme/prof`
//! (status `source`/`rate`, `kernel` lines in `samples`, `kernel:` frames in `stacks`) is
//! named from the kernel's ELF as `[kernel]` functions, in the flat profile and the stacks,
//! while the Minix bins stay the program's own.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use prof_core::image::TextSegment;
use prof_core::{BinLayout, ProfData};
use profil::flat::FlatProfile;
use profil::naming::Names;
use prof_objects::object_file::ObjectFile;
use profil::profile::Profile;
use profil::report::{summary, ExitKind};
use profil::stacks::StackProfile;
use prof_objects::symbolize::Symbolizer;
use prof_objects::symbols::{Function, SymbolTable};

/// tests/data/kernel.c linked at the x86_64 kernel's addresses, with its symbols.
fn kernel_elf(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel.c");
    let (obj, elf) = (dir.join("kernel.o"), dir.join("kernel"));
    let cc = Command::new("cc")
        .args(["-c", "-O1", "-mcmodel=kernel", "-fno-pie", "-ffreestanding", "-fno-asynchronous-unwind-tables", "-o"])
        .arg(&obj)
        .arg(&src)
        .status()
        .unwrap();
    assert!(cc.success(), "cc kernel.c");
    let ld = Command::new("ld").args(["-nostdlib", "-e", "0", "-Ttext=0xffffffff80100000", "-o"]).arg(&elf).arg(&obj).status().unwrap();
    assert!(ld.success(), "ld kernel.o");
    elf
}

fn address_of(elf: &Path, name: &str) -> u64 {
    ObjectFile::read(elf, &Default::default()).unwrap().symbols.by_name(name).unwrap_or_else(|| panic!("{name} in the kernel ELF")).addr
}

/// The program: fib's `main` and `fib` at their link addresses.
fn program() -> ObjectFile {
    let symbols = SymbolTable::new(vec![
        Function { addr: 0x40_1000, size: 0x100, name: "fib".into() },
        Function { addr: 0x40_1800, size: 0x100, name: "main".into() },
    ]);
    ObjectFile::from_symbols(Path::new("/usr/bin/fib"), symbols)
}

/// The scheme's files after a run with `rate=1000`: 6 user samples (in fib), 4 kernel samples
/// in sys_read, called from syscall_handler, called from the program's main.
fn scheme_profile(sys_read: u64, handler: u64) -> Profile {
    let text = TextSegment { start: 0x40_1000, end: 0x40_2000 };
    let mut data = ProfData::new(&BinLayout::new(text, 0, 0, 0).unwrap());
    data.bin[0] = 6;
    let status = "state=stopped pid=42 reason=exit ticks_in_bins=6 ticks_user=6 ticks_kernel=4 dropped=0 \
                  start=0x401000 end=0x402000 bin_sz=4 nr_bins=1024 load_base=0x0 ticks_servers=0 ticks_idle=0 \
                  ticks_other=0 source=nmi-hpet rate=1000\n";
    let samples = format!("0x401010 6 text\n{:#x} 4 kernel\n", sys_read + 2);
    let stacks = format!(
        "4 complete kernel:{:#x} kernel:{:#x} text:0x401810\n6 complete text:0x401010 text:0x401805\n",
        sys_read + 2,
        handler + 9
    );
    Profile::from_scheme_files(status, &data.to_bytes(), &samples).unwrap().with_scheme_stacks(&stacks)
}

#[test]
fn kernel_samples_are_named_from_the_kernel_elf() {
    let dir = common::scratch("kernel-samples");
    let elf = kernel_elf(&dir);
    let (sys_read, handler) = (address_of(&elf, "sys_read"), address_of(&elf, "syscall_handler"));
    assert!(sys_read >= prof_core::sampler::KERNEL_SPACE_START);
    let p = scheme_profile(sys_read, handler);
    assert_eq!(p.source().sampling, Some(prof_core::sampler::Sampling { source: "nmi-hpet", rate: 1000 }));
    assert_eq!((p.user_ticks(), p.kernel_ticks(), p.data().total()), (6, Some(4), 6));

    let symbolizer = Symbolizer::new(program(), "fib", Default::default()).with_kernel(&elf);
    let run_names = Names::of_run(symbolizer, &p, Default::default());
    let samples = run_names.samples(&p);
    let stacks = StackProfile::build(&p, &run_names).unwrap();
    let flat = FlatProfile::build(&samples, &run_names, Some(&stacks));
    let names: Vec<(String, u64, Option<u64>)> = flat.entries.iter().map(|e| (e.name(), e.samples, e.total)).collect();
    assert_eq!(
        names,
        [
            ("fib".to_string(), 6, Some(6)),
            ("sys_read [kernel]".to_string(), 4, Some(4)),
            ("main".to_string(), 0, Some(10)),
            ("syscall_handler [kernel]".to_string(), 0, Some(4)),
        ]
    );
    assert!(flat.render(None).starts_with("Flat profile (10 ticks, 4 of them in the kernel):\n"), "{}", flat.render(None));
    // The kernel's frames sit above the program's: main calls into the kernel.
    let folded: Vec<String> = stacks
        .stacks
        .iter()
        .map(|st| st.frames.iter().map(|&f| stacks.functions[f].name.as_str()).collect::<Vec<_>>().join(";"))
        .collect();
    assert!(folded.contains(&"main;syscall_handler [kernel];sys_read [kernel]".to_string()), "{folded:?}");

    // The exports carry them: folded stacks by name, JSON with the source and kernel samples
    // (their addresses above 2^53, exact for a 64-bit parser).
    let collapsed = profil::exports::collapsed::render("fib", &flat, Some(&stacks));
    assert!(collapsed.contains("fib;main;syscall_handler [kernel];sys_read [kernel] 4\n"), "{collapsed}");
    let run = profil::profile::Outcome {
        program: "fib".into(),
        arguments: Vec::new(),
        frequency_hz: 1000,
        profile: p.clone(),
        exit: ExitKind::Exited(0),
        interpreters: Vec::new(),
    };
    let analysis = profil::exports::Analysis {
        run: &run,
        flat: &flat,
        samples: &samples,
        objects: run_names.objects(),
        stacks: Some(&stacks),
        processes: &[],
        lines: None,
        address_lines: None,
        waits: &[],
        base: None,
        threads: &[],
        timeline: None,
    };
    let doc: serde_json::Value = serde_json::from_str(&profil::exports::json::render(&analysis)).unwrap();
    assert_eq!(doc["sampling"], serde_json::json!({"source": "nmi-hpet", "rate": 1000}));
    assert_eq!(doc["flat"][1], serde_json::json!({"function": "sys_read", "object": "kernel", "samples": 4, "total": 4}));
    let kernel_sample = doc["samples"].as_array().unwrap().iter().find(|s| s["object"] == "kernel").unwrap();
    assert_eq!(kernel_sample["address"].as_u64(), Some(sys_read + 2));
    assert_eq!(kernel_sample["function"], "sys_read");

    let text = summary(&p, Some(&stacks), "fib", &[], ExitKind::Exited(0));
    assert!(
        text.contains("Ticks: 6 user (6 in bins), 4 kernel, 0 lost\n\
                       Sampling: nmi-hpet, 1000 a second per CPU: NMIs, the kernel's work for the program included\n\
                       Call stacks: 10 of 10 samples (user and kernel), 0 truncated"),
        "{text}"
    );
}

#[test]
fn without_the_kernel_elf_kernel_samples_keep_their_place() {
    let p = scheme_profile(0xffff_ffff_8010_0000, 0xffff_ffff_8010_0040);
    let symbolizer = Symbolizer::new(program(), "fib", Default::default()).with_kernel(Path::new("/no/such/kernel"));
    let run = Names::of_run(symbolizer, &p, Default::default());
    let flat = FlatProfile::build(&run.samples(&p), &run, None);
    let names: Vec<(String, u64)> = flat.entries.iter().map(|e| (e.name(), e.samples)).collect();
    assert_eq!(names, [("fib".to_string(), 6), ("[kernel]".to_string(), 4)]);
}

#[test]
fn a_timer_session_says_it_saw_user_mode_only() {
    let text = TextSegment { start: 0x40_1000, end: 0x40_2000 };
    let data = ProfData::new(&BinLayout::new(text, 0, 0, 0).unwrap());
    let status = "state=stopped pid=42 reason=exit ticks_in_bins=0 ticks_user=0 ticks_kernel=0 dropped=0 \
                  start=0x401000 end=0x402000 bin_sz=4 nr_bins=1024 load_base=0x0 ticks_servers=0 ticks_idle=0 \
                  ticks_other=0 source=timer rate=246\n";
    let p = Profile::from_scheme_files(status, &data.to_bytes(), "").unwrap();
    let text = summary(&p, None, "fib", &[], ExitKind::Exited(0));
    assert!(
        text.contains(
            "Sampling: timer, 246 a second per CPU: the kernel's timer tick, user mode only (no NMI source for -F: the kernel has none, or the machine no HPET it can use)"
        ),
        "{text}"
    );
    // A profd from before the source keys: no such line.
    let old = status.replace(" source=timer rate=246", "");
    let p = Profile::from_scheme_files(&old, &data.to_bytes(), "").unwrap();
    assert_eq!(p.source().sampling, None);
    assert!(!summary(&p, None, "fib", &[], ExitKind::Exited(0)).contains("Sampling:"));
}

/// The NMI source's rate as delivered: every tick of the run (program, daemons, idle, other
/// processes) over the session's wall time and CPUs, beside the rate asked; short by more than
/// 5 % (QEMU's HPET under a busy host) it is a warning.
#[test]
fn the_rate_delivered_is_reported_and_a_shortfall_warned_about() {
    let text = TextSegment { start: 0x40_1000, end: 0x40_2000 };
    let data = ProfData::new(&BinLayout::new(text, 0, 0, 0).unwrap());
    let status = "state=stopped pid=42 reason=exit ticks_in_bins=0 ticks_user=600 ticks_kernel=100 dropped=0 \
                  start=0x401000 end=0x402000 bin_sz=4 nr_bins=1024 load_base=0x0 ticks_servers=0 ticks_idle=0 \
                  ticks_other=0 source=nmi-hpet rate=1000\n";
    let mut p = Profile::from_scheme_files(status, &data.to_bytes(), "").unwrap();
    // 2 s on 2 CPUs: 4,000 ticks at the rate asked; 600 + 100 + 900 + 1,200 + 200 = 3,000.
    let servers = "# own_user=600 own_kernel=100 server_user=800 server_kernel=100 servers_dropped=0 idle=1200 other=200\n";
    p.parts_mut().servers = prof_core::formats::parse_servers(servers);
    p.parts_mut().clock.elapsed = Some(std::time::Duration::from_secs(2));
    p.parts_mut().source.cpus = Some(2);
    assert_eq!(p.achieved_rate(), Some(750.0));
    let s = summary(&p, None, "iowork", &[], ExitKind::Exited(0));
    assert!(
        s.contains(
            "Sampling: nmi-hpet, 1000 a second per CPU asked, 750 delivered: NMIs, the kernel's work for the program included\n\
             Warning: the source delivered 75 % of the rate asked; shares rest on fewer samples than -F says (a busy host under QEMU skips timer periods).\n"
        ),
        "{s}"
    );
    // 3,920 of 4,000: 98 %, no warning.
    p.parts_mut().servers.as_mut().unwrap().account.idle = 2120;
    let s = summary(&p, None, "iowork", &[], ExitKind::Exited(0));
    assert!(s.contains("1000 a second per CPU asked, 980 delivered:") && !s.contains("Warning: the source"), "{s}");
    // The timer runs at its own rate: delivered, never "asked", and no warning.
    p.parts_mut().source.sampling = Some(prof_core::sampler::Sampling { source: "timer", rate: 1000 });
    p.parts_mut().servers.as_mut().unwrap().account.idle = 1200;
    let s = summary(&p, None, "iowork", &[], ExitKind::Exited(0));
    assert!(s.contains("Sampling: timer, 1000 a second per CPU, 750 delivered: the kernel's timer tick") && !s.contains("Warning: the source"), "{s}");
    p.parts_mut().source.sampling = Some(prof_core::sampler::Sampling { source: "nmi-hpet", rate: 1000 });
    // Without the wall time or the account (Linux), the rate asked alone.
    p.parts_mut().clock.elapsed = None;
    assert!(summary(&p, None, "iowork", &[], ExitKind::Exited(0)).contains("Sampling: nmi-hpet, 1000 a second per CPU: NMIs"));
}
