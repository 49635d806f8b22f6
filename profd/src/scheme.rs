//! The `prof:` scheme's logic, independent of the Redox socket: which paths exist, what each
//! open file reads and writes, and which errno each failure is. The daemon's `SchemeSync`
//! adapter (`src/redox_daemon.rs`, Redox only) only forwards calls here, so the host tests drive this
//! handler directly (open / write / read / close, every errno, the uid rules).
//!
//! | path      | access | content |
//! |-----------|--------|---------|
//! | `ctl`     | write  | commands, see [`prof_core::ctl`] |
//! | `status`  | read   | [`prof_core::formats::status_line`] (anyone may read it) |
//! | `bins`    | read   | [`prof_core::formats::bins_text`] (root or the session's starter) |
//! | `data`    | read   | binary [`prof_core::ProfData`] (root or the session's starter) |
//! | `samples` | read   | [`prof_core::formats::samples_text`] (root or the session's starter) |
//! | `stacks`  | read   | [`prof_core::formats::stacks_text`] (root or the session's starter) |
//! | `servers` | read   | [`prof_core::formats::servers_text`] (root or the session's starter) |
//! | `clock`   | read   | [`prof_core::kernel_clock::render`] (root or the session's starter; empty where the kernel keeps no clock) |
//! | `children`| read   | [`prof_core::formats::children_text`] (root or the session's starter) |
//! | `threads` | read   | [`prof_core::formats::threads_text`] (root or the session's starter) |
//! | `timeline`| read   | [`prof_core::formats::timeline_text`] (root or the session's starter; empty where the records have no times) |
//! | `requests`| read   | [`prof_core::requests_file::requests_text`] (root or the session's starter; empty where the records have no requests) |
//!
//! A file's content is rendered when it is read at offset 0 and served from that snapshot for
//! later offsets, so a reader sees one consistent profile however small its buffer. Reads come
//! with the kernel's file position; one without a position ([`UNPOSITIONED`]) reads on from
//! the file's own cursor.
//!
//! Also what `ls` and `stat` ask: [`ProfScheme::dir_entries`], [`ProfScheme::stat`],
//! [`ProfScheme::path`].

use std::collections::BTreeMap;

use prof_core::ctl::{self, CtlCommand};
use prof_core::error::ProfError;
use prof_core::formats;
use prof_core::sampler::Sampler;
use prof_core::session::{Profd, SessionState};

/// An errno value (the same numbers on Redox and Linux).
pub type Errno = i32;

/// The offset of a read or write that carries no file position (Redox passes `u64::MAX`).
pub const UNPOSITIONED: u64 = u64::MAX;

/// The scheme's path, as `fpath` reports it.
pub const SCHEME_PATH: &str = "/scheme/prof";

/// What `fstat` reports of an open file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    /// A number of its own per file (the directory is 1): tools such as grep compare
    /// (device, inode) pairs, and all-zero ones look like one file.
    pub inode: u64,
    pub is_dir: bool,
    /// Permission bits: the directory `0o555`, `ctl` `0o222`, the others `0o444`.
    pub perm: u16,
    /// Bytes of the file's current snapshot.
    pub size: u64,
}

/// The files of the scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// The scheme's directory: reading it lists the entries.
    Root,
    Ctl,
    Status,
    Bins,
    Data,
    Samples,
    Stacks,
    Servers,
    Children,
    Threads,
    Clock,
    Timeline,
    Requests,
}

/// Entries of the root directory, in listing order.
pub const ENTRIES: [(&str, Node); 12] = [
    ("ctl", Node::Ctl),
    ("status", Node::Status),
    ("bins", Node::Bins),
    ("data", Node::Data),
    ("samples", Node::Samples),
    ("stacks", Node::Stacks),
    ("servers", Node::Servers),
    ("clock", Node::Clock),
    ("children", Node::Children),
    ("threads", Node::Threads),
    ("timeline", Node::Timeline),
    ("requests", Node::Requests),
];

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    ReadWrite,
    /// No access mode (`O_PATH`, as relibc's `stat` opens): the file is named, its status
    /// read (`fstat`, `fpath`), nothing else.
    Path,
}

struct OpenFile {
    node: Node,
    uid: u32,
    /// Opened with [`Access::Path`]: neither read nor written.
    path_only: bool,
    content: Option<Vec<u8>>,
    /// Where an unpositioned read goes on from.
    cursor: u64,
}

/// The handler: the profiling service plus the open files.
pub struct ProfScheme<S: Sampler> {
    profd: Profd<S>,
    files: BTreeMap<usize, OpenFile>,
    next_id: usize,
    /// The `ctl` file whose `start all` began the running session: a session on every process
    /// has no program whose exit ends it, so it ends when that file is closed (its starter
    /// stopped, or was killed: the kernel closes a dead process's files).
    all_starter: Option<usize>,
}

impl<S: Sampler> ProfScheme<S> {
    /// The id of the scheme root (the capability the daemon hands to init).
    pub const ROOT_ID: usize = 0;

    pub fn new(profd: Profd<S>) -> Self {
        ProfScheme { profd, files: BTreeMap::new(), next_id: Self::ROOT_ID + 1, all_starter: None }
    }

    pub fn profd(&self) -> &Profd<S> {
        &self.profd
    }

    pub fn profd_mut(&mut self) -> &mut Profd<S> {
        &mut self.profd
    }

    /// Number of open files (to check that closed handles are forgotten).
    pub fn open_files(&self) -> usize {
        self.files.len()
    }

    /// Open `path` (relative to the scheme root; leading/trailing slashes ignored).
    pub fn open(&mut self, path: &str, access: Access, uid: u32) -> Result<usize, Errno> {
        let path = path.trim_matches('/');
        let node = if path.is_empty() {
            Node::Root
        } else {
            ENTRIES.iter().find(|e| e.0 == path).map(|e| e.1).ok_or(libc::ENOENT)?
        };
        let allowed = match node {
            _ if access == Access::Path => true,
            Node::Ctl => access == Access::Write,
            _ => access == Access::Read,
        };
        if !allowed {
            return Err(if node == Node::Root { libc::EISDIR } else { libc::EACCES });
        }
        let id = self.next_id;
        self.next_id += 1;
        self.files.insert(id, OpenFile { node, uid, path_only: access == Access::Path, content: None, cursor: 0 });
        Ok(id)
    }

    pub fn node(&self, id: usize) -> Result<Node, Errno> {
        self.files.get(&id).map(|f| f.node).ok_or(libc::EBADF)
    }

    /// The node of a file opened to be read or written (not [`Access::Path`]).
    fn open_node(&self, id: usize) -> Result<Node, Errno> {
        match self.files.get(&id) {
            Some(f) if !f.path_only => Ok(f.node),
            _ => Err(libc::EBADF),
        }
    }

    /// Read from `offset` ([`UNPOSITIONED`]: from the file's cursor); offset 0 renders a
    /// fresh snapshot.
    pub fn read(&mut self, id: usize, buf: &mut [u8], offset: u64) -> Result<usize, Errno> {
        self.open_node(id)?;
        let (node, uid, offset) = {
            let f = self.files.get(&id).ok_or(libc::EBADF)?;
            (f.node, f.uid, if offset == UNPOSITIONED { f.cursor } else { offset })
        };
        let stale = offset == 0 || self.files[&id].content.is_none();
        if node == Node::Ctl {
            return Err(libc::EBADF);
        }
        if stale {
            let content = self.render(node, uid)?;
            self.files.get_mut(&id).ok_or(libc::EBADF)?.content = Some(content);
        }
        let file = self.files.get_mut(&id).ok_or(libc::EBADF)?;
        let content = file.content.as_deref().unwrap_or(&[]);
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(content.len());
        let n = buf.len().min(content.len() - start);
        buf[..n].copy_from_slice(&content[start..start + n]);
        file.cursor = (start + n) as u64;
        Ok(n)
    }

    /// The directory's entries from `offset` on (an entry's index; the next one resumes at
    /// index + 1), given to `emit` until it says the caller's buffer is full. ENOTDIR for a
    /// file.
    pub fn dir_entries(&self, id: usize, offset: u64, mut emit: impl FnMut(u64, &'static str) -> bool) -> Result<(), Errno> {
        if self.open_node(id)? != Node::Root {
            return Err(libc::ENOTDIR);
        }
        let skip = usize::try_from(offset).unwrap_or(usize::MAX);
        for (index, (name, _)) in ENTRIES.iter().enumerate().skip(skip) {
            if !emit(index as u64, name) {
                break;
            }
        }
        Ok(())
    }

    /// `fstat`: kind, permissions and the size of the current snapshot (rendered if needed).
    pub fn stat(&mut self, id: usize) -> Result<FileStat, Errno> {
        let node = self.node(id)?;
        let perm = match node {
            Node::Root => 0o555,
            Node::Ctl => 0o222,
            _ => 0o444,
        };
        let inode = ENTRIES.iter().position(|e| e.1 == node).map_or(1, |i| i as u64 + 2);
        Ok(FileStat { inode, is_dir: node == Node::Root, perm, size: self.size(id)? })
    }

    /// `fpath`: `/scheme/prof` for the directory, `/scheme/prof/<name>` for a file.
    pub fn path(&self, id: usize) -> Result<String, Errno> {
        let node = self.node(id)?;
        Ok(match ENTRIES.iter().find(|e| e.1 == node) {
            Some((name, _)) => format!("{SCHEME_PATH}/{name}"),
            None => SCHEME_PATH.to_string(),
        })
    }

    /// Size of the file's current snapshot (rendering one if needed).
    pub fn size(&mut self, id: usize) -> Result<u64, Errno> {
        let f = self.files.get(&id).ok_or(libc::EBADF)?;
        let (node, uid, path_only) = (f.node, f.uid, f.path_only);
        if node == Node::Ctl {
            return Ok(0);
        }
        if f.content.is_none() {
            // A file only named (stat) whose contents the caller may not read: size 0.
            let content = match self.render(node, uid) {
                Err(_) if path_only => Vec::new(),
                rendered => rendered?,
            };
            self.files.get_mut(&id).ok_or(libc::EBADF)?.content = Some(content);
        }
        Ok(self.files[&id].content.as_ref().map_or(0, |c| c.len() as u64))
    }

    /// Write commands to `ctl` as `uid` (the caller of this write).
    pub fn write(&mut self, id: usize, buf: &[u8], uid: u32) -> Result<usize, Errno> {
        if self.open_node(id)? != Node::Ctl {
            return Err(libc::EBADF);
        }
        let text = std::str::from_utf8(buf).map_err(|_| libc::EINVAL)?;
        for command in ctl::parse(text).map_err(ProfError::errno)? {
            let all = matches!(command, CtlCommand::StartAll { .. });
            let starts = !matches!(command, CtlCommand::Stop);
            match command {
                CtlCommand::Start { req, image } => self.profd.profile(uid, req, &image),
                CtlCommand::StartAll { rate } => self.profd.profile_all(uid, rate),
                CtlCommand::Stop => self.profd.stop(uid),
            }
            .map_err(ProfError::errno)?;
            if starts {
                self.all_starter = all.then_some(id);
            }
        }
        Ok(buf.len())
    }

    /// Forget a closed file. A session on one program is not touched: a client that goes
    /// away mid-session leaves it running (it ends with its program), and its data readable.
    /// A session on every process ends when the `ctl` file that started it is closed.
    pub fn close(&mut self, id: usize) {
        if let Some(file) = self.files.remove(&id) {
            if self.all_starter == Some(id) {
                self.all_starter = None;
                if self.profd.state() == SessionState::Running {
                    // Root started it (only root may): its data stays readable.
                    let _ = self.profd.stop(file.uid);
                }
            }
        }
    }

    fn render(&mut self, node: Node, uid: u32) -> Result<Vec<u8>, Errno> {
        self.profd.pump().map_err(ProfError::errno)?;
        let state = self.profd.state();
        Ok(match node {
            Node::Root => ENTRIES.iter().map(|e| format!("{}\n", e.0)).collect::<String>().into_bytes(),
            // Like `ps`, the status is public: anyone may see whether the profiler is busy.
            Node::Status => formats::status_line(state, self.profd.last_session()).into_bytes(),
            Node::Bins => formats::bins_text(&self.profd.prof_data(uid).map_err(ProfError::errno)?).into_bytes(),
            Node::Data => self.profd.prof_data(uid).map_err(ProfError::errno)?.to_bytes(),
            Node::Samples => {
                formats::samples_text(self.profd.session(uid).map_err(ProfError::errno)?).into_bytes()
            }
            Node::Stacks => formats::stacks_text(self.profd.session(uid).map_err(ProfError::errno)?).into_bytes(),
            Node::Servers => formats::servers_text(self.profd.session(uid).map_err(ProfError::errno)?).into_bytes(),
            Node::Children => formats::children_text(self.profd.session(uid).map_err(ProfError::errno)?).into_bytes(),
            Node::Threads => formats::threads_text(self.profd.session(uid).map_err(ProfError::errno)?).into_bytes(),
            Node::Timeline => formats::timeline_text(self.profd.session(uid).map_err(ProfError::errno)?).into_bytes(),
            Node::Requests => {
                prof_core::requests_file::requests_text(self.profd.session(uid).map_err(ProfError::errno)?).into_bytes()
            }
            Node::Clock => {
                let session = self.profd.session(uid).map_err(ProfError::errno)?;
                let placed = |s: &prof_core::session::Session| {
                    // The kernel's account (kernel-patch/series), or one built from its switch
                    // records (typed records).
                    let mut clock = s.kernel_clock.clone().or_else(|| s.clock_from_records())?;
                    clock.image = s.load_base.map(|load_base| prof_core::kernel_clock::Placement { load_base, text: s.text });
                    Some(prof_core::kernel_clock::render(&clock))
                };
                session.and_then(placed).unwrap_or_default().into_bytes()
            }
            Node::Ctl => Vec::new(),
        })
    }
}
