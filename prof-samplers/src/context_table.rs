//! `sys:context`, the kernel's table of contexts: who owns a pid, what it is named, whether it
//! lives. profd reads it to check who may profile a process and to name processes.

/// The name of pid 0's samples in a session on all: the user contexts that have no pid.
pub const BOOTSTRAP: &str = "[bootstrap]";

/// The name (the executable's path, as procmgr sets it) of `pid` in a `sys:context` table,
/// whose last column is `NAME`: the text from that column's place in the header (the memory
/// columns hold spaces, "1.95 MB"), or the row's last word where a wide field pushed it on.
pub fn name_in_context_table(table: &str, pid: u32) -> Option<String> {
    let mut lines = table.lines();
    let at = lines.next()?.find("NAME")?;
    lines.find_map(|line| {
        let p: u32 = line.split_ascii_whitespace().next()?.parse().ok()?;
        if p != pid {
            return None;
        }
        let in_column = line
            .get(at..)
            .filter(|_| line[..at].ends_with(|c: char| c.is_ascii_whitespace()))
            .map(str::trim)
            .filter(|n| !n.is_empty());
        in_column.or_else(|| line.split_ascii_whitespace().last()).map(str::to_string)
    })
}

/// The owner (euid) of `pid` in a `sys:context` table (`PID EUID EGID …` columns).
pub fn owner_in_context_table(table: &str, pid: u32) -> Option<u32> {
    table.lines().skip(1).find_map(|line| {
        let mut w = line.split_ascii_whitespace();
        let p: u32 = w.next()?.parse().ok()?;
        let euid: u32 = w.next()?.parse().ok()?;
        (p == pid).then_some(euid)
    })
}

/// Is `pid` in the `sys:context` table, and not dead (`Z`)?
pub fn alive_in_context_table(table: &str, pid: u32) -> bool {
    table.lines().skip(1).any(|line| {
        let w: Vec<&str> = line.split_ascii_whitespace().collect();
        w.first().and_then(|p| p.parse::<u32>().ok()) == Some(pid) && w.get(3).is_some_and(|stat| !stat.contains('Z'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_from_the_kernel_context_table() {
        let table = "PID   EUID  EGID  STAT  CPU   AFFINITY   TIME        PRIVATE SHARED  NAME\n\
                     1     0     0     UR    0     #0         00:00:00.01 12 KB   0 B     /bin/init\n\
                     42    1000  1000  S     ?     #0         00:00:01.20 2 MB    0 B     /usr/bin/fib 38\n";
        assert_eq!(owner_in_context_table(table, 42), Some(1000));
        assert_eq!(owner_in_context_table(table, 1), Some(0));
        assert_eq!(owner_in_context_table(table, 4), None);
        assert_eq!(owner_in_context_table("", 1), None);
        assert!(alive_in_context_table(table, 42));
        assert!(!alive_in_context_table(table, 4));
        let dead = table.replace("42    1000  1000  S ", "42    1000  1000  Z ");
        assert!(!alive_in_context_table(&dead, 42));
    }

    /// Rows as the kernel at 663e6641 prints them (the memory columns hold spaces).
    #[test]
    fn names_from_the_kernel_context_table() {
        let table = "PID   EUID  EGID  STAT  CPU   AFFINITY   TIME        PRIVATE SHARED  NAME\n\
                     0     0     0     RR    #0    1          00:00:00.00 1.12 KB 0 B     [kmain]\n\
                     7     0     0     UB    #0    1          00:00:00.70 1.95 MB 4.00 KB /scheme/initfs/bin/ramfs\n\
                     9     0     0     UB    #0    1          00:00:00.03 1.82 MB 4.00 KB /scheme/initfs/bin/profd\n\
                     12    0     0     UB    #0    1          100:00:00.03 100.5 MB 4.00 KB /usr/bin/wide\n";
        assert_eq!(name_in_context_table(table, 7).as_deref(), Some("/scheme/initfs/bin/ramfs"));
        assert_eq!(name_in_context_table(table, 9).as_deref(), Some("/scheme/initfs/bin/profd"));
        assert_eq!(name_in_context_table(table, 0).as_deref(), Some("[kmain]"));
        // Fields wider than their columns push the name on: its last word.
        assert_eq!(name_in_context_table(table, 12).as_deref(), Some("/usr/bin/wide"));
        assert_eq!(name_in_context_table(table, 4), None);
        assert_eq!(name_in_context_table("", 7), None);
    }
}
