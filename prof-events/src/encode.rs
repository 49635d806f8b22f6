//! Events into records as the kernel writes them: what host tests and fakes of the kernel
//! feed the decoder (the kernel itself writes with [`layout`](crate::layout) directly).

use crate::event::{Event, Ids, Sample};
use crate::layout::{self, header, Kind};

fn ids(who: Ids) -> u64 {
    layout::ids(who.pid.unwrap_or(0) as usize, who.thread)
}

/// `words` after a header of `kind`, cut to [`layout::MAX_WORDS`] as the kernel's buffer is.
fn record(kind: Kind, flags: u8, aux: u16, words: &[u64]) -> Vec<u64> {
    let words = &words[..words.len().min(layout::MAX_WORDS - 1)];
    let mut out = vec![header(kind, words.len() + 1, flags, aux)];
    out.extend_from_slice(words);
    out
}

/// The record of `event`, in this crate's layout (a sample without a pid as upstream's kind 0).
pub fn record_words(event: &Event) -> Vec<u64> {
    match event {
        Event::Sample(s @ Sample { who: Ids { pid: None, .. }, .. }) => {
            let mut w = vec![s.ip, s.time, u64::from(s.who.thread)];
            w.extend(s.kernel_frames.iter().chain(&s.user_frames));
            w.truncate(crate::decode::UPSTREAM_MAX_WORDS - 1);
            let mut out = vec![layout::MARKER | (w.len() as u64 + 1)];
            out.extend(w);
            out
        }
        Event::Sample(s) => {
            let source = s.source.map_or(0, |s| s as u8);
            let flags = (u8::from(s.kernel) * layout::SAMPLE_KERNEL) | (source << 1);
            let mut w = vec![s.time, ids(s.who), s.ip];
            w.extend(s.kernel_frames.iter().chain(&s.user_frames));
            record(Kind::Sample, flags, s.kernel_frames.len() as u16, &w)
        }
        Event::Switch(s) => {
            let mut w = vec![s.time, ids(s.left), ids(s.entered), s.detail];
            w.extend(&s.stack);
            let reason = s.reason.map_or(u16::MAX, |r| r as u16);
            record(Kind::Switch, 0, reason, &w)
        }
        Event::Lost { time, count, .. } => record(Kind::Lost, 0, 0, &[*time, *count]),
        Event::Name { time, who, name, .. } => {
            let mut w = vec![*time, ids(*who)];
            let bytes = &name.as_bytes()[..name.len().min(8 * (layout::MAX_WORDS - 3))];
            w.extend(bytes.chunks(8).map(|c| {
                let mut word = [0; 8];
                word[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(word)
            }));
            record(Kind::Context, 0, bytes.len() as u16, &w)
        }
        Event::Exec { time, who, entry, .. } => record(Kind::Exec, 0, 0, &[*time, ids(*who), *entry]),
        Event::NewThread { time, who, giver, .. } => record(Kind::NewContext, 0, 0, &[*time, ids(*who), ids(*giver)]),
        Event::Request { time, daemon, caller, scheme, tag, answered, .. } => {
            let flags = u8::from(*answered) * layout::REQUEST_ANSWERED;
            record(Kind::Request, flags, 0, &[*time, ids(*daemon), ids(*caller), *scheme, *tag])
        }
        Event::Start(s) => {
            let words = [s.time, s.version.word(), s.clock_hz.unwrap_or(0), u64::from(s.cpu), s.session];
            record(Kind::Start, 0, 0, &words)
        }
        Event::Syscall { time, who, entered, number, result, .. } => record(Kind::Syscall, 0, 0, &[*time, ids(*who), *entered, *number, *result]),
    }
}

/// A stream of records as a ring read gives it.
pub fn ring_bytes(events: &[Event]) -> Vec<u8> {
    events.iter().flat_map(record_words).flat_map(u64::to_le_bytes).collect()
}
