//! Each sampled address's name and source lines, read once where the run is named, for the
//! exports that keep samples by address (`--pprof` with `--lines` or `--inline`: a location an
//! address, with its lines, so `go tool pprof -list` shows them). The exports look them up;
//! they never read DWARF or ask the symbolizer themselves.

use std::rc::Rc;

use rustc_hash::FxHashMap;

use prof_objects::lines::{SourceLine, Sources};
use prof_objects::symbolize::Location;

use crate::naming::Names;

/// An address's name as the report prints it, and its source frames, innermost first (empty
/// where it has no line).
#[derive(Debug, Clone)]
pub struct AddressName {
    pub name: String,
    pub frames: Rc<[SourceLine]>,
}

/// The names and lines of the addresses the run's samples and stacks hit, by (object,
/// address; a map with no random state: profil asks the OS for no randomness).
#[derive(Debug, Clone, Default)]
pub struct AddressLines(FxHashMap<(usize, u64), AddressName>);

impl AddressLines {
    /// The names and lines of `locations`.
    pub fn of<'a>(names: &Names, sources: &Sources, locations: impl IntoIterator<Item = &'a Location>) -> AddressLines {
        let mut out = AddressLines::default();
        for l in locations {
            out.0.entry(key(l)).or_insert_with(|| AddressName { name: names.name(l).to_string(), frames: names.source_frames(sources, l) });
        }
        out
    }

    /// The names and lines of every address a run's samples and stacks hit: the program's
    /// (`samples`, `stacks`) and each process's it started.
    pub fn of_run(
        names: &Names,
        sources: &Sources,
        samples: &[prof_objects::symbolize::Sample],
        stacks: Option<&crate::stacks::StackProfile>,
        processes: &[crate::processes::ProcessAnalysis],
    ) -> AddressLines {
        let mut all: Vec<&Location> = Vec::new();
        let own = std::iter::once((samples, stacks));
        for (samples, stacks) in own.chain(processes.iter().map(|c| (&c.samples[..], c.stacks.as_ref()))) {
            all.extend(samples.iter().map(|s| &s.location));
            all.extend(stacks.into_iter().flat_map(|sp| sp.frame_locations.values()));
        }
        AddressLines::of(names, sources, all)
    }

    /// The name and lines of `l`, where the run's naming read them.
    pub fn get(&self, l: &Location) -> Option<&AddressName> {
        self.0.get(&key(l))
    }
}

/// A location by its object and address (an unplaced one by its object alone).
fn key(l: &Location) -> (usize, u64) {
    (l.object, l.address.unwrap_or(u64::MAX))
}
