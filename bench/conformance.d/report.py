"""What bench/conformance found, from the files its runs left in its results folder.

  report.py brief RUN_DIR        one schemathesis run's figures, one line
  report.py summary RESULTS --out FILE ...   every run's figures, the findings, PASS or FAIL
                                 (exit 1 on FAIL); writes FILE (docs/conformance.md) when given

The results folder holds, per server LABEL (sqlite, postgres) and API (simple, relay):
LABEL-API-audit.jsonl (graphql-http's audits, one JSON object each), LABEL-API-WHO/ (a
schemathesis run: run.json, report.json, requests.har, st.log), LABEL-server.json (/status and
the log's `panicked` lines at the end), LABEL-server.log, and crashes.jsonl (a server that did
not survive a step).
"""

import argparse
import glob
import json
import os
import re
import sys
from collections import Counter

WHOOPS = "Whoops. Looks like an internal server error"
SERVERS = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
HOST = re.compile(r"^https?://[^/]+")
# The first field of a generated query or mutation (its operation), in the JSON request body.
FIRST_FIELD = re.compile(r'"query":\s*"(?:mutation|query)?[^{]*\{(?:\\n|\s)*(\w+)')


def load_json(path, default=None):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def har_entries(run_dir):
    har = load_json(os.path.join(run_dir, "requests.har"), {}) or {}
    return (har.get("log") or {}).get("entries") or []


def response_kind(text):
    """What a GraphQL response body says: data (no errors), field errors (data and errors),
    rejected (errors without data: a validation error), error (the reference's `{"error": …}`
    envelope: a syntax error, an unknown service), other."""
    try:
        body = json.loads(text)
    except (TypeError, ValueError):
        return "not JSON", []
    bodies = body if isinstance(body, list) else [body]
    kinds, codes = [], []
    for b in bodies:
        if not isinstance(b, dict):
            kinds.append("other")
            continue
        errors = b.get("errors") or []
        for e in errors:
            if isinstance(e, dict) and "code" in e:
                codes.append(e["code"])
        if "error" in b:
            kinds.append("error envelope")
            if "code" in b:
                codes.append(b["code"])
        elif errors and "data" in b:
            kinds.append("data with field errors")
        elif errors:
            kinds.append("rejected (validation)")
        elif "data" in b:
            kinds.append("data")
        else:
            kinds.append("other")
    return (kinds[0] if len(kinds) == 1 else "batch"), codes


def error_path(text):
    try:
        body = json.loads(text)
        for e in body.get("errors") or []:
            if WHOOPS in (e.get("message") or ""):
                return ".".join(str(p) for p in e.get("path") or []), e.get("requestId")
    except (TypeError, ValueError, AttributeError):
        pass
    return "", None


def analyse_run(run_dir):
    """The figures of one schemathesis run, and its bad responses (5xx, no answer, Whoops)."""
    run = load_json(os.path.join(run_dir, "run.json"), {}) or {}
    report = load_json(os.path.join(run_dir, "report.json"))
    entries = har_entries(run_dir)
    statuses, kinds, codes = Counter(), Counter(), Counter()
    answered = set()  # the operations that answered with data and no error at least once
    bad = []
    for e in entries:
        status = e["response"]["status"]
        text = (e["response"].get("content") or {}).get("text") or ""
        statuses[status] += 1
        kind, error_codes = response_kind(text) if status else ("no answer", [])
        kinds[kind] += 1
        if kind == "data":
            m = FIRST_FIELD.search(((e["request"].get("postData") or {}).get("text") or ""))
            if m:
                answered.add(m.group(1))
        codes.update(error_codes)
        problem = None
        if status == 0:
            problem = "no answer"
        elif status >= 500:
            problem = f"HTTP {status}"
        elif WHOOPS in text:
            problem = "internal error (Whoops)"
        if problem:
            path, request_id = error_path(text)
            bad.append({
                "problem": problem,
                "method": e["request"]["method"],
                "path": HOST.sub("", e["request"]["url"]),
                "headers": {h["name"]: h["value"] for h in e["request"].get("headers") or []},
                "body": (e["request"].get("postData") or {}).get("text") or "",
                "status": status,
                "response": text[:3000],
                "field": path,
                "request_id": request_id,
            })
    figures = {
        "label": run.get("label"), "api": run.get("api"), "who": run.get("who"),
        "exit": run.get("exit"), "seconds": run.get("seconds"),
        "requests": len(entries), "statuses": dict(sorted(statuses.items())),
        "kinds": dict(kinds.most_common()), "codes": dict(codes.most_common()),
        "bad": bad, "report": report, "answered": len(answered),
    }
    if report:
        figures["operations"] = report.get("operations") or {}
        figures["test_cases"] = report.get("test_cases") or {}
        figures["failures"] = report.get("failures") or []
        figures["errors"] = report.get("errors") or []
        figures["version"] = report.get("schemathesis_version")
        figures["complete"] = report.get("complete")
    return figures


def brief(run_dir):
    f = analyse_run(run_dir)
    ops = f.get("operations") or {}
    cases = (f.get("test_cases") or {}).get("generated", "?")
    statuses = ", ".join(f"{k}: {v}" for k, v in f["statuses"].items()) or "none"
    groups = ", ".join(f"{g['title']} ×{g['count']}" for g in f.get("failures") or []) or "none"
    print(f"bench/conformance: {f['label']} /{f['api']} as {f['who']}: {ops.get('tested', '?')} of "
          f"{ops.get('total', '?')} operations, {cases} test cases, {f['requests']} requests in "
          f"{f['seconds']} s; statuses {statuses}; 5xx/no answer/Whoops {len(f['bad'])}; "
          f"schemathesis's failure groups: {groups}")


def curl_of(bad, token_note):
    headers = []
    for name, value in bad["headers"].items():
        if name.lower() == "content-type":
            headers.append(f"-H 'content-type: {value}'")
        elif name.lower() == "authorization":
            headers.append(f"-H 'authorization: Bearer {token_note}'")
    body = bad["body"].replace("'", "'\\''")
    return (f"curl -s -X {bad['method']} http://127.0.0.1:PORT{bad['path']} "
            + " ".join(headers) + f" --data-raw '{body}'")


def server_log_lines(results, label, request_id):
    """The server's log lines naming the request, or else its distinct internal errors."""
    path = os.path.join(results, f"{label}-server.log")
    try:
        with open(path, errors="replace") as f:
            lines = [line.rstrip() for line in f]
    except OSError:
        return []
    named = [line for line in lines if request_id and request_id in line]
    if named:
        return named[:5]
    return list(dict.fromkeys(line for line in lines if "internal error" in line))[:5]


def summary(args):
    results = args.results
    audits, runs, servers = [], [], []
    for path in sorted(glob.glob(os.path.join(results, "*-audit.jsonl"))):
        label, api = os.path.basename(path)[: -len("-audit.jsonl")].split("-", 1)
        rows = []
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("{"):
                    rows.append(json.loads(line))
        audits.append({"label": label, "api": api, "rows": rows})
    for path in sorted(glob.glob(os.path.join(results, "*-*-*", "run.json"))):
        runs.append(analyse_run(os.path.dirname(path)))
    for path in sorted(glob.glob(os.path.join(results, "*-server.json"))):
        servers.append(load_json(path, {}))
    crashes = []
    if os.path.exists(os.path.join(results, "crashes.jsonl")):
        with open(os.path.join(results, "crashes.jsonl")) as f:
            crashes = [json.loads(line) for line in f if line.strip()]

    failures = []  # why the run fails, one line each
    order = {"sqlite": 0, "postgres": 1, "simple": 0, "relay": 1, "admin": 0, "anonymous": 1}
    audits.sort(key=lambda a: (order.get(a["label"], 9), order.get(a["api"], 9)))
    runs.sort(key=lambda r: (order.get(r["label"], 9), order.get(r["api"], 9), order.get(r["who"], 9)))
    servers.sort(key=lambda s: order.get(s.get("label"), 9))

    # ---------------------------------------------------------------- audits
    warnings = {}  # (api, id) -> row, labels
    audit_errors = []
    for a in audits:
        counts = Counter(r["status"] for r in a["rows"])
        a["counts"] = counts
        if not a["rows"]:
            failures.append(f"{a['label']} /{a['api']}: the graphql-http audit did not run")
        for r in a["rows"]:
            if r["status"] == "error":
                audit_errors.append((a, r))
                failures.append(f"{a['label']} /{a['api']}: audit {r['id']} ({r['name']}) failed: {r['reason']}")
            elif r["status"] in ("warn", "notice"):
                entry = warnings.setdefault(r["id"], {"row": r, "where": []})
                entry["where"].append(f"{SERVERS.get(a['label'], a['label'])} /{a['api']}")

    # ---------------------------------------------------------------- schemathesis
    findings = {}  # grouped bad responses
    for r in runs:
        name = f"{r['label']} /{r['api']} as {r['who']}"
        if not r.get("report"):
            failures.append(f"{name}: schemathesis wrote no report (exit {r['exit']}; see st.log)")
            continue
        if not r.get("complete"):
            failures.append(f"{name}: schemathesis did not complete its run (exit {r['exit']})")
        for e in r.get("errors") or []:
            if e["title"] in ("Schema Loading Error", "Test Execution Error", "Hook Error"):
                failures.append(f"{name}: schemathesis: {e['title']}")
        if not r["requests"]:
            failures.append(f"{name}: schemathesis sent no request")
        for g in r.get("failures") or []:
            if "svc_internal_error" in g["title"]:
                continue  # the responses themselves are the findings below
            failures.append(f"{name}: schemathesis: {g['title']} ({g.get('code') or 'custom check'}) ×{g['count']} "
                            f"in {', '.join(str(o) for o in g.get('operations') or [])}")
        for b in r["bad"]:
            # A request whose strings hold U+0000 is one finding whatever the field.
            nul = "\\u0000" in b["body"] or "\x00" in b["body"]
            key = (b["problem"], "a string holding U+0000 (NUL)" if nul else b["field"] or b["response"][:80])
            f = findings.setdefault(key, {"first": b, "runs": Counter(), "count": 0, "label": r["label"],
                                          "fields": Counter()})
            if len(b["body"]) < len(f["first"]["body"]):
                f["first"], f["label"] = b, r["label"]
            f["runs"][name] += 1
            f["fields"][f"/{r['api']} {b['field'] or '?'}"] += 1
            f["count"] += 1
    for key, f in findings.items():
        failures.append(f"{key[0]} on {key[1][:80]}: {f['count']} responses ("
                        + ", ".join(f"{n} ×{c}" for n, c in f["runs"].items()) + "), at "
                        + ", ".join(f"{n} ×{c}" for n, c in f["fields"].items()))

    # ---------------------------------------------------------------- the servers
    for s in servers:
        if s.get("status") != "OK":
            failures.append(f"{s.get('label')}: GET /status answered {s.get('status')!r} at the end")
        if s.get("panicked"):
            failures.append(f"{s.get('label')}: the server's log holds `panicked`: {s['panicked'][0]}")
    for c in crashes:
        failures.append(f"{c['label']}: the server did not survive {c['step']} (/status: {c['status']})")

    verdict = "PASS" if not failures else "FAIL"

    # ---------------------------------------------------------------- printed figures
    out = []
    for a in audits:
        c = a["counts"]
        out.append(f"audit {a['label']} /{a['api']}: {len(a['rows'])} audits, ok {c['ok']}, notice {c['notice']}, "
                   f"warn {c['warn']}, error {c['error']}")
    for audit_id, w in sorted(warnings.items(), key=lambda kv: (kv[1]["row"]["status"] != "warn", kv[0])):
        out.append(f"  {w['row']['status']} {audit_id} {w['row']['name']}: {w['row']['reason']} "
                   f"({', '.join(w['where'])})")
    for r in runs:
        ops = r.get("operations") or {}
        cases = (r.get("test_cases") or {}).get("generated", "?")
        out.append(f"schemathesis {r['label']} /{r['api']} as {r['who']}: {ops.get('tested', '?')}/{ops.get('total', '?')} "
                   f"operations, {cases} test cases, {r['requests']} requests, {r['seconds']} s, statuses "
                   f"{r['statuses']}, bad {len(r['bad'])}")
    for line in failures:
        out.append(f"FAIL: {line}")
    out.append(f"{verdict}")
    print("\n".join(out))

    if args.out:
        write_doc(args, audits, warnings, audit_errors, runs, servers, crashes, findings, failures, verdict, results)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0 if verdict == "PASS" else 1


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return lines


def md_code(text):
    return "```\n" + text.replace("```", "ʼʼʼ") + "\n```"


def write_doc(args, audits, warnings, audit_errors, runs, servers, crashes, findings, failures, verdict, results):
    L = []
    L += [
        "# Conformance",
        "",
        "Two outside tools check the example service's two GraphQL endpoints, the Simple API",
        "(`/simple/v1/<id>`) and the Relay API (`/relay/v1/<id>`), on SQLite and on PostgreSQL:",
        "",
        "- **graphql-http's audit suite** (npm `graphql-http`, `serverAudits`): the requirements of the",
        "  GraphQL-over-HTTP specification (`MUST`, `SHOULD`, `MAY`) on media types, methods, parameters",
        "  and status codes (61 audits), each `ok`, `notice` (a `MAY` not met), `warn` (a `SHOULD` not",
        "  met) or `error` (a `MUST` not met). Run without a token. It passes when no audit is `error`;",
        "  the warnings and notices are listed below. (The behaviour test `simple::over_http` runs the",
        "  same audits and requires no `warn` and no `error`.)",
        "- **schemathesis** (PyPI) in GraphQL mode: it introspects the endpoint and, for every field of",
        "  `Query` and `Mutation` (79 operations on the Simple API), generates queries and mutations",
        "  with arguments drawn from the schema's types, from a fixed seed and a bounded number of",
        "  examples per operation, in its phases `fuzzing` and `stateful` (chains of mutations and",
        "  queries through the ids the responses return; `examples` and `coverage` do not apply to",
        "  GraphQL). Each endpoint is fuzzed twice: with the service's `admin` root token (which",
        "  bypasses every permission, so mutations write) and without a token (so the permission rules",
        "  answer). It passes when no response is a 5xx, every request is answered, no response",
        "  carries an internal error (the reference's \"Whoops\" message, which the server gives with",
        "  HTTP 200 for an unexpected failure: the check `svc_internal_error` of",
        "  `bench/conformance.d/svc_checks.py`), and every response is a GraphQL response (a JSON",
        "  object; schemathesis's `response_schema_conformance`).",
        "",
        "schemathesis's own GraphQL checks are off: they take every response with `errors` beside",
        "`data` for a \"GraphQL server error\", while the reference answers most refused requests that",
        "way (a node that does not exist, 3002; a permission, 3008; a unique value taken, 3010, …), and a",
        "failing check ends an operation's examples early. The error codes the responses carried are",
        "counted below instead.",
        "",
        "Afterwards the server must still answer `GET /status` with `OK`, and its log must hold no",
        "`panicked`; a server that stops answering during a step is recorded as a crash (and started",
        "again on the same database for the remaining steps).",
        "",
        "## How to run",
        "",
        "```sh",
        "bench/conformance --smoke           # both databases, 2 examples per operation, no shrinking, no stateful phase (under 3 minutes, warm build)",
        "bench/conformance                   # both databases, 25 examples per operation, stateful phase too; writes this file",
        "bench/conformance --sqlite-only     # SQLite only",
        "bench/conformance --examples 100 --seed 7 --out /tmp/conformance.md",
        "```",
        "",
        "It builds the example service (debug profile) and installs, once and pinned,",
        "`graphql-http` and `graphql` under `~/.cache/svc-npm/conformance/` and schemathesis in a",
        "venv under `~/.cache/svc-test/schemathesis/`. PostgreSQL is `$SVC_BENCH_PG` (default",
        "`postgresql://postgres@127.0.0.1:5432`); the script creates and drops its own database.",
        "`--keep` keeps the work folder: per run schemathesis's output (`st.log`), its JSON report",
        "and every request and response it sent (`requests.har`), and the servers' logs.",
        "",
        f"## Latest results ({verdict})",
        "",
        f"- {args.date}, {args.mode} run: {args.examples} examples per operation, seed {args.seed}, phases "
        f"`{args.phases}`; {args.seconds} s in all.",
        f"- svc commit {args.commit}, debug build; {args.machine}; the server, the database and the tools share the machine.",
        f"- {args.versions}.",
        "",
        "### graphql-http audits",
        "",
    ]
    rows = []
    for a in audits:
        c = a["counts"]
        rows.append([f"{SERVERS.get(a['label'], a['label'])}", f"/{a['api']}", len(a["rows"]), c["ok"], c["notice"], c["warn"], c["error"]])
    L += table(["server", "API", "audits", "ok", "notice", "warn", "error"], rows)
    L.append("")
    if warnings:
        L.append("Warnings and notices (a `SHOULD`, or a `MAY`, of the specification not met), each once with where it was seen:")
        L.append("")
        for audit_id, w in sorted(warnings.items(), key=lambda kv: (kv[1]["row"]["status"] != "warn", kv[0])):
            body = (w["row"].get("body") or "").replace("\n", " ")
            body = f"; the answer: HTTP {w['row'].get('httpStatus', '?')} `{body[:160]}`" if body else ""
            L.append(f"- `{w['row']['status']}` {audit_id} \"{w['row']['name']}\": {w['row']['reason']}{body} "
                     f"({', '.join(w['where'])})")
        L.append("")
    else:
        L += ["No audit warned.", ""]
    if audit_errors:
        L.append("Audits that failed (`error`):")
        L.append("")
        for a, r in audit_errors:
            L.append(f"- {SERVERS.get(a['label'], a['label'])} /{a['api']} {r['id']} \"{r['name']}\": {r['reason']} "
                     f"(HTTP {r.get('httpStatus', '?')}, body `{(r.get('body') or '')[:300]}`)")
        L.append("")

    L += ["### schemathesis", ""]
    rows = []
    for r in runs:
        ops = r.get("operations") or {}
        cases = (r.get("test_cases") or {}).get("generated", "?")
        statuses = ", ".join(f"{k}: {v}" for k, v in r["statuses"].items()) or "none"
        kinds = ", ".join(f"{k} {v}" for k, v in r["kinds"].items()) or "none"
        bad = Counter(b["problem"] for b in r["bad"])
        rows.append([
            SERVERS.get(r["label"], r["label"]), f"/{r['api']}", "admin root token" if r["who"] == "admin" else "none",
            f"{ops.get('tested', '?')} of {ops.get('total', '?')}", r["answered"], cases, r["requests"], statuses, kinds,
            bad.get("HTTP 500", 0) + sum(v for k, v in bad.items() if k.startswith("HTTP 5") and k != "HTTP 500"),
            bad.get("no answer", 0), bad.get("internal error (Whoops)", 0), r["seconds"],
        ])
    L += table(["server", "API", "token", "operations tested", "operations answering with data", "test cases", "requests", "HTTP statuses",
                "responses", "5xx", "no answer", "Whoops", "seconds"], rows)
    L.append("")
    codes = Counter()
    for r in runs:
        codes.update({str(k): v for k, v in r["codes"].items()})
    if codes:
        L.append("Error codes in the responses (all runs): " + ", ".join(f"{k} ×{v}" for k, v in codes.most_common()) + ".")
        L.append("")
    groups = Counter()
    for r in runs:
        for g in r.get("failures") or []:
            groups[(g.get("code") or "", g["title"])] += g["count"]
    if groups:
        L.append("schemathesis's checks that failed (test cases by kind, all runs):")
        L.append("")
        for (code, title), count in groups.most_common():
            L.append(f"- {title}{f' ({code})' if code else ''}: {count}")
        L.append("")
    errs = Counter()
    for r in runs:
        for e in r.get("errors") or []:
            errs[e["title"]] += e["count"]
    if errs:
        L.append("schemathesis's errors (test cases it could not generate or run): "
                 + ", ".join(f"{k} ×{v}" for k, v in errs.most_common()) + ".")
        L.append("")

    L += ["### The servers afterwards", ""]
    for s in servers:
        L.append(f"- {SERVERS.get(s.get('label'), s.get('label'))}: `GET /status` → `{s.get('status')}`; "
                 f"`panicked` in the log: {len(s.get('panicked') or [])}.")
    for c in crashes:
        L.append(f"- {SERVERS.get(c['label'], c['label'])}: did not survive {c['step']} (`/status`: {c['status']}).")
    L.append("")

    L += ["## Open findings", ""]
    if not findings and not failures:
        L += ["None.", ""]
    for (problem, what), f in findings.items():
        b = f["first"]
        token_note = "<the admin root token>"
        L.append(f"### {problem}: {what}")
        L.append("")
        L.append(f"Responses: {f['count']} (" + ", ".join(f"{n} ×{c}" for n, c in f["runs"].items()) + "), at "
                 + ", ".join(f"`{n}` ×{c}" for n, c in f["fields"].items()) + ". The shortest request:")
        L.append("")
        L.append(md_code(curl_of(b, token_note)))
        L.append("")
        L.append(f"HTTP {b['status']}:")
        L.append("")
        L.append(md_code(b["response"][:1500]))
        logs = server_log_lines(results, f["label"], b.get("request_id"))
        if logs:
            L.append("")
            L.append("The server's log (the lines naming the request, or else its distinct internal errors):")
            L.append("")
            L.append(md_code("\n".join(x[:600] for x in logs)))
        L.append("")
    others = [x for x in failures if not any(x.startswith(f"{k[0]} on ") for k in findings)]
    if others and (findings or failures):
        L.append("Other failures of this run:")
        L.append("")
        L += [f"- {x}" for x in others]
        L.append("")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(L).rstrip() + "\n")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "brief":
        brief(sys.argv[2])
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["summary"])
    p.add_argument("results")
    p.add_argument("--out", default="")
    for name in ("date", "commit", "machine", "versions", "examples", "seed", "phases", "mode", "seconds"):
        p.add_argument(f"--{name}", default="?")
    return summary(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
