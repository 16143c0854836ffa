//! Problems found in a service's input, collected rather than thrown, and rendered rustc-style.
//!
//! Every stage pushes into a [`Diagnostics`] list and keeps going, so one build reports all
//! problems at once. Texts that the reference specifies are used verbatim (they are what users of
//! the original system know); a `help` line then says what to do.

use std::fmt::Write as _;

use crate::source::{Sources, Span};

/// One problem in the user's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Where the problem is; `None` only when no file is involved at all.
    pub span: Option<Span>,
    /// The text shown after `error:` (the reference's text verbatim where it has one).
    pub message: String,
    /// The reference's error code (for example 2008, 2011, 4050), where it defines one.
    pub code: Option<u32>,
    /// What to do about it, shown as a `= help:` line.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A problem at `span`.
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        Self {
            span: Some(span),
            message: message.into(),
            code: None,
            help: None,
        }
    }

    /// A problem that cannot be located in any file (for example an unreadable `svc.yml`).
    pub fn global(message: impl Into<String>) -> Self {
        Self {
            span: None,
            message: message.into(),
            code: None,
            help: None,
        }
    }

    /// The same problem with the error code `code` (shown as `error[code]:`).
    pub fn with_code(mut self, code: u32) -> Self {
        self.code = Some(code);
        self
    }

    /// The same problem with a `= help:` line saying what to do.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// An ordered list of problems.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a problem at the end.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.items.push(diagnostic);
    }

    /// Pushes and returns the new entry, for adding a help text or code afterwards.
    pub fn push_mut(&mut self, diagnostic: Diagnostic) -> &mut Diagnostic {
        self.items.push(diagnostic);
        let last = self.items.len() - 1;
        &mut self.items[last]
    }

    /// Adds every problem of `other` at the end, in its order.
    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }

    /// Whether no problem was found.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The number of problems.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The problems in their current order (that of [`Diagnostics::sort`] once it has run).
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }

    /// The problems as a vector, in their current order.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items
    }

    /// Sorts by position (file, then offset), global problems first. The sort is stable, so
    /// problems at the same place keep the order the checks found them in; together with the
    /// checks being deterministic this makes the rendered output identical on every run.
    pub fn sort(&mut self) {
        self.items
            .sort_by_key(|d| d.span.map(|s| (s.file, s.start)));
    }

    /// Renders every diagnostic, rustc style:
    ///
    /// ```text
    /// error[2008]: 'post' is not a valid name for a model.
    ///   --> types.graphql:1:6
    ///    |
    ///  1 | type post @model {
    ///    |      ^^^^
    ///    = help: model names start with an upper-case letter, like `Post`
    /// ```
    pub fn render(&self, sources: &Sources) -> String {
        let mut out = String::new();
        for (i, d) in self.items.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            render_one(&mut out, d, sources);
        }
        out
    }
}

impl FromIterator<Diagnostic> for Diagnostics {
    fn from_iter<I: IntoIterator<Item = Diagnostic>>(iter: I) -> Self {
        Self {
            items: iter.into_iter().collect(),
        }
    }
}

fn render_one(out: &mut String, d: &Diagnostic, sources: &Sources) {
    // `write!` into a `String` cannot fail; the results are ignored for that reason.
    match d.code {
        Some(code) => _ = writeln!(out, "error[{code}]: {}", d.message),
        None => _ = writeln!(out, "error: {}", d.message),
    }
    let mut gutter = 1;
    if let Some(span) = d.span
        && let Some(file) = sources.get(span.file)
    {
        let (line, col) = sources.line_col(span);
        let line_no = line.to_string();
        gutter = line_no.len() + 1;
        let pad = " ".repeat(gutter);
        let _ = writeln!(out, "{pad}--> {}:{line}:{col}", file.path.display());
        let text = sources.line_text(span.file, line).unwrap_or("");
        let _ = writeln!(out, "{pad} |");
        let _ = writeln!(
            out,
            "{}{line_no} | {text}",
            " ".repeat(gutter - line_no.len())
        );
        // The caret line copies tabs from the source line so the carets stay aligned.
        let prefix: String = text
            .chars()
            .take(col as usize - 1)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let on_line = text.chars().count().saturating_sub(col as usize - 1);
        let covered = sources.text(span).split('\n').next().unwrap_or("");
        let width = covered.chars().count().min(on_line).max(1);
        let _ = writeln!(out, "{pad} | {prefix}{}", "^".repeat(width));
    }
    if let Some(help) = &d.help {
        let _ = writeln!(out, "{} = help: {help}", " ".repeat(gutter));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_rustc_style() {
        let mut sources = Sources::new();
        let file = sources.add("types.graphql", "type A @model {\n  id: ID!\n}\n");
        let mut diags = Diagnostics::new();
        diags.push(
            Diagnostic::new(
                Span::new(file, 18, 20),
                "All id fields must specify the `@isUnique` directive.",
            )
            .with_help("write `id: ID! @isUnique`"),
        );
        diags.push(Diagnostic::global("could not read `svc.yml`").with_code(1));
        assert_eq!(
            diags.render(&sources),
            "error: All id fields must specify the `@isUnique` directive.\n  --> types.graphql:2:3\n   |\n 2 |   id: ID!\n   |   ^^\n   = help: write `id: ID! @isUnique`\n\nerror[1]: could not read `svc.yml`\n"
        );
    }
}
