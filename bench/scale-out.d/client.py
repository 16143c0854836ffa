"""The load and the checks of bench/scale-out: three instances of the example service behind
haproxy, one PostgreSQL database, one S3 store.

Run by bench/scale-out (which starts everything and passes the addresses); reads nothing else.
Phases:

1. agreement: the service id, the root tokens, a platform token and a node token issued by one
   instance are checked on each of the others (addressed directly); a file uploaded through each
   instance is downloaded and resized through each of the others;
2. subscribers connect through haproxy (both WebSocket protocols, anonymous and admin), each
   made sure to be live by a probe mutation it sees;
3. mixed load through haproxy (reads, creates, updates, uploads, downloads, image variants, NDF
   imports) while one instance is SIGKILLed part-way through, with one more NDF import sent
   straight to it just before; subscribers whose socket dies reconnect through haproxy;
4. checks through the survivors: every acknowledged mutation, upload and import is there, and
   the import cut off by the kill left all of its document or nothing; every subscriber got
   every event exactly once while it was subscribed; every failed request was in flight on the
   killed instance (haproxy's log says which server each request went to).

Prints the figures and PASS or FAIL; writes a JSON summary with --out; exits 1 on FAIL.
"""

import argparse
import asyncio
import csv
import hashlib
import io
import json
import os
import random
import signal
import struct
import sys
import time
import zlib

import aiohttp

SUBSCRIPTION = (
    "subscription { Post(filter: {mutation_in: [CREATED, UPDATED]}) "
    "{ mutation node { id slug title } } }"
)


def now():
    return time.monotonic()


# ---------------------------------------------------------------- images


def png(width, height, seed):
    """A small RGB PNG, different for every seed."""
    rnd = random.Random(seed)
    base = [rnd.randrange(256) for _ in range(3)]
    rows = []
    for y in range(height):
        row = bytearray(b"\x00")
        for x in range(width):
            row += bytes(((base[0] + x) % 256, (base[1] + y) % 256, (base[2] + x + y) % 256))
        rows.append(bytes(row))
    raw = b"".join(rows)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def png_size(data):
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", data[16:24])


IMAGE_W, IMAGE_H = 160, 120


# ---------------------------------------------------------------- the run


class Failure(Exception):
    pass


class Run:
    def __init__(self, args):
        self.args = args
        self.lb = args.lb.rstrip("/")
        self.stats_url = args.stats
        self.alias = args.alias
        self.instances = {}  # name -> base url
        self.pids = {}
        for spec in args.instance:
            name, url, pid = spec.split("=", 1)[0], *spec.split("=", 1)[1].rsplit(",", 1)
            self.instances[name] = url.rstrip("/")
            self.pids[name] = int(pid)
        self.kill_name = args.kill
        self.survivors = [n for n in self.instances if n != self.kill_name]
        self.prefix = args.prefix
        self.counter = 0
        self.checks = []  # (ok, text)
        self.figures = {}
        self.ops = []  # every request of the load
        self.mutations = {}  # key -> record (creates, updates, probes)
        self.uploads = []  # acknowledged uploads of the load
        self.imports = []
        self.acked_posts = []  # slugs acknowledged, for read-your-writes and updates
        self.post_ids = {}  # slug -> id
        self.t_kill = None
        self.t_dead = None
        self.t_down = None
        self.service_id = None
        self.root_token = None
        self.stopping = False

    def next_id(self, kind):
        self.counter += 1
        return f"{self.prefix}-{kind}-{self.counter}"

    def check(self, ok, text):
        self.checks.append((bool(ok), text))
        print(f"  [{'ok' if ok else 'FAIL'}] {text}", flush=True)
        return ok

    def simple(self, base=None):
        return f"{base or self.lb}/simple/v1/{self.alias}"

    async def gql(self, session, query, base=None, token=None, variables=None, load_id=None):
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        if load_id:
            headers["x-load-id"] = load_id
        body = {"query": query}
        if variables is not None:
            body["variables"] = variables
        async with session.post(self.simple(base), json=body, headers=headers) as res:
            text = await res.text()
            if res.status != 200:
                raise Failure(f"HTTP {res.status}: {text[:300]}")
            return json.loads(text), res.headers.get("x-served-by")

    async def system(self, session, base, query, token=None):
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        async with session.post(f"{base}/system", json={"query": query}, headers=headers) as res:
            return res.status, json.loads(await res.text())

    # ------------------------------------------------------------ phase 1: agreement

    async def agreement(self, session):
        print("agreement between the instances (each addressed directly):", flush=True)
        names = list(self.instances)
        first = names[0]
        status, got = await self.system(
            session, self.instances[first],
            'mutation { authenticateCustomer(input: {auth0IdToken: "%s"}) { token } }' % self.args.master_token)
        platform = (got.get("data") or {}).get("authenticateCustomer", {}) or {}
        platform = platform.get("token")
        if not self.check(platform, f"a platform token from instance {first} (master token): HTTP {status}"):
            raise Failure(f"no platform token: {got}")
        self.platform_tokens = {first: platform}
        # A platform token issued by the instance that will be killed, checked after the kill.
        if self.kill_name != first:
            _, got = await self.system(
                session, self.instances[self.kill_name],
                'mutation { authenticateCustomer(input: {auth0IdToken: "%s"}) { token } }' % self.args.master_token)
            self.platform_tokens[self.kill_name] = got["data"]["authenticateCustomer"]["token"]
        seen = {}
        for name in names:
            status, got = await self.system(
                session, self.instances[name],
                '{ viewer { project(id: "%s") { id alias permanentAuthTokens { edges { node { name token } } } } } }'
                % self.alias, token=platform)
            project = ((got.get("data") or {}).get("viewer") or {}).get("project")
            if not project:
                self.check(False, f"instance {name} answers the System API with {first}'s platform token: {got}")
                continue
            tokens = {e["node"]["name"]: e["node"]["token"] for e in project["permanentAuthTokens"]["edges"]}
            seen[name] = (project["id"], tokens)
        if not seen:
            raise Failure(f"no instance answered the System API with {first}'s platform token")
        ids = {v[0] for v in seen.values()}
        tokens = {json.dumps(v[1], sort_keys=True) for v in seen.values()}
        self.check(len(seen) == len(names), f"{first}'s platform token works on every instance ({len(seen)}/{len(names)})")
        self.check(len(ids) == 1, f"every instance has the same service id ({', '.join(sorted(ids))})")
        self.check(len(tokens) == 1 and len(seen) == len(names),
                   f"every instance has the same root tokens ({', '.join(sorted(next(iter(seen.values()))[1]))})")
        self.service_id = next(iter(ids))
        self.root_token = next(iter(seen.values()))[1]["admin"]

        # A node token issued by one instance for a user created through another, used on all.
        creator, issuer = names[1 % len(names)], names[2 % len(names)]
        email = f"{self.prefix}-agree@example.test"
        got, _ = await self.gql(
            session, 'mutation { createUser(email: "%s", name: "Agree") { id } }' % email,
            base=self.instances[creator])
        user_id = got["data"]["createUser"]["id"]
        status, got = await self.system(
            session, self.instances[issuer],
            'mutation { generateNodeToken(input: {rootToken: "%s", serviceId: "%s", nodeId: "%s", modelName: "User"}) { token } }'
            % (self.root_token, self.alias, user_id))
        node_token = ((got.get("data") or {}).get("generateNodeToken") or {}).get("token")
        self.check(node_token, f"a node token from instance {issuer} for a user created through {creator}")
        self.node_token, self.node_user = node_token, user_id
        for name in names:
            got, _ = await self.gql(session, "{ user { id } }", base=self.instances[name], token=node_token)
            who = ((got.get("data") or {}).get("user") or {}).get("id")
            self.check(who == user_id, f"{issuer}'s node token authenticates the user on instance {name}")
        # The root token read through the System API is an admin on every instance.
        for name in names:
            got, _ = await self.gql(session, "{ _allUsersMeta { count } }", base=self.instances[name],
                                    token=self.root_token)
            self.check("errors" not in got, f"the root token is an admin on instance {name}")

        # Files: uploaded through each instance, downloaded and resized through every other.
        print("files across the instances (each addressed directly):", flush=True)
        hits = misses = 0
        for up in names:
            data = png(IMAGE_W, IMAGE_H, f"{self.prefix}-agree-{up}")
            meta = await self.upload(session, self.instances[up], data, f"agree-{up}.png")
            self.check(meta.get("url", "").startswith(self.instances[up] + "/files/v1/"),
                       f"an upload through {up} gets a url at the address it was sent to")
            for other in names:
                if other == up:
                    continue
                body, _, _ = await self.fetch(session, f"{self.instances[other]}/files/v1/{self.service_id}/{meta['secret']}")
                self.check(hashlib.sha256(body).hexdigest() == hashlib.sha256(data).hexdigest(),
                           f"uploaded through {up}, downloaded through {other}: same bytes ({len(body)})")
                # The same variant through each other instance: computed by the first, then read
                # from the store by the second.
                url = f"{self.instances[other]}/images/v1/{self.service_id}/{meta['secret']}/40x"
                body, headers, status = await self.fetch(session, url)
                size = png_size(body)
                cache = headers.get("x-cache", "?")
                hits += cache == "HIT"
                misses += cache == "MISS"
                self.check(status == 200 and size == (40, 30),
                           f"uploaded through {up}, resized to 40x through {other}: {size} (X-Cache {cache})")
        self.figures["agreement_variant_hits"] = hits
        self.figures["agreement_variant_misses"] = misses
        self.check(hits >= 1 and misses >= 1,
                   f"a variant computed by one instance is served from the store by another ({misses} computed, {hits} read from the store)")

    async def upload(self, session, base, data, name, load_id=None):
        form = aiohttp.FormData()
        form.add_field("data", data, filename=name, content_type="image/png")
        headers = {"x-load-id": load_id} if load_id else {}
        async with session.post(f"{base}/file/v1/{self.alias}", data=form, headers=headers) as res:
            text = await res.text()
            if res.status != 200:
                raise Failure(f"upload: HTTP {res.status}: {text[:200]}")
            meta = json.loads(text)
            meta["_served_by"] = res.headers.get("x-served-by")
            return meta

    async def fetch(self, session, url, load_id=None):
        headers = {"x-load-id": load_id} if load_id else {}
        async with session.get(url, headers=headers) as res:
            body = await res.read()
            return body, res.headers, res.status

    # ------------------------------------------------------------ subscribers

    async def create_post(self, session, slug, load_id=None, base=None):
        got, served = await self.gql(
            session, 'mutation { createPost(slug: "%s", title: "t-%s") { id slug } }' % (slug, slug),
            base=base, token=self.root_token, load_id=load_id)
        if "errors" in got or not (got.get("data") or {}).get("createPost"):
            raise Failure(f"createPost: {json.dumps(got)[:300]}")
        return got["data"]["createPost"]["id"], served


class Subscriber:
    """One subscription socket through haproxy, reconnecting when it dies; events by key."""

    def __init__(self, run, index, session):
        self.run = run
        self.index = index
        self.session = session
        self.protocol = "graphql-transport-ws" if index % 2 == 0 else "graphql-ws"
        self.admin = index % 4 >= 2
        self.events = {}  # key -> [(time, epoch)]
        self.epochs = []  # {"live": t, "end": t or None, "server": name, "connected": t}
        self.live = asyncio.Event()
        self.task = None
        self.closed_by_us = False
        self.probe_seen = {}
        self.reconnects = 0
        self.errors = []

    def label(self):
        return f"subscriber {self.index} ({self.protocol}, {'admin' if self.admin else 'anonymous'})"

    async def run_forever(self):
        while not self.run.stopping:
            try:
                await self.connect_once()
            except Exception as e:  # noqa: BLE001 - any failure means: reconnect
                self.errors.append(f"{type(e).__name__}: {e}"[:200])
            if self.epochs and self.epochs[-1]["end"] is None:
                self.epochs[-1]["end"] = now()
            self.live.clear()
            if self.run.stopping:
                return
            self.reconnects += 1
            await asyncio.sleep(0.1)

    async def connect_once(self):
        run = self.run
        url = run.lb.replace("http://", "ws://") + f"/subscriptions/v1/{run.alias}"
        load_id = f"{run.prefix}-ws-{self.index}-{len(self.epochs)}"
        ws = await self.session.ws_connect(url, protocols=(self.protocol,), headers={"x-load-id": load_id},
                                           heartbeat=None, autoping=True)
        response = getattr(ws, "_response", None)
        server = response.headers.get("x-served-by") if response is not None else None
        epoch = {"connected": now(), "live": None, "end": None, "server": server, "load_id": load_id}
        self.epochs.append(epoch)
        n = len(self.epochs) - 1
        try:
            payload = {"Authorization": f"Bearer {run.root_token}"} if self.admin else {}
            await ws.send_json({"type": "connection_init", "payload": payload})
            msg = await ws.receive_json(timeout=10)
            while msg.get("type") in ("ka", "keepalive"):
                msg = await ws.receive_json(timeout=10)
            if msg.get("type") != "connection_ack":
                raise Failure(f"no connection_ack: {msg}")
            start = "subscribe" if self.protocol == "graphql-transport-ws" else "start"
            await ws.send_json({"id": "1", "type": start, "payload": {"query": SUBSCRIPTION}})
            prober = asyncio.ensure_future(self.probe(epoch, n))
            try:
                async for message in ws:
                    if message.type != aiohttp.WSMsgType.TEXT:
                        break
                    msg = json.loads(message.data)
                    kind = msg.get("type")
                    if kind in ("next", "data"):
                        self.on_event(msg.get("payload") or {}, n)
                    elif kind == "ping":
                        await ws.send_json({"type": "pong"})
                    elif kind in ("ka", "keepalive", "pong"):
                        pass
                    else:
                        self.errors.append(f"epoch {n}: {json.dumps(msg)[:200]}")
                        if kind in ("error", "complete", "subscription_fail"):
                            break
            finally:
                prober.cancel()
        finally:
            epoch["end"] = epoch["end"] or now()
            await ws.close()

    def on_event(self, payload, epoch):
        data = (payload.get("data") or {}).get("Post")
        if not data:
            self.errors.append(f"epoch {epoch}: an event without data: {json.dumps(payload)[:200]}")
            return
        node = data.get("node") or {}
        if data.get("mutation") == "CREATED":
            key = "c:" + (node.get("slug") or "?")
        else:
            key = "u:" + (node.get("title") or "?")
        self.events.setdefault(key, []).append((now(), epoch))
        if key in self.probe_seen and self.probe_seen[key] is None:
            self.probe_seen[key] = now()

    async def probe(self, epoch, n):
        """Creates a post of its own until its event arrives: from then on the subscription is live."""
        run = self.run
        for attempt in range(60):
            slug = f"{run.prefix}-probe-{self.index}-{n}-{attempt}"
            key = "c:" + slug
            self.probe_seen[key] = None
            record = {"key": key, "kind": "probe", "start": now(), "end": None, "acked": False}
            run.mutations[key] = record
            try:
                await run.create_post(self.session, slug, load_id=f"{slug}")
                record["acked"] = True
            except Exception as e:  # noqa: BLE001
                record["error"] = str(e)[:200]
            record["end"] = now()
            if not record["acked"]:
                await asyncio.sleep(0.05)
                continue
            deadline = now() + 2
            while now() < deadline:
                if self.probe_seen.get(key):
                    epoch["live"] = self.probe_seen[key]
                    self.live.set()
                    return
                await asyncio.sleep(0.02)
        self.errors.append(f"epoch {n}: no probe event came back in 60 attempts")


# ---------------------------------------------------------------- load


class Load:
    def __init__(self, run, session, seconds, workers):
        self.run = run
        self.session = session
        self.seconds = seconds
        self.workers = workers
        self.stale_reads = []
        self.wrong = []

    async def op(self, kind, fn):
        run = self.run
        load_id = run.next_id("op")
        record = {"id": load_id, "kind": kind, "start": now(), "end": None, "ok": False, "served": None}
        run.ops.append(record)
        try:
            record["served"] = await fn(load_id, record)
            record["ok"] = True
        except Exception as e:  # noqa: BLE001 - a failed request is recorded, not raised
            record["error"] = f"{type(e).__name__}: {e}"[:300]
        record["end"] = now()
        return record

    async def read(self, load_id, record):
        run = self.run
        if run.acked_posts and random.random() < 0.5:
            # Read-your-writes through another instance: an acknowledged post is there.
            slug = random.choice(run.acked_posts[-20:])
            got, served = await run.gql(self.session, '{ Post(slug: "%s") { id slug } }' % slug,
                                        token=run.root_token, load_id=load_id)
            if "errors" in got:
                raise Failure(json.dumps(got)[:200])
            if not (got.get("data") or {}).get("Post"):
                self.stale_reads.append((slug, served))
            return served
        got, served = await run.gql(
            self.session,
            '{ allPosts(first: 10, orderBy: createdAt_DESC, filter: {slug_starts_with: "%s-"}) { id slug title } '
            "_allPostsMeta { count } }" % run.prefix, load_id=load_id)
        if "errors" in got:
            raise Failure(json.dumps(got)[:200])
        return served

    async def create(self, load_id, record):
        run = self.run
        slug = f"{run.prefix}-c-{load_id.rsplit('-', 1)[1]}"
        key = "c:" + slug
        mutation = {"key": key, "kind": "create", "start": record["start"], "end": None, "acked": False,
                    "slug": slug, "load_id": load_id}
        run.mutations[key] = mutation
        try:
            post_id, served = await run.create_post(self.session, slug, load_id=load_id)
        finally:
            mutation["end"] = now()
        mutation["acked"] = True
        mutation["served"] = served
        run.post_ids[slug] = post_id
        run.acked_posts.append(slug)
        return served

    async def update(self, load_id, record):
        run = self.run
        if not self.updatable:
            return await self.read(load_id, record)
        slug = self.updatable.pop(random.randrange(len(self.updatable)))
        title = f"u-{load_id}"
        key = "u:" + title
        mutation = {"key": key, "kind": "update", "start": record["start"], "end": None, "acked": False,
                    "slug": slug, "title": title, "load_id": load_id}
        run.mutations[key] = mutation
        try:
            got, served = await run.gql(
                self.session, 'mutation { updatePost(id: "%s", title: "%s") { id title } }' % (run.post_ids[slug], title),
                token=run.root_token, load_id=load_id)
        finally:
            mutation["end"] = now()
        if "errors" in got or not (got.get("data") or {}).get("updatePost"):
            raise Failure(f"updatePost: {json.dumps(got)[:300]}")
        mutation["acked"] = True
        return served

    async def upload(self, load_id, record):
        run = self.run
        data = png(IMAGE_W, IMAGE_H, load_id)
        meta = await run.upload(self.session, run.lb, data, f"{load_id}.png", load_id=load_id)
        ok_url = meta.get("url", "").startswith(run.lb + "/files/v1/")
        if not ok_url:
            self.wrong.append(f"an upload through haproxy got the url {meta.get('url')}")
        run.uploads.append({"id": meta["id"], "secret": meta["secret"], "sha": hashlib.sha256(data).hexdigest(),
                            "served": meta["_served_by"], "load_id": load_id, "start": record["start"]})
        return meta["_served_by"]

    async def download(self, load_id, record):
        run = self.run
        if not run.uploads:
            return await self.read(load_id, record)
        up = random.choice(run.uploads)
        body, headers, status = await run.fetch(self.session, f"{run.lb}/files/v1/{run.service_id}/{up['secret']}",
                                                load_id=load_id)
        if status != 200:
            raise Failure(f"download: HTTP {status}")
        if hashlib.sha256(body).hexdigest() != up["sha"]:
            self.wrong.append(f"download of {up['secret']} through {headers.get('x-served-by')}: other bytes")
        return headers.get("x-served-by")

    async def image(self, load_id, record):
        run = self.run
        if not run.uploads:
            return await self.read(load_id, record)
        up = random.choice(run.uploads)
        width = random.choice([16, 24, 32, 48, 64, 80])
        body, headers, status = await run.fetch(
            self.session, f"{run.lb}/images/v1/{run.service_id}/{up['secret']}/{width}x", load_id=load_id)
        if status != 200:
            raise Failure(f"image: HTTP {status}: {body[:200]!r}")
        size = png_size(body)
        if size != (width, width * IMAGE_H // IMAGE_W):
            self.wrong.append(f"image {up['secret']}/{width}x through {headers.get('x-served-by')}: {size}")
        record["cache"] = headers.get("x-cache")
        return headers.get("x-served-by")

    async def worker(self, deadline):
        table = [(self.read, "read", 40), (self.create, "create", 22), (self.update, "update", 10),
                 (self.upload, "upload", 8), (self.download, "download", 8), (self.image, "image", 12)]
        fns = [t[0] for t in table]
        names = [t[1] for t in table]
        weights = [t[2] for t in table]
        while now() < deadline:
            i = random.choices(range(len(fns)), weights)[0]
            await self.op(names[i], fns[i])

    async def importer(self, at, number, users, posts, direct=None):
        """An NDF import (a nodes document, then a relations document) through haproxy, or sent
        to the instance `direct` (not counted among the load's requests)."""
        run = self.run
        await asyncio.sleep(max(0, at - now()))
        tag = f"{run.prefix}i{number}"
        user_ids = [f"{tag}u{k}" for k in range(users)]
        nodes = [{"_typeName": "User", "id": u, "email": f"{u}@import.test", "name": f"Imported {u}"} for u in user_ids]
        post_ids = [f"{tag}p{k}" for k in range(posts)]
        nodes += [{"_typeName": "Post", "id": p, "slug": f"{run.prefix}-i{number}-{k}", "title": f"imported {p}"}
                  for k, p in enumerate(post_ids)]
        relations = [[{"_typeName": "User", "id": user_ids[k % users], "fieldName": "posts"},
                      {"_typeName": "Post", "id": p, "fieldName": "author"}] for k, p in enumerate(post_ids)]
        record = {"number": number, "tag": tag, "users": users, "posts": posts, "acked": False,
                  "start": now(), "steps": [], "direct": direct}
        run.imports.append(record)
        base = run.instances[direct] if direct else None
        for value_type, values in (("nodes", nodes), ("relations", relations)):
            async def step(load_id, op_record, value_type=value_type, values=values):
                async with self.session.post(
                        f"{run.simple(base)}/import", json={"valueType": value_type, "values": values},
                        headers={"authorization": f"Bearer {run.root_token}", "x-load-id": load_id}) as res:
                    text = await res.text()
                    if res.status != 200 or text.strip() != "[]":
                        raise Failure(f"import of {value_type}: HTTP {res.status}: {text[:300]}")
                    return res.headers.get("x-served-by")
            if direct:
                op = {"id": run.next_id("direct"), "start": now(), "ok": False, "served": direct}
                try:
                    await step(op["id"], op)
                    op["ok"] = True
                except Exception as e:  # noqa: BLE001 - expected when the instance dies under it
                    op["error"] = f"{type(e).__name__}: {e}"[:300]
                op["end"] = now()
            else:
                op = await self.op("import", step)
            record["steps"].append({"type": value_type, "ok": op["ok"], "served": op["served"],
                                    "start": op["start"], "end": op["end"],
                                    "seconds": op["end"] - op["start"], "error": op.get("error")})
            if not op["ok"]:
                record["end"] = now()
                return
        record["acked"] = True
        record["end"] = now()


async def killer(run, at):
    await asyncio.sleep(max(0, at - now()))
    pid = run.pids[run.kill_name]
    os.kill(pid, signal.SIGKILL)
    run.t_kill = now()
    # The process takes a moment to go: until its listening socket is closed, it still accepts
    # connections (and haproxy may send it requests it will never answer).
    port = int(run.instances[run.kill_name].rsplit(":", 1)[1])
    while now() - run.t_kill < 10:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 0.2)
            writer.close()
        except (ConnectionRefusedError, OSError, asyncio.TimeoutError):
            break
        await asyncio.sleep(0.001)
    run.t_dead = now()
    print(f"  SIGKILL to instance {run.kill_name} (pid {pid}) at {run.t_kill - run.t_load:.1f} s; "
          f"its port refused connections {1000 * (run.t_dead - run.t_kill):.0f} ms later", flush=True)
    async with aiohttp.ClientSession() as session:
        while now() - run.t_kill < 60:
            try:
                async with session.get(run.stats_url + ";csv") as res:
                    text = await res.text()
                for row in csv.DictReader(io.StringIO(text.lstrip("# "))):
                    if row.get("svname") == run.kill_name and row.get("pxname") == "instances":
                        if row.get("status", "").startswith("DOWN"):
                            run.t_down = now()
                            print(f"  haproxy marked {run.kill_name} DOWN {run.t_down - run.t_kill:.2f} s after the kill",
                                  flush=True)
                            return
            except Exception:  # noqa: BLE001 - keep polling
                pass
            await asyncio.sleep(0.05)


async def haproxy_states(run, session):
    async with session.get(run.stats_url + ";csv") as res:
        text = await res.text()
    return {row["svname"]: row["status"] for row in csv.DictReader(io.StringIO(text.lstrip("# ")))
            if row.get("pxname") == "instances" and row["svname"] not in ("FRONTEND", "BACKEND")}


# ---------------------------------------------------------------- checks afterwards


async def committed_posts(run, session, base):
    """Every post of this run (slug -> title), read through `base` page by page."""
    posts = {}
    skip = 0
    while True:
        got, _ = await run.gql(
            session,
            '{ allPosts(filter: {slug_starts_with: "%s-"}, orderBy: slug_ASC, first: 1000, skip: %d) { slug title } }'
            % (run.prefix, skip), base=base, token=run.root_token)
        page = got["data"]["allPosts"]
        for p in page:
            posts[p["slug"]] = p["title"]
        if len(page) < 1000:
            return posts
        skip += 1000


def classify_failures(run):
    """Joins the failed requests with haproxy's log: which server each went to."""
    log = {}
    try:
        with open(run.args.haproxy_log, encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
                if "load" in fields:
                    log[fields["load"].strip("{}")] = fields
    except OSError:
        pass
    return log


def report_events(run, subscribers, committed_keys, created_after_kill_window):
    """Per subscriber and mutation key: how many times its event arrived, against what was due."""
    grace = 1.0
    due = received_due = missing = dup = phantom = optional_received = 0
    due_unacked = received_unacked = 0
    missing_acked = []
    missing_unacked = []
    details = []
    for sub in subscribers:
        for key, times in sub.events.items():
            if len(times) > 1:
                dup += len(times) - 1
                details.append(f"{sub.label()}: {len(times)} events for {key}")
            if key not in committed_keys:
                phantom += 1
                details.append(f"{sub.label()}: an event for {key}, which is not in the database")
        for key in committed_keys:
            m = run.mutations.get(key)
            if m is None:
                continue
            must = False
            for e in sub.epochs:
                if e["live"] is None or m["start"] <= e["live"]:
                    continue
                if e["end"] is None or e.get("final"):
                    must = True
                elif m["end"] is not None and m["acked"] and m["end"] + grace < e["end"]:
                    must = True
            got = len(sub.events.get(key, []))
            if must and m["acked"]:
                due += 1
                if got >= 1:
                    received_due += 1
                else:
                    missing += 1
                    missing_acked.append((sub.index, key))
            elif must:
                due_unacked += 1
                if got >= 1:
                    received_unacked += 1
                else:
                    missing_unacked.append((sub.index, key))
            elif got:
                optional_received += 1
    return {"due": due, "received_due": received_due, "missing": missing, "duplicates": dup,
            "due_of_unacknowledged": due_unacked, "received_of_unacknowledged": received_unacked,
            "phantom": phantom, "optional_received": optional_received,
            "missing_acked": missing_acked, "missing_unacked": missing_unacked, "details": details}


async def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lb", required=True, help="haproxy's address, http://127.0.0.1:PORT")
    p.add_argument("--stats", required=True, help="haproxy's stats page")
    p.add_argument("--haproxy-log", required=True)
    p.add_argument("--instance", action="append", required=True, help="NAME=URL,PID (repeated)")
    p.add_argument("--kill", required=True, help="the instance to SIGKILL part-way through")
    p.add_argument("--alias", required=True)
    p.add_argument("--master-token", default=os.environ.get("SVC_MASTER_TOKEN", ""))
    p.add_argument("--prefix", required=True, help="slugs and ids of this run start with it")
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--kill-at", type=float, default=0.4, help="the kill's moment, a fraction of --seconds")
    p.add_argument("--workers", type=int, default=12)
    p.add_argument("--subscribers", type=int, default=20)
    p.add_argument("--import-users", type=int, default=1000)
    p.add_argument("--import-posts", type=int, default=5000)
    p.add_argument("--direct-import-users", type=int, default=500)
    p.add_argument("--direct-import-posts", type=int, default=5000)
    p.add_argument("--direct-import-lead", type=float, default=0.3,
                   help="seconds between that import's start and the kill")
    p.add_argument("--out", help="a JSON summary")
    args = p.parse_args()
    run = Run(args)
    random.seed(args.prefix)
    # One connection per request: haproxy answers a request whose instance died under it with a
    # 502 it logs with the server's name only when the request is the first on its connection (a
    # later one on a kept-alive connection gets the connection closed, unlogged, for the client to
    # retry), and the failures are attributed through that log.
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        try:
            await run.agreement(session)
        except Failure as e:
            run.check(False, f"the agreement checks could not finish: {e}")
            return finish(run, [], None)

        states = await haproxy_states(run, session)
        run.check(all(s.startswith("UP") for s in states.values()) and len(states) == len(run.instances),
                  f"haproxy sees every instance up: {states}")

        print(f"subscribers: {args.subscribers} through haproxy", flush=True)
        ws_session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=True),
                                           timeout=aiohttp.ClientTimeout(total=None))
        subscribers = [Subscriber(run, i, ws_session) for i in range(args.subscribers)]
        for sub in subscribers:
            sub.task = asyncio.ensure_future(sub.run_forever())
        t0 = now()
        try:
            await asyncio.wait_for(asyncio.gather(*(s.live.wait() for s in subscribers)), 60)
        except asyncio.TimeoutError:
            pass
        live = sum(s.live.is_set() for s in subscribers)
        by_server = {}
        for s in subscribers:
            server = s.epochs[0]["server"] if s.epochs else None
            by_server[server] = by_server.get(server, 0) + 1
        run.figures["subscribers_per_instance"] = by_server
        run.check(live == len(subscribers),
                  f"{live}/{len(subscribers)} subscribers live in {now() - t0:.1f} s (by instance: {by_server})")

        print(f"load: {args.workers} workers for {args.seconds:.0f} s through haproxy; instance {run.kill_name} "
              f"killed at {args.kill_at * args.seconds:.0f} s", flush=True)
        load = Load(run, session, args.seconds, args.workers)
        load.updatable = []
        run.t_load = now()
        deadline = run.t_load + args.seconds

        async def feed_updatable():
            # Updates take posts acknowledged a moment before, each at most once.
            seen = 0
            while now() < deadline:
                while seen < len(run.acked_posts):
                    load.updatable.append(run.acked_posts[seen])
                    seen += 1
                await asyncio.sleep(0.05)

        tasks = [load.worker(deadline) for _ in range(args.workers)]
        tasks.append(feed_updatable())
        tasks.append(load.importer(run.t_load + 0.15 * args.seconds, 1, args.import_users, args.import_posts))
        tasks.append(load.importer(run.t_load + 0.65 * args.seconds, 2, args.import_users, args.import_posts))
        # An import sent straight to the instance about to be killed, to be cut off by the kill.
        tasks.append(load.importer(run.t_load + args.kill_at * args.seconds - args.direct_import_lead, 3,
                                   args.direct_import_users, args.direct_import_posts, direct=run.kill_name))
        tasks.append(killer(run, run.t_load + args.kill_at * args.seconds))
        await asyncio.gather(*tasks)
        t_end = now()
        print(f"  load done in {t_end - run.t_load:.1f} s: {len(run.ops)} requests", flush=True)

        # Subscribers that lost their socket are live again; then the last events drain.
        try:
            await asyncio.wait_for(asyncio.gather(*(s.live.wait() for s in subscribers)), 30)
        except asyncio.TimeoutError:
            pass
        total = lambda: sum(len(v) for s in subscribers for v in s.events.values())  # noqa: E731
        last, quiet_since = total(), now()
        while now() - quiet_since < 2 and now() - t_end < 30:
            await asyncio.sleep(0.2)
            if total() != last:
                last, quiet_since = total(), now()
        run.stopping = True
        for s in subscribers:
            if s.epochs and s.epochs[-1]["end"] is None:
                s.epochs[-1]["final"] = True
            s.task.cancel()
        await asyncio.gather(*(s.task for s in subscribers), return_exceptions=True)
        await ws_session.close()

        return await verify(run, session, load, subscribers)


async def verify(run, session, load, subscribers):
    print("checks through the survivors:", flush=True)
    run.check(run.t_kill is not None, f"instance {run.kill_name} was SIGKILLed during the load")
    run.check(run.t_down is not None, f"haproxy marked {run.kill_name} DOWN")
    try:
        os.kill(run.pids[run.kill_name], 0)
        alive = True
    except ProcessLookupError:
        alive = False
    except PermissionError:
        alive = True
    run.check(not alive, f"instance {run.kill_name} is gone")

    # Tokens issued by the dead instance still work on the survivors.
    if run.kill_name in run.platform_tokens:
        for name in run.survivors:
            status, got = await run.system(session, run.instances[name], '{ viewer { project(id: "%s") { id } } }'
                                           % run.alias, token=run.platform_tokens[run.kill_name])
            ok = ((got.get("data") or {}).get("viewer") or {}).get("project") is not None
            run.check(ok, f"a platform token issued by the killed instance {run.kill_name} works on {name}")

    # Every acknowledged mutation is there, through each survivor.
    seen_by = {}
    for name in run.survivors + ["haproxy"]:
        base = run.lb if name == "haproxy" else run.instances[name]
        seen_by[name] = await committed_posts(run, session, base)
    posts = seen_by[run.survivors[0]]
    agree = all(v == posts for v in seen_by.values())
    run.check(agree, f"the survivors and haproxy read the same {len(posts)} posts of this run")
    creates = [m for m in run.mutations.values() if m["kind"] in ("create", "probe")]
    updates = [m for m in run.mutations.values() if m["kind"] == "update"]
    acked_creates = [m for m in creates if m["acked"]]
    missing_creates = [m["key"] for m in acked_creates if m["key"][2:] not in posts]
    run.check(not missing_creates,
              f"every acknowledged create is readable through every survivor ({len(acked_creates)} acknowledged, "
              f"{len(missing_creates)} missing{': ' + ', '.join(missing_creates[:5]) if missing_creates else ''})")
    titles = set(posts.values())
    acked_updates = [m for m in updates if m["acked"]]
    missing_updates = [m["key"] for m in acked_updates if m["title"] not in titles]
    run.check(not missing_updates,
              f"every acknowledged update is readable ({len(acked_updates)} acknowledged, {len(missing_updates)} missing)")
    unacked_creates = [m for m in creates if not m["acked"]]
    unacked_committed = [m["key"] for m in unacked_creates if m["key"][2:] in posts]
    unacked_updates = [m for m in updates if not m["acked"]]
    unacked_updates_committed = [m["key"] for m in unacked_updates if m["title"] in titles]
    run.figures["unacknowledged_mutations"] = len(unacked_creates) + len(unacked_updates)
    run.figures["unacknowledged_but_committed"] = len(unacked_committed) + len(unacked_updates_committed)

    # Acknowledged uploads: the same bytes through each survivor, and a variant from each.
    wrong_bytes = []
    variant_fail = []
    cache = {"HIT": 0, "MISS": 0}
    for n, up in enumerate(run.uploads):
        for name in run.survivors:
            base = run.instances[name]
            body, _, status = await run.fetch(session, f"{base}/files/v1/{run.service_id}/{up['secret']}")
            if status != 200 or hashlib.sha256(body).hexdigest() != up["sha"]:
                wrong_bytes.append(f"{up['secret']} via {name}: HTTP {status}")
            width = 8 * (1 + (n % 4))  # some variants computed here, then read from the store by the other survivor
            body, headers, status = await run.fetch(session, f"{base}/images/v1/{run.service_id}/{up['secret']}/{width}x")
            cache[headers.get("x-cache", "?")] = cache.get(headers.get("x-cache", "?"), 0) + 1
            if status != 200 or png_size(body) != (width, width * IMAGE_H // IMAGE_W):
                variant_fail.append(f"{up['secret']}/{width}x via {name}: HTTP {status} {png_size(body)}")
    run.check(not wrong_bytes, f"every acknowledged upload ({len(run.uploads)}) downloads with its bytes through "
                               f"each survivor ({len(wrong_bytes)} wrong{': ' + '; '.join(wrong_bytes[:3]) if wrong_bytes else ''})")
    run.check(not variant_fail, f"every acknowledged upload resizes through each survivor ({len(variant_fail)} wrong"
                                f"{': ' + '; '.join(variant_fail[:3]) if variant_fail else ''}; X-Cache {cache})")

    # Imports: an acknowledged one is there whole; one that failed (in flight on the killed
    # instance) left all of a document or none of it (one document, one transaction).
    for imp in run.imports:
        for name in run.survivors:
            got, _ = await run.gql(
                session,
                '{ u: _allUsersMeta(filter: {email_starts_with: "%su"}) { count } '
                'p: _allPostsMeta(filter: {slug_starts_with: "%s-i%d-"}) { count } '
                'a: _allPostsMeta(filter: {slug_starts_with: "%s-i%d-", author: {email_starts_with: "%su"}}) { count } }'
                % (imp["tag"], run.prefix, imp["number"], run.prefix, imp["number"], imp["tag"]),
                base=run.instances[name], token=run.root_token)
            u, p, a = (got["data"][k]["count"] for k in ("u", "p", "a"))
            counts = f"{u}/{imp['users']} users, {p}/{imp['posts']} posts, {a} with their author, through {name}"
            via = f"sent straight to {imp['direct']}" if imp["direct"] else "through haproxy"
            if imp["acked"]:
                run.check(u == imp["users"] and p == imp["posts"] and a == imp["posts"],
                          f"NDF import {imp['number']} ({via}, acknowledged in {imp['end'] - imp['start']:.1f} s): {counts}")
            else:
                nodes = (u, p) in ((0, 0), (imp["users"], imp["posts"]))
                edges = a in (0, imp["posts"]) and (a == 0 or p == imp["posts"])
                failed = imp["steps"][-1]
                cut = run.t_kill is not None and failed["start"] <= run.t_dead and failed["end"] >= run.t_kill
                run.check(nodes and edges and cut,
                          f"NDF import {imp['number']} ({via}) failed at its {failed['type']} document "
                          f"({' '.join(str(failed['error']).split())[:80]}; sent {failed['start'] - run.t_kill:+.2f} s from "
                          f"the kill, {'cut off by it' if cut else 'NOT cut off by the kill'}) and left all or nothing "
                          f"of each document: {counts}")

    # Answers during the load.
    run.check(not load.stale_reads, f"reads right after an acknowledged create found it ({len(load.stale_reads)} did not"
                                    f"{': ' + str(load.stale_reads[:3]) if load.stale_reads else ''})")
    run.check(not load.wrong, f"downloads, images and upload urls during the load were right ({len(load.wrong)} wrong"
                              f"{': ' + '; '.join(load.wrong[:3]) if load.wrong else ''})")

    # Failures: in flight on the killed instance only.
    log = classify_failures(run)
    failed = [o for o in run.ops if not o["ok"]]
    on_killed = []
    elsewhere = []
    after_kill = []
    for o in failed:
        entry = log.get(o["id"], {})
        o["haproxy"] = entry
        server = entry.get("srv")
        if server == run.kill_name:
            on_killed.append(o)
            if run.t_dead is not None and o["start"] > run.t_dead:
                after_kill.append(o)
        else:
            elsewhere.append(o)
    by_kind = {}
    by_server = {}
    for o in run.ops:
        by_kind[o["kind"]] = by_kind.get(o["kind"], 0) + 1
        by_server[o.get("served") or "?"] = by_server.get(o.get("served") or "?", 0) + 1
    run.figures.update({
        "requests": len(run.ops), "requests_by_kind": by_kind, "requests_by_instance": by_server,
        "failures": len(failed), "failures_on_killed_instance": len(on_killed),
        "failures_sent_after_kill": len(after_kill), "failures_elsewhere": len(elsewhere),
    })
    describe = lambda os_: "; ".join(  # noqa: E731
        f"{o['kind']} {o['id']} sent {o['start'] - run.t_kill:+.3f} s from the kill: {' '.join(o.get('error', '').split())[:90]} "
        f"(haproxy: {o['haproxy'].get('srv', 'no log line')} {o['haproxy'].get('status', '')} {o['haproxy'].get('term', '')})"
        for o in os_[:5])
    run.check(not elsewhere, f"every failed request went to the killed instance ({len(on_killed)} of {len(failed)}"
                             f"{'; others: ' + describe(elsewhere) if elsewhere else ''})")
    run.check(not after_kill, f"every failed request was sent before the killed instance's port closed, "
                              f"{1000 * ((run.t_dead or 0) - (run.t_kill or 0)):.0f} ms after the SIGKILL ({len(after_kill)} sent after"
                              f"{': ' + describe(after_kill) if after_kill else ''})")
    if on_killed:
        print(f"  the failed requests: {describe(on_killed)}", flush=True)

    # Subscriptions.
    committed_keys = {"c:" + slug for slug in posts if not slug.startswith(f"{run.prefix}-i")}
    committed_keys |= {"u:" + t for t in titles if t.startswith("u-")}
    ev = report_events(run, subscribers, committed_keys, None)
    run.figures["events"] = {k: v for k, v in ev.items() if k not in ("details", "missing_acked", "missing_unacked")}
    interrupted = [s for s in subscribers if len(s.epochs) > 1]
    run.figures["subscribers_interrupted"] = len(interrupted)
    run.check(ev["duplicates"] == 0 and ev["phantom"] == 0,
              f"no subscriber got an event twice, nor one of a write not in the database "
              f"({ev['duplicates']} duplicates, {ev['phantom']} phantom{': ' + '; '.join(ev['details'][:3]) if ev['details'] else ''})")
    run.check(not ev["missing_acked"],
              f"every subscriber got the event of every acknowledged mutation made while it was subscribed, "
              f"whichever instance took it: {ev['received_due']}/{ev['due']} events (and "
              f"{ev['received_of_unacknowledged']}/{ev['due_of_unacknowledged']} of committed mutations never acknowledged)"
              f"{'; missing (subscriber, mutation): ' + str(ev['missing_acked'][:5]) if ev['missing_acked'] else ''}")
    lost = sorted({key for _, key in ev["missing_unacked"]})
    run.figures["events_lost_of_unacknowledged_mutations"] = {"mutations": len(lost),
                                                               "subscriber_events": len(ev["missing_unacked"])}
    # A mutation the killed instance committed but never acknowledged is still a committed
    # mutation: its events go out in its transaction, so every subscriber due them hears of it.
    run.check(not lost,
              f"every subscriber got the events of the committed mutations the killed instance never "
              f"acknowledged: {ev['received_of_unacknowledged']}/{ev['due_of_unacknowledged']}"
              f"{'; missing: ' + ', '.join(lost[:5]) if lost else ''}")
    killed_server_subs = [s for s in subscribers if s.epochs and s.epochs[0]["server"] == run.kill_name]
    run.check(len(interrupted) == len(killed_server_subs) and all(len(s.epochs) > 1 for s in killed_server_subs),
              f"the subscribers on {run.kill_name} ({len(killed_server_subs)}) and only they reconnected "
              f"({len(interrupted)} did)")
    not_live = [s.index for s in subscribers if not any(e.get("live") for e in s.epochs[-1:])]
    run.check(not not_live, f"every subscriber was live again at the end ({len(not_live)} not: {not_live[:5]})")
    resubscribed = [s.epochs[-1]["live"] for s in interrupted if s.epochs[-1].get("live")]
    errors = [(s.index, e) for s in subscribers for e in s.errors]
    run.figures["subscriber_errors"] = len(errors)
    if errors:
        print(f"  subscriber messages (first 5): {errors[:5]}", flush=True)
    for s in interrupted:
        print(f"  {s.label()}: on {s.epochs[0]['server']}, then {', '.join(str(e['server']) for e in s.epochs[1:])}; "
              f"live again {(s.epochs[-1]['live'] or now()) - run.t_kill:.2f} s after the kill", flush=True)

    # Recovery.
    if run.t_kill is not None:
        last_failure = max((o["end"] for o in failed), default=run.t_kill)
        run.figures["recovery"] = {
            "haproxy_down_s": round(run.t_down - run.t_kill, 3) if run.t_down else None,
            "last_failed_request_s": round(last_failure - run.t_kill, 3),
            "subscribers_live_again_s": round(max(resubscribed) - run.t_kill, 3) if resubscribed else None,
        }
        run.figures["recovery"]["recovered_s"] = round(
            max([last_failure] + resubscribed) - run.t_kill, 3)
    return finish(run, subscribers, load)


def finish(run, subscribers, load):
    f = run.figures
    print("figures:", flush=True)
    for key in ("requests", "requests_by_kind", "requests_by_instance", "failures", "failures_on_killed_instance",
                "failures_sent_after_kill", "failures_elsewhere", "unacknowledged_mutations",
                "unacknowledged_but_committed", "events_lost_of_unacknowledged_mutations", "subscribers_per_instance", "subscribers_interrupted", "events",
                "subscriber_errors", "recovery", "agreement_variant_misses", "agreement_variant_hits"):
        if key in f:
            print(f"  {key}: {json.dumps(f[key])}", flush=True)
    ok = all(c[0] for c in run.checks)
    if run.args.out:
        with open(run.args.out, "w") as out:
            json.dump({"pass": ok, "figures": f, "checks": [{"ok": c[0], "text": c[1]} for c in run.checks]}, out, indent=1)
    failed = [c[1] for c in run.checks if not c[0]]
    print(f"{len(run.checks) - len(failed)} passed, {len(failed)} failed", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
