//! The difference between the stored schema and the compiled one, as an ordered list of steps,
//! each described in plain words. Removing a type, a relation or a field is destructive (it
//! loses data) and needs `--force`, as in the reference (`isDestructive`).

use std::fmt;

use super::schema::{Field, Model, Relation, Schema};

/// One change to the database, in the order it is applied.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A relation whose join table goes away (first, so no join table refers to a dropped type).
    DropRelation(Relation),
    DropModel(Model),
    CreateModel(Model),
    /// Changes of a type present before and after: fields added, removed or changed, and the
    /// required relation fields it gains (checked against its nodes).
    AlterModel {
        name: String,
        changes: Vec<FieldChange>,
        /// Relation fields that are required now and were not (or did not exist).
        required_relations: Vec<(String, String)>,
    },
    CreateRelation(Relation),
    /// A relation present before and after whose cardinality changed.
    AlterRelation {
        from: Relation,
        to: Relation,
    },
}

/// One field change within [`Step::AlterModel`].
#[derive(Debug, Clone, PartialEq)]
pub enum FieldChange {
    Add(Field),
    Remove(Field),
    Change { from: Field, to: Field },
}

/// What a migration does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub steps: Vec<Step>,
}

impl Plan {
    /// The steps that turn `old` into `new`.
    pub fn between(old: &Schema, new: &Schema) -> Plan {
        let mut steps = Vec::new();
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
                match before.field(&field.name) {
                    None => changes.push(FieldChange::Add(field.clone())),
                    Some(was) if was != field => changes.push(FieldChange::Change {
                        from: was.clone(),
                        to: field.clone(),
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
        Plan { steps }
    }

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
                        FieldChange::Add(f) => match (&f.default, f.required) {
                            (Some(d), _) => format!(
                                "Add the field `{name}.{}` ({}), set to its default {d} in existing nodes",
                                f.name,
                                shape(f)
                            ),
                            (None, _) => format!("Add the field `{name}.{}` ({})", f.name, shape(f)),
                        },
                        FieldChange::Remove(f) => format!(
                            "Remove the field `{name}.{}`, with its values (destructive)",
                            f.name
                        ),
                        FieldChange::Change { from, to } => format!(
                            "Change the field `{name}.{}`: {}",
                            to.name,
                            field_change(from, to)
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
        crate::meta::Kind::Enum => "enum".to_owned(),
        kind => kind.scalar_name().to_owned(),
    };
    match (f.list, f.required) {
        (true, true) => format!("[{name}!]!"),
        (true, false) => format!("[{name}!]"),
        (false, true) => format!("{name}!"),
        (false, false) => name,
    }
}

fn field_change(from: &Field, to: &Field) -> String {
    let mut parts = Vec::new();
    if !from.same_storage(to) {
        let keep = if to.kind == crate::meta::Kind::String && !to.list {
            "values converted to text"
        } else {
            "only possible while no node has a value"
        };
        parts.push(format!("{} → {} ({keep})", shape(from), shape(to)));
    } else if from.required != to.required {
        parts.push(if to.required {
            "now required (only possible while no node lacks a value)".to_owned()
        } else {
            "now optional".to_owned()
        });
    }
    if from.unique != to.unique {
        parts.push(if to.unique {
            "now unique (only possible while no two nodes share a value)".to_owned()
        } else {
            "no longer unique".to_owned()
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
