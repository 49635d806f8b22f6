//! JIT code named from the perf map its runtime writes: `/tmp/perf-PID.map`, one function a
//! line, `START SIZE name` (start and size in hex), as `node --perf-basic-prof`, the JVM's
//! perf-map agent, `python3 -X perf` and LuaJIT write it, and perf and samply read it. Samples
//! in anonymous executable memory (or in no mapping at all) are named from it.

use std::path::{Path, PathBuf};

use crate::symbols::{Function, SymbolTable};

/// The most a perf map is read: a JIT writes a line per function it compiles, and a long run
/// of node writes tens of MB.
pub const MAX_BYTES: u64 = 256 << 20;

/// Where process `pid`'s runtime writes its perf map.
pub fn path(pid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/perf-{pid}.map"))
}

/// The functions of a perf map's text. Lines that do not parse are skipped; a later line for
/// the same start replaces an earlier one (code regenerated at the same place).
pub fn parse(text: &str) -> Vec<Function> {
    let mut functions: std::collections::BTreeMap<u64, Function> = std::collections::BTreeMap::new();
    for line in text.lines() {
        let mut words = line.splitn(3, ' ');
        let (Some(start), Some(size), Some(name)) = (words.next(), words.next(), words.next()) else { continue };
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        let (Some(addr), Some(size)) = (hex(start), hex(size)) else { continue };
        if size == 0 || name.trim().is_empty() {
            continue;
        }
        functions.insert(addr, Function { addr, size, name: name.trim_end().to_string() });
    }
    functions.into_values().collect()
}

/// The perf map at `path` as a symbol table, if it is there and readable (a regular file, at
/// most [`MAX_BYTES`]).
pub fn read(path: &Path) -> Option<SymbolTable> {
    let text = crate::bounded::read_to_string(path, MAX_BYTES).ok()?;
    let functions = parse(&text);
    (!functions.is_empty()).then(|| SymbolTable::new(functions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_node_writes_them() {
        let text = "3a5f1c0 84 LazyCompile:~fib /tmp/fib.js:1\n\
                    3a5f300 1c0 JS:*hot /tmp/fib.js:5\n\
                    not a line\n\
                    zz 10 bad start\n\
                    3a5f4c0 0 empty\n\
                    3a5f300 100 JS:*hot /tmp/fib.js:5 (again)\n";
        let table = SymbolTable::new(parse(text));
        assert_eq!(table.lookup(0x3a5_f1c0).unwrap().name, "LazyCompile:~fib /tmp/fib.js:1");
        // The later line for a start wins.
        let hot = table.lookup(0x3a5_f3ff).unwrap();
        assert_eq!((hot.addr, hot.size, hot.name.as_str()), (0x3a5_f300, 0x100, "JS:*hot /tmp/fib.js:5 (again)"));
        assert_eq!(table.lookup(0x3a5_f400), None);
        assert_eq!(table.lookup(0x3a5_f1bf), None);
    }

    #[test]
    fn a_missing_or_empty_map_is_none() {
        assert!(read(Path::new("/nonexistent/perf-1.map")).is_none());
        assert!(read(Path::new("/dev/null")).is_none());
    }
}
