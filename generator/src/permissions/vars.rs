//! The variables the server supplies to a permission query, per permission kind (reference §5.4,
//! seed §2.5).
//!
//! Our choices where the reference is loose: every type permission gets `$user_id`/`$userId` and
//! `$node_id`/`$nodeId`; variables are typed with the field's scalar or, for enum fields, with the
//! enum itself (the reference declares the literal `Enum`, which no schema defines). When two
//! derived names coincide (`$node_id` is both the node id and `$node_<id>`, a scalar `authorId`
//! next to a relation `author`), the first one in the order below wins.

use crate::model::{
    FieldKind, Model, PermissionTarget, ScalarType, TypeId, TypeOperation, VarSource,
};

/// A variable the server supplies for one permission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuppliedVar {
    /// Without the `$`.
    pub name: String,
    /// What the server sets it to.
    pub source: VarSource,
    /// The GraphQL named type of the value (`ID`, `String`, …, or an enum's name). Declarations
    /// the server injects are nullable.
    pub ty: String,
}

/// The variables a query of a permission on `target` may use, in this order: the user's id, the
/// node's id, then per field in declaration order the input values (`new_`, `input_`, create and
/// update), then the stored values (`old_`, `node_`; read only `node_`, update and delete both).
/// `*` gets none (it has no query).
pub fn supplied_vars(model: &Model, target: PermissionTarget) -> Vec<SuppliedVar> {
    let mut out = Vars::default();
    match target {
        PermissionTarget::All => {}
        PermissionTarget::Type { ty, op } => type_vars(model, ty, op, &mut out),
        PermissionTarget::Relation { relation, .. } => {
            user_vars(&mut out);
            let a = model.relation_a_name(relation);
            let b = model.relation_b_name(relation);
            out.push(format!("{a}_id"), VarSource::SideB, "ID");
            out.push(format!("{b}_id"), VarSource::SideA, "ID");
        }
    }
    out.0
}

/// Whether a variable's value depends on the node being checked, so that the runtime evaluates
/// it for many nodes in one SQL statement and it may appear only inside `filter`. For a create
/// permission `$node_id` is the constant `"not-the-id"`.
pub fn is_node_dependent(source: &VarSource, target: PermissionTarget) -> bool {
    match source {
        VarSource::NodeId => !matches!(
            target,
            PermissionTarget::Type {
                op: TypeOperation::Create,
                ..
            }
        ),
        VarSource::NodeField(_) => true,
        VarSource::UserId
        | VarSource::Input(_)
        | VarSource::InputRelationId(_)
        | VarSource::SideA
        | VarSource::SideB => false,
    }
}

#[derive(Default)]
struct Vars(Vec<SuppliedVar>);

impl Vars {
    fn push(&mut self, name: String, source: VarSource, ty: &str) {
        if !self.0.iter().any(|v| v.name == name) {
            self.0.push(SuppliedVar {
                name,
                source,
                ty: ty.to_owned(),
            });
        }
    }
}

fn user_vars(out: &mut Vars) {
    for name in ["user_id", "userId"] {
        out.push(name.to_owned(), VarSource::UserId, "ID");
    }
}

fn type_vars(model: &Model, ty: TypeId, op: TypeOperation, out: &mut Vars) {
    user_vars(out);
    for name in ["node_id", "nodeId"] {
        out.push(name.to_owned(), VarSource::NodeId, "ID");
    }
    let def = model.ty(ty);
    // Non-list scalar and enum fields with the name of their value type.
    let values: Vec<(usize, &str, String)> = def
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.list)
        .filter_map(|(i, f)| {
            let ty = match f.kind {
                FieldKind::Scalar(s) => s.name().to_owned(),
                FieldKind::Enum(e) => model.enum_def(e).name.clone(),
                FieldKind::Relation { .. } => return None,
            };
            Some((i, f.name.as_str(), ty))
        })
        .collect();
    let inputs = |out: &mut Vars| {
        for (i, f) in def.fields.iter().enumerate() {
            match f.kind {
                FieldKind::Relation { .. } if !f.list => {
                    for prefix in ["new", "input"] {
                        out.push(
                            format!("{prefix}_{}Id", f.name),
                            VarSource::InputRelationId(i),
                            ScalarType::Id.name(),
                        );
                    }
                }
                FieldKind::Relation { .. } => {}
                FieldKind::Scalar(_) | FieldKind::Enum(_) => {
                    if f.list || !f.is_writable() {
                        continue;
                    }
                    if let Some((_, _, ty)) = values.iter().find(|(j, _, _)| *j == i) {
                        for prefix in ["new", "input"] {
                            out.push(format!("{prefix}_{}", f.name), VarSource::Input(i), ty);
                        }
                    }
                }
            }
        }
    };
    let stored = |out: &mut Vars, prefixes: &[&str]| {
        for (i, name, ty) in &values {
            for prefix in prefixes {
                out.push(format!("{prefix}_{name}"), VarSource::NodeField(*i), ty);
            }
        }
    };
    match op {
        TypeOperation::Read => stored(out, &["node"]),
        TypeOperation::Create => inputs(out),
        TypeOperation::Update => {
            inputs(out);
            stored(out, &["old", "node"]);
        }
        TypeOperation::Delete => stored(out, &["old", "node"]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RelationId;

    fn model() -> crate::model::Valid<Model> {
        crate::frontend::model_from_sdl(
            r#"enum Mood { HAPPY SAD }
               type Post @model {
                 id: ID! @isUnique
                 createdAt: DateTime!
                 title: String!
                 mood: Mood
                 tags: [String!]
                 meta: Json
                 author: User @relation(name: "UserPosts")
               }
               type User @model {
                 id: ID! @isUnique
                 posts: [Post!]! @relation(name: "UserPosts")
               }"#,
        )
    }

    fn render(model: &Model, target: PermissionTarget) -> Vec<String> {
        supplied_vars(model, target)
            .into_iter()
            .map(|v| format!("${}: {} {:?}", v.name, v.ty, v.source))
            .collect()
    }

    fn post(op: TypeOperation) -> PermissionTarget {
        PermissionTarget::Type { ty: TypeId(0), op }
    }

    #[test]
    fn read_has_node_fields_including_declared_system_fields() {
        let model = model();
        assert_eq!(
            render(&model, post(TypeOperation::Read)),
            [
                "$user_id: ID UserId",
                "$userId: ID UserId",
                "$node_id: ID NodeId",
                "$nodeId: ID NodeId",
                "$node_createdAt: DateTime NodeField(1)",
                "$node_title: String NodeField(2)",
                "$node_mood: Mood NodeField(3)",
                "$node_meta: Json NodeField(5)",
            ]
        );
    }

    #[test]
    fn create_has_writable_inputs_and_to_one_relation_ids() {
        let model = model();
        assert_eq!(
            render(&model, post(TypeOperation::Create)),
            [
                "$user_id: ID UserId",
                "$userId: ID UserId",
                "$node_id: ID NodeId",
                "$nodeId: ID NodeId",
                "$new_title: String Input(2)",
                "$input_title: String Input(2)",
                "$new_mood: Mood Input(3)",
                "$input_mood: Mood Input(3)",
                "$new_meta: Json Input(5)",
                "$input_meta: Json Input(5)",
                "$new_authorId: ID InputRelationId(6)",
                "$input_authorId: ID InputRelationId(6)",
            ]
        );
        // To-many relations give no id variable.
        let user = PermissionTarget::Type {
            ty: TypeId(1),
            op: TypeOperation::Create,
        };
        assert_eq!(render(&model, user).len(), 4);
    }

    #[test]
    fn update_and_delete_add_stored_values() {
        let model = model();
        let update = render(&model, post(TypeOperation::Update));
        // 12 of create, then `old_`/`node_` for five fields, less `node_id` (the node id).
        assert_eq!(update.len(), 12 + 2 * 5 - 1);
        assert!(update.contains(&"$old_id: ID NodeField(0)".to_owned()));
        assert!(update.contains(&"$node_title: String NodeField(2)".to_owned()));
        assert_eq!(update[12], "$old_id: ID NodeField(0)");
        assert_eq!(
            render(&model, post(TypeOperation::Delete)),
            [
                "$user_id: ID UserId",
                "$userId: ID UserId",
                "$node_id: ID NodeId",
                "$nodeId: ID NodeId",
                "$old_id: ID NodeField(0)",
                "$old_createdAt: DateTime NodeField(1)",
                "$node_createdAt: DateTime NodeField(1)",
                "$old_title: String NodeField(2)",
                "$node_title: String NodeField(2)",
                "$old_mood: Mood NodeField(3)",
                "$node_mood: Mood NodeField(3)",
                "$old_meta: Json NodeField(5)",
                "$node_meta: Json NodeField(5)",
            ]
        );
    }

    #[test]
    fn relation_permissions_name_the_two_sides() {
        let model = model();
        let target = PermissionTarget::Relation {
            relation: RelationId(0),
            connect: true,
            disconnect: false,
        };
        // Post.author is side A: aName = authorUser (the User node, side B).
        assert_eq!(
            render(&model, target),
            [
                "$user_id: ID UserId",
                "$userId: ID UserId",
                "$authorUser_id: ID SideB",
                "$postsPost_id: ID SideA",
            ]
        );
        assert!(render(&model, PermissionTarget::All).is_empty());
    }

    #[test]
    fn node_dependence() {
        let create = post(TypeOperation::Create);
        let read = post(TypeOperation::Read);
        assert!(!is_node_dependent(&VarSource::NodeId, create));
        assert!(is_node_dependent(&VarSource::NodeId, read));
        assert!(is_node_dependent(&VarSource::NodeField(1), read));
        assert!(!is_node_dependent(&VarSource::UserId, read));
        assert!(!is_node_dependent(&VarSource::Input(1), create));
    }
}
