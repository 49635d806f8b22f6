//! The flat profile: ticks per function, most first, like gprof's flat profile (SPIN's
//! FlatProfile).
//!
//! Every user tick is in it: functions of the program by name (or address range, see
//! [`prof_objects::symbols`]), functions of other objects as `memcpy [libc.so.6]`, and objects that
//! could not be read as `[name]`.

use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write;

use prof_objects::lines::LineProfile;
use crate::naming::Names;
use crate::profile::Profile;
use crate::stacks::StackProfile;
use prof_objects::symbolize::{FunctionKey, Location, Sample, PROGRAM};

/// Where a function's code is, and its exact hits, for the instruction view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code {
    /// Index of the object ([`Names::object`]).
    pub object: usize,
    /// `[start, end)` in the object's link-time addresses.
    pub start: u64,
    pub end: u64,
    /// Exact addresses (object link-time) and their ticks, in address order.
    pub hits: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlatEntry {
    /// The function or unnamed range; `None` where the object could not be read.
    pub function: Option<String>,
    /// The object, for code outside the program (`libc.so.6`, `vdso`); `None` in the program.
    pub object: Option<String>,
    pub samples: u64,
    /// Samples with the function anywhere on their call stack, where stacks were recorded.
    pub total: Option<u64>,
    /// `None` where the object could not be read.
    pub code: Option<Code>,
}

impl FlatEntry {
    /// The name the reports print: `fib`, `memcpy [libc.so.6]`, `[vdso]`.
    pub fn name(&self) -> String {
        match (&self.function, &self.object) {
            (Some(f), None) => f.clone(),
            (Some(f), Some(o)) => format!("{f} [{o}]"),
            (None, Some(o)) => format!("[{o}]"),
            (None, None) => "[unknown]".into(),
        }
    }
}

/// One process's profile from the run's names: its exact samples located, its stacks (`-g`)
/// and its flat profile, the three every report and export of it is made from. Where the
/// names have inlined functions (`--inline`), they are functions of their own, in the stacks
/// and in the flat profile (a sample's self time goes to the innermost).
pub fn analyse(p: &Profile, names: &Names) -> (Vec<Sample>, Option<StackProfile>, FlatProfile) {
    let samples = names.samples(p);
    let stacks = StackProfile::build(p, names);
    let innermost = names.innermost_inlined(&samples);
    let flat = FlatProfile::build(innermost.as_deref().unwrap_or(&samples), names, stacks.as_ref());
    (samples, stacks, flat)
}

/// Ticks per function, most first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlatProfile {
    pub entries: Vec<FlatEntry>,
    pub total: u64,
    /// Of `total`, the samples in the kernel (Redox with an NMI source).
    pub kernel: u64,
    /// Entries carry inclusive totals (call stacks were recorded).
    pub with_totals: bool,
    /// The run's samples the shares are of, where report filters kept fewer than it had
    /// (`--percentage absolute`, perf report's default); `None`: of `total`.
    pub whole: Option<u64>,
}

impl FlatProfile {
    /// Group located samples by (object, function); with call stacks, every function on
    /// them gets its inclusive total (those that never ran themselves with 0 samples).
    pub fn build(samples: &[Sample], names: &Names, stacks: Option<&StackProfile>) -> FlatProfile {
        let mut groups: HashMap<FunctionKey, FlatEntry> = HashMap::default();
        let new_entry = |l: &Location| FlatEntry {
            function: names.function_name(l),
            object: (l.object != PROGRAM).then(|| names.object(l.object).name.clone()),
            samples: 0,
            total: stacks.map(|_| 0),
            // An inlined function has no code of its own: its instructions are its caller's.
            code: l.function.as_ref().map(|f| Code { object: l.object, start: f.addr, end: f.end(), hits: Vec::new() }),
        };
        for s in samples {
            let l = &s.location;
            let entry = groups.entry(FunctionKey::of(l)).or_insert_with(|| new_entry(l));
            // Saturating: counts read from /scheme/prof/samples are not trusted to add up.
            entry.samples = entry.samples.saturating_add(s.count);
            if let (Some(code), Some(a)) = (entry.code.as_mut(), l.address) {
                code.hits.push((a, s.count));
            }
        }
        if let Some(sp) = stacks {
            for (f, n) in sp.functions.iter().zip(sp.inclusive_own()).filter(|(f, _)| !f.server) {
                groups.entry(f.key).or_insert_with(|| new_entry(&f.location)).total = Some(n);
            }
        }
        let mut entries: Vec<FlatEntry> = groups.into_values().collect();
        for e in &mut entries {
            if let Some(c) = e.code.as_mut() {
                c.hits.sort_unstable();
            }
        }
        entries.sort_by(|a, b| {
            b.samples.cmp(&a.samples).then_with(|| b.total.cmp(&a.total)).then_with(|| a.name().cmp(&b.name()))
        });
        let total = entries.iter().fold(0u64, |sum, e| sum.saturating_add(e.samples));
        let kernel = samples
            .iter()
            .filter(|s| names.is_kernel(s.location.object))
            .fold(0u64, |sum, s| sum.saturating_add(s.count));
        FlatProfile { entries, total, kernel, with_totals: stacks.is_some(), whole: None }
    }

    /// Share of all user ticks that went to the entry named `name`, in percent.
    pub fn percent(&self, name: &str) -> f64 {
        let n = self.entries.iter().find(|e| e.name() == name).map_or(0, |e| e.samples);
        self.share(n)
    }

    /// `n` ticks as a percentage of all user ticks (of the run's, where filters kept fewer).
    pub fn share(&self, n: u64) -> f64 {
        crate::words::percent(n, self.whole.unwrap_or(self.total))
    }

    /// The table; with `top`, its first `top` rows and one line for the rest.
    /// How many of the functions, most samples first, hold `percent` % of the samples or more
    /// (`--percent-limit`): the rows to show.
    pub fn rows_at_least(&self, percent: f64) -> usize {
        self.entries.iter().take_while(|e| self.share(e.samples) >= percent).count()
    }

    pub fn render(&self, top: Option<usize>) -> String {
        self.render_of(None, top)
    }

    /// [`render`](Self::render), its header naming whose profile it is where the run has
    /// other processes (`sh [pid 42]`): the program's own samples, not the tree's.
    pub fn render_of(&self, whose: Option<&str>, top: Option<usize>) -> String {
        let mut out = String::new();
        let of_whole = self.whole.map(|w| format!(" kept of {w}; % of all {w}")).unwrap_or_default();
        let whose = whose.map(|w| format!(" of {w} alone")).unwrap_or_default();
        let _ = match self.kernel {
            0 => writeln!(out, "Flat profile{whose} ({} user ticks{of_whole}):", self.total),
            k => writeln!(out, "Flat profile{whose} ({} ticks, {k} of them in the kernel{of_whole}):", self.total),
        };
        if self.with_totals {
            let _ = writeln!(out, "{:>9} {:>7} {:>7} {:>7}  function", "samples", "%", "cum %", "total %");
        } else {
            let _ = writeln!(out, "{:>9} {:>7} {:>7}  function", "samples", "%", "cum %");
        }
        let mut cum = 0u64;
        let shown = top.unwrap_or(usize::MAX).min(self.entries.len());
        for e in &self.entries[..shown] {
            cum = cum.saturating_add(e.samples);
            let _ = write!(out, "{:>9} {:>7.2} {:>7.2}", e.samples, self.share(e.samples), self.share(cum));
            if let Some(t) = e.total.filter(|_| self.with_totals) {
                let _ = write!(out, " {:>7.2}", self.share(t));
            }
            let _ = writeln!(out, "  {}", e.name());
        }
        let rest = &self.entries[shown..];
        if !rest.is_empty() {
            let samples = rest.iter().fold(0u64, |n, e| n.saturating_add(e.samples));
            cum = cum.saturating_add(samples);
            let _ = write!(out, "{samples:>9} {:>7.2} {:>7.2}", self.share(samples), self.share(cum));
            if self.with_totals {
                let _ = write!(out, " {:>7}", "");
            }
            let functions = if rest.len() == 1 { "function" } else { "functions" };
            let _ = writeln!(out, "  ({} more {functions})", rest.len());
        }
        out
    }
}

/// `--lines`: `Source lines (top N of M):` and one row per line: samples, share, `file:line`,
/// function.
pub fn render_lines(lines: &LineProfile, top: Option<usize>) -> String {
    let mut out = String::new();
    let shown = top.unwrap_or(lines.lines.len()).min(lines.lines.len());
    let _ = writeln!(out, "Source lines (top {shown} of {}; innermost, inlined code included):", lines.lines.len());
    let _ = writeln!(out, "{:>9} {:>7}  line  function", "samples", "%");
    let share = |n: u64| crate::words::percent(n, lines.total);
    for (l, _, n) in lines.lines.iter().take(shown) {
        let _ = writeln!(out, "{n:>9} {:>7.2}  {}:{}  {}", share(*n), l.file, l.line, l.function);
    }
    if lines.unknown > 0 {
        let _ = writeln!(out, "{:>9} {:>7.2}  (no line information)", lines.unknown, share(lines.unknown));
    }
    out
}

#[cfg(test)]
pub mod tests {
    use crate::profile::Parts;
    use super::*;

    /// The stacks' test profile with the samples behind its stacks, as stacks and the flat
    /// profile.
    pub fn stacks_and_flat() -> (StackProfile, FlatProfile) {
        let mut p = crate::stacks::tests::profile();
        p.parts_mut().image_samples = vec![(0x1310, 7), (0x1320, 1), (0x1250, 1)];
        let names = Names::of_run(crate::stacks::tests::symbolizer(), &p, Default::default());
        let sp = StackProfile::build(&p, &names).unwrap();
        let flat = FlatProfile::build(&names.samples(&p), &names, Some(&sp));
        (sp, flat)
    }
    use prof_objects::object_file::ObjectFile;
    use crate::profile::Profile;
    use prof_objects::symbolize::Symbolizer;
    use prof_objects::symbols::{Function, SymbolTable};
    use std::path::Path;

    /// The flat profile of `p` with the test program's symbols.
    fn flat(p: &Profile) -> FlatProfile {
        let names = Names::of_run(symbolizer(), p, Default::default());
        FlatProfile::build(&names.samples(p), &names, None)
    }

    fn symbolizer() -> Symbolizer {
        let symbols = SymbolTable::new(vec![
            Function { addr: 0x1000, size: 0x100, name: "fib".into() },
            Function { addr: 0x2000, size: 0x100, name: "loop".into() },
        ])
        .with_code(vec![(0x1000, 0x6000)]);
        Symbolizer::new(ObjectFile::from_symbols(Path::new("/bin/fib"), symbols), "fib", Default::default())
    }

    #[test]
    fn attributes_program_and_foreign_samples() {
        let p = Profile::from(Parts {
            image_samples: vec![(0x1000, 5), (0x10ff, 1), (0x2010, 3), (0x5000, 1)],
            foreign_samples: vec![(0x7f00_0000_1010, 2), (0x1234, 1)],
            // libc.so.6 at 0x7f00_0000_1000, as the golden files' run maps it.
            mappings: crate::profile::example().mappings().to_vec(),
            ..Default::default()
        });
        let f = flat(&p);
        assert_eq!(f.total, 13);
        assert_eq!(
            f.render(None),
            "Flat profile (13 user ticks):\n\
            \x20 samples       %   cum %  function\n\
            \x20       6   46.15   46.15  fib\n\
            \x20       3   23.08   69.23  loop\n\
            \x20       2   15.38   84.62  [libc.so.6]\n\
            \x20       1    7.69   92.31  [0x2100-0x6000]\n\
            \x20       1    7.69  100.00  [unknown]\n"
        );
        assert!((f.percent("loop") - 23.0769).abs() < 0.001);
        // --percent-limit: the rows holding that share or more.
        assert_eq!((f.rows_at_least(23.0), f.rows_at_least(46.15), f.rows_at_least(50.0), f.rows_at_least(0.0)), (2, 1, 0, 5));
        // --top 2: the rest in one line, its share and the cumulative 100 %.
        assert_eq!(
            f.render(Some(2)),
            "Flat profile (13 user ticks):\n\
            \x20 samples       %   cum %  function\n\
            \x20       6   46.15   46.15  fib\n\
            \x20       3   23.08   69.23  loop\n\
            \x20       4   30.77  100.00  (3 more functions)\n"
        );
        assert_eq!(f.render(Some(5)), f.render(None));
        assert!(f.render(Some(4)).ends_with("  100.00  (1 more function)\n"));
        let fib = &f.entries[0];
        assert_eq!(
            fib.code,
            Some(Code { object: PROGRAM, start: 0x1000, end: 0x1100, hits: vec![(0x1000, 5), (0x10ff, 1)] })
        );
        assert_eq!(f.entries[2].code, None);
    }

    #[test]
    fn totals_come_from_the_stacks() {
        let (_, f) = stacks_and_flat();
        assert_eq!(
            f.render(None),
            "Flat profile (9 user ticks):\n\
            \x20 samples       %   cum % total %  function\n\
            \x20       8   88.89   88.89   88.89  c\n\
            \x20       1   11.11  100.00   33.33  b\n\
            \x20       0    0.00  100.00   88.89  main\n\
            \x20       0    0.00  100.00   66.67  a\n"
        );
        assert!(f.render(Some(1)).ends_with("       1   11.11  100.00          (3 more functions)\n"), "{}", f.render(Some(1)));
    }

    #[test]
    fn counts_that_do_not_add_up_saturate() {
        // Found by fuzzing (a /scheme/prof/samples reply): the sums overflowed.
        let p = Profile::from(Parts {
            image_samples: vec![(0x1000, u64::MAX), (0x1001, 2), (0x2000, u64::MAX - 1)],
            ..Default::default()
        });
        let f = flat(&p);
        let counts: Vec<u64> = f.entries.iter().map(|e| e.samples).collect();
        assert_eq!((counts, f.total), (vec![u64::MAX, u64::MAX - 1], u64::MAX));
        assert!(f.render(None).ends_with(&format!("{}  100.00  100.00  loop\n", u64::MAX - 1)), "{}", f.render(None));
    }

    #[test]
    fn ties_sort_by_name_and_empty_profiles_render() {
        let p = Profile::from(Parts { image_samples: vec![(0x2000, 1), (0x1000, 1)], ..Default::default() });
        let f = flat(&p);
        let names: Vec<String> = f.entries.iter().map(FlatEntry::name).collect();
        assert_eq!(names, ["fib", "loop"]);
        let empty = flat(&Profile::default());
        assert_eq!(empty.render(None), "Flat profile (0 user ticks):\n  samples       %   cum %  function\n");
        assert_eq!(empty.percent("fib"), 0.0);
    }
}
