//! Function symbols of the program, for naming where samples fell.

use goblin::elf::{sym, Elf};

/// One function: `[addr, addr + size)` in link-time addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub addr: u64,
    pub size: u64,
    /// Demangled name.
    pub name: String,
}

/// The program's functions, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct SymbolTable {
    functions: Vec<Function>,
}

impl SymbolTable {
    /// Functions from `.symtab`, or `.dynsym` for a stripped program.
    pub fn from_elf(elf: &Elf) -> SymbolTable {
        let mut functions: Vec<Function> = Vec::new();
        for (table, strtab) in [(&elf.syms, &elf.strtab), (&elf.dynsyms, &elf.dynstrtab)] {
            for s in table.iter() {
                if s.st_type() != sym::STT_FUNC || s.st_value == 0 || s.st_shndx == 0 {
                    continue;
                }
                if let Some(name) = strtab.get_at(s.st_name).filter(|n| !n.is_empty()) {
                    functions.push(Function { addr: s.st_value, size: s.st_size, name: demangle(name) });
                }
            }
        }
        SymbolTable::new(functions)
    }

    /// A table of the given functions (aliases at the same address keep the first name).
    pub fn new(mut functions: Vec<Function>) -> SymbolTable {
        functions.sort_by(|a, b| a.addr.cmp(&b.addr).then(b.size.cmp(&a.size)));
        functions.dedup_by_key(|f| f.addr);
        SymbolTable { functions }
    }

    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    pub fn functions(&self) -> &[Function] {
        &self.functions
    }

    /// The function containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&Function> {
        let i = self.functions.partition_point(|f| f.addr <= addr);
        let f = self.functions.get(i.checked_sub(1)?)?;
        (addr < f.addr + f.size.max(1)).then_some(f)
    }

    /// The function with this exact name.
    pub fn by_name(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// Demangle a Rust symbol (legacy or v0), without the hash suffix; others as they are.
pub fn demangle(name: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> SymbolTable {
        SymbolTable::new(vec![
            Function { addr: 0x2000, size: 0x40, name: "loop".into() },
            Function { addr: 0x1000, size: 0x100, name: "fib".into() },
            Function { addr: 0x1000, size: 0x100, name: "fib_alias".into() },
            Function { addr: 0x3000, size: 0x10, name: "overflow".into() },
        ])
    }

    #[test]
    fn lookup_is_exact_at_the_edges() {
        let t = table();
        assert_eq!(t.lookup(0x1000).unwrap().name, "fib");
        assert_eq!(t.lookup(0x10ff).unwrap().name, "fib");
        assert_eq!(t.lookup(0x1100), None);
        assert_eq!(t.lookup(0xfff), None);
        assert_eq!(t.lookup(0x203f).unwrap().name, "loop");
        assert_eq!(t.lookup(0x3010), None);
        assert_eq!(t.functions().len(), 3);
    }

    #[test]
    fn demangles_rust_names() {
        assert_eq!(demangle("_ZN3fib4main17h0123456789abcdefE"), "fib::main");
        assert_eq!(demangle("main"), "main");
    }
}
