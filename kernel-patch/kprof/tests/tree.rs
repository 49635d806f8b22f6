//! A `children` session follows its process's descendants, as the address-space hook sees
//! them: a process of the tree giving a context of another pid its first space has started
//! it; a followed process's own exec begins its next image, whose samples are kept apart.

use kprof::{
    CountFrom, FOLLOWED_EXITED, FOLLOWED_NAME_LEN, FollowedProcess, HostKernel, MAX_FOLLOWED,
    Profiler, ServerStack, StackBuf, StackEntry, TakenRequest, owner_key,
};

const PROGRAM: usize = 42;
const SHELL_COPY: usize = 43;
const GRANDCHILD: usize = 44;
const STRANGER: usize = 50;
const DAEMON: usize = 7;

/// `start PROGRAM 64 exec children`, the program exec'd.
fn following() -> Profiler {
    let p = Profiler::new(u64::MAX);
    p.ctl(b"start 42 64 exec children", &mut HostKernel::default()).unwrap();
    p.note_new_image(PROGRAM, None);
    p.note_addr_space_switch(PROGRAM, 0x40_0000, 0x40_1000);
    p
}

fn tick(p: &Profiler, pid: usize, user: bool, pc: u64) {
    p.note_switch(1, pid);
    p.sample(1, user, pc);
}

fn stack_of(p: &Profiler, pid: usize, image: u32) -> Vec<(u64, Vec<u64>)> {
    let s = p.snapshot().unwrap();
    s.server_stacks
        .iter()
        .filter(|s| s.pid == pid as u64 && s.image == image)
        .map(|s| (s.stack.count, s.stack.frames.clone()))
        .collect()
}

#[test]
fn a_fork_is_followed_and_its_exec_begins_a_new_image() {
    let p = following();
    // The program forks: it gives the new context (pid 43) its first address space.
    p.note_new_image(SHELL_COPY, Some(PROGRAM));
    // The forked copy runs the program's code (relibc's exec in it) ...
    tick(&p, SHELL_COPY, true, 0x40_2000);
    tick(&p, SHELL_COPY, false, 0xffff_8000_0000_1000);
    // ... then execs: its samples from here are its new image's.
    p.note_new_image(SHELL_COPY, None);
    tick(&p, SHELL_COPY, true, 0x40_2000);
    tick(&p, SHELL_COPY, true, 0x40_2000);
    // It starts a thread (same pid: nothing new) and forks a grandchild.
    p.note_new_image(SHELL_COPY, Some(SHELL_COPY));
    p.note_new_image(GRANDCHILD, Some(SHELL_COPY));
    tick(&p, GRANDCHILD, true, 0x40_3000);
    // A process outside the tree, and one it starts, are not followed.
    p.note_new_image(STRANGER + 1, Some(STRANGER));
    tick(&p, STRANGER, true, 0x40_9000);
    tick(&p, STRANGER + 1, true, 0x40_9000);
    // The program's own ticks are its own, as ever.
    tick(&p, PROGRAM, true, 0x40_1800);

    let s = p.snapshot().unwrap();
    assert_eq!(
        s.followed,
        vec![
            FollowedProcess {
                pid: SHELL_COPY as u64,
                parent: owner_key(PROGRAM, 0),
                execs: 1,
                flags: 0,
                name: [0; FOLLOWED_NAME_LEN],
            },
            FollowedProcess {
                pid: GRANDCHILD as u64,
                parent: owner_key(SHELL_COPY, 1),
                execs: 0,
                flags: 0,
                name: [0; FOLLOWED_NAME_LEN],
            },
        ]
    );
    assert_eq!(
        stack_of(&p, SHELL_COPY, 0),
        vec![(1, vec![0x40_2000]), (1, vec![0xffff_8000_0000_1000])]
    );
    assert_eq!(stack_of(&p, SHELL_COPY, 1), vec![(2, vec![0x40_2000])]);
    assert_eq!(stack_of(&p, GRANDCHILD, 0), vec![(1, vec![0x40_3000])]);
    assert!(stack_of(&p, STRANGER, 0).is_empty());
    // Every tick in one account: the program's, the children's, other processes'.
    assert_eq!((s.user_ticks, s.kernel_ticks), (1, 0));
    assert_eq!((s.children_user_ticks, s.children_kernel_ticks), (4, 1));
    assert_eq!((s.server_user_ticks, s.server_kernel_ticks), (0, 0));
    assert_eq!(s.other_ticks, 2);
    assert_eq!(s.followed_missed, 0);
}

#[test]
fn a_session_without_children_follows_nobody() {
    let p = Profiler::new(u64::MAX);
    p.start(PROGRAM, 64, CountFrom::Now).unwrap();
    p.note_new_image(SHELL_COPY, Some(PROGRAM));
    tick(&p, SHELL_COPY, true, 0x40_2000);
    let s = p.snapshot().unwrap();
    assert!(s.followed.is_empty());
    assert_eq!((s.children_user_ticks, s.other_ticks), (0, 1));
}

#[test]
fn the_tree_is_forgotten_at_the_next_start() {
    let p = following();
    p.note_new_image(SHELL_COPY, Some(PROGRAM));
    p.stop();
    p.ctl(b"start 42 64 children", &mut HostKernel::default()).unwrap();
    tick(&p, SHELL_COPY, true, 0x40_2000);
    let s = p.snapshot().unwrap();
    assert!(s.followed.is_empty());
    assert_eq!(s.other_ticks, 1);
}

#[test]
fn a_full_table_counts_the_processes_it_misses() {
    let p = following();
    for pid in 100..100 + MAX_FOLLOWED + 3 {
        p.note_new_image(pid, Some(PROGRAM));
    }
    let last = 100 + MAX_FOLLOWED;
    tick(&p, last, true, 0x40_2000);
    let s = p.snapshot().unwrap();
    assert_eq!(s.followed.len(), MAX_FOLLOWED);
    assert_eq!(s.followed_missed, 3);
    // A missed process is another process.
    assert_eq!((s.children_user_ticks, s.other_ticks), (0, 1));
    // Followed twice (a second space given to the same pid) is followed once.
    p.note_new_image(100, Some(PROGRAM));
    assert_eq!(p.snapshot().unwrap().followed.len(), MAX_FOLLOWED);
}

#[test]
fn an_exited_child_is_marked_and_the_session_goes_on() {
    let p = following();
    p.note_new_image(SHELL_COPY, Some(PROGRAM));
    assert!(!p.process_exited(SHELL_COPY));
    let s = p.snapshot().unwrap();
    assert_eq!(s.followed[0].flags, FOLLOWED_EXITED);
    assert_eq!(s.state, kprof::State::Running);
    // The program's exit ends it.
    assert!(p.process_exited(PROGRAM));
}

/// A daemon taking a request of a child works for the session (its ticks are server ticks),
/// and a child taking requests is still a child.
#[test]
fn a_daemon_serving_a_child_works_for_the_session() {
    let p = following();
    p.note_new_image(SHELL_COPY, Some(PROGRAM));
    let request = |caller: usize, tag: u64| TakenRequest { caller, tag, one_way: false };
    p.note_taken(DAEMON, 0, 3, request(SHELL_COPY, 1));
    assert!(p.is_serving(DAEMON));
    let mut walked = StackBuf::new();
    walked.frames[0] = 0x40_5000;
    walked.len = 1;
    p.note_switch(0, DAEMON);
    p.sample_stack(0, true, 0x40_5000, Some(&walked));
    p.note_taken(SHELL_COPY, 0, 4, request(PROGRAM, 2));
    assert!(!p.is_serving(SHELL_COPY));
    let s = p.snapshot().unwrap();
    assert_eq!(s.server_user_ticks, 1);
    assert_eq!(
        s.server_stacks,
        vec![ServerStack {
            pid: DAEMON as u64,
            image: 0,
            stack: StackEntry { thread: 0, count: 1, truncated: false, frames: vec![0x40_5000] },
        }]
    );
}

/// A followed process keeps the name the process manager last gave it (its program, at its
/// exec; 32 bytes), so one gone before anyone looked is named; others' names are not kept.
#[test]
fn a_followed_process_keeps_its_last_name() {
    let p = following();
    p.note_name(SHELL_COPY, b"/bin/sh");
    p.note_new_image(SHELL_COPY, Some(PROGRAM));
    p.note_name(SHELL_COPY, b"/scheme/initfs/bin/a-program-with-a-long-name");
    p.note_name(SHELL_COPY, b"/bin/ls");
    p.note_name(STRANGER, b"/bin/cat");
    p.note_new_image(SHELL_COPY, None);
    p.process_exited(SHELL_COPY);
    let s = p.snapshot().unwrap();
    assert_eq!(s.followed.len(), 1);
    assert_eq!(&s.followed[0].name[..8], b"/bin/ls\0");
    assert!(s.followed[0].name.iter().skip(7).all(|&b| b == 0));
    p.note_name(SHELL_COPY, b"/scheme/initfs/bin/a-program-with-a-long-name");
    let s = p.snapshot().unwrap();
    assert_eq!(&s.followed[0].name, b"/scheme/initfs/bin/a-program-wit");
}

/// While the tree is followed, a walk is wanted for its processes' user ticks.
#[test]
fn a_followed_process_gets_its_stack_walked() {
    let p = following();
    p.note_switch(2, SHELL_COPY);
    assert!(!p.wants_stack(2));
    p.note_new_image(SHELL_COPY, Some(PROGRAM));
    assert!(p.wants_stack(2));
}
