//! Response keys in the order the query selects them. GraphQL asks that an object's entries
//! follow the order of `CollectFields` (specification §7.2.2), which the original service kept.
//! async-graphql resolves an object's fields concurrently and adds each to the object as it
//! completes, so a field that waits for the database (a relation read through the dataloader,
//! a root list) can land after one selected below it, and a failed field's `null`, put back by
//! `render`, lands last. [`restore`] walks `data` beside the query and puts every object's
//! entries back in the query's order.

use async_graphql::parser::types::{ExecutableDocument, SelectionSet};

use super::nulls::{Nullability, fields, named};

/// Puts the entries of every object in `data` in the order in which the operation `operation`
/// of `doc` selects them. Entries the query does not select (none are expected) keep their
/// order after the others.
pub fn restore(
    types: &Nullability,
    doc: &ExecutableDocument,
    operation: Option<&str>,
    data: &mut serde_json::Value,
) {
    let Some((op, root)) = types.operation(doc, operation) else {
        return;
    };
    let walk = Walk { types, doc };
    walk.value(data, &[&op.selection_set.node], root);
}

struct Walk<'d> {
    types: &'d Nullability,
    doc: &'d ExecutableDocument,
}

/// The fields of one response key, in the order of their first selection.
struct Key<'d> {
    key: &'d str,
    /// The field's name (`__typename` for the type's name).
    name: &'d str,
    /// The type the first selection of the key is made on, which declares the field.
    parent: &'d str,
    /// The sub-selections of every selection of the key, merged as GraphQL merges them.
    sets: Vec<&'d SelectionSet>,
}

impl<'d> Walk<'d> {
    /// `value`, of the named type `ty`, selected by `sets`: a list's items one by one, an
    /// object's entries.
    fn value(&self, value: &mut serde_json::Value, sets: &[&'d SelectionSet], ty: &'d str) {
        match value {
            // The items of a list of an object type share their keys: collected once.
            serde_json::Value::Array(items) if self.types.is_object(ty) => {
                let keys = self.collect(sets, ty, Some(ty));
                for item in items {
                    match item {
                        serde_json::Value::Object(map) => self.entries(map, &keys),
                        other => self.value(other, sets, ty),
                    }
                }
            }
            serde_json::Value::Array(items) => {
                for item in items {
                    self.value(item, sets, ty);
                }
            }
            serde_json::Value::Object(map) => self.object(map, sets, ty),
            _ => {}
        }
    }

    fn object(
        &self,
        map: &mut serde_json::Map<String, serde_json::Value>,
        sets: &[&'d SelectionSet],
        ty: &'d str,
    ) {
        // The object's own type: the declared one when that is an object type; for an
        // interface or a union, what its `__typename` says when the query asked for it, or else
        // the first type it stands for whose fields hold every entry of the object.
        let concrete = if self.types.is_object(ty) {
            Some(ty)
        } else {
            let typename = self
                .collect(sets, ty, None)
                .iter()
                .find(|k| k.name == "__typename")
                .and_then(|k| map.get(k.key)?.as_str())
                .and_then(|name| self.types.object_name(name));
            typename.or_else(|| {
                self.types.possible_types(ty).find(|&candidate| {
                    let keys = self.collect(sets, ty, Some(candidate));
                    map.keys().all(|k| keys.iter().any(|key| key.key == k))
                })
            })
        };
        let keys = self.collect(sets, ty, concrete);
        self.entries(map, &keys);
    }

    /// Puts `map`'s entries in the order of `keys`, the keys its selections collect, and walks
    /// each entry's value.
    fn entries(&self, map: &mut serde_json::Map<String, serde_json::Value>, keys: &[Key<'d>]) {
        let position = |key: &str| keys.iter().position(|k| k.key == key);
        let mut last = 0;
        let ordered = map.keys().all(|k| {
            let at = position(k).unwrap_or(usize::MAX);
            let fine = at >= last;
            last = at;
            fine
        });
        if !ordered {
            let mut entries: Vec<(String, serde_json::Value)> =
                std::mem::take(map).into_iter().collect();
            // Stable: entries the query does not select keep their order, after the others.
            entries.sort_by_key(|(k, _)| position(k).unwrap_or(usize::MAX));
            map.extend(entries);
        }
        for key in keys {
            if key.sets.is_empty() {
                continue;
            }
            let Some(value) = map.get_mut(key.key) else {
                continue;
            };
            let Some(field_ty) = self.types.field_type(key.parent, key.name) else {
                continue;
            };
            self.value(value, &key.sets, named(field_ty));
        }
    }

    /// `CollectFields`: the response keys `sets` select on an object of type `concrete` (of
    /// any type of `ty` when it is not known), fragments spread out.
    fn collect(
        &self,
        sets: &[&'d SelectionSet],
        ty: &'d str,
        concrete: Option<&str>,
    ) -> Vec<Key<'d>> {
        let applies = |condition: &str| match concrete {
            Some(object) => object == condition || self.types.is_possible(condition, object),
            None => true,
        };
        let mut keys: Vec<Key<'d>> = Vec::new();
        for set in sets {
            fields(self.doc, set, ty, &applies, &mut |f, parent| {
                let key = f.response_key().node.as_str();
                let at = match keys.iter().position(|k| k.key == key) {
                    Some(at) => at,
                    None => {
                        keys.push(Key {
                            key,
                            name: f.name.node.as_str(),
                            parent,
                            sets: Vec::new(),
                        });
                        keys.len() - 1
                    }
                };
                if !f.selection_set.node.items.is_empty() {
                    keys[at].sets.push(&f.selection_set.node);
                }
            });
        }
        keys
    }
}
