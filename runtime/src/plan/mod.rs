//! Compiled plans: direct execution of plain read queries. A query text the GraphQL executor has
//! validated once is compiled into a [`Plan`] ([`compile`]), kept by the text ([`Plans`]), and
//! later requests with the same text run the plan ([`Execution`]): the same SQL statements the
//! executor's resolvers run (except that on PostgreSQL a page or node and its one relation field
//! can be one statement), with the rows written straight into the response text (`json`),
//! without a future, a `Value` or a map per field.
//!
//! What a plan covers: query operations whose variables are of the built-in scalar types, made
//! of `all<Plural>`, `<Type>(…)`, `_all<Plural>Meta` and `__typename` at the root, and below
//! them scalar and enum fields, `__typename` and relation fields (with their `_<field>Meta`); fragments
//! on the selected type itself are flattened and a leaf field selected twice is merged. No
//! directives, fragments on interfaces, or other repeated response keys: anything else is
//! answered by the executor.
//!
//! The Relay API's plans ([`Api::Relay`]) cover `viewer { … }` with `id`, `__typename`,
//! `all<Plural>` and `<Type>(…)`; lists are connections (`count`, `pageInfo`, one `edges` with
//! `cursor` and at most one `node`), read as the executor reads them: one node more than asked
//! on the side asked, dropped after it told the page facts ([`crate::query::Page::probe`]).
//! `node(id)` and `viewer.user` are the executor's.
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

mod cache;
mod checks;
mod compile;
mod json;
mod run;

use std::sync::atomic::{AtomicU32, Ordering};

use async_graphql::{Name, Value};

use crate::model::ModelMeta;
use crate::storage::InlineReads;

pub use cache::{Omits, Plans, Seen, left_out};
pub use checks::Checks;
pub use compile::compile;
pub use run::Execution;

/// The API whose queries a plan answers: the two shape their roots and lists differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// The Simple API's: `all<Plural>`, `<Type>(…)` and `_all<Plural>Meta` at the root.
    Simple,
    /// `viewer { … }` at the root; lists are connections.
    Relay,
}

/// A compiled query.
#[derive(Debug)]
pub struct Plan {
    vars: Vec<Var>,
    roots: Vec<Keyed<Root>>,
    /// Whether the plan's SQLite reads run on the calling thread (`storage/sqlite/readers.rs`).
    inline: InlineReads,
}

/// A variable definition: its name and the default its definition gives. A request that leaves
/// out a variable without one makes the plan give up: the executor then runs the document
/// without the arguments the variable fills (`http/omitted.rs`).
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
        scan: Scan,
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
    /// The Relay API's `viewer`.
    Viewer(Vec<Keyed<ViewerItem>>),
}

/// A field of the Relay API's `Viewer`.
#[derive(Debug)]
enum ViewerItem {
    /// `id`: always `viewer-fixed`.
    Id,
    Typename,
    /// `all<Plural>(…)`.
    All {
        args: Args,
        conn: Connection,
        scan: Scan,
    },
    /// `<Type>(<unique field>: …)`.
    One {
        args: Args,
        object: Object,
    },
}

/// What the requests of a list that also counts the nodes of its filter (a later
/// `_all<Plural>Meta` of the same filter, or the connection's `count`) learned of it: how many
/// nodes the filter selected the last time. It decides whether the next one reads its page and
/// its count in one scan (`run.rs`, `Execution::scanned`).
#[derive(Debug)]
struct Scan {
    /// The nodes last counted; `u32::MAX` before the first count.
    matched: AtomicU32,
}

impl Default for Scan {
    fn default() -> Scan {
        Scan {
            matched: AtomicU32::new(u32::MAX),
        }
    }
}

impl Scan {
    /// How many nodes the filter selected when last counted (`None` before the first count).
    fn matched(&self) -> Option<u64> {
        let matched = self.matched.load(Ordering::Relaxed);
        (matched != u32::MAX).then_some(u64::from(matched))
    }

    /// Records that the filter selected `matched` nodes.
    fn learn(&self, matched: u64) {
        let matched = u32::try_from(matched).unwrap_or(u32::MAX).min(u32::MAX - 1);
        self.matched.store(matched, Ordering::Relaxed);
    }
}

/// A selection on a connection (`<Type>Connection`): its fields, and the selection on its
/// nodes (`edges { node { … } }`), whose rows always hold the id (the cursor).
#[derive(Debug)]
struct Connection {
    fields: Vec<Keyed<ConnField>>,
    object: Object,
}

#[derive(Debug)]
enum ConnField {
    /// `__typename`, the connection type's name.
    Typename(String),
    Count,
    PageInfo(Vec<Keyed<PageInfoField>>),
    Edges(Vec<Keyed<EdgeField>>),
}

#[derive(Debug)]
enum PageInfoField {
    Typename,
    HasNextPage,
    HasPreviousPage,
    StartCursor,
    EndCursor,
}

#[derive(Debug)]
enum EdgeField {
    /// `__typename`, the edge type's name.
    Typename(String),
    Cursor,
    /// `node`, as the connection's `object` selects it.
    Node,
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
    /// A to-many relation field of the Relay API: a connection.
    Connection {
        rel: usize,
        args: Args,
        conn: Connection,
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
        self.items.iter().any(|i| i.what.is_relation())
    }
}

impl Connection {
    /// Whether the connection selects `count`.
    fn counts(&self) -> bool {
        self.fields
            .iter()
            .any(|f| matches!(f.what, ConnField::Count))
    }
}

impl Item {
    /// Whether the item reads more than the node's row.
    fn is_relation(&self) -> bool {
        !matches!(self, Item::Typename | Item::Scalar { .. })
    }
}
