//! Reading `svc.yml` (reference §10.2): which keys exist, what shape their values have, and where
//! each value sits in the file.
//!
//! serde_yaml gives a tree without positions, so the tree is walked for meaning here and a small
//! locator (`syntax::positions`) finds where a key path is written for the diagnostic.

use serde_yaml::{Mapping, Value};

use super::positions::{Locator, Seg};
use super::variables::{self, Step};
use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::source::{FileId, Sources, Span};

/// A value together with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    /// The value as read.
    pub value: T,
    /// Where the value is written in `svc.yml` (for a function's name: its key).
    pub span: Span,
}

/// The parts of `svc.yml` the generator uses, with positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The file `svc.yml` was read from.
    pub file: FileId,
    /// The `types:` entries, in the order listed (that is the concatenation order).
    pub types: Vec<Spanned<String>>,
    /// The well-formed entries of `permissions:`, in the order listed.
    pub permissions: Vec<PermissionDecl>,
    /// The names under `rootTokens:`, in the order listed, each once and none empty.
    pub root_tokens: Vec<Spanned<String>>,
    /// The well-formed entries of `functions:`, in the order written.
    pub functions: Vec<FunctionDecl>,
    /// The environment variables the file's `${env:…}` variables looked up, set or not.
    pub env_read: Vec<String>,
}

/// One well-formed entry of `permissions:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionDecl {
    /// `operation:`: `*`, `Type.read|create|update|delete` or
    /// `Relation.connect|disconnect|*`.
    pub operation: Spanned<String>,
    /// `authenticated:` (`false` when not written).
    pub authenticated: bool,
    /// `query:`: the path of the permission query file, relative to `svc.yml`, optionally
    /// followed by `:OperationName`.
    pub query: Option<Spanned<String>>,
    /// `fields:`: the field names the permission is limited to (empty: every field).
    pub fields: Vec<Spanned<String>>,
    /// The whole list item.
    pub span: Span,
}

/// One well-formed entry of `functions:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionDecl {
    /// The function's name: its key under `functions:`.
    pub name: Spanned<String>,
    /// `resolver`, `subscription`, `operationBefore` or `operationAfter`.
    pub kind: Spanned<String>,
    /// `Model.create|update|delete` for hooks.
    pub operation: Option<Spanned<String>>,
    /// `schema:` of a resolver: the path of its schema extension file, relative to `svc.yml`.
    pub schema: Option<Spanned<String>>,
    /// `query:` of a subscription: the path of its subscription query file, relative to
    /// `svc.yml`.
    pub query: Option<Spanned<String>>,
    /// How the function runs.
    pub handler: HandlerDecl,
    /// `timeout:` in milliseconds (written in seconds), for handlers that can wait.
    pub timeout_ms: Option<Spanned<u64>>,
}

/// A function's `handler`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandlerDecl {
    /// `webhook: url` or `webhook: { url, headers }`.
    Webhook {
        /// The URL requests go to (`http://` or `https://`).
        url: Spanned<String>,
        /// `headers:`: names and values sent with every request, in the order written.
        headers: Vec<(String, String)>,
    },
    /// `code: path` or `code: { src, environment }`: a JavaScript module.
    Code {
        /// The path of the module, relative to `svc.yml`.
        src: Spanned<String>,
        /// `environment:`: variables set for the handler, names and values in the order written.
        environment: Vec<(String, String)>,
    },
    /// `rust: crate::path::to::function`: a Rust function compiled into the service.
    Rust {
        /// The function's path as written, for example `crate::functions::hello`.
        path: Spanned<String>,
    },
}

const ROOT_KEYS: &[&str] = &["types", "permissions", "rootTokens", "functions", "custom"];
const PERMISSION_KEYS: &[&str] = &[
    "operation",
    "authenticated",
    "query",
    "fields",
    "isEnabled",
    "description",
];
const FUNCTION_KEYS: &[&str] = &[
    "type",
    "handler",
    "schema",
    "query",
    "operation",
    "isEnabled",
    "timeout",
];
const FUNCTION_TYPES: &[&str] = &[
    "resolver",
    "subscription",
    "operationBefore",
    "operationAfter",
];

/// Parses and shape-checks `svc.yml`, with its variables (`${env:…}`, `${self:…}`) substituted
/// first; `env` looks environment variables up. Problems go to `diags`; the returned config
/// holds every entry that was well-formed, so later stages can still check the rest.
pub fn parse(
    sources: &Sources,
    file: FileId,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics,
) -> Config {
    let text = sources.get(file).map_or("", |f| f.text.as_str());
    let mut cx = Cx {
        loc: Locator::new(file, text),
        diags,
    };
    let mut config = Config {
        file,
        types: Vec::new(),
        permissions: Vec::new(),
        root_tokens: Vec::new(),
        functions: Vec::new(),
        env_read: Vec::new(),
    };
    let root = match serde_yaml::from_str::<Value>(text) {
        Ok(root) => root,
        Err(err) => {
            let span = err.location().map_or(Span::file_start(file), |l| {
                Span::new(file, l.index(), l.index() + 1)
            });
            cx.diags.push(
                Diagnostic::new(span, format!("`svc.yml` is not valid YAML: {err}"))
                    .with_help("fix the YAML syntax at the position shown"),
            );
            return config;
        }
    };
    let (root, problems) = variables::substitute(&root, env, &mut config.env_read);
    let mut unsubstituted = Vec::new();
    for problem in problems {
        let path: Vec<Seg<'_>> = problem
            .path
            .iter()
            .map(|step| match step {
                Step::Key(key) => Seg::Key(key),
                Step::Index(i) => Seg::Index(*i),
            })
            .collect();
        let span = cx.loc.value_span(&path);
        cx.error(span, problem.message).help = problem.help;
        unsubstituted.push(span);
    }
    let checked_from = cx.diags.len();
    let root = match root {
        Value::Mapping(map) => map,
        Value::Null => Mapping::new(),
        _ => {
            cx.diags.push(
                Diagnostic::new(
                    Span::file_start(file),
                    "`svc.yml` must be a mapping of keys to values",
                )
                .with_help(root_keys_help()),
            );
            return config;
        }
    };
    let mut saw_types = false;
    for (key, value) in &root {
        let Some(key) = cx.key_str(key, &[]) else {
            continue;
        };
        let path = [Seg::Key(key)];
        match key {
            "types" => {
                saw_types = true;
                config.types = cx.types(value, &path);
            }
            "permissions" => config.permissions = cx.permissions(value, &path),
            "rootTokens" => config.root_tokens = cx.root_tokens(value, &path),
            "functions" => config.functions = cx.functions(value, &path),
            "custom" => {}
            _ => cx.unknown_key(key, &[], "in `svc.yml`", root_keys_help()),
        }
    }
    // A value whose variable has no value is reported once, for the variable: not again for
    // the text left in its place (`${env:HOOK}/x` is not an http URL).
    if !unsubstituted.is_empty() {
        let all = std::mem::take(cx.diags).into_vec();
        *cx.diags = all
            .into_iter()
            .enumerate()
            .filter(|(i, d)| {
                *i < checked_from || !d.span.is_some_and(|s| unsubstituted.contains(&s))
            })
            .map(|(_, d)| d)
            .collect();
    }
    if !saw_types {
        cx.diags.push(
            Diagnostic::new(
                Span::file_start(file),
                "`svc.yml` does not say where the data model is: the key `types` is missing",
            )
            .with_help("add `types: ./types.graphql` (a path or a list of paths)"),
        );
    }
    config
}

fn root_keys_help() -> String {
    format!("the keys of `svc.yml` are {}", list_keys(ROOT_KEYS))
}

fn list_keys(keys: &[&str]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

struct Cx<'a, 'd> {
    loc: Locator<'a>,
    diags: &'d mut Diagnostics,
}

impl<'a> Cx<'a, '_> {
    fn error(&mut self, span: Span, message: impl Into<String>) -> &mut Diagnostic {
        self.diags.push_mut(Diagnostic::new(span, message))
    }

    fn key_str<'v>(&mut self, key: &'v Value, parent: &[Seg]) -> Option<&'v str> {
        match key {
            Value::String(s) => Some(s),
            _ => {
                let span = self.loc.value_span(parent);
                self.error(span, "keys in `svc.yml` must be strings");
                None
            }
        }
    }

    fn unknown_key(&mut self, key: &str, parent: &[Seg], place: &str, help: String) {
        let mut path = parent.to_vec();
        path.push(Seg::Key(key));
        let span = self.loc.key_span(&path);
        self.error(span, format!("unknown key `{key}` {place}"))
            .help = Some(help);
    }

    /// A string value, or a diagnostic naming `what` it should have been.
    fn string(&mut self, value: &Value, path: &[Seg], what: &str) -> Option<Spanned<String>> {
        match value {
            Value::String(s) => Some(Spanned {
                value: s.clone(),
                span: self.loc.value_span(path),
            }),
            _ => {
                let span = self.loc.value_span(path);
                self.error(span, format!("{what} must be a string"));
                None
            }
        }
    }

    fn boolean(&mut self, value: &Value, path: &[Seg], what: &str) -> Option<bool> {
        match value {
            Value::Bool(b) => Some(*b),
            _ => {
                let span = self.loc.value_span(path);
                self.error(span, format!("{what} must be `true` or `false`"));
                None
            }
        }
    }

    /// A sequence (an empty `key:` counts as an empty one).
    fn sequence<'v>(&mut self, value: &'v Value, path: &[Seg], what: &str) -> &'v [Value] {
        match value {
            Value::Sequence(items) => items,
            Value::Null => &[],
            _ => {
                let span = self.loc.value_span(path);
                self.error(span, format!("{what} must be a list"));
                &[]
            }
        }
    }

    fn types(&mut self, value: &Value, path: &[Seg]) -> Vec<Spanned<String>> {
        let mut out: Vec<Spanned<String>> = Vec::new();
        let items: Vec<(Vec<Seg>, &Value)> = match value {
            Value::String(_) => vec![(path.to_vec(), value)],
            Value::Sequence(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| ([path, &[Seg::Index(i)]].concat(), v))
                .collect(),
            _ => {
                let span = self.loc.value_span(path);
                self.error(span, "`types` must be a path or a list of paths")
                    .help = Some("write `types: ./types.graphql`".into());
                return out;
            }
        };
        if items.is_empty() {
            let span = self.loc.key_span(path);
            self.error(span, "`types` lists no files").help =
                Some("list at least one file, like `types: ./types.graphql`".into());
        }
        for (path, item) in items {
            let Some(entry) = self.string(item, &path, "an entry of `types`") else {
                continue;
            };
            if entry.value.trim().is_empty() {
                self.error(entry.span, "an entry of `types` is empty");
            } else if out.iter().any(|e| e.value == entry.value) {
                self.error(
                    entry.span,
                    format!("the types file `{}` is listed twice", entry.value),
                );
            } else {
                out.push(entry);
            }
        }
        out
    }

    fn root_tokens(&mut self, value: &Value, path: &[Seg]) -> Vec<Spanned<String>> {
        let mut out: Vec<Spanned<String>> = Vec::new();
        let items = self.sequence(value, path, "`rootTokens`");
        for (i, item) in items.iter().enumerate() {
            let path = [path, &[Seg::Index(i)]].concat();
            let Some(name) = self.string(item, &path, "a root token name") else {
                continue;
            };
            if name.value.trim().is_empty() {
                self.error(name.span, "a root token name is empty");
            } else if out.iter().any(|t| t.value == name.value) {
                self.error(
                    name.span,
                    format!("the root token `{}` is listed twice", name.value),
                )
                .help = Some("root token names must be unique".into());
            } else {
                out.push(name);
            }
        }
        out
    }

    fn permissions(&mut self, value: &Value, path: &[Seg]) -> Vec<PermissionDecl> {
        let items = self.sequence(value, path, "`permissions`");
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let path = [path, &[Seg::Index(i)]].concat();
            if let Some(p) = self.permission(item, &path) {
                out.push(p);
            }
        }
        out
    }

    fn permission(&mut self, value: &Value, path: &[Seg]) -> Option<PermissionDecl> {
        let span = self.loc.value_span(path);
        let Value::Mapping(map) = value else {
            self.error(
                span,
                "a permission must be a mapping with at least `operation`",
            )
            .help = Some("write `- operation: Post.read`".into());
            return None;
        };
        let mut operation = None;
        let mut authenticated = false;
        let mut query = None;
        let mut fields = Vec::new();
        let mut ok = true;
        for (key, value) in map {
            let Some(key) = self.key_str(key, path) else {
                ok = false;
                continue;
            };
            let kpath = [path, &[Seg::Key(key)]].concat();
            match key {
                "operation" => operation = self.string(value, &kpath, "`operation`"),
                "authenticated" => {
                    authenticated = self
                        .boolean(value, &kpath, "`authenticated`")
                        .unwrap_or(false)
                }
                "query" => query = self.string(value, &kpath, "`query`"),
                "fields" => {
                    let items = self.sequence(value, &kpath, "`fields`");
                    for (i, item) in items.iter().enumerate() {
                        let ipath = [&kpath[..], &[Seg::Index(i)]].concat();
                        fields.extend(self.string(item, &ipath, "a field name"));
                    }
                }
                "isEnabled" => _ = self.boolean(value, &kpath, "`isEnabled`"),
                "description" => _ = self.string(value, &kpath, "`description`"),
                _ => {
                    ok = false;
                    let help = format!(
                        "the keys of a permission are {}",
                        list_keys(PERMISSION_KEYS)
                    );
                    self.unknown_key(key, path, "in a permission", help);
                }
            }
        }
        let Some(operation) = operation else {
            if !map.contains_key("operation") {
                self.error(span, "a permission is missing its `operation`")
                    .help = Some("add `operation: Type.read` (or `*` to allow everything)".into());
            }
            return None;
        };
        if !is_permission_operation(&operation.value) {
            self.error(
                operation.span,
                format!("`{}` is not a valid permission operation", operation.value),
            )
            .help = Some(
                "write `*`, `Type.read`, `Type.create`, `Type.update`, `Type.delete`, or \
                 `Relation.connect`, `Relation.disconnect`, `Relation.*` (operations are \
                 lower-case)"
                    .into(),
            );
            return None;
        }
        ok.then_some(PermissionDecl {
            operation,
            authenticated,
            query,
            fields,
            span,
        })
    }

    fn functions(&mut self, value: &Value, path: &[Seg]) -> Vec<FunctionDecl> {
        let map = match value {
            Value::Mapping(map) => map,
            Value::Null => return Vec::new(),
            _ => {
                let span = self.loc.value_span(path);
                self.error(span, "`functions` must map function names to functions")
                    .help = Some(
                    "write `functions:` followed by `  myFunction: { type: resolver, … }`".into(),
                );
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for (key, value) in map {
            let Some(name) = self.key_str(key, path) else {
                continue;
            };
            let fpath = [path, &[Seg::Key(name)]].concat();
            if let Some(f) = self.function(name, value, &fpath) {
                out.push(f);
            }
        }
        out
    }

    fn function(&mut self, name: &str, value: &Value, path: &[Seg]) -> Option<FunctionDecl> {
        let name_span = self.loc.key_span(path);
        let mut ok = true;
        if !is_function_name(name) {
            ok = false;
            self.error(name_span, format!("`{name}` is not a valid function name"))
                .help = Some(
                "function names are 1 to 64 characters of `a-z`, `A-Z`, `0-9`, `-` and `_`".into(),
            );
        }
        let Value::Mapping(map) = value else {
            self.error(
                name_span,
                format!("the function `{name}` must be a mapping"),
            )
            .help = Some("give it at least `type` and `handler`".into());
            return None;
        };
        let mut kind = None;
        let mut operation = None;
        let mut schema = None;
        let mut query = None;
        let mut has_handler = false;
        let mut handler = None;
        let mut timeout_ms = None;
        for (key, value) in map {
            let Some(key) = self.key_str(key, path) else {
                ok = false;
                continue;
            };
            let kpath = [path, &[Seg::Key(key)]].concat();
            match key {
                "type" => kind = self.string(value, &kpath, "`type`"),
                "handler" => {
                    has_handler = true;
                    handler = self.handler(value, &kpath);
                    ok &= handler.is_some();
                }
                "timeout" => {
                    timeout_ms = self.seconds(value, &kpath);
                    ok &= timeout_ms.is_some();
                }
                "schema" => schema = self.string(value, &kpath, "`schema`"),
                "query" => query = self.string(value, &kpath, "`query`"),
                "operation" => operation = self.string(value, &kpath, "`operation`"),
                "isEnabled" => _ = self.boolean(value, &kpath, "`isEnabled`"),
                _ => {
                    ok = false;
                    let help = format!("the keys of a function are {}", list_keys(FUNCTION_KEYS));
                    self.unknown_key(key, path, &format!("in the function `{name}`"), help);
                }
            }
        }
        if !has_handler {
            ok = false;
            self.error(name_span, format!("the function `{name}` has no `handler`"))
                .help = Some(
                "add `handler: { webhook: https://… }`, `handler: { rust: crate::functions::f }` or `handler: { code: ./src/file.js }`"
                    .into(),
            );
        }
        let Some(kind) = kind else {
            if !map.contains_key("type") {
                self.error(name_span, format!("the function `{name}` has no `type`"))
                    .help = Some(format!(
                    "add `type:` with one of {}",
                    list_keys(FUNCTION_TYPES)
                ));
            }
            return None;
        };
        if !FUNCTION_TYPES.contains(&kind.value.as_str()) {
            let msg = if matches!(kind.value.as_str(), "httpRequest" | "httpResponse") {
                format!("the legacy function type `{}` is not supported", kind.value)
            } else {
                format!("`{}` is not a function type", kind.value)
            };
            self.error(kind.span, msg).help =
                Some(format!("use one of {}", list_keys(FUNCTION_TYPES)));
            return None;
        }
        let hook = kind.value.starts_with("operation");
        ok &= self.only_for(
            &schema,
            "schema",
            kind.value == "resolver",
            name,
            "resolver",
        );
        ok &= self.only_for(
            &query,
            "query",
            kind.value == "subscription",
            name,
            "subscription",
        );
        ok &= self.only_for(
            &operation,
            "operation",
            hook,
            name,
            "operationBefore` and `operationAfter",
        );
        let needed = match kind.value.as_str() {
            "resolver" if schema.is_none() => Some(("schema", "schema: ./src/myResolver.graphql")),
            "subscription" if query.is_none() => {
                Some(("query", "query: ./src/mySubscription.graphql"))
            }
            _ if hook && operation.is_none() => Some(("operation", "operation: User.create")),
            _ => None,
        };
        if let Some((key, example)) = needed {
            ok = false;
            self.error(
                kind.span,
                format!("the {} function `{name}` needs `{key}`", kind.value),
            )
            .help = Some(format!("add `{example}`"));
        }
        if let Some(op) = &operation
            && hook
        {
            ok &= self.hook_operation(op);
        }
        let handler = handler?;
        ok.then(|| FunctionDecl {
            name: Spanned {
                value: name.to_owned(),
                span: name_span,
            },
            kind,
            operation,
            schema,
            query,
            handler,
            timeout_ms,
        })
    }

    /// Reports `key` set on a function of another type. Returns whether all is well.
    fn only_for(
        &mut self,
        value: &Option<Spanned<String>>,
        key: &str,
        allowed: bool,
        name: &str,
        kinds: &str,
    ) -> bool {
        match value {
            Some(v) if !allowed => {
                self.error(
                    v.span,
                    format!(
                        "the function `{name}` sets `{key}`, which only `{kinds}` functions use"
                    ),
                )
                .help = Some(format!("remove `{key}` or change the function's `type`"));
                false
            }
            _ => true,
        }
    }

    fn hook_operation(&mut self, op: &Spanned<String>) -> bool {
        let (model, action) = op.value.split_once('.').unwrap_or(("", ""));
        let pattern_ok = is_model_name_like(model)
            && matches!(
                action,
                "create" | "update" | "delete" | "read" | "connect" | "disconnect" | "*"
            );
        if !pattern_ok {
            self.error(
                op.span,
                format!("`{}` is not a valid hook operation", op.value),
            )
            .help = Some("write `Type.create`, `Type.update` or `Type.delete`".into());
            return false;
        }
        if !matches!(action, "create" | "update" | "delete") {
            let d = self.error(
                op.span,
                format!(
                    "RequestPipeline Operation has to be create, update or delete. You provided '{action}'"
                ),
            );
            d.code = Some(4047);
            return false;
        }
        true
    }

    /// `timeout:` a positive number of seconds (at most an hour), in milliseconds.
    fn seconds(&mut self, value: &Value, path: &[Seg]) -> Option<Spanned<u64>> {
        let span = self.loc.value_span(path);
        let secs = value
            .as_f64()
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= 3600.0);
        match secs {
            Some(s) => Some(Spanned {
                value: ((s * 1000.0).round() as u64).max(1),
                span,
            }),
            None => {
                self.error(
                    span,
                    "`timeout` must be a number of seconds, above 0 and at most 3600",
                )
                .help = Some("write for example `timeout: 5` or `timeout: 0.5`".into());
                None
            }
        }
    }

    /// `handler: { webhook: url | {url, headers} }`, `{ code: path | {src, environment} }` or
    /// `{ rust: path }`.
    fn handler(&mut self, value: &Value, path: &[Seg]) -> Option<HandlerDecl> {
        let span = self.loc.value_span(path);
        let help = "write `handler: { webhook: https://… }`, `handler: { rust: crate::functions::f }` or `handler: { code: ./src/file.js }`";
        let Value::Mapping(map) = value else {
            self.error(span, "`handler` must be a mapping").help = Some(help.into());
            return None;
        };
        let mut ok = true;
        let mut kinds = 0;
        let mut found = None;
        for (key, value) in map {
            let Some(key) = self.key_str(key, path) else {
                ok = false;
                continue;
            };
            let kpath = [path, &[Seg::Key(key)]].concat();
            let (inner, required) = match key {
                "code" => (["src", "environment"], "src"),
                "webhook" => (["url", "headers"], "url"),
                "rust" => {
                    kinds += 1;
                    match self.string(value, &kpath, "`rust`") {
                        Some(p) if is_rust_path(&p.value) => {
                            found = Some(HandlerDecl::Rust { path: p })
                        }
                        Some(p) => {
                            ok = false;
                            self.error(p.span, format!("`{}` is not a Rust path", p.value))
                                .help = Some(
                                "name the function by its path, for example `crate::functions::validate_email`".into(),
                            );
                        }
                        None => ok = false,
                    }
                    continue;
                }
                _ => {
                    ok = false;
                    self.unknown_key(
                        key,
                        path,
                        "in `handler`",
                        "use `webhook`, `rust` or `code`".into(),
                    );
                    continue;
                }
            };
            kinds += 1;
            let mut main = None;
            let mut pairs = Vec::new();
            match value {
                Value::String(s) => {
                    main = Some(Spanned {
                        value: s.clone(),
                        span: self.loc.value_span(&kpath),
                    })
                }
                Value::Mapping(m) => {
                    for (k, v) in m {
                        let Some(k) = self.key_str(k, &kpath) else {
                            ok = false;
                            continue;
                        };
                        let ipath = [&kpath[..], &[Seg::Key(k)]].concat();
                        if k == inner[0] {
                            main = self.string(v, &ipath, &format!("`{k}`"));
                            ok &= main.is_some();
                        } else if k == inner[1] {
                            match self.pairs(v, &ipath, k) {
                                Some(p) => pairs = p,
                                None => ok = false,
                            }
                        } else {
                            ok = false;
                            let help = format!("the keys of `{key}` are {}", list_keys(&inner));
                            self.unknown_key(k, &kpath, &format!("in `{key}`"), help);
                        }
                    }
                    if !m.contains_key(required) {
                        ok = false;
                        let s = self.loc.key_span(&kpath);
                        self.error(s, format!("`{key}` is missing `{required}`"));
                    }
                }
                _ => {
                    ok = false;
                    let s = self.loc.value_span(&kpath);
                    self.error(s, format!("`{key}` must be a string or a mapping"))
                        .help = Some(help.into());
                }
            }
            found = match (key, main) {
                ("webhook", Some(url)) => {
                    if !(url.value.starts_with("http://") || url.value.starts_with("https://")) {
                        ok = false;
                        self.error(
                            url.span,
                            format!("`{}` is not an http or https URL", url.value),
                        )
                        .help = Some("a webhook's URL starts with `http://` or `https://`".into());
                    }
                    Some(HandlerDecl::Webhook {
                        url,
                        headers: pairs,
                    })
                }
                ("code", Some(src)) => Some(HandlerDecl::Code {
                    src,
                    environment: pairs,
                }),
                _ => None,
            };
        }
        if kinds != 1 {
            ok = false;
            self.error(
                span,
                "`handler` must have exactly one of `webhook`, `rust` and `code`",
            )
            .help = Some(help.into());
        }
        if ok { found } else { None }
    }

    /// `headers:` or `environment:`: names mapped to scalar values, read as strings.
    fn pairs(&mut self, value: &Value, path: &[Seg], what: &str) -> Option<Vec<(String, String)>> {
        let m = match value {
            Value::Mapping(m) => m,
            Value::Null => return Some(Vec::new()),
            _ => {
                let s = self.loc.value_span(path);
                self.error(s, format!("`{what}` must map names to values"));
                return None;
            }
        };
        let mut out = Vec::new();
        let mut ok = true;
        for (k, v) in m {
            let Some(k) = self.key_str(k, path) else {
                ok = false;
                continue;
            };
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => {
                    ok = false;
                    let s = self.loc.value_span(&[path, &[Seg::Key(k)]].concat());
                    self.error(
                        s,
                        format!("the value of `{k}` in `{what}` must be a string"),
                    );
                    continue;
                }
            };
            out.push((k.to_owned(), text));
        }
        ok.then_some(out)
    }
}

/// `crate::a::b`, `super::f`, `my_crate::f` or `f`: identifiers joined by `::`.
fn is_rust_path(s: &str) -> bool {
    let s = s.strip_prefix("::").unwrap_or(s);
    !s.is_empty()
        && s.split("::").all(|seg| {
            seg.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && seg != "_"
        })
}

/// `^([A-Z][a-zA-Z0-9]*\.(create|update|delete|read|list|connect|disconnect|\*)|\*)$`
fn is_permission_operation(op: &str) -> bool {
    if op == "*" {
        return true;
    }
    let Some((ty, action)) = op.split_once('.') else {
        return false;
    };
    is_model_name_like(ty)
        && matches!(
            action,
            "create" | "update" | "delete" | "read" | "list" | "connect" | "disconnect" | "*"
        )
}

/// `[A-Z][a-zA-Z0-9]*`
fn is_model_name_like(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_uppercase()) && s.chars().all(|c| c.is_ascii_alphanumeric())
}

/// `^[a-zA-Z0-9\-_]*$`, 1 to 64 characters.
fn is_function_name(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}
