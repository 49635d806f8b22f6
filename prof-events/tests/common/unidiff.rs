//! A strict applier of a patch's unified-diff hunks to one file's text: every hunk at the line its
//! header names, every context and removed line as the text has it, its line counts as the header
//! says. No offset, no fuzz: anything else panics, naming the hunk and the line.

/// The part of `patch` (a `git format-patch` file) that changes `path`, from its `diff --git`
/// line to the next file's, if the patch changes it.
pub fn file_diff<'a>(patch: &'a str, path: &str) -> Option<&'a str> {
    let start = patch.find(&format!("diff --git a/{path} b/{path}\n"))?;
    let section = &patch[start..];
    Some(&section[..section[1..].find("\ndiff --git ").map_or(section.len(), |i| i + 2)])
}

/// `text` with the hunks of `diff` (a [`file_diff`]) applied; `what` names them in a panic.
pub fn apply(text: &str, diff: &str, what: &str) -> String {
    assert!(text.is_empty() || text.ends_with('\n'), "{what}: the text does not end with a newline");
    assert!(!diff.contains("\n\\ No newline at end of file"), "{what}: a file without a final newline");
    let old: Vec<&str> = text.lines().collect();
    let mut new: Vec<&str> = Vec::new();
    // The next line of `old` not yet copied to `new`.
    let mut next = 0;
    let mut lines = diff.lines().skip_while(|l| !l.starts_with("@@ ")).peekable();
    assert!(lines.peek().is_some(), "{what}: no hunk");
    while let Some(header) = lines.next() {
        if header.starts_with("diff --git ") || header.is_empty() {
            // The end of the section (the next file's diff, or the blank line before it).
            assert!(lines.all(|l| l.is_empty() || l.starts_with("diff --git ")), "{what}: text after the hunks");
            break;
        }
        let (old_start, old_len, new_start, new_len) = hunk_header(header).unwrap_or_else(|| panic!("{what}: not a hunk header: {header:?}"));
        // A hunk's start is 1-based; a hunk of no old lines names the line before it.
        let at = if old_len == 0 { old_start } else { old_start.checked_sub(1).unwrap_or_else(|| panic!("{what}: {header}: line 0")) };
        assert!(at >= next, "{what}: {header}: before or inside the hunk before it");
        assert!(at <= old.len(), "{what}: {header}: past the text's end ({} lines)", old.len());
        new.extend_from_slice(&old[next..at]);
        // Likewise the new start: 1-based, or the line before a hunk of no new lines.
        let expected = if new_len == 0 { new.len() } else { new.len() + 1 };
        assert_eq!(new_start, expected, "{what}: {header}: the new start is not where the hunks before it leave the text");
        next = at;
        let (mut taken, mut given) = (0, 0);
        while taken < old_len || given < new_len {
            let line = lines.next().unwrap_or_else(|| panic!("{what}: {header}: the hunk ends after {taken} old and {given} new lines"));
            let (mark, body) = line.split_at(line.len().min(1));
            match mark {
                " " | "-" => {
                    let found = old.get(next).unwrap_or_else(|| panic!("{what}: {header}: the text ends at line {}", next + 1));
                    assert!(*found == body, "{what}: {header}: line {} is {found:?}, the hunk has {body:?}", next + 1);
                    next += 1;
                    taken += 1;
                    if mark == " " {
                        new.push(body);
                        given += 1;
                    }
                }
                "+" => {
                    new.push(body);
                    given += 1;
                }
                _ => panic!("{what}: {header}: not a hunk line: {line:?}"),
            }
        }
        assert!(taken == old_len && given == new_len, "{what}: {header}: the hunk has {taken} old and {given} new lines");
        if let Some(after) = lines.peek() {
            assert!(after.starts_with("@@ ") || after.starts_with("diff --git ") || after.is_empty(), "{what}: {header}: more lines than the header counts: {after:?}");
        }
    }
    new.extend_from_slice(&old[next..]);
    let mut out = new.join("\n");
    if !new.is_empty() {
        out.push('\n');
    }
    out
}

/// `@@ -A[,B] +C[,D] @@...` as (A, B, C, D); a count left out is 1.
fn hunk_header(line: &str) -> Option<(usize, usize, usize, usize)> {
    let ranges = line.strip_prefix("@@ -")?;
    let (ranges, _) = ranges.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let ((a, b), (c, d)) = (range(old)?, range(new)?);
    Some((a, b, c, d))
}
