//! The lines of `/proc/PID/maps` that map a file executable: how a process's code is found
//! when it is attached to, when its stacks are walked at a look, and for `-a`'s processes.

/// A file mapped executable, as a line of `/proc/PID/maps` says: (start, len, pgoff, (major,
/// minor) device, inode, path).
pub type MapsEntry = (u64, u64, u64, (u32, u32), u64, String);

/// One line of `/proc/PID/maps` that maps a file executable.
pub fn executable_mapping(line: &str) -> Option<MapsEntry> {
    let mut w = line.split_ascii_whitespace();
    let (range, perms, pgoff, dev, ino) = (w.next()?, w.next()?, w.next()?, w.next()?, w.next()?);
    let path = w.collect::<Vec<_>>().join(" ");
    if !perms.contains('x') || path.is_empty() {
        return None;
    }
    let (lo, hi) = range.split_once('-')?;
    let (lo, hi) = (u64::from_str_radix(lo, 16).ok()?, u64::from_str_radix(hi, 16).ok()?);
    let (major, minor) = dev.split_once(':')?;
    let dev = (u32::from_str_radix(major, 16).ok()?, u32::from_str_radix(minor, 16).ok()?);
    Some((lo, hi.checked_sub(lo)?, u64::from_str_radix(pgoff, 16).ok()?, dev, ino.parse().ok()?, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executable_mappings_of_proc_maps() {
        let maps = "\
55d0c8a00000-55d0c8a15000 r--p 00000000 fd:01 1234567 /usr/bin/fib
55d0c8a15000-55d0c8a57000 r-xp 00015000 fd:01 1234567 /usr/bin/fib
7f1c2d028000-7f1c2d1bd000 r-xp 00028000 103:02 42 /usr/lib/x86_64-linux-gnu/libc.so.6
7ffd1a3f1000-7ffd1a3f3000 r-xp 00000000 00:00 0 [vdso]
7ffd1a3f3000-7ffd1a3f5000 r-xp 00000000 00:00 0 
7f00 garbage";
        let found: Vec<_> = maps.lines().filter_map(executable_mapping).collect();
        assert_eq!(
            found,
            vec![
                (0x55d0c8a15000, 0x42000, 0x15000, (0xfd, 1), 1234567, "/usr/bin/fib".to_string()),
                (0x7f1c2d028000, 0x195000, 0x28000, (0x103, 2), 42, "/usr/lib/x86_64-linux-gnu/libc.so.6".to_string()),
                (0x7ffd1a3f1000, 0x2000, 0, (0, 0), 0, "[vdso]".to_string()),
            ]
        );
    }
}
