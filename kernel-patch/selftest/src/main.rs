//! kprof selftest: boots as the initfs bootstrap of a patched Redox kernel, profiles itself
//! through `sys:prof_ctl` / `sys:prof_data`, checks the profile and powers the machine off.
//!
//! It spins in `work_c`, called from `work_a` with three times the work it gets from
//! `work_b`, and passes when the kernel's exact-PC table (decoded with the `kprof` crate, the
//! kernel module's own source) has the hits in `work_c`, no user sample outside its text, and
//! the kernel's call stacks (frame-pointer walks; built with frame pointers) put `work_a` and
//! `work_b` under `work_c` in roughly that proportion. With the `no-session` feature it never
//! starts a session (off-path check); with `pin-last-cpu` it first moves itself to the last
//! CPU (see README.md for why that is opt-in).

#![no_std]
#![no_main]

extern crate alloc;

mod rt;
mod sys;

use alloc::{format, string::String, vec::Vec};
use core::hint::black_box;
use core::ops::Range;

use kprof::{KERNEL_SPACE_START, Snapshot, Source, State, StopReason};

/// The pid we give ourselves (no process manager runs under us).
const SELF_PID: usize = 42;
/// Loop iterations of one unit of work; `work_a` does 3 units, `work_b` 1.
const UNIT: u64 = 20_000;
/// Rounds between two looks at the user tick count.
const ROUNDS_PER_POLL: u32 = 16;
/// User ticks to collect (~4 s at the PIT's ~246 Hz).
const TARGET_TICKS: u64 = 1000;
const MAX_POLLS: u32 = 100_000;

type Outcome = Result<(), String>;

unsafe extern "C" {
    static __text_start: u8;
    static __text_end: u8;
    static __work_a_start: u8;
    static __work_a_end: u8;
    static __work_b_start: u8;
    static __work_b_end: u8;
    static __work_c_start: u8;
    static __work_c_end: u8;
}

fn range(start: &u8, end: &u8) -> Range<u64> {
    start as *const u8 as u64..end as *const u8 as u64
}

/// The same loop in both workers, so time is proportional to iterations.
#[inline(always)]
fn spin(iterations: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..iterations {
        acc = black_box(acc.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
    }
    acc
}

/// The work itself, for both callers. Own section (`.text.work_c`) so the linker script
/// bounds it.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn work_c(iterations: u64) -> u64 {
    spin(iterations)
}

/// Three quarters of the work, done in `work_c` (the `black_box` keeps it a call, not a jump).
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn work_a(unit: u64) -> u64 {
    black_box(work_c(black_box(3 * unit)))
}

/// One quarter of the work.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn work_b(unit: u64) -> u64 {
    black_box(work_c(black_box(unit)))
}

pub extern "C" fn main() -> ! {
    say!("kprof-selftest: started");
    if let Err(why) = run() {
        say!("kprof-selftest: FAIL {}", why);
    }
    sys::shutdown()
}

fn run() -> Outcome {
    let proc_root = sys::scheme_root(sys::SCHEME_PROC).ok_or("no kernel.proc capability")?;
    let me = sys::dup(proc_root, "cur-context").map_err(|e| format!("cur-context: {e}"))?;
    set_own_pid(proc_root, me)?;
    let cpus = cpu_count();
    if cfg!(feature = "pin-last-cpu") && cpus > 1 {
        // Run on the last CPU, whose ticks come from the tick IPI rather than the PIT IRQ.
        pin_to_cpu(me, cpus - 1)?;
    }
    say!(
        "kprof-selftest: pid {} cpus {} {}",
        SELF_PID,
        cpus,
        context_line()
    );

    if cfg!(feature = "no-session") {
        return no_session();
    }

    check_ctl_errors()?;
    sys::write_sys("prof_ctl", &format!("start {SELF_PID} 4096"))
        .map_err(|e| format!("start: {e}"))?;
    match sys::write_sys("prof_ctl", "start 42") {
        Err(sys::Errno(16)) => {} // EBUSY
        other => return Err(format!("second start gave {other:?}, expected EBUSY")),
    }

    let mut polls = 0;
    loop {
        for _ in 0..ROUNDS_PER_POLL {
            black_box(work_a(black_box(UNIT)));
            black_box(work_b(black_box(UNIT)));
        }
        polls += 1;
        let now = snapshot()?;
        if now.state != State::Running {
            return Err(format!("session ended early: {:?}", now.stop_reason));
        }
        if now.user_ticks >= TARGET_TICKS || polls >= MAX_POLLS {
            break;
        }
    }
    sys::write_sys("prof_ctl", "stop\n").map_err(|e| format!("stop: {e}"))?;
    // Dropped before the next phase: the selftest heap starts over only when all is freed.
    {
        let s = snapshot()?;
        say!(
            "kprof-selftest: {} after {} polls, {}",
            describe(&s),
            polls,
            context_line()
        );
        verdict(&s)?;
    }
    exit_and_exec(proc_root, me)?;
    nmi_source()
}

/// NMI samples asked for each second and CPU.
const NMI_RATE: u64 = 1000;
/// Samples of the program to collect in the NMI phase (~2 s at 1 kHz).
const NMI_TARGET: u64 = 2000;

/// A session at `rate=1000`: the kernel's NMI source (an HPET comparator delivered as NMIs).
/// Between its user work the program makes system calls (reading `sys:context`, which the
/// kernel formats, and yielding): the NMI samples the kernel too, so it passes when the
/// session says source nmi-hpet at 1000 a second, the samples per second of wall time per CPU
/// are within 10 % of that, kernel samples were taken (at kernel addresses) with stacks that
/// go on below the system call into our own code, and every counted sample has its stack.
fn nmi_source() -> Outcome {
    sys::write_sys("prof_ctl", &format!("start {SELF_PID} 4096 rate={NMI_RATE}"))
        .map_err(|e| format!("NMI start: {e}"))?;
    let started = sys::monotonic_ns();
    let mut polls = 0;
    loop {
        for _ in 0..ROUNDS_PER_POLL / 4 {
            black_box(work_a(black_box(UNIT / 4)));
            let _ = sys::read_sys("context");
            sys::sched_yield();
        }
        polls += 1;
        let s = snapshot()?;
        if s.state != State::Running {
            return Err(format!("NMI session ended early: {:?}", s.stop_reason));
        }
        if s.user_ticks + s.kernel_ticks >= NMI_TARGET || polls >= MAX_POLLS {
            break;
        }
    }
    sys::write_sys("prof_ctl", "stop
").map_err(|e| format!("NMI stop: {e}"))?;
    let elapsed_ns = sys::monotonic_ns() - started;
    let s = snapshot()?;
    let text = unsafe { range(&__text_start, &__text_end) };
    let all = s.user_ticks + s.kernel_ticks + s.server_user_ticks + s.server_kernel_ticks + s.idle_ticks + s.other_ticks;
    let cpus = cpu_count() as u64;
    let per_second = all * 1_000_000_000 / (elapsed_ns.max(1) * cpus);
    let kernel_entries = s.entries.iter().filter(|e| e.addr >= KERNEL_SPACE_START).map(|e| e.count).sum::<u64>();
    let user_in_text = s.entries.iter().filter(|e| text.contains(&e.addr)).map(|e| e.count).sum::<u64>();
    // Kernel stacks joined to ours: kernel frames, then frames in our text.
    let is_joined = |st: &&kprof::StackEntry| {
        let user = st.frames.iter().position(|&f| f < KERNEL_SPACE_START);
        st.frames[0] >= KERNEL_SPACE_START
            && user.is_some_and(|at| at >= 1 && st.frames[at..].iter().all(|f| text.contains(&f.wrapping_sub(1))))
    };
    let joined = s.stacks.iter().filter(is_joined).map(|st| st.count).sum::<u64>();
    let stack_ticks = s.stacks.iter().map(|st| st.count).sum::<u64>();
    let line = format!(
        "source={} rate={} measured={per_second}/s/cpu over {} ms user={} kernel={} kernel_entries={kernel_entries} joined={joined} idle={} other={} stacks={} stacks_dropped={}",
        s.source.as_str(),
        s.rate,
        elapsed_ns / 1_000_000,
        s.user_ticks,
        s.kernel_ticks,
        s.idle_ticks,
        s.other_ticks,
        s.stacks.len(),
        s.stacks_dropped
    );
    let mut top: Vec<&kprof::StackEntry> = s.stacks.iter().filter(|st| st.frames[0] >= KERNEL_SPACE_START).collect();
    top.sort_by(|x, y| y.count.cmp(&x.count));
    for st in top.iter().take(3) {
        let frames: Vec<String> = st.frames.iter().map(|f| format!("{f:#x}")).collect();
        say!("kprof-selftest: NMI kernel stack {} x{}{}", frames.join("<"), st.count, if st.truncated { " truncated" } else { "" });
    }
    let mut problems = Vec::new();
    if (s.source, s.rate) != (Source::NmiHpet, NMI_RATE) {
        problems.push("not sampled by NMIs at the rate asked");
    }
    if !cfg!(feature = "singlestep") && (per_second * 10 < NMI_RATE * 9 || per_second * 10 > NMI_RATE * 11) {
        problems.push("samples per second and CPU not within 10% of the rate");
    }
    if s.kernel_ticks == 0 || kernel_entries != s.kernel_ticks {
        problems.push("no kernel samples, or kernel samples not at kernel addresses");
    }
    if user_in_text + kernel_entries + s.dropped != s.user_ticks + s.kernel_ticks {
        problems.push("user samples outside our text");
    }
    if joined == 0 {
        problems.push("no kernel stack joined to our own below the system call");
    }
    if stack_ticks + s.stacks_dropped != s.user_ticks + s.kernel_ticks {
        problems.push("samples != stacks + stacks dropped");
    }
    if problems.is_empty() {
        say!("kprof-selftest: NMI PASS {line}");
        Ok(())
    } else {
        Err(format!("NMI {line} problems: {}", problems.join("; ")))
    }
}

/// The pid of the second context (a thread of ours, as its own process).
const THREAD_PID: usize = 43;
const THREAD_STACK_SIZE: usize = 16 * 1024;

#[repr(C, align(16))]
struct ThreadStack([u8; THREAD_STACK_SIZE]);

static mut THREAD_STACK: ThreadStack = ThreadStack([0; THREAD_STACK_SIZE]);

/// The second context spins in `work_a` until it is killed.
extern "C" fn thread_main() -> ! {
    loop {
        black_box(work_a(black_box(UNIT)));
    }
}

/// The exec and exit hooks: profile a new context with its own pid while its address space is
/// still empty, as a launcher does (`start … exec`: counting begins at its exec), give it ours
/// the way exec does (`current-addrspace`), let it run, kill it, and expect the session to
/// have counted after the exec and to end by itself with reason exit, the exec counted and the
/// load mapping found.
fn exit_and_exec(proc_root: usize, me: usize) -> Outcome {
    let fail = |what: &str, e: sys::Errno| format!("EXIT {what}: {e}");
    let thread = sys::dup(proc_root, "new-context").map_err(|e| fail("new-context", e))?;
    set_attrs(proc_root, thread, THREAD_PID, b"kprof-thread")?;
    sys::write_sys("prof_ctl", &format!("start {THREAD_PID} 256 exec")).map_err(|e| fail("start", e))?;
    let before = snapshot()?;
    let before = (before.exec_base, before.addr_space_switches);

    let our_space = sys::dup(me, "addrspace").map_err(|e| fail("addrspace", e))?;
    let switch = sys::dup(thread, "current-addrspace").map_err(|e| fail("current-addrspace", e))?;
    let stack_top = &raw mut THREAD_STACK as usize + THREAD_STACK_SIZE;
    // Entered by a jump, not a call: leave room for the return address the ABI expects.
    let words = [our_space, stack_top - 8, thread_main as *const () as usize];
    sys::write(switch, &words_bytes(&words)).map_err(|e| fail("write current-addrspace", e))?;
    sys::close(switch); // the switch happens here
    sys::close(our_space);
    let start = sys::dup(thread, "start").map_err(|e| fail("start handle", e))?;
    sys::write(start, &[0; 8]).map_err(|e| fail("start write", e))?;
    sys::close(start);

    // (One snapshot alive at a time: the selftest's heap only starts over when all is freed.)
    for _ in 0..100_000 {
        if snapshot()?.user_ticks >= 100 {
            break;
        }
        sys::sched_yield();
    }
    let status = sys::dup(thread, "status").map_err(|e| fail("status", e))?;
    sys::write(status, &usize::MAX.to_le_bytes()).map_err(|e| fail("kill", e))?; // ForceKill
    sys::close(status);
    sys::close(thread);

    for _ in 0..100_000 {
        if snapshot()?.state != State::Running {
            break;
        }
        sys::sched_yield();
    }
    let after = snapshot()?;
    say!(
        "kprof-selftest: EXIT before exec: exec_base={:#x} addr_space_switches={}; at end: {}",
        before.0,
        before.1,
        describe(&after)
    );
    let (text, work_a, work_c) = unsafe {
        (
            range(&__text_start, &__text_end),
            range(&__work_a_start, &__work_a_end),
            range(&__work_c_start, &__work_c_end),
        )
    };
    let ticks_in = |r: &Range<u64>| {
        after
            .entries
            .iter()
            .filter(|e| r.contains(&e.addr))
            .map(|e| e.count)
            .sum::<u64>()
    };
    // Its loop is `work_a` calling `work_c`.
    let (in_text, in_work_a) = (ticks_in(&text), ticks_in(&work_a) + ticks_in(&work_c));
    let ok = (after.state, after.stop_reason, after.pid)
        == (State::Stopped, Some(StopReason::Exit), THREAD_PID as u64)
        && before == (0, 0)
        && after.addr_space_switches == 1
        && after.exec_base == 0x1000
        && after.user_ticks > 0
        && in_text + after.dropped == after.user_ticks
        && in_work_a * 10 >= in_text * 9;
    let line = format!(
        "reason={} addr_space_switches={} exec_base={:#x} thread user={} in_work_a={in_work_a} outside_text={}",
        after.stop_reason.map_or("none", StopReason::as_str),
        after.addr_space_switches,
        after.exec_base,
        after.user_ticks,
        after.user_ticks - after.dropped - in_text
    );
    if ok {
        say!("kprof-selftest: EXIT PASS {line}");
        Ok(())
    } else {
        Err(format!("EXIT checks failed: {line}"))
    }
}

fn words_bytes(words: &[usize; 3]) -> [u8; 24] {
    let mut raw = [0; 24];
    for (i, word) in words.iter().enumerate() {
        raw[8 * i..8 * i + 8].copy_from_slice(&word.to_le_bytes());
    }
    raw
}

/// What `sys:prof_data` holds now (a fresh open: each handle is one snapshot).
fn snapshot() -> Result<Snapshot, String> {
    let bytes = sys::read_sys("prof_data").map_err(|e| format!("prof_data: {e}"))?;
    kprof::decode(&bytes).map_err(|e| format!("decode: {e}"))
}

fn describe(s: &Snapshot) -> String {
    format!(
        "state={} reason={} pid={} user={} kernel={} dropped={} entries={} capacity={} exec_base={:#x} addr_space_switches={}",
        s.state.as_str(),
        s.stop_reason.map_or("none", StopReason::as_str),
        s.pid,
        s.user_ticks,
        s.kernel_ticks,
        s.dropped,
        s.entries.len(),
        s.capacity,
        s.exec_base,
        s.addr_space_switches
    )
}

fn verdict(s: &Snapshot) -> Outcome {
    let (text, a_range, b_range, c_range) = unsafe {
        (
            range(&__text_start, &__text_end),
            range(&__work_a_start, &__work_a_end),
            range(&__work_b_start, &__work_b_end),
            range(&__work_c_start, &__work_c_end),
        )
    };
    let hits = |r: &Range<u64>| {
        s.entries
            .iter()
            .filter(|e| r.contains(&e.addr))
            .map(|e| e.count)
            .sum::<u64>()
    };
    let in_c = hits(&c_range);
    // The stacks sampled in work_c, by its caller: return addresses (the second frame) in
    // work_a or work_b; each chain must go on into our text (run, main, _start).
    let stacks_in_c = |caller: &Range<u64>| {
        s.stacks
            .iter()
            .filter(|st| {
                st.frames.len() >= 3
                    && c_range.contains(&st.frames[0])
                    && caller.contains(&st.frames[1].wrapping_sub(1))
                    && st.frames[2..].iter().all(|f| text.contains(&f.wrapping_sub(1)))
            })
            .map(|st| st.count)
            .sum::<u64>()
    };
    let (a, b) = (stacks_in_c(&a_range), stacks_in_c(&b_range));
    let stack_ticks = s.stacks.iter().map(|st| st.count).sum::<u64>();
    let truncated = s.stacks.iter().filter(|st| st.truncated).map(|st| st.count).sum::<u64>();
    let outside = s
        .entries
        .iter()
        .filter(|e| !text.contains(&e.addr))
        .map(|e| e.count)
        .sum::<u64>();
    let in_table = s.entries.iter().map(|e| e.count).sum::<u64>();
    let ratio_x100 = if b == 0 { 0 } else { a * 100 / b };

    let mut problems = Vec::new();
    if a == 0 || b == 0 {
        problems.push("a caller of work_c is on no stack");
    }
    if in_c * 10 < s.user_ticks * 9 {
        problems.push("fewer than 90% of the user ticks in work_c");
    }
    if (a + b) * 10 < in_c * 9 {
        problems.push("fewer than 90% of work_c's ticks have a work_a/work_b -> work_c stack");
    }
    if stack_ticks + s.stacks_dropped != s.user_ticks + s.kernel_ticks {
        problems.push("ticks != stacks + stacks dropped");
    }
    // 2.0 <= a/b <= 4.5
    if b > 0 && !(2 * b <= a && 2 * a <= 9 * b) {
        problems.push("ratio outside 2.0..4.5");
    }
    if outside != 0 {
        problems.push("user samples outside our text");
    }
    if (s.state, s.stop_reason, s.pid) != (State::Stopped, Some(StopReason::Request), SELF_PID as u64) {
        problems.push("state/reason/pid wrong");
    }
    if in_table + s.dropped != s.user_ticks + s.kernel_ticks {
        problems.push("ticks != table + dropped");
    }
    if s.exec_base != text.start & !0xfff {
        problems.push("exec_base is not our image's mapping");
    }
    let line = format!(
        "work_c={in_c} stacks a->c={a} b->c={b} ratio={}.{:02} stacks={} distinct truncated={truncated} stacks_dropped={} other_text={} outside_text={outside} user={} kernel={} dropped={} exec_base={:#x} text={:#x}..{:#x}",
        ratio_x100 / 100,
        ratio_x100 % 100,
        s.stacks.len(),
        s.stacks_dropped,
        in_table - in_c - outside,
        s.user_ticks,
        s.kernel_ticks,
        s.dropped,
        s.exec_base,
        text.start,
        text.end
    );
    let mut top: Vec<&kprof::StackEntry> = s.stacks.iter().collect();
    top.sort_by(|x, y| y.count.cmp(&x.count));
    for st in top.iter().take(3) {
        let frames: Vec<String> = st.frames.iter().map(|f| format!("{f:#x}")).collect();
        say!("kprof-selftest: stack {} x{}{}", frames.join("<"), st.count, if st.truncated { " truncated" } else { "" });
    }
    if problems.is_empty() {
        say!("kprof-selftest: PASS {}", line);
        Ok(())
    } else {
        Err(format!("{line} problems: {}", problems.join("; ")))
    }
}

/// Malformed commands are EINVAL, an unknown pid ESRCH: the kernel's error mapping.
fn check_ctl_errors() -> Outcome {
    for (command, errno) in [
        ("start 0", 22),
        ("bogus", 22),
        ("start 42 0", 22),
        ("start 42 exec 1", 22),
        ("start 9999", 3),
    ] {
        match sys::write_sys("prof_ctl", command) {
            Err(sys::Errno(got)) if got == errno => {}
            other => {
                return Err(format!(
                    "{command:?} gave {other:?}, expected errno {errno}"
                ));
            }
        }
    }
    say!("kprof-selftest: prof_ctl rejects bad commands (EINVAL) and unknown pids (ESRCH)");
    Ok(())
}

/// Never start a session: the tick hook stays on its off path the whole boot.
fn no_session() -> Outcome {
    for _ in 0..ROUNDS_PER_POLL * 64 {
        black_box(work_a(black_box(UNIT)));
        black_box(work_b(black_box(UNIT)));
    }
    match sys::read_sys("prof_data") {
        Err(sys::ENOENT) => {
            say!("kprof-selftest: NO-SESSION done (no sys:prof_data: unpatched kernel)")
        }
        Err(e) => return Err(format!("prof_data: {e}")),
        Ok(bytes) => {
            let s = kprof::decode(&bytes).map_err(|e| format!("decode: {e}"))?;
            if s.state != State::Idle || s.user_ticks != 0 || !s.entries.is_empty() {
                return Err(format!("a session ran: {}", describe(&s)));
            }
            say!("kprof-selftest: NO-SESSION done ({})", describe(&s));
        }
    }
    Ok(())
}

/// Give ourselves a pid through our context's `attrs` (what the process manager would do).
fn set_own_pid(proc_root: usize, me: usize) -> Outcome {
    set_attrs(proc_root, me, SELF_PID, b"kprof-selftest")
}

/// Set the pid and name of the context behind `context` (needs the kernel.proc authority).
fn set_attrs(proc_root: usize, context: usize, pid: usize, name: &[u8]) -> Outcome {
    let attrs =
        sys::dup(context, &format!("auth-{proc_root}-attrs")).map_err(|e| format!("attrs: {e}"))?;
    // ProcSchemeAttrs: pid, euid, egid, prio (u32 each), debug_name [u8; 32].
    let mut raw = [0u8; 48];
    sys::read(attrs, &mut raw).map_err(|e| format!("read attrs: {e}"))?;
    raw[0..4].copy_from_slice(&(pid as u32).to_le_bytes());
    raw[16..48].fill(0);
    raw[16..16 + name.len()].copy_from_slice(name);
    sys::write(attrs, &raw).map_err(|e| format!("write attrs: {e}"))?;
    sys::close(attrs);
    Ok(())
}

/// `CPUs: N` from `sys:cpu`.
fn cpu_count() -> usize {
    let Ok(text) = sys::read_sys("cpu") else {
        return 1;
    };
    let text = String::from_utf8_lossy(&text);
    text.lines()
        .find_map(|line| line.strip_prefix("CPUs:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(1)
}

fn pin_to_cpu(me: usize, cpu: usize) -> Outcome {
    let affinity = sys::dup(me, "sched-affinity").map_err(|e| format!("sched-affinity: {e}"))?;
    let mut mask = [0u64; 2];
    mask[cpu / 64] |= 1 << (cpu % 64);
    let mut raw = [0u8; 16];
    raw[..8].copy_from_slice(&mask[0].to_le_bytes());
    raw[8..].copy_from_slice(&mask[1].to_le_bytes());
    sys::write(affinity, &raw).map_err(|e| format!("write affinity: {e}"))?;
    sys::close(affinity);
    // A running context keeps its CPU; one that blocks and wakes is placed anew.
    for _ in 0..4 {
        sys::sleep_ms(5);
        sys::sched_yield();
    }
    Ok(())
}

/// Our row of `sys:context` (it shows the CPU we run on).
fn context_line() -> String {
    let Ok(text) = sys::read_sys("context") else {
        return String::from("(no sys:context)");
    };
    let text = String::from_utf8_lossy(&text);
    let mut lines = text.lines();
    let header = lines.next().unwrap_or("");
    let ours = lines
        .find(|line| line.split_whitespace().next() == Some("42"))
        .unwrap_or("(not found)");
    let columns = |line: &str| {
        line.split_whitespace()
            .take(5)
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!("[{}] [{}]", columns(header), columns(ours))
}
