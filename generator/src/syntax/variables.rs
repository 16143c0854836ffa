//! Variables in the values of `svc.yml` (reference §10.2), substituted before the file is read
//! for meaning:
//!
//! - `${env:NAME}`: the environment variable `NAME` of the build (`svc deploy` builds in its
//!   own environment, so that is the deploy's);
//! - `${self:path.to.value}`: another value of the same file (`${self:custom.hooks.url}`; a
//!   number picks a list item), itself substituted first; `${self:}` is the whole file;
//! - a quoted text, `'…'` or `"…"`, and, after a comma, bare text: defaults;
//! - `${a, b, …}`: the first of the alternatives that has a value (`${env:HOOK, 'http://…'}`,
//!   `${env:HOOK, ${self:custom.hook}}`).
//!
//! A value that is one variable alone takes the referenced value whole, whatever its type (a
//! mapping of `headers:` from `${self:custom.headers}`); a variable inside a longer text must give
//! text (or a number or boolean, written as text). Keys are never substituted. The original's
//! `${opt:…}` (the options of the CLI command) has no counterpart here: a service is built by
//! cargo, often without the CLI, so it is reported as unsupported.
//!
//! Where the original warned and went on with an empty value, a variable with no value here is
//! an error at the value that uses it, so a deploy never runs with a webhook URL that is not
//! there.

use serde_yaml::{Mapping, Value};

/// How deep `self` references may lead through each other before they are taken for a cycle.
const MAX_DEPTH: usize = 16;

/// One step of the path of a value in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// A variable that could not be substituted, at the value that uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// The value's path in the file.
    pub(crate) path: Vec<Step>,
    pub(crate) message: String,
    pub(crate) help: Option<String>,
}

/// Where `${env:…}` looks names up.
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// `root` with every variable in its values substituted. A value whose variables cannot be
/// substituted stays as written, and a [`Problem`] says why. `read` collects the names of the
/// environment variables looked up (set or not), so a build can be run again when they change.
pub(crate) fn substitute(
    root: &Value,
    env: Env<'_>,
    read: &mut Vec<String>,
) -> (Value, Vec<Problem>) {
    let mut cx = Cx {
        root,
        env,
        read,
        problems: Vec::new(),
    };
    let mut path = Vec::new();
    let value = cx.walk(root, &mut path, 0);
    (value, cx.problems)
}

struct Cx<'a, 'e> {
    root: &'a Value,
    env: Env<'e>,
    read: &'a mut Vec<String>,
    problems: Vec<Problem>,
}

/// Why a variable has no value.
#[derive(Debug)]
struct Failure {
    message: String,
    help: Option<String>,
}

impl Failure {
    fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            help: None,
        }
    }

    fn help(mut self, help: impl Into<String>) -> Failure {
        self.help = Some(help.into());
        self
    }
}

/// A piece of a text value: literal text or a variable (`${…}`, its alternatives).
#[derive(Debug)]
enum Piece<'s> {
    Text(&'s str),
    Variable(&'s str, Vec<Alt<'s>>),
}

/// One alternative of a variable.
#[derive(Debug)]
enum Alt<'s> {
    Env(&'s str),
    SelfRef(&'s str),
    Opt(&'s str),
    Quoted(&'s str),
    Bare(&'s str),
    /// `${…}` as an alternative: its own alternatives.
    Nested(Vec<Alt<'s>>),
}

impl Cx<'_, '_> {
    /// `value` with its variables substituted; problems are recorded at `path`.
    fn walk(&mut self, value: &Value, path: &mut Vec<Step>, depth: usize) -> Value {
        match value {
            Value::String(text) => match self.text(text, depth) {
                Ok(value) => value,
                Err(failure) => {
                    self.problems.push(Problem {
                        path: path.clone(),
                        message: failure.message,
                        help: failure.help,
                    });
                    value.clone()
                }
            },
            Value::Mapping(map) => {
                let mut out = Mapping::new();
                for (key, item) in map {
                    path.push(Step::Key(key.as_str().unwrap_or_default().to_owned()));
                    let item = self.walk(item, path, depth);
                    path.pop();
                    out.insert(key.clone(), item);
                }
                Value::Mapping(out)
            }
            Value::Sequence(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    path.push(Step::Index(i));
                    out.push(self.walk(item, path, depth));
                    path.pop();
                }
                Value::Sequence(out)
            }
            Value::Tagged(tagged) => {
                let mut tagged = tagged.as_ref().clone();
                tagged.value = self.walk(&tagged.value, path, depth);
                Value::Tagged(Box::new(tagged))
            }
            other => other.clone(),
        }
    }

    /// A text value with its variables substituted: the referenced value itself when the text
    /// is one variable alone, else text.
    fn text(&mut self, text: &str, depth: usize) -> Result<Value, Failure> {
        if !text.contains("${") {
            return Ok(Value::String(text.to_owned()));
        }
        let pieces = pieces(text)?;
        if let [Piece::Variable(written, alts)] = pieces.as_slice() {
            return self.variable(written, alts, depth);
        }
        let mut out = String::new();
        for piece in &pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Variable(written, alts) => match self.variable(written, alts, depth)? {
                    Value::String(s) => out.push_str(&s),
                    Value::Number(n) => out.push_str(&n.to_string()),
                    Value::Bool(b) => out.push_str(if b { "true" } else { "false" }),
                    other => {
                        return Err(Failure::new(format!(
                                "`{written}` is {}, which cannot be put inside a text",
                                kind_of(&other)
                            ))
                            .help("a variable inside a longer text must give text; use it as the whole value to take a mapping or a list"));
                    }
                },
            }
        }
        Ok(Value::String(out))
    }

    /// The value of the first alternative that has one; an error naming the first when none
    /// has.
    fn variable(
        &mut self,
        written: &str,
        alts: &[Alt<'_>],
        depth: usize,
    ) -> Result<Value, Failure> {
        if let Some(value) = self.first_value(alts, depth)? {
            return Ok(value);
        }
        Err(match alts.first() {
            Some(Alt::Env(name)) => Failure::new(format!(
                "`{written}`: the environment variable `{name}` is not set"
            ))
            .help(format!(
                "set `{name}` where the service is built (for `svc deploy`: in its environment), or give a default: `${{env:{name}, 'value'}}`"
            )),
            Some(Alt::SelfRef(path)) => Failure::new(format!(
                "`{written}`: `{path}` names no value in `svc.yml`"
            ))
            .help("`${self:a.b}` takes the value at key `b` under key `a` of the file (a number picks a list item), for example under `custom:`"),
            _ => Failure::new(format!("`{written}` has no value")),
        })
    }

    /// An alternative's value; `None` when its source has none (an unset environment variable,
    /// a path that names nothing, an empty mapping).
    fn alternative(&mut self, alt: &Alt<'_>, depth: usize) -> Result<Option<Value>, Failure> {
        let value = match alt {
            Alt::Env(name) => {
                if name.is_empty() {
                    return Err(Failure::new("`${env:}` names no environment variable")
                        .help("write `${env:NAME}`"));
                }
                if !self.read.iter().any(|r| r == name) {
                    self.read.push((*name).to_owned());
                }
                (self.env)(name).map(Value::String)
            }
            Alt::Opt(name) => {
                return Err(Failure::new(format!(
                    "`${{opt:{name}}}`: svc has no command-line options in `svc.yml`"
                ))
                .help("a service is built by cargo, with or without the `svc` CLI: take the value from the environment with `${env:NAME}` instead"));
            }
            Alt::SelfRef(path) => match self.lookup(path) {
                Some(found) => {
                    if depth >= MAX_DEPTH {
                        return Err(Failure::new(format!(
                            "`${{self:{path}}}` leads through more than {MAX_DEPTH} references: they refer to each other in a cycle"
                        )));
                    }
                    let mut problems = Vec::new();
                    std::mem::swap(&mut problems, &mut self.problems);
                    let value = self.walk(&found, &mut Vec::new(), depth + 1);
                    std::mem::swap(&mut problems, &mut self.problems);
                    // A problem inside the referenced value is this variable's problem too.
                    if let Some(first) = problems.into_iter().next() {
                        return Err(Failure {
                            message: format!("in `${{self:{path}}}`: {}", first.message),
                            help: first.help,
                        });
                    }
                    Some(value)
                }
                None => None,
            },
            Alt::Quoted(text) | Alt::Bare(text) => Some(Value::String((*text).to_owned())),
            // A nested variable with no value gives way to the next alternative.
            Alt::Nested(alts) => self.first_value(alts, depth)?,
        };
        Ok(value.filter(|v| {
            !matches!(v, Value::Null) && !matches!(v, Value::Mapping(m) if m.is_empty())
        }))
    }

    /// The value of the first of `alts` that has one; `None` when none has.
    fn first_value(&mut self, alts: &[Alt<'_>], depth: usize) -> Result<Option<Value>, Failure> {
        for alt in alts {
            if let Some(value) = self.alternative(alt, depth)? {
                return Ok(Some(value));
            }
        }
        Ok(None)
    }

    /// The value at `path` (`a.b.0`) of the file as written; the whole file for an empty path.
    fn lookup(&self, path: &str) -> Option<Value> {
        let mut at = self.root;
        if path.is_empty() {
            return Some(at.clone());
        }
        for step in path.split('.') {
            at = match at {
                Value::Mapping(map) => map.get(step)?,
                Value::Sequence(items) => items.get(step.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(at.clone())
    }
}

/// What kind of value `value` is, for messages.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Mapping(_) => "a mapping",
        Value::Sequence(_) => "a list",
        Value::Null => "empty",
        _ => "a value",
    }
}

/// `text` split into literal text and variables.
fn pieces(text: &str) -> Result<Vec<Piece<'_>>, Failure> {
    let mut out = Vec::new();
    let mut rest = 0;
    while let Some(found) = text[rest..].find("${") {
        let start = rest + found;
        if start > rest {
            out.push(Piece::Text(&text[rest..start]));
        }
        let end = closing(text, start)?;
        let written = &text[start..=end];
        out.push(Piece::Variable(
            written,
            alternatives(text, start + 2, end)?,
        ));
        rest = end + 1;
    }
    if rest < text.len() {
        out.push(Piece::Text(&text[rest..]));
    }
    Ok(out)
}

/// The index of the `}` that closes the variable opened at `start` (`${`), past nested
/// variables and quoted texts.
fn closing(text: &str, start: usize) -> Result<usize, Failure> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = start;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None => match b {
                b'\'' | b'"' if depth > 0 => quote = Some(b),
                b'$' if bytes.get(i + 1) == Some(&b'{') => {
                    depth += 1;
                    i += 1;
                }
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(i);
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    Err(Failure::new(format!(
        "`{}` opens a variable that is not closed",
        &text[start..]
    ))
    .help("a variable is written `${env:NAME}`, `${self:path}` or `${env:NAME, 'default'}`"))
}

/// The alternatives of the variable whose inside is `text[from..to]`.
fn alternatives(text: &str, from: usize, to: usize) -> Result<Vec<Alt<'_>>, Failure> {
    let written = &text[from - 2..=to];
    let mut alts = Vec::new();
    let mut i = from;
    let bytes = text.as_bytes();
    while i <= to {
        // One alternative: up to the next comma outside nested variables and quotes.
        let mut end = i;
        let mut quote: Option<u8> = None;
        while end < to {
            let b = bytes[end];
            match quote {
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None => match b {
                    b'\'' | b'"' => quote = Some(b),
                    // A nested variable: past its closing `}`.
                    b'$' if bytes.get(end + 1) == Some(&b'{') => end = closing(text, end)?,
                    b',' => break,
                    _ => {}
                },
            }
            end += 1;
        }
        let raw = &text[i..end];
        let item = raw.trim();
        let offset = i + (raw.len() - raw.trim_start().len());
        let first = alts.is_empty();
        alts.push(alternative(text, item, offset, first, written)?);
        i = end + 1;
    }
    Ok(alts)
}

/// One alternative, written `item` at `offset` of `text`.
fn alternative<'s>(
    text: &'s str,
    item: &'s str,
    offset: usize,
    first: bool,
    written: &str,
) -> Result<Alt<'s>, Failure> {
    if item.is_empty() {
        return Err(
            Failure::new(format!("`{written}` has an empty alternative"))
                .help("write `${env:NAME}` or `${env:NAME, 'default'}`"),
        );
    }
    if let Some(name) = item.strip_prefix("env:") {
        return Ok(Alt::Env(name.trim()));
    }
    if let Some(path) = item.strip_prefix("self:") {
        return Ok(Alt::SelfRef(path.trim()));
    }
    if let Some(name) = item.strip_prefix("opt:") {
        return Ok(Alt::Opt(name.trim()));
    }
    if item.starts_with("${") {
        let end = closing(text, offset)?;
        if end != offset + item.len() - 1 {
            return Err(Failure::new(format!(
                "`{item}` in `{written}` holds more than one variable"
            )));
        }
        return Ok(Alt::Nested(alternatives(text, offset + 2, end)?));
    }
    for q in ['\'', '"'] {
        if item.len() >= 2 && item.starts_with(q) && item.ends_with(q) {
            return Ok(Alt::Quoted(&item[1..item.len() - 1]));
        }
    }
    if first {
        return Err(Failure::new(format!(
            "`{written}` is not a variable svc knows"
        ))
        .help("a variable takes its value from `env:NAME` (an environment variable) or `self:path` (another value of the file), for example `${env:HOOK_URL}`; a default follows a comma: `${env:HOOK_URL, 'http://localhost:3000'}`"));
    }
    Ok(Alt::Bare(item))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        serde_yaml::from_str(text).expect("YAML")
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "HOOK" => Some("https://hooks.example.com".to_owned()),
            "STAGE" => Some("prod".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn run(text: &str) -> (Value, Vec<Problem>, Vec<String>) {
        let mut read = Vec::new();
        let (value, problems) = substitute(&yaml(text), &env, &mut read);
        (value, problems, read)
    }

    #[test]
    fn environment_self_and_defaults() {
        let (value, problems, read) = run("a: ${env:HOOK}/hello\n\
             b: ${env:MISSING, 'http://localhost:3000'}\n\
             c: ${env:MISSING, ${self:custom.url}}\n\
             d: ${self:custom.headers}\n\
             e: ${env:MISSING, fallback text}\n\
             f: '${env:STAGE}-${self:custom.port}'\n\
             g: ${self:custom.list.1}\n\
             h: ${ env:MISSING , \"a, b\" }\n\
             i: plain $HOME and $ alone\n\
             custom:\n  url: ${env:HOOK}/x\n  port: 8080\n  headers:\n    X-Stage: ${env:STAGE}\n  list: [zero, one]\n");
        assert_eq!(problems, vec![]);
        assert_eq!(value["a"], Value::from("https://hooks.example.com/hello"));
        assert_eq!(value["b"], Value::from("http://localhost:3000"));
        assert_eq!(value["c"], Value::from("https://hooks.example.com/x"));
        assert_eq!(value["d"], yaml("X-Stage: prod"));
        assert_eq!(value["e"], Value::from("fallback text"));
        assert_eq!(value["f"], Value::from("prod-8080"));
        assert_eq!(value["g"], Value::from("one"));
        assert_eq!(value["h"], Value::from("a, b"));
        assert_eq!(value["i"], Value::from("plain $HOME and $ alone"));
        assert_eq!(read, ["HOOK", "MISSING", "STAGE"]);
    }

    #[test]
    fn a_set_but_empty_variable_is_a_value() {
        let (value, problems, _) = run("a: ${env:EMPTY, 'default'}\n");
        assert_eq!(problems, vec![]);
        assert_eq!(value["a"], Value::from(""));
    }

    #[test]
    fn problems_name_the_variable_and_keep_the_value() {
        let (value, problems, read) = run("functions:\n  f:\n    url: ${env:HOOK_URL}\n\
             a: ${self:custom.nothing}\n\
             b: ${HOME}\n\
             c: ${opt:target}\n\
             d: x-${self:custom}\n\
             e: ${env:HOOK\n\
             custom:\n  k: v\n");
        let messages: Vec<(Vec<Step>, &str)> = problems
            .iter()
            .map(|p| (p.path.clone(), p.message.as_str()))
            .collect();
        let key = |k: &str| Step::Key(k.to_owned());
        assert_eq!(
            messages,
            vec![
                (
                    vec![key("functions"), key("f"), key("url")],
                    "`${env:HOOK_URL}`: the environment variable `HOOK_URL` is not set"
                ),
                (
                    vec![key("a")],
                    "`${self:custom.nothing}`: `custom.nothing` names no value in `svc.yml`"
                ),
                (vec![key("b")], "`${HOME}` is not a variable svc knows"),
                (
                    vec![key("c")],
                    "`${opt:target}`: svc has no command-line options in `svc.yml`"
                ),
                (
                    vec![key("d")],
                    "`${self:custom}` is a mapping, which cannot be put inside a text"
                ),
                (
                    vec![key("e")],
                    "`${env:HOOK` opens a variable that is not closed"
                ),
            ]
        );
        assert!(
            problems[0]
                .help
                .as_deref()
                .is_some_and(|h| h.contains("${env:HOOK_URL, 'value'}"))
        );
        assert_eq!(
            value["functions"]["f"]["url"],
            Value::from("${env:HOOK_URL}")
        );
        assert_eq!(read, ["HOOK_URL"]);
    }

    #[test]
    fn references_in_a_cycle_are_reported() {
        let (_, problems, _) = run("a: ${self:b}\nb: ${self:a}\n");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems.iter().all(|p| p.message.contains("cycle")),
            "{problems:?}"
        );
    }
}
