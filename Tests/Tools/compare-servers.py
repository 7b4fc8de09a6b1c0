#!/usr/bin/env python3
"""Runs one random workload against two `recordserver` binaries and compares every answer.

    python3 compare-servers.py OLD_BINARY NEW_BINARY SEED STEPS

Each binary serves a fresh data directory of its own with the same two users. The workload (zones
created and deleted, batches of saves and deletes with references of every action, atomic and
not, stale and current tags, lookups with include, queries with filters, sorts and small pages,
change fetches with tokens held from earlier answers, database changes) is drawn once per step
from SEED and sent to both; the answers must be the same once what is random by design is
normalised: error uuids, timestamps, user record names, and the UIDs inside change tokens (each
replaced by the order of its first appearance). It prints the first differences and a count.

Used to check that a change meant to change nothing a client sees (a refactor, another storage
engine) does not: build the binary before and after, run a few seeds of a few hundred steps.
"""
import base64, json, os, random, re, shutil, signal, struct, subprocess, sys, tempfile, urllib.request

old_bin, new_bin, seed, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
CONTAINER = "iCloud.test.Diff"


class Server:
    def __init__(self, binary, name):
        self.dir = tempfile.mkdtemp(prefix=f"compare-{name}-")
        self.tokens = {u: subprocess.check_output([binary, "user", "add", u, "--data", self.dir], text=True).strip() for u in ["alice", "bob"]}
        self.process = subprocess.Popen([binary, "--port", "0", "--data", self.dir], stderr=subprocess.PIPE, text=True)
        for line in self.process.stderr:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        self.held = {}  # logical token id -> this server's token string
        self.uids = {}
        self.users = {}

    def post(self, user, database, endpoint, body):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/database/1/{CONTAINER}/development/{database}/{endpoint}",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {self.tokens[user]}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        shutil.rmtree(self.dir)

    def norm_token(self, text):
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except Exception:
            return text
        if len(raw) != 2 + 16 + 16 + 4 or raw[0] not in (0x5A, 0x44):
            return text
        uid = raw[2:18]
        label = self.uids.setdefault(uid, f"uid{len(self.uids)}")
        seq, floor = struct.unpack(">qq", raw[18:34])
        return f"{chr(raw[0])}:{label}:{seq}:{floor}"

    def norm(self, value, key=None):
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if k == "uuid":
                    continue
                if k == "timestamp":
                    out[k] = 0
                    continue
                out[k] = self.norm(v, k)
            return out
        if isinstance(value, list):
            return [self.norm(v) for v in value]
        if isinstance(value, str):
            if key in ("syncToken",):
                return self.norm_token(value)
            if re.fullmatch(r"_[0-9a-f]{32}", value):
                return self.users.setdefault(value, f"user{len(self.users)}")
            return re.sub(r"_[0-9a-f]{32}", lambda m: self.users.setdefault(m.group(0), f"user{len(self.users)}"), value)
        return value


rng = random.Random(seed)
servers = [Server(old_bin, "old"), Server(new_bin, "new")]
NAMES = [f"r{i}" for i in range(14)]
ZONES = ["_defaultZone", "A", "B"]
FIELDS = ["title", "year", "owner", "keeper", "tags", "links", "price"]
held_ids = []
stats = {}
differences = 0


def ref(action=None):
    r = {"recordName": rng.choice(NAMES)}
    if action or rng.random() < 0.8:
        r["action"] = action or rng.choice(["NONE", "DELETE_SELF", "VALIDATE"])
    return r


def fields():
    f = {}
    for name in rng.sample(FIELDS, rng.randint(0, 4)):
        if name == "title":
            f[name] = {"value": rng.choice(["Lilies", "Haystacks", "Olympia", None]) }
        elif name == "year":
            f[name] = {"value": rng.choice([1850, 1872, 1906, "1900", None])}
        elif name in ("owner", "keeper"):
            f[name] = {"value": ref()}
        elif name == "tags":
            f[name] = {"value": rng.sample(["water", "garden", "sky"], rng.randint(0, 2))}
        elif name == "links":
            f[name] = {"value": [ref() for _ in range(rng.randint(1, 3))]}
        else:
            f[name] = {"value": rng.choice([1.5, 2, 3.25])}
    return f


tags_known = {}


def step():
    """One logical request: (user, database, endpoint, body builder taking a server)."""
    kind = rng.random()
    user = "alice" if rng.random() < 0.85 else "bob"
    database = "private" if rng.random() < 0.8 else "public"
    zone = rng.choice(ZONES) if database == "private" else "_defaultZone"
    zid = {"zoneName": zone}
    if kind < 0.06 and database == "private":
        op = rng.choice(["create", "create", "delete"])
        z = rng.choice(["A", "B", "C", "_defaultZone"])
        return user, database, "zones/modify", lambda s: {"operations": [{"operationType": op, "zone": {"zoneID": {"zoneName": z}}}]}
    if kind < 0.5:
        ops = []
        for name in rng.sample(NAMES, rng.randint(1, 6)):
            t = rng.choice(["create", "update", "forceUpdate", "replace", "forceReplace", "forceReplace", "delete", "forceDelete", "forceDelete"])
            record = {"recordName": name}
            if t not in ("delete", "forceDelete"):
                record["recordType"] = rng.choice(["Artwork", "Artwork", "Artist"])
                record["fields"] = fields()
            if t in ("update", "replace", "delete"):
                record["recordChangeTag"] = rng.choice([tags_known.get((zone, name), "1"), "1", "2", "zz"])
            ops.append({"operationType": t, "record": record})
        body = {"zoneID": zid, "operations": ops}
        if rng.random() < 0.5:
            body["atomic"] = False
        if rng.random() < 0.15:
            body["desiredKeys"] = rng.sample(FIELDS, 2)
        return user, database, "records/modify", lambda s: body
    if kind < 0.62:
        body = {"zoneID": zid, "records": [{"recordName": n} for n in rng.sample(NAMES, rng.randint(1, 5))]}
        if rng.random() < 0.5:
            body["include"] = rng.sample(["owner", "keeper", "links"], rng.randint(1, 2))
            body["includeDepth"] = rng.randint(1, 3)
        return user, database, "records/lookup", lambda s: body
    if kind < 0.72:
        q = {"recordType": rng.choice(["Artwork", "Artist"])}
        if rng.random() < 0.6:
            q["filterBy"] = [rng.choice([
                {"fieldName": "year", "comparator": "GREATER_THAN", "fieldValue": {"value": 1860}},
                {"fieldName": "owner", "comparator": "EQUALS", "fieldValue": {"value": {"recordName": rng.choice(NAMES)}}},
                {"fieldName": "links", "comparator": "LIST_CONTAINS", "fieldValue": {"value": {"recordName": rng.choice(NAMES)}}},
                {"fieldName": "tags", "comparator": "LIST_CONTAINS", "fieldValue": {"value": "water"}},
                {"fieldName": "title", "comparator": "BEGINS_WITH", "fieldValue": {"value": "L"}},
            ])]
        if rng.random() < 0.6:
            q["sortBy"] = [{"fieldName": rng.choice(["year", "title", "price"]), "ascending": rng.random() < 0.5}]
        body = {"zoneID": zid, "query": q, "resultsLimit": rng.randint(1, 4)}
        if database == "private" and rng.random() < 0.2:
            body = {"zoneWide": True, "query": q, "resultsLimit": rng.randint(1, 4)}
        return user, database, "records/query", lambda s: body
    if kind < 0.92:
        limit = rng.randint(1, 6)
        types = rng.choice([None, None, ["Artist"]])
        use = rng.choice(held_ids) if held_ids and rng.random() < 0.7 else None
        keep = len(held_ids)
        held_ids.append(keep)
        def build(s, use=use, limit=limit, types=types):
            b = {"zoneID": zid, "resultsLimit": limit}
            if use is not None and use in s.held:
                b["syncToken"] = s.held[use][0]
            if types:
                b["desiredRecordTypes"] = types
            return b
        build.keep = keep
        return user, database, "records/changes", build
    use = rng.randint(0, 3) if rng.random() < 0.5 else None
    limit = rng.randint(1, 3)
    def build(s, use=use, limit=limit):
        b = {"resultsLimit": limit}
        tok = s.held.get(("db", use))
        if tok:
            b["syncToken"] = tok
        return b
    build.keepdb = use
    return user, database, "changes/database", build


for i in range(steps):
    user, database, endpoint, build = step()
    answers = []
    stats.setdefault(endpoint, [0, 0, 0])
    for s in servers:
        body = build(s)
        status, answer = s.post(user, database, endpoint, body)
        if endpoint == "records/changes" and status == 200 and hasattr(build, "keep"):
            s.held[build.keep] = (answer.get("syncToken"),)
        if endpoint == "changes/database" and status == 200:
            s.held[("db", getattr(build, "keepdb", None))] = answer.get("syncToken")
        if endpoint == "records/modify" and status == 200 and s is servers[0]:
            zone = body.get("zoneID", {}).get("zoneName", "_defaultZone")
            for r in answer.get("records", []):
                if "recordChangeTag" in r:
                    tags_known[(zone, r["recordName"])] = r["recordChangeTag"]
        answers.append((status, s.norm(answer), body))
        if s is servers[0]:
            stats[endpoint][0] += 1
            stats[endpoint][1] += status == 200
            stats[endpoint][2] += sum(1 for r in answer.get("records", []) + answer.get("zones", []) if "serverErrorCode" not in r)
    if answers[0][:2] != answers[1][:2]:
        differences += 1
        if differences <= 5:
            print(f"step {i} {user} {database} {endpoint} {json.dumps(answers[0][2])}")
            print("  old", answers[0][0], json.dumps(answers[0][1], sort_keys=True)[:1500])
            print("  new", answers[1][0], json.dumps(answers[1][1], sort_keys=True)[:1500])
for s in servers:
    s.stop()
print(f"seed {seed}: {steps} steps, {differences} differences; per endpoint (requests, 200s, good results): {stats}")
