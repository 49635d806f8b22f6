//! Where each sample fell: which object (the program, a shared library, the vdso) and which
//! function inside it.
//!
//! Samples in the program are link-time addresses already.  Any other sample is found in the
//! executable mapping that holds it; the mapped file is read (once) and the runtime address
//! turned into the file's own link-time address (see [`ObjectFile::address_in_mapping`]), so
//! `memcpy [libc.so.6]` is named from libc's own symbols.  An object that cannot be read still
//! gets its samples, under its name (`[libfoo.so]`); a sample outside every known mapping is
//! `[unknown]`.  Nothing is dropped.

use rustc_hash::FxHashMap as HashMap;
use std::path::Path;

use prof_core::formats::StackFrame;
use prof_core::sampler::Mapping;

use crate::object_file::ObjectFile;
use crate::Options;
use crate::symbols::Function;

/// Index of the program among the objects.
pub const PROGRAM: usize = 0;

/// An object samples fell in.
#[derive(Debug, Clone)]
pub struct Object {
    /// Short name for reports: the file's base name (`libc.so.6`), `vdso`, `unknown`.
    pub name: String,
    /// The path the kernel reported for the mapping (`[vdso]` for the vdso, empty if none).
    pub path: String,
    /// The object's ELF, where it could be read.
    pub file: Option<ObjectFile>,
    /// A saved run's object of which only another build than the run's was found here (at
    /// this path): not read, as it would name the samples wrongly.
    pub other_build: Option<std::path::PathBuf>,
}

/// One sample's place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Index into [`Symbolizer::objects`].
    pub object: usize,
    /// The address in the object's own link-time addresses (what `nm` shows for it); `None`
    /// where the object could not be read.
    pub address: Option<u64>,
    /// The function (or unnamed range) holding it; `None` where the object could not be read,
    /// and for an inlined function.
    pub function: Option<Function>,
    /// An inlined function (`--inline`): its name's id ([`Symbolizer::inlined_name`]); such a
    /// location is one frame of the inline chain at `address`, not a symbol.
    pub inlined: Option<u32>,
}

/// What makes a function one entry of a profile: its object and its start address there
/// (`None` where the object could not be read: all of it is one entry), or, for an inlined
/// function, its object and name (wherever it was inlined: one entry, as perf shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FunctionKey {
    pub object: usize,
    pub function: Option<u64>,
    pub inlined: Option<u32>,
}

impl FunctionKey {
    pub fn of(l: &Location) -> FunctionKey {
        FunctionKey { object: l.object, function: l.function.as_ref().map(|f| f.addr), inlined: l.inlined }
    }
}

/// One exact sample and its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The address as profiled: link-time in the program, runtime elsewhere.
    pub address: u64,
    pub count: u64,
    pub location: Location,
}

/// Names samples; loads each object at most once.
pub struct Symbolizer {
    objects: Vec<Object>,
    /// Names of inlined functions (`--inline`), by id.
    inlined: Vec<String>,
    inlined_ids: HashMap<String, u32>,
    by_path: HashMap<String, usize>,
    /// The kernel's ELF, to name kernel samples by (Redox), and its object once loaded.
    kernel_path: Option<std::path::PathBuf>,
    kernel: Option<usize>,
    /// The object of the program's perf map (JIT code), where its runtime wrote one.
    jit: Option<usize>,
    /// Where the objects are looked for, and how their functions are named.
    options: Options,
}

impl Symbolizer {
    /// `program` is the profiled executable (read with `options`), shown as `name`; the other
    /// objects are read with `options`.
    pub fn new(program: ObjectFile, name: &str, options: Options) -> Symbolizer {
        let path = program.path.display().to_string();
        let program = Object { name: base_name(name), path: path.clone(), file: Some(program), other_build: None };
        Symbolizer {
            objects: vec![program],
            inlined: Vec::new(),
            inlined_ids: HashMap::default(),
            by_path: HashMap::default(),
            kernel_path: None,
            kernel: None,
            jit: None,
            options,
        }
    }

    /// Name samples in anonymous memory (or in no mapping) from the perf map process `pid`'s
    /// runtime wrote, where there is one (JIT code: `perf-PID.map`).
    pub fn with_perf_map(mut self, pid: u32) -> Symbolizer {
        let path = crate::perf_map::path(pid);
        if let Some(table) = crate::perf_map::read(&path) {
            let file = ObjectFile::from_symbols(&path, table);
            let path = path.display().to_string();
            self.objects.push(Object { name: base_name(&path), path, file: Some(file), other_build: None });
            self.jit = Some(self.objects.len() - 1);
        }
        self
    }

    /// A sample in JIT code the perf map names.
    fn jit_sample(&self, addr: u64) -> Option<Location> {
        let object = self.jit?;
        let function = self.objects[object].file.as_ref()?.symbols.lookup(addr)?;
        Some(Location { object, address: Some(addr), function: Some(function), inlined: None })
    }

    /// Name kernel samples from the kernel's ELF at `path` (read on first use).
    pub fn with_kernel(mut self, path: &Path) -> Symbolizer {
        self.kernel_path = Some(path.to_path_buf());
        self
    }

    pub fn objects(&self) -> &[Object] {
        &self.objects
    }

    pub fn object(&self, i: usize) -> &Object {
        &self.objects[i]
    }

    /// The location of inlined function `name` at `l`'s address (a frame of its inline chain).
    pub fn inlined_at(&mut self, l: &Location, name: &str) -> Location {
        let next = self.inlined.len() as u32;
        let id = *self.inlined_ids.entry(name.to_string()).or_insert(next);
        if id == next {
            self.inlined.push(name.to_string());
        }
        Location { object: l.object, address: l.address, function: None, inlined: Some(id) }
    }

    /// The name of inlined function `id` ([`Symbolizer::inlined_at`]).
    pub fn inlined_name(&self, id: u32) -> &str {
        self.inlined.get(id as usize).map_or("??", String::as_str)
    }

    /// The function's part of a location's name: `fib`, `square (inlined)`; `None` where its
    /// object could not be read.
    pub fn function_name(&self, l: &Location) -> Option<String> {
        match (l.inlined, &l.function) {
            (Some(id), _) => Some(format!("{} (inlined)", self.inlined_name(id))),
            (None, f) => f.as_ref().map(|f| f.name.clone()),
        }
    }

    /// How reports name a location: `fib`, `memcpy [libc.so.6]`, `[vdso]`, an inlined
    /// function as `square (inlined)`.
    pub fn name(&self, l: &Location) -> String {
        let object = (l.object != PROGRAM).then(|| self.object(l.object).name.as_str());
        match (self.function_name(l), object) {
            (Some(f), None) => f,
            (Some(f), Some(o)) => format!("{f} [{o}]"),
            (None, Some(o)) => format!("[{o}]"),
            (None, None) => "[unknown]".into(),
        }
    }

    /// The options it was built with (the source lines are read with the same).
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Use `file` as the kernel's ELF instead of reading one (tests).
    pub fn with_kernel_object(mut self, file: ObjectFile) -> Symbolizer {
        self.objects.push(Object { name: "kernel".into(), path: file.path.display().to_string(), file: Some(file), other_build: None });
        self.kernel = Some(self.objects.len() - 1);
        self
    }

    /// Is object `i` the kernel?
    pub fn is_kernel(&self, i: usize) -> bool {
        self.kernel == Some(i)
    }

    /// A sample of the kernel, at `addr` (the kernel runs at its link addresses). Its object
    /// is `kernel`, named from the kernel's ELF where one was given and could be read.
    pub fn kernel_sample(&mut self, addr: u64) -> Location {
        let object = *self.kernel.get_or_insert_with(|| {
            // The kernel's ELF (Redox; a vmlinux), or Linux's /proc/kallsyms.
            let file = self.kernel_path.as_deref().and_then(|path| {
                let path = self.options.locate(path);
                ObjectFile::read(&path, &self.options).ok().or_else(|| crate::kallsyms::read(&path))
            });
            let path = self.kernel_path.as_ref().map_or(String::new(), |p| p.display().to_string());
            self.objects.push(Object { name: "kernel".into(), path, file, other_build: None });
            self.objects.len() - 1
        });
        let function = self.objects[object].file.as_ref().map(|f| f.symbols.resolve(addr));
        Location { object, address: function.as_ref().map(|_| addr), function, inlined: None }
    }

    /// A sample in the program's text, at link-time address `addr`.
    pub fn program_sample(&self, addr: u64) -> Location {
        let function = self.objects[PROGRAM].file.as_ref().map(|f| f.symbols.resolve(addr));
        Location { object: PROGRAM, address: Some(addr), function, inlined: None }
    }

    /// Where a placed frame of a stack or a sample is: in the program's text, elsewhere in the
    /// process (its `mappings`), or in the kernel.
    pub fn frame(&mut self, frame: StackFrame, mappings: &[Mapping]) -> Location {
        match frame {
            StackFrame::Text(a) => self.program_sample(a),
            StackFrame::Other(a) => self.foreign_sample(a, mappings),
            StackFrame::Kernel(a) => self.kernel_sample(a),
        }
    }

    /// A sample outside the program's text, at runtime address `addr`.
    pub fn foreign_sample(&mut self, addr: u64, mappings: &[Mapping]) -> Location {
        let m = Mapping::at(mappings, addr);
        // Anonymous memory, or none the run saw mapped: JIT code, where a perf map names it.
        if m.is_none_or(|m| is_anonymous(&m.path)) {
            if let Some(location) = self.jit_sample(addr) {
                return location;
            }
        }
        let Some(m) = m else {
            let object = self.object_for("");
            return Location { object, address: None, function: None, inlined: None };
        };
        let object = self.object_for_file(&m.path, m.source(), m.build_id.as_deref());
        let file = self.objects[object].file.as_ref();
        let address = file.and_then(|f| f.address_in_mapping(m, addr));
        let function = file.zip(address).map(|(f, a)| f.symbols.resolve(a));
        Location { object, address, function, inlined: None }
    }

    /// Use `file` for the object at `path` instead of reading it (objects that are not on
    /// this machine, tests).
    pub fn with_object(mut self, path: &str, file: ObjectFile) -> Symbolizer {
        self.objects.push(Object { name: base_name(path), path: path.to_string(), file: Some(file), other_build: None });
        self.by_path.insert(path.to_string(), self.objects.len() - 1);
        self
    }

    /// Name a mapping of the file at `path` as the program (a process the program started
    /// that runs the same file: `--children`), so its functions are the program's own.
    pub fn program_also_at(mut self, path: &str) -> Symbolizer {
        self.by_path.insert(path.to_string(), PROGRAM);
        self
    }

    /// The object of the daemon whose executable is `path`, loaded on first use.
    pub fn server_object(&mut self, path: &str) -> usize {
        self.object_for(path)
    }

    /// A sample of the daemon whose executable is `path` (Redox daemons are static: their run
    /// addresses are their link addresses).
    pub fn server_sample(&mut self, path: &str, addr: u64) -> Location {
        let object = self.object_for(path);
        let function = self.objects[object].file.as_ref().map(|f| f.symbols.resolve(addr));
        Location { object, address: function.as_ref().map(|_| addr), function, inlined: None }
    }

    fn object_for(&mut self, path: &str) -> usize {
        self.object_for_file(path, path.starts_with('/').then(|| Path::new(path)), None)
    }

    /// The object named `path` in reports, read from `source` (a mapping's exact file, see
    /// `Mapping::source`), of the build `build_id` where a saved run recorded one.
    fn object_for_file(&mut self, path: &str, source: Option<&Path>, build_id: Option<&str>) -> usize {
        use crate::sysroot::Located;
        if let Some(&i) = self.by_path.get(path) {
            return i;
        }
        let mut other_build = None;
        let (name, file) = match (path, source) {
            ("", _) => ("unknown".to_string(), None),
            ("[vdso]", _) => {
                // This machine's vdso: another kernel's, in a run saved elsewhere.
                let image = vdso_image();
                let same = |b: &[u8]| build_id.is_none_or(|id| vdso_build_id(b).is_some_and(|own| own == id));
                let file = image.filter(|b| same(b)).and_then(|b| ObjectFile::parse(Path::new(path), b, &self.options));
                ("vdso".to_string(), file)
            }
            (_, Some(source)) => {
                let file = match self.options.locate_build(source, build_id) {
                    Located::At(found) => ObjectFile::read(&found, &self.options).ok(),
                    Located::OtherBuild(found) => {
                        other_build = Some(found);
                        None
                    }
                };
                (base_name(path), file)
            }
            // Other pseudo-files ([stack], anonymous JIT code): the name without brackets.
            _ => (path.trim_matches(|c| c == '[' || c == ']').to_string(), None),
        };
        self.objects.push(Object { name, path: path.to_string(), file, other_build });
        self.by_path.insert(path.to_string(), self.objects.len() - 1);
        self.objects.len() - 1
    }
}

/// The build-id (hex) of the object `m` maps, as it is now (`--save`, just after the run: the
/// file the run mapped), where it has one.
pub fn build_id_of(m: &Mapping) -> Option<String> {
    match m.path.as_str() {
        "[vdso]" => vdso_build_id(&vdso_image()?),
        _ => crate::elf::build_id(m.source()?).map(|id| crate::sysroot::hex(&id)),
    }
}

/// The build-id (hex) of an ELF image in memory (the vdso's).
fn vdso_build_id(image: &[u8]) -> Option<String> {
    let elf = goblin::elf::Elf::parse(image).ok()?;
    crate::elf::build_id_in(&elf, image).map(|id| crate::sysroot::hex(&id))
}

/// A mapping of no file: anonymous memory as perf's records and `/proc/PID/maps` name it.
fn is_anonymous(path: &str) -> bool {
    path.is_empty() || path == "//anon" || path.starts_with("[anon") || path.starts_with("/memfd:")
}

fn base_name(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

fn vdso_image() -> Option<Vec<u8>> {
    crate::vdso::image().map(<[u8]>::to_vec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::SymbolTable;

    fn program() -> ObjectFile {
        let symbols = SymbolTable::new(vec![Function { addr: 0x1000, size: 0x100, name: "fib".into() }]);
        ObjectFile::from_symbols(Path::new("/bin/fib"), symbols)
    }

    #[test]
    fn program_samples_use_the_program_symbols() {
        let s = Symbolizer::new(program(), "./fib", Options::default());
        let l = s.program_sample(0x1010);
        assert_eq!((l.object, l.address, l.function.unwrap().name), (PROGRAM, Some(0x1010), "fib".to_string()));
        assert_eq!(s.object(PROGRAM).name, "fib");
    }

    #[test]
    fn unreadable_and_unmapped_objects_keep_their_samples_by_name() {
        let mut s = Symbolizer::new(program(), "fib", Options::default());
        let maps = [
            Mapping { start: 0x7f00_0000_0000, len: 0x1000, pgoff: 0, path: "/no/such/libgone.so.1".into(), file: None, build_id: None },
            Mapping { start: 0x7f00_0001_0000, len: 0x1000, pgoff: 0, path: "[uprobes]".into(), file: None, build_id: None },
        ];
        let a = s.foreign_sample(0x7f00_0000_0010, &maps);
        let b = s.foreign_sample(0x7f00_0000_0020, &maps);
        let c = s.foreign_sample(0x7f00_0001_0000, &maps);
        let d = s.foreign_sample(0x1234, &maps);
        assert_eq!(a.object, b.object, "one object per path");
        assert_eq!((a.address, &a.function), (None, &None));
        let names: Vec<&str> = [a, c, d].iter().map(|l| s.object(l.object).name.as_str()).collect();
        assert_eq!(names, ["libgone.so.1", "uprobes", "unknown"]);
    }

    /// A real shared library, as the loader maps it: the sample at a function's runtime
    /// address is named by the library's own symbol.
    #[test]
    fn shared_library_samples_are_named_from_the_library() {
        let lib = ["/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let Some(lib) = lib else { return };
        let file = ObjectFile::read(Path::new(lib), &Options::default()).unwrap();
        let f = file.symbols.by_name("random_r").expect("libc exports random_r").clone();
        let seg =
            *file.segments().iter().find(|s| s.executable && s.vaddr <= f.addr && f.addr < s.vaddr + s.memsz).unwrap();
        let base = 0x7f00_0000_0000u64;
        let m = Mapping {
            start: base + (seg.vaddr & !0xfff),
            len: seg.memsz + 0x1000,
            pgoff: seg.offset & !0xfff,
            path: lib.into(),
            file: None,
            build_id: None,
        };
        let mut s = Symbolizer::new(program(), "fib", Options::default());
        let l = s.foreign_sample(base + f.addr + 1, &[m]);
        assert_eq!(l.address, Some(f.addr + 1));
        assert_eq!(l.function.unwrap().name, "random_r");
        assert_eq!(s.object(l.object).name, "libc.so.6");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_vdso_is_read_from_memory() {
        let mut s = Symbolizer::new(program(), "fib", Options::default());
        let i = s.object_for("[vdso]");
        let vdso = s.object(i).file.as_ref().expect("vdso image");
        assert!(
            vdso.symbols.functions().iter().any(|f| f.name.contains("clock_gettime")),
            "{:?}",
            vdso.symbols.functions()
        );
    }
}
