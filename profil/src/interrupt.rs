//! The signals that end a run early: SIGINT (Ctrl-C, `timeout -s INT`), SIGTERM and SIGHUP.
//!
//! While the program runs, profil catches them instead of dying, so the partial profile is still
//! reported and the exports written. A signal sent to profil alone (`kill`, `timeout`) is passed
//! on to the program, so it never runs on unwatched; one the terminal sent to the whole
//! foreground group (Ctrl-C) already reached the program and is not sent twice. A hangup's
//! SIGHUP, which the kernel sends to the terminal's controlling process, is passed on too. A signal profil
//! was started with ignored (a background job's SIGINT) stays ignored, for the program too.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

/// The signals caught.
pub const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The program's pid once forked (0 before: nothing to pass a signal on to).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// The last signal caught (0: none).
static CAUGHT: AtomicI32 = AtomicI32::new(0);
/// How many signals were caught: a wait can tell one that came while it waited.
static COUNT: AtomicU32 = AtomicU32::new(0);
/// A terminal sent SIGINT (Ctrl-C): it echoed `^C` where the next output would go.
static CTRL_C: AtomicBool = AtomicBool::new(false);

/// si_code of a signal the kernel sent itself, e.g. a terminal's Ctrl-C to its foreground group.
#[cfg(target_os = "linux")]
const FROM_KERNEL: libc::c_int = libc::SI_KERNEL;
#[cfg(not(target_os = "linux"))]
const FROM_KERNEL: libc::c_int = 0x80;

extern "C" fn on_signal(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    CAUGHT.store(signal, Ordering::SeqCst);
    COUNT.fetch_add(1, Ordering::SeqCst);
    let child = CHILD.load(Ordering::SeqCst);
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; kill is
    // async-signal-safe.
    let from_kernel = !info.is_null() && unsafe { (*info).si_code } == FROM_KERNEL;
    if from_kernel && signal == libc::SIGINT {
        CTRL_C.store(true, Ordering::SeqCst);
    }
    // The kernel's SIGHUP is a hangup: it reached the session's leader (profil, under
    // `ssh -t host profil prog`), not necessarily the program, which must not run on.
    if child > 0 && (!from_kernel || signal == libc::SIGHUP) {
        // SAFETY: kill(2) is async-signal-safe and has no memory preconditions.
        unsafe { libc::kill(child, signal) };
    }
}

/// Catch [`SIGNALS`] (those not ignored) from now on; returns the ones caught.
pub fn install() -> Vec<libc::c_int> {
    let mut caught = Vec::new();
    for signal in SIGNALS {
        // SAFETY: sigaction with a zeroed struct, a valid handler and an empty mask; no
        // SA_RESTART, so a blocking wait returns EINTR and profil notices.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0 || old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) == 0 {
                caught.push(signal);
            }
        }
    }
    caught
}

/// In the forked child, before it execs: the caught signals act as usual again.
pub fn reset_in_child(caught: &[libc::c_int]) {
    for &signal in caught {
        // SAFETY: restoring the default disposition.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
}

/// From now on, signals sent to profil alone are passed on to `pid`.
pub fn forward_to(pid: u32) {
    CHILD.store(pid as i32, Ordering::SeqCst);
}

/// Signals whose default action dumps core: profil does not end itself with those (no core
/// of profil), it exits 128 + N.
const CORE_SIGNALS: [libc::c_int; 10] = [
    libc::SIGQUIT,
    libc::SIGILL,
    libc::SIGTRAP,
    libc::SIGABRT,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGSEGV,
    libc::SIGXCPU,
    libc::SIGXFSZ,
    libc::SIGSYS,
];

/// How profil ends after the program died of `signal`: by the same signal, as strace does, so
/// that a shell or make sees "killed by SIGINT" and stops too; for a signal that would dump a
/// core, with status 128 + N. Everything must be written before.
pub fn end_like(signal: libc::c_int) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    if !CORE_SIGNALS.contains(&signal) {
        // SAFETY: default disposition, unblocked, then raise: the process ends here.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::raise(signal);
        }
    }
    std::process::exit(128 + signal)
}

/// Did a terminal's Ctrl-C interrupt the run (so `^C` stands at the end of its line)?
pub fn ctrl_c_from_terminal() -> bool {
    CTRL_C.load(Ordering::SeqCst)
}

/// How many signals have been caught so far.
pub fn count() -> u32 {
    COUNT.load(Ordering::SeqCst)
}

/// The last signal caught, if any.
pub fn caught() -> Option<libc::c_int> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}
