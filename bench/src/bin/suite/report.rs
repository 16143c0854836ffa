//! The markdown report: one row per query and server, then the ratios of the same run.

use std::fmt::Write;

use crate::load::{Cell, Settings};
use crate::targets::{Expect, Kind, Query};

/// The goals of the benchmark issue (queries 1–3 against PostGraphile, reads against raw SQL)
/// and of the issue on writes and filtered reads (against PostGraphile 5 and raw SQL): the
/// least ratio of `a` ÷ `b` on query `q`, where one is set.
fn goal(q: Query, a: Kind, b: Kind) -> Option<f64> {
    if b.is_svc() || !matches!(a, Kind::SvcSqlite | Kind::SvcPostgres) {
        // Two builds or two APIs of svc: only the Relay API's list has a goal.
        let relay = matches!(
            (a, b),
            (Kind::SvcRelaySqlite, Kind::SvcSqlite) | (Kind::SvcRelayPostgres, Kind::SvcPostgres)
        );
        return (relay && q == Query::List).then_some(0.9);
    }
    match (q, b) {
        (Query::Create, Kind::Sql) => Some(0.7),
        (_, Kind::Sql) => Some(0.35),
        (Query::List | Query::ById | Query::Nested, _) => Some(5.0),
        (Query::Filter | Query::Search, Kind::PostGraphile5) => Some(5.0),
        (Query::FilterLarge | Query::SearchLarge, Kind::PostGraphile5) => Some(20.0),
        (Query::Create, Kind::PostGraphile5) => Some(3.0),
        _ => None,
    }
}

#[derive(Debug)]
pub struct Row {
    pub query: Query,
    pub kind: Kind,
    pub cell: Cell,
}

pub fn ms(d: std::time::Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.1}")
    }
}

pub fn statements(cell: &Cell) -> String {
    match cell.statements {
        Some((lo, hi)) if lo == hi => lo.to_string(),
        Some((lo, hi)) => format!("{lo}–{hi}"),
        None => "—".into(),
    }
}

/// One line, table-safe.
fn clean(message: &str) -> String {
    let one: String = message.replace(['\n', '|'], " ");
    match one.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &one[..i]),
        None => one,
    }
}

pub fn markdown(
    rows: &[Row],
    kinds: &[Kind],
    settings: &Settings,
    expect: &Expect,
    notes: &[String],
) -> String {
    let mut out = String::from("# Benchmark: svc against PostGraphile and raw SQL\n\n");
    for note in notes {
        let _ = writeln!(out, "- {note}");
    }
    let _ = writeln!(
        out,
        "- Data: {} users, {} posts ({} match query 4's filter, {} query 6's). Each cell: {} concurrent clients, {} s warm-up, {} s measured in {} rounds taking turns with the other servers' rounds of the query; every response is checked (errors or wrong data fail the cell).",
        expect.users,
        expect.posts,
        expect.filtered,
        expect.searched,
        settings.clients,
        settings.warmup.as_secs_f64(),
        settings.measure.as_secs_f64(),
        settings.rounds
    );
    out.push_str(
        "- SQL statements: per request from svc's `Svc-Sql-Statements` header; for pgbench, the statements of its script. Server CPU: the CPU time of the server's process (not PostgreSQL's) over the cell, warm-up included, per request; load generator CPU: the same for the suite's own process, which sends and checks the requests (pgbench's is not measured).\n\n",
    );
    out.push_str(
        "| query | server | req/s | p50 ms | p99 ms | SQL statements | server CPU ms/request | load generator CPU ms/request |\n",
    );
    out.push_str("|---|---|--:|--:|--:|--:|--:|--:|\n");
    for row in rows {
        let q = format!("{}. {}", row.query.number(), row.query.title());
        match &row.cell.failure {
            Some(e) => {
                let _ = writeln!(
                    out,
                    "| {q} | {} | **failed**: {} | | | | | |",
                    row.kind.label(),
                    clean(e)
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "| {q} | {} | {:.0} | {} | {} | {} | {} | {} |",
                    row.kind.label(),
                    row.cell.rate,
                    ms(row.cell.p50),
                    ms(row.cell.p99),
                    statements(&row.cell),
                    row.cell.cpu_per_request().map_or("—".into(), ms),
                    row.cell.client_cpu_per_request().map_or("—".into(), ms)
                );
            }
        }
    }
    let pairs: Vec<(Kind, Kind)> = [
        (Kind::SvcSqlite, Kind::PostGraphile4),
        (Kind::SvcSqlite, Kind::PostGraphile5),
        (Kind::SvcPostgres, Kind::PostGraphile4),
        (Kind::SvcPostgres, Kind::PostGraphile5),
        (Kind::SvcPostgres, Kind::Sql),
        (Kind::SvcSqlite, Kind::SvcSqliteBaseline),
        (Kind::SvcPostgres, Kind::SvcPostgresBaseline),
        (Kind::SvcRelaySqlite, Kind::SvcSqlite),
        (Kind::SvcRelayPostgres, Kind::SvcPostgres),
    ]
    .into_iter()
    .filter(|(a, b)| kinds.contains(a) && kinds.contains(b))
    .collect();
    if pairs.is_empty() {
        return out;
    }
    out.push_str("\n## Ratios of requests/s (same run)\n\n");
    out.push_str(
        "Goals: at least 5× PostGraphile on queries 1–3 and at least 0.35× raw SQL on reads (the benchmark issue); against PostGraphile 5, at least 5× on queries 4 and 6, 20× on the large data set's 8 and 9 and 3× on creates, and at least 0.7× raw SQL on creates (the issue on writes and filtered reads); the Relay API at least 0.9× the Simple API on query 1. ✓ met, ✗ not met.\n\n",
    );
    out.push_str("| query |");
    for (a, b) in &pairs {
        let _ = write!(out, " {} ÷ {} |", a.label(), b.label());
    }
    out.push_str("\n|---|");
    out.push_str(&"--:|".repeat(pairs.len()));
    out.push('\n');
    let rate = |q: Query, k: Kind| {
        rows.iter()
            .find(|r| r.query == q && r.kind == k && r.cell.failure.is_none())
            .map(|r| r.cell.rate)
    };
    for q in Query::ALL {
        if !rows.iter().any(|r| r.query == q) {
            continue;
        }
        let _ = write!(out, "| {}. {} |", q.number(), q.title());
        for &(a, b) in &pairs {
            match (rate(q, a), rate(q, b)) {
                (Some(x), Some(y)) if y > 0.0 => {
                    let ratio = x / y;
                    let goal = goal(q, a, b);
                    let mark = match goal {
                        Some(g) if ratio >= g => " ✓",
                        Some(_) => " ✗",
                        None => "",
                    };
                    let _ = write!(out, " {ratio:.2}×{mark} |");
                }
                _ => out.push_str(" — |"),
            }
        }
        out.push('\n');
    }
    out
}
