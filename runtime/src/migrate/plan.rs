//! The difference between the stored schema and the compiled one, as an ordered list of steps,
//! each described in plain words. Removing a type, a relation or a field is destructive (it
//! loses data) and needs `--force`, as in the reference (`isDestructive`).

use std::fmt;

use super::schema::{Field, Hints, Model, Relation, Schema};

/// One change to the database, in the order it is applied.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// `@rename(oldName:)` on a type: its table is renamed (first, so every later step uses
    /// the new names).
    RenameModel {
        /// The type as stored, under its old name.
        from: Model,
        /// The new name (of the type and its table).
        to: String,
    },
    /// `@relation(oldName:)`: the join table is renamed.
    RenameRelation {
        /// The relation as stored, under its old name.
        from: Relation,
        /// The same relation under its new name, with its new join table `_<new name>`.
        to: Relation,
    },
    /// `@rename(oldName:)` on a field: its column is renamed.
    RenameField {
        /// The field's type (its new name, when the type is renamed too).
        model: String,
        /// The old field (and column) name.
        from: String,
        /// The new field (and column) name.
        to: String,
        /// The field is `@isUnique`: its unique index is renamed with it.
        unique: bool,
        /// The field is `@search`: its index is renamed with it.
        search: bool,
    },
    /// A relation whose join table goes away (first, so no join table refers to a dropped type).
    DropRelation(Relation),
    /// A type that goes away: its table is dropped, with its nodes.
    DropModel(Model),
    /// A new type: its table (and its indexes) are created.
    CreateModel(Model),
    /// Changes of a type present before and after: fields added, removed or changed, and the
    /// required relation fields it gains (checked against its nodes).
    AlterModel {
        /// The type's name.
        name: String,
        /// The changes of its scalar and enum fields (removals first).
        changes: Vec<FieldChange>,
        /// Relation fields that are required now and were not (or did not exist).
        required_relations: Vec<(String, String)>,
    },
    /// A new relation (or one whose types changed): its join table is created.
    CreateRelation(Relation),
    /// A relation present before and after whose cardinality changed.
    AlterRelation {
        /// The relation as stored.
        from: Relation,
        /// The relation as compiled.
        to: Relation,
    },
}

/// One field change within [`Step::AlterModel`].
#[derive(Debug, Clone, PartialEq)]
pub enum FieldChange {
    /// A new field; `value` is its `@migrationValue`, written into existing nodes.
    Add {
        /// The field as compiled.
        field: Field,
        /// Its `@migrationValue`, as the JSON of the API value.
        value: Option<serde_json::Value>,
    },
    /// A field that goes away, with its column and values (destructive).
    Remove(Field),
    /// A changed field; `value` (its `@migrationValue`) replaces values of another type, and
    /// fills missing ones when the field becomes required.
    Change {
        /// The field as stored.
        from: Field,
        /// The field as compiled (same name).
        to: Field,
        /// Its `@migrationValue`, as the JSON of the API value.
        value: Option<serde_json::Value>,
    },
}

impl FieldChange {
    /// A field that only gained or lost `@search`: its column stays as it is (the index follows
    /// after the steps, `search::after`).
    pub fn is_search_only(&self) -> bool {
        match self {
            FieldChange::Change { from, to, .. } => {
                from.search != to.search
                    && Field {
                        search: to.search,
                        ..from.clone()
                    } == *to
            }
            _ => false,
        }
    }
}

/// What a migration does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// The steps in the order they are applied: renames, relations dropped, types dropped,
    /// types created or changed, then relations created or changed.
    pub steps: Vec<Step>,
}

impl Plan {
    /// The steps that turn `old` into `new`, by names only.
    pub fn between(old: &Schema, new: &Schema) -> Plan {
        Plan::with_hints(old, new, &Hints::default())
    }

    /// The steps that turn `old` into `new`, following the model's renames and migration
    /// values. A rename applies only while the stored schema still has the old name.
    pub fn with_hints(old: &Schema, new: &Schema, hints: &Hints) -> Plan {
        Plan::prepare(old, new, hints).0
    }

    /// The plan, and `old` with its renames made (what the steps after the renames start
    /// from).
    pub(super) fn prepare(old: &Schema, new: &Schema, hints: &Hints) -> (Plan, Schema) {
        let (renamed, mut steps) = renamed(old, new, hints);
        let old = &renamed;
        // Relations removed, or whose types changed (re-created below).
        for rel in &old.relations {
            match new.relation(&rel.name) {
                Some(now) if now.a == rel.a && now.b == rel.b && now.table == rel.table => {}
                _ => steps.push(Step::DropRelation(rel.clone())),
            }
        }
        for model in &old.models {
            if new.model(&model.name).is_none() {
                steps.push(Step::DropModel(model.clone()));
            }
        }
        for model in &new.models {
            let Some(before) = old.model(&model.name) else {
                steps.push(Step::CreateModel(model.clone()));
                continue;
            };
            let mut changes = Vec::new();
            for field in &before.fields {
                if model.field(&field.name).is_none() {
                    changes.push(FieldChange::Remove(field.clone()));
                }
            }
            for field in &model.fields {
                let value = hints.value(&model.name, &field.name).cloned();
                match before.field(&field.name) {
                    None => changes.push(FieldChange::Add {
                        field: field.clone(),
                        value,
                    }),
                    Some(was) if was != field => changes.push(FieldChange::Change {
                        from: was.clone(),
                        to: field.clone(),
                        value,
                    }),
                    Some(_) => {}
                }
            }
            let required_relations: Vec<(String, String)> = model
                .relation_fields
                .iter()
                .filter(|f| f.required)
                .filter(|f| {
                    !before
                        .relation_fields
                        .iter()
                        .any(|b| b.name == f.name && b.required && b.relation == f.relation)
                })
                .map(|f| (f.name.clone(), f.relation.clone()))
                .collect();
            if !changes.is_empty() || !required_relations.is_empty() {
                steps.push(Step::AlterModel {
                    name: model.name.clone(),
                    changes,
                    required_relations,
                });
            }
        }
        for rel in &new.relations {
            match old.relation(&rel.name) {
                Some(was) if was.a == rel.a && was.b == rel.b && was.table == rel.table => {
                    if was != rel {
                        steps.push(Step::AlterRelation {
                            from: was.clone(),
                            to: rel.clone(),
                        });
                    }
                }
                _ => steps.push(Step::CreateRelation(rel.clone())),
            }
        }
        (Plan { steps }, renamed)
    }

    /// Whether there is nothing to change: the stored schema matches the compiled one.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Whether a step loses data: a type, a relation or a field is removed.
    pub fn is_destructive(&self) -> bool {
        self.steps.iter().any(Step::is_destructive)
    }

    /// One line per change, in plain words.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for step in &self.steps {
            step.describe(&mut out);
        }
        out
    }
}

impl Step {
    /// A rename: applied before every other step.
    pub fn is_rename(&self) -> bool {
        matches!(
            self,
            Step::RenameModel { .. } | Step::RenameRelation { .. } | Step::RenameField { .. }
        )
    }

    fn is_destructive(&self) -> bool {
        match self {
            Step::DropRelation(_) | Step::DropModel(_) => true,
            Step::AlterModel { changes, .. } => {
                changes.iter().any(|c| matches!(c, FieldChange::Remove(_)))
            }
            _ => false,
        }
    }

    fn describe(&self, out: &mut Vec<String>) {
        match self {
            Step::RenameModel { from, to } => {
                out.push(format!("Rename the type `{}` to `{to}`", from.name));
            }
            Step::RenameRelation { from, to } => out.push(format!(
                "Rename the relation `{}` to `{}`",
                from.name, to.name
            )),
            Step::RenameField {
                model, from, to, ..
            } => out.push(format!("Rename the field `{model}.{from}` to `{to}`")),
            Step::DropRelation(r) => out.push(format!(
                "Remove the relation `{}` between `{}` and `{}`, with all its edges (destructive)",
                r.name, r.a, r.b
            )),
            Step::DropModel(m) => out.push(format!(
                "Remove the type `{}`, with all its nodes (destructive)",
                m.name
            )),
            Step::CreateModel(m) => out.push(format!("Create the type `{}`", m.name)),
            Step::AlterModel {
                name,
                changes,
                required_relations,
            } => {
                for change in changes {
                    out.push(match change {
                        FieldChange::Add { field: f, value } => match (value, &f.default) {
                            (Some(v), _) => format!(
                                "Add the field `{name}.{}` ({}), set to its migration value {v} in existing nodes",
                                f.name,
                                shape(f)
                            ),
                            (None, Some(d)) => format!(
                                "Add the field `{name}.{}` ({}), set to its default {d} in existing nodes",
                                f.name,
                                shape(f)
                            ),
                            (None, None) => {
                                format!("Add the field `{name}.{}` ({})", f.name, shape(f))
                            }
                        },
                        FieldChange::Remove(f) => format!(
                            "Remove the field `{name}.{}`, with its values (destructive)",
                            f.name
                        ),
                        FieldChange::Change { from, to, value } => format!(
                            "Change the field `{name}.{}`: {}",
                            to.name,
                            field_change(from, to, value.as_ref())
                        ),
                    });
                }
                for (field, relation) in required_relations {
                    out.push(format!(
                        "Make the relation field `{name}.{field}` ({relation}) required"
                    ));
                }
            }
            Step::CreateRelation(r) => out.push(format!(
                "Create the relation `{}` between `{}` and `{}`",
                r.name, r.a, r.b
            )),
            Step::AlterRelation { from, to } => out.push(format!(
                "Change the relation `{}`: {} (was {})",
                to.name,
                cardinality(to),
                cardinality(from)
            )),
        }
    }
}

/// `String!`, `[Int!]`, `Role` (enum).
fn shape(f: &Field) -> String {
    let name = match f.kind {
        crate::model::Kind::Enum => "enum".to_owned(),
        kind => kind.scalar_name().to_owned(),
    };
    match (f.list, f.required) {
        (true, true) => format!("[{name}!]!"),
        (true, false) => format!("[{name}!]"),
        (false, true) => format!("{name}!"),
        (false, false) => name,
    }
}

fn field_change(from: &Field, to: &Field, value: Option<&serde_json::Value>) -> String {
    let mut parts = Vec::new();
    if !from.same_storage(to) {
        let keep = match value {
            _ if from.converts_to_text(to) => "values converted to text".to_owned(),
            Some(v) => format!("every node set to its migration value {v}"),
            None => "only possible while no node has a value".to_owned(),
        };
        parts.push(format!("{} → {} ({keep})", shape(from), shape(to)));
    } else if from.required != to.required {
        parts.push(match (to.required, value) {
            (true, Some(v)) if to.list => {
                format!("now required (every node set to its migration value {v})")
            }
            (true, Some(v)) => {
                format!("now required (nodes without a value set to its migration value {v})")
            }
            (true, None) => "now required (only possible while no node lacks a value)".to_owned(),
            (false, _) => "now optional".to_owned(),
        });
    }
    if from.unique != to.unique {
        parts.push(if to.unique {
            "now unique (only possible while no two nodes share a value)".to_owned()
        } else {
            "no longer unique".to_owned()
        });
    }
    if from.search != to.search {
        parts.push(if to.search {
            "now indexed for substring filters (`@search`)".to_owned()
        } else {
            "no longer indexed for substring filters".to_owned()
        });
    }
    if from.enum_values != to.enum_values {
        let removed: Vec<&str> = from
            .enum_values
            .iter()
            .filter(|v| !to.enum_values.contains(v))
            .map(String::as_str)
            .collect();
        let added: Vec<&str> = to
            .enum_values
            .iter()
            .filter(|v| !from.enum_values.contains(v))
            .map(String::as_str)
            .collect();
        if !added.is_empty() {
            parts.push(format!("values added: {}", added.join(", ")));
        }
        if !removed.is_empty() {
            parts.push(format!(
                "values removed: {} (only possible while no node uses them)",
                removed.join(", ")
            ));
        }
    }
    if from.default != to.default {
        parts.push(match &to.default {
            Some(d) => format!("default {d}"),
            None => "no default".to_owned(),
        });
    }
    if parts.is_empty() {
        "moved".to_owned()
    } else {
        parts.join("; ")
    }
}

fn cardinality(r: &Relation) -> &'static str {
    match (r.a_list, r.b_list) {
        (true, true) => "many-to-many",
        (false, true) => "one-to-many",
        (true, false) => "many-to-one",
        (false, false) => "one-to-one",
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in self.lines() {
            writeln!(f, "  - {line}")?;
        }
        Ok(())
    }
}

/// The rename steps the hints call for, and `old` with those renames made, so the rest of the
/// plan compares like with like.
fn renamed(old: &Schema, new: &Schema, hints: &Hints) -> (Schema, Vec<Step>) {
    let mut old = old.clone();
    let mut steps = Vec::new();
    for (to, from) in &hints.models {
        if old.model(to).is_some() || new.model(to).is_none() {
            continue;
        }
        let Some(model) = old.model(from).cloned() else {
            continue;
        };
        for m in &mut old.models {
            if m.name == *from {
                m.name.clone_from(to);
            }
        }
        for r in &mut old.relations {
            for end in [&mut r.a, &mut r.b] {
                if end == from {
                    end.clone_from(to);
                }
            }
        }
        steps.push(Step::RenameModel {
            from: model,
            to: to.clone(),
        });
    }
    for (to, from) in &hints.relations {
        if old.relation(to).is_some() || new.relation(to).is_none() {
            continue;
        }
        let Some(was) = old.relation(from).cloned() else {
            continue;
        };
        let mut renamed = was.clone();
        renamed.name.clone_from(to);
        renamed.table = format!("_{to}");
        for r in &mut old.relations {
            if r.name == *from {
                *r = renamed.clone();
            }
        }
        for m in &mut old.models {
            for f in &mut m.relation_fields {
                if f.relation == *from {
                    f.relation.clone_from(to);
                }
            }
        }
        steps.push(Step::RenameRelation {
            from: was,
            to: renamed,
        });
    }
    for (model, to, from) in &hints.fields {
        let wanted = new.model(model).is_some_and(|m| m.field(to).is_some());
        let Some(m) = old.models.iter_mut().find(|m| m.name == *model) else {
            continue;
        };
        if !wanted || m.field(to).is_some() {
            continue;
        }
        let Some(field) = m.fields.iter_mut().find(|f| f.name == *from) else {
            continue;
        };
        field.name.clone_from(to);
        steps.push(Step::RenameField {
            model: model.clone(),
            from: from.clone(),
            to: to.clone(),
            unique: field.unique,
            search: field.search,
        });
    }
    (old, steps)
}
