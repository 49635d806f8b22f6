//! How the JSON document is laid out on lines: serde_json writes it, this formatter of its says
//! where the lines break.

use std::io;

/// What serde_json is inside; `keyed`: the value of an object's field (its key is on the path).
enum Open {
    /// The document, its fields a line each.
    Document,
    Object { keyed: bool },
    /// An array; `table`: its rows one a line, the closing bracket at this indent.
    Array { keyed: bool, table: Option<usize>, empty: bool },
}

/// serde_json's compact output with a document's lines: the top object's fields a line each,
/// the `tables` a row a line, the `line_starts` on lines of their own; everything else on one
/// line, `", "` and `": "` between its parts.
pub struct LineBreaks {
    /// Arrays written a row a line, by path (keys from the top, array indexes left out), with
    /// the indent of the closing bracket (a row is two deeper).
    tables: &'static [(&'static str, usize)],
    /// Fields that begin a line of their own, by path, at this indent.
    line_starts: &'static [(&'static str, usize)],
    open: Vec<Open>,
    /// The keys from the top to the container being written.
    path: Vec<String>,
    /// The key being written (held until its line is known) and whether it is its object's first.
    key: Option<(Vec<u8>, bool)>,
    /// The key of the value being written.
    value_of: String,
}

impl LineBreaks {
    pub fn new(tables: &'static [(&'static str, usize)], line_starts: &'static [(&'static str, usize)]) -> LineBreaks {
        LineBreaks { tables, line_starts, open: Vec::new(), path: Vec::new(), key: None, value_of: String::new() }
    }

    /// The path of a container that begins; `None` where it is an array's element.
    fn enter(&mut self) -> Option<String> {
        match self.open.last() {
            Some(Open::Document | Open::Object { .. }) => {
                self.path.push(self.value_of.clone());
                Some(self.path.join("."))
            }
            _ => None,
        }
    }

    fn leave(&mut self, keyed: bool) {
        if keyed {
            self.path.pop();
        }
    }

    fn line_start(&self, key: &str) -> Option<usize> {
        let path = self.path.iter().map(String::as_str).chain([key]).collect::<Vec<_>>().join(".");
        self.line_starts.iter().find(|(p, _)| *p == path).map(|&(_, indent)| indent)
    }
}

fn new_line<W: ?Sized + io::Write>(w: &mut W, indent: usize) -> io::Result<()> {
    write!(w, "\n{:indent$}", "")
}

impl serde_json::ser::Formatter for LineBreaks {
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let open = match self.open.is_empty() {
            true => Open::Document,
            false => Open::Object { keyed: self.enter().is_some() },
        };
        self.open.push(open);
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        match self.open.pop() {
            Some(Open::Document) => w.write_all(b"\n}"),
            Some(Open::Object { keyed }) => {
                self.leave(keyed);
                w.write_all(b"}")
            }
            _ => Err(io::Error::other("an object's end out of place")),
        }
    }

    fn begin_object_key<W: ?Sized + io::Write>(&mut self, _: &mut W, first: bool) -> io::Result<()> {
        self.key = Some((Vec::new(), first));
        Ok(())
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let (key, first) = self.key.take().unwrap_or_default();
        let key = String::from_utf8(key).map_err(io::Error::other)?;
        if !first {
            w.write_all(b",")?;
        }
        match self.open.last() {
            Some(Open::Document) => new_line(w, 2)?,
            _ => match self.line_start(&key) {
                Some(indent) => new_line(w, indent)?,
                None if !first => w.write_all(b" ")?,
                None => {}
            },
        }
        write!(w, "\"{key}\"")?;
        self.value_of = key;
        Ok(())
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let path = self.enter();
        let table = path.as_deref().and_then(|p| self.tables.iter().find(|(t, _)| *t == p)).map(|&(_, indent)| indent);
        self.open.push(Open::Array { keyed: path.is_some(), table, empty: true });
        w.write_all(b"[")
    }

    fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        let Some(Open::Array { table, empty, .. }) = self.open.last_mut() else {
            return Err(io::Error::other("an element outside an array"));
        };
        *empty = false;
        match (*table, first) {
            (Some(indent), true) => new_line(w, indent + 2),
            (Some(indent), false) => {
                w.write_all(b",")?;
                new_line(w, indent + 2)
            }
            (None, true) => Ok(()),
            (None, false) => w.write_all(b", "),
        }
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let Some(Open::Array { keyed, table, empty }) = self.open.pop() else {
            return Err(io::Error::other("an array's end out of place"));
        };
        self.leave(keyed);
        match table {
            Some(indent) if !empty => new_line(w, indent)?,
            _ => {}
        }
        w.write_all(b"]")
    }

    // A key's text is held, not written, until its line is known.
    fn begin_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        match self.key {
            Some(_) => Ok(()),
            None => w.write_all(b"\""),
        }
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin_string(w)
    }

    fn write_string_fragment<W: ?Sized + io::Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
        match &mut self.key {
            Some((key, _)) => key.extend_from_slice(fragment.as_bytes()),
            None => w.write_all(fragment.as_bytes())?,
        }
        Ok(())
    }

    fn write_char_escape<W: ?Sized + io::Write>(&mut self, w: &mut W, escape: serde_json::ser::CharEscape) -> io::Result<()> {
        use serde_json::ser::CompactFormatter;
        match &mut self.key {
            Some((key, _)) => CompactFormatter.write_char_escape(key, escape),
            None => CompactFormatter.write_char_escape(w, escape),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize)]
    struct Row {
        n: u32,
        tags: Vec<&'static str>,
        notes: Vec<u32>,
    }

    #[derive(Serialize)]
    struct Doc {
        name: &'static str,
        rows: Vec<Row>,
        empty: Vec<Row>,
        inline: Row,
    }

    #[test]
    fn tables_a_row_a_line_and_fields_on_lines_of_their_own() {
        let row = |n| Row { n, tags: vec!["a", "b\"c"], notes: vec![n, n] };
        let doc = Doc { name: "x", rows: vec![row(1), row(2)], empty: Vec::new(), inline: row(3) };
        let mut out = Vec::new();
        let breaks = LineBreaks::new(&[("rows", 2), ("empty", 2)], &[("rows.notes", 5)]);
        doc.serialize(&mut serde_json::Serializer::with_formatter(&mut out, breaks)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "{\n  \"name\": \"x\",\n  \"rows\": [\n    {\"n\": 1, \"tags\": [\"a\", \"b\\\"c\"],\n     \"notes\": [1, 1]},\n    \
             {\"n\": 2, \"tags\": [\"a\", \"b\\\"c\"],\n     \"notes\": [2, 2]}\n  ],\n  \"empty\": [],\n  \
             \"inline\": {\"n\": 3, \"tags\": [\"a\", \"b\\\"c\"], \"notes\": [3, 3]}\n}"
        );
        serde_json::from_str::<serde_json::Value>(&text).unwrap();
    }
}
