//! fib prints its result and the link-time addresses of its functions, equal to its own
//! symbol table (what `nm` shows and profil uses). (Being an integration test also makes
//! `cargo test --workspace` build target/<profile>/fib, which profil's end-to-end tests run.)

use std::process::Command;

fn symbol(elf: &goblin::elf::Elf, name: &str) -> u64 {
    elf.syms
        .iter()
        .find(|s| elf.strtab.get_at(s.st_name) == Some(name))
        .unwrap_or_else(|| panic!("no symbol {name}"))
        .st_value
}

#[test]
fn prints_result_and_link_time_addresses() {
    let exe = env!("CARGO_BIN_EXE_fib");
    let o = Command::new(exe).args(["20", "10"]).output().unwrap();
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "fib(20) = 10946.000000");
    let bytes = std::fs::read(exe).unwrap();
    let elf = goblin::elf::Elf::parse(&bytes).unwrap();
    for (line, sym) in lines[1..].iter().zip(["main", "fib", "loop", "overflow", "fib_printf"]) {
        let (label, addr) = line.split_once(": ").unwrap();
        assert_eq!(label, format!("fib.{}", if sym == "fib_printf" { "printf" } else { sym }));
        assert_eq!(u64::from_str_radix(addr.trim_start_matches("0x"), 16).unwrap(), symbol(&elf, sym), "{line}");
    }
    assert_eq!(lines.len(), 6);
}

#[test]
fn bad_arguments_are_refused() {
    let o = Command::new(env!("CARGO_BIN_EXE_fib")).arg("x").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("usage: fib [N [LOOPS]]"));
}
