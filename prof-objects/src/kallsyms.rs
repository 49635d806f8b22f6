//! The running Linux kernel's functions from `/proc/kallsyms` (`--kernel /proc/kallsyms`):
//! `ffffffff81000000 T _stext` lines, text symbols only (`t`, `T`, `w`, `W`), at the kernel's
//! run addresses, which are its samples' addresses. Where the kernel hides its addresses
//! (`kernel.kptr_restrict`, or an unprivileged reader) every address is 0: no symbols then.

use std::path::Path;

use crate::object_file::ObjectFile;
use crate::symbols::{Function, SymbolTable};

/// The kernel's functions from a kallsyms file; `None` if it is not one or hides addresses.
pub fn read(path: &Path) -> Option<ObjectFile> {
    let text = crate::bounded::read_to_string(path, crate::bounded::proc_limits::KALLSYMS).ok()?;
    let table = parse(&text)?;
    Some(ObjectFile::from_symbols(path, table))
}

/// Is `path` a file that can name the kernel's samples (an ELF, or kallsyms text)? `Err`
/// says why not (missing, a directory or a device, too large, neither format); `Ok(Some)` is
/// a warning: kallsyms whose addresses are hidden names nothing. Only the file's start is
/// read: the symbolizer reads it when a kernel sample comes.
pub fn check(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read;
    let shown = path.display();
    let cannot = |e: &std::io::Error| format!("Cannot read the kernel's symbols from '{shown}': {}", crate::os_message(e));
    let file = crate::bounded::open_regular(path).map_err(|e| cannot(&e))?;
    let mut start = Vec::new();
    file.take(4096).read_to_end(&mut start).map_err(|e| cannot(&e))?;
    if start.starts_with(b"\x7fELF") {
        return Ok(None);
    }
    let limit = crate::bounded::proc_limits::KALLSYMS;
    if std::fs::metadata(path).is_ok_and(|m| m.len() > limit) {
        return Err(format!(
            "'{shown}' is not the kernel's symbols: larger than {} and not an ELF file",
            crate::bounded::size_text(limit)
        ));
    }
    // Whole lines only: the last may be cut at 4096 bytes.
    let text = String::from_utf8_lossy(&start);
    let lines = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => &text[..],
    };
    let kallsyms_line = |l: &str| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.len() >= 3 && w[0].len() >= 8 && u64::from_str_radix(w[0], 16).is_ok() && w[1].len() == 1
    };
    if lines.is_empty() || !lines.lines().all(kallsyms_line) {
        return Err(format!("'{shown}' is not the kernel's symbols: neither an ELF file nor kallsyms text (/proc/kallsyms)"));
    }
    let hidden = lines.lines().all(|l| l.split_whitespace().next().is_some_and(|a| a.bytes().all(|b| b == b'0')));
    Ok(hidden.then(|| {
        format!("profil: warning: {shown} hides the kernel's addresses (kernel.kptr_restrict, or not root): kernel samples are not named")
    }))
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

    #[test]
    fn a_file_that_cannot_name_the_kernel_is_said_to_be_one() {
        let dir = std::env::temp_dir().join(format!("kallsyms-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let at = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let good = at("kallsyms", "ffffffff81000000 T _stext\nffffffff81000040 t clear_page_erms\n");
        assert_eq!(check(&good), Ok(None));
        let hidden = at("hidden", "0000000000000000 T _stext\n0000000000000000 t clear_page_erms\n");
        assert!(check(&hidden).unwrap().unwrap().contains("hides the kernel's addresses"));
        let passwd = at("passwd", "root:x:0:0:root:/root:/bin/bash\n");
        assert!(check(&passwd).unwrap_err().ends_with("is not the kernel's symbols: neither an ELF file nor kallsyms text (/proc/kallsyms)"));
        assert!(check(&at("empty", "")).is_err());
        assert!(check(&std::env::current_exe().unwrap()).unwrap().is_none());
        assert_eq!(
            check(Path::new("/dev/zero")).unwrap_err(),
            "Cannot read the kernel's symbols from '/dev/zero': it is a character device, not a file"
        );
        assert!(check(&dir).unwrap_err().ends_with("Is a directory"));
        assert!(check(&dir.join("none")).unwrap_err().ends_with("No such file or directory"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
