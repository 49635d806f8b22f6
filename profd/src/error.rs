//! The error codes of `profile()`, as the spec lists them, and their errno values.

use std::fmt;

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
    /// EIO: the spec's EGENERIC, any other failure.
    Generic,
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
            ProfError::Generic => libc::EIO,
        }
    }

    /// The error for an errno value; anything unknown is the spec's EGENERIC.
    pub fn from_errno(errno: i32) -> ProfError {
        match errno {
            libc::ESRCH => ProfError::NoProcess,
            libc::EBUSY => ProfError::Busy,
            libc::EFAULT => ProfError::AddressRange,
            libc::EPERM | libc::EACCES => ProfError::Permission,
            libc::EINVAL => ProfError::Invalid,
            _ => ProfError::Generic,
        }
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
            ProfError::Generic => "Generic error",
        }
    }
}

impl fmt::Display for ProfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
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
        ProfError::Generic,
    ];

    #[test]
    fn errno_values_are_the_spec_ones() {
        assert_eq!(ProfError::NoProcess.errno(), 3);
        assert_eq!(ProfError::Busy.errno(), 16);
        assert_eq!(ProfError::AddressRange.errno(), 14);
        assert_eq!(ProfError::Permission.errno(), 1);
        assert_eq!(ProfError::Invalid.errno(), 22);
        assert_eq!(ProfError::Generic.errno(), 5); // EGENERIC is EIO
    }

    #[test]
    fn errno_round_trips() {
        for e in ALL {
            assert_eq!(ProfError::from_errno(e.errno()), e);
        }
        assert_eq!(ProfError::from_errno(libc::ENOMEM), ProfError::Generic);
    }

    #[test]
    fn messages_match_the_spec() {
        assert_eq!(ProfError::NoProcess.to_string(), "No process for profiled program");
        assert_eq!(ProfError::AddressRange.to_string(), "Address range invalid");
        assert_eq!(ProfError::Busy.to_string(), "Already profiling another process");
        assert_eq!(ProfError::Generic.to_string(), "Generic error");
    }
}
