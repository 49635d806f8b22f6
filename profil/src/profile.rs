//! The result of one profiled run, whichever OS backend produced it.

use profd::sampler::Mapping;
use profd::session::Session;
use profd::{ProfData, StopReason};

use crate::report::ExitKind;

/// Everything the reports are made from.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// The Minix bins.
    pub data: ProfData,
    /// Exact samples inside the program's text, link-time address -> ticks.
    pub image_samples: Vec<(u64, u64)>,
    /// Exact samples elsewhere (shared objects, vdso), runtime address -> ticks.
    pub foreign_samples: Vec<(u64, u64)>,
    /// Executable mappings of the process, to name foreign samples.
    pub mappings: Vec<Mapping>,
    pub user_ticks: u64,
    /// `None` where the OS did not let us count kernel-mode ticks.
    pub kernel_ticks: Option<u64>,
    /// Samples the sampler had to drop.
    pub lost: u64,
    pub stop_reason: Option<StopReason>,
}

impl Profile {
    /// The profile of a finished session.
    pub fn from_session(s: &Session, counts_kernel: bool) -> Profile {
        Profile {
            data: s.data.clone(),
            image_samples: s.image_samples(),
            foreign_samples: s.foreign_samples(),
            mappings: s.mappings.clone(),
            user_ticks: s.user_ticks,
            kernel_ticks: counts_kernel.then_some(s.kernel_ticks),
            lost: s.lost,
            stop_reason: match s.state {
                profd::SessionState::Stopped(r) => Some(r),
                _ => None,
            },
        }
    }
}

/// A finished run: the profile and what the reports and exports say about the run itself.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The program as named on the command line.
    pub program: String,
    /// Its arguments.
    pub arguments: Vec<String>,
    pub frequency_hz: u64,
    pub profile: Profile,
    pub exit: ExitKind,
}
