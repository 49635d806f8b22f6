//! The running Linux kernel's functions from `/proc/kallsyms` (`--kernel /proc/kallsyms`):
//! `ffffffff81000000 T _stext` lines, text symbols only (`t`, `T`, `w`, `W`), at the kernel's
//! run addresses, which are its samples' addresses. Where the kernel hides its addresses
//! (`kernel.kptr_restrict`, or an unprivileged reader) every address is 0: no symbols then.

use std::path::Path;

use crate::objects::object_file::ObjectFile;
use crate::objects::symbols::{Function, SymbolTable};

/// The kernel's functions from a kallsyms file; `None` if it is not one or hides addresses.
pub fn read(path: &Path) -> Option<ObjectFile> {
    let text = std::fs::read_to_string(path).ok()?;
    let table = parse(&text)?;
    Some(ObjectFile::from_symbols(path, table))
}

/// The text symbols of kallsyms `text`, sized up to the next one.
pub fn parse(text: &str) -> Option<SymbolTable> {
    let mut functions = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(addr), Some(kind), Some(name)) = (words.next(), words.next(), words.next()) else { return None };
        let addr = u64::from_str_radix(addr, 16).ok()?;
        if addr != 0 && matches!(kind, "t" | "T" | "w" | "W") {
            // A module's symbols say their module: `name [ext4]`, as perf shows them.
            let name = match words.next() {
                Some(module) => format!("{name} {module}"),
                None => name.to_string(),
            };
            functions.push(Function { addr, size: 0, name });
        }
    }
    (!functions.is_empty()).then(|| SymbolTable::new(functions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_symbols_at_their_addresses() {
        let text = "ffffffff81000000 T _stext\nffffffff81000040 t clear_page_erms\nffffffff81000100 D some_data\n\
                    ffffffff81000200 T sys_read\nffffffffc0001000 t ext4_read_block\t[ext4]\nffffffffc0001100 t ext4_end\t[ext4]\n";
        let table = parse(text).unwrap();
        assert_eq!(table.resolve(0xffffffff81000050).name, "clear_page_erms");
        assert_eq!(table.resolve(0xffffffff81000200).name, "sys_read");
        assert_eq!(table.resolve(0xffffffffc0001004).name, "ext4_read_block [ext4]");
        // Hidden addresses (kptr_restrict): nothing to name by; not kallsyms: none either.
        assert!(parse("0000000000000000 T _stext\n0000000000000000 t clear_page_erms\n").is_none());
        assert!(parse("\x7fELF\x02\x01").is_none());
    }
}
