//! The files a service is built from, and byte spans into them that diagnostics point at.
//!
//! Every later stage refers to user input through a [`Span`] rather than a copy of the text, so a
//! message can always show where the problem is. Paths are kept as the user wrote them (relative
//! to the service directory) because that is what the user recognises and what keeps rendered
//! diagnostics identical on every machine.

use std::path::PathBuf;
use std::sync::LazyLock;

/// Index of a file in [`Sources`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub u32);

impl FileId {
    /// The built-in definitions every service has ([`SYSTEM_TYPES`]). Every [`Sources`] resolves
    /// it, without it being added, so diagnostics about a system type can show its definition.
    pub const SYSTEM: FileId = FileId(u32::MAX);
}

/// The path diagnostics show for [`FileId::SYSTEM`].
pub const SYSTEM_TYPES_PATH: &str = "<svc system types>.graphql";

/// The system types a service has without declaring them (reference §1.5): `File`, the type of
/// the nodes the File API creates. A service that declares `type File @model` itself declares
/// these fields too (checked by the model's validation, `model/validate/system.rs`), and this
/// definition is left out.
pub const SYSTEM_TYPES: &str = r#"type File @model {
  id: ID! @isUnique
  secret: String! @isUnique
  name: String!
  size: Int!
  url: String! @isUnique
  contentType: String!
  createdAt: DateTime!
  updatedAt: DateTime!
}
"#;

static SYSTEM_FILE: LazyLock<SourceFile> = LazyLock::new(|| SourceFile {
    path: PathBuf::from(SYSTEM_TYPES_PATH),
    text: SYSTEM_TYPES.to_owned(),
});

/// A range of bytes `start..end` in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// The file the span lies in.
    pub file: FileId,
    /// The byte offset of the first byte covered.
    pub start: u32,
    /// The byte offset just past the last byte covered (`start` for an empty span).
    pub end: u32,
}

impl Span {
    /// Builds a span from `usize` offsets; files are far below 4 GiB, larger offsets saturate.
    pub fn new(file: FileId, start: usize, end: usize) -> Self {
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Self {
            file,
            start: clamp(start),
            end: clamp(end.max(start)),
        }
    }

    /// An empty span at the start of a file, for problems that concern the file as a whole.
    pub fn file_start(file: FileId) -> Self {
        Self::new(file, 0, 0)
    }
}

/// One input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The path as given, relative to the service directory (for example `types.graphql`).
    pub path: PathBuf,
    /// The file's whole content.
    pub text: String,
}

/// All files of one build, addressed by [`FileId`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    files: Vec<SourceFile>,
}

impl Sources {
    /// No files yet (the system types are always there, as [`FileId::SYSTEM`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file and returns its id.
    pub fn add(&mut self, path: impl Into<PathBuf>, text: impl Into<String>) -> FileId {
        let id = FileId(u32::try_from(self.files.len()).unwrap_or(u32::MAX));
        self.files.push(SourceFile {
            path: path.into(),
            text: text.into(),
        });
        id
    }

    /// The file `id`: [`SYSTEM_TYPES`] for [`FileId::SYSTEM`], `None` for an id this list did
    /// not give out.
    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        if id == FileId::SYSTEM {
            return Some(&SYSTEM_FILE);
        }
        self.files.get(id.0 as usize)
    }

    /// The first file added under `path`, with its id.
    pub fn find(&self, path: impl AsRef<std::path::Path>) -> Option<(FileId, &SourceFile)> {
        let path = path.as_ref();
        self.iter().find(|(_, f)| f.path == path)
    }

    /// All files with their ids, in the order they were added ([`FileId::SYSTEM`] is not among
    /// them).
    pub fn iter(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| (FileId(i as u32), f))
    }

    /// The 1-based line and column (counted in characters) where `span` starts.
    ///
    /// Offsets past the end of the file, or inside a multi-byte character, are clamped rather
    /// than rejected: a diagnostic with a slightly-off column is better than none.
    pub fn line_col(&self, span: Span) -> (u32, u32) {
        let Some(file) = self.get(span.file) else {
            return (1, 1);
        };
        let start = floor_char_boundary(&file.text, span.start as usize);
        let before = &file.text[..start];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before[line_start..].chars().count() + 1;
        (
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(col).unwrap_or(u32::MAX),
        )
    }

    /// The text of the 1-based line `line` of a file, without its line break.
    pub fn line_text(&self, file: FileId, line: u32) -> Option<&str> {
        let file = self.get(file)?;
        file.text
            .split('\n')
            .nth(line.checked_sub(1)? as usize)
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
    }

    /// The text a span covers, clamped to the file.
    pub fn text(&self, span: Span) -> &str {
        let Some(file) = self.get(span.file) else {
            return "";
        };
        let start = floor_char_boundary(&file.text, span.start as usize);
        let end = floor_char_boundary(&file.text, span.end as usize).max(start);
        &file.text[start..end]
    }
}

/// The largest char boundary at or below `i` (a stable stand-in for `str::floor_char_boundary`).
fn floor_char_boundary(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        let mut sources = Sources::new();
        let id = sources.add("a.graphql", "ab\n\u{e9}\u{e9}x\n");
        // `x` is at byte 7 (two 2-byte characters before it on line 2).
        assert_eq!(sources.line_col(Span::new(id, 7, 8)), (2, 3));
        assert_eq!(sources.line_col(Span::new(id, 0, 1)), (1, 1));
        assert_eq!(sources.line_text(id, 2), Some("\u{e9}\u{e9}x"));
        // Out of range offsets are clamped, never a panic.
        assert_eq!(sources.line_col(Span::new(id, 999, 999)), (3, 1));
        assert_eq!(sources.line_col(Span::new(FileId(9), 0, 0)), (1, 1));
    }
}
