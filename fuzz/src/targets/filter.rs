//! Filter and orderBy inputs: `all<Model>s` queries of the example service with fuzzed
//! `filter`, `orderBy`, `first` and `skip` variables, over HTTP against a SQLite database that
//! holds a small seeded data set (`svc_fuzz::filters::seed_documents`). The input is either a
//! JSON spec (`{"model", "filter", "other", "orderBy", "first", "skip", "anonymous"}`, the seed
//! corpus's form) or bytes the target turns into one with the model's own names.
//!
//! Besides "no 5xx, no internal error, no panic", an admin's answers must agree with each other:
//! the page (`first`/`skip`) is the slice of the whole ordered list, ordering does not change
//! which nodes match, `_all<Model>sMeta { count }` counts them, `{AND: [f, g]}` matches the
//! intersection and `{OR: [f, g]}` the union of what `f` and `g` match, the id orders are
//! sorted, and the query alone (which a compiled plan may answer) gives what the same field
//! gives beside others (which the executor answers).

use std::collections::BTreeSet;

use crate::filters::{Spec, seed_documents};
use crate::{Server, import_all, server_with, simple_path};
use serde_json::{Value, json};

fn seed(server: &Server) {
    for document in seed_documents() {
        import_all(server, &document);
    }
}

fn ids(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|n| n["id"].as_str().map(str::to_owned))
        .collect()
}

fn set(ids: &[String]) -> BTreeSet<&str> {
    ids.iter().map(String::as_str).collect()
}

/// Runs one input (the module's header says what it is and what must hold).
pub fn run(data: &[u8]) {
    let Some(spec) = Spec::from_bytes(data) else {
        return;
    };
    let server = server_with(seed);
    let (name, plural) = (spec.model.name, spec.model.plural);
    let single = format!(
        "query ($f: {name}Filter, $o: {name}OrderBy, $first: Int, $skip: Int) {{ all{plural}(filter: $f, orderBy: $o, first: $first, skip: $skip) {{ id }} }}"
    );
    let several = format!(
        "query ($f: {name}Filter!, $g: {name}Filter!, $o: {name}OrderBy, $first: Int, $skip: Int) {{
  all: all{plural}(filter: $f, orderBy: $o) {{ id }}
  page: all{plural}(filter: $f, orderBy: $o, first: $first, skip: $skip) {{ id }}
  plain: all{plural}(filter: $f) {{ id }}
  count: _all{plural}Meta(filter: $f) {{ count }}
  g: all{plural}(filter: $g) {{ id }}
  and: all{plural}(filter: {{AND: [$f, $g]}}) {{ id }}
  or: all{plural}(filter: {{OR: [$f, $g]}}) {{ id }}
}}"
    );
    let variables = json!({
        "f": spec.filter, "g": spec.other, "o": spec.order_by,
        "first": spec.first, "skip": spec.skip,
    });
    let body = json!([
        {"query": single, "variables": variables},
        {"query": several, "variables": variables},
    ]);
    let body = serde_json::to_vec(&body).unwrap_or_default();
    let mut headers = vec![("Content-Type", "application/json")];
    if !spec.anonymous {
        headers.push(("Authorization", server.admin.as_str()));
    }
    let response = server.request("POST", &simple_path(), &headers, &body);
    let answer = response.json();
    let [one, all] = [&answer[0], &answer[1]];
    assert!(
        one.is_object() && all.is_object(),
        "a batch of two gave {answer}"
    );
    if spec.anonymous || one.get("errors").is_some() || all.get("errors").is_some() {
        return;
    }
    let shown = || format!("variables {variables}\nanswer {answer}");
    let d = &all["data"];
    let field =
        |k: &str| ids(&d[k]).unwrap_or_else(|| panic!("`{k}` is not a list of ids: {}", shown()));
    let (whole, page, plain, g, and, or) = (
        field("all"),
        field("page"),
        field("plain"),
        field("g"),
        field("and"),
        field("or"),
    );
    let alone = ids(&one["data"][format!("all{plural}")])
        .unwrap_or_else(|| panic!("the query alone gave no list: {}", shown()));
    assert_eq!(
        alone,
        page,
        "the query alone and beside others differ: {}",
        shown()
    );
    assert_eq!(
        set(&whole),
        set(&plain),
        "ordering changed which nodes match: {}",
        shown()
    );
    assert_eq!(
        whole.len(),
        set(&whole).len(),
        "a node listed twice: {}",
        shown()
    );
    if let Some(count) = d["count"]["count"].as_u64() {
        assert_eq!(
            count as usize,
            plain.len(),
            "the count is not the number of nodes: {}",
            shown()
        );
    }
    if let (Some(first), Some(skip)) = (
        spec.first
            .as_u64()
            .or(spec.first.is_null().then_some(u64::MAX)),
        spec.skip.as_u64().or(spec.skip.is_null().then_some(0)),
    ) {
        let start = (skip as usize).min(whole.len());
        let end = start
            .saturating_add(first.min(usize::MAX as u64) as usize)
            .min(whole.len());
        assert_eq!(
            page,
            whole[start..end],
            "the page is not the slice of the list: {}",
            shown()
        );
    }
    let (f_set, g_set) = (set(&plain), set(&g));
    let expected_and: BTreeSet<&str> = f_set.intersection(&g_set).copied().collect();
    let expected_or: BTreeSet<&str> = f_set.union(&g_set).copied().collect();
    assert_eq!(
        set(&and),
        expected_and,
        "AND is not the intersection: {}",
        shown()
    );
    assert_eq!(set(&or), expected_or, "OR is not the union: {}", shown());
    let mut sorted = whole.clone();
    sorted.sort();
    match spec.order_by.as_str() {
        None | Some("id_ASC") => assert_eq!(whole, sorted, "not in id order: {}", shown()),
        Some("id_DESC") => {
            sorted.reverse();
            assert_eq!(whole, sorted, "not in descending id order: {}", shown());
        }
        _ => {}
    }
}
