//! `--lines`: the flat profile by source line. Each sampled address is looked up in its
//! object's DWARF line table (addr2line, gimli's symbolizer), only when asked and only for the
//! addresses sampled; a sample's line is the innermost one, inside inlined code, as
//! `addr2line -i` prints first and perf's `srcline` sorts.

use std::fmt::Write;

use rustc_hash::FxHashMap as HashMap;

use crate::symbolize::{Sample, Symbolizer};

/// Lines shown without `--lines=all`.
pub const DEFAULT_TOP: usize = 30;

/// Where an address is in the source: its innermost function (inlined code included) and
/// its file and line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceLine {
    pub file: String,
    pub line: u32,
    pub function: String,
}

/// The DWARF of one object, loaded on first use.
pub struct LineReader {
    loader: Option<addr2line::Loader>,
}

impl LineReader {
    /// The line tables of the ELF file at `path`, or of its separate debug file under `dirs`
    /// ([`crate::debug_file`]); an object with neither (or unreadable) has none, and its
    /// addresses have no line.
    pub fn open(path: &std::path::Path, dirs: &[std::path::PathBuf]) -> LineReader {
        LineReader { loader: addr2line::Loader::new(crate::debug_file::find(path, dirs)).ok() }
    }

    /// The innermost source line of `address` (the object's own link-time address).
    pub fn locate(&self, address: u64) -> Option<SourceLine> {
        let loader = self.loader.as_ref()?;
        let mut frames = loader.find_frames(address).ok()?;
        let frame = frames.next().ok()??;
        let location = frame.location?;
        let function = frame
            .function
            .and_then(|f| f.demangle().ok().map(|name| name.into_owned()))
            .unwrap_or_else(|| "??".to_string());
        Some(SourceLine { file: location.file?.to_string(), line: location.line?, function })
    }
}

/// Samples per source line, most first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineProfile {
    /// (line, samples), most samples first; samples without a line are in `unknown`.
    pub lines: Vec<(SourceLine, u64)>,
    pub unknown: u64,
    pub total: u64,
}

impl LineProfile {
    /// Look up every sample's line in its object (each object's DWARF read once; separate
    /// debug files searched under `dirs`).
    pub fn build(samples: &[Sample], symbolizer: &Symbolizer, dirs: &[std::path::PathBuf]) -> LineProfile {
        let mut readers: HashMap<usize, LineReader> = HashMap::default();
        let mut counts: HashMap<SourceLine, u64> = HashMap::default();
        let (mut unknown, mut total) = (0u64, 0u64);
        for s in samples {
            total = total.saturating_add(s.count);
            let l = &s.location;
            let line = l.address.and_then(|address| {
                let reader = readers.entry(l.object).or_insert_with(|| {
                    let object = symbolizer.object(l.object);
                    match &object.file {
                        Some(file) => LineReader::open(&file.path, dirs),
                        None => LineReader { loader: None },
                    }
                });
                reader.locate(address)
            });
            match line {
                Some(line) => *counts.entry(line).or_insert(0) += s.count,
                None => unknown = unknown.saturating_add(s.count),
            }
        }
        let mut lines: Vec<(SourceLine, u64)> = counts.into_iter().collect();
        lines.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        LineProfile { lines, unknown, total }
    }

    /// `Lines (top N of M):` and one row per line: samples, share, `file:line`, function.
    pub fn render(&self, top: Option<usize>) -> String {
        let mut out = String::new();
        let shown = top.unwrap_or(self.lines.len()).min(self.lines.len());
        let _ = writeln!(out, "Source lines (top {shown} of {}; innermost, inlined code included):", self.lines.len());
        let _ = writeln!(out, "{:>9} {:>7}  line  function", "samples", "%");
        let share = |n: u64| if self.total == 0 { 0.0 } else { n as f64 * 100.0 / self.total as f64 };
        for (l, n) in self.lines.iter().take(shown) {
            let _ = writeln!(out, "{n:>9} {:>7.2}  {}:{}  {}", share(*n), l.file, l.line, l.function);
        }
        if self.unknown > 0 {
            let _ = writeln!(out, "{:>9} {:>7.2}  (no line information)", self.unknown, share(self.unknown));
        }
        out
    }
}
