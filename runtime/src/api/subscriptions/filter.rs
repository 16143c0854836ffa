//! `<Type>SubscriptionFilter` (reference §4.3): which events of a model a subscription is told
//! of.
//!
//! - The event kinds it listens to are the union of every `mutation_in` list anywhere in the
//!   filter; without any, all three.
//! - Per event, `mutation_in` and `updatedFields_contains(_every|_some)` become true or false
//!   (`updatedFields_*` is false for anything but an update: such an event is not sent); the
//!   conditions of one object are ANDed, `AND` and `OR` combine objects, and what is left of
//!   the filter (`node`) is a condition on the node as it is after the commit, checked with one
//!   statement.
//! - A `DELETED` event is not checked against `node`: the node is gone.

use async_graphql::Value;
use async_graphql::registry::Registry;

use crate::api::registry::{input_value, register_input, register_node_filter};
use crate::api::subscriptions::payload::ModelMutationType;
use crate::engine::ChangeKind;
use crate::events::Event;
use crate::model::{ApiError, ModelMeta, Val};
use crate::query::filter::CmpOp;
use crate::query::{Cond, Page, parse_filter};

/// Registers `<Type>SubscriptionFilter` (and its `node` type); its name.
pub(super) fn register(registry: &mut Registry, meta: &'static ModelMeta) -> String {
    let name = svc_names::subscription_filter(meta.name);
    let list_of_self = format!("[{name}!]");
    register_input(registry, name, |registry| {
        let kind = <ModelMutationType as async_graphql::InputType>::create_type_info(registry);
        let kind = kind.trim_end_matches('!');
        let node = register_node_filter(registry, meta);
        let fields = [
            ("AND", list_of_self.clone()),
            ("OR", list_of_self.clone()),
            ("mutation_in", format!("[{kind}!]")),
            ("updatedFields_contains", "String".to_owned()),
            ("updatedFields_contains_every", "[String!]".to_owned()),
            ("updatedFields_contains_some", "[String!]".to_owned()),
            ("node", node),
        ];
        fields
            .into_iter()
            .map(|(key, ty)| (key.to_owned(), input_value(key.to_owned(), ty)))
            .collect()
    })
}

/// A parsed subscription filter.
#[derive(Debug, Default)]
pub(super) struct SubscriptionFilter {
    /// The top object; `None` without a filter.
    root: Option<Part>,
    /// The kinds of events listened to.
    kinds: Vec<ChangeKind>,
}

/// One object of the filter: its conditions, ANDed.
#[derive(Debug)]
struct Part {
    kinds: Option<Vec<ChangeKind>>,
    contains: Option<String>,
    every: Option<Vec<String>>,
    some: Option<Vec<String>>,
    node: Option<Cond>,
    and: Vec<Part>,
    or: Option<Vec<Part>>,
}

impl SubscriptionFilter {
    /// The filter given as `value` (variables resolved), for events of `meta`.
    pub(super) fn parse(meta: &'static ModelMeta, value: &Value) -> Result<Self, String> {
        if *value == Value::Null {
            return Ok(SubscriptionFilter::default());
        }
        let root = Part::parse(meta, value)?;
        let mut kinds = Vec::new();
        root.collect_kinds(&mut kinds);
        if kinds.is_empty() {
            kinds = ALL.to_vec();
        }
        Ok(SubscriptionFilter {
            root: Some(root),
            kinds,
        })
    }

    /// Whether events of `kind` can pass.
    pub(super) fn listens_to(&self, kind: ChangeKind) -> bool {
        self.root.is_none() || self.kinds.contains(&kind)
    }

    /// What decides whether `event` passes: its kind and the fields it updated alone, or also
    /// a condition on the node as it is now ([`Decision::Check`]).
    pub(super) fn decide(&self, meta: &'static ModelMeta, event: &Event) -> Decision {
        if !self.listens_to(event.kind) {
            return Decision::Drop;
        }
        let Some(root) = &self.root else {
            return Decision::Pass;
        };
        match simplify(root.condition(event), meta, &event.id) {
            Cond::Const(true) => Decision::Pass,
            Cond::Const(false) => Decision::Drop,
            // A deleted node cannot be read: only its kind and fields decide.
            _ if event.kind == ChangeKind::Deleted => Decision::Pass,
            cond => Decision::Check(cond),
        }
    }
}

/// Whether an event passes a subscription filter.
#[derive(Debug)]
pub(super) enum Decision {
    Pass,
    Drop,
    /// It passes when the node as it is now meets the condition.
    Check(Cond),
}

/// The page that holds the node `id` of `meta` when it meets `cond`.
pub(super) fn check_page(meta: &'static ModelMeta, id: &str, cond: Cond) -> Result<Page, ApiError> {
    let this = Cond::Cmp {
        field: meta.id,
        op: CmpOp::Eq,
        val: Val::String(id.to_owned()),
    };
    let filter = Cond::All(vec![this, cond]);
    Page::new(meta, Some(filter), Vec::new(), [None; 3], None, None)
}

const ALL: [ChangeKind; 3] = [
    ChangeKind::Created,
    ChangeKind::Updated,
    ChangeKind::Deleted,
];

impl Part {
    fn parse(meta: &'static ModelMeta, value: &Value) -> Result<Part, String> {
        let Value::Object(entries) = value else {
            return Err(format!(
                "{} must be an object",
                svc_names::subscription_filter(meta.name)
            ));
        };
        let texts = |v: &Value| -> Result<Vec<String>, String> {
            match v {
                Value::List(items) => items
                    .iter()
                    .map(|item| match item {
                        Value::String(s) => Ok(s.clone()),
                        _ => Err("expected a list of field names".to_owned()),
                    })
                    .collect(),
                _ => Err("expected a list of field names".to_owned()),
            }
        };
        let parts = |v: &Value| -> Result<Vec<Part>, String> {
            match v {
                Value::List(items) => items.iter().map(|item| Part::parse(meta, item)).collect(),
                other => Ok(vec![Part::parse(meta, other)?]),
            }
        };
        let mut part = Part {
            kinds: None,
            contains: None,
            every: None,
            some: None,
            node: None,
            and: Vec::new(),
            or: None,
        };
        for (key, v) in entries {
            if *v == Value::Null {
                continue;
            }
            match key.as_str() {
                "mutation_in" => {
                    let Value::List(items) = v else {
                        return Err("mutation_in expects a list".to_owned());
                    };
                    let kinds = items
                        .iter()
                        .map(|item| match item {
                            Value::Enum(name) => kind_named(name.as_str()),
                            Value::String(name) => kind_named(name),
                            _ => None,
                        })
                        .collect::<Option<Vec<_>>>()
                        .ok_or("mutation_in expects CREATED, UPDATED or DELETED")?;
                    part.kinds = Some(kinds);
                }
                "updatedFields_contains" => match v {
                    Value::String(s) => part.contains = Some(s.clone()),
                    _ => return Err("updatedFields_contains expects a field name".to_owned()),
                },
                "updatedFields_contains_every" => part.every = Some(texts(v)?),
                "updatedFields_contains_some" => part.some = Some(texts(v)?),
                "node" => part.node = Some(parse_filter(meta, v).map_err(|e| e.to_string())?),
                "AND" => part.and = parts(v)?,
                "OR" => part.or = Some(parts(v)?),
                other => return Err(format!("unknown filter field `{other}`")),
            }
        }
        Ok(part)
    }

    fn collect_kinds(&self, out: &mut Vec<ChangeKind>) {
        for kind in self.kinds.iter().flatten() {
            if !out.contains(kind) {
                out.push(*kind);
            }
        }
        for part in self.and.iter().chain(self.or.iter().flatten()) {
            part.collect_kinds(out);
        }
    }

    /// The part's condition for `event`: its kind and field conditions decided, `node` left.
    fn condition(&self, event: &Event) -> Cond {
        let updated = |name: &str| event.updated_fields.contains(&name);
        let is_update = event.kind == ChangeKind::Updated;
        let mut all = Vec::new();
        if let Some(kinds) = &self.kinds {
            all.push(Cond::Const(kinds.contains(&event.kind)));
        }
        if let Some(name) = &self.contains {
            all.push(Cond::Const(is_update && updated(name)));
        }
        if let Some(names) = &self.every {
            all.push(Cond::Const(is_update && names.iter().all(|n| updated(n))));
        }
        if let Some(names) = &self.some {
            all.push(Cond::Const(is_update && names.iter().any(|n| updated(n))));
        }
        if let Some(node) = &self.node {
            all.push(node.clone());
        }
        all.extend(self.and.iter().map(|p| p.condition(event)));
        if let Some(or) = &self.or {
            all.push(Cond::Any(or.iter().map(|p| p.condition(event)).collect()));
        }
        Cond::All(all)
    }
}

fn kind_named(name: &str) -> Option<ChangeKind> {
    ALL.into_iter().find(|k| k.name() == name)
}

/// `cond` with its decided parts folded away: `Const` when nothing is left to check. A
/// comparison of `meta`'s id is decided against the event's node `id` here (subscriptions to
/// one node by id cost no statement for the other nodes' events).
fn simplify(cond: Cond, meta: &ModelMeta, id: &str) -> Cond {
    match cond {
        Cond::All(items) => {
            let mut left = Vec::new();
            for item in items.into_iter().map(|c| simplify(c, meta, id)) {
                match item {
                    Cond::Const(true) => {}
                    Cond::Const(false) => return Cond::Const(false),
                    other => left.push(other),
                }
            }
            if left.is_empty() {
                Cond::Const(true)
            } else {
                Cond::All(left)
            }
        }
        Cond::Any(items) => {
            let mut left = Vec::new();
            for item in items.into_iter().map(|c| simplify(c, meta, id)) {
                match item {
                    Cond::Const(false) => {}
                    Cond::Const(true) => return Cond::Const(true),
                    other => left.push(other),
                }
            }
            if left.is_empty() {
                Cond::Const(false)
            } else {
                Cond::Any(left)
            }
        }
        Cond::Cmp {
            field,
            op: CmpOp::Eq,
            val: Val::String(value),
        } if field == meta.id => Cond::Const(value == id),
        Cond::Cmp {
            field,
            op: CmpOp::Ne,
            val: Val::String(value),
        } if field == meta.id => Cond::Const(value != id),
        Cond::In {
            field,
            vals,
            negate,
        } if field == meta.id => {
            let listed = vals.iter().any(|v| matches!(v, Val::String(s) if s == id));
            Cond::Const(listed != negate)
        }
        other => other,
    }
}
