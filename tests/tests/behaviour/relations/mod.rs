//! Relations (reference §1.6, §2.3–§2.8): reading related nodes, relation filters, relation
//! mutations and nested writes, the extensions beyond the reference, and PostgreSQL's copies of
//! to-one partners.

mod extensions;
mod filters;
mod mutations;
mod nested;
mod partners;
mod reads;
