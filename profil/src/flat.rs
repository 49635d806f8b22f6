//! The flat profile: ticks per function, like gprof's flat profile (SPIN's FlatProfile).
//!
//! Samples in the program are named by its symbol table; samples in other objects (ld.so,
//! libc, the vdso) are attributed to the object by name, never dropped.

use std::collections::HashMap;
use std::fmt::Write;

use crate::profile::Profile;
use crate::symbols::SymbolTable;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlatEntry {
    pub name: String,
    pub samples: u64,
}

/// Ticks per function, most first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlatProfile {
    pub entries: Vec<FlatEntry>,
    pub total: u64,
}

impl FlatProfile {
    pub fn build(p: &Profile, symbols: &SymbolTable, program: &str) -> FlatProfile {
        let mut by_name: HashMap<String, u64> = HashMap::new();
        for &(addr, n) in &p.image_samples {
            let name = match symbols.lookup(addr) {
                Some(f) => f.name.clone(),
                None => format!("[{program}]"),
            };
            *by_name.entry(name).or_insert(0) += n;
        }
        for &(addr, n) in &p.foreign_samples {
            let name = p
                .mappings
                .iter()
                .find(|m| (m.start..m.start + m.len).contains(&addr))
                .map(|m| format!("[{}]", m.path.rsplit('/').next().unwrap_or(&m.path)))
                .unwrap_or_else(|| "[unknown]".into());
            *by_name.entry(name).or_insert(0) += n;
        }
        let mut entries: Vec<FlatEntry> = by_name.into_iter().map(|(name, samples)| FlatEntry { name, samples }).collect();
        entries.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.name.cmp(&b.name)));
        let total = entries.iter().map(|e| e.samples).sum();
        FlatProfile { entries, total }
    }

    /// Share of all user ticks that went to `name`, in percent.
    pub fn percent(&self, name: &str) -> f64 {
        let n = self.entries.iter().find(|e| e.name == name).map_or(0, |e| e.samples);
        if self.total == 0 {
            0.0
        } else {
            n as f64 * 100.0 / self.total as f64
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Flat profile ({} user ticks):", self.total);
        let _ = writeln!(out, "{:>9} {:>7} {:>7}  function", "samples", "%", "cum %");
        let mut cum = 0;
        for e in &self.entries {
            cum += e.samples;
            let pct = |n: u64| n as f64 * 100.0 / self.total as f64;
            let _ = writeln!(out, "{:>9} {:>7.2} {:>7.2}  {}", e.samples, pct(e.samples), pct(cum), e.name);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::Function;
    use profd::sampler::Mapping;

    #[test]
    fn attributes_program_and_foreign_samples() {
        let symbols = SymbolTable::new(vec![
            Function { addr: 0x1000, size: 0x100, name: "fib".into() },
            Function { addr: 0x2000, size: 0x100, name: "loop".into() },
        ]);
        let p = Profile {
            image_samples: vec![(0x1000, 5), (0x10ff, 1), (0x2010, 3), (0x5000, 1)],
            foreign_samples: vec![(0x7f00_0000_1010, 2), (0x1234, 1)],
            mappings: vec![Mapping { start: 0x7f00_0000_1000, len: 0x1000, pgoff: 0, path: "/usr/lib/libc.so.6".into() }],
            ..Default::default()
        };
        let f = FlatProfile::build(&p, &symbols, "fib");
        assert_eq!(f.total, 13);
        assert_eq!(
            f.render(),
            "Flat profile (13 user ticks):\n\
            \x20 samples       %   cum %  function\n\
            \x20       6   46.15   46.15  fib\n\
            \x20       3   23.08   69.23  loop\n\
            \x20       2   15.38   84.62  [libc.so.6]\n\
            \x20       1    7.69   92.31  [fib]\n\
            \x20       1    7.69  100.00  [unknown]\n"
        );
        assert!((f.percent("loop") - 23.0769).abs() < 0.001);
    }
}
