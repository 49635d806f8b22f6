//! Odd inputs never panic: arguments that are not UTF-8 reach the program byte for byte.

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use common::{profil_bin, session, text};

#[test]
fn arguments_that_are_not_utf8_reach_the_program_unchanged() {
    let _s = session();
    let odd = OsStr::from_bytes(b"a\xff\xfeb");
    let o = Command::new(profil_bin()).args([OsStr::new("-f"), OsStr::new("printf"), OsStr::new("[%s]"), odd]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(o.stdout.windows(6).any(|w| w == b"[a\xff\xfeb]"), "{}", text(&o).0);
}

#[test]
fn an_option_argument_that_is_not_utf8_is_a_usage_error() {
    let o = Command::new(profil_bin()).args([OsStr::new("-o"), OsStr::from_bytes(b"\xff.out"), OsStr::new("true")]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.starts_with("profil: option argument '\u{fffd}.out' is not valid UTF-8\n"), "{}", text(&o).1);
    // A program name that is not UTF-8 and does not exist: a clear error, no panic.
    let o = Command::new(profil_bin()).arg(OsStr::from_bytes(b"./no\xffsuch")).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o).1, "Profil Error: Cannot execute './no\u{fffd}such': No such file or directory\n");
}
