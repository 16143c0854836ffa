#!/usr/bin/env python3
"""Crash safety of the example service on one database (driven by bench/crash).

Starts the service, runs concurrent clients (nested mutations, NDF imports, file uploads),
SIGKILLs the server at a seeded random moment, restarts it on the same database and file store,
and checks after every restart:

- every acknowledged write is there with its values (and nothing else is: no phantom rows);
- every write in flight at the kill is there whole or not at all (a nested create, an import
  request, a delete with its cascade);
- the relations hold: required partners, to-one cardinality of the join tables, symmetric
  self relations stored both ways, both sides of every relation agree (through the API), and on
  PostgreSQL the partner copies agree with the join tables (through SQL);
- every File node's object downloads with the node's size and the uploaded bytes;
- the server answers /status within the bound.

Prints one line per kill on stderr and a JSON summary on stdout; exits 1 on any violation.
Python 3 standard library only.
"""

import argparse
import hashlib
import http.client
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import traceback

SERVICE = "bench"
SCENARIOS = ["mixed", "mutations", "imports", "uploads", "startup"]


def log(msg):
    print(f"bench/crash: {msg}", file=sys.stderr, flush=True)


class Transport(Exception):
    """The request did not get a complete response (the server is gone)."""

    def __init__(self, msg, sent):
        super().__init__(msg)
        self.sent = sent


# ------------------------------------------------------------------------------------------ HTTP
def request(port, method, path, body=None, headers=None, timeout=120):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    sent = False
    try:
        conn.connect()
        sent = True
        conn.request(method, path, body=body, headers=headers or {})
        res = conn.getresponse()
        data = res.read()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, data
    except ConnectionRefusedError as e:
        raise Transport(f"{method} {path}: {e}", False)
    except (OSError, http.client.HTTPException) as e:
        raise Transport(f"{method} {path}: {e!r}", sent)
    finally:
        conn.close()


class Enum(str):
    """A GraphQL enum value (rendered without quotes)."""


def lit(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Enum):
        return str(v)
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(lit(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {lit(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def args(d):
    return ", ".join(f"{k}: {lit(v)}" for k, v in d.items())


class Api:
    def __init__(self, port, token):
        self.port = port
        self.token = token

    def gql(self, query, timeout=120):
        """The response's JSON, or raises Transport; an HTTP status other than 200 is an error
        answer ({"errors": ...})."""
        body = json.dumps({"query": query}).encode()
        status, _, data = request(
            self.port, "POST", f"/simple/v1/{SERVICE}", body,
            {"content-type": "application/json", "authorization": f"Bearer {self.token}"},
            timeout)
        try:
            res = json.loads(data)
        except ValueError:
            res = None
        if status != 200 or not isinstance(res, dict):
            return {"errors": [{"http": status, "body": data[:500].decode(errors="replace")}]}
        return res

    def data(self, query):
        res = self.gql(query)
        if res.get("errors") or "data" not in res:
            raise RuntimeError(f"query failed: {query[:200]}: {json.dumps(res)[:800]}")
        return res["data"]

    def import_doc(self, doc):
        body = json.dumps(doc).encode()
        status, _, data = request(
            self.port, "POST", f"/simple/v1/{SERVICE}/import", body,
            {"content-type": "application/json", "authorization": f"Bearer {self.token}"})
        return status, data

    def upload(self, name, content):
        boundary = "svccrash" + hashlib.sha1(name.encode()).hexdigest()
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"data\"; "
                f"filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
        body = head + content + f"\r\n--{boundary}--\r\n".encode()
        status, _, data = request(
            self.port, "POST", f"/file/v1/{SERVICE}", body,
            {"content-type": f"multipart/form-data; boundary={boundary}"})
        return status, data


def system_token(port, master):
    """The service's `admin` root token, through the System API with a platform token."""
    def post(query, token=None):
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        status, _, data = request(port, "POST", "/system", json.dumps({"query": query}).encode(),
                                  headers)
        return json.loads(data)
    res = post('mutation { authenticateCustomer(input: { auth0IdToken: %s }) { token } }'
               % json.dumps(master))
    platform = res["data"]["authenticateCustomer"]["token"]
    res = post('{ viewer { project(id: "%s") { permanentAuthTokens { edges { node { name token } } } } } }'
               % SERVICE, platform)
    for edge in res["data"]["viewer"]["project"]["permanentAuthTokens"]["edges"]:
        if edge["node"]["name"] == "admin":
            return edge["node"]["token"]
    raise RuntimeError(f"no admin root token: {res}")


# ---------------------------------------------------------------------------------------- server
class Server:
    def __init__(self, a, port):
        self.a = a
        self.port = port
        self.proc = None
        self.starts = 0

    def start(self):
        self.starts += 1
        logf = open(self.a.log, "ab")
        logf.write(f"\n===== start {self.starts} =====\n".encode())
        logf.flush()
        env = dict(os.environ, SVC_MASTER_TOKEN=self.a.master_token)
        self.proc = subprocess.Popen(
            [self.a.binary, "serve", "--port", str(self.port), "--database-url", self.a.database_url,
             "--service-id", SERVICE, "--alias", SERVICE, "--file-store", self.a.file_store],
            stdout=logf, stderr=subprocess.STDOUT, env=env)
        logf.close()
        with open(self.a.pid_file, "w") as f:
            f.write(str(self.proc.pid))
        self.spawned = time.monotonic()

    def wait_status(self, bound):
        """Seconds from the spawn until /status answers OK; raises when it does not within bound."""
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode} during start-up "
                                   f"(log: {self.a.log}):\n{tail(self.a.log)}")
            try:
                status, _, data = request(self.port, "GET", "/status", timeout=5)
                if status == 200 and data.strip() == b"OK":
                    return time.monotonic() - self.spawned
            except Transport:
                pass
            if time.monotonic() - self.spawned > bound:
                raise RuntimeError(f"/status did not answer OK within {bound} s "
                                   f"(log: {self.a.log}):\n{tail(self.a.log)}")
            time.sleep(0.02)

    def answers(self):
        try:
            status, _, _ = request(self.port, "GET", "/status", timeout=1)
            return status == 200
        except Transport:
            return False

    def kill(self):
        """SIGKILL; the server's exit status when it had exited by itself before, else None."""
        if not self.proc:
            return None
        early = self.proc.poll()
        if early is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        return early

    def stop(self):
        """SIGTERM, then SIGKILL after 10 s; the exit status."""
        if not self.proc:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def tail(path, n=30):
    try:
        with open(path, "rb") as f:
            return b"".join(f.readlines()[-n:]).decode(errors="replace")
    except OSError:
        return ""


# ------------------------------------------------------------------------------------------- SQL
class Sql:
    """Read-only look-ups into the service's database: SQLite through the sqlite3 module,
    PostgreSQL through psql."""

    def __init__(self, url):
        self.url = url
        self.pg = url.startswith("postgres")

    def rows(self, query):
        if self.pg:
            out = subprocess.run(["psql", self.url, "-XAtq", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                                  "-c", query], capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"psql: {query}: {out.stderr.strip()}")
            return [line.split("\t") for line in out.stdout.splitlines()]
        path = self.url[len("sqlite://"):]
        conn = sqlite3.connect(path, timeout=30)
        try:
            return [[str(c) if c is not None else None for c in r] for r in conn.execute(query)]
        finally:
            conn.close()

    def one(self, query):
        return int(self.rows(query)[0][0])

    def execute(self, statement):
        """A write, for --inject-faults only (the server is down)."""
        if self.pg:
            self.rows(statement)
            return
        conn = sqlite3.connect(self.url[len("sqlite://"):], timeout=30)
        try:
            conn.execute(statement)
            conn.commit()
        finally:
            conn.close()


def inject_faults(sql, ctx):
    """Damage the database behind the server's back (it is down) as a crash could: an
    acknowledged comment lost, a post's author edge lost, a post's title changed. The next check
    must report each one; this is how --self-test shows the checks are not blind."""
    done = []
    # Nodes a mutation in flight at the kill may have changed are left alone: the check reports
    # such a node as that mutation's partial write, not as the injected fault.
    in_flight = {k for op in ctx.ops if op.state == "pending" for k in op.changes}
    comments = [k for k in ctx.world
                if k[0] == "comment" and ctx.ids.get(k) and k not in in_flight]
    posts = [k for k in ctx.world if k[0] == "post" and ctx.world[k]["author"]
             and ctx.ids.get(k) and k not in in_flight]
    if comments:
        sql.execute(f"DELETE FROM \"Comment\" WHERE \"id\" = '{ctx.ids[comments[0]]}'")
        done.append(f"deleted the row of {comments[0]}")
    if len(posts) >= 2:
        sql.execute(f"DELETE FROM \"_UserPosts\" WHERE \"B\" = '{ctx.ids[posts[0]]}'")
        done.append(f"deleted the author edge of {posts[0]}")
        sql.execute(f"UPDATE \"Post\" SET \"title\" = 'tampered' WHERE \"id\" = '{ctx.ids[posts[1]]}'")
        done.append(f"changed the title of {posts[1]}")
    return done


# Join tables: (table, A model, B model, A unique, B unique, symmetric, required column or None).
# A column is unique when the field on its model is to-one (each such node has one partner).
JOINS = [
    ("_UserPosts", "User", "Post", False, True, False, None),
    ("_UserProfile", "User", "Profile", True, True, False, "B"),
    ("_Follows", "User", "User", False, False, False, None),
    ("_Friends", "User", "User", False, False, True, None),
    ("_PostCategories", "Post", "Category", False, False, False, None),
    ("_PostComments", "Post", "Comment", False, True, False, "B"),
    ("_PinnedPost", "Post", "Category", True, True, False, None),
    ("_Twins", "Child", "Child", True, True, True, None),
]


def sql_checks(sql):
    """Violations found directly in the database's tables."""
    bad = []
    counts = []  # (what, query giving a count of bad rows), run as one statement

    def count(what, query):
        counts.append((what, query))

    for table, a_model, b_model, a_one, b_one, symmetric, required in JOINS:
        t = f'"{table}"'
        count(f"{table}.A names no {a_model}",
              f'SELECT count(*) FROM {t} j WHERE NOT EXISTS (SELECT 1 FROM "{a_model}" n WHERE n."id" = j."A")')
        count(f"{table}.B names no {b_model}",
              f'SELECT count(*) FROM {t} j WHERE NOT EXISTS (SELECT 1 FROM "{b_model}" n WHERE n."id" = j."B")')
        count(f"{table}: an edge stored twice",
              f'SELECT count(*) FROM (SELECT "A", "B" FROM {t} GROUP BY "A", "B" HAVING count(*) > 1) x')
        for col, one in (("A", a_one), ("B", b_one)):
            if one:
                count(f"{table}.{col}: a to-one node with several partners",
                      f'SELECT count(*) FROM (SELECT "{col}" FROM {t} GROUP BY "{col}" HAVING count(*) > 1) x')
        if symmetric:
            count(f"{table}: a symmetric edge stored one way only",
                  f'SELECT count(*) FROM {t} j WHERE NOT EXISTS (SELECT 1 FROM {t} k WHERE k."A" = j."B" AND k."B" = j."A")')
        if required:
            model = b_model if required == "B" else a_model
            count(f"{model} without its required partner in {table}",
                  f'SELECT count(*) FROM "{model}" n WHERE NOT EXISTS (SELECT 1 FROM {t} j WHERE j."{required}" = n."id")')
    if sql.pg:
        # Partner copies (runtime/src/migrate/partners.rs): column `__<join table>_<other>` on
        # the table of the unique join column holds the node's partner.
        cols = sql.rows("SELECT table_name, column_name FROM information_schema.columns "
                        "WHERE table_schema = current_schema() AND column_name LIKE '\\_\\_%'")
        joins = {j[0] for j in JOINS}
        seen = 0
        for table, col in cols:
            join, other = col[1:].rsplit("_", 1)
            if join not in joins or other not in ("A", "B"):
                continue
            seen += 1
            own = "B" if other == "A" else "A"
            count(f'partner copy "{table}"."{col}" differs from {join}',
                  f'SELECT count(*) FROM "{table}" t WHERE t."{col}" IS DISTINCT FROM '
                  f'(SELECT j."{other}" FROM "{join}" j WHERE j."{own}" = t."id")')
        if seen == 0:
            bad.append("sql: no partner copy columns found on PostgreSQL (expected some)")
    else:
        ok = sql.rows("PRAGMA integrity_check")
        if ok != [["ok"]]:
            bad.append(f"sql: PRAGMA integrity_check: {ok[:5]}")
        fk = sql.rows("PRAGMA foreign_key_check")
        if fk:
            bad.append(f"sql: PRAGMA foreign_key_check: {fk[:5]}")
    select = " UNION ALL ".join(f"SELECT {i}, ({q})" for i, (_, q) in enumerate(counts))
    for i, n in sql.rows(select):
        if int(n):
            what, q = counts[int(i)]
            bad.append(f"sql: {what}: {n} rows ({q})")
    return bad


# ----------------------------------------------------------------------------------------- world
# The expected state is a dict from keys to values; a key absent means no such node/edge:
#   ("user", email)      {"name", "age", "nicknames"}
#   ("post", slug)       {"title", "votes", "tags", "author": email | None}
#   ("comment", text)    {"post": slug}
#   ("profile", bio)     {"user": email}
#   ("category", name)   {"pinnedPost": slug | None}
#   ("child", name)      {"twin": name | None}
#   ("file", name)       {"size", "sha256"}
#   ("friends", a, b)    True (a < b)
#   ("follows", a, b)    True (a follows b)
# Each client owns the nodes it creates and writes only those (and edges from its own users), so
# the clients' writes never touch the same key and each one's last request is the only one of
# it that can be in flight at a kill.

class Op:
    __slots__ = ("kind", "client", "changes", "owner_keys", "state", "scenario", "detail")

    def __init__(self, kind, client, changes, owner_keys, scenario):
        self.kind = kind
        self.client = client
        self.changes = changes      # key -> value after the op (None: absent)
        self.owner_keys = owner_keys  # keys this op creates (owned by its client)
        self.state = "pending"
        self.scenario = scenario
        self.detail = None


class Ctx:
    def __init__(self, api, a):
        self.api = api
        self.a = a
        self.lock = threading.Lock()
        self.world = {}
        self.owner = {}
        self.ids = {}
        self.ops = []          # the ops of the current round
        self.errors = []       # request errors (not crash related; still violations)
        self.file_shas = {}    # file name -> sha256 of the bytes uploaded (also in flight)

    def begin(self, op):
        with self.lock:
            self.ops.append(op)
            for k in op.owner_keys:
                self.owner[k] = op.client

    def ack(self, op, ids=None):
        with self.lock:
            op.state = "acked"
            for k, v in op.changes.items():
                if v is None:
                    self.world.pop(k, None)
                else:
                    self.world[k] = v
            if ids:
                self.ids.update(ids)

    def fail(self, op, detail):
        with self.lock:
            op.state = "error"
            op.detail = detail
            self.errors.append(f"{op.kind} ({op.scenario}, client {op.client}) answered with an error: {detail}")

    def get(self, key):
        with self.lock:
            return self.world.get(key)


class View:
    """What one client knows of its own nodes at the start of a round (from the world)."""

    def __init__(self):
        self.users = []           # (email, id)
        self.posts = {}           # slug -> id
        self.comments = {}        # slug -> set of comment texts
        self.pinned = {}          # slug -> category name
        self.files = {}           # name -> id
        self.others = []          # (email, id) of other clients' users
        self.all_users = []       # (email, id)


def views(ctx, clients):
    vs = [View() for _ in range(clients)]
    with ctx.lock:
        for key, value in ctx.world.items():
            kind = key[0]
            c = ctx.owner.get(key)
            id_ = ctx.ids.get(key)
            if kind == "user":
                for i, v in enumerate(vs):
                    v.all_users.append((key[1], id_))
                    if i == c:
                        v.users.append((key[1], id_))
                    else:
                        v.others.append((key[1], id_))
            elif c is None or c >= clients:
                continue
            elif kind == "post":
                vs[c].posts[key[1]] = id_
            elif kind == "file":
                vs[c].files[key[1]] = id_
        for key, value in ctx.world.items():
            if key[0] == "comment":
                c = ctx.owner.get(("post", value["post"]))
                if c is not None and c < clients:
                    vs[c].comments.setdefault(value["post"], set()).add(key[1])
            elif key[0] == "category" and value["pinnedPost"]:
                c = ctx.owner.get(("post", value["pinnedPost"]))
                if c is not None and c < clients:
                    vs[c].pinned[value["pinnedPost"]] = key[1]
    for v in vs:
        v.users.sort()
        v.others.sort()
        v.all_users.sort()
    return vs


# --------------------------------------------------------------------------------------- clients
def words(rng, n):
    return [rng.choice(["red", "blue", "green", "alpha", "beta", "crash", "kill", "wal", "fsync",
                        "commit", "edge", "node"]) for _ in range(n)]


class Client:
    def __init__(self, ctx, index, role, round_no, scenario, view, seed):
        self.ctx = ctx
        self.api = ctx.api
        self.i = index
        self.role = role
        self.round = round_no
        self.scenario = scenario
        self.v = view
        self.rng = random.Random(f"{seed}/{round_no}/{index}")
        self.n = 0
        self.counts = {}
        self.import_batch = None
        self.end = None

    def tag(self):
        self.n += 1
        return f"r{self.round}c{self.i}n{self.n}"

    def run(self, stop):
        try:
            while not stop.is_set():
                if self.role == "mutations":
                    op = self.mutation()
                elif self.role == "imports":
                    op = self.import_step()
                else:
                    op = self.upload_step()
                if op is False:
                    return
        except Exception:  # a bug of this script: report it loudly
            self.ctx.errors.append(f"client {self.i} crashed: {traceback.format_exc()}")

    # Sends `op` through `send()`, which returns (ok, ids, detail). False when the server is gone.
    def do(self, op, send):
        self.ctx.begin(op)
        try:
            ok, ids, detail = send()
        except Transport as e:
            if not e.sent:
                op.state = "unsent"
            self.end = f"{op.kind}: {e}"
            return False
        if ok:
            self.ctx.ack(op, ids)
            self.counts[op.kind] = self.counts.get(op.kind, 0) + 1
        else:
            self.ctx.fail(op, detail)
        return True

    def mutate(self, op, query, on_data):
        def send():
            res = self.api.gql(query)
            if res.get("errors") or not res.get("data"):
                return False, None, f"{query[:300]} -> {json.dumps(res)[:600]}"
            return True, on_data(res["data"]), None
        return self.do(op, send)

    # ---------------------------------------------------------------- nested mutations
    def mutation(self):
        rng = self.rng
        kinds = ["create_user"] * 3 + ["create_post"] * 3 + ["update_post"] * 3 + \
            ["create_comment"] * 2 + ["add_friend", "add_follow", "delete_post", "create_category",
                                      "create_child"]
        for _ in range(10):
            kind = rng.choice(kinds)
            op = getattr(self, kind)()
            if op is not None:
                return op
        return self.create_user()

    def new_post_input(self, tag, i, author_email):
        slug = f"p-{tag}-{i}"
        title = " ".join(words(self.rng, 3))
        votes = self.rng.randint(0, 1000)
        tags = words(self.rng, self.rng.randint(0, 3))
        comments = [f"c-{tag}-{i}-{j}" for j in range(self.rng.randint(0, 2))]
        inp = {"slug": slug, "title": title, "votes": votes, "tags": tags}
        if comments:
            inp["comments"] = [{"text": t} for t in comments]
        changes = {("post", slug): {"title": title, "votes": votes, "tags": tags, "author": author_email}}
        for t in comments:
            changes[("comment", t)] = {"post": slug}
        return inp, changes

    def create_user(self):
        rng = self.rng
        tag = self.tag()
        email = f"u-{tag}@crash.example"
        name = " ".join(words(rng, 2))
        age = rng.randint(1, 99)
        nicknames = words(rng, rng.randint(0, 3))
        inp = {"email": email, "name": name, "age": age, "nicknames": nicknames}
        changes = {("user", email): {"name": name, "age": age, "nicknames": nicknames}}
        if rng.random() < 0.7:
            bio = f"bio-{tag}"
            inp["profile"] = {"bio": bio}
            changes[("profile", bio)] = {"user": email}
        posts = []
        for i in range(rng.randint(0, 3)):
            p, ch = self.new_post_input(tag, i, email)
            posts.append(p)
            changes.update(ch)
        if posts:
            inp["posts"] = posts
        if self.v.others and rng.random() < 0.5:
            friends = rng.sample(self.v.others, min(2, len(self.v.others)))
            inp["friendsIds"] = [id_ for _, id_ in friends]
            for e, _ in friends:
                changes[("friends",) + tuple(sorted((email, e)))] = True
        if self.v.all_users and rng.random() < 0.5:
            following = rng.sample(self.v.all_users, min(2, len(self.v.all_users)))
            inp["followingIds"] = [id_ for _, id_ in following]
            for e, _ in following:
                changes[("follows", email, e)] = True
        op = Op("create_user", self.i, changes, [k for k in changes if k[0] not in ("friends", "follows")],
                self.scenario)
        query = f"mutation {{ createUser({args(inp)}) {{ id posts {{ id slug }} }} }}"

        def on_data(d):
            u = d["createUser"]
            self.v.users.append((email, u["id"]))
            ids = {("user", email): u["id"]}
            for p in u["posts"]:
                self.v.posts[p["slug"]] = p["id"]
                ids[("post", p["slug"])] = p["id"]
            for p in posts:
                if "comments" in p:
                    self.v.comments[p["slug"]] = {c["text"] for c in p["comments"]}
            return ids
        return self.mutate(op, query, on_data)

    def create_post(self):
        rng = self.rng
        tag = self.tag()
        if self.v.users and rng.random() < 0.7:
            email, uid = rng.choice(self.v.users)
            inp, changes = self.new_post_input(tag, 0, email)
            inp["authorId"] = uid
            new_user = None
        else:
            email = f"a-{tag}@crash.example"
            name = " ".join(words(rng, 2))
            inp, changes = self.new_post_input(tag, 0, email)
            inp["author"] = {"email": email, "name": name}
            changes[("user", email)] = {"name": name, "age": None, "nicknames": []}
            new_user = email
        slug = inp["slug"]
        op = Op("create_post", self.i, changes, [k for k in changes], self.scenario)
        query = f"mutation {{ createPost({args(inp)}) {{ id author {{ id }} }} }}"

        def on_data(d):
            p = d["createPost"]
            self.v.posts[slug] = p["id"]
            if "comments" in inp:
                self.v.comments[slug] = {c["text"] for c in inp["comments"]}
            ids = {("post", slug): p["id"]}
            if new_user:
                self.v.users.append((new_user, p["author"]["id"]))
                ids[("user", new_user)] = p["author"]["id"]
            return ids
        return self.mutate(op, query, on_data)

    def update_post(self):
        if not self.v.posts:
            return None
        rng = self.rng
        slug = rng.choice(sorted(self.v.posts))
        old = self.ctx.get(("post", slug))
        if old is None:
            return None
        new = dict(old, title=" ".join(words(rng, 3)) + f" {self.tag()}", votes=rng.randint(0, 1000),
                   tags=words(rng, rng.randint(0, 4)))
        op = Op("update_post", self.i, {("post", slug): new}, [], self.scenario)
        query = (f"mutation {{ updatePost({args({'id': self.v.posts[slug], 'title': new['title'], 'votes': new['votes'], 'tags': new['tags']})})"
                 f" {{ id }} }}")
        return self.mutate(op, query, lambda d: None)

    def delete_post(self):
        if not self.v.posts:
            return None
        slug = self.rng.choice(sorted(self.v.posts))
        changes = {("post", slug): None}
        for t in self.v.comments.get(slug, ()):
            changes[("comment", t)] = None
        cat = self.v.pinned.get(slug)
        if cat:
            changes[("category", cat)] = {"pinnedPost": None}
        op = Op("delete_post", self.i, changes, [], self.scenario)
        pid = self.v.posts[slug]
        query = f"mutation {{ deletePost(id: {lit(pid)}) {{ id }} }}"

        def on_data(d):
            self.v.posts.pop(slug, None)
            self.v.comments.pop(slug, None)
            self.v.pinned.pop(slug, None)
            return None
        return self.mutate(op, query, on_data)

    def create_comment(self):
        if not self.v.posts:
            return None
        slug = self.rng.choice(sorted(self.v.posts))
        text = f"c-{self.tag()}"
        op = Op("create_comment", self.i, {("comment", text): {"post": slug}}, [("comment", text)],
                self.scenario)
        query = f"mutation {{ createComment(text: {lit(text)}, postId: {lit(self.v.posts[slug])}) {{ id }} }}"

        def on_data(d):
            self.v.comments.setdefault(slug, set()).add(text)
            return {("comment", text): d["createComment"]["id"]}
        return self.mutate(op, query, on_data)

    def add_friend(self):
        if not self.v.users or not self.v.others:
            return None
        email, uid = self.rng.choice(self.v.users)
        # Only the owner of the smaller email adds an edge between two clients' users.
        later = [(e, i) for e, i in self.v.others if e > email and i]
        if not later or not uid:
            return None
        other, oid = self.rng.choice(later)
        op = Op("add_friend", self.i, {("friends", email, other): True}, [], self.scenario)
        query = (f"mutation {{ addToFriends(friends1UserId: {lit(uid)}, friends2UserId: {lit(oid)})"
                 f" {{ friends1User {{ id }} }} }}")
        return self.mutate(op, query, lambda d: None)

    def add_follow(self):
        if not self.v.users or not self.v.all_users:
            return None
        email, uid = self.rng.choice(self.v.users)
        other, oid = self.rng.choice(self.v.all_users)
        if other == email or not uid or not oid:
            return None
        op = Op("add_follow", self.i, {("follows", email, other): True}, [], self.scenario)
        query = (f"mutation {{ addToFollows(followersUserId: {lit(uid)}, followingUserId: {lit(oid)})"
                 f" {{ followingUser {{ id }} }} }}")
        return self.mutate(op, query, lambda d: None)

    def create_category(self):
        free = [s for s in sorted(self.v.posts) if s not in self.v.pinned]
        if not free:
            return None
        slug = self.rng.choice(free)
        name = f"cat-{self.tag()}"
        op = Op("create_category", self.i, {("category", name): {"pinnedPost": slug}},
                [("category", name)], self.scenario)
        query = (f"mutation {{ createCategory(name: {lit(name)}, position: {self.rng.randint(0, 9)}, "
                 f"pinnedPostId: {lit(self.v.posts[slug])}) {{ id }} }}")

        def on_data(d):
            self.v.pinned[slug] = name
            return {("category", name): d["createCategory"]["id"]}
        return self.mutate(op, query, on_data)

    def create_child(self):
        tag = self.tag()
        a, b = f"kid-{tag}-a", f"kid-{tag}-b"
        changes = {("child", a): {"twin": b}, ("child", b): {"twin": a}}
        op = Op("create_child", self.i, changes, list(changes), self.scenario)
        query = f"mutation {{ createChild(name: {lit(a)}, twin: {{ name: {lit(b)} }}) {{ id }} }}"
        return self.mutate(op, query, lambda d: {("child", a): d["createChild"]["id"]})

    # ---------------------------------------------------------------- NDF imports
    def import_step(self):
        """A batch is three requests: its nodes, then their lists, then their edges."""
        rng = self.rng
        b = self.import_batch
        if b is None or b["stage"] == "done":
            tag = self.tag()
            size = rng.randint(1, self.ctx.a.import_max)
            n_users = max(1, size // 10)
            users = [(f"i{tag}u{k}", f"iu-{tag}-{k}@crash.example", " ".join(words(rng, 2)))
                     for k in range(n_users)]
            posts = [(f"i{tag}p{k}", f"ip-{tag}-{k}", " ".join(words(rng, 3)), rng.randint(0, 99))
                     for k in range(size - n_users)]
            b = self.import_batch = {"tag": tag, "users": users, "posts": posts, "stage": "nodes"}
            values = [{"_typeName": "User", "id": i, "email": e, "name": n} for i, e, n in users]
            values += [{"_typeName": "Post", "id": i, "slug": s, "title": t, "votes": v}
                       for i, s, t, v in posts]
            changes = {("user", e): {"name": n, "age": None, "nicknames": []} for _, e, n in users}
            changes.update({("post", s): {"title": t, "votes": v, "tags": [], "author": None}
                            for _, s, t, v in posts})
            ids = {("user", e): i for i, e, _ in users}
            ids.update({("post", s): i for i, s, _, _ in posts})
            doc = {"valueType": "nodes", "values": values}
            op = Op("import_nodes", self.i, changes, list(changes), self.scenario)
            next_stage = "lists"
        elif b["stage"] == "lists":
            values, changes = [], {}
            for i, s, _, _ in b["posts"]:
                tags = words(rng, rng.randint(1, 3))
                values.append({"_typeName": "Post", "id": i, "tags": tags})
                changes[("post", s)] = dict(self.ctx.get(("post", s)), tags=tags)
            for i, e, _ in b["users"]:
                nick = words(rng, rng.randint(1, 2))
                values.append({"_typeName": "User", "id": i, "nicknames": nick})
                changes[("user", e)] = dict(self.ctx.get(("user", e)), nicknames=nick)
            doc = {"valueType": "lists", "values": values}
            op = Op("import_lists", self.i, changes, [], self.scenario)
            ids = None
            next_stage = "relations"
        else:
            values, changes = [], {}
            users = b["users"]
            for k, (i, s, _, _) in enumerate(b["posts"]):
                uid, email, _ = users[k % len(users)]
                values.append([{"_typeName": "Post", "id": i, "fieldName": "author"},
                               {"_typeName": "User", "id": uid, "fieldName": "posts"}])
                changes[("post", s)] = dict(self.ctx.get(("post", s)), author=email)
            for (u1, e1, _), (u2, e2, _) in zip(users, users[1:]):
                values.append([{"_typeName": "User", "id": u2, "fieldName": "friends"},
                               {"_typeName": "User", "id": u1, "fieldName": "friends"}])
                changes[("friends",) + tuple(sorted((e1, e2)))] = True
            doc = {"valueType": "relations", "values": values}
            op = Op("import_relations", self.i, changes, [], self.scenario)
            ids = None
            next_stage = "done"
        if not doc["values"]:
            b["stage"] = next_stage
            return True

        def send():
            status, data = self.api.import_doc(doc)
            if status == 200 and data.strip() == b"[]":
                return True, ids, None
            return False, None, f"{doc['valueType']} import of {len(doc['values'])} elements -> HTTP {status} {data[:600]!r}"
        sent = self.do(op, send)
        if op.state == "acked":
            b["stage"] = next_stage
        elif op.state == "error":
            b["stage"] = "done"
        return sent

    # ---------------------------------------------------------------- file uploads
    def upload_step(self):
        rng = self.rng
        if self.v.files and rng.random() < 0.1:
            name = rng.choice(sorted(self.v.files))
            fid = self.v.files[name]
            if fid:
                op = Op("delete_file", self.i, {("file", name): None}, [], self.scenario)

                def on_data(d):
                    self.v.files.pop(name, None)
                    return None
                return self.mutate(op, f"mutation {{ deleteFile(id: {lit(fid)}) {{ id }} }}", on_data)
        tag = self.tag()
        name = f"f-{tag}.bin"
        r = rng.random()
        if r < 0.70:
            size = rng.randint(0, 64 * 1024)
        elif r < 0.97:
            size = rng.randint(64 * 1024, 1024 * 1024)
        else:
            size = rng.randint(5 * 1024 * 1024, 7 * 1024 * 1024)  # two multipart parts
        # os.urandom leaves the interpreter lock free (a seeded generator held it, so that the
        # clients spent their time in Python and the server was often idle at a kill).
        content = os.urandom(size)
        sha = hashlib.sha256(content).hexdigest()
        with self.ctx.lock:
            self.ctx.file_shas[name] = sha
        op = Op("upload", self.i, {("file", name): {"size": size, "sha256": sha}}, [("file", name)],
                self.scenario)

        def send():
            status, data = self.api.upload(name, content)
            try:
                res = json.loads(data)
            except ValueError:
                res = None
            if status != 200 or not isinstance(res, dict) or res.get("size") != size or res.get("name") != name:
                return False, None, f"upload of {name} ({size} bytes) -> HTTP {status} {data[:300]!r}"
            self.v.files[name] = res["id"]
            return True, {("file", name): res["id"], ("secret", name): res["secret"]}, None
        return self.do(op, send)


# ----------------------------------------------------------------------------------------- check
def dump(api, name, fields):
    out, skip = [], 0
    while True:
        rows = api.data(f"{{ {name}(first: 1000, skip: {skip}, orderBy: id_ASC) {{ {fields} }} }}")[name]
        out += rows
        if len(rows) < 1000:
            return out
        skip += 1000


def actual_world(ctx, port, store_dir, verified, full_download):
    """The state the API shows, in the world's keys, its ids, and structural violations."""
    api = ctx.api
    bad = []
    world, ids = {}, {}
    users = dump(api, "allUsers", "id email name age nicknames profile { id } posts { id } "
                 "friends { id } followers { id } following { id }")
    posts = dump(api, "allPosts", "id slug title votes tags author { id } comments { id } pinnedIn { id }")
    comments = dump(api, "allComments", "id text post { id }")
    profiles = dump(api, "allProfiles", "id bio user { id }")
    categories = dump(api, "allCategories", "id name pinnedPost { id }")
    children = dump(api, "allChildren", "id name twin { id }")
    files = dump(api, "allFiles", "id name size secret url")
    email = {u["id"]: u["email"] for u in users}
    slug = {p["id"]: p["slug"] for p in posts}
    child = {c["id"]: c["name"] for c in children}

    def ref(mapping, node):
        return mapping.get(node["id"], f"<unknown {node['id']}>") if node else None

    following, followers = set(), set()
    for u in users:
        k = ("user", u["email"])
        world[k] = {"name": u["name"], "age": u["age"], "nicknames": u["nicknames"] or []}
        ids[k] = u["id"]
        for f in u["friends"]:
            world[("friends",) + tuple(sorted((u["email"], ref(email, f))))] = True
        for f in u["following"]:
            following.add((u["email"], ref(email, f)))
            world[("follows", u["email"], ref(email, f))] = True
        for f in u["followers"]:
            followers.add((ref(email, f), u["email"]))
    friends = {(u["email"], ref(email, f)) for u in users for f in u["friends"]}
    for a, b in friends:
        if (b, a) not in friends:
            bad.append(f"api: {a} has friend {b} but not the other way round")
    for e in sorted(following ^ followers)[:20]:
        bad.append(f"api: follows edge {e} seen from one side only (following vs followers)")
    author_of = {}
    for u in users:
        for p in u["posts"]:
            author_of[p["id"]] = u["email"]
    pinned_in = {}
    for p in posts:
        k = ("post", p["slug"])
        author = ref(email, p["author"])
        world[k] = {"title": p["title"], "votes": p["votes"], "tags": p["tags"] or [], "author": author}
        ids[k] = p["id"]
        if author_of.get(p["id"]) != author:
            bad.append(f"api: post {p['slug']} has author {author} but User.posts says {author_of.get(p['id'])}")
        if p["pinnedIn"]:
            pinned_in[p["pinnedIn"]["id"]] = p["slug"]
    post_comments = {c["id"]: p["slug"] for p in posts for c in p["comments"]}
    for c in comments:
        k = ("comment", c["text"])
        if c["post"] is None:
            bad.append(f"api: comment {c['text']} has no post (a required relation)")
        world[k] = {"post": ref(slug, c["post"])}
        ids[k] = c["id"]
        if post_comments.get(c["id"]) != ref(slug, c["post"]):
            bad.append(f"api: comment {c['text']} on {ref(slug, c['post'])} but Post.comments says {post_comments.get(c['id'])}")
    user_profile = {u["profile"]["id"]: u["email"] for u in users if u["profile"]}
    for p in profiles:
        k = ("profile", p["bio"])
        if p["user"] is None:
            bad.append(f"api: profile {p['bio']} has no user (a required relation)")
        world[k] = {"user": ref(email, p["user"])}
        ids[k] = p["id"]
        if user_profile.get(p["id"]) != ref(email, p["user"]):
            bad.append(f"api: profile {p['bio']} of {ref(email, p['user'])} but User.profile says {user_profile.get(p['id'])}")
    for c in categories:
        k = ("category", c["name"])
        world[k] = {"pinnedPost": ref(slug, c["pinnedPost"])}
        ids[k] = c["id"]
        if pinned_in.get(c["id"]) != ref(slug, c["pinnedPost"]):
            bad.append(f"api: category {c['name']} pins {ref(slug, c['pinnedPost'])} but Post.pinnedIn says {pinned_in.get(c['id'])}")
    twins = {}
    for c in children:
        k = ("child", c["name"])
        world[k] = {"twin": ref(child, c["twin"])}
        ids[k] = c["id"]
        twins[c["name"]] = ref(child, c["twin"])
    for a, b in twins.items():
        if b is not None and twins.get(b) != a:
            bad.append(f"api: child {a}'s twin is {b}, whose twin is {twins.get(b)}")
    # Files: new ones (and all at the end) downloaded whole and hashed; the others' objects
    # checked in the store directory (same size).
    downloads = 0
    secrets = set()
    for f in files:
        k = ("file", f["name"])
        ids[k] = f["id"]
        ids[("secret", f["name"])] = f["secret"]
        secrets.add(f["secret"])
        if not f["url"].endswith(f"/files/v1/{SERVICE}/{f['secret']}"):
            bad.append(f"api: file {f['name']} has url {f['url']}")
        if f["id"] in verified and not full_download:
            path = os.path.join(store_dir, SERVICE, f["secret"])
            try:
                on_disk = os.path.getsize(path)
            except OSError:
                on_disk = None
            if on_disk != f["size"]:
                bad.append(f"file {f['name']} ({f['id']}): the stored object {path} has {on_disk} bytes, the node says {f['size']}")
            sha = verified[f["id"]]
        else:
            status, headers, body = request(port, "GET", f"/files/v1/{SERVICE}/{f['secret']}")
            downloads += 1
            if status != 200:
                bad.append(f"file {f['name']} ({f['id']}): GET /files/v1/{SERVICE}/{f['secret']} -> HTTP {status}")
                sha = f"<HTTP {status}>"
            else:
                if len(body) != f["size"]:
                    bad.append(f"file {f['name']} ({f['id']}): downloads {len(body)} bytes, the node says {f['size']}")
                sha = hashlib.sha256(body).hexdigest()
                verified[f["id"]] = sha
        world[k] = {"size": f["size"], "sha256": sha}
    # Objects without a node (an upload killed between its object and its node, or a delete
    # between its commit and the object's removal) are space, not data: counted, not failed.
    orphans = staging = 0
    sdir = os.path.join(store_dir, SERVICE)
    if os.path.isdir(sdir):
        for entry in os.listdir(sdir):
            if "#" in entry:
                staging += 1
            elif entry not in secrets and os.path.isfile(os.path.join(sdir, entry)):
                orphans += 1
    stats = {"nodes": len(users) + len(posts) + len(comments) + len(profiles) + len(categories)
             + len(children) + len(files), "files": len(files), "downloads": downloads,
             "orphan_objects": orphans, "staging_leftovers": staging}
    return world, ids, bad, stats


def describe(v):
    return "absent" if v is None else json.dumps(v, sort_keys=True)


def check(ctx, port, store_dir, sql, verified, pending, full_download=False):
    """Compares the database with the expected world (after resolving the writes in flight);
    returns (violations, resolution counts, stats). The world becomes what was found."""
    actual, ids, bad, stats = actual_world(ctx, port, store_dir, verified, full_download)
    resolved = {"committed": 0, "not committed": 0}
    by_kind = {}
    world = ctx.world
    for op in pending:
        after = all(actual.get(k) == v for k, v in op.changes.items())
        before = all(actual.get(k) == world.get(k) for k in op.changes)
        if after:
            outcome = "committed"
            for k, v in op.changes.items():
                if v is None:
                    world.pop(k, None)
                else:
                    world[k] = v
        elif before:
            outcome = "not committed"
        else:
            outcome = "partial"
            lines = []
            for k, v in sorted(op.changes.items(), key=lambda kv: str(kv[0])):
                got = actual.get(k)
                state = "as after" if got == v else "as before" if got == world.get(k) else "neither"
                lines.append(f"    {k}: before {describe(world.get(k))}, after {describe(v)}, found {describe(got)} ({state})")
            bad.append(f"partial write: {op.kind} in flight at the kill (client {op.client}, {op.scenario}) "
                       f"is neither whole nor absent:\n" + "\n".join(lines[:40]))
            for k in op.changes:
                if actual.get(k) is None:
                    world.pop(k, None)
                else:
                    world[k] = actual[k]
        resolved[outcome] = resolved.get(outcome, 0) + 1
        by_kind.setdefault(op.kind, {}).setdefault(outcome, 0)
        by_kind[op.kind][outcome] += 1
    mismatches = 0
    for k in sorted(set(world) | set(actual), key=str):
        e, g = world.get(k), actual.get(k)
        if e != g:
            mismatches += 1
            if mismatches <= 30:
                what = ("lost (acknowledged, missing)" if g is None else
                        "phantom (never acknowledged, not in flight)" if e is None else "wrong value")
                bad.append(f"{what}: {k}: expected {describe(e)}, found {describe(g)}")
    if mismatches > 30:
        bad.append(f"... {mismatches - 30} more differences")
    bad += sql_checks(sql)
    # The found state is the baseline from now on (a violation is reported once).
    ctx.world = actual
    ctx.ids = ids
    return bad, resolved, by_kind, stats


# ------------------------------------------------------------------------------------------ main
def roles(scenario):
    return {
        "mutations": ["mutations"] * 6,
        "imports": ["imports"] * 2,
        "uploads": ["uploads"] * 4,
        "mixed": ["mutations"] * 3 + ["imports"] + ["uploads"] * 2,
        "startup": [],
    }[scenario]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--database-url", required=True)
    p.add_argument("--file-store", required=True)
    p.add_argument("--label", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--pid-file", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--kills", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--restart-bound", type=float, default=30.0)
    p.add_argument("--min-load", type=float, default=0.2)
    p.add_argument("--max-load", type=float, default=2.5)
    p.add_argument("--import-max", type=int, default=150)
    p.add_argument("--scenarios", default=",".join(SCENARIOS))
    p.add_argument("--inject-faults", action="store_true")
    a = p.parse_args()
    a.master_token = os.environ["SVC_BENCH_MASTER_TOKEN"]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    scenarios = [s for s in a.scenarios.split(",") if s]
    for s in scenarios:
        if s not in SCENARIOS:
            sys.exit(f"unknown scenario {s}")
    rng = random.Random(f"{a.seed}/{a.label}")
    server = Server(a, a.port)
    sql = Sql(a.database_url)
    violations = []
    table = {s: {"kills": 0, "acked": 0, "in_flight": 0, "committed": 0, "not_committed": 0,
                 "partial": 0, "violations": 0, "failed_kills": 0, "restart_max_s": 0.0, "restart_sum_s": 0.0}
             for s in scenarios}
    acked_kinds, flight_kinds = {}, {}
    restarts = []
    verified = {}
    started = time.monotonic()
    try:
        server.start()
        first = server.wait_status(a.restart_bound)
        log(f"{a.label}: the server answers /status after {first:.2f} s (fresh database)")
        token = system_token(a.port, a.master_token)
        ctx = Ctx(Api(a.port, token), a)
        bad, _, _, _ = check(ctx, a.port, a.file_store, sql, verified, [])
        violations += [f"before any kill: {b}" for b in bad]
        order = []
        for k in range(a.kills):
            if not order:
                order = list(scenarios)
                rng.shuffle(order)
            scenario = order.pop()
            row = table[scenario]
            delay = rng.uniform(a.min_load, a.max_load)
            ctx.ops = []
            ctx.errors = []
            round_bad = []
            note = ""
            t0 = time.monotonic()
            if scenario == "startup":
                # A kill while the server starts on the existing database.
                server.kill()
                server.start()
                # Up to a little past the last restart's time: about half land before /status.
                time.sleep(rng.uniform(0.0, max(0.05, 1.2 * (restarts[-1] if restarts else first))))
                up = server.answers()
                server.kill()
                note = "after /status answered" if up else "before /status answered"
                clients = []
            else:
                vs = views(ctx, len(roles(scenario)))
                clients = [Client(ctx, i, role, k, scenario, vs[i], a.seed)
                           for i, role in enumerate(roles(scenario))]
                stop = threading.Event()
                threads = [threading.Thread(target=c.run, args=(stop,), daemon=True) for c in clients]
                for t in threads:
                    t.start()
                time.sleep(delay)
                early = server.kill()
                stop.set()
                if early is not None:
                    round_bad.append(f"the server had exited by itself (status {early}) before "
                                     f"the kill; log {a.log}")
                for t in threads:
                    t.join(180)
                    if t.is_alive():
                        round_bad.append("a client did not finish within 180 s after the kill")
            load_s = time.monotonic() - t0
            acked = [op for op in ctx.ops if op.state == "acked"]
            pending = [op for op in ctx.ops if op.state == "pending"]
            for op in acked:
                acked_kinds[op.kind] = acked_kinds.get(op.kind, 0) + 1
            for op in pending:
                flight_kinds.setdefault(op.kind, {"in_flight": 0, "committed": 0})
                flight_kinds[op.kind]["in_flight"] += 1
            if a.inject_faults and k == 0:
                for d in inject_faults(sql, ctx):
                    log(f"{a.label}: injected fault: {d}")
            server.start()
            try:
                restart = server.wait_status(a.restart_bound)
            except RuntimeError as e:
                violations.append(f"kill {k + 1} ({scenario}): the server did not restart cleanly: {e}")
                row["violations"] += 1
                row["failed_kills"] += 1
                row["kills"] += 1
                raise
            restarts.append(restart)
            row["restart_max_s"] = max(row["restart_max_s"], restart)
            row["restart_sum_s"] += restart
            tc = time.monotonic()
            bad, resolved, by_kind, stats = check(ctx, a.port, a.file_store, sql, verified, pending)
            bad = round_bad + ctx.errors + bad
            check_s = time.monotonic() - tc
            for kind, outcomes in by_kind.items():
                flight_kinds[kind]["committed"] += outcomes.get("committed", 0)
            row["kills"] += 1
            row["acked"] += len(acked)
            row["in_flight"] += len(pending)
            row["committed"] += resolved.get("committed", 0)
            row["not_committed"] += resolved.get("not committed", 0)
            row["partial"] += resolved.get("partial", 0)
            row["violations"] += len(bad)
            row["failed_kills"] += 1 if bad else 0
            violations += [f"kill {k + 1} ({scenario}): {b}" for b in bad]
            flight = ", ".join(f"{op.kind}" for op in pending) or "none"
            if len(pending) < len(clients):
                for c in clients:
                    log(f"  client {c.i} ({c.role}) stopped at: {c.end}")
            log(f"{a.label}: kill {k + 1}/{a.kills} ({scenario}{', ' + note if note else ''}) after "
                f"{load_s:.2f} s: {len(acked)} writes acknowledged, in flight: {flight} -> "
                f"{resolved.get('committed', 0)} committed, {resolved.get('not committed', 0)} not; "
                f"restart {restart:.2f} s; check {check_s:.1f} s ({stats['nodes']} nodes, "
                f"{stats['files']} files): {'OK' if not bad else f'{len(bad)} VIOLATIONS'}")
            for b in bad[:10]:
                log(f"  {b}")
        # The last check downloads every file again; then a clean stop.
        bad, _, _, stats = check(ctx, a.port, a.file_store, sql, verified, [], full_download=True)
        violations += [f"final check: {b}" for b in bad]
        log(f"{a.label}: final check ({stats['nodes']} nodes, {stats['files']} files downloaded "
            f"whole, {stats['orphan_objects']} objects without a node, {stats['staging_leftovers']} "
            f"staging leftovers): {'OK' if not bad else f'{len(bad)} VIOLATIONS'}")
        for b in bad[:10]:
            log(f"  {b}")
        code = server.stop()
        if code not in (0,):
            violations.append(f"the server exited with {code} on SIGTERM")
    except Exception as e:
        violations.append(f"aborted: {e}" if isinstance(e, RuntimeError) else
                          f"aborted: {traceback.format_exc()}")
        stats = {}
    finally:
        server.kill()
    summary = {
        "label": a.label, "seed": a.seed, "kills": sum(r["kills"] for r in table.values()),
        "seconds": round(time.monotonic() - started, 1), "scenarios": table,
        "acked_by_kind": acked_kinds, "in_flight_by_kind": flight_kinds,
        "restart_max_s": round(max(restarts, default=0), 3),
        "restart_mean_s": round(sum(restarts) / len(restarts), 3) if restarts else 0,
        "final": stats, "violations": violations,
    }
    print(json.dumps(summary))
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
