//! `--lines`: the flat profile by source line. Each sampled address is looked up in its
//! object's DWARF line table (addr2line, gimli's symbolizer), only when asked and only for the
//! addresses sampled; a sample's line is the innermost one, inside inlined code, as
//! `addr2line -i` prints first and perf's `srcline` sorts.

use std::cell::RefCell;
use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;

use crate::symbolize::{Location, Sample, Symbolizer};

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

/// How DWARF is read: sections copied out of the file (decompressed where compressed).
type Reader = gimli::EndianRcSlice<gimli::RunTimeEndian>;

/// The DWARF of one object.
pub struct LineReader {
    context: Option<addr2line::Context<Reader>>,
    /// Inlined functions' names in the short form.
    short_names: bool,
}

impl LineReader {
    /// The line tables of the ELF file at `path`, or of its separate debug file under the
    /// debug directories of `options`
    /// ([`crate::debug_file`]); an object with neither (or unreadable) has none, and its
    /// addresses have no line.
    pub fn open(path: &std::path::Path, options: &crate::Options) -> LineReader {
        LineReader { context: load(&crate::debug_file::find(path, &options.debug_dirs)), short_names: options.short_names }
    }

    /// Whether the object has line tables at all (`Some`), found by asking for its first
    /// unit's first line.
    pub fn frames_of_any(&self) -> Option<()> {
        let context = self.context.as_ref()?;
        let mut ranges = context.find_location_range(0, u64::MAX).ok()?;
        ranges.next().map(|_| ())
    }

    /// The innermost source line of `address` (the object's own link-time address).
    pub fn locate(&self, address: u64) -> Option<SourceLine> {
        self.frames(address).into_iter().next()
    }

    /// The source frames of `address`, innermost first: the inlined functions it is in, each
    /// at its line, then the function they were inlined into (`addr2line -i`'s order). Empty
    /// where the address has no line; a frame without a line ends the chain.
    pub fn frames(&self, address: u64) -> Vec<SourceLine> {
        let mut out = Vec::new();
        let Some(mut frames) = self.context.as_ref().and_then(|c| c.find_frames(address).skip_all_loads().ok()) else {
            return out;
        };
        while let Ok(Some(frame)) = frames.next() {
            let Some((file, line)) = frame.location.and_then(|l| Some((l.file?.to_string(), l.line?))) else { break };
            // Demangled as symbol names are, so a function is one name whether inlined or not.
            let function = frame
                .function
                .and_then(|f| f.raw_name().ok().map(|name| crate::symbols::demangle_as(&name, self.short_names)))
                .unwrap_or_else(|| "??".to_string());
            out.push(SourceLine { file, line, function });
        }
        out
    }
}

/// The DWARF of the ELF file at `path` (its `.debug_*` sections, `SHF_COMPRESSED` or GNU
/// `.zdebug_*` ones decompressed), ready for lookups; `None` if it cannot be read.
fn load(path: &std::path::Path) -> Option<addr2line::Context<Reader>> {
    use object::{Object, ObjectSection};
    let bytes = crate::file_bytes::FileBytes::open(path).ok()?;
    let file = object::File::parse(&*bytes).ok()?;
    let endian = if file.is_little_endian() { gimli::RunTimeEndian::Little } else { gimli::RunTimeEndian::Big };
    let section = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
        let data = file.section_by_name(id.name()).and_then(|s| s.uncompressed_data().ok());
        Ok(gimli::EndianRcSlice::new(Rc::from(data.as_deref().unwrap_or(&[])), endian))
    };
    addr2line::Context::from_dwarf(gimli::Dwarf::load(section).ok()?).ok()
}

/// Source frames of located addresses, each object's DWARF read once, each address looked up
/// once (shared by `--lines`, `--inline` and the exports).
#[derive(Default)]
pub struct Sources {
    readers: RefCell<HashMap<usize, LineReader>>,
    memo: RefCell<HashMap<ObjectAddress, Rc<[SourceLine]>>>,
}

/// An address in one of the run's objects: (object index, address in it).
type ObjectAddress = (usize, u64);

impl Sources {
    /// Nothing read yet: each object's line tables are read on its first address, found and
    /// named with the symbolizer's options.
    pub fn new() -> Sources {
        Sources::default()
    }

    /// The source frames at `l` (innermost first; see [`LineReader::frames`]); none for an
    /// object that could not be read or has no line tables.
    pub fn frames(&self, symbolizer: &Symbolizer, l: &Location) -> Rc<[SourceLine]> {
        let Some(address) = l.address else { return Rc::from([]) };
        if let Some(found) = self.memo.borrow().get(&(l.object, address)) {
            return found.clone();
        }
        let mut readers = self.readers.borrow_mut();
        let reader = readers.entry(l.object).or_insert_with(|| match &symbolizer.object(l.object).file {
            Some(file) => LineReader::open(&file.path, symbolizer.options()),
            None => LineReader { context: None, short_names: false },
        });
        let frames: Rc<[SourceLine]> = reader.frames(address).into();
        self.memo.borrow_mut().insert((l.object, address), frames.clone());
        frames
    }
}

/// Samples per source line, most first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineProfile {
    /// (line, object index, samples), most samples first; samples without a line are in
    /// `unknown`.
    pub lines: Vec<(SourceLine, usize, u64)>,
    pub unknown: u64,
    pub total: u64,
}

impl LineProfile {
    /// Look up every sample's innermost line.
    pub fn build(samples: &[Sample], symbolizer: &Symbolizer, sources: &Sources) -> LineProfile {
        let mut counts: HashMap<(SourceLine, usize), u64> = HashMap::default();
        let (mut unknown, mut total) = (0u64, 0u64);
        for s in samples {
            total = total.saturating_add(s.count);
            match sources.frames(symbolizer, &s.location).first() {
                Some(line) => *counts.entry((line.clone(), s.location.object)).or_insert(0) += s.count,
                None => unknown = unknown.saturating_add(s.count),
            }
        }
        let mut lines: Vec<(SourceLine, usize, u64)> = counts.into_iter().map(|((l, o), n)| (l, o, n)).collect();
        lines.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| (&a.0, a.1).cmp(&(&b.0, b.1))));
        LineProfile { lines, unknown, total }
    }

}
