//! Parsing the `types:` files (GraphQL SDL) with apollo-compiler, keeping byte positions.
//!
//! Each file is parsed on its own, so a syntax error in one file does not hide the errors of the
//! others; the validator later treats the documents as one concatenated schema.

use apollo_compiler::Node;
use apollo_compiler::ast::{Definition, Document, OperationDefinition};
use apollo_compiler::diagnostic::ToCliReport;
use apollo_compiler::parser::SourceSpan;

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::source::{FileId, Sources, Span};

/// One parsed types file.
#[derive(Debug, Clone)]
pub struct SdlFile {
    /// The file in [`Sources`] it was parsed from.
    pub file: FileId,
    /// The parsed document, with byte offsets into that file's text.
    pub document: Document,
}

impl SdlFile {
    /// Our span for an apollo location in this file (apollo offsets are byte offsets into the
    /// text we handed it, so only the file id needs translating).
    pub fn span(&self, location: Option<SourceSpan>) -> Span {
        span_in(self.file, location)
    }
}

/// Converts an apollo location into a span of `file`, or the file start when there is none.
pub fn span_in(file: FileId, location: Option<SourceSpan>) -> Span {
    location.map_or(Span::file_start(file), |l| {
        Span::new(file, l.offset(), l.end_offset())
    })
}

/// Parses one types file. Syntax errors are reported (reference §1.9 text) and `None` is
/// returned, because validating a partial document would only add confusing follow-up errors.
pub fn parse(sources: &Sources, file: FileId, diags: &mut Diagnostics) -> Option<SdlFile> {
    let source = sources.get(file)?;
    // An empty document is a valid (empty) data model (reference §1.1), while GraphQL's grammar
    // wants at least one definition.
    if is_blank(&source.text) {
        return Some(SdlFile {
            file,
            document: Document::new(),
        });
    }
    match Document::parse(source.text.as_str(), &source.path) {
        Ok(document) => Some(SdlFile { file, document }),
        Err(with_errors) => {
            for err in with_errors.errors.iter() {
                let text = err.error.to_string();
                let message = text.strip_prefix("syntax error: ").unwrap_or(&text);
                let span = span_in(file, err.error.location());
                // Parser errors point at the offending token; an empty span at the end of the
                // file still renders a caret.
                diags.push(Diagnostic::new(
                    span,
                    format!("There's a syntax error in the Schema Definition. {message}"),
                ));
            }
            None
        }
    }
}

/// Whether a document has nothing but ignored tokens: white space, commas, comments, a BOM.
pub(crate) fn is_blank(text: &str) -> bool {
    text.lines().all(|line| {
        let code = line.split('#').next().unwrap_or("");
        code.chars()
            .all(|c| c.is_whitespace() || c == ',' || c == '\u{feff}')
    })
}

/// The operations of an executable document (a permission query, a subscription function's
/// query), in their order.
pub(crate) fn operations(document: &Document) -> Vec<&Node<OperationDefinition>> {
    document
        .definitions
        .iter()
        .filter_map(|d| match d {
            Definition::OperationDefinition(op) => Some(op),
            _ => None,
        })
        .collect()
}
