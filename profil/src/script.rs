//! A `#!` script, run as the kernel runs it: the interpreter its first line names, given that
//! line's one argument, the script, and the script's arguments; again while the interpreter is
//! a script itself (Linux gives up after 4 levels: ELOOP). `#!/usr/bin/env NAME` (or `env -S
//! NAME ARGS`) goes on to NAME on `PATH`, as env would. profil execs what this gives, so the
//! profiled process is the interpreter from its first instruction: its text gives the bins, and
//! a version manager's chain of shims is not a chain of execs to note.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How much of a file the kernel looks at for `#!` (Linux's BINPRM_BUF_SIZE).
const HEAD: usize = 256;
/// Linux's BINPRM_MAX_RECURSION: a script whose interpreter chain is longer fails with ELOOP.
const MAX_SCRIPTS: usize = 4;

/// What to exec for a program file: the file itself, or the interpreter its `#!` line leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The file to exec (an ELF file unless it is no script and no ELF file either: the
    /// caller's check says what it is).
    pub path: PathBuf,
    pub argv: Vec<OsString>,
    /// The interpreters on the way, as their lines name them or as env finds them (empty: the
    /// file is no script); the last is `path`.
    pub interpreters: Vec<String>,
}

/// Follow `path`'s `#!` lines (the program found as `execvp` finds it, run with `argv`).
pub fn resolve(path: &Path, argv: &[OsString]) -> Result<Launch, String> {
    let mut launch = Launch { path: path.to_path_buf(), argv: argv.to_vec(), interpreters: Vec::new() };
    let mut scripts = 0;
    loop {
        let line = shebang(&launch.path).map_err(|e| match scripts {
            0 => prof_objects::os_message(&e),
            _ => format!("its interpreter '{}': {}", launch.path.display(), prof_objects::os_message(&e)),
        })?;
        let Some(line) = line else { break };
        scripts += 1;
        if scripts > MAX_SCRIPTS {
            return Err(format!("its interpreters are scripts more than {MAX_SCRIPTS} deep (the kernel refuses it: ELOOP)"));
        }
        let (interpreter, argument) = split_line(&line).ok_or("a script with no interpreter")?;
        // The kernel's argv: the interpreter as written, its argument, the file exec'd, the rest.
        let mut next: Vec<OsString> = vec![OsStr::from_bytes(interpreter).into()];
        next.extend(argument.map(|a| OsStr::from_bytes(a).to_os_string()));
        next.push(launch.path.clone().into_os_string());
        next.extend(launch.argv.iter().skip(1).cloned());
        launch.interpreters.push(String::from_utf8_lossy(interpreter).into_owned());
        launch.path = PathBuf::from(OsStr::from_bytes(interpreter));
        launch.argv = next;
        if let Some(words) = argument.and_then(|a| env_command(interpreter, a)) {
            let name = OsStr::from_bytes(words[0]);
            let found = prof_objects::elf::find_program(name)
                .map_err(|e| format!("its interpreter '{}' (through env): {e}", name.to_string_lossy()))?;
            // env's argv for NAME: the words, then what followed env's argument.
            let rest = launch.argv.split_off(2);
            launch.argv = words.iter().map(|w| OsStr::from_bytes(w).to_os_string()).chain(rest).collect();
            // env itself is never run: the interpreter is what it would have run.
            launch.interpreters.pop();
            launch.interpreters.push(found.display().to_string());
            launch.path = found;
        }
    }
    Ok(launch)
}

/// The `#!` line of the file (without `#!` and the newline), or `None` if it has none.
fn shebang(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let file = std::fs::File::open(path)?;
    // A directory or a device is no script; the ELF check says what it is.
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Ok(None);
    }
    let mut head = Vec::with_capacity(HEAD);
    file.take(HEAD as u64).read_to_end(&mut head)?;
    let Some(line) = head.strip_prefix(b"#!") else { return Ok(None) };
    Ok(Some(line.split(|&b| b == b'\n').next().unwrap_or_default().to_vec()))
}

/// The interpreter and its one argument (the rest of the line, trimmed), as Linux splits it.
fn split_line(line: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let start = line.iter().position(|b| !blank(b))?;
    let line = &line[start..];
    let end = line.iter().position(blank).unwrap_or(line.len());
    let (interpreter, rest) = line.split_at(end);
    let rest = rest.trim_ascii();
    Some((interpreter, (!rest.is_empty()).then_some(rest)))
}

/// The command `env ARGUMENT` runs, where it is a plain one: `NAME` or `-S NAME WORDS` (words
/// without quotes, escapes, variables or assignments). Else `None`: env itself is the program.
fn env_command<'a>(interpreter: &[u8], argument: &'a [u8]) -> Option<Vec<&'a [u8]>> {
    if Path::new(OsStr::from_bytes(interpreter)).file_name() != Some(OsStr::new("env")) {
        return None;
    }
    let words: Vec<&[u8]> = match argument.strip_prefix(b"-S") {
        Some(split) => split.split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty()).collect(),
        // Linux gives env the rest of the line as one argument: one word is a name.
        None if !argument.iter().any(u8::is_ascii_whitespace) => vec![argument],
        None => return None,
    };
    let plain = |w: &&[u8]| !w.iter().any(|b| b"'\"\\$=".contains(b));
    (words.first().is_some_and(|w| !w.starts_with(b"-")) && words.iter().all(plain)).then_some(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;
    use std::os::unix::fs::PermissionsExt;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    /// A directory of this test's own (removed when it passes).
    fn scratch(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("profil-script-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn bytes(argv: &[OsString]) -> Vec<Vec<u8>> {
        argv.iter().map(|a| a.clone().into_vec()).collect()
    }

    fn os(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn lines_split_as_linux_splits_them() {
        assert_eq!(split_line(b" /bin/sh"), Some((&b"/bin/sh"[..], None)));
        assert_eq!(split_line(b"/bin/sh -e -x  "), Some((&b"/bin/sh"[..], Some(&b"-e -x"[..]))));
        assert_eq!(split_line(b"\t/usr/bin/env\tpython3"), Some((&b"/usr/bin/env"[..], Some(&b"python3"[..]))));
        assert_eq!(split_line(b"   "), None);
    }

    #[test]
    fn env_commands_are_followed_only_where_plain() {
        assert_eq!(env_command(b"/usr/bin/env", b"python3"), Some(vec![&b"python3"[..]]));
        assert_eq!(env_command(b"/usr/bin/env", b"-S python3 -u"), Some(vec![&b"python3"[..], &b"-u"[..]]));
        assert_eq!(env_command(b"/usr/bin/env", b"python3 -u"), None, "one argument with a space: env's own failure");
        assert_eq!(env_command(b"/usr/bin/env", b"-i python3"), None);
        assert_eq!(env_command(b"/usr/bin/env", b"-S A=1 python3"), None);
        assert_eq!(env_command(b"/usr/bin/env", b"-S sh -c 'x'"), None);
        assert_eq!(env_command(b"/usr/bin/envy", b"python3"), None);
    }

    #[test]
    fn a_script_runs_as_the_kernel_runs_it() {
        let dir = scratch("a");
        let script = write(&dir, "s", "#!/bin/sh -e\necho hi\n");
        let l = resolve(&script, &os(&["./s", "a b", "c"])).unwrap();
        assert_eq!(l.path, PathBuf::from("/bin/sh"));
        assert_eq!(bytes(&l.argv), bytes(&os(&["/bin/sh", "-e", script.to_str().unwrap(), "a b", "c"])));
        assert_eq!(l.interpreters, ["/bin/sh"]);
        // No script: as given.
        let elf = resolve(Path::new("/bin/sh"), &os(&["sh", "-c", "true"])).unwrap();
        assert_eq!((elf.path, elf.interpreters.len()), (PathBuf::from("/bin/sh"), 0));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn nested_scripts_and_env_are_followed() {
        let dir = scratch("nested");
        // A shim chain: the program is a script for a script run by env.
        let inner = write(&dir, "inner", "#!/usr/bin/env -S sh -e\n");
        let outer = write(&dir, "outer", &format!("#!{} -v\n", inner.display()));
        let l = resolve(&outer, &os(&["outer", "x"])).unwrap();
        assert_eq!(l.path, prof_objects::elf::find_program(OsStr::new("sh")).unwrap());
        let expected = os(&["sh", "-e", inner.to_str().unwrap(), "-v", outer.to_str().unwrap(), "x"]);
        assert_eq!(bytes(&l.argv), bytes(&expected));
        assert_eq!(l.interpreters, [inner.to_str().unwrap(), l.path.to_str().unwrap()]);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn loops_missing_interpreters_and_empty_lines_are_errors() {
        let dir = scratch("loops");
        let me = &dir.join("me");
        write(&dir, "me", &format!("#!{}\n", me.display()));
        assert!(resolve(me.as_path(), &os(&["me"])).unwrap_err().contains("more than 4 deep"));
        let empty = write(&dir, "empty", "#!\n");
        assert_eq!(resolve(&empty, &os(&["empty"])).unwrap_err(), "a script with no interpreter");
        let missing = write(&dir, "missing", "#!/no/such/sh\n");
        assert_eq!(resolve(&missing, &os(&["missing"])).unwrap_err(), "its interpreter '/no/such/sh': No such file or directory");
        let gone = write(&dir, "gone", "#!/usr/bin/env no-such-interpreter-here\n");
        assert!(resolve(&gone, &os(&["gone"])).unwrap_err().contains("'no-such-interpreter-here' (through env): not found on PATH"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
