//! Start, arm, stop and disarm are one critical section (the control lock of
//! [`Profiler::ctl`], [`Profiler::data`] and [`Profiler::exited`]), tested with threads doing
//! what CPUs do at once: writers of `sys:prof_ctl` starting and stopping NMI sessions, readers
//! of `sys:prof_data`, and an NMI source that samples while it is armed.
//!
//! Before the lock covered the hardware, the glue armed the NMI source outside it: two
//! concurrent `start rate=` writes could both arm the comparator (and the loser, refused,
//! disarmed the winner's), and a `prof_data` read between `arm_nmi` and the start saw no
//! running session and disarmed the new one, which then reported `nmi-hpet` with no NMI
//! coming. The fake hardware below catches each of these.

use kprof::{KernelOps, Profiler, Source, State};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;

const PID: usize = 42;

/// The NMI source as the hardware sees it, and what went wrong with it.
#[derive(Default)]
struct Hpet {
    armed: AtomicBool,
    arms: AtomicUsize,
    samples: AtomicUsize,
    violations: Mutex<Vec<String>>,
}

impl Hpet {
    fn violation(&self, what: String) {
        self.violations.lock().unwrap().push(what);
    }
}

/// The kernel's side of the control path on one CPU: the shared HPET, a live process.
struct Ops<'a> {
    hpet: &'a Hpet,
    prof: &'a Profiler,
}

impl KernelOps for Ops<'_> {
    /// As the kernel's `prof_nmi::arm`: refuses while armed (the session would fall back to
    /// the timer), and a check-then-arm that two CPUs pass at once arms the comparator twice.
    fn arm_nmi(&mut self, rate: u64) -> Option<u64> {
        if self.hpet.armed.load(Ordering::SeqCst) {
            self.hpet.violation("arming was asked while armed".into());
            return None;
        }
        thread::yield_now();
        if self.hpet.armed.swap(true, Ordering::SeqCst) {
            self.hpet.violation("the comparator was armed twice (two sessions on it)".into());
        }
        self.hpet.arms.fetch_add(1, Ordering::SeqCst);
        Some(rate)
    }

    fn disarm_nmi(&mut self) {
        if self.prof.takes(Source::NmiHpet) {
            self.hpet.violation("a running NMI session's source was disarmed".into());
        }
        self.hpet.armed.store(false, Ordering::SeqCst);
    }

    fn timer_rate(&self) -> u64 {
        246
    }

    fn exec_base(&mut self, _pid: usize) -> Option<u64> {
        Some(0x40_1000)
    }

    fn wait(&self) {
        thread::yield_now();
    }

    fn spare_memory(&self) -> usize {
        usize::MAX
    }

    fn now(&mut self) -> u64 {
        0
    }
}

#[test]
fn concurrent_starts_stops_and_reads_never_lose_or_double_the_nmi_source() {
    const WRITERS: usize = 3;
    const STARTS: usize = 50;
    let prof = Profiler::new(u64::MAX);
    let hpet = Hpet::default();
    let writers_done = AtomicUsize::new(0);
    let started = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..WRITERS {
            s.spawn(|| {
                let mut ops = Ops { hpet: &hpet, prof: &prof };
                let mut mine = 0;
                while mine < STARTS {
                    match prof.ctl(b"start 42 64 rate=1000 stacks=16", &mut ops) {
                        Ok(()) => {
                            mine += 1;
                            started.fetch_add(1, Ordering::SeqCst);
                            // This writer's session runs until it stops it: nobody else may
                            // disarm its source meanwhile.
                            if !hpet.armed.load(Ordering::SeqCst) {
                                hpet.violation("a session started on NMIs runs without them".into());
                            }
                            for _ in 0..5 {
                                thread::yield_now();
                            }
                            if !hpet.armed.load(Ordering::SeqCst) {
                                hpet.violation("a running NMI session lost its source".into());
                            }
                            prof.ctl(b"stop", &mut ops).unwrap();
                        }
                        Err(kprof::CtlError::Busy) => thread::yield_now(),
                        Err(e) => panic!("start: {e}"),
                    }
                }
                writers_done.fetch_add(1, Ordering::SeqCst);
            });
        }
        for _ in 0..2 {
            s.spawn(|| {
                let mut ops = Ops { hpet: &hpet, prof: &prof };
                while writers_done.load(Ordering::SeqCst) < WRITERS {
                    let snap = prof.data(&mut ops).unwrap();
                    if snap.state == State::Running {
                        assert_eq!((snap.source, snap.rate), (Source::NmiHpet, 1000));
                    }
                }
            });
        }
        // The NMIs: while the comparator is armed, the profiled process is interrupted.
        s.spawn(|| {
            prof.note_switch(0, PID);
            while writers_done.load(Ordering::SeqCst) < WRITERS {
                if hpet.armed.load(Ordering::SeqCst) {
                    prof.sample_from(Source::NmiHpet, 0, true, 0x40_1234, None);
                    hpet.samples.fetch_add(1, Ordering::Relaxed);
                }
                thread::yield_now();
            }
        });
    });
    let violations = hpet.violations.lock().unwrap();
    assert!(violations.is_empty(), "{} violations, first: {:?}", violations.len(), violations.first());
    assert_eq!(started.load(Ordering::SeqCst), WRITERS * STARTS);
    assert_eq!(hpet.arms.load(Ordering::SeqCst), WRITERS * STARTS, "one arm per session");
    assert!(!hpet.armed.load(Ordering::SeqCst), "the last stop disarmed");
    assert_eq!(prof.state(), State::Stopped);
}

#[test]
fn a_refused_start_leaves_the_running_sessions_source_alone() {
    let prof = Profiler::new(u64::MAX);
    let hpet = Hpet::default();
    let mut ops = Ops { hpet: &hpet, prof: &prof };
    prof.ctl(b"start 42 64 rate=1000", &mut ops).unwrap();
    assert_eq!(prof.ctl(b"start 43 64 rate=2000", &mut ops), Err(kprof::CtlError::Busy));
    assert_eq!(prof.ctl(b"start 43 64", &mut ops), Err(kprof::CtlError::Busy));
    assert!(hpet.armed.load(Ordering::SeqCst));
    assert_eq!(hpet.arms.load(Ordering::SeqCst), 1);
    let snap = prof.data(&mut ops).unwrap();
    assert_eq!((snap.state, snap.source, snap.rate), (State::Running, Source::NmiHpet, 1000));
    assert!(hpet.armed.load(Ordering::SeqCst), "a read of a running session disarms nothing");
    prof.ctl(b"stop", &mut ops).unwrap();
    assert!(!hpet.armed.load(Ordering::SeqCst));
    assert!(hpet.violations.lock().unwrap().is_empty());
}

#[test]
fn a_session_an_overflow_ended_is_disarmed_by_the_next_read_or_command() {
    for next in ["read", "stop", "start"] {
        let prof = Profiler::new(2);
        let hpet = Hpet::default();
        let mut ops = Ops { hpet: &hpet, prof: &prof };
        prof.ctl(b"start 42 64 rate=1000", &mut ops).unwrap();
        prof.note_switch(0, PID);
        for _ in 0..3 {
            prof.sample_from(Source::NmiHpet, 0, true, 0x40_1000, None);
        }
        assert_eq!(prof.state(), State::Stopped, "the third sample overflowed");
        assert!(hpet.armed.load(Ordering::SeqCst), "the sampler cannot touch the hardware");
        match next {
            "read" => drop(prof.data(&mut ops).unwrap()),
            "stop" => prof.ctl(b"stop", &mut ops).unwrap(),
            _ => prof.ctl(b"start 42 64", &mut ops).unwrap(),
        }
        assert!(!hpet.armed.load(Ordering::SeqCst), "after a {next}");
        assert!(hpet.violations.lock().unwrap().is_empty(), "{next}");
    }
}

#[test]
fn the_exit_of_the_process_stops_its_nmi_source() {
    struct Gone<'a>(Ops<'a>);
    impl KernelOps for Gone<'_> {
        fn arm_nmi(&mut self, rate: u64) -> Option<u64> {
            self.0.arm_nmi(rate)
        }
        fn disarm_nmi(&mut self) {
            self.0.disarm_nmi()
        }
        fn timer_rate(&self) -> u64 {
            self.0.timer_rate()
        }
        fn exec_base(&mut self, _pid: usize) -> Option<u64> {
            None
        }
        fn wait(&self) {}
        fn spare_memory(&self) -> usize {
            usize::MAX
        }
        fn now(&mut self) -> u64 {
            0
        }
    }
    let prof = Profiler::new(u64::MAX);
    let hpet = Hpet::default();
    prof.ctl(b"start 42 64 rate=1000", &mut Ops { hpet: &hpet, prof: &prof }).unwrap();
    // Another process's exit changes nothing; the last context of 42 ends the session.
    prof.exited(7, &mut Gone(Ops { hpet: &hpet, prof: &prof }));
    assert!(hpet.armed.load(Ordering::SeqCst));
    prof.exited(PID, &mut Ops { hpet: &hpet, prof: &prof });
    assert!(hpet.armed.load(Ordering::SeqCst), "42 still has a live context");
    prof.exited(PID, &mut Gone(Ops { hpet: &hpet, prof: &prof }));
    assert_eq!(prof.status(), (State::Stopped, Some(kprof::StopReason::Exit)));
    assert!(!hpet.armed.load(Ordering::SeqCst));
    // A start whose process is gone by the time the session is set up: stopped, disarmed.
    assert_eq!(
        prof.ctl(b"start 42 64 rate=1000", &mut Gone(Ops { hpet: &hpet, prof: &prof })),
        Err(kprof::CtlError::NoSuchProcess)
    );
    assert_eq!(hpet.arms.load(Ordering::SeqCst), 1, "refused before arming");
    assert!(hpet.violations.lock().unwrap().is_empty());
}
