//! Which symbols name the kernel's samples, as perf chooses them: `--kernel FILE`,
//! `--kernel none`, or by default the running kernel's (Linux: `/proc/kallsyms`, where it shows
//! this user its addresses; Redox: the ELF the image boots). A saved run is named by default
//! only where it was recorded on this boot of this kernel: KASLR places the kernel (and its
//! modules) anew at each boot, and another boot's addresses would be named wrongly, silently.

use std::path::{Path, PathBuf};

/// `--kernel`, as the command line gives it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum KernelChoice {
    /// Not given: the running kernel's symbols (a saved run: where it ran on this boot).
    #[default]
    Running,
    /// `--kernel FILE`: FILE, for every run, live, loaded or compared.
    File(PathBuf),
    /// `--kernel none`: kernel samples are counted, not named.
    Off,
}

/// The kernel a run was recorded on (Linux): its boot (`/proc/sys/kernel/random/boot_id`, new
/// at every boot) and where its text starts (kallsyms' `_stext`, where the kernel shows it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KernelId {
    pub boot_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stext: Option<u64>,
}

/// What names a run's kernel samples: a file, or nothing, and why where the user did not ask
/// for nothing (a line of the report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelNames {
    pub file: Option<PathBuf>,
    pub why_not: Option<String>,
}

impl KernelNames {
    fn from_file(path: impl Into<PathBuf>) -> KernelNames {
        KernelNames { file: Some(path.into()), why_not: None }
    }

    fn unnamed(why: String) -> KernelNames {
        KernelNames { file: None, why_not: Some(why) }
    }

    /// Why a run's kernel samples (`kernel_samples` of them, or ticks) are not named, where
    /// they are not, there are some and the user did not ask for none.
    pub fn why_unnamed(&self, kernel_samples: u64) -> Option<&str> {
        self.why_not.as_deref().filter(|_| kernel_samples > 0 && self.file.is_none())
    }

    /// The report's line on it ([`KernelNames::why_unnamed`]).
    pub fn note(&self, kernel_samples: u64) -> Option<String> {
        let why = self.why_unnamed(kernel_samples)?;
        Some(format!("Kernel functions not named: {why}; --kernel FILE names them.\n"))
    }
}

impl KernelChoice {
    /// For a run recorded now: Linux's `/proc/kallsyms` where it shows the kernel's addresses.
    pub fn for_live(&self) -> KernelNames {
        match self {
            KernelChoice::File(path) => KernelNames::from_file(path),
            KernelChoice::Off => KernelNames { file: None, why_not: None },
            KernelChoice::Running if cfg!(target_os = "redox") => KernelNames::from_file(crate::platform::REDOX_KERNEL),
            KernelChoice::Running => match kallsyms_stext(Path::new(KALLSYMS)) {
                Some(_) => KernelNames::from_file(KALLSYMS),
                None => KernelNames::unnamed(hidden()),
            },
        }
    }

    /// For a saved run, recorded on the kernel `recorded` (`None`: the run does not say): the
    /// running kernel's symbols only where it is that kernel, on that boot.
    pub fn for_saved(&self, recorded: Option<&KernelId>) -> KernelNames {
        match (self, recorded) {
            (KernelChoice::Running, None) if cfg!(target_os = "redox") => self.for_live(),
            (KernelChoice::Running, Some(_)) if cfg!(target_os = "redox") => {
                KernelNames::unnamed("the run was recorded on another system's kernel".into())
            }
            (KernelChoice::Running, None) => {
                KernelNames::unnamed("the saved run does not record which kernel it ran on (saved by an older profil, or on Redox)".into())
            }
            (KernelChoice::Running, Some(id)) => match running() {
                Some(now) if now.stext.is_none() => KernelNames::unnamed(hidden()),
                // One boot is one kernel at one place; `_stext` checks it where both show it.
                Some(now) if now.boot_id == id.boot_id && id.stext.is_none_or(|at| now.stext == Some(at)) => self.for_live(),
                _ => KernelNames::unnamed("the run was recorded on another boot or kernel than this one (KASLR moves the kernel at each boot)".into()),
            },
            _ => self.for_live(),
        }
    }
}

/// The running Linux kernel's symbols.
pub const KALLSYMS: &str = "/proc/kallsyms";

/// Where the kernel says which boot this is (a random UUID, new at every boot).
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// Why `/proc/kallsyms` names nothing: the kernel hides its addresses from this user.
fn hidden() -> String {
    let sysctl = |name: &str| {
        let path = Path::new("/proc/sys/kernel").join(name);
        prof_objects::bounded::read_to_string(&path, prof_objects::bounded::proc_limits::SMALL)
            .map_or_else(|_| "?".to_string(), |s| s.trim().to_string())
    };
    format!(
        "{KALLSYMS} hides their addresses from this user (kernel.kptr_restrict {}, kernel.perf_event_paranoid {})",
        sysctl("kptr_restrict"),
        sysctl("perf_event_paranoid")
    )
}

/// The kernel profil runs on (Linux): `None` where the system says no boot (Redox).
pub fn running() -> Option<KernelId> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let boot_id = prof_objects::bounded::read_to_string(Path::new(BOOT_ID), prof_objects::bounded::proc_limits::SMALL).ok()?;
    let boot_id = boot_id.trim();
    (!boot_id.is_empty()).then(|| KernelId { boot_id: boot_id.to_string(), stext: kallsyms_stext(Path::new(KALLSYMS)) })
}

/// The address of `_stext` in the kallsyms file at `path`, where it shows one (not 0: the
/// kernel hides its addresses from this user). Read up to that line only: it is among the
/// first (after the per-CPU variables), of a file of 200,000 lines.
pub fn kallsyms_stext(path: &Path) -> Option<u64> {
    use std::io::BufRead;
    let file = prof_objects::bounded::open_regular(path).ok()?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = String::new();
    let mut read = 0u64;
    while read < prof_objects::bounded::proc_limits::KALLSYMS {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(n) => read += n as u64,
        }
        let mut words = line.split_whitespace();
        let (Some(addr), Some(_), Some("_stext")) = (words.next(), words.next(), words.next()) else { continue };
        return u64::from_str_radix(addr, 16).ok().filter(|&a| a != 0);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stext_is_read_where_it_is_shown() {
        let dir = std::env::temp_dir().join(format!("profil-stext-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let at = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let shown = at("shown", "0000000000000000 A fixed_percpu_data\nffffffff81000000 T _text\nffffffff81000000 T _stext\n");
        assert_eq!(kallsyms_stext(&shown), Some(0xffff_ffff_8100_0000));
        let hidden = at("hidden", "0000000000000000 T _text\n0000000000000000 T _stext\n");
        assert_eq!(kallsyms_stext(&hidden), None);
        assert_eq!(kallsyms_stext(&at("none", "ffffffff81000000 T _text\n")), None);
        assert_eq!(kallsyms_stext(&dir.join("missing")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A saved run's kernel: named by default only where it is this boot's; `--kernel FILE`
    /// whatever it is; `--kernel none` never, and without a word.
    #[test]
    fn a_saved_run_is_named_by_the_running_kernel_only_where_it_ran_on_it() {
        let file = KernelChoice::File("/boot/vmlinux".into());
        let other = KernelId { boot_id: "not-this-boot".into(), stext: Some(0xffff_ffff_8100_0000) };
        assert_eq!(file.for_saved(Some(&other)).file, Some(PathBuf::from("/boot/vmlinux")));
        assert_eq!(file.for_saved(None).file, Some(PathBuf::from("/boot/vmlinux")));
        assert_eq!(KernelChoice::Off.for_saved(Some(&other)), KernelNames { file: None, why_not: None });
        assert_eq!(KernelChoice::Off.for_live().note(5), None);
        if !cfg!(target_os = "linux") {
            return;
        }
        let named = KernelChoice::Running.for_saved(Some(&other));
        assert_eq!(named.file, None);
        let none = KernelChoice::Running.for_saved(None);
        assert!(none.why_not.as_deref().unwrap().contains("does not record which kernel it ran on"), "{none:?}");
        assert_eq!(none.note(0), None, "no kernel samples, nothing to say");
        let Some(now) = running() else { return };
        match now.stext {
            Some(_) => {
                assert_eq!(KernelChoice::Running.for_saved(Some(&now)).file, Some(PathBuf::from(KALLSYMS)));
                assert_eq!(KernelChoice::Running.for_live().file, Some(PathBuf::from(KALLSYMS)));
                let why = named.why_not.unwrap();
                assert!(why.contains("another boot or kernel"), "{why}");
                let moved = KernelId { stext: now.stext.map(|a| a + 0x20_0000), ..now.clone() };
                assert_eq!(KernelChoice::Running.for_saved(Some(&moved)).file, None);
                // Recorded where the kernel hid its text: this boot is enough.
                let hidden = KernelId { stext: None, ..now.clone() };
                assert_eq!(KernelChoice::Running.for_saved(Some(&hidden)).file, Some(PathBuf::from(KALLSYMS)));
                let elsewhere = KernelId { boot_id: "not-this-boot".into(), stext: None };
                assert_eq!(KernelChoice::Running.for_saved(Some(&elsewhere)).file, None);
            }
            None => {
                assert!(named.why_not.unwrap().contains("hides their addresses"));
                assert_eq!(KernelChoice::Running.for_live().file, None);
            }
        }
    }
}
