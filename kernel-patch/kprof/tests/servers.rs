//! Server labels and the account of every tick: a daemon that takes a request of the profiled
//! process works for the session until it has answered it (the tick after the answer is the
//! label's last: a tick during the answering call is delivered as it returns); its ticks are
//! server samples, apart from the program's own; idle and other processes' ticks are counted.

use kprof::{
    CountFrom, MAX_SERVERS, Profiler, SERVER_STACK_CAPACITY, ServerStack, StackBuf, StackEntry,
    TakenRequest,
};

mod common;

const PROGRAM: usize = 42;
const RAMFS: usize = 7;
const DISK: usize = 9;
const OTHER: usize = 11;
const SCHEME_FILE: u64 = 3;
const SCHEME_DISK: u64 = 5;

fn running() -> Profiler {
    let p = Profiler::new(u64::MAX);
    p.start(PROGRAM, 64, CountFrom::Now).unwrap();
    p
}

fn stack(frames: &[u64]) -> StackBuf {
    let mut s = StackBuf::new();
    s.frames[..frames.len()].copy_from_slice(frames);
    s.len = frames.len();
    s
}

/// A user tick of `pid` on CPU 0, with its walked stack.
fn tick(p: &Profiler, pid: usize, frames: &[u64]) {
    p.note_switch(0, pid);
    p.sample_stack(0, true, frames[0], Some(&stack(frames)));
}

/// `server` answers (`scheme`, `tag`), and the tick after the answer comes.
fn answer_and_tick(p: &Profiler, server: usize, scheme: u64, tag: u64) {
    p.note_request_answered(server, 0, scheme, tag);
    tick(p, server, &[0x40_5000]);
}

#[test]
fn a_daemon_works_for_the_session_from_taking_its_request_to_answering_it() {
    let p = running();
    assert!(!p.is_serving(RAMFS));
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 1);
    assert!(p.is_serving(RAMFS));
    // Answering another request (same tag on another scheme, another tag) changes nothing.
    answer_and_tick(&p, RAMFS, SCHEME_DISK, 1);
    answer_and_tick(&p, RAMFS, SCHEME_FILE, 2);
    assert!(p.is_serving(RAMFS));
    // Its answer: the next tick in it is the label's last, and still the session's.
    p.note_request_answered(RAMFS, 0, SCHEME_FILE, 1);
    assert!(p.is_serving(RAMFS));
    tick(&p, RAMFS, &[0x40_5010]);
    assert!(!p.is_serving(RAMFS));
    tick(&p, RAMFS, &[0x40_5020]);
    let s = p.snapshot().unwrap();
    assert_eq!((s.server_user_ticks, s.other_ticks), (3, 1));
    // A request from anyone else labels nothing and ends a label.
    p.note_request_taken(RAMFS, 0, OTHER, SCHEME_FILE, 3);
    assert!(!p.is_serving(RAMFS));
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 4);
    p.note_request_taken(RAMFS, 0, OTHER, SCHEME_FILE, 5);
    assert!(!p.is_serving(RAMFS));
    // Answered, then a new request of ours before any tick: working for us again, in full.
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 7);
    p.note_request_answered(RAMFS, 0, SCHEME_FILE, 7);
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 8);
    tick(&p, RAMFS, &[0x40_5010]);
    tick(&p, RAMFS, &[0x40_5010]);
    assert!(p.is_serving(RAMFS));
    // Kernel requests (caller 0) are nobody's.
    p.note_request_taken(RAMFS, 0, 0, SCHEME_FILE, 6);
    assert!(!p.is_serving(RAMFS));
}

/// Threads of the program share its pid: a request of any of them labels the daemon, and the
/// ticks of all of them, on any CPU, are the program's own.
#[test]
fn every_thread_of_the_program_is_the_program() {
    let p = running();
    p.note_switch(0, PROGRAM);
    p.note_switch(1, PROGRAM);
    p.sample(0, true, 0x40_1010);
    p.sample(1, true, 0x40_1020);
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 1);
    p.note_request_taken(DISK, 0, PROGRAM, SCHEME_DISK, 1);
    assert!(p.is_serving(RAMFS) && p.is_serving(DISK));
    let s = p.snapshot().unwrap();
    assert_eq!((s.user_ticks, s.entries.len(), s.other_ticks), (2, 2, 0));
}

#[test]
fn chains_of_daemons_are_followed() {
    let p = running();
    // program -> ramfs -> disk driver
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 1);
    p.note_request_taken(DISK, 0, RAMFS, SCHEME_DISK, 1);
    assert!(p.is_serving(RAMFS) && p.is_serving(DISK));
    // The driver answers first, then ramfs.
    answer_and_tick(&p, DISK, SCHEME_DISK, 1);
    assert!(p.is_serving(RAMFS) && !p.is_serving(DISK));
    answer_and_tick(&p, RAMFS, SCHEME_FILE, 1);
    assert!(!p.is_serving(RAMFS));
    // A request of ramfs's own (not for the session) labels nobody down the chain.
    p.note_request_taken(DISK, 0, RAMFS, SCHEME_DISK, 2);
    assert!(!p.is_serving(DISK));
}

#[test]
fn a_daemon_that_takes_several_requests_is_labelled_by_the_last() {
    let p = running();
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 1);
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 2);
    // Answering the earlier one leaves the label of the later one.
    answer_and_tick(&p, RAMFS, SCHEME_FILE, 1);
    assert!(p.is_serving(RAMFS));
    answer_and_tick(&p, RAMFS, SCHEME_FILE, 2);
    assert!(!p.is_serving(RAMFS));
    // Ours, then someone else's: working for them now.
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 3);
    p.note_request_taken(RAMFS, 0, OTHER, SCHEME_FILE, 4);
    assert!(!p.is_serving(RAMFS));
}

#[test]
fn the_profiled_process_is_never_its_own_server_and_labels_end_with_the_session() {
    let p = running();
    p.note_request_taken(PROGRAM, 0, PROGRAM, SCHEME_FILE, 1);
    assert!(!p.is_serving(PROGRAM));
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 1);
    p.stop();
    // Off: nothing labels, nothing is serving.
    assert!(!p.is_serving(RAMFS));
    p.note_request_taken(DISK, 0, PROGRAM, SCHEME_DISK, 1);
    // The next session starts with none.
    p.start(PROGRAM, 64, CountFrom::Now).unwrap();
    assert!(!p.is_serving(RAMFS) && !p.is_serving(DISK));
}

#[test]
fn at_most_max_servers_daemons_are_labelled_at_once() {
    let p = running();
    for server in 100..100 + MAX_SERVERS {
        p.note_request_taken(server, 0, PROGRAM, SCHEME_FILE, 1);
    }
    let extra = 100 + MAX_SERVERS;
    p.note_request_taken(extra, 0, PROGRAM, SCHEME_FILE, 1);
    assert!((100..extra).all(|s| p.is_serving(s)));
    assert!(!p.is_serving(extra));
    // One answers: its slot is free again.
    answer_and_tick(&p, 100, SCHEME_FILE, 1);
    p.note_request_taken(extra, 0, PROGRAM, SCHEME_FILE, 2);
    assert!(p.is_serving(extra));
}

#[test]
fn every_tick_lands_in_one_account() {
    let p = running();
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 1);
    p.note_request_taken(DISK, 0, RAMFS, SCHEME_DISK, 1);
    for _ in 0..5 {
        tick(&p, PROGRAM, &[0x40_1010, 0x40_2005]);
    }
    for _ in 0..3 {
        tick(&p, RAMFS, &[0x40_5010, 0x40_6005]);
    }
    // The same addresses in two daemons (both linked at 0x401000) are two stacks.
    tick(&p, DISK, &[0x40_5010, 0x40_6005]);
    tick(&p, PROGRAM, &[0x40_1010, 0x40_2005]);
    // Kernel mode: the program's and a server's.
    p.note_switch(0, PROGRAM);
    p.sample(0, false, 0xffff_8000_0000_1000);
    p.note_switch(0, RAMFS);
    p.sample(0, false, 0xffff_8000_0000_1000);
    // Without a walk (32-bit x86) a server sample is its PC alone.
    p.sample(0, true, 0x40_5020);
    // Idle (pid 0) on the other CPU, another process.
    p.note_switch(1, 0);
    for _ in 0..4 {
        p.sample(1, false, 0xffff_8000_0000_2000);
    }
    p.note_switch(1, OTHER);
    p.sample(1, true, 0x40_1010);
    p.sample(1, false, 0xffff_8000_0000_3000);
    // ramfs answers: the tick of its answer is ours, the next nobody's business.
    p.note_request_answered(RAMFS, 0, SCHEME_FILE, 1);
    tick(&p, RAMFS, &[0x40_5040]);
    tick(&p, RAMFS, &[0x40_5010]);
    p.stop();

    let s = p.snapshot().unwrap();
    assert_eq!((s.user_ticks, s.kernel_ticks), (6, 1));
    assert_eq!((s.server_user_ticks, s.server_kernel_ticks, s.servers_dropped), (6, 1, 0));
    assert_eq!((s.idle_ticks, s.other_ticks), (4, 3));
    assert_eq!(s.server_stack_capacity, SERVER_STACK_CAPACITY as u64);
    let server = |pid, count, truncated, frames: &[u64]| ServerStack {
        image: 0,
        pid,
        stack: StackEntry { thread: 0, count, truncated, frames: frames.to_vec() },
    };
    assert_eq!(
        s.server_stacks,
        vec![
            server(RAMFS as u64, 3, false, &[0x40_5010, 0x40_6005]),
            server(RAMFS as u64, 1, true, &[0x40_5020]),
            server(RAMFS as u64, 1, false, &[0x40_5040]),
            // Its kernel tick, unwalked: the kernel PC alone.
            server(RAMFS as u64, 1, true, &[0xffff_8000_0000_1000]),
            server(DISK as u64, 1, false, &[0x40_5010, 0x40_6005]),
        ]
    );
    // The program's own data is what it would be without servers: its user PC and its
    // kernel one.
    assert_eq!(s.entries.len(), 2);
    assert_eq!((s.entries[0].addr, s.entries[0].count), (0x40_1010, 6));
    assert_eq!((s.entries[1].addr, s.entries[1].count), (0xffff_8000_0000_1000, 1));
    assert_eq!(s.stacks.len(), 1);
    // All ticks accounted: 6 + 1 + 6 + 1 + 4 + 3 = the 21 samples taken.
    let all = s.user_ticks + s.kernel_ticks + s.server_user_ticks + s.server_kernel_ticks + s.idle_ticks + s.other_ticks;
    assert_eq!(all, 21);
}

/// A session on every process (`start all`): each process's samples, user and kernel, are
/// server samples under its pid, with its stack or its PC alone; idle is idle; nothing is
/// "other"; no process's exit ends it, and no exact-PC table is filled. The server table is as
/// large as the stack table asked for.
#[test]
fn a_session_on_every_process_keeps_each_ones_samples_under_its_pid() {
    use kprof::{HostKernel, State};
    let p = Profiler::new(u64::MAX);
    p.ctl(b"start all stacks=4096", &mut HostKernel::default()).unwrap();
    assert_eq!(p.state(), State::Running);
    for _ in 0..3 {
        tick(&p, PROGRAM, &[0x40_1010, 0x40_2005]);
    }
    tick(&p, RAMFS, &[0x40_5010]);
    p.note_switch(1, OTHER);
    p.sample(1, true, 0x40_7000);
    p.sample(1, false, 0xffff_8000_0000_3000);
    p.note_switch(1, 0);
    p.sample(1, false, 0xffff_8000_0000_2000);
    // A user context without a pid (the bootstrap's process manager) is not idle: pid 0's.
    p.sample(1, true, 0x40_3000);
    // No process of its own: an exit ends nothing, and nobody is "the program".
    assert!(!p.process_exited(PROGRAM) && !p.is_profiling(PROGRAM));
    assert_eq!(p.state(), State::Running);
    // The glue walks the stacks of every process (not idle's).
    p.note_switch(0, OTHER);
    assert!(p.wants_stack(0));
    p.note_switch(0, 0);
    assert!(!p.wants_stack(0));
    p.stop();
    let s = p.snapshot().unwrap();
    assert_eq!((s.pid, s.user_ticks, s.kernel_ticks, s.entries.len()), (0, 0, 0, 0));
    assert_eq!((s.server_user_ticks, s.server_kernel_ticks, s.idle_ticks, s.other_ticks), (6, 1, 1, 0));
    assert_eq!(s.server_stack_capacity, 4096);
    let server = |pid: usize, count, truncated, frames: &[u64]| ServerStack {
        image: 0,
        pid: pid as u64,
        stack: StackEntry { thread: 0, count, truncated, frames: frames.to_vec() },
    };
    assert_eq!(
        s.server_stacks,
        vec![
            server(0, 1, true, &[0x40_3000]),
            server(RAMFS, 1, false, &[0x40_5010]),
            server(OTHER, 1, true, &[0x40_7000]),
            server(OTHER, 1, true, &[0xffff_8000_0000_3000]),
            server(PROGRAM, 3, false, &[0x40_1010, 0x40_2005]),
        ]
    );
    // The next session on one process is as before: its own, the rest "other".
    p.start(PROGRAM, 64, CountFrom::Now).unwrap();
    tick(&p, OTHER, &[0x40_7000]);
    tick(&p, PROGRAM, &[0x40_1010]);
    // A pid-0 user context is another process's, never a (free) label's nor idle.
    p.note_switch(0, 0);
    p.sample(0, true, 0x40_3000);
    p.stop();
    let s = p.snapshot().unwrap();
    assert_eq!((s.user_ticks, s.other_ticks, s.idle_ticks, s.server_user_ticks), (1, 2, 0, 0));
    assert_eq!(s.server_stack_capacity, SERVER_STACK_CAPACITY as u64);
}

#[test]
fn nothing_is_counted_before_the_exec_a_session_waits_for() {
    let p = Profiler::new(u64::MAX);
    p.start(PROGRAM, 64, CountFrom::Exec).unwrap();
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 1);
    tick(&p, RAMFS, &[0x40_5010]);
    p.note_switch(1, 0);
    p.sample(1, false, 0);
    p.note_switch(1, OTHER);
    p.sample(1, true, 0x40_1010);
    assert!(!p.wants_stack(0));
    let s = p.snapshot().unwrap();
    assert_eq!(
        (s.server_user_ticks, s.idle_ticks, s.other_ticks, s.server_stacks.len()),
        (0, 0, 0, 0)
    );
    p.note_addr_space_switch(PROGRAM, 0x40_0000, 0x40_1000);
    assert!(p.wants_stack(0), "the labelled daemon's stack is wanted once counting starts");
    p.note_switch(1, OTHER);
    assert!(!p.wants_stack(1), "other processes' stacks are not walked");
}

#[test]
fn a_full_server_table_is_counted() {
    let p = running();
    p.note_request_taken(RAMFS, 0, PROGRAM, SCHEME_FILE, 1);
    let distinct = SERVER_STACK_CAPACITY as u64 + 10;
    for i in 0..distinct {
        tick(&p, RAMFS, &[0x40_0000 + 16 * i]);
    }
    // Known stacks still count.
    tick(&p, RAMFS, &[0x40_0000]);
    p.stop();
    let s = p.snapshot().unwrap();
    let kept: u64 = s.server_stacks.iter().map(|st| st.stack.count).sum();
    assert_eq!(s.server_user_ticks, distinct + 1);
    assert_eq!(kept + s.servers_dropped, s.server_user_ticks);
    assert_eq!(s.servers_dropped, 10);
}

#[test]
fn daemons_labelled_and_sampled_from_many_cpus_at_once_add_up() {
    let p = std::sync::Arc::new(running());
    let threads: Vec<_> = (0..4)
        .map(|cpu| {
            let p = p.clone();
            std::thread::spawn(move || {
                let server = 200 + cpu;
                for round in 0..5000u64 {
                    p.note_request_taken(server, 0, PROGRAM, SCHEME_FILE, round);
                    p.note_switch(cpu, server);
                    p.sample_stack(cpu, true, 0x40_5000, Some(&stack(&[0x40_5000, 0x40_6000 + cpu as u64])));
                    p.note_request_answered(server, 0, SCHEME_FILE, round);
                    // The answer's tick (the session's), then one that is not.
                    p.sample(cpu, true, 0x40_5000);
                    p.sample(cpu, true, 0x40_5000);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    p.stop();
    let s = p.snapshot().unwrap();
    assert_eq!(s.server_user_ticks, 2 * 4 * 5000);
    assert_eq!(s.other_ticks, 4 * 5000);
    // Per daemon: its walked stack, and the answer's ticks as PCs alone.
    assert_eq!(s.server_stacks.len(), 8);
    assert!(s.server_stacks.iter().all(|st| st.stack.count == 5000));
}

#[test]
fn requests_taken_from_the_kernels_queue_label_unless_one_way() {
    let p = running();
    let taken = |caller, tag, one_way| TakenRequest { caller, tag, one_way };
    // One-way requests of the program never label (no answer would end the label)...
    p.note_taken(RAMFS, 0, SCHEME_FILE, taken(PROGRAM, 1, true));
    assert!(!p.is_serving(RAMFS));
    // ...the others do, and a one-way request of anyone else ends no label either.
    p.note_taken(RAMFS, 0, SCHEME_FILE, taken(PROGRAM, 2, false));
    assert!(p.is_serving(RAMFS));
    p.note_taken(RAMFS, 0, SCHEME_FILE, taken(OTHER, 3, true));
    assert!(p.is_serving(RAMFS));
    p.note_taken(RAMFS, 0, SCHEME_FILE, taken(OTHER, 4, false));
    assert!(!p.is_serving(RAMFS));
}

/// The kernel glue takes each request's caller from the kernel's own copy (the scheme's
/// queue, shown as requests leave it), never from the daemon's buffer, which the daemon
/// could rewrite between the copy and a read back to name any caller.
#[test]
fn the_label_hook_never_reads_requests_back_from_the_daemon() {
    let patch = common::combined();
    assert!(!patch.contains("read_exact::<Sqe>"), "the hook reads an Sqe from user memory");
    assert!(patch.contains("+    pub fn receive_into_user_seen("));
    assert!(patch.contains(".receive_into_user_seen("));
    assert!(patch.contains("PROFILER.note_taken("));
}

/// A tick on CPU 0 of context `ctx` of `pid`, as the scheduler's hooks leave it.
fn tick_context(p: &Profiler, pid: usize, ctx: u32, user: bool, pc: u64) {
    p.note_switch_begin(0);
    p.note_switch_to(0, pid, ctx);
    p.note_switch_end(0);
    p.sample(0, user, pc);
}

/// A label is a daemon's context, not its process: the thread that took the program's
/// request works for the session until it answers; its other threads, meanwhile, are other
/// processes' ticks, and their answers to the same tag end nothing.
#[test]
fn a_label_is_the_contexts_not_its_processes() {
    let p = running();
    p.note_request_taken(RAMFS, 5, PROGRAM, SCHEME_FILE, 1);
    assert!(p.is_serving(RAMFS) && p.is_serving_context(RAMFS, 5));
    assert!(!p.is_serving_context(RAMFS, 6));
    tick_context(&p, RAMFS, 5, true, 0x40_5000);
    tick_context(&p, RAMFS, 6, true, 0x40_6000);
    tick_context(&p, RAMFS, 6, false, 0xffff_8000_0000_6000);
    // Another thread answering the same tag is not the labelled one's answer.
    p.note_request_answered(RAMFS, 6, SCHEME_FILE, 1);
    tick_context(&p, RAMFS, 5, true, 0x40_5000);
    assert!(p.is_serving_context(RAMFS, 5));
    // Its own answer: the next tick in it is the label's last.
    p.note_request_answered(RAMFS, 5, SCHEME_FILE, 1);
    tick_context(&p, RAMFS, 5, false, 0xffff_8000_0000_5000);
    assert!(!p.is_serving(RAMFS));
    let s = p.snapshot().unwrap();
    assert_eq!((s.server_user_ticks, s.server_kernel_ticks, s.other_ticks), (2, 1, 2));
    let pcs: Vec<u64> = s.server_stacks.iter().map(|s| s.stack.frames[0]).collect();
    assert_eq!(pcs, [0x40_5000, 0xffff_8000_0000_5000]);
    // A request the second thread takes from the program labels it too, as a context of its own.
    p.note_request_taken(RAMFS, 6, PROGRAM, SCHEME_FILE, 2);
    p.note_request_taken(RAMFS, 5, PROGRAM, SCHEME_FILE, 3);
    assert!(p.is_serving_context(RAMFS, 5) && p.is_serving_context(RAMFS, 6));
    // A request from someone else ends the label of the context that took it only.
    p.note_request_taken(RAMFS, 6, OTHER, SCHEME_FILE, 4);
    assert!(p.is_serving_context(RAMFS, 5) && !p.is_serving_context(RAMFS, 6));
}

/// The bootstrap's managers have no pid (0): labelled by their context, their work for the
/// program is the session's (user and kernel mode, under pid 0), not idle's; other contexts
/// without a pid in kernel mode are idle, as ever.
#[test]
fn a_manager_without_a_pid_is_labelled_by_its_context() {
    let p = running();
    p.note_request_taken(0, 3, PROGRAM, SCHEME_FILE, 1);
    assert!(p.is_serving_context(0, 3));
    tick_context(&p, 0, 3, false, 0xffff_8000_0000_3000);
    tick_context(&p, 0, 3, true, 0x40_3000);
    tick_context(&p, 0, 4, false, 0xffff_8000_0000_4000);
    // Without its context a pid-0 daemon cannot be told apart: not labelled.
    p.note_request_taken(0, 0, PROGRAM, SCHEME_FILE, 2);
    assert!(!p.is_serving_context(0, 9));
    let s = p.snapshot().unwrap();
    assert_eq!((s.server_user_ticks, s.server_kernel_ticks, s.idle_ticks), (1, 1, 1));
    assert!(s.server_stacks.iter().all(|s| s.pid == 0));
}
