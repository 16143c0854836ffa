//! Data import and export in the Normalized Data Format (reference §8): the bodies of
//! `POST /simple/v1/<id>/export` ([`export`]) and `POST /simple/v1/<id>/import`.
//!
//! An NDF document is `{"valueType": "nodes" | "lists" | "relations", "values": [...]}`:
//!
//! - nodes: `{"_typeName", "id", <non-list scalar fields>, "createdAt", "updatedAt"}`;
//! - lists: `{"_typeName", "id", "<list field>": [...]}`, chunks of one list appended in order;
//! - relations: `[{"_typeName", "id", "fieldName"}, {"_typeName", "id", "fieldName"}]`, side B
//!   first on export, `fieldName` null on one side of a one-field self relation.
//!
//! Export pages through the tables in a fixed order (models, then nodes by id ascending), each
//! response holding elements whose serialised lengths sum to at most the page limit, and a
//! cursor `{table, row, field, array}` to resume from exactly (all `-1` when done).

pub mod export;
pub mod import;

use serde::{Deserialize, Serialize};

/// The reference's page limit of an export response, in characters of element text.
pub const DEFAULT_PAGE_LIMIT: usize = 10_000_000;

/// Where an export continues: `table` indexes the models (nodes), the models with list fields
/// (lists) or the relations; `row` is the row offset in that table (ordered by id); `field` the
/// list field (lists); `array` the offset inside that list. All `-1`: done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Cursor {
    #[serde(default)]
    pub table: i64,
    #[serde(default)]
    pub row: i64,
    #[serde(default)]
    pub field: i64,
    #[serde(default)]
    pub array: i64,
}

impl Cursor {
    /// The cursor of a finished export.
    pub const DONE: Cursor = Cursor {
        table: -1,
        row: -1,
        field: -1,
        array: -1,
    };

    pub fn is_done(&self) -> bool {
        self.table < 0 || self.row < 0 || self.field < 0 || self.array < 0
    }
}

/// The three kinds of NDF documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileType {
    Nodes,
    Lists,
    Relations,
}

impl FileType {
    pub fn parse(name: &str) -> Option<FileType> {
        match name {
            "nodes" => Some(FileType::Nodes),
            "lists" => Some(FileType::Lists),
            "relations" => Some(FileType::Relations),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FileType::Nodes => "nodes",
            FileType::Lists => "lists",
            FileType::Relations => "relations",
        }
    }
}
