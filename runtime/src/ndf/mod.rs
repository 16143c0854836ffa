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
    /// The table the export is in: an index into the models, the models with list fields or
    /// the relations, by the document's kind; 0 when absent.
    #[serde(default)]
    pub table: i64,
    /// How many rows of that table, ordered by id, were exported already; 0 when absent.
    #[serde(default)]
    pub row: i64,
    /// Lists: the list field of the row the export is in, an index among the model's list
    /// fields; 0 when absent.
    #[serde(default)]
    pub field: i64,
    /// Lists: how many values of that list were exported already; 0 when absent.
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

    /// Whether the export is finished: any member is negative.
    pub fn is_done(&self) -> bool {
        self.table < 0 || self.row < 0 || self.field < 0 || self.array < 0
    }
}

/// The three kinds of NDF documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileType {
    /// `nodes`: one element per node, with its non-list scalar fields.
    Nodes,
    /// `lists`: the values of a node's list fields, possibly in several chunks.
    Lists,
    /// `relations`: one element per edge, a pair of `{_typeName, id, fieldName}`.
    Relations,
}

impl FileType {
    /// The kind named `name` (`nodes`, `lists` or `relations`); `None` for any other name.
    pub fn parse(name: &str) -> Option<FileType> {
        match name {
            "nodes" => Some(FileType::Nodes),
            "lists" => Some(FileType::Lists),
            "relations" => Some(FileType::Relations),
            _ => None,
        }
    }

    /// The kind's name, as in `fileType` and `valueType`.
    pub fn name(self) -> &'static str {
        match self {
            FileType::Nodes => "nodes",
            FileType::Lists => "lists",
            FileType::Relations => "relations",
        }
    }
}
