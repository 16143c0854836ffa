//! Every name the generator derives from a user's name, in one place.
//!
//! GraphQL names are part of the public API and must match the reference exactly (plurals follow
//! evo-inflector 1.2 as described in the reference's Appendix A); Rust identifiers only have to be
//! valid and predictable. Emitters call these functions instead of formatting names themselves, so
//! the collision checks of the validator and the emitted code can never disagree.

use crate::model::{Model, RelationId};

/// `all{Plural}`: the list query of a model.
pub fn all_field(ty: &str) -> String {
    format!("all{}", plural(ty))
}

/// `_all{Plural}Meta`: the count query of a model.
pub fn meta_field(ty: &str) -> String {
    format!("_all{}Meta", plural(ty))
}

pub fn create_field(ty: &str) -> String {
    format!("create{ty}")
}

pub fn update_field(ty: &str) -> String {
    format!("update{ty}")
}

pub fn update_or_create_field(ty: &str) -> String {
    format!("updateOrCreate{ty}")
}

pub fn delete_field(ty: &str) -> String {
    format!("delete{ty}")
}

/// `deleteMany{Plural}`: deletes every node of a model that matches a filter and returns a
/// [`BATCH_PAYLOAD_TYPE`] with their count (an extension beyond the reference).
pub fn delete_many_field(ty: &str) -> String {
    format!("deleteMany{}", plural(ty))
}

/// `updateMany{Plural}`: sets the same values on every node of a model that matches a filter and
/// returns a [`BATCH_PAYLOAD_TYPE`] with their count (an extension beyond the reference).
pub fn update_many_field(ty: &str) -> String {
    format!("updateMany{}", plural(ty))
}

/// `UpdateMany{Plural}Data`: the input type holding the values `updateMany{Plural}` writes.
pub fn update_many_data(ty: &str) -> String {
    format!("UpdateMany{}Data", plural(ty))
}

/// The output type of `deleteMany{Plural}` and `updateMany{Plural}`, which reports how many nodes
/// they changed. One type shared by every model.
pub const BATCH_PAYLOAD_TYPE: &str = "_BatchPayload";

/// `set{Relation}`: connects the two nodes of a 1:1 relation.
pub fn set_field(relation: &str) -> String {
    format!("set{relation}")
}

/// `unset{Relation}`: disconnects the two nodes of a 1:1 relation.
pub fn unset_field(relation: &str) -> String {
    format!("unset{relation}")
}

/// `addTo{Relation}`: connects two nodes of a 1:n or n:m relation.
pub fn add_to_field(relation: &str) -> String {
    format!("addTo{relation}")
}

/// `removeFrom{Relation}`: disconnects two nodes of a 1:n or n:m relation.
pub fn remove_from_field(relation: &str) -> String {
    format!("removeFrom{relation}")
}

/// `SetRelationPayload`: the result type of [`set_field`].
pub fn set_payload(relation: &str) -> String {
    format!("Set{relation}Payload")
}

/// `UnsetRelationPayload`: the result type of [`unset_field`].
pub fn unset_payload(relation: &str) -> String {
    format!("Unset{relation}Payload")
}

/// `AddToRelationPayload`: the result type of [`add_to_field`].
pub fn add_to_payload(relation: &str) -> String {
    format!("AddTo{relation}Payload")
}

/// `RemoveFromRelationPayload`: the result type of [`remove_from_field`].
pub fn remove_from_payload(relation: &str) -> String {
    format!("RemoveFrom{relation}Payload")
}

/// `{field}{Target}`: the name relation mutations give one side of a relation (reference §2.7),
/// from that side's field and the type the field points at. It names the side's argument
/// ([`relation_id_argument`]) and the payload field holding the node the field points at.
///
/// A self relation declared on a single field has two sides but one field; use
/// [`relation_a_name`] / [`relation_b_name`], which insert `1` / `2` for it.
pub fn relation_side_name(field: &str, target: &str) -> String {
    format!("{field}{target}")
}

/// `Some<Type>Exists`: the permission schema's field for `ty` (seed §2.4).
pub fn some_exists_field(ty: &str) -> String {
    format!("Some{ty}Exists")
}

/// `aName` of reference §2.7: `{fa}{B}` (side A's field, side B's type), or `{f}1{M}` for a self
/// relation declared on the single field `f` of `M`.
pub fn relation_a_name(model: &Model, rel: RelationId) -> String {
    let r = model.relation(rel);
    let field = &model.end_field(r.a).name;
    if r.is_single_field_self() {
        format!("{field}1{}", model.ty(r.a.ty).name)
    } else {
        relation_side_name(field, &model.ty(r.b.ty).name)
    }
}

/// `bName` of reference §2.7: `{fb}{A}` (side B's field, side A's type), or `{f}2{M}` for a self
/// relation declared on the single field `f` of `M`.
pub fn relation_b_name(model: &Model, rel: RelationId) -> String {
    let r = model.relation(rel);
    let field = &model.end_field(r.b).name;
    if r.is_single_field_self() {
        format!("{field}2{}", model.ty(r.b.ty).name)
    } else {
        relation_side_name(field, &model.ty(r.a.ty).name)
    }
}

/// `{sideName}Id`: the argument of a relation mutation for one side. The `aName` argument holds
/// the id of the **B** node and the `bName` argument the id of the **A** node (reference §2.7).
pub fn relation_id_argument(side_name: &str) -> String {
    format!("{side_name}Id")
}

pub fn filter_type(ty: &str) -> String {
    format!("{ty}Filter")
}

pub fn order_by_type(ty: &str) -> String {
    format!("{ty}OrderBy")
}

pub fn create_input(ty: &str) -> String {
    format!("Create{ty}")
}

pub fn update_input(ty: &str) -> String {
    format!("Update{ty}")
}

/// `{Owner}{field}{Related}`: the input type for nested creates through a relation field.
pub fn nested_input(owner: &str, field: &str, related: &str) -> String {
    format!("{owner}{field}{related}")
}

pub fn subscription_filter_type(ty: &str) -> String {
    format!("{ty}SubscriptionFilter")
}

pub fn subscription_filter_node_type(ty: &str) -> String {
    format!("{ty}SubscriptionFilterNode")
}

pub fn subscription_payload_type(ty: &str) -> String {
    format!("{ty}SubscriptionPayload")
}

pub fn previous_values_type(ty: &str) -> String {
    format!("{ty}PreviousValues")
}

/// Type names the generated API always defines, whatever the model.
pub const FIXED_TYPE_NAMES: [&str; 11] = [
    // The generated Rust items a service binary runs (`svc_runtime::run::<Service>()`) and
    // the root of its permission schema.
    "Service",
    "PermissionQuery",
    "Query",
    "Mutation",
    "Subscription",
    "Node",
    "_QueryMeta",
    "_ModelMutationType",
    "Viewer",
    "Long",
    BATCH_PAYLOAD_TYPE,
];

/// The plural of a type name, exactly as the reference's Appendix A: the first rule that applies
/// wins, then the first letter is upper-cased.
pub fn plural(ty: &str) -> String {
    upper_first(&inflect(ty))
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Rule 1: words whose plural is the word itself.
const UNCHANGED: &[&str] = &[
    "fish",
    "ois",
    "sheep",
    "deer",
    "pox",
    "itis",
    "bison",
    "flounder",
    "pliers",
    "bream",
    "gallows",
    "proceedings",
    "breeches",
    "graffiti",
    "rabies",
    "britches",
    "headquarters",
    "salmon",
    "carp",
    "herpes",
    "scissors",
    "chassis",
    "high-jinks",
    "sea-bass",
    "clippers",
    "homework",
    "series",
    "cod",
    "innings",
    "shears",
    "contretemps",
    "jackanapes",
    "species",
    "corps",
    "mackerel",
    "swine",
    "debris",
    "measles",
    "trout",
    "diabetes",
    "mews",
    "tuna",
    "djinn",
    "mumps",
    "whiting",
    "eland",
    "news",
    "wildebeest",
    "elk",
    "pincers",
    "sugar",
];

/// Rules 2 and 3: irregular plurals (classical, then the anglicized overrides).
const IRREGULAR: &[(&str, &str)] = &[
    ("child", "children"),
    ("ephemeris", "ephemerides"),
    ("mongoose", "mongoose"),
    ("mythos", "mythoi"),
    ("soliloquy", "soliloquies"),
    ("trilby", "trilbys"),
    ("genus", "genera"),
    ("quiz", "quizzes"),
    ("beef", "beefs"),
    ("brother", "brothers"),
    ("cow", "cows"),
    ("genie", "genies"),
    ("money", "moneys"),
    ("octopus", "octopuses"),
    ("opus", "opuses"),
];

/// A suffix-list rule: if the lower-cased name ends with one of `words`, drop `strip` characters
/// and append `add`.
struct Suffixes {
    words: &'static [&'static str],
    strip: usize,
    add: &'static str,
}

const RULE_6: &[Suffixes] = &[
    Suffixes {
        words: &["codex", "murex", "silex"],
        strip: 2,
        add: "ices",
    },
    Suffixes {
        words: &["radix", "helix"],
        strip: 2,
        add: "ices",
    },
    Suffixes {
        words: &[
            "bacterium",
            "agendum",
            "desideratum",
            "erratum",
            "stratum",
            "datum",
            "ovum",
            "extremum",
            "candelabrum",
        ],
        strip: 2,
        add: "a",
    },
    Suffixes {
        words: &[
            "criterion",
            "perihelion",
            "aphelion",
            "phenomenon",
            "prolegomenon",
            "noumenon",
            "organon",
            "asyndeton",
            "hyperbaton",
        ],
        strip: 2,
        add: "a",
    },
    Suffixes {
        words: &["alumna", "alga", "vertebra", "persona"],
        strip: 1,
        add: "ae",
    },
];

const RULE_7: Suffixes = Suffixes {
    words: &[
        "alumnus",
        "alveolus",
        "bacillus",
        "bronchus",
        "locus",
        "nucleus",
        "stimulus",
        "meniscus",
        "thesaurus",
    ],
    strip: 2,
    add: "i",
};

const RULE_9: Suffixes = Suffixes {
    words: &[
        "acropolis",
        "chaos",
        "lens",
        "aegis",
        "cosmos",
        "mantis",
        "alias",
        "dais",
        "marquis",
        "asbestos",
        "digitalis",
        "metropolis",
        "atlas",
        "epidermis",
        "pathos",
        "bathos",
        "ethos",
        "pelvis",
        "bias",
        "gas",
        "polis",
        "caddis",
        "glottis",
        "rhinoceros",
        "cannabis",
        "sassafras",
        "canvas",
        "ibis",
        "trellis",
        "iris",
        "clitoris",
        "apparatus",
        "impetus",
        "prospectus",
        "cantus",
        "nexus",
        "sinus",
        "coitus",
        "plexus",
        "status",
        "hiatus",
    ],
    strip: 0,
    add: "es",
};

const RULE_11: Suffixes = Suffixes {
    words: &[
        "anathema",
        "enema",
        "oedema",
        "bema",
        "enigma",
        "sarcoma",
        "carcinoma",
        "gumma",
        "schema",
        "charisma",
        "lemma",
        "soma",
        "diploma",
        "lymphoma",
        "stigma",
        "dogma",
        "magma",
        "stoma",
        "drama",
        "melisma",
        "trauma",
        "edema",
        "miasma",
    ],
    strip: 0,
    add: "s",
};

const RULE_15: Suffixes = Suffixes {
    words: &[
        "solo",
        "soprano",
        "basso",
        "alto",
        "contralto",
        "tempo",
        "piano",
        "virtuoso",
        "albino",
        "archipelago",
        "armadillo",
        "commando",
        "crescendo",
        "fiasco",
        "ditto",
        "dynamo",
        "embryo",
        "ghetto",
        "guano",
        "inferno",
        "jumbo",
        "lumbago",
        "magneto",
        "manifesto",
        "medico",
        "octavo",
        "photo",
        "pro",
        "quarto",
        "canto",
        "lingo",
        "generalissimo",
        "stylo",
        "rhino",
        "casino",
        "auto",
        "macro",
        "zero",
    ],
    strip: 0,
    add: "s",
};

impl Suffixes {
    fn apply(&self, word: &str) -> Option<String> {
        let lower = word.to_ascii_lowercase();
        self.words
            .iter()
            .any(|w| lower.ends_with(w))
            .then(|| format!("{}{}", cut(word, self.strip), self.add))
    }
}

/// `word` without its last `n` bytes. Callers only cut suffixes that matched ASCII text, so the
/// cut is on a character boundary; anything else falls back to the whole word.
fn cut(word: &str, n: usize) -> &str {
    word.get(..word.len().saturating_sub(n)).unwrap_or(word)
}

/// Whether `word` ends with `suffix`, ignoring ASCII case.
fn ends_ci(word: &str, suffix: &str) -> bool {
    word.len() >= suffix.len()
        && word
            .get(word.len() - suffix.len()..)
            .is_some_and(|tail| tail.eq_ignore_ascii_case(suffix))
}

/// The character before a suffix of `len` bytes, lower-cased.
fn char_before(word: &str, len: usize) -> Option<char> {
    word.get(..word.len().checked_sub(len)?)?
        .chars()
        .next_back()
        .map(|c| c.to_ascii_lowercase())
}

/// Replaces a matched suffix of `len` bytes with `with`.
fn replace_end(word: &str, len: usize, with: &str) -> String {
    format!("{}{with}", cut(word, len))
}

fn inflect(word: &str) -> String {
    let lower = word.to_ascii_lowercase();
    // 1
    if UNCHANGED.iter().any(|w| lower.ends_with(w)) {
        return word.to_owned();
    }
    // 2, 3: the first letter of the matched singular keeps its case.
    for (singular, plural) in IRREGULAR {
        if ends_ci(word, singular) {
            return replace_end(word, singular.len() - 1, &plural[1..]);
        }
    }
    // 4
    if lower.ends_with("human") {
        return format!("{word}s");
    }
    // 5
    for (suffix, with) in [
        ("man", "men"),
        ("tooth", "teeth"),
        ("goose", "geese"),
        ("foot", "feet"),
        ("zoon", "zoa"),
    ] {
        if ends_ci(word, suffix) {
            return replace_end(word, suffix.len(), with);
        }
        if suffix == "man"
            && ends_ci(word, "ouse")
            && matches!(char_before(word, 4), Some('l' | 'm'))
        {
            // `([lm])ouse$` sits between `man$` and `tooth$` in the rule order.
            return replace_end(word, 4, "ice");
        }
    }
    if ends_ci(word, "is") && matches!(char_before(word, 2), Some('c' | 's' | 'x')) {
        return replace_end(word, 2, "es");
    }
    // 6, 7
    for rule in RULE_6.iter().chain([&RULE_7]) {
        if let Some(res) = rule.apply(word) {
            return res;
        }
    }
    // 8
    if ends_ci(word, "ch") || ends_ci(word, "sh") || ends_ci(word, "z") || ends_ci(word, "x") {
        return format!("{word}es");
    }
    // 9
    if let Some(res) = RULE_9.apply(word) {
        return res;
    }
    // 10
    if ends_ci(word, "us") {
        return format!("{word}es");
    }
    // 11
    if let Some(res) = RULE_11.apply(word) {
        return res;
    }
    // 12: `([cs])h$` was already taken by rule 8; `ss$` remains.
    if ends_ci(word, "ss") {
        return format!("{word}es");
    }
    // 13
    if ends_ci(word, "lf") && matches!(char_before(word, 2), Some('a' | 'e' | 'o')) {
        return replace_end(word, 1, "ves");
    }
    if ends_ci(word, "eaf") && char_before(word, 3).is_some_and(|c| c != 'd') {
        return replace_end(word, 1, "ves");
    }
    if ends_ci(word, "arf") {
        return replace_end(word, 1, "ves");
    }
    if ends_ci(word, "ife") && matches!(char_before(word, 3), Some('n' | 'l' | 'w')) {
        return replace_end(word, 2, "ves");
    }
    // 14
    if ends_ci(word, "y") {
        if matches!(char_before(word, 1), Some('a' | 'e' | 'i' | 'o' | 'u')) {
            return format!("{word}s");
        }
        return replace_end(word, 1, "ies");
    }
    // 15
    if let Some(res) = RULE_15.apply(word) {
        return res;
    }
    // 16
    if ends_ci(word, "o") {
        if matches!(char_before(word, 1), Some('a' | 'e' | 'i' | 'o' | 'u')) {
            return format!("{word}s");
        }
        return format!("{word}es");
    }
    // 17: unanchored, first match.
    if let Some(at) = lower.find("ulum") {
        return format!("{}ula{}", &word[..at], &word[at + 4..]);
    }
    // 18
    if ends_ci(word, "s") {
        return format!("{word}es");
    }
    // 19
    format!("{word}s")
}

/// Rust keywords that may be used as raw identifiers (`r#type`).
const RAW_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where", "while",
    "abstract", "become", "box", "do", "final", "gen", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield",
];

/// Keywords that cannot be raw identifiers; they get a trailing `_` instead.
const NON_RAW_KEYWORDS: &[&str] = &["self", "Self", "super", "crate", "_"];

/// A GraphQL name as a snake_case Rust identifier (`createdAt` → `created_at`, `type` → `r#type`,
/// `self` → `self_`).
pub fn rust_ident(name: &str) -> String {
    escape_keyword(snake_case(&sanitize(name)))
}

/// A GraphQL type name as a Rust type identifier: the name is kept (it is UpperCamel already by the
/// naming rules) and only made keyword-safe.
pub fn rust_type_ident(name: &str) -> String {
    escape_keyword(sanitize(name))
}

/// Replaces characters that cannot appear in an identifier and avoids a leading digit or an empty
/// name, so every input maps to something `syn` accepts.
fn sanitize(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

fn escape_keyword(ident: String) -> String {
    if NON_RAW_KEYWORDS.contains(&ident.as_str()) {
        format!("{ident}_")
    } else if RAW_KEYWORDS.contains(&ident.as_str()) {
        format!("r#{ident}")
    } else {
        ident
    }
}

/// `createdAt` → `created_at`, `HTTPServer` → `http_server`, `userID` → `user_id`.
fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            // A word starts at a lower→upper step (`dA`) or at the last capital of an acronym
            // followed by a lower-case letter (`HTTPServer` → `HTTP` + `Server`).
            let boundary = prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower);
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appendix A "Verified outputs", every pair.
    const VERIFIED: &[(&str, &str)] = &[
        ("Post", "Posts"),
        ("User", "Users"),
        ("Todo", "Todoes"),
        ("Hobby", "Hobbies"),
        ("Category", "Categories"),
        ("Company", "Companies"),
        ("Story", "Stories"),
        ("Day", "Days"),
        ("Key", "Keys"),
        ("Person", "Persons"),
        ("Medium", "Mediums"),
        ("Data", "Datas"),
        ("Datum", "Data"),
        ("Status", "Statuses"),
        ("News", "News"),
        ("Series", "Series"),
        ("Species", "Species"),
        ("Fish", "Fish"),
        ("Child", "Children"),
        ("Man", "Men"),
        ("Woman", "Women"),
        ("Human", "Humans"),
        ("Mouse", "Mice"),
        ("Blouse", "Blice"),
        ("House", "Houses"),
        ("Analysis", "Analyses"),
        ("Axis", "Axes"),
        ("Criterion", "Criteria"),
        ("Persona", "Personae"),
        ("Schema", "Schemas"),
        ("Curriculum", "Curricula"),
        ("Address", "Addresses"),
        ("Class", "Classes"),
        ("Match", "Matches"),
        ("Box", "Boxes"),
        ("Index", "Indexes"),
        ("Matrix", "Matrixes"),
        ("Quiz", "Quizzes"),
        ("Buzz", "Buzzes"),
        ("Ox", "Oxes"),
        ("Bus", "Buses"),
        ("Campus", "Campuses"),
        ("Virus", "Viruses"),
        ("Alias", "Aliases"),
        ("Gas", "Gases"),
        ("Leaf", "Leaves"),
        ("Wolf", "Wolves"),
        ("Shelf", "Shelves"),
        ("Half", "Halves"),
        ("Knife", "Knives"),
        ("Life", "Lives"),
        ("Scarf", "Scarves"),
        ("Loaf", "Loafs"),
        ("Chief", "Chiefs"),
        ("Roof", "Roofs"),
        ("Photo", "Photos"),
        ("Video", "Videos"),
        ("Radio", "Radios"),
        ("Zero", "Zeros"),
        ("Piano", "Pianos"),
        ("Logo", "Logoes"),
        ("Memo", "Memoes"),
        ("Demo", "Demoes"),
        ("Hero", "Heroes"),
        ("Potato", "Potatoes"),
        ("Settings", "Settingses"),
        ("Money", "Moneys"),
        ("Octopus", "Octopuses"),
        ("Genus", "Genera"),
        ("Mongoose", "Mongoose"),
        ("Tooth", "Teeth"),
        ("Foot", "Feet"),
        ("Goose", "Geese"),
        ("Movie", "Movies"),
        ("File", "Files"),
    ];

    #[test]
    fn plural_matches_appendix_a() {
        let wrong: Vec<String> = VERIFIED
            .iter()
            .filter(|(s, p)| plural(s) != *p)
            .map(|(s, p)| format!("{s}: expected {p}, got {}", plural(s)))
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn plural_rule_details() {
        // Suffix lists match the end of a compound name; irregulars keep the first letter's case.
        assert_eq!(plural("SuperFish"), "SuperFish");
        assert_eq!(plural("GrandChild"), "GrandChildren");
        assert_eq!(plural("lowerCase"), "LowerCases");
        assert_eq!(plural("Eaf"), "Eafs");
        assert_eq!(plural("Dreadleaf"), "Dreadleaves");
        assert_eq!(plural("Deaf"), "Deafs");
        assert_eq!(plural("Vertebra"), "Vertebrae");
        assert_eq!(plural("Nucleus"), "Nuclei");
        assert_eq!(plural("Helix"), "Helices");
        assert_eq!(plural(""), "S");
        assert_eq!(plural("\u{e9}t\u{e9}"), "\u{c9}t\u{e9}s");
    }

    #[test]
    fn derived_names() {
        assert_eq!(all_field("Todo"), "allTodoes");
        assert_eq!(meta_field("Person"), "_allPersonsMeta");
        assert_eq!(create_field("User"), "createUser");
        assert_eq!(update_or_create_field("User"), "updateOrCreateUser");
        assert_eq!(
            nested_input("Post", "comments", "Comment"),
            "PostcommentsComment"
        );
        assert_eq!(filter_type("Post"), "PostFilter");
    }

    #[test]
    fn batch_mutation_names() {
        assert_eq!(delete_many_field("Post"), "deleteManyPosts");
        assert_eq!(update_many_field("Child"), "updateManyChildren");
        assert_eq!(update_many_data("Todo"), "UpdateManyTodoesData");
        assert!(FIXED_TYPE_NAMES.contains(&BATCH_PAYLOAD_TYPE));
        assert_eq!(BATCH_PAYLOAD_TYPE, "_BatchPayload");
    }

    use crate::frontend::model_from_sdl as model;

    /// Reference §2.7's example: `addToAuthorPosts(authorUserId: ID!, postsPostId: ID!):
    /// AddToAuthorPostsPayload { authorUser postsPost }`, where `Post.author` is side A.
    #[test]
    fn relation_mutation_names_match_the_reference_example() {
        let model = model(
            "type Post @model { id: ID! @isUnique author: User @relation(name: \"AuthorPosts\") }
             type User @model { id: ID! @isUnique posts: [Post!]! @relation(name: \"AuthorPosts\") }",
        );
        let rel = RelationId(0);
        let relation = &model.relation(rel).name;
        let a = relation_a_name(&model, rel);
        let b = relation_b_name(&model, rel);
        assert_eq!((a.as_str(), b.as_str()), ("authorUser", "postsPost"));
        assert_eq!(add_to_field(relation), "addToAuthorPosts");
        assert_eq!(
            [relation_id_argument(&a), relation_id_argument(&b)],
            ["authorUserId", "postsPostId"]
        );
        assert_eq!(add_to_payload(relation), "AddToAuthorPostsPayload");
        assert_eq!(
            remove_from_payload(relation),
            "RemoveFromAuthorPostsPayload"
        );
        assert_eq!(set_payload(relation), "SetAuthorPostsPayload");
        assert_eq!(unset_payload(relation), "UnsetAuthorPostsPayload");
        assert_eq!(relation_side_name("author", "User"), "authorUser");
    }

    #[test]
    fn self_relation_side_names() {
        let model = model(
            "type User @model {
               id: ID! @isUnique
               friends: [User!]! @relation(name: \"Friends\")
               followers: [User!]! @relation(name: \"Follows\")
               following: [User!]! @relation(name: \"Follows\")
             }",
        );
        // Declared on one field: `1` and `2` keep the two sides apart.
        assert_eq!(relation_a_name(&model, RelationId(0)), "friends1User");
        assert_eq!(relation_b_name(&model, RelationId(0)), "friends2User");
        // Declared on two fields: each side by its own field.
        assert_eq!(relation_a_name(&model, RelationId(1)), "followersUser");
        assert_eq!(relation_b_name(&model, RelationId(1)), "followingUser");
    }

    #[test]
    fn rust_idents() {
        for (name, ident) in [
            ("createdAt", "created_at"),
            ("id", "id"),
            ("userID", "user_id"),
            ("HTTPServer", "http_server"),
            ("url2Html", "url2_html"),
            ("_private", "_private"),
            ("__typename", "__typename"),
            ("type", "r#type"),
            ("async", "r#async"),
            ("gen", "r#gen"),
            ("self", "self_"),
            ("Self", "self_"),
            ("super", "super_"),
            ("crate", "crate_"),
            ("_", "__"),
            ("", "__"),
            ("9lives", "_9lives"),
            ("a-b", "a_b"),
        ] {
            assert_eq!(rust_ident(name), ident, "{name}");
        }
        assert_eq!(rust_type_ident("Post"), "Post");
        assert_eq!(rust_type_ident("Self"), "Self_");
        assert_eq!(rust_type_ident("type"), "r#type");
    }
}
