//! Where a key path of `svc.yml` is written: serde_yaml gives a tree without positions, so this
//! small locator finds the line of a key (or a sequence item) in the text, for diagnostics. It
//! understands the block style people write by hand (and flow sequences on one line); for
//! anything fancier it falls back to the nearest enclosing key, which is still the right
//! neighbourhood.

use crate::source::{FileId, Span};

/// A step in a key path: a mapping key or a sequence index.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// One line fragment of the YAML text: a key or scalar starting at `col`, or a `-` sequence marker.
#[derive(Debug, Clone, Copy)]
struct Entry<'a> {
    col: usize,
    /// Byte offset of `text` in the file.
    start: usize,
    /// The fragment up to the end of the line, trailing comment and blanks removed.
    text: &'a str,
    dash: bool,
    /// 0-based line number.
    line: usize,
}

/// Finds where a key path is written in block-style YAML.
pub(crate) struct Locator<'a> {
    file: FileId,
    entries: Vec<Entry<'a>>,
}

impl<'a> Locator<'a> {
    pub(crate) fn new(file: FileId, text: &'a str) -> Self {
        let mut entries = Vec::new();
        let mut offset = 0;
        for (line_no, line) in text.split_inclusive('\n').enumerate() {
            let line_start = offset;
            offset += line.len();
            let body = strip_comment(line.trim_end_matches(['\n', '\r']));
            let indent = body.len() - body.trim_start_matches(' ').len();
            let mut col = indent;
            let mut rest = body[indent..].trim_end();
            if rest.is_empty() || rest == "---" || rest == "..." {
                continue;
            }
            // `- - x` nests sequences on one line; every `-` is an entry of its own.
            while rest == "-" || rest.starts_with("- ") {
                entries.push(Entry {
                    col,
                    start: line_start + col,
                    text: "-",
                    dash: true,
                    line: line_no,
                });
                let after = &rest[1..];
                let skipped = after.len() - after.trim_start_matches(' ').len();
                col += 1 + skipped;
                rest = after[skipped..].trim_end();
            }
            if !rest.is_empty() {
                entries.push(Entry {
                    col,
                    start: line_start + col,
                    text: rest,
                    dash: false,
                    line: line_no,
                });
            }
        }
        Self { file, entries }
    }

    /// Index of the entry for the deepest segment of `path` that could be found, and whether the
    /// whole path was found.
    fn find(&self, path: &[Seg]) -> (Option<usize>, bool) {
        let (mut lo, mut hi) = (0, self.entries.len());
        let mut found = None;
        for seg in path {
            let Some(block_col) = self
                .entries
                .get(lo..hi)
                .and_then(|e| e.first())
                .map(|e| e.col)
            else {
                return (found, false);
            };
            let mut at_col = (lo..hi).filter(|&i| self.entries[i].col == block_col);
            let chosen = match seg {
                Seg::Key(k) => at_col.find(|&i| {
                    let e = self.entries[i];
                    !e.dash && key_of(e.text).is_some_and(|(key, _)| key == *k)
                }),
                Seg::Index(n) => at_col.filter(|&i| self.entries[i].dash).nth(*n),
            };
            let Some(i) = chosen else {
                return (found, false);
            };
            found = Some(i);
            let e = self.entries[i];
            lo = i + 1;
            // A mapping value may be an indentless sequence (`key:` then `- item` at the same
            // column), so dashes at the key's column still belong to it.
            hi = (lo..hi)
                .find(|&j| {
                    let n = self.entries[j];
                    n.col < e.col || (n.col == e.col && (!n.dash || e.dash))
                })
                .unwrap_or(hi);
        }
        (found, true)
    }

    fn entry_span(&self, e: Entry) -> Span {
        Span::new(self.file, e.start, e.start + e.text.len())
    }

    /// Where the key (or list item) at the end of `path` is written.
    pub(crate) fn key_span(&self, path: &[Seg]) -> Span {
        let (found, _) = self.find(path);
        let Some(i) = found else {
            return Span::file_start(self.file);
        };
        let e = self.entries[i];
        if e.dash {
            // A list item: point at its content on the same line, if any.
            return match self.entries.get(i + 1) {
                Some(n) if !n.dash && n.line == e.line => self.item_span(*n),
                _ => self.entry_span(e),
            };
        }
        match key_of(e.text) {
            Some((key, _)) => Span::new(self.file, e.start, e.start + key_len(e.text, key)),
            None => self.entry_span(e),
        }
    }

    /// Where the value at the end of `path` is written: the inline value after `key:`, a flow
    /// sequence item, or else the key.
    pub(crate) fn value_span(&self, path: &[Seg]) -> Span {
        let (found, complete) = self.find(path);
        // `types: [a, b]`: the last index points into a flow sequence on the key's line.
        if !complete
            && let Some(Seg::Index(n)) = path.last()
            && let (Some(i), true) = self.find(&path[..path.len() - 1])
            && let Some((_, value)) = key_of(self.entries[i].text)
            && let Some(span) = self.flow_item(self.entries[i], value, *n)
        {
            return span;
        }
        let Some(i) = found else {
            return Span::file_start(self.file);
        };
        let e = self.entries[i];
        if e.dash || !complete {
            return self.key_span(path);
        }
        match key_of(e.text) {
            Some((_, value)) if !value.is_empty() => {
                let start = e.start + (value.as_ptr() as usize - e.text.as_ptr() as usize);
                Span::new(self.file, start, start + value.len())
            }
            Some(_) => self.key_span(path),
            None => self.entry_span(e),
        }
    }

    fn item_span(&self, e: Entry) -> Span {
        // For `- key: value` the item is best shown by its first key.
        match key_of(e.text) {
            Some((key, _)) => Span::new(self.file, e.start, e.start + key_len(e.text, key)),
            None => self.entry_span(e),
        }
    }

    /// The `n`-th item of a flow sequence `[a, b, c]` written at `value`.
    fn flow_item(&self, e: Entry, value: &str, n: usize) -> Option<Span> {
        let inner = value.strip_prefix('[')?;
        let base = e.start + (inner.as_ptr() as usize - e.text.as_ptr() as usize);
        let mut depth = 0usize;
        let mut quote = None;
        let mut item_start = 0;
        let mut index = 0;
        for (i, c) in inner.char_indices() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '[' | '{') => depth += 1,
                (None, ']' | '}') if depth > 0 => depth -= 1,
                (None, ',' | ']') if depth == 0 => {
                    if index == n {
                        let raw = &inner[item_start..i];
                        let trimmed = raw.trim();
                        let lead = raw.len() - raw.trim_start().len();
                        let start = base + item_start + lead;
                        return Some(Span::new(self.file, start, start + trimmed.len()));
                    }
                    index += 1;
                    item_start = i + 1;
                    if c == ']' {
                        return None;
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// Splits `key: value` (or `key:`), with the key optionally quoted. Returns `None` for a plain
/// scalar such as a URL, whose colons are not followed by a blank.
fn key_of(text: &str) -> Option<(&str, &str)> {
    let (key, rest) = if let Some(q) = text.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let end = text[1..].find(q)? + 1;
        (&text[1..end], &text[end + 1..])
    } else {
        let colon = text
            .match_indices(':')
            .map(|(i, _)| i)
            .find(|&i| text[i + 1..].is_empty() || text[i + 1..].starts_with([' ', '\t']))?;
        (text[..colon].trim_end(), &text[colon..])
    };
    let value = rest.trim_start().strip_prefix(':')?;
    Some((key, value.trim()))
}

/// Length of the key token as written (including quotes).
fn key_len(text: &str, key: &str) -> usize {
    if text.starts_with(['"', '\'']) {
        key.len() + 2
    } else {
        key.len()
    }
}

/// Cuts a trailing `# comment` that is outside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') if prev == ' ' || prev == '[' || prev == ',' || prev == ':' => {
                quote = Some(c)
            }
            (None, '#') if prev == ' ' || prev == '\t' || i == 0 => return &line[..i],
            _ => {}
        }
        prev = c;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(text: &str, path: &[Seg]) -> (String, String) {
        let loc = Locator::new(FileId(0), text);
        let k = loc.key_span(path);
        let v = loc.value_span(path);
        (
            text[k.start as usize..k.end as usize].to_owned(),
            text[v.start as usize..v.end as usize].to_owned(),
        )
    }

    #[test]
    fn locates_keys_and_values() {
        let text = "types: ./types.graphql # the model\npermissions:\n- operation: Post.read\n  fieldz: [a]\n- operation: \"*\"\nfunctions:\n  hello:\n    type: resolver\nlist: [a, 'b', c]\n";
        assert_eq!(
            spans(text, &[Seg::Key("types")]),
            ("types".into(), "./types.graphql".into())
        );
        let p1 = [Seg::Key("permissions"), Seg::Index(0), Seg::Key("fieldz")];
        assert_eq!(spans(text, &p1), ("fieldz".into(), "[a]".into()));
        let p2 = [
            Seg::Key("permissions"),
            Seg::Index(1),
            Seg::Key("operation"),
        ];
        assert_eq!(spans(text, &p2), ("operation".into(), "\"*\"".into()));
        let p3 = [Seg::Key("functions"), Seg::Key("hello"), Seg::Key("type")];
        assert_eq!(spans(text, &p3), ("type".into(), "resolver".into()));
        let p4 = [Seg::Key("list"), Seg::Index(1)];
        assert_eq!(spans(text, &p4).1, "'b'");
    }

    #[test]
    fn splits_keys() {
        assert_eq!(key_of("a: b"), Some(("a", "b")));
        assert_eq!(key_of("a:"), Some(("a", "")));
        assert_eq!(key_of("\"a b\": c"), Some(("a b", "c")));
        assert_eq!(key_of("https://x"), None);
        assert_eq!(key_of("- x"), None);
    }
}
