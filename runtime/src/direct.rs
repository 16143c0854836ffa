//! Direct execution of plain read queries: a query text the GraphQL executor has validated once
//! is compiled into a [`Plan`], and later requests with the same text run the plan: the same SQL
//! statements the executor's resolvers run (except that on PostgreSQL a page or node and its one
//! relation field can be one statement, [`Run::read_joined`]), with the rows written straight
//! into the response text, without a future, a `Value` or a map per field.
//!
//! What a plan covers: query operations whose variables are of the built-in scalar types, made
//! of `all<Plural>`, `<Type>(…)`, `_all<Plural>Meta` and `__typename` at the root, and below
//! them scalar and enum fields, `__typename` and relation fields (with their `_<field>Meta`); fragments
//! on the selected type itself are flattened and a leaf field selected twice is merged. No
//! directives, fragments on interfaces, or other repeated response keys: anything else is
//! answered by the executor.
//!
//! A plan never reports an error. Whatever would be one (an argument that does not parse or
//! breaks a paging rule, a field the requester may not read, a database error, a stored value
//! that does not decode) makes the plan give up, and the executor answers the request as it
//! would have without plans, with its errors. Queries write nothing, so running the statements
//! again is harmless; the statements of a plan that gave up are not counted.
//!
//! Why the first validation holds for later requests with the same text: GraphQL validation
//! depends on the document and the schema only, except for the check of argument values into
//! which variables are substituted. A plan parses every argument with the same input types the
//! resolvers use, so a value that the executor would refuse makes the plan give up.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use async_graphql::parser::types::{
    BaseType, DocumentOperations, ExecutableDocument, Field, FragmentDefinition, OperationType,
    Selection, SelectionSet,
};
use async_graphql::{Name, Pos, Positioned, Value, Variables};

use crate::api::value_of;
use crate::auth::Principal;
use crate::meta::{FieldMeta, Kind, ModelMeta, RelFieldMeta, ServiceMeta};
use crate::read::{Page, count_sql, count_to_i32, push_find_row, push_page, push_select_columns};
use crate::record::Column;
use crate::related::{self, RelLoaders};
use crate::state::State;
use crate::storage::{Backend, Cells, Counter, Inline, PlanExec, Row, Sql};
use crate::value::{DateTime, Json, Val, datetime_text, format_datetime};

/// How many query texts the cache keeps; when full it starts again (clients send a few fixed
/// texts, so this bounds only clients that build a new text per request).
const MAX_PLANS: usize = 1024;

/// The longest query text that gets a plan: the cache keeps the texts, so this bounds its memory
/// (1024 × 16 KiB) however large the requests; longer texts go to the executor.
const MAX_PLANNED_TEXT: usize = 16 * 1024;

/// The longest query text whose parsed document is kept when it has no plan (the executor then
/// reuses the document instead of parsing the text again): a few KiB of document each, so at
/// most a few MiB for a full cache.
const MAX_KEPT_DOCUMENT: usize = 2 * 1024;

/// The plans of the query texts seen so far, and for texts the executor answers, their
/// parsed documents.
#[derive(Default)]
pub(crate) struct Plans {
    by_query: RwLock<HashMap<String, Vec<Known>>>,
}

/// What is known of a query text run as one operation.
struct Known {
    operation: Option<String>,
    plan: Option<Arc<Plan>>,
    document: Option<Arc<ExecutableDocument>>,
}

/// What [`Plans::get`] tells of a text seen before.
#[derive(Default)]
pub(crate) struct Seen {
    /// Its plan; `None` when the executor answers it.
    pub(crate) plan: Option<Arc<Plan>>,
    /// Without a plan, the text's parsed document (short texts only).
    pub(crate) document: Option<Arc<ExecutableDocument>>,
}

impl Plans {
    /// What is known of `query` run as `operation`: `None` when it has not been seen.
    pub(crate) fn get(&self, query: &str, operation: Option<&str>) -> Option<Seen> {
        if query.len() > MAX_PLANNED_TEXT {
            return Some(Seen::default());
        }
        let map = self.by_query.read().unwrap_or_else(|e| e.into_inner());
        map.get(query)?
            .iter()
            .find(|known| known.operation.as_deref() == operation)
            .map(|known| Seen {
                plan: known.plan.clone(),
                document: known.document.clone(),
            })
    }

    /// Remembers the plan of a query text the executor has validated, or without one its
    /// parsed `document`.
    pub(crate) fn insert(
        &self,
        query: &str,
        operation: Option<&str>,
        plan: Option<Arc<Plan>>,
        document: Option<ExecutableDocument>,
    ) {
        let document = match (&plan, document) {
            (None, Some(doc)) if query.len() <= MAX_KEPT_DOCUMENT => Some(Arc::new(doc)),
            _ => None,
        };
        let mut map = self.by_query.write().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_PLANS {
            map.clear();
        }
        let entry = map.entry(query.to_owned()).or_default();
        if !entry
            .iter()
            .any(|known| known.operation.as_deref() == operation)
        {
            entry.push(Known {
                operation: operation.map(str::to_owned),
                plan,
                document,
            });
        }
    }
}

/// A compiled query.
#[derive(Debug)]
pub(crate) struct Plan {
    vars: Vec<Var>,
    roots: Vec<Keyed<Root>>,
    /// Whether the plan's SQLite reads run on the calling thread (`storage::lite`).
    inline: Inline,
}

/// A variable definition: its name and the value it takes when the request leaves it out
/// (its default; `null` when it is nullable).
#[derive(Debug)]
struct Var {
    name: Name,
    default: Option<Value>,
    /// The type of its value (of its items, for a list).
    ty: VarType,
    /// Whether its type is non-null: a `null` given for it is an error the executor reports
    /// (the arguments' parsers would read it as an absent or null argument).
    required: bool,
    /// For a list variable (`[T]`, `[T!]`), whether its items are non-null; `None` for one
    /// value.
    items: Option<bool>,
}

impl Var {
    /// Whether `given`, the value the request gives, is one validation takes: not `null` when
    /// the type is non-null, a list (of non-null items when they are) for a list type, and
    /// values of the type ([`VarType::accepts`]). A single value for a list type, which
    /// validation would take as a list of one, is left to the executor.
    fn accepts(&self, given: &Value) -> bool {
        let one = |value: &Value| *value == Value::Null || self.ty.accepts(value);
        match (given, self.items) {
            (Value::Null, _) => !self.required,
            (Value::List(list), Some(required)) => list
                .iter()
                .all(|item| !(required && *item == Value::Null) && one(item)),
            (_, Some(_)) => false,
            (value, None) => one(value),
        }
    }
}

/// A field with the text its value follows in the response (`"key":`).
#[derive(Debug)]
struct Keyed<T> {
    key: String,
    what: T,
}

/// Arguments as written in the query, variables unresolved.
type Args = Vec<(Name, async_graphql_value::Value)>;

#[derive(Debug)]
enum Root {
    Typename,
    /// `all<Plural>(…)`.
    All {
        args: Args,
        object: Object,
    },
    /// `<Type>(<unique field>: …)`.
    One {
        args: Args,
        object: Object,
    },
    /// `_all<Plural>Meta(…)`.
    Count {
        meta: &'static ModelMeta,
        args: Args,
        fields: Vec<Keyed<CountField>>,
    },
}

/// A selection on a model's object type.
#[derive(Debug)]
struct Object {
    meta: &'static ModelMeta,
    items: Vec<Keyed<Item>>,
    /// The columns the rows hold (field indices), in order.
    columns: Vec<usize>,
}

#[derive(Debug)]
enum Item {
    Typename,
    /// A scalar field and where its value is in the row.
    Scalar {
        field: usize,
        at: usize,
    },
    /// A relation field (`rel` indexes the model's relations).
    Related {
        rel: usize,
        args: Args,
        object: Object,
    },
    /// `_<field>Meta` of a to-many relation field.
    Count {
        rel: usize,
        args: Args,
        fields: Vec<Keyed<CountField>>,
    },
}

#[derive(Debug)]
enum CountField {
    Count,
    Typename,
}

impl Object {
    /// Where the node's id is in the row.
    fn id_at(&self) -> usize {
        self.columns
            .iter()
            .position(|&c| c == self.meta.id)
            .unwrap_or(0)
    }

    fn has_relations(&self) -> bool {
        self.items
            .iter()
            .any(|i| matches!(i.what, Item::Related { .. } | Item::Count { .. }))
    }
}

/// Compiles the operation `operation` of `doc`; `None` when it is not direct.
pub(crate) fn compile(
    service: &'static ServiceMeta,
    doc: &ExecutableDocument,
    operation: Option<&str>,
) -> Option<Plan> {
    let op = match (&doc.operations, operation) {
        (DocumentOperations::Single(op), None) => op,
        (DocumentOperations::Multiple(ops), Some(name)) => ops.get(name)?,
        (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => ops.values().next()?,
        _ => return None,
    };
    let op = &op.node;
    if op.ty != OperationType::Query || !op.directives.is_empty() {
        return None;
    }
    let mut vars = Vec::new();
    for def in &op.variable_definitions {
        let def = &def.node;
        let (ty, items) = match &def.var_type.node.base {
            BaseType::Named(ty) => (ty, None),
            BaseType::List(inner) => match &inner.base {
                BaseType::Named(ty) => (ty, Some(!inner.nullable)),
                BaseType::List(_) => return None,
            },
        };
        if !def.directives.is_empty() {
            return None;
        }
        vars.push(Var {
            name: def.name.node.clone(),
            default: def.default_value().cloned(),
            ty: var_type(service, ty)?,
            required: !def.var_type.node.nullable,
            items,
        });
    }
    let cx = Compile {
        service,
        fragments: &doc.fragments,
    };
    let roots = cx
        .fields(&op.selection_set, "Query")?
        .into_iter()
        .map(|f| cx.root(f))
        .collect::<Option<_>>()?;
    Some(Plan {
        vars,
        roots,
        inline: Inline::default(),
    })
}

/// The type of a variable's value that a plan takes.
#[derive(Debug, Clone, Copy)]
enum VarType {
    Id,
    String,
    Int,
    Float,
    Boolean,
    /// A `<Type>OrderBy` enum: its parser checks the name against the enum's values.
    Order,
    /// A project enum and its values.
    Enum(&'static [&'static str]),
}

impl VarType {
    /// Whether `value` (not `null`, read from the request's JSON, so never an enum literal) is
    /// one of this type, as validation coerces a variable's value: the arguments' parsers take
    /// some values validation refuses (a string among the items of an `Int` list, any string
    /// for an enum, a list or an object for a string).
    fn accepts(self, value: &Value) -> bool {
        match (self, value) {
            (VarType::Id, Value::String(_)) | (VarType::String, Value::String(_)) => true,
            (VarType::Id, Value::Number(n)) => n.is_i64() || n.is_u64(),
            (VarType::Int, Value::Number(n)) => {
                n.as_i64().is_some_and(|i| i32::try_from(i).is_ok())
            }
            (VarType::Float, Value::Number(_)) | (VarType::Boolean, Value::Boolean(_)) => true,
            (VarType::Order, Value::String(_)) => true,
            (VarType::Enum(values), Value::String(s)) => values.contains(&s.as_str()),
            _ => false,
        }
    }
}

/// The type of variables named `ty` if a plan takes them: the built-in scalars, the
/// `<Type>OrderBy` enums and the project enums. Input objects are left to the executor: their
/// values would be checked only as far as a plan reads them.
fn var_type(service: &ServiceMeta, ty: &str) -> Option<VarType> {
    Some(match ty {
        "ID" => VarType::Id,
        "String" => VarType::String,
        "Int" => VarType::Int,
        "Float" => VarType::Float,
        "Boolean" => VarType::Boolean,
        _ if ty
            .strip_suffix("OrderBy")
            .is_some_and(|model| service.models.iter().any(|m| m.name == model)) =>
        {
            VarType::Order
        }
        _ => VarType::Enum(service.enums.iter().find(|e| e.name == ty)?.values),
    })
}

/// What compiling a document needs.
struct Compile<'a> {
    service: &'static ServiceMeta,
    fragments: &'a HashMap<Name, Positioned<FragmentDefinition>>,
}

impl<'a> Compile<'a> {
    /// The fields of a selection set on the object type `on`, with its fragments (spread or
    /// inline, on `on` itself) flattened. `None` with directives, with a fragment on another
    /// type (an interface), or with a response key that is not a repeat of the same leaf
    /// field (the executor merges those).
    fn fields(&self, set: &'a Positioned<SelectionSet>, on: &str) -> Option<Vec<&'a Field>> {
        let mut out = Vec::new();
        self.collect(set, on, &mut out, 0)?;
        Some(out)
    }

    fn collect(
        &self,
        set: &'a Positioned<SelectionSet>,
        on: &str,
        out: &mut Vec<&'a Field>,
        depth: usize,
    ) -> Option<()> {
        // Validation forbids fragment cycles; this only bounds the walk.
        if depth > 32 {
            return None;
        }
        for item in &set.node.items {
            match &item.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    if !field.directives.is_empty() {
                        return None;
                    }
                    let key = &field.response_key().node;
                    match out.iter().find(|f| &f.response_key().node == key) {
                        None => out.push(field),
                        Some(seen) if is_same_leaf(seen, field) => {}
                        Some(_) => return None,
                    }
                }
                Selection::FragmentSpread(spread) => {
                    let fragment = &self.fragments.get(&spread.node.fragment_name.node)?.node;
                    if !spread.node.directives.is_empty()
                        || !fragment.directives.is_empty()
                        || fragment.type_condition.node.on.node != on
                    {
                        return None;
                    }
                    self.collect(&fragment.selection_set, on, out, depth + 1)?;
                }
                Selection::InlineFragment(inline) => {
                    let inline = &inline.node;
                    let applies = inline
                        .type_condition
                        .as_ref()
                        .is_none_or(|t| t.node.on.node == on);
                    if !inline.directives.is_empty() || !applies {
                        return None;
                    }
                    self.collect(&inline.selection_set, on, out, depth + 1)?;
                }
            }
        }
        Some(())
    }

    /// A root field, matched as the executor's `Query` matches it.
    fn root(&self, field: &Field) -> Option<Keyed<Root>> {
        let name = field.name.node.as_str();
        if name == "__typename" {
            return Some(keyed(field, Root::Typename));
        }
        if matches!(name, "node" | "user" | "_empty") {
            return None;
        }
        let count_of = name
            .strip_prefix("_all")
            .and_then(|n| n.strip_suffix("Meta"));
        let meta = self.service.models.iter().find(|m| {
            name.strip_prefix("all") == Some(m.plural)
                || count_of == Some(m.plural)
                || name == m.name
        })?;
        let what = if name.strip_prefix("all") == Some(meta.plural) {
            Root::All {
                args: args(field),
                object: self.object(meta, &field.selection_set)?,
            }
        } else if count_of == Some(meta.plural) {
            Root::Count {
                meta,
                args: args(field),
                fields: self.count_fields(&field.selection_set)?,
            }
        } else {
            Root::One {
                args: args(field),
                object: self.object(meta, &field.selection_set)?,
            }
        };
        Some(keyed(field, what))
    }

    fn count_fields(&self, set: &'a Positioned<SelectionSet>) -> Option<Vec<Keyed<CountField>>> {
        self.fields(set, "_QueryMeta")?
            .into_iter()
            .map(|f| match f.name.node.as_str() {
                "count" => Some(keyed(f, CountField::Count)),
                "__typename" => Some(keyed(f, CountField::Typename)),
                _ => None,
            })
            .collect()
    }

    /// The selection on a node of `meta`.
    fn object(
        &self,
        meta: &'static ModelMeta,
        set: &'a Positioned<SelectionSet>,
    ) -> Option<Object> {
        fn column(columns: &mut Vec<usize>, field: usize) -> usize {
            match columns.iter().position(|&c| c == field) {
                Some(at) => at,
                None => {
                    columns.push(field);
                    columns.len() - 1
                }
            }
        }
        let mut items = Vec::new();
        let mut columns: Vec<usize> = Vec::new();
        for f in self.fields(set, meta.name)? {
            let name = f.name.node.as_str();
            let count_of = name.strip_prefix('_').and_then(|n| n.strip_suffix("Meta"));
            let what = if name == "__typename" {
                Item::Typename
            } else if let Some(field) = meta.fields.iter().position(|c| c.exposed && c.name == name)
            {
                let at = column(&mut columns, field);
                Item::Scalar { field, at }
            } else if let Some(rel) = meta.relations.iter().position(|r| r.name == name) {
                let object = self.object(meta.relations[rel].target, &f.selection_set)?;
                Item::Related {
                    rel,
                    args: args(f),
                    object,
                }
            } else if let Some(rel) = meta
                .relations
                .iter()
                .position(|r| r.list && count_of == Some(r.name))
            {
                Item::Count {
                    rel,
                    args: args(f),
                    fields: self.count_fields(&f.selection_set)?,
                }
            } else {
                return None;
            };
            items.push(keyed(f, what));
        }
        let mut object = Object {
            meta,
            items,
            columns,
        };
        if object.has_relations() || object.columns.is_empty() {
            column(&mut object.columns, meta.id);
        }
        Some(object)
    }
}

/// Whether two fields under one response key are the same leaf (a scalar or `__typename`
/// without arguments), which GraphQL merges into one.
fn is_same_leaf(a: &Field, b: &Field) -> bool {
    a.name.node == b.name.node
        && a.arguments.is_empty()
        && b.arguments.is_empty()
        && a.selection_set.node.items.is_empty()
        && b.selection_set.node.items.is_empty()
}

fn keyed<T>(field: &Field, what: T) -> Keyed<T> {
    Keyed {
        key: format!("\"{}\":", field.response_key().node),
        what,
    }
}

fn args(field: &Field) -> Args {
    field
        .arguments
        .iter()
        .map(|(n, v)| (n.node.clone(), v.node.clone()))
        .collect()
}

/// What a plan's run needs from the request.
pub(crate) struct Run<'a> {
    pub plan: &'a Plan,
    pub state: &'a State,
    pub principal: &'a Principal,
    pub variables: &'a Variables,
    /// The statements of the run, added to the request's count when the run succeeds.
    pub counter: &'a Counter,
    pub loaders: &'a RelLoaders,
}

/// The rows of one selection level, and what its relation fields read for them.
struct Fetched {
    rows: Vec<Row>,
    /// Where each node's row is in `rows` when they are the rows of a joined statement (several
    /// rows per node, see [`Run::read_joined`]); `None` when the node `i` is `rows[i]`.
    nodes: Option<Vec<usize>>,
    /// One entry per relation item of the object, in item order.
    rels: Vec<Rel>,
}

impl Fetched {
    fn new(rows: Vec<Row>, rels: Vec<Rel>) -> Fetched {
        Fetched {
            rows,
            nodes: None,
            rels,
        }
    }

    /// How many nodes the level holds.
    fn len(&self) -> usize {
        self.nodes.as_ref().map_or(self.rows.len(), Vec::len)
    }

    /// The row of the node `i`.
    fn node(&self, i: usize) -> &Row {
        match &self.nodes {
            Some(nodes) => &self.rows[nodes[i]],
            None => &self.rows[i],
        }
    }
}

enum Rel {
    /// Each parent's rows (a range of `inner.rows`).
    Rows {
        ranges: HashMap<String, Range<usize>>,
        inner: Fetched,
    },
    /// Related nodes read by the parents' own statement: each parent's are a range of the
    /// parents' rows, their columns from `offset` on (they have no relation fields).
    Joined {
        ranges: HashMap<String, Range<usize>>,
        offset: usize,
    },
    Counts(HashMap<String, i32>),
}

type Fut<'a, T> = Pin<Box<dyn Future<Output = Option<T>> + Send + 'a>>;

impl Run<'_> {
    /// Runs `plan`: the whole response body, or `None` when the executor must answer.
    pub(crate) async fn execute(&self) -> Option<Vec<u8>> {
        let plan = self.plan;
        if !plan.roots.iter().all(|r| self.may_read_root(&r.what)) {
            return None;
        }
        let mut out = Vec::with_capacity(1024);
        out.extend_from_slice(b"{\"data\":{");
        for (i, root) in plan.roots.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(root.key.as_bytes());
            match &root.what {
                Root::Typename => write_str(&mut out, "Query"),
                Root::All { args, object } => {
                    let args = self.resolve(args)?;
                    let page = (object.meta.ops.page)(&args)?;
                    let nodes = |sql: &mut Sql| {
                        push_select_columns(sql, object.meta, "t0", Some(&object.columns));
                        push_page(sql, object.meta, "t0", &page);
                    };
                    let joined = if page.reads_backwards() {
                        None
                    } else {
                        self.read_joined(object, &nodes).await
                    };
                    let fetched = match joined {
                        Some(fetched) => fetched?,
                        None => {
                            let mut rows = self.rows(&nodes).await?;
                            if page.reads_backwards() {
                                rows.reverse();
                            }
                            self.fetch(object, rows).await?
                        }
                    };
                    out.push(b'[');
                    for j in 0..fetched.len() {
                        if j > 0 {
                            out.push(b',');
                        }
                        self.write_object(&mut out, object, &fetched, j)?;
                    }
                    out.push(b']');
                }
                Root::One { args, object } => {
                    let args = self.resolve(args)?;
                    let (field, val) = unique_arg(object.meta, &args)?;
                    let find = |sql: &mut Sql| {
                        push_find_row(sql, object.meta, field, &val, Some(&object.columns));
                    };
                    let fetched = match self.read_joined(object, &find).await {
                        Some(fetched) => fetched?,
                        None => {
                            let rows = self.rows(&find).await?;
                            self.fetch(object, rows).await?
                        }
                    };
                    if fetched.len() == 0 {
                        out.extend_from_slice(b"null");
                    } else {
                        self.write_object(&mut out, object, &fetched, 0)?;
                    }
                }
                Root::Count { meta, args, fields } => {
                    let args = self.resolve(args)?;
                    let filter = (meta.ops.count_filter)(&args)?;
                    let sql = count_sql(self.backend(), meta, filter.as_ref());
                    let rows = self.exec().rows(sql).await.ok()?;
                    let count = match rows.first() {
                        Some(row) => row.int64(0).ok()??,
                        None => 0,
                    };
                    write_count(&mut out, fields, count_to_i32(count));
                }
            }
        }
        out.extend_from_slice(b"}}");
        Some(out)
    }

    fn exec(&self) -> PlanExec<'_> {
        PlanExec {
            db: &self.state.db,
            counter: self.counter,
            inline: &self.plan.inline,
        }
    }

    fn backend(&self) -> Backend {
        self.state.db.backend()
    }

    /// Whether every scalar field the root selects passes the read permissions without a
    /// permission query (the plan does not evaluate them; the executor does).
    fn may_read_root(&self, root: &Root) -> bool {
        match root {
            Root::All { object, .. } | Root::One { object, .. } => self.may_read(object),
            Root::Typename | Root::Count { .. } => true,
        }
    }

    fn may_read(&self, object: &Object) -> bool {
        if self.principal.is_admin() {
            return true;
        }
        let Some(rules) = self.state.reads.of(object.meta, self.principal) else {
            return false;
        };
        object.items.iter().all(|item| match &item.what {
            Item::Scalar { field, .. } => rules.passes(object.meta.fields[*field].name),
            Item::Related { object, .. } => self.may_read(object),
            Item::Typename | Item::Count { .. } => true,
        })
    }

    /// The arguments with their variables resolved as the executor resolves them; `None` when
    /// a variable is missing.
    fn resolve(&self, args: &Args) -> Option<Vec<(Name, Value)>> {
        args.iter()
            .map(|(name, value)| {
                let value = value.clone().into_const_with(|var| {
                    let def = self.plan.vars.iter().find(|v| v.name == var).ok_or(())?;
                    let given = self.variables.get(&var);
                    if given.is_some_and(|given| !def.accepts(given)) {
                        return Err(());
                    }
                    given.or(def.default.as_ref()).cloned().ok_or(())
                });
                value.ok().map(|v| (name.clone(), v))
            })
            .collect()
    }

    /// The rows of the statement `statement` writes.
    async fn rows(&self, statement: impl FnOnce(&mut Sql)) -> Option<Vec<Row>> {
        let mut sql = self.state.db.sql();
        statement(&mut sql);
        self.exec().rows(sql).await.ok()
    }

    /// The nodes of `object`'s model that `nodes` selects and the related nodes of the
    /// object's one relation field, in one statement ([`related::joined_page_statement`]): on
    /// PostgreSQL, when the object selects one relation field and no `_<field>Meta`, the related
    /// nodes select no relation field, and the related page does not read backwards (`last`;
    /// `nodes` must keep the nodes' order, so a root page that reads backwards is not joined
    /// either). It saves a statement and its round trip per request, and PostgreSQL's work of
    /// a second statement (parsing the parents' ids, starting a second execution). `None` when
    /// it does not apply; `Some(None)` when the plan must give up.
    async fn read_joined(
        &self,
        object: &Object,
        nodes: impl FnOnce(&mut Sql),
    ) -> Option<Option<Fetched>> {
        if self.backend() != Backend::Postgres {
            return None;
        }
        let mut relations = object
            .items
            .iter()
            .filter(|i| matches!(i.what, Item::Related { .. } | Item::Count { .. }));
        let (Some(item), None) = (relations.next(), relations.next()) else {
            return None;
        };
        let Item::Related {
            rel,
            args,
            object: inner,
        } = &item.what
        else {
            return None;
        };
        if inner.has_relations() {
            return None;
        }
        let field = &object.meta.relations[*rel];
        let Some(inner_page) = self.relation_page(field, args) else {
            return Some(None);
        };
        if inner_page.reads_backwards() {
            return None;
        }
        let sql = related::joined_page_statement(
            self.backend(),
            object.meta,
            nodes,
            field,
            &inner_page,
            &inner.columns,
        );
        Some(self.joined_rows(object, inner, sql).await)
    }

    /// Runs a [`Self::read_joined`] statement and finds its nodes and each node's related
    /// nodes.
    async fn joined_rows(&self, object: &Object, inner: &Object, sql: Sql) -> Option<Fetched> {
        let rows = self.exec().rows(sql).await.ok()?;
        let offset = object.columns.len();
        // The related node's parent: null in the row of a node without related nodes.
        let parent_at = offset + inner.columns.len();
        let id_at = object.id_at();
        let mut nodes = Vec::new();
        let mut ranges: HashMap<String, Range<usize>> = HashMap::new();
        let mut current: Option<String> = None;
        for (k, row) in rows.iter().enumerate() {
            let id = row.text(id_at).ok()??;
            if current.as_deref() != Some(id) {
                nodes.push(k);
                current = Some(id.to_owned());
            }
            if row.text(parent_at).ok()?.is_some() {
                ranges.entry(id.to_owned()).or_insert(k..k).end = k + 1;
            }
        }
        Some(Fetched {
            rows,
            nodes: Some(nodes),
            rels: vec![Rel::Joined { ranges, offset }],
        })
    }

    /// The page a relation field's arguments ask for: a to-one field's is its filter alone.
    fn relation_page(&self, field: &RelFieldMeta, args: &Args) -> Option<Page> {
        let args = self.resolve(args)?;
        if field.list {
            (field.target.ops.page)(&args)
        } else {
            let filter = (field.target.ops.filter)(&args)?;
            Page::new(field.target, filter, Vec::new(), [None; 3], None, None).ok()
        }
    }

    /// Reads what the relation fields of `object` need for `rows`, one statement per relation
    /// field and level.
    fn fetch<'a>(&'a self, object: &'a Object, rows: Vec<Row>) -> Fut<'a, Fetched> {
        Box::pin(async move {
            let mut rels = Vec::new();
            if !object.has_relations() {
                return Some(Fetched::new(rows, rels));
            }
            let id_at = object.id_at();
            // A node can appear under several parents of the level above (n:m): each id once.
            let ids = rows
                .iter()
                .map(|row| row.string(id_at).ok().flatten())
                .collect::<Option<Vec<_>>>()?;
            let mut seen = HashSet::with_capacity(ids.len());
            let parents: Vec<&str> = ids
                .iter()
                .map(String::as_str)
                .filter(|id| seen.insert(*id))
                .collect();
            for item in &object.items {
                match &item.what {
                    Item::Related {
                        rel,
                        args,
                        object: inner,
                    } => {
                        let field = &object.meta.relations[*rel];
                        let page = self.relation_page(field, args)?;
                        let mut found = if parents.is_empty() {
                            HashMap::new()
                        } else {
                            self.loaders
                                .plan_page(&self.exec(), field, &page, &parents, &inner.columns)
                                .await
                                .ok()?
                        };
                        let mut all = Vec::new();
                        let mut ranges = HashMap::with_capacity(found.len());
                        for parent in &parents {
                            if let Some(rows) = found.remove(*parent) {
                                let start = all.len();
                                all.extend(rows);
                                ranges.insert((*parent).to_owned(), start..all.len());
                            }
                        }
                        let inner = self.fetch(inner, all).await?;
                        rels.push(Rel::Rows { ranges, inner });
                    }
                    Item::Count { rel, args, .. } => {
                        let field = &object.meta.relations[*rel];
                        let args = self.resolve(args)?;
                        let filter = (field.target.ops.count_filter)(&args)?;
                        let counts = if parents.is_empty() {
                            HashMap::new()
                        } else {
                            self.loaders
                                .plan_count(&self.exec(), field, filter.as_ref(), &parents)
                                .await
                                .ok()?
                        };
                        rels.push(Rel::Counts(counts));
                    }
                    Item::Typename | Item::Scalar { .. } => {}
                }
            }
            Some(Fetched::new(rows, rels))
        })
    }

    /// Writes the node `i` of `fetched` as `object` selects it.
    fn write_object(
        &self,
        out: &mut Vec<u8>,
        object: &Object,
        fetched: &Fetched,
        i: usize,
    ) -> Option<()> {
        self.write_node(out, object, fetched.node(i), 0, fetched)
    }

    /// Writes the node whose columns are those of `row` from `offset` on, as `object` selects
    /// it; `fetched` holds the level's rows and what its relation fields read.
    fn write_node(
        &self,
        out: &mut Vec<u8>,
        object: &Object,
        row: &Row,
        offset: usize,
        fetched: &Fetched,
    ) -> Option<()> {
        let meta = object.meta;
        let mut id: Option<String> = None;
        let mut rels = fetched.rels.iter();
        let id_at = offset + object.id_at();
        out.push(b'{');
        for (n, item) in object.items.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(item.key.as_bytes());
            match &item.what {
                Item::Typename => write_str(out, meta.name),
                Item::Scalar { field, at } => {
                    write_value(out, row, offset + *at, &meta.fields[*field], self.backend())?;
                }
                Item::Related {
                    rel,
                    object: inner_object,
                    ..
                } => {
                    // The related nodes' level, and the offset of their columns in its rows.
                    let (ranges, inner, inner_offset) = match rels.next()? {
                        Rel::Rows { ranges, inner } => (ranges, inner, None),
                        Rel::Joined { ranges, offset } => (ranges, fetched, Some(*offset)),
                        Rel::Counts(_) => return None,
                    };
                    let write = |out: &mut Vec<u8>, j: usize| match inner_offset {
                        None => self.write_object(out, inner_object, inner, j),
                        Some(at) => self.write_node(out, inner_object, &inner.rows[j], at, &NONE),
                    };
                    let id = node_id(&mut id, row, id_at)?;
                    let range = ranges.get(id).cloned().unwrap_or(0..0);
                    let field = &meta.relations[*rel];
                    if field.list {
                        out.push(b'[');
                        for (k, j) in range.enumerate() {
                            if k > 0 {
                                out.push(b',');
                            }
                            write(out, j)?;
                        }
                        out.push(b']');
                    } else if let Some(j) = range.clone().next() {
                        write(out, j)?;
                    } else if field.required {
                        // The executor reports the missing node.
                        return None;
                    } else {
                        out.extend_from_slice(b"null");
                    }
                }
                Item::Count { fields, .. } => {
                    let Some(Rel::Counts(counts)) = rels.next() else {
                        return None;
                    };
                    let id = node_id(&mut id, row, id_at)?;
                    write_count(out, fields, counts.get(id).copied().unwrap_or(0));
                }
            }
        }
        out.push(b'}');
        Some(())
    }
}

/// `<Type>(…)`: the unique field and value of the first non-null unique argument, which names
/// the node, as `read::one` finds it. Every unique argument is read first, as the resolver
/// does, so one that does not parse makes the plan give up even when an earlier one names the
/// node.
fn unique_arg(meta: &ModelMeta, args: &[(Name, Value)]) -> Option<(usize, Val)> {
    let mut candidates = Vec::new();
    for (field, f) in meta.unique_fields() {
        let value = args
            .iter()
            .find(|(n, _)| n.as_str() == f.name)
            .map(|(_, v)| v.clone());
        candidates.push((field, value_of(value, f, Pos::default()).ok()?));
    }
    candidates
        .into_iter()
        .find_map(|(f, v)| v.filter(|v| !v.is_null()).map(|v| (f, v)))
}

/// The level of nodes without relation fields read by their parents' statement: nothing more.
const NONE: Fetched = Fetched {
    rows: Vec::new(),
    nodes: None,
    rels: Vec::new(),
};

/// The id of the node in `row` (read once per node).
fn node_id<'a>(id: &'a mut Option<String>, row: &Row, at: usize) -> Option<&'a str> {
    if id.is_none() {
        *id = Some(row.string(at).ok()??);
    }
    id.as_deref()
}

/// `{"count":…}` as `fields` select it.
fn write_count(out: &mut Vec<u8>, fields: &[Keyed<CountField>], count: i32) {
    out.push(b'{');
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(f.key.as_bytes());
        match f.what {
            CountField::Count => write_json(out, &count),
            CountField::Typename => write_str(out, "_QueryMeta"),
        }
    }
    out.push(b'}');
}

fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing into a Vec cannot fail, and these values always serialise.
    let _ = serde_json::to_writer(out, value);
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    write_json(out, s);
}

/// Writes the value of `field` at `at` in `row` as the field's GraphQL output: what the record
/// type's column decoders read, then the output of its Rust type. `None` when the value does
/// not decode or a required field is null (the executor reports it).
fn write_value(
    out: &mut Vec<u8>,
    row: &Row,
    at: usize,
    field: &FieldMeta,
    backend: Backend,
) -> Option<()> {
    /// Reads the column as `T` and writes it with `write`: `Some(false)` for null, `None` when
    /// it does not decode or `valid` refuses it.
    fn put<T: Column>(
        out: &mut Vec<u8>,
        (row, at, backend): (&Row, usize, Backend),
        valid: impl Fn(&T) -> bool,
        write: impl Fn(&mut Vec<u8>, &T),
    ) -> Option<bool> {
        match T::get(row, at, backend).ok()? {
            Some(v) if valid(&v) => {
                write(out, &v);
                Some(true)
            }
            Some(_) => None,
            None => Some(false),
        }
    }
    fn any<T>(_: &T) -> bool {
        true
    }
    /// [`put`] for text, written straight from the row.
    fn put_text(
        out: &mut Vec<u8>,
        row: &Row,
        at: usize,
        valid: impl Fn(&str) -> bool,
    ) -> Option<bool> {
        match row.text(at).ok()? {
            Some(s) if valid(s) => {
                write_str(out, s);
                Some(true)
            }
            Some(_) => None,
            None => Some(false),
        }
    }
    let cell = (row, at, backend);
    let is_enum = |s: &str| field.enum_values.contains(&s);
    let written = match (field.kind, field.list) {
        (Kind::Id | Kind::String, false) => put_text(out, row, at, |_| true)?,
        (Kind::Enum, false) => put_text(out, row, at, is_enum)?,
        (Kind::Int, false) => put::<i32>(out, cell, any, write_json)?,
        (Kind::Float, false) => put::<f64>(out, cell, |v| v.is_finite(), write_json)?,
        (Kind::Boolean, false) => put::<bool>(out, cell, any, write_json)?,
        (Kind::DateTime, false) => put::<DateTime>(out, cell, any, |o, d| {
            match datetime_text(&d.0) {
                // Digits and separators: nothing to escape.
                Some(text) => {
                    o.push(b'"');
                    o.extend_from_slice(&text);
                    o.push(b'"');
                }
                None => write_str(o, &format_datetime(&d.0)),
            }
        })?,
        (Kind::Json, false) => put::<Json>(out, cell, any, |o, j| write_json(o, &j.0))?,
        (Kind::Id | Kind::String, true) => put::<Vec<String>>(out, cell, any, write_json)?,
        (Kind::Enum, true) => {
            put::<Vec<String>>(out, cell, |v| v.iter().all(|s| is_enum(s)), write_json)?
        }
        (Kind::Int, true) => put::<Vec<i32>>(out, cell, any, write_json)?,
        (Kind::Float, true) => {
            put::<Vec<f64>>(out, cell, |v| v.iter().all(|x| x.is_finite()), write_json)?
        }
        (Kind::Boolean, true) => put::<Vec<bool>>(out, cell, any, write_json)?,
        (Kind::DateTime, true) => put::<Vec<DateTime>>(out, cell, any, |o, v| {
            let texts: Vec<String> = v.iter().map(|d| format_datetime(&d.0)).collect();
            write_json(o, &texts);
        })?,
        (Kind::Json, true) => put::<Vec<Json>>(out, cell, any, |o, v| {
            let values: Vec<&serde_json::Value> = v.iter().map(|j| &j.0).collect();
            write_json(o, &values);
        })?,
        (Kind::Relation, _) => return None,
    };
    if !written {
        if field.required && !field.list {
            return None;
        }
        out.extend_from_slice(b"null");
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> ExecutableDocument {
        async_graphql::parser::parse_query(text).expect("a valid document")
    }

    /// Texts the executor answers keep their parsed document (short ones only); texts with a
    /// plan keep the plan alone; each operation of a text is known on its own.
    #[test]
    fn the_cache_keeps_documents_of_short_texts_without_a_plan() {
        let plans = Plans::default();
        let text = "mutation A { a } mutation B { b }";
        assert!(plans.get(text, Some("A")).is_none(), "not seen yet");
        plans.insert(text, Some("A"), None, Some(doc(text)));
        let known = plans.get(text, Some("A")).expect("seen");
        assert!(known.plan.is_none());
        let kept = known.document.expect("the document is kept");
        assert_eq!(kept.operations.iter().count(), 2);
        assert!(plans.get(text, Some("B")).is_none(), "another operation");

        let long = format!("{{ a }} # {}", "x".repeat(MAX_KEPT_DOCUMENT));
        plans.insert(&long, None, None, Some(doc(&long)));
        let known = plans.get(&long, None).expect("seen");
        assert!(known.plan.is_none() && known.document.is_none());

        let planned = "{ c }";
        let plan = Arc::new(Plan {
            vars: Vec::new(),
            roots: Vec::new(),
            inline: Inline::default(),
        });
        plans.insert(planned, None, Some(plan), Some(doc(planned)));
        let known = plans.get(planned, None).expect("seen");
        assert!(known.plan.is_some() && known.document.is_none());
    }
}
