//! The client-side check of an NDF document against the service's model (reference §8.5,
//! `Validator.ts`), run on every file of an archive before anything is uploaded. Each problem
//! names the file, the element's index and the field.
//!
//! The rules are the original CLI's, with the server's wording of what a value may be, and
//! three deliberate differences (docs/compatibility.md, NDF): Json fields are accepted (as a
//! string holding a JSON object or array, or as the object or array itself), DateTimes in both
//! spellings the server takes (`2017-11-29T14:35:13.000Z`, `2017-11-29 14:35:13`, and the other
//! ISO-8601 forms it parses), and one side of a relation may leave out `fieldName` (the export
//! does so for one-field self relations). A required field with a default value may be left out:
//! the server fills in the default.

use std::fmt;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use svc_generator::model::{Field, FieldKind, Model, RelationEnd, ScalarType, TypeId};

/// One thing wrong with a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The entry's name in the archive (`nodes/000001.json`).
    pub file: String,
    /// The element's index in `values`, when the problem is an element's.
    pub index: Option<usize>,
    /// The field (or key) concerned, when there is one.
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(index) = self.index {
            write!(f, ", element {index}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ", field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Checks a whole document of the folder `file_type` (`nodes`, `lists` or `relations`). Returns
/// its number of elements (0 when it has no `values` list) and its problems.
pub fn document(model: &Model, file: &str, file_type: &str, doc: &Value) -> (u64, Vec<Problem>) {
    let mut problems = Problems::of(file);
    let Some(doc) = doc.as_object() else {
        problems.add(
            None,
            None,
            "an NDF document must be an object `{\"valueType\": …, \"values\": […]}`".to_owned(),
        );
        return (0, problems.list);
    };
    if let Some(message) = value_type_problem(doc.get("valueType"), file_type) {
        problems.add(None, Some("valueType"), message);
    }
    let values = match doc.get("values") {
        Some(Value::Array(values)) => values,
        Some(other) => {
            problems.add(
                None,
                Some("values"),
                format!("must be a list, not {}", short(other)),
            );
            return (0, problems.list);
        }
        None => {
            problems.add(None, Some("values"), "is missing".to_owned());
            return (0, problems.list);
        }
    };
    let checker = Checker { model };
    for (index, element) in values.iter().enumerate() {
        for (field, message) in checker.element(file_type, element) {
            problems.add(Some(index), field.as_deref(), message);
        }
    }
    (values.len() as u64, problems.list)
}

/// [`document`] of a document given as its text, reading one element at a time: no tree of the
/// whole document is built (for a 10 MB file, building, walking and freeing it was most of the
/// check's time). `each` sees every element after its check. A document that is no object with
/// a `values` list is read whole and checked by [`document`], for its messages.
pub fn document_text(
    model: &Model,
    file: &str,
    file_type: &str,
    body: &[u8],
    each: &mut dyn FnMut(&Value),
) -> Result<(u64, Vec<Problem>), serde_json::Error> {
    #[derive(serde::Deserialize)]
    struct Parts<'a> {
        #[serde(rename = "valueType")]
        value_type: Option<Value>,
        #[serde(borrow)]
        values: Option<&'a RawValue>,
    }
    let parts = serde_json::from_slice::<Parts<'_>>(body).ok();
    let values = parts
        .as_ref()
        .and_then(|p| p.values)
        .and_then(|raw| serde_json::from_str::<Vec<&RawValue>>(raw.get()).ok());
    let (Some(parts), Some(values)) = (parts, values) else {
        let doc: Value = serde_json::from_slice(body)?;
        let checked = document(model, file, file_type, &doc);
        for element in doc
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            each(element);
        }
        return Ok(checked);
    };
    let mut problems = Problems::of(file);
    if let Some(message) = value_type_problem(parts.value_type.as_ref(), file_type) {
        problems.add(None, Some("valueType"), message);
    }
    let checker = Checker { model };
    for (index, raw) in values.iter().enumerate() {
        let element: Value = serde_json::from_str(raw.get())?;
        for (field, message) in checker.element(file_type, &element) {
            problems.add(Some(index), field.as_deref(), message);
        }
        each(&element);
    }
    Ok((values.len() as u64, problems.list))
}

/// The problems of one file, as they are found.
struct Problems<'f> {
    file: &'f str,
    list: Vec<Problem>,
}

impl<'f> Problems<'f> {
    fn of(file: &'f str) -> Problems<'f> {
        Problems {
            file,
            list: Vec::new(),
        }
    }

    /// A problem: the element's index and the field, when there are any, and the message.
    fn add(&mut self, index: Option<usize>, field: Option<&str>, message: String) {
        self.list.push(Problem {
            file: self.file.to_owned(),
            index,
            field: field.map(str::to_owned),
            message,
        });
    }
}

/// What is wrong with a document's `valueType`, if anything.
fn value_type_problem(value_type: Option<&Value>, file_type: &str) -> Option<String> {
    match value_type {
        Some(Value::String(t)) if t == file_type => None,
        Some(Value::String(t)) => Some(format!(
            "is `{t}`, but the file is in the folder `{file_type}/`"
        )),
        Some(other) => Some(format!("must be \"{file_type}\", not {}", short(other))),
        None => Some(format!("is missing (it must be \"{file_type}\")")),
    }
}

/// Problems of one element: the field concerned (if any) and what is wrong.
type Found = Vec<(Option<String>, String)>;

struct Checker<'m> {
    model: &'m Model,
}

impl Checker<'_> {
    /// The problems of one element of a document of the folder `file_type`.
    fn element(&self, file_type: &str, element: &Value) -> Found {
        match file_type {
            "nodes" => self.node(element),
            "lists" => self.list(element),
            _ => self.relation(element),
        }
    }

    /// `_typeName` (a declared type, matched case-insensitively as the server does) and `id`.
    fn type_and_id(&self, element: &Map<String, Value>, found: &mut Found) -> Option<TypeId> {
        let ty = match element.get("_typeName") {
            Some(Value::String(name)) => {
                let ty = self.model.type_by_name(name).or_else(|| {
                    self.model
                        .type_ids()
                        .find(|(_, t)| t.name.eq_ignore_ascii_case(name))
                        .map(|(id, _)| id)
                });
                if ty.is_none() {
                    let names: Vec<&str> =
                        self.model.types.iter().map(|t| t.name.as_str()).collect();
                    found.push((
                        Some("_typeName".to_owned()),
                        format!(
                            "`{name}` is not a type of the model (its types: {})",
                            names.join(", ")
                        ),
                    ));
                }
                ty
            }
            Some(other) => {
                found.push((
                    Some("_typeName".to_owned()),
                    format!("must be a type's name, not {}", short(other)),
                ));
                None
            }
            None => {
                found.push((Some("_typeName".to_owned()), "is missing".to_owned()));
                None
            }
        };
        match element.get("id") {
            Some(Value::String(id)) if is_valid_id(id) => {}
            Some(Value::String(id)) => found.push((
                Some("id".to_owned()),
                format!("`{id}` is not a valid id (1 to 25 letters, digits, `-` or `_`)"),
            )),
            Some(other) => found.push((
                Some("id".to_owned()),
                format!("must be a string, not {}", short(other)),
            )),
            None => found.push((Some("id".to_owned()), "is missing".to_owned())),
        }
        ty
    }

    fn node(&self, element: &Value) -> Found {
        let mut found = Found::new();
        let Some(element) = element.as_object() else {
            found.push((None, "a node element must be an object".to_owned()));
            return found;
        };
        let Some(ty) = self.type_and_id(element, &mut found) else {
            return found;
        };
        let def = self.model.ty(ty);
        for (key, value) in element {
            if key == "_typeName" || key == "id" {
                continue;
            }
            let field = Some(key.clone());
            if key == "createdAt" || key == "updatedAt" {
                if let Err(message) = datetime(value) {
                    found.push((field, message));
                }
                continue;
            }
            let Some(f) = def.field(key) else {
                found.push((field, format!("`{}` has no such field", def.name)));
                continue;
            };
            if f.is_relation() {
                found.push((
                    field,
                    "is a relation: relations are imported in `relations/` documents".to_owned(),
                ));
            } else if f.list {
                found.push((
                    field,
                    "is a list: lists are imported in `lists/` documents".to_owned(),
                ));
            } else if value.is_null() {
                if f.required {
                    found.push((field, "is required and cannot be null".to_owned()));
                }
            } else if let Err(message) = self.value(f, value) {
                found.push((field, message));
            }
        }
        for f in &def.fields {
            if f.required
                && !f.list
                && !f.is_relation()
                && !f.is_system()
                && f.default.is_none()
                && !element.contains_key(&f.name)
            {
                found.push((
                    Some(f.name.clone()),
                    format!("is required (`{}!`) and missing", type_name(self.model, f)),
                ));
            }
        }
        found
    }

    fn list(&self, element: &Value) -> Found {
        let mut found = Found::new();
        let Some(element) = element.as_object() else {
            found.push((None, "a list element must be an object".to_owned()));
            return found;
        };
        let Some(ty) = self.type_and_id(element, &mut found) else {
            return found;
        };
        let def = self.model.ty(ty);
        let keys: Vec<(&String, &Value)> = element
            .iter()
            .filter(|(k, _)| *k != "_typeName" && *k != "id")
            .collect();
        if keys.is_empty() {
            found.push((None, "a list element must give one list field".to_owned()));
        }
        for (i, (key, value)) in keys.iter().enumerate() {
            let field = Some((*key).clone());
            if i > 0 {
                found.push((
                    field,
                    "a list element gives exactly one list field (write one element per field)"
                        .to_owned(),
                ));
                continue;
            }
            let Some(f) = def.field(key).filter(|f| f.list && !f.is_relation()) else {
                let lists: Vec<&str> = def
                    .fields
                    .iter()
                    .filter(|f| f.list && !f.is_relation())
                    .map(|f| f.name.as_str())
                    .collect();
                found.push((
                    field,
                    format!(
                        "`{}` has no such list field (its list fields: {})",
                        def.name,
                        if lists.is_empty() {
                            "none".to_owned()
                        } else {
                            lists.join(", ")
                        }
                    ),
                ));
                continue;
            };
            let Some(items) = value.as_array() else {
                found.push((
                    field,
                    format!("must be a list of values, not {}", short(value)),
                ));
                continue;
            };
            for (n, item) in items.iter().enumerate() {
                let message = if item.is_null() {
                    Err("cannot hold null".to_owned())
                } else {
                    self.value(f, item)
                };
                if let Err(message) = message {
                    found.push((field.clone(), format!("item {n}: {message}")));
                }
            }
        }
        found
    }

    fn relation(&self, element: &Value) -> Found {
        let mut found = Found::new();
        let Some(sides) = element.as_array().filter(|s| s.len() == 2) else {
            found.push((
                None,
                "a relation element must be a list of two nodes `[{\"_typeName\", \"id\", \"fieldName\"}, {…}]`"
                    .to_owned(),
            ));
            return found;
        };
        // Per side: its type and its relation field (index), when named and known.
        let mut parsed: Vec<(Option<TypeId>, Option<usize>, bool)> = Vec::new();
        for (s, side) in sides.iter().enumerate() {
            let Some(side) = side.as_object() else {
                found.push((None, format!("side {s} must be an object")));
                parsed.push((None, None, false));
                continue;
            };
            let mut side_found = Found::new();
            let ty = self.type_and_id(side, &mut side_found);
            for (field, message) in side_found {
                found.push((field.map(|f| format!("{s}.{f}")), message));
            }
            let named = match side.get("fieldName") {
                None | Some(Value::Null) => (None, false),
                Some(Value::String(name)) => match ty.map(|ty| self.model.ty(ty)) {
                    Some(def) => match def
                        .fields
                        .iter()
                        .position(|f| f.name == *name && f.is_relation())
                    {
                        Some(i) => (Some(i), true),
                        None => {
                            found.push((
                                Some(format!("{s}.fieldName")),
                                format!("`{}` has no relation field `{name}`", def.name),
                            ));
                            (None, true)
                        }
                    },
                    None => (None, true),
                },
                Some(other) => {
                    found.push((
                        Some(format!("{s}.fieldName")),
                        format!("must be a field's name, not {}", short(other)),
                    ));
                    (None, true)
                }
            };
            parsed.push((ty, named.0, named.1));
        }
        if !parsed.iter().any(|(_, _, named)| *named) {
            found.push((
                Some("fieldName".to_owned()),
                "at least one side of a relation element needs its `fieldName`".to_owned(),
            ));
            return found;
        }
        // Each named field relates the two types, and two named fields are the two sides of
        // one relation.
        for (s, other) in [(0, 1), (1, 0)] {
            let (Some(ty), Some(field), _) = parsed[s] else {
                continue;
            };
            let def = self.model.ty(ty);
            let f = &def.fields[field];
            let FieldKind::Relation { relation, target } = f.kind else {
                continue;
            };
            let rel = self.model.relation(relation);
            let here = RelationEnd { ty, field };
            let back = if rel.a == here { rel.b } else { rel.a };
            if let (Some(other_ty), _, _) = parsed[other]
                && other_ty != target
            {
                found.push((
                    Some(format!("{s}.fieldName")),
                    format!(
                        "`{}.{}` relates to {}, not {}",
                        def.name,
                        f.name,
                        self.model.ty(target).name,
                        self.model.ty(other_ty).name
                    ),
                ));
                continue;
            }
            // The pair is checked once, from side 0.
            if let (Some(other_ty), Some(other_field), _) = parsed[other]
                && s == 0
                && (back.ty, back.field) != (other_ty, other_field)
            {
                let other_def = self.model.ty(other_ty);
                found.push((
                    Some(format!("{other}.fieldName")),
                    format!(
                        "`{}.{}` and `{}.{}` are not the two sides of one relation",
                        def.name, f.name, other_def.name, other_def.fields[other_field].name
                    ),
                ));
            }
        }
        found
    }

    /// One value of `field` (an item, for a list field).
    fn value(&self, field: &Field, value: &Value) -> Result<(), String> {
        let expected = |what: &str| Err(format!("expects {what}, not {}", short(value)));
        match field.kind {
            FieldKind::Scalar(ScalarType::Id | ScalarType::String) => match value {
                Value::String(_) => Ok(()),
                _ => expected("a string"),
            },
            FieldKind::Scalar(ScalarType::Int) => match value.as_i64() {
                Some(n) if i32::try_from(n).is_ok() => Ok(()),
                _ => expected("a 32-bit integer"),
            },
            FieldKind::Scalar(ScalarType::Float) => match value {
                Value::Number(_) => Ok(()),
                _ => expected("a number"),
            },
            FieldKind::Scalar(ScalarType::Boolean) => match value {
                Value::Bool(_) => Ok(()),
                _ => expected("true or false"),
            },
            FieldKind::Scalar(ScalarType::DateTime) => datetime(value),
            FieldKind::Scalar(ScalarType::Json) => match value {
                Value::Object(_) | Value::Array(_) => Ok(()),
                Value::String(text) => match serde_json::from_str::<Value>(text) {
                    Ok(Value::Object(_) | Value::Array(_)) => Ok(()),
                    _ => expected("a JSON object or array (or a string holding one)"),
                },
                _ => expected("a JSON object or array (or a string holding one)"),
            },
            FieldKind::Enum(id) => {
                let def = self.model.enum_def(id);
                match value {
                    Value::String(s) if def.values.contains(s) => Ok(()),
                    _ => expected(&format!(
                        "a value of {} ({})",
                        def.name,
                        def.values.join(", ")
                    )),
                }
            }
            FieldKind::Relation { .. } => Err("is a relation".to_owned()),
        }
    }
}

/// The SDL type of a field, without `!`: `String`, `Role`, `[Int!]`.
fn type_name(model: &Model, field: &Field) -> String {
    let name = match field.kind {
        FieldKind::Scalar(s) => s.name().to_owned(),
        FieldKind::Enum(id) => model.enum_def(id).name.clone(),
        FieldKind::Relation { target, .. } => model.ty(target).name.clone(),
    };
    if field.list {
        format!("[{name}!]")
    } else {
        name
    }
}

/// A value as a message shows it (long ones cut).
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// An id the server takes: 1 to 25 of `[A-Za-z0-9_-]`.
fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 25
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn datetime(value: &Value) -> Result<(), String> {
    match value {
        Value::String(s) if is_datetime(s) => Ok(()),
        _ => Err(format!(
            "expects a date-time (`2017-11-29T14:35:13.000Z` or `2017-11-29 14:35:13`), not {}",
            short(value)
        )),
    }
}

/// Whether the server reads `text` as a DateTime: `YYYY[-MM[-DD]]`, then optionally `T`, `t` or
/// a space and `HH[:MM[:SS[.fraction]]]` with an optional `Z` or `±HH[:MM]` offset.
pub fn is_datetime(text: &str) -> bool {
    let text = text.trim();
    let (date, time) = match text.find(['T', 't', ' ']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let mut parts = date.split('-');
    let Some(year) = parts.next().and_then(|p| digits(p, 4)) else {
        return false;
    };
    let month = match parts.next() {
        Some(p) => match digits(p, 2) {
            Some(m) => m,
            None => return false,
        },
        None => 1,
    };
    let day = match parts.next() {
        Some(p) => match digits(p, 2) {
            Some(d) => d,
            None => return false,
        },
        None => 1,
    };
    if parts.next().is_some() || !(1..=12).contains(&month) || day < 1 {
        return false;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day > days {
        return false;
    }
    let Some(time) = time else {
        return true;
    };
    let clock = if let Some(c) = time.strip_suffix(['Z', 'z']) {
        c
    } else if let Some(i) = time.rfind(['+', '-']) {
        let (c, offset) = time.split_at(i);
        let offset: String = offset[1..].chars().filter(|c| *c != ':').collect();
        let valid = match offset.len() {
            2 => digits(&offset, 2).is_some(),
            4 => digits(&offset[..2], 2).is_some() && digits(&offset[2..], 2).is_some(),
            _ => false,
        };
        if !valid {
            return false;
        }
        c
    } else {
        time
    };
    let (hms, fraction) = match clock.split_once(['.', ',']) {
        Some((hms, f)) => (hms, Some(f)),
        None => (clock, None),
    };
    let mut hms = hms.split(':');
    let hour = hms.next().and_then(|p| digits(p, 2));
    let minute = hms.next().map_or(Some(0), |p| digits(p, 2));
    let second = hms.next().map_or(Some(0), |p| digits(p, 2));
    if hms.next().is_some() {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) = (hour, minute, second) else {
        return false;
    };
    if hour > 23 || minute > 59 || second > 59 {
        return false;
    }
    match fraction {
        Some(f) => !f.is_empty() && f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()),
        None => true,
    }
}

fn digits(text: &str, len: usize) -> Option<u32> {
    if text.len() == len && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use svc_generator::source::Sources;

    const TYPES: &str = r#"
enum Mood { HAPPY SAD }
type User @model {
  id: ID! @isUnique
  createdAt: DateTime!
  firstName: String!
  lastName: String
  age: Int
  score: Float
  active: Boolean! @defaultValue(value: "true")
  born: DateTime
  mood: Mood
  settings: Json
  hobbies: [String!]
  lucky: [Int!]
  partner: User @relation(name: "Partners")
  posts: [Post!]! @relation(name: "UserPosts")
  friends: [User!]! @relation(name: "Friends")
}
type Post @model {
  id: ID! @isUnique
  title: String!
  author: User @relation(name: "UserPosts")
}
"#;

    fn model() -> Model {
        let mut sources = Sources::new();
        let config = sources.add("svc.yml", "types: ./types.graphql\n".to_owned());
        let types = sources.add("types.graphql", TYPES.to_owned());
        svc_generator::frontend::check(&sources, config, &[types])
            .expect("a valid model")
            .into_inner()
    }

    fn problems(file_type: &str, values: Value) -> Vec<String> {
        let doc = json!({ "valueType": file_type, "values": values });
        let file = format!("{file_type}/000001.json");
        let tree = document(&model(), &file, file_type, &doc);
        // Read one element at a time from the text, the check finds the same.
        let mut seen = Vec::new();
        let text = doc.to_string();
        let each = &mut |element: &Value| seen.push(element.clone());
        let read = document_text(&model(), &file, file_type, text.as_bytes(), each);
        assert_eq!(read.expect("a JSON document"), tree);
        assert_eq!(Some(&seen), doc["values"].as_array().or(Some(&Vec::new())));
        tree.1.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_references_examples_pass() {
        assert_eq!(
            problems(
                "nodes",
                json!([
                    {"_typeName": "User", "id": "johndoe", "firstName": "John", "lastName": "Doe",
                     "createdAt": "2017-11-29T14:35:13.000Z"},
                    {"_typeName": "user", "id": "sarahdoe", "firstName": "Sarah", "age": 4,
                     "active": false, "born": "1015-11-29 14:35:13", "score": 13.333,
                     "mood": "SAD", "settings": "{\"a\":2}"},
                    {"_typeName": "User", "id": "x_1-2", "firstName": "X", "settings": {"a": [1]},
                     "lastName": null, "updatedAt": "2017-11-29T14:35:13+02:00"}
                ])
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            problems(
                "lists",
                json!([
                    {"_typeName": "User", "id": "johndoe", "hobbies": ["Fishing", "Cooking"]},
                    {"_typeName": "User", "id": "johndoe", "hobbies": ["Biking"]},
                    {"_typeName": "User", "id": "johndoe", "lucky": [7, 13]}
                ])
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            problems(
                "relations",
                json!([
                    [{"_typeName": "User", "id": "johndoe", "fieldName": "partner"},
                     {"_typeName": "User", "id": "sarahdoe", "fieldName": "partner"}],
                    [{"_typeName": "Post", "id": "p1", "fieldName": "author"},
                     {"_typeName": "User", "id": "johndoe", "fieldName": "posts"}],
                    [{"_typeName": "User", "id": "johndoe", "fieldName": "friends"},
                     {"_typeName": "User", "id": "sarahdoe", "fieldName": null}],
                    [{"_typeName": "Post", "id": "p1"},
                     {"_typeName": "User", "id": "johndoe", "fieldName": "posts"}]
                ])
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn node_problems_name_file_element_and_field() {
        assert_eq!(
            problems(
                "nodes",
                json!([
                    {"_typeName": "User", "id": "a", "firstName": 5},
                    {"_typeName": "Usr", "id": "b"},
                    {"_typeName": "User", "id": "not valid!", "firstName": "C", "age": 1.5,
                     "nope": 1, "hobbies": ["x"], "posts": [], "mood": "ANGRY",
                     "born": "2017-13-01", "settings": "[1", "active": null},
                    {"_typeName": "User", "id": "d", "lastName": "D", "age": 3000000000_u64,
                     "createdAt": "yesterday"},
                    "text"
                ])
            ),
            vec![
                "nodes/000001.json, element 0, field `firstName`: expects a string, not 5",
                "nodes/000001.json, element 1, field `_typeName`: `Usr` is not a type of the model (its types: User, Post, File)",
                "nodes/000001.json, element 2, field `id`: `not valid!` is not a valid id (1 to 25 letters, digits, `-` or `_`)",
                "nodes/000001.json, element 2, field `age`: expects a 32-bit integer, not 1.5",
                "nodes/000001.json, element 2, field `nope`: `User` has no such field",
                "nodes/000001.json, element 2, field `hobbies`: is a list: lists are imported in `lists/` documents",
                "nodes/000001.json, element 2, field `posts`: is a relation: relations are imported in `relations/` documents",
                "nodes/000001.json, element 2, field `mood`: expects a value of Mood (HAPPY, SAD), not \"ANGRY\"",
                "nodes/000001.json, element 2, field `born`: expects a date-time (`2017-11-29T14:35:13.000Z` or `2017-11-29 14:35:13`), not \"2017-13-01\"",
                "nodes/000001.json, element 2, field `settings`: expects a JSON object or array (or a string holding one), not \"[1\"",
                "nodes/000001.json, element 2, field `active`: is required and cannot be null",
                "nodes/000001.json, element 3, field `age`: expects a 32-bit integer, not 3000000000",
                "nodes/000001.json, element 3, field `createdAt`: expects a date-time (`2017-11-29T14:35:13.000Z` or `2017-11-29 14:35:13`), not \"yesterday\"",
                "nodes/000001.json, element 3, field `firstName`: is required (`String!`) and missing",
                "nodes/000001.json, element 4: a node element must be an object",
            ]
        );
    }

    #[test]
    fn list_and_relation_problems() {
        assert_eq!(
            problems(
                "lists",
                json!([
                    {"_typeName": "User", "id": "a", "hobbies": ["x", 2, null]},
                    {"_typeName": "User", "id": "a", "firstName": ["x"]},
                    {"_typeName": "User", "id": "a", "hobbies": [], "lucky": []},
                    {"_typeName": "User", "id": "a"},
                    {"_typeName": "Post", "id": "a", "tags": "x"}
                ])
            ),
            vec![
                "lists/000001.json, element 0, field `hobbies`: item 1: expects a string, not 2",
                "lists/000001.json, element 0, field `hobbies`: item 2: cannot hold null",
                "lists/000001.json, element 1, field `firstName`: `User` has no such list field (its list fields: hobbies, lucky)",
                "lists/000001.json, element 2, field `lucky`: a list element gives exactly one list field (write one element per field)",
                "lists/000001.json, element 3: a list element must give one list field",
                "lists/000001.json, element 4, field `tags`: `Post` has no such list field (its list fields: none)",
            ]
        );
        assert_eq!(
            problems(
                "relations",
                json!([
                    [{"_typeName": "User", "id": "a", "fieldName": "partner"}],
                    [{"_typeName": "User", "id": "a"}, {"_typeName": "User", "id": "b"}],
                    [{"_typeName": "User", "id": "a", "fieldName": "lovers"},
                     {"_typeName": "User", "id": "b", "fieldName": "partner"}],
                    [{"_typeName": "User", "id": "a", "fieldName": "posts"},
                     {"_typeName": "User", "id": "b"}],
                    [{"_typeName": "User", "id": "a", "fieldName": "partner"},
                     {"_typeName": "User", "id": "b", "fieldName": "friends"}],
                    [{"_typeName": "Post", "id": "a", "fieldName": "author"},
                     {"_typeName": "User", "fieldName": 3}]
                ])
            ),
            vec![
                "relations/000001.json, element 0: a relation element must be a list of two nodes `[{\"_typeName\", \"id\", \"fieldName\"}, {…}]`",
                "relations/000001.json, element 1, field `fieldName`: at least one side of a relation element needs its `fieldName`",
                "relations/000001.json, element 2, field `0.fieldName`: `User` has no relation field `lovers`",
                "relations/000001.json, element 3, field `0.fieldName`: `User.posts` relates to Post, not User",
                "relations/000001.json, element 4, field `1.fieldName`: `User.partner` and `User.friends` are not the two sides of one relation",
                "relations/000001.json, element 5, field `1.id`: is missing",
                "relations/000001.json, element 5, field `1.fieldName`: must be a field's name, not 3",
            ]
        );
    }

    #[test]
    fn documents_name_their_type() {
        let doc = json!({ "valueType": "lists", "values": [] });
        let (n, found) = document(&model(), "nodes/2.json", "nodes", &doc);
        assert_eq!(n, 0);
        assert_eq!(
            found.iter().map(ToString::to_string).collect::<Vec<_>>(),
            vec![
                "nodes/2.json, field `valueType`: is `lists`, but the file is in the folder `nodes/`"
            ]
        );
        let (_, found) = document(
            &model(),
            "nodes/2.json",
            "nodes",
            &json!({"valueType": "nodes"}),
        );
        assert_eq!(
            found[0].to_string(),
            "nodes/2.json, field `values`: is missing"
        );
        // Read from their texts, documents that are no object with a list of values are read
        // whole, with the same messages.
        for text in [
            r#"{"valueType": "nodes"}"#,
            r#"{"valueType": "nodes", "values": 3}"#,
            r#"[1, 2]"#,
            r#""nodes""#,
        ] {
            let doc: Value = serde_json::from_str(text).unwrap();
            let tree = document(&model(), "nodes/2.json", "nodes", &doc);
            let read = document_text(
                &model(),
                "nodes/2.json",
                "nodes",
                text.as_bytes(),
                &mut |_| {},
            );
            assert_eq!(read.unwrap(), tree, "{text}");
            assert!(!tree.1.is_empty(), "{text}");
        }
        let broken = document_text(
            &model(),
            "nodes/2.json",
            "nodes",
            b"{\"values\": [",
            &mut |_| {},
        );
        assert!(broken.is_err());
    }

    #[test]
    fn datetimes_as_the_server_reads_them() {
        for ok in [
            "2017-11-29T14:35:13.000Z",
            "2017-11-29 14:35:13",
            "1015-11-29 14:35:13",
            "2017-11-29",
            "2017-11-29T14:35",
            "2017-11-29T14:35:13.123456789+02:00",
            "2016-02-29T00:00:00Z",
            "2017-11-29T14:35:13-0500",
        ] {
            assert!(is_datetime(ok), "{ok}");
        }
        for bad in [
            "",
            "yesterday",
            "2017-02-29",
            "2017-11-31",
            "2017-11-29T24:00:00Z",
            "2017-11-29T14:35:13.Z",
            "2017-11-29T14:35:13+2",
            "17-11-29",
        ] {
            assert!(!is_datetime(bad), "{bad}");
        }
    }
}
