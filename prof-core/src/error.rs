//! The error codes of `profile()`, as the spec lists them, and their errno values. The
//! spec's EGENERIC keeps its cause where one is known (which operation failed, and the OS's
//! error), so "Generic error" says what went wrong.

use std::fmt;
use std::io;

/// Why a profiling request failed.  Each variant is one errno of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProfError {
    /// ESRCH: no process with the given pid.
    NoProcess,
    /// EBUSY: another process is already being profiled.
    Busy,
    /// EFAULT: start > end, range outside the text segment, or more than 1024 bins needed.
    AddressRange,
    /// EPERM: the caller may not profile (or stop, or read) that process.
    Permission,
    /// EINVAL: a malformed request.
    Invalid,
    /// EIO: the spec's EGENERIC, any other failure, with its cause where known.
    Generic(Option<Cause>),
}

/// What failed behind a [`ProfError::Generic`]: the operation, and the OS's error where there
/// was one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cause {
    pub operation: &'static str,
    pub errno: Option<i32>,
}

impl ProfError {
    /// The errno value (the same numbers on Linux and Redox).
    pub fn errno(self) -> i32 {
        match self {
            ProfError::NoProcess => libc::ESRCH,
            ProfError::Busy => libc::EBUSY,
            ProfError::AddressRange => libc::EFAULT,
            ProfError::Permission => libc::EPERM,
            ProfError::Invalid => libc::EINVAL,
            ProfError::Generic(_) => libc::EIO,
        }
    }

    /// The error for an errno value; anything unknown is the spec's EGENERIC, which keeps it.
    pub fn from_errno(errno: i32) -> ProfError {
        match errno {
            libc::ESRCH => ProfError::NoProcess,
            libc::EBUSY => ProfError::Busy,
            libc::EFAULT => ProfError::AddressRange,
            libc::EPERM | libc::EACCES => ProfError::Permission,
            libc::EINVAL => ProfError::Invalid,
            libc::EIO => ProfError::Generic(None),
            errno => ProfError::Generic(Some(Cause { operation: "", errno: Some(errno) })),
        }
    }

    /// The error for `e` from `operation`: one of the spec's where its errno is, else
    /// EGENERIC naming the operation and the OS's error.
    pub fn from_io(operation: &'static str, e: &io::Error) -> ProfError {
        match e.raw_os_error().map(ProfError::from_errno) {
            Some(ProfError::Generic(_)) | None => ProfError::failed(operation, e),
            Some(known) => known,
        }
    }

    /// EGENERIC: `operation` failed with `e`, whatever its errno.
    pub fn failed(operation: &'static str, e: &io::Error) -> ProfError {
        ProfError::Generic(Some(Cause { operation, errno: e.raw_os_error() }))
    }

    /// EGENERIC: `operation` failed, with no OS error to say why.
    pub fn failed_at(operation: &'static str) -> ProfError {
        ProfError::Generic(Some(Cause { operation, errno: None }))
    }

    /// The user-facing message, worded as the spec's `profil` prints it
    /// (after "Profil Error: ").
    pub fn message(self) -> &'static str {
        match self {
            ProfError::NoProcess => "No process for profiled program",
            ProfError::Busy => "Already profiling another process",
            ProfError::AddressRange => "Address range invalid",
            ProfError::Permission => "Permission denied (only root or the process owner may profile it)",
            ProfError::Invalid => "Invalid request",
            ProfError::Generic(_) => "Generic error",
        }
    }
}

impl ProfError {
    /// What failed, where an EGENERIC knows: "perf_event_open: Too many open files".
    pub fn cause(&self) -> Option<String> {
        let Self::Generic(Some(cause)) = self else { return None };
        // strerror's words, without Rust's " (os error N)".
        let os = cause.errno.map(|n| {
            let text = io::Error::from_raw_os_error(n).to_string();
            text.split(" (os error ").next().unwrap_or_default().to_string()
        });
        Some(match (cause.operation, os) {
            ("", Some(os)) => os,
            (op, Some(os)) => format!("{op}: {os}"),
            (op, None) => op.to_string(),
        })
    }
}

impl fmt::Display for ProfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())?;
        match self.cause() {
            Some(cause) => write!(f, " ({cause})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for ProfError {}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [ProfError; 6] = [
        ProfError::NoProcess,
        ProfError::Busy,
        ProfError::AddressRange,
        ProfError::Permission,
        ProfError::Invalid,
        ProfError::Generic(None),
    ];

    #[test]
    fn errno_values_are_the_spec_ones() {
        assert_eq!(ProfError::NoProcess.errno(), 3);
        assert_eq!(ProfError::Busy.errno(), 16);
        assert_eq!(ProfError::AddressRange.errno(), 14);
        assert_eq!(ProfError::Permission.errno(), 1);
        assert_eq!(ProfError::Invalid.errno(), 22);
        assert_eq!(ProfError::Generic(None).errno(), 5); // EGENERIC is EIO
        assert_eq!(ProfError::failed_at("x").errno(), 5);
    }

    #[test]
    fn errno_round_trips() {
        for e in ALL {
            assert_eq!(ProfError::from_errno(e.errno()), e);
        }
        assert_eq!(ProfError::from_errno(libc::ENOMEM).errno(), libc::EIO);
    }

    #[test]
    fn messages_match_the_spec() {
        assert_eq!(ProfError::NoProcess.to_string(), "No process for profiled program");
        assert_eq!(ProfError::AddressRange.to_string(), "Address range invalid");
        assert_eq!(ProfError::Busy.to_string(), "Already profiling another process");
        assert_eq!(ProfError::Generic(None).to_string(), "Generic error");
    }

    /// The spec's message first, then what failed: the operation and strerror's words.
    #[test]
    fn a_generic_error_says_its_cause() {
        let e = io::Error::from_raw_os_error(libc::EMFILE);
        assert_eq!(ProfError::from_io("perf_event_open", &e).to_string(), "Generic error (perf_event_open: Too many open files)");
        assert_eq!(ProfError::from_errno(libc::ENOMEM).to_string(), "Generic error (Cannot allocate memory)");
        assert_eq!(ProfError::failed_at("reading debug:profiling-0").to_string(), "Generic error (reading debug:profiling-0)");
        // Known errnos stay the spec's own errors.
        assert_eq!(ProfError::from_io("pidfd_open", &io::Error::from_raw_os_error(libc::ESRCH)), ProfError::NoProcess);
        assert_eq!(ProfError::from_io("open", &io::Error::from_raw_os_error(libc::EACCES)), ProfError::Permission);
    }
}
