//! The session's clock: each context of the profiled process on a CPU, preempted or blocked,
//! from the scheduler's switches, and the wait sites of its blocks (reason, daemon, user
//! stack) with their times; what `sys:prof_clock` shows, exactly.

use std::sync::Arc;

use kprof::{
    ClockSnapshot, HostKernel, KERNEL_SPACE_START, Leaving, MAX_THREADS, Profiler,
    Reason, StackBuf, State, TakenRequest, WAIT_SITE_CAPACITY,
};

const PROGRAM: usize = 42;
const OTHER: usize = 11;
const RAMFS: usize = 7;
const SCHEME_FILE: u64 = 3;
const MAIN: usize = 100;
const WORKER: usize = 101;

fn stack(frames: &[u64]) -> StackBuf {
    let mut s = StackBuf::new();
    s.frames[..frames.len()].copy_from_slice(frames);
    s.len = frames.len();
    s
}

/// A kernel stack at a block: the kernel's frames to the switch, then the user's.
fn blocked_at(user: &[u64]) -> StackBuf {
    let mut frames = vec![KERNEL_SPACE_START + 0x1234, KERNEL_SPACE_START + 0x5678];
    frames.extend_from_slice(user);
    stack(&frames)
}

fn at(now: u64) -> HostKernel {
    HostKernel { now, ..HostKernel::default() }
}

/// A session on PROGRAM started before its exec (as profil launches), the exec at `exec`
/// by its one context MAIN, running.
fn launched(exec: u64) -> Box<Profiler> {
    let p = Box::new(Profiler::new(u64::MAX));
    p.ctl(format!("start {PROGRAM} 64 exec").as_bytes(), &mut at(1)).unwrap();
    p.note_context_begins(PROGRAM, MAIN, true, exec);
    p.note_addr_space_switch(PROGRAM, 0x40_0000, 0x40_1000);
    p
}

fn snapshot(p: &Profiler, now: u64) -> ClockSnapshot {
    p.clock(&mut at(now)).unwrap()
}

fn exit(p: &Profiler, now: u64) {
    p.exited(PROGRAM, &mut HostKernel { exec_base: None, now, ..HostKernel::default() });
}

/// Each thread's on-CPU, preempted and blocked times add up to its life.
fn assert_closes(c: &ClockSnapshot) {
    for t in &c.threads {
        let end = if t.end != 0 { t.end } else { c.at };
        assert_eq!(t.on_cpu + t.preempted + t.blocked, end - t.begin, "{t:?}");
    }
}

#[test]
fn a_block_and_a_preemption_are_timed_from_the_switches() {
    let p = launched(1_000);
    p.note_switch_out(PROGRAM, MAIN, 3_000, Leaving::Blocked(Reason::Sleep), Some(&blocked_at(&[0x40_1100, 0x40_1200])));
    p.note_switch_in(PROGRAM, MAIN, 10_000);
    p.note_switch_out(PROGRAM, MAIN, 12_000, Leaving::Preempted, None);
    p.note_switch_in(PROGRAM, MAIN, 15_000);
    p.note_switch_out(PROGRAM, MAIN, 16_000, Leaving::Exited, None);
    exit(&p, 20_000);

    let c = snapshot(&p, 99_999);
    assert_eq!((c.state, c.pid, c.begin, c.end, c.at), (State::Stopped, PROGRAM as u64, 1_000, 20_000, 20_000));
    assert_eq!(c.threads.len(), 1);
    let t = c.threads[0];
    assert_eq!((t.tid, t.begin, t.end), (MAIN as u64, 1_000, 16_000));
    assert_eq!((t.on_cpu, t.preempted, t.blocked, t.blocks), (2_000 + 2_000 + 1_000, 3_000, 7_000, 1));
    assert_closes(&c);
    assert_eq!(c.sites.len(), 1);
    let s = c.sites[0];
    assert_eq!((s.tid, s.reason, s.scheme, s.count, s.ns), (MAIN as u64, Reason::Sleep, 0, 1, 7_000));
    // The user frames only: the kernel's path to the switch is the reason's.
    assert_eq!(c.frames_of(&s), [0x40_1100, 0x40_1200]);
    assert!(!s.stack.truncated);
}

#[test]
fn reasons_are_the_kernels_block_reasons_and_a_scheme_call_names_its_scheme_and_daemon() {
    for (kernel, reason) in [
        ("UserInner::call", Reason::SchemeCall),
        ("UserInner::call (spurious wakeup)", Reason::SchemeCall),
        ("futex", Reason::Futex),
        ("nanosleep", Reason::Sleep),
        ("PipeRead::read", Reason::PipeRead),
        ("PipeWrite::write", Reason::PipeWrite),
        ("EventQueue::read_with_timeout", Reason::Event),
        ("ptrace::wait", Reason::Other),
        ("", Reason::Other),
    ] {
        assert_eq!(Reason::of(kernel), reason, "{kernel:?}");
        assert_eq!(Reason::from_u8(reason as u8), reason);
    }
    let p = launched(0);
    let read_site = blocked_at(&[0x40_2000, 0x40_3000]);
    p.note_call(PROGRAM, MAIN, SCHEME_FILE, 1);
    p.note_switch_out(PROGRAM, MAIN, 100, Leaving::Blocked(Reason::SchemeCall), Some(&read_site));
    // ramfs takes the request: the scheme's daemon.
    p.note_taken(RAMFS, 0, SCHEME_FILE, TakenRequest { caller: PROGRAM, tag: 1, one_way: false });
    // A request of another process names no daemon.
    p.note_taken(OTHER, 0, 9, TakenRequest { caller: 3, tag: 1, one_way: false });
    // The process manager, a daemon without a pid, takes the program's request on its scheme:
    // it is that scheme's daemon, 0; it cannot be labelled (its answer ends nothing).
    p.note_taken(0, 0, 18, TakenRequest { caller: PROGRAM, tag: 2, one_way: false });
    p.note_request_answered(0, 0, 18, 2);
    assert!(!p.is_serving(0));
    p.note_switch_in(PROGRAM, MAIN, 400);
    // The call is the block's: a futex wait after it names no daemon.
    p.note_switch_out(PROGRAM, MAIN, 500, Leaving::Blocked(Reason::Futex), Some(&read_site));
    p.note_switch_in(PROGRAM, MAIN, 600);
    // Another process's call and switches are not the session's.
    p.note_call(OTHER, 5, SCHEME_FILE, 1);
    p.note_switch_out(OTHER, 5, 650, Leaving::Blocked(Reason::SchemeCall), Some(&read_site));
    p.note_switch_in(OTHER, 5, 690);
    let c = snapshot(&p, 700);
    let mut sites: Vec<_> = c.sites.iter().map(|s| (s.reason, s.scheme, s.count, s.ns)).collect();
    sites.sort_by_key(|s| s.0 as u8);
    assert_eq!(sites, [(Reason::SchemeCall, SCHEME_FILE, 1, 300), (Reason::Futex, 0, 1, 100)]);
    assert_eq!(c.schemes, [(SCHEME_FILE, RAMFS as u64), (18, 0)]);
    assert_eq!(c.threads.len(), 1);
    let text = String::from_utf8(c.to_text().unwrap()).unwrap();
    assert!(text.contains(" tid=100 reason=scheme-call scheme=3 count=1 ns=300 truncated=0 frames=402000,403000\n"), "{text}");
    assert!(text.ends_with("\nscheme id=3 daemon=7\nscheme id=18 daemon=0\n"), "{text}");
}

#[test]
fn blocks_at_one_stack_share_a_site_and_the_walks_cut_is_kept() {
    let p = launched(0);
    let here = blocked_at(&[0x40_1000, 0x40_1500]);
    let mut cut = blocked_at(&[0x40_1000, 0x40_1600]);
    cut.truncated = true;
    let mut now = 10;
    for (i, site) in [&here, &here, &cut, &here].into_iter().enumerate() {
        p.note_switch_out(PROGRAM, MAIN, now, Leaving::Blocked(Reason::PipeRead), Some(site));
        now += 100 * (i as u64 + 1);
        p.note_switch_in(PROGRAM, MAIN, now);
        now += 5;
    }
    let c = snapshot(&p, now);
    let mut sites: Vec<_> = c.sites.iter().map(|s| (c.frames_of(s).to_vec(), s.stack.truncated, s.count, s.ns)).collect();
    sites.sort();
    assert_eq!(
        sites,
        [(vec![0x40_1000, 0x40_1500], false, 3, 100 + 200 + 400), (vec![0x40_1000, 0x40_1600], true, 1, 300)]
    );
    assert_eq!(c.threads[0].blocks, 4);
    assert_eq!(c.threads[0].blocked, 1_000);
    // A block with no user frame (a kernel-only walk) or no walk is timed, with no site.
    p.note_switch_out(PROGRAM, MAIN, now, Leaving::Blocked(Reason::Other), Some(&stack(&[KERNEL_SPACE_START + 8])));
    p.note_switch_in(PROGRAM, MAIN, now + 50);
    p.note_switch_out(PROGRAM, MAIN, now + 60, Leaving::Blocked(Reason::Other), None);
    p.note_switch_in(PROGRAM, MAIN, now + 90);
    let c = snapshot(&p, now + 100);
    assert_eq!((c.threads[0].blocked, c.threads[0].blocks, c.sites_dropped, c.sites.len()), (1_080, 6, 2, 2));
    assert_closes(&c);
}

#[test]
fn full_tables_drop_what_does_not_fit_and_still_time_the_threads() {
    let p = launched(0);
    // One block at each of more sites than the table holds.
    let mut now = 1;
    for i in 0..WAIT_SITE_CAPACITY as u64 + 3 {
        p.note_switch_out(PROGRAM, MAIN, now, Leaving::Blocked(Reason::Futex), Some(&stack(&[0x40_0000 + 16 * i])));
        p.note_switch_in(PROGRAM, MAIN, now + 10);
        now += 20;
    }
    // More threads than records.
    for tid in 0..MAX_THREADS + 2 {
        p.note_context_begins(PROGRAM, 1_000 + tid, false, now);
        p.note_switch_in(PROGRAM, 1_000 + tid, now + 1);
    }
    let c = snapshot(&p, now + 2);
    assert_eq!(c.sites.len(), WAIT_SITE_CAPACITY);
    assert_eq!(c.sites_dropped, 3);
    assert_eq!(c.threads.len(), MAX_THREADS);
    // Each thread past the records was refused twice (its begin, its switch in).
    assert_eq!(c.threads_dropped, 2 * 3);
    let main = c.threads.iter().find(|t| t.tid == MAIN as u64).unwrap();
    assert_eq!((main.blocks, main.blocked), (WAIT_SITE_CAPACITY as u64 + 3, 10 * (WAIT_SITE_CAPACITY as u64 + 3)));
    assert_eq!(c.sites.iter().map(|s| s.ns).sum::<u64>(), 10 * WAIT_SITE_CAPACITY as u64);
    assert_closes(&c);
}

#[test]
fn a_session_ending_mid_block_charges_the_block_to_its_end_and_a_read_while_running_to_then() {
    let p = launched(100);
    p.note_switch_out(PROGRAM, MAIN, 2_000, Leaving::Blocked(Reason::PipeWrite), Some(&stack(&[0x40_1000])));
    // While running: the open block counts up to the read, without being closed by it.
    let c = snapshot(&p, 5_000);
    assert_eq!((c.state, c.end, c.at), (State::Running, 0, 5_000));
    assert_eq!((c.threads[0].blocked, c.threads[0].end, c.sites[0].ns), (3_000, 0, 3_000));
    assert_closes(&c);
    let c = snapshot(&p, 6_000);
    assert_eq!((c.threads[0].blocked, c.sites[0].ns), (4_000, 4_000));
    // `stop` at 9,000 ends the clock: the block lasted to then.
    p.ctl(b"stop", &mut at(9_000)).unwrap();
    let c = snapshot(&p, 50_000);
    assert_eq!((c.state, c.end, c.at), (State::Stopped, 9_000, 9_000));
    let t = c.threads[0];
    assert_eq!((t.begin, t.end, t.on_cpu, t.blocked), (100, 9_000, 1_900, 7_000));
    assert_eq!(c.sites[0].ns, 7_000);
    assert_closes(&c);
    // Switches after the end are not counted.
    p.note_switch_in(PROGRAM, MAIN, 10_000);
    assert_eq!(snapshot(&p, 60_000), c);
}

#[test]
fn threads_each_have_their_account_and_a_new_one_begins_when_created() {
    let p = launched(0);
    p.note_switch_out(PROGRAM, MAIN, 1_000, Leaving::Preempted, None);
    // MAIN creates WORKER (given the address space at 1,500, not started), which runs at 2,000.
    p.note_context_begins(PROGRAM, WORKER, false, 1_500);
    p.note_addr_space_switch(PROGRAM, 0x40_0000, 0x40_5000);
    p.note_switch_in(PROGRAM, WORKER, 2_000);
    p.note_switch_out(PROGRAM, WORKER, 2_500, Leaving::Blocked(Reason::Futex), Some(&stack(&[0x40_5010])));
    p.note_switch_in(PROGRAM, MAIN, 2_500);
    p.note_switch_out(PROGRAM, MAIN, 3_000, Leaving::Blocked(Reason::Futex), Some(&stack(&[0x40_1010])));
    p.note_switch_in(PROGRAM, WORKER, 3_200);
    p.note_switch_out(PROGRAM, WORKER, 3_300, Leaving::Exited, None);
    p.note_switch_in(PROGRAM, MAIN, 3_400);
    let c = snapshot(&p, 4_000);
    assert_closes(&c);
    let by = |tid: usize| *c.threads.iter().find(|t| t.tid == tid as u64).unwrap();
    let main = by(MAIN);
    assert_eq!((main.begin, main.end, main.on_cpu, main.preempted, main.blocked), (0, 0, 1_000 + 500 + 600, 1_500, 400));
    let worker = by(WORKER);
    assert_eq!((worker.begin, worker.end, worker.on_cpu, worker.preempted, worker.blocked), (1_500, 3_300, 500 + 100, 500, 700));
    // Each thread's sites are its own.
    assert!(c.sites.iter().all(|s| c.frames_of(s)[0] == if s.tid == MAIN as u64 { 0x40_1010 } else { 0x40_5010 }));
}

#[test]
fn an_attached_session_begins_at_start_and_takes_running_and_blocked_threads_as_they_come() {
    let p = Box::new(Profiler::new(u64::MAX));
    // Before the exec of a launched session nothing counts: here, an attach at 1,000.
    p.ctl(format!("start {PROGRAM} 64").as_bytes(), &mut at(1_000)).unwrap();
    // MAIN was on a CPU: on it from the start. WORKER was blocked: off it from the start, its
    // block not seen (no site).
    p.note_switch_out(PROGRAM, MAIN, 1_300, Leaving::Preempted, None);
    p.note_switch_in(PROGRAM, WORKER, 1_300);
    let c = snapshot(&p, 2_000);
    assert_eq!(c.begin, 1_000);
    let by = |tid: usize| *c.threads.iter().find(|t| t.tid == tid as u64).unwrap();
    assert_eq!((by(MAIN).on_cpu, by(MAIN).preempted), (300, 700));
    assert_eq!((by(WORKER).blocked, by(WORKER).on_cpu, by(WORKER).blocks), (300, 700, 0));
    assert!(c.sites.is_empty());
    assert_closes(&c);
}

#[test]
fn a_launched_session_counts_nothing_before_the_exec() {
    let p = Box::new(Profiler::new(u64::MAX));
    p.ctl(format!("start {PROGRAM} 64 exec").as_bytes(), &mut at(1)).unwrap();
    // The launcher's child waits for its go, then execs.
    p.note_switch_out(PROGRAM, MAIN, 10, Leaving::Blocked(Reason::PipeRead), Some(&stack(&[0x9000])));
    p.note_switch_in(PROGRAM, MAIN, 50);
    assert!(!p.clocks(PROGRAM));
    p.note_context_begins(PROGRAM, MAIN, true, 60);
    p.note_addr_space_switch(PROGRAM, 0x40_0000, 0x40_1000);
    assert!(p.clocks(PROGRAM) && !p.clocks(OTHER));
    let c = snapshot(&p, 100);
    assert_eq!(c.begin, 60);
    assert_eq!((c.threads[0].begin, c.threads[0].on_cpu, c.threads[0].blocked, c.threads[0].blocks), (60, 40, 0, 0));
    assert!(c.sites.is_empty());
    // A new session forgets the last one's clock.
    p.ctl(b"stop", &mut at(200)).unwrap();
    p.ctl(format!("start {PROGRAM} 64").as_bytes(), &mut at(300)).unwrap();
    let c = snapshot(&p, 400);
    assert_eq!((c.begin, c.end, c.threads.len(), c.sites.len()), (300, 0, 0, 0));
}

#[test]
fn concurrent_cpus_keep_every_threads_account_exact() {
    let p: Arc<Profiler> = Arc::new(Profiler::new(u64::MAX));
    p.ctl(format!("start {PROGRAM} 64").as_bytes(), &mut at(1)).unwrap();
    const ROUNDS: u64 = 20_000;
    let cpus: Vec<_> = (0..8usize)
        .map(|cpu| {
            let p = Arc::clone(&p);
            std::thread::spawn(move || {
                // Each CPU runs one thread of the program, blocking at sites shared by all.
                let tid = 200 + cpu;
                let mut now = 1;
                for round in 0..ROUNDS {
                    let site = stack(&[0x40_1000 + 16 * (round % 5), 0x40_2000]);
                    now += 3;
                    p.note_switch_out(PROGRAM, tid, now, Leaving::Blocked(Reason::Futex), Some(&site));
                    now += 7;
                    p.note_switch_in(PROGRAM, tid, now);
                }
                // Another process's switches on the same CPU meanwhile change nothing.
                p.note_switch_out(OTHER, tid, now, Leaving::Preempted, None);
            })
        })
        .collect();
    for cpu in cpus {
        cpu.join().unwrap();
    }
    let c = p.clock(&mut at(ROUNDS * 10 + 1)).unwrap();
    assert_eq!(c.threads.len(), 8);
    for t in &c.threads {
        assert_eq!((t.blocks, t.blocked, t.on_cpu), (ROUNDS, 7 * ROUNDS, 3 * ROUNDS), "{t:?}");
    }
    assert_closes(&c);
    // Five stacks a thread, each with a fifth of its blocks.
    assert_eq!(c.sites.len(), 8 * 5);
    assert!(c.sites.iter().all(|s| s.count == ROUNDS / 5 && s.ns == 7 * ROUNDS / 5));
}

#[test]
fn sys_prof_clock_text_is_exact() {
    let p = launched(1_000);
    p.note_call(PROGRAM, MAIN, SCHEME_FILE, 5);
    p.note_taken(RAMFS, 0, SCHEME_FILE, TakenRequest { caller: PROGRAM, tag: 5, one_way: false });
    let mut read = blocked_at(&[0x40_1100, 0x40_1200]);
    read.truncated = true;
    p.note_switch_out(PROGRAM, MAIN, 3_000, Leaving::Blocked(Reason::SchemeCall), Some(&read));
    // ramfs works on the read: one sample.
    p.note_switch(0, RAMFS);
    p.sample_stack(0, true, 0x7000, Some(&stack(&[0x7000, 0x7100])));
    p.note_switch_in(PROGRAM, MAIN, 10_000);
    p.note_switch_out(PROGRAM, MAIN, 16_000, Leaving::Exited, None);
    exit(&p, 20_000);
    let c = snapshot(&p, 0);
    let site = c.sites[0].id;
    let text = String::from_utf8(c.to_text().unwrap()).unwrap();
    assert_eq!(
        text,
        format!(
            "clock version=1 state=stopped pid=42 begin=1000 end=20000 at=20000 threads_dropped=0 sites_dropped=0 served_dropped=0\n\
             thread tid=100 begin=1000 end=16000 on_cpu=8000 preempted=0 blocked=7000 blocks=1\n\
             site id={site} tid=100 reason=scheme-call scheme=3 count=1 ns=7000 truncated=1 frames=401100,401200\n\
             scheme id=3 daemon=7\n\
             served site={site} daemon=7 count=1 truncated=0 frames=7000,7100\n"
        )
    );
}

#[test]
fn a_clock_that_steps_back_is_never_counted_twice() {
    // The kernel's monotonic time can read a little earlier than a switch before it (a late
    // timer interrupt): the account still adds up to the thread's life.
    let p = launched(1_000);
    p.note_switch_out(PROGRAM, MAIN, 5_000, Leaving::Blocked(Reason::Futex), Some(&stack(&[0x40_1000])));
    p.note_switch_in(PROGRAM, MAIN, 4_600);
    p.note_switch_out(PROGRAM, MAIN, 6_000, Leaving::Preempted, None);
    p.note_switch_in(PROGRAM, MAIN, 7_000);
    let c = snapshot(&p, 8_000);
    let t = c.threads[0];
    assert_eq!((t.on_cpu, t.blocked, t.preempted), (4_000 + 1_000 + 1_000, 0, 1_000));
    assert_closes(&c);
}

#[test]
fn a_daemons_samples_while_it_serves_a_blocked_call_are_stitched_under_its_site() {
    const DISK: usize = 9;
    const SCHEME_DISK: u64 = 5;
    let p = launched(0);
    let daemon_tick = |pid: usize, frames: &[u64]| {
        p.note_switch(0, pid);
        p.sample_stack(0, true, frames[0], Some(&stack(frames)));
    };
    // MAIN reads a file: request 1 of the file scheme, served by ramfs, which asks the disk
    // driver (its request 9 of the disk scheme).
    p.note_call(PROGRAM, MAIN, SCHEME_FILE, 1);
    p.note_switch_out(PROGRAM, MAIN, 100, Leaving::Blocked(Reason::SchemeCall), Some(&stack(&[0x40_1100, 0x40_1005])));
    p.note_taken(RAMFS, 0, SCHEME_FILE, TakenRequest { caller: PROGRAM, tag: 1, one_way: false });
    daemon_tick(RAMFS, &[0x7000, 0x7100]);
    daemon_tick(RAMFS, &[0x7000, 0x7100]);
    p.note_taken(DISK, 0, SCHEME_DISK, TakenRequest { caller: RAMFS, tag: 9, one_way: false });
    daemon_tick(DISK, &[0x9000]);
    // ramfs takes another process's request meanwhile: it works for the program no more.
    p.note_taken(RAMFS, 0, SCHEME_FILE, TakenRequest { caller: OTHER, tag: 2, one_way: false });
    daemon_tick(RAMFS, &[0x7200]);
    p.note_switch_in(PROGRAM, MAIN, 500);
    // The disk driver still works for ramfs after the read returned: a server sample, under
    // no wait.
    daemon_tick(DISK, &[0x9000]);
    let c = snapshot(&p, 600);
    assert_eq!(c.sites.len(), 1);
    let site = c.sites[0].id;
    let mut served: Vec<(u64, u64, u64, Vec<u64>)> =
        c.served.iter().map(|s| (s.site, s.daemon, s.stack.count, c.stack_frames(&s.stack).to_vec())).collect();
    served.sort();
    assert_eq!(served, [(site, RAMFS as u64, 2, vec![0x7000, 0x7100]), (site, DISK as u64, 1, vec![0x9000])]);
    assert_eq!(c.served_dropped, 0);
    // The stitched samples are server samples of prof_data too (ramfs's two, the disk's two).
    let data = p.snapshot().unwrap();
    assert_eq!((data.server_user_ticks, data.other_ticks), (4, 1));
}
