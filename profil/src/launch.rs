//! Starting the program the Minix way: fork a child that waits until the parent has started
//! profiling its pid, then execs; wait for it.
//!
//! The child's error protocol is the spec's: if profiling could not be started, or the program
//! cannot be executed, the child prints the error and exits with status 0xCC.  The parent
//! learns of an exec failure through a close-on-exec pipe, so a program that itself exits
//! with 0xCC is not mistaken for a failed start.

use std::ffi::CString;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

use prof_core::ProfError;

use crate::report::ExitKind;

/// The exit status of a child that could not start the program (the spec's 0xCC).
pub const CHILD_ERROR_STATUS: i32 = 0xCC;

/// A forked child, waiting at the gate.
pub struct Child {
    pub pid: u32,
    gate: Option<std::fs::File>,
    exec_status: std::fs::File,
}

fn pipe() -> io::Result<(std::fs::File, std::fs::File)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors owned by nobody else.
    unsafe { Ok((OwnedFd::from_raw_fd(fds[0]).into(), OwnedFd::from_raw_fd(fds[1]).into())) }
}

/// Fork a child that will exec `path` with `argv` once released; with `stdout_to_stderr` its
/// standard output is profil's standard error (an export has standard output).
pub fn spawn_gated(path: &Path, argv: &[std::ffi::OsString], stdout_to_stderr: bool) -> io::Result<Child> {
    // Before the fork, so no signal can be missed; the child resets them at once.
    let caught = crate::interrupt::install();
    use std::os::unix::ffi::OsStrExt;
    let c_path = CString::new(path.as_os_str().as_bytes())?;
    let c_args: Vec<CString> = argv.iter().map(|a| CString::new(a.as_bytes())).collect::<Result<_, _>>()?;
    let mut c_argv: Vec<*const libc::c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
    c_argv.push(std::ptr::null());
    let program = argv.first().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();

    let (gate_r, gate_w) = pipe()?;
    let (status_r, status_w) = pipe()?;
    io::stdout().flush()?;
    io::stderr().flush()?;
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: profil is single-threaded here, so the child may run ordinary code before exec.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(gate_w);
            drop(status_r);
            crate::interrupt::reset_in_child(&caught);
            restore_signal_defaults();
            die_with_parent(parent);
            if stdout_to_stderr {
                // SAFETY: dup2 on the standard descriptors; nothing else uses them here.
                unsafe { libc::dup2(2, 1) };
            }
            child(gate_r, status_w, &c_path, &c_argv, &program)
        }
        pid => {
            crate::interrupt::forward_to(pid as u32);
            Ok(Child { pid: pid as u32, gate: Some(gate_w), exec_status: status_r })
        }
    }
}

/// If profil is killed outright (SIGKILL: nothing can stop its session cleanly), the program
/// must not run on unprofiled: the kernel kills it then (Linux's parent-death signal, which
/// exec keeps). Elsewhere the gate's pipe still stops a child that was not released.
fn die_with_parent(parent: libc::pid_t) {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with an integer argument; getppid and _exit have no preconditions.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        // The parent may have died before the prctl: then nobody would send it.
        if libc::getppid() != parent {
            libc::_exit(CHILD_ERROR_STATUS);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent;
}

/// The child side: wait for the verdict, then exec or report and exit 0xCC.
fn child(mut gate: std::fs::File, mut status: std::fs::File, path: &CString, argv: &[*const libc::c_char], program: &str) -> ! {
    let mut verdict = [0u8; 4];
    let code = match gate.read_exact(&mut verdict) {
        Ok(()) => i32::from_le_bytes(verdict),
        // The parent went away (it failed, and says so itself): end without a word.
        // SAFETY: _exit is always safe.
        Err(_) => unsafe { libc::_exit(CHILD_ERROR_STATUS) },
    };
    if code != 0 {
        crate::report_out::to_stderr(format_args!("Profil Error: {}", ProfError::from_errno(code).message()));
        // SAFETY: _exit is always safe; skip atexit handlers that belong to the parent.
        unsafe { libc::_exit(CHILD_ERROR_STATUS) }
    }
    // SAFETY: path and argv are NUL-terminated and outlive the call.
    unsafe { libc::execv(path.as_ptr(), argv.as_ptr()) };
    let err = io::Error::last_os_error();
    let _ = status.write_all(&err.raw_os_error().unwrap_or(libc::EIO).to_le_bytes());
    crate::report_out::to_stderr(format_args!("Profil Error: Cannot execute '{program}': {}", prof_objects::os_message(&err)));
    // SAFETY: as above.
    unsafe { libc::_exit(CHILD_ERROR_STATUS) }
}

/// The program starts with the signal state a shell gives it: the Rust runtime ignores SIGPIPE
/// in profil (so `profil prog | head` would leave prog printing into a closed pipe forever),
/// and no signal blocked. Handlers profil installed are reset by exec itself.
fn restore_signal_defaults() {
    // SAFETY: plain libc calls on a local signal set, in the single-threaded child.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}

impl Child {
    /// Let the child exec the program.
    pub fn release(&mut self) -> io::Result<()> {
        self.send(0)
    }

    /// Make the child report `err` and exit 0xCC without running the program.
    pub fn refuse(&mut self, err: ProfError) -> io::Result<()> {
        self.send(err.errno())
    }

    fn send(&mut self, code: i32) -> io::Result<()> {
        match self.gate.take() {
            Some(mut g) => g.write_all(&code.to_le_bytes()),
            None => Ok(()),
        }
    }

    /// Wait for the child to end.
    pub fn wait(&mut self) -> io::Result<ExitKind> {
        let mut status = 0;
        loop {
            // SAFETY: status is a valid out pointer.
            let r = unsafe { libc::waitpid(self.pid as libc::pid_t, &mut status, 0) };
            if r >= 0 {
                break;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(if libc::WIFSIGNALED(status) {
            ExitKind::Signaled(libc::WTERMSIG(status))
        } else {
            ExitKind::Exited(libc::WEXITSTATUS(status))
        })
    }

    /// After `wait`: the errno of a failed exec, if the exec failed.
    pub fn exec_error(&mut self) -> Option<i32> {
        let mut b = [0u8; 4];
        self.exec_status.read_exact(&mut b).ok().map(|_| i32::from_le_bytes(b))
    }
}
