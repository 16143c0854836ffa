//! Filter and order arguments of the example service's list queries, generated from fuzz bytes
//! with the model's own field names, operators and values close to the seeded data (so that
//! filters select something), with odd keys and values of the wrong type mixed in; and the data
//! set the `filter` target seeds its database with.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Value, json};
use svc_names::{BOOLEAN_FILTERS, ENUM_FILTERS, ORDERED_FILTERS, TEXT_FILTERS};

/// The kind of a filterable scalar field.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Id,
    Text,
    Int,
    Float,
    Bool,
    DateTime,
    Enum(&'static [&'static str]),
}

/// A model of the example service as its filters see it.
#[derive(Debug)]
pub struct Model {
    pub name: &'static str,
    /// `all<plural>`.
    pub plural: &'static str,
    pub fields: &'static [(&'static str, Kind)],
    /// `(field, to-many, model)`.
    pub relations: &'static [(&'static str, bool, &'static str)],
}

const ROLES: &[&str] = &["ADMIN", "EDITOR", "READER"];
const STATUSES: &[&str] = &["DRAFT", "PUBLISHED", "ARCHIVED"];

pub const MODELS: &[Model] = &[
    Model {
        name: "Post",
        plural: "Posts",
        fields: &[
            ("id", Kind::Id),
            ("createdAt", Kind::DateTime),
            ("slug", Kind::Text),
            ("title", Kind::Text),
            ("body", Kind::Text),
            ("votes", Kind::Int),
            ("rating", Kind::Float),
            ("published", Kind::Bool),
            ("status", Kind::Enum(STATUSES)),
            ("publishedAt", Kind::DateTime),
            ("externalId", Kind::Id),
        ],
        relations: &[
            ("author", false, "User"),
            ("categories", true, "Category"),
            ("comments", true, "Comment"),
            ("pinnedIn", false, "Category"),
        ],
    },
    Model {
        name: "User",
        plural: "Users",
        fields: &[
            ("id", Kind::Id),
            ("createdAt", Kind::DateTime),
            ("updatedAt", Kind::DateTime),
            ("email", Kind::Text),
            ("name", Kind::Text),
            ("role", Kind::Enum(ROLES)),
            ("age", Kind::Int),
            ("verified", Kind::Bool),
        ],
        relations: &[
            ("posts", true, "Post"),
            ("profile", false, "Profile"),
            ("followers", true, "User"),
            ("following", true, "User"),
            ("friends", true, "User"),
        ],
    },
    Model {
        name: "Category",
        plural: "Categories",
        fields: &[
            ("id", Kind::Id),
            ("name", Kind::Text),
            ("position", Kind::Int),
            ("color", Kind::Text),
        ],
        relations: &[("posts", true, "Post"), ("pinnedPost", false, "Post")],
    },
    Model {
        name: "Comment",
        plural: "Comments",
        fields: &[("id", Kind::Id), ("text", Kind::Text)],
        relations: &[
            ("post", false, "Post"),
            ("parent", false, "Comment"),
            ("replies", true, "Comment"),
        ],
    },
    Model {
        name: "Profile",
        plural: "Profiles",
        fields: &[("id", Kind::Id), ("bio", Kind::Text)],
        relations: &[("user", false, "User")],
    },
];

pub fn model(name: &str) -> Option<&'static Model> {
    MODELS.iter().find(|m| m.name == name)
}

/// Text close to the seeded data, and text that SQL treats specially.
const TEXTS: &[&str] = &[
    "",
    "a",
    "A",
    "alpha",
    "Alpha",
    "ALPHA",
    "beta",
    "post-1",
    "post-10",
    "Post-1",
    "hello world",
    "u1",
    "p1",
    "p12",
    "c1",
    "ann@example.org",
    "ANN@EXAMPLE.ORG",
    "Ann",
    "bob",
    "%",
    "_",
    "\\",
    "%_",
    "a%",
    "_a",
    "'",
    "\"",
    "'; DROP TABLE \"Post\"; --",
    "é",
    "É",
    "Ünïcode",
    "ß",
    "SS",
    "\u{0}",
    "\u{ffff}",
    "🦀",
    "x\ny",
    "  ",
    "grey",
    "GREY",
    "red",
];

const DATETIMES: &[&str] = &[
    "2020-01-01T00:00:00.000Z",
    "2020-01-01",
    "2021-06-15T12:30:00.000Z",
    "2017-11-29T14:35:13.000Z",
    "2017-11-29 14:35:13",
    "1970-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999Z",
    "0000-01-01T00:00:00Z",
    "2020-02-30T00:00:00Z",
    "2020-01-01T00:00:00+14:00",
    "2020-01-01T00:00:00.123456789Z",
    "yesterday",
    "",
];

fn pick<T: Copy>(u: &mut Unstructured, items: &[T]) -> Result<T> {
    Ok(*u.choose(items)?)
}

fn text(u: &mut Unstructured) -> Result<String> {
    if u.ratio(1, 4)? {
        return u.arbitrary::<String>();
    }
    Ok(pick(u, TEXTS)?.to_owned())
}

fn int(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=5)? {
        0 => json!(u.arbitrary::<i32>()?),
        1 => json!(pick(
            u,
            &[
                i64::from(i32::MIN),
                i64::from(i32::MAX),
                i64::from(i32::MAX) + 1,
                i64::MIN,
                -1,
                0
            ]
        )?),
        _ => json!(u.int_in_range(-3i32..=20)?),
    })
}

fn float(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=4)? {
        0 => {
            let f = u.arbitrary::<f64>()?;
            if f.is_finite() { json!(f) } else { json!(0.5) }
        }
        1 => json!(pick(u, &[1e308, -1e308, 5e-324, -0.0, 2.5, 1e15])?),
        _ => json!(f64::from(u.int_in_range(-4i32..=20)?) / 2.0),
    })
}

/// One value of `kind`; sometimes null, sometimes of the wrong type.
fn scalar(u: &mut Unstructured, kind: Kind) -> Result<Value> {
    if u.ratio(1, 16)? {
        return Ok(Value::Null);
    }
    if u.ratio(1, 24)? {
        return any_json(u, 2);
    }
    Ok(match kind {
        Kind::Id => json!(match u.int_in_range(0..=3)? {
            0 => text(u)?,
            _ => format!(
                "{}{}",
                pick(u, &["u", "p", "c", "m", "f", "x"])?,
                u.int_in_range(0u32..=15)?
            ),
        }),
        Kind::Text => json!(text(u)?),
        Kind::Int => int(u)?,
        Kind::Float => float(u)?,
        Kind::Bool => json!(u.arbitrary::<bool>()?),
        Kind::DateTime => json!(pick(u, DATETIMES)?),
        Kind::Enum(values) => match u.int_in_range(0..=7)? {
            0 => json!(text(u)?),
            _ => json!(pick(u, values)?),
        },
    })
}

/// Any JSON value, `depth` levels deep at most.
pub fn any_json(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let top = if depth == 0 { 4 } else { 6 };
    Ok(match u.int_in_range(0..=top)? {
        0 => Value::Null,
        1 => json!(u.arbitrary::<bool>()?),
        2 => int(u)?,
        3 => float(u)?,
        4 => json!(text(u)?),
        5 => {
            let n = u.int_in_range(0..=3)?;
            Value::Array(
                (0..n)
                    .map(|_| any_json(u, depth - 1))
                    .collect::<Result<_>>()?,
            )
        }
        _ => {
            let mut map = Map::new();
            for _ in 0..u.int_in_range(0..=3)? {
                map.insert(text(u)?, any_json(u, depth - 1)?);
            }
            Value::Object(map)
        }
    })
}

/// A `<Model>Filter` value, nesting at most `depth` levels.
pub fn filter(u: &mut Unstructured, model: &Model, depth: u32) -> Result<Value> {
    let mut map = Map::new();
    let keys = u.int_in_range(0..=3)?;
    for _ in 0..keys {
        let choice = u.int_in_range(0..=19)?;
        match choice {
            0 | 1 if depth > 0 => {
                let key = if choice == 0 { "AND" } else { "OR" };
                let value = match u.int_in_range(0..=5)? {
                    0 => filter(u, model, depth - 1)?,
                    1 => Value::Null,
                    _ => {
                        let n = u.int_in_range(0..=3)?;
                        Value::Array(
                            (0..n)
                                .map(|_| filter(u, model, depth - 1))
                                .collect::<Result<_>>()?,
                        )
                    }
                };
                map.insert(key.to_owned(), value);
            }
            2..=4 if depth > 0 && !model.relations.is_empty() => {
                let (name, list, target) = pick(u, model.relations)?;
                let target = self::model(target).unwrap_or(model);
                let key = if list {
                    format!("{name}{}", pick(u, &["_some", "_every", "_none"])?)
                } else {
                    name.to_owned()
                };
                let value = if u.ratio(1, 8)? {
                    Value::Null
                } else {
                    filter(u, target, depth - 1)?
                };
                map.insert(key, value);
            }
            5 => {
                // A key the filter does not have, or an operator of the wrong kind.
                let key = match u.int_in_range(0..=2)? {
                    0 => u.arbitrary::<String>()?,
                    1 => format!("{}{}", pick(u, model.fields)?.0, pick(u, TEXT_FILTERS)?),
                    _ => format!(
                        "{}_{}",
                        pick(
                            u,
                            model
                                .relations
                                .iter()
                                .map(|r| r.0)
                                .collect::<Vec<_>>()
                                .as_slice()
                        )
                        .unwrap_or("id"),
                        text(u)?
                    ),
                };
                map.insert(key, any_json(u, 2)?);
            }
            _ => {
                let (name, kind) = pick(u, model.fields)?;
                let suffixes = match kind {
                    Kind::Id | Kind::Text => TEXT_FILTERS,
                    Kind::Int | Kind::Float | Kind::DateTime => ORDERED_FILTERS,
                    Kind::Enum(_) => ENUM_FILTERS,
                    Kind::Bool => BOOLEAN_FILTERS,
                };
                let suffix = pick(u, suffixes)?;
                let value = if suffix.ends_with("_in") && !u.ratio(1, 16)? {
                    let n = u.int_in_range(0..=4)?;
                    Value::Array((0..n).map(|_| scalar(u, kind)).collect::<Result<_>>()?)
                } else {
                    scalar(u, kind)?
                };
                map.insert(format!("{name}{suffix}"), value);
            }
        }
    }
    Ok(Value::Object(map))
}

/// A `<Model>OrderBy` value (or something that is not one).
pub fn order_by(u: &mut Unstructured, model: &Model) -> Result<Value> {
    Ok(match u.int_in_range(0..=9)? {
        0 => Value::Null,
        1 => json!(text(u)?),
        _ => {
            let (name, _) = pick(u, model.fields)?;
            json!(format!("{name}_{}", pick(u, &["ASC", "DESC"])?))
        }
    })
}

/// What one run of the `filter` target asks: the model, two filters (`filter` and `other`),
/// an order, a page, and whether it asks as an admin or anonymously.
#[derive(Debug, Clone)]
pub struct Spec {
    pub model: &'static Model,
    pub filter: Value,
    pub other: Value,
    pub order_by: Value,
    pub first: Value,
    pub skip: Value,
    pub anonymous: bool,
}

impl Spec {
    /// A spec written as JSON (`{"model", "filter", "other", "orderBy", "first", "skip",
    /// "anonymous"}`, the seed corpus's form), or one generated from the bytes.
    pub fn from_bytes(data: &[u8]) -> Option<Spec> {
        if let Ok(Value::Object(spec)) = serde_json::from_slice::<Value>(data) {
            let model = model(spec.get("model")?.as_str()?)?;
            let get = |k: &str| spec.get(k).cloned().unwrap_or(Value::Null);
            return Some(Spec {
                model,
                filter: spec.get("filter").cloned().unwrap_or_else(|| json!({})),
                other: spec.get("other").cloned().unwrap_or_else(|| json!({})),
                order_by: get("orderBy"),
                first: get("first"),
                skip: get("skip"),
                anonymous: spec
                    .get("anonymous")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            });
        }
        let mut u = Unstructured::new(data);
        Spec::arbitrary(&mut u).ok()
    }

    fn arbitrary(u: &mut Unstructured) -> Result<Spec> {
        let model = u.choose(MODELS)?;
        let page = |u: &mut Unstructured| -> Result<Value> {
            Ok(match u.int_in_range(0..=5)? {
                0 | 1 => Value::Null,
                2 => int(u)?,
                _ => json!(u.int_in_range(0u32..=16)?),
            })
        };
        Ok(Spec {
            model,
            filter: filter(u, model, 3)?,
            other: filter(u, model, 2)?,
            order_by: order_by(u, model)?,
            first: page(u)?,
            skip: page(u)?,
            anonymous: u.ratio(1, 5)?,
        })
    }
}

/// The data the `filter` target's database holds: users, posts, categories, comments and
/// profiles with edges of every relation, values that tie, differ only in case, are null, or
/// hold SQL's wildcard characters.
pub fn seed_documents() -> Vec<Value> {
    let users = [
        (
            "u1",
            "ann@example.org",
            "Ann",
            "ADMIN",
            Some(34),
            true,
            "2020-01-01T00:00:00.000Z",
        ),
        (
            "u2",
            "bob@example.org",
            "bob",
            "EDITOR",
            Some(27),
            false,
            "2020-01-02T00:00:00.000Z",
        ),
        (
            "u3",
            "BOB2@example.org",
            "Bob",
            "READER",
            None,
            false,
            "2020-01-03T00:00:00.000Z",
        ),
        (
            "u4",
            "carl%@example.org",
            "ca_rl",
            "READER",
            Some(0),
            true,
            "2021-06-15T12:30:00.000Z",
        ),
        (
            "u5",
            "dee@example.org",
            "Dée",
            "EDITOR",
            Some(-1),
            false,
            "2021-06-15T12:30:00.000Z",
        ),
        (
            "u6",
            "eve\\@example.org",
            "",
            "READER",
            Some(i32::MAX as i64),
            true,
            "2017-11-29T14:35:13.000Z",
        ),
    ];
    let mut nodes: Vec<Value> = users
        .iter()
        .map(|(id, email, name, role, age, verified, created)| {
            let mut n = json!({"_typeName": "User", "id": id, "email": email, "name": name,
                "role": role, "verified": verified, "createdAt": created, "updatedAt": created});
            if let Some(age) = age {
                n["age"] = json!(age);
            }
            n
        })
        .collect();
    let titles = [
        "Alpha",
        "alpha",
        "ALPHA beta",
        "beta",
        "hello world",
        "100%",
        "under_score",
        "back\\slash",
        "Ünïcode",
        "ß",
        "",
        "p1",
        "zzz",
        "Alpha",
    ];
    let statuses = ["DRAFT", "PUBLISHED", "ARCHIVED"];
    for (i, title) in titles.iter().enumerate() {
        let n = i + 1;
        let mut post = json!({
            "_typeName": "Post", "id": format!("p{n}"), "slug": format!("post-{n}"), "title": title,
            "votes": (n as i64 * 7) % 5 - 1, "status": statuses[n % 3],
            "createdAt": format!("2020-01-{:02}T00:00:00.000Z", (n % 4) + 1),
            "updatedAt": "2020-02-01T00:00:00.000Z",
        });
        if n % 3 != 0 {
            post["body"] = json!(format!("body of {title}"));
        }
        if n % 4 != 0 {
            post["rating"] = json!(n as f64 / 4.0);
        }
        if n % 2 == 0 {
            post["published"] = json!(n % 4 == 0);
            post["publishedAt"] = json!(format!("2021-06-{:02}T12:30:00.000Z", n));
        }
        if n % 5 == 0 {
            post["externalId"] = json!(format!("x{n}"));
            post["metadata"] = json!({"n": n});
        }
        nodes.push(post);
    }
    for (i, (name, position, color)) in [
        ("news", Some(1), Some("red")),
        ("News2", Some(1), None),
        ("tech", None, Some("GREY")),
        ("misc%", Some(-5), Some("grey")),
    ]
    .iter()
    .enumerate()
    {
        let mut c = json!({"_typeName": "Category", "id": format!("c{}", i + 1), "name": name});
        if let Some(p) = position {
            c["position"] = json!(p);
        }
        if let Some(color) = color {
            c["color"] = json!(color);
        }
        nodes.push(c);
    }
    for (i, text) in ["first", "Second", "third", "", "re: first", "re: re"]
        .iter()
        .enumerate()
    {
        nodes.push(json!({"_typeName": "Comment", "id": format!("m{}", i + 1), "text": text}));
    }
    for (i, bio) in ["hi", "HI there"].iter().enumerate() {
        nodes.push(json!({"_typeName": "Profile", "id": format!("f{}", i + 1), "bio": bio}));
    }
    let side = |ty: &str, id: &str, field: Option<&str>| json!({"_typeName": ty, "id": id, "fieldName": field});
    let mut edges = Vec::new();
    for (post, user) in [
        ("p1", "u1"),
        ("p2", "u1"),
        ("p3", "u2"),
        ("p4", "u2"),
        ("p5", "u2"),
        ("p6", "u3"),
        ("p7", "u4"),
        ("p9", "u5"),
        ("p10", "u5"),
        ("p12", "u1"),
    ] {
        edges.push(json!([
            side("Post", post, Some("author")),
            side("User", user, Some("posts"))
        ]));
    }
    for (post, cat) in [
        ("p1", "c1"),
        ("p1", "c2"),
        ("p2", "c1"),
        ("p3", "c3"),
        ("p5", "c1"),
        ("p5", "c3"),
        ("p5", "c4"),
        ("p8", "c4"),
    ] {
        edges.push(json!([
            side("Post", post, Some("categories")),
            side("Category", cat, Some("posts"))
        ]));
    }
    for (comment, post) in [
        ("m1", "p1"),
        ("m2", "p1"),
        ("m3", "p2"),
        ("m4", "p5"),
        ("m5", "p1"),
        ("m6", "p1"),
    ] {
        edges.push(json!([
            side("Comment", comment, Some("post")),
            side("Post", post, Some("comments"))
        ]));
    }
    for (reply, parent) in [("m5", "m1"), ("m6", "m5")] {
        edges.push(json!([
            side("Comment", reply, Some("parent")),
            side("Comment", parent, Some("replies"))
        ]));
    }
    for (profile, user) in [("f1", "u1"), ("f2", "u4")] {
        edges.push(json!([
            side("Profile", profile, Some("user")),
            side("User", user, Some("profile"))
        ]));
    }
    for (follower, followed) in [("u1", "u2"), ("u2", "u1"), ("u3", "u1"), ("u4", "u5")] {
        edges.push(json!([
            side("User", follower, Some("following")),
            side("User", followed, Some("followers"))
        ]));
    }
    for (a, b) in [("u1", "u2"), ("u3", "u4")] {
        edges.push(json!([
            side("User", a, Some("friends")),
            side("User", b, None)
        ]));
    }
    edges.push(json!([
        side("Post", "p3", Some("pinnedIn")),
        side("Category", "c1", Some("pinnedPost"))
    ]));
    let lists = vec![
        json!({"_typeName": "Post", "id": "p1", "tags": ["a", "B"]}),
        json!({"_typeName": "Post", "id": "p2", "scores": [1, 2, 3]}),
        json!({"_typeName": "User", "id": "u1", "nicknames": ["annie"]}),
    ];
    vec![
        json!({"valueType": "nodes", "values": nodes}),
        json!({"valueType": "lists", "values": lists}),
        json!({"valueType": "relations", "values": edges}),
    ]
}
