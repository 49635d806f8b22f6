//! The prof table and session rules, driven the way the kernel drives them: `note_switch` from
//! the scheduler, `sample` from the timer tick on each CPU, control calls from `sys:prof_ctl`.

use kprof::{
    CountFrom, CtlError, Entry, HostKernel, MAX_CAPACITY, MAX_RATE, MIN_RATE, ParseError, Profiler, Sampling, Source,
    State, StopReason,
};
use std::sync::Arc;

const PID: usize = 42;

fn running(limit: u64, capacity: usize) -> Profiler {
    let p = Profiler::new(limit);
    p.start(PID, capacity, CountFrom::Now).unwrap();
    p.note_switch(0, PID);
    p
}

fn counts(p: &Profiler) -> Vec<(u64, u64)> {
    p.snapshot()
        .unwrap()
        .entries
        .iter()
        .map(|e| (e.addr, e.count))
        .collect()
}

#[test]
fn idle_profiler_is_off_and_counts_nothing() {
    let p = Profiler::new(u64::MAX);
    assert!(!p.is_on());
    assert_eq!(p.status(), (State::Idle, None));
    p.note_switch(0, PID);
    p.sample(0, true, 0x1000);
    let s = p.snapshot().unwrap();
    assert_eq!((s.user_ticks, s.kernel_ticks, s.entries.len()), (0, 0, 0));
    assert_eq!(s.capacity, 0);
}

#[test]
fn counts_exact_pcs() {
    let p = running(u64::MAX, 64);
    assert!(p.is_on());
    for pc in [0x1000, 0x1004, 0x1000, 0x2000, 0x1000] {
        p.sample(0, true, pc);
    }
    assert_eq!(counts(&p), vec![(0x1000, 3), (0x1004, 1), (0x2000, 1)]);
    let s = p.snapshot().unwrap();
    assert_eq!((s.user_ticks, s.kernel_ticks, s.dropped), (5, 0, 0));
    assert_eq!(
        (s.state, s.pid, s.capacity),
        (State::Running, PID as u64, 64)
    );
}

#[test]
fn address_zero_is_a_pc_like_any_other() {
    let p = running(u64::MAX, 4);
    p.sample(0, true, 0);
    p.sample(0, true, 0);
    assert_eq!(counts(&p), vec![(0, 2)]);
}

#[test]
fn kernel_mode_ticks_go_to_the_kernel_counter_and_the_table() {
    let p = running(u64::MAX, 4);
    p.sample(0, false, 0xffff_ffff_8000_1234);
    p.sample(0, false, 0xffff_ffff_8000_1234);
    p.sample(0, true, 0x1000);
    let s = p.snapshot().unwrap();
    assert_eq!((s.user_ticks, s.kernel_ticks), (1, 2));
    assert_eq!(
        s.entries,
        vec![
            Entry {
                addr: 0x1000,
                count: 1
            },
            Entry {
                addr: 0xffff_ffff_8000_1234,
                count: 2
            }
        ]
    );
}

#[test]
fn only_the_sessions_source_counts() {
    let p = Profiler::new(u64::MAX);
    let nmi = Sampling { source: Source::NmiHpet, rate: 4000 };
    p.start_sampling(PID, 16, CountFrom::Now, nmi).unwrap();
    p.note_switch(1, PID);
    assert!(p.takes(Source::NmiHpet) && !p.takes(Source::Timer));
    // The timer still ticks (it drives the scheduler); its ticks are not this session's.
    p.sample(1, true, 0x1000);
    p.sample_stack(1, false, 0xffff_8000_0000_2000, None);
    p.sample_from(Source::NmiHpet, 1, true, 0x1000, None);
    p.sample_from(Source::NmiHpet, 1, false, 0xffff_8000_0000_2000, None);
    p.sample_from(Source::NmiHpet, 1, false, 0xffff_8000_0000_2000, None);
    let s = p.snapshot().unwrap();
    assert_eq!((s.source, s.rate), (Source::NmiHpet, 4000));
    assert_eq!((s.user_ticks, s.kernel_ticks), (1, 2));
    assert_eq!(counts(&p), vec![(0x1000, 1), (0xffff_8000_0000_2000, 2)]);
    assert_eq!(p.sampling(), nmi);
    // A timer session after it ignores NMIs, and says so.
    p.stop();
    p.start(PID, 16, CountFrom::Now).unwrap();
    p.sample_from(Source::NmiHpet, 1, true, 0x1000, None);
    p.sample(1, true, 0x2000);
    let s = p.snapshot().unwrap();
    assert_eq!((s.source, s.rate, s.user_ticks), (Source::Timer, 0, 1));
    assert!(p.takes(Source::Timer) && !p.takes(Source::NmiHpet));
    p.stop();
    assert!(!p.takes(Source::Timer) && !p.takes(Source::NmiHpet));
}

#[test]
fn an_nmi_rate_out_of_range_is_refused() {
    let p = Profiler::new(u64::MAX);
    for rate in [0, MIN_RATE as u64 - 1, MAX_RATE as u64 + 1] {
        let sampling = Sampling { source: Source::NmiHpet, rate };
        assert_eq!(p.start_sampling(PID, 16, CountFrom::Now, sampling), Err(CtlError::Malformed(ParseError::BadRate)));
    }
    assert_eq!(p.state(), State::Idle);
    // The timer's rate is what the timer gives: not checked.
    let timer = Sampling { source: Source::Timer, rate: 246 };
    assert_eq!(p.start_sampling(PID, 16, CountFrom::Now, timer), Ok(()));
}

#[test]
fn only_the_profiled_pid_counts_and_pid_zero_never_matches() {
    let p = Profiler::new(u64::MAX);
    assert_eq!(p.start(0, 16, CountFrom::Now), Err(CtlError::Malformed(ParseError::ZeroPid)));
    p.start(PID, 16, CountFrom::Now).unwrap();
    p.note_switch(0, 7); // another process
    p.note_switch(1, 0); // idle / kernel thread
    p.sample(0, true, 0x1000);
    p.sample(1, true, 0x1000);
    p.sample(1, false, 0x1000);
    p.sample(999, true, 0x1000); // no such CPU
    p.note_switch(1, PID);
    p.sample(1, true, 0x2000);
    let s = p.snapshot().unwrap();
    assert_eq!((s.user_ticks, s.kernel_ticks), (1, 0));
    assert_eq!(
        s.entries,
        vec![Entry {
            addr: 0x2000,
            count: 1
        }]
    );
}

#[test]
fn a_full_table_drops_and_says_so() {
    let p = running(u64::MAX, 3);
    for pc in [0x10, 0x20, 0x30, 0x40, 0x50, 0x10] {
        p.sample(0, true, pc);
    }
    let s = p.snapshot().unwrap();
    assert_eq!(s.entries.len(), 3);
    assert_eq!(s.dropped, 2);
    assert_eq!(s.user_ticks, 6);
    assert_eq!(
        s.entries.iter().map(|e| e.count).sum::<u64>() + s.dropped,
        s.user_ticks
    );
    assert_eq!(
        s.entries[0],
        Entry {
            addr: 0x10,
            count: 2
        }
    );
}

#[test]
fn a_counter_at_its_limit_stops_the_session_and_the_tick_is_not_counted() {
    let p = running(3, 16);
    for _ in 0..3 {
        p.sample(0, true, 0x1000);
    }
    assert_eq!(p.state(), State::Running);
    p.sample(0, true, 0x1000); // would make 4
    assert_eq!(p.status(), (State::Stopped, Some(StopReason::Overflow)));
    assert!(!p.is_on());
    p.sample(0, true, 0x1000);
    let s = p.snapshot().unwrap();
    assert_eq!((s.user_ticks, s.stop_reason), (3, Some(StopReason::Overflow)));
    assert_eq!(
        s.entries,
        vec![Entry {
            addr: 0x1000,
            count: 3
        }]
    );
}

#[test]
fn kernel_tick_overflow_stops_too() {
    let p = running(2, 16);
    for _ in 0..5 {
        p.sample(0, false, 0);
    }
    let s = p.snapshot().unwrap();
    assert_eq!(
        (s.kernel_ticks, s.state, s.stop_reason),
        (2, State::Stopped, Some(StopReason::Overflow))
    );
}

#[test]
fn dropped_counter_overflow_stops_too() {
    let p = running(4, 1);
    p.sample(0, true, 0x10);
    p.sample(0, true, 0x20); // dropped 1
    p.sample(0, true, 0x30); // dropped 2
    p.sample(0, true, 0x40); // dropped 3
    assert_eq!(p.state(), State::Running);
    p.sample(0, true, 0x50); // user_ticks would be 5
    let s = p.snapshot().unwrap();
    assert_eq!(
        (s.user_ticks, s.dropped, s.stop_reason),
        (4, 3, Some(StopReason::Overflow))
    );
}

#[test]
fn stop_request_keeps_the_data_until_the_next_start() {
    let p = running(u64::MAX, 16);
    p.sample(0, true, 0x1000);
    assert!(p.stop());
    assert!(!p.stop(), "stopping twice is harmless");
    assert_eq!(p.status(), (State::Stopped, Some(StopReason::Request)));
    p.sample(0, true, 0x1000);
    assert_eq!(counts(&p), vec![(0x1000, 1)]);
    // The first stop reason sticks.
    assert!(!p.process_exited(PID));
    assert_eq!(p.status().1, Some(StopReason::Request));

    p.start(PID, 8, CountFrom::Now).unwrap();
    let s = p.snapshot().unwrap();
    assert_eq!(
        (s.state, s.user_ticks, s.entries.len(), s.capacity),
        (State::Running, 0, 0, 8)
    );
}

#[test]
fn exit_of_the_profiled_process_ends_the_session() {
    let p = running(u64::MAX, 16);
    assert!(!p.process_exited(7), "another process");
    assert!(!p.process_exited(0));
    assert_eq!(p.state(), State::Running);
    assert!(p.process_exited(PID));
    assert_eq!(p.status(), (State::Stopped, Some(StopReason::Exit)));
    assert!(!p.is_on());
}

#[test]
fn one_session_at_a_time_and_capacity_is_bounded() {
    let p = running(u64::MAX, 16);
    assert_eq!(p.start(PID + 1, 16, CountFrom::Now), Err(CtlError::Busy));
    p.stop();
    assert_eq!(
        p.start(PID, 0, CountFrom::Now),
        Err(CtlError::Malformed(ParseError::BadCapacity))
    );
    assert_eq!(
        p.start(PID, MAX_CAPACITY + 1, CountFrom::Now),
        Err(CtlError::Malformed(ParseError::BadCapacity))
    );
    p.start(PID, MAX_CAPACITY, CountFrom::Now).unwrap();
}

#[test]
fn exec_base_is_recorded_for_the_profiled_pid_only() {
    let p = Profiler::new(u64::MAX);
    let mut kernel = HostKernel { exec_base: Some(0x1000), ..HostKernel::default() };
    p.ctl(b"start 42 16", &mut kernel).unwrap();
    p.note_addr_space_switch(7, 0xdead_0000, 0xdead_0100);
    let s = p.snapshot().unwrap();
    assert_eq!((s.exec_base, s.addr_space_switches), (0x1000, 0));
    p.note_addr_space_switch(PID, 0x5555_0000_1000, 0x5555_0000_1040);
    let s = p.snapshot().unwrap();
    assert_eq!((s.exec_base, s.addr_space_switches), (0x5555_0000_1000, 1));
    assert_eq!(s.image_load_base(0x1000), Some(0x5555_0000_0000));
}

#[test]
fn a_session_started_for_exec_counts_only_after_the_exec() {
    let p = Profiler::new(u64::MAX);
    p.start(PID, 16, CountFrom::Exec).unwrap();
    p.note_switch(0, PID);
    assert!(p.is_on() && !p.wants_stack(0), "nothing counted, no walk, before the exec");
    // The launcher's exec code runs as the profiled pid: user and kernel ticks not counted.
    p.sample(0, true, 0x40_1000);
    p.sample(0, false, 0xffff_8000_0000_1000);
    // Another process's exec does not arm it.
    p.note_addr_space_switch(7, 0x40_0000, 0x40_1000);
    p.sample(0, true, 0x40_1000);
    let s = p.snapshot().unwrap();
    assert_eq!(
        (s.state, s.user_ticks, s.kernel_ticks, s.entries.len()),
        (State::Running, 0, 0, 0)
    );
    p.note_addr_space_switch(PID, 0x40_0000, 0x40_1000);
    assert!(p.wants_stack(0));
    p.sample(0, true, 0x40_2000);
    p.sample(0, false, 0xffff_8000_0000_1000);
    let s = p.snapshot().unwrap();
    assert_eq!(
        (
            s.user_ticks,
            s.kernel_ticks,
            s.addr_space_switches,
            s.exec_base
        ),
        (1, 1, 1, 0x40_0000)
    );
    assert_eq!(counts(&p), vec![(0x40_2000, 1), (0xffff_8000_0000_1000, 1)]);
}

#[test]
fn a_session_waiting_for_exec_ends_with_its_process_or_a_stop() {
    let p = Profiler::new(u64::MAX);
    p.start(PID, 16, CountFrom::Exec).unwrap();
    // The child could not exec and exits: the session ends, empty, with reason exit.
    assert!(p.process_exited(PID));
    assert_eq!(p.status(), (State::Stopped, Some(StopReason::Exit)));
    assert!(!p.is_on());
    p.start(PID, 16, CountFrom::Exec).unwrap();
    assert!(p.stop());
    assert_eq!(p.status(), (State::Stopped, Some(StopReason::Request)));
    // A later session started now counts at once: the flag does not leak into it.
    p.start(PID, 16, CountFrom::Now).unwrap();
    p.note_switch(0, PID);
    p.sample(0, true, 0x1000);
    assert_eq!(counts(&p), vec![(0x1000, 1)]);
}

#[test]
fn threads_on_many_cpus_sum_exactly() {
    const THREADS: usize = 8;
    const PER_THREAD: u64 = 64 * 300;
    let p = Arc::new(Profiler::new(u64::MAX));
    p.start(PID, 1024, CountFrom::Now).unwrap();
    let workers: Vec<_> = (0..THREADS)
        .map(|cpu| {
            let p = Arc::clone(&p);
            std::thread::spawn(move || {
                p.note_switch(cpu, PID);
                for i in 0..PER_THREAD {
                    // 64 shared PCs, raced for by every thread, plus one private PC each.
                    p.sample(cpu, true, 0x40_0000 + (i % 64) * 4);
                    p.sample(cpu, true, 0x50_0000 + cpu as u64);
                    p.sample(cpu, false, 0xffff_8000_0000_0000 + cpu as u64);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    p.stop();
    let s = p.snapshot().unwrap();
    assert_eq!(s.user_ticks, 2 * THREADS as u64 * PER_THREAD);
    assert_eq!(s.kernel_ticks, THREADS as u64 * PER_THREAD);
    assert_eq!(s.dropped, 0);
    assert_eq!(s.entries.len(), 64 + 2 * THREADS);
    assert_eq!(s.entries.iter().map(|e| e.count).sum::<u64>(), s.user_ticks + s.kernel_ticks);
    for e in &s.entries {
        let expected = if e.addr < 0x50_0000 {
            THREADS as u64 * PER_THREAD / 64
        } else {
            PER_THREAD
        };
        assert_eq!(e.count, expected, "{:#x}", e.addr);
    }
}

#[test]
fn threads_racing_for_a_small_table_never_lose_a_tick() {
    let p = Arc::new(Profiler::new(u64::MAX));
    p.start(PID, 16, CountFrom::Now).unwrap();
    let workers: Vec<_> = (0..4)
        .map(|cpu| {
            let p = Arc::clone(&p);
            std::thread::spawn(move || {
                p.note_switch(cpu, PID);
                for i in 0..10_000u64 {
                    p.sample(cpu, true, i % 40);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    p.stop();
    let s = p.snapshot().unwrap();
    assert_eq!(s.entries.len(), 16);
    assert_eq!(s.user_ticks, 40_000);
    assert_eq!(
        s.entries.iter().map(|e| e.count).sum::<u64>() + s.dropped,
        40_000
    );
}

#[test]
fn a_stop_racing_with_samplers_leaves_consistent_final_numbers() {
    let p = Arc::new(Profiler::new(u64::MAX));
    p.start(PID, 256, CountFrom::Now).unwrap();
    let workers: Vec<_> = (0..4)
        .map(|cpu| {
            let p = Arc::clone(&p);
            std::thread::spawn(move || {
                p.note_switch(cpu, PID);
                for i in 0..50_000u64 {
                    p.sample(cpu, true, i % 300);
                }
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(1));
    p.stop();
    let s = p.snapshot().unwrap();
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(s, p.snapshot().unwrap(), "nothing counted after stop");
    assert_eq!(
        s.entries.iter().map(|e| e.count).sum::<u64>() + s.dropped,
        s.user_ticks
    );
}

/// A context switch on a CPU, as the scheduler reports it: begin (the next context chosen,
/// still on the previous one's stack), to (on the next one's stack), end (its address space
/// too). An NMI anywhere in the switch counts for the context whose stack the CPU is on, and
/// takes no stack walk, since the stack, the TSS and the address space change under it; the
/// old hook named the next pid before the switch, so the switch's tail was counted as the
/// next context's.
#[test]
fn samples_in_a_context_switch_belong_to_the_stack_the_cpu_is_on() {
    const OTHER: usize = 7;
    let p = Profiler::new(u64::MAX);
    p.start_sampling(PID, 16, CountFrom::Now, Sampling { source: Source::NmiHpet, rate: 1000 }).unwrap();
    let nmi = |pc| p.sample_from(Source::NmiHpet, 0, false, pc, None);
    p.note_switch(0, PID);
    assert!(p.wants_stack(0));
    // The program's CPU switches to another process: the switch's tail is still the program's.
    p.note_switch_begin(0);
    assert!(!p.wants_stack(0), "no walk in a switch");
    nmi(0xffff_ffff_8000_1000);
    p.note_switch_to(0, OTHER, 2);
    assert!(!p.wants_stack(0));
    nmi(0xffff_ffff_8000_2000);
    p.note_switch_end(0);
    assert!(!p.wants_stack(0), "another process");
    nmi(0xffff_ffff_8000_2000);
    // And back: the other process's tail is its own, the program's from its own stack on.
    p.note_switch_begin(0);
    nmi(0xffff_ffff_8000_1000);
    p.note_switch_to(0, PID, 1);
    nmi(0xffff_ffff_8000_3000);
    assert!(!p.wants_stack(0), "not until the program's address space is the CPU's");
    p.note_switch_end(0);
    assert!(p.wants_stack(0));
    nmi(0xffff_ffff_8000_4000);
    let s = p.snapshot().unwrap();
    assert_eq!((s.kernel_ticks, s.other_ticks), (3, 3));
    assert_eq!(counts(&p), vec![(0xffff_ffff_8000_1000, 1), (0xffff_ffff_8000_3000, 1), (0xffff_ffff_8000_4000, 1)]);
    // Another CPU's switch leaves this one alone.
    p.note_switch_begin(1);
    assert!(p.wants_stack(0));
}
