#!/usr/bin/env python3
"""Writes the stores that OldReleaseFixtureTests opens, with the server of an earlier release.

    python3 make-release-data-54bfe40.py RECORDSERVER_BINARY POSTGRES_URL OUTPUT_FOLDER

It was run once, with the `recordserver` built from commit 54bfe40 (the last release before
storage was written once), and its output is committed in `release-54bfe40/`. Never run it again
over the committed output: the point is that the data was written by the old binary.

POSTGRES_URL names a throwaway server (`Scripts/postgres-cluster start DIR` prints one,
postgres://postgres@127.0.0.1:PORT/postgres); the script creates and drops databases of its own
there (`fixture54`, `fixture54_replay0`, `fixture54_replay1`). It needs `psql`, `pg_dump` and `openssl` on the PATH (or
PostgreSQL's in /usr/lib/postgresql/*/bin), and nothing beyond Python's standard library.

The same setup runs twice, on both storage engines, so the two stores hold the same logical
content (their identities, tokens and keys differ): once in a SQLite data directory, once in a
fresh PostgreSQL database. It writes what the c9f8f83 fixture has (users; zones, one deleted and
created again; records of every field type; references of every action; an update, deletes and a
cascade; private and public databases; the change tokens, continuation marker and change tags a
client holds), and what came since: named tokens (one revoked, one expiring in ten years, one
expired), a user's profile, a deleted user whose public record stays, a server-to-server key
and a request signed with it, API tokens (one revoked), uploaded assets (single and in a list,
private and public, one whose record was deleted and one upload never saved; the signing key
rotated once), a zone and two query subscriptions with notifications queued behind a
webcourier URL, the word and place indexes (searched before more records were saved), and
quota usage (the setup server runs with --quota-records and --quota-bytes).

Output:
- `data/`: the SQLite data directory as that server left it after a graceful stop (SIGTERM);
  the empty `assets/incoming/` it made is removed, since git keeps no empty folder.
- `postgres.sql`: `pg_dump --no-owner --no-privileges` of the PostgreSQL database as that server
  left it. Its `\\restrict`/`\\unrestrict` lines (pg_dump 15.14 and later write them, with a
  random key; psql before those releases refuses them) are removed; nothing else is changed. It
  names its tables `public.…` and sets an empty search_path, so restore it into a fresh, empty
  DATABASE (not a schema of another):
      psql postgres://…/postgres -c 'CREATE DATABASE fresh'
      psql -v ON_ERROR_STOP=1 -q -f postgres.sql postgres://…/fresh
      recordserver --database postgres://…/fresh --data SCRATCH …
- `transcript.json` (SQLite) and `transcript-postgres.json`: the old server restarted on a copy
  of each store (the committed data stays as setup left it; the dump restored into another
  database), with the flags in `serverArguments`, and every request a client holding those
  credentials sends next, with the answers that server gave. `cliBefore` are `recordserver`
  commands run before the server starts and `cliAfter` after it stopped (the storage flag,
  `--data DIR` or `--database URL`, is appended). Each HTTP step has `user` (a key of `tokens`,
  or null), `apiToken` (a key of `apiTokens`, sent as `ckAPIToken`), `signedBy` (a key of
  `keys`: sign it afresh, the date being checked), `method`, `path`, `query`, `body`, `status`,
  `answer` and `volatile` (the keys that differ from run to run there: `timestamp` of records
  written during the replay). Everywhere: an error's `uuid`, and the server's address
  (`http://127.0.0.1:PORT`) in URLs; a `downloadURL` is signed for each answer. A `download`
  step GETs the `downloadURL` found in the replay's own answer to step `from` at `at` (`${f}`
  replaced), with `range` if given, and expects `status`, `size`, `sha256` and `contentRange`.

Each transcript is made twice, against two fresh copies, and the script fails if the two differ
after that normalisation (`comparable` below, which the test does too).
"""
import base64
import datetime
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request

binary, postgres, output = sys.argv[1], sys.argv[2], sys.argv[3]
CONTAINER = "iCloud.test.Release"
ENVIRONMENT = "development"
SETUP_QUOTA = ["--quota-records", "1000", "--quota-bytes", "50000000"]


def tool(name):
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not candidates:
        raise SystemExit(f"{name} not found")
    return candidates[-1]


PSQL, PG_DUMP = tool("psql"), tool("pg_dump")


def database_url(name):
    base, _, query = postgres.partition("?")
    return base.rsplit("/", 1)[0] + "/" + name + ("?" + query if query else "")


def psql(url, *arguments):
    subprocess.run([PSQL, "-v", "ON_ERROR_STOP=1", "-q", *arguments, url], check=True, stdout=subprocess.DEVNULL)


def fresh_database(name):
    psql(postgres, "-c", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    psql(postgres, "-c", f'CREATE DATABASE "{name}"')
    return database_url(name)


def drop_database(name):
    psql(postgres, "-c", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Store:
    """A SQLite data directory or a PostgreSQL database, as the server and the CLI name it."""

    def __init__(self, data=None, url=None, scratch=None):
        self.data, self.url, self.scratch = data, url, scratch

    @property
    def cli(self):
        return ["--data", self.data] if self.data else ["--database", self.url]

    @property
    def serve(self):
        return ["--data", self.data] if self.data else ["--database", self.url, "--data", self.scratch]


def run(store, *arguments):
    result = subprocess.run([binary, *arguments, *store.cli], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"recordserver {' '.join(arguments)}: {result.stderr}")
    return result.stdout


class Server:
    def __init__(self, store, flags):
        self.process = subprocess.Popen([binary, "--port", "0", "--log-level", "notice", *store.serve, *flags],
                                        stderr=subprocess.PIPE, text=True)
        self.log = []
        for line in self.process.stderr:
            self.log.append(line)
            match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if match:
                self.port = int(match.group(1))
                break
        else:
            raise SystemExit("recordserver did not start: " + "".join(self.log))
        # Drained, so a full pipe never blocks the server.
        threading.Thread(target=lambda: self.log.extend(self.process.stderr), daemon=True).start()
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(timeout=60)
        assert status == 0, f"recordserver exited with {status}: {''.join(self.log)}"
        for line in self.log:
            if re.search(r" (warning|error|critical) ", line):
                print("recordserver: " + line.rstrip(), file=sys.stderr)

    def send(self, method, path, query=None, body=None, headers=None, raw=None):
        url = self.base + path + ("?" + query if query else "")
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
        try:
            with urllib.request.urlopen(request, timeout=90) as response:
                return response.status, response.read(), response.headers
        except urllib.error.HTTPError as error:
            return error.code, error.read(), error.headers


def path(database, endpoint):
    return f"/database/1/{CONTAINER}/{ENVIRONMENT}/{database}/{endpoint}" if database else f"/database/1/{CONTAINER}/{ENVIRONMENT}/{endpoint}"


def sign(key_file, key_id, request_path, body_bytes, date=None):
    date = date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    message = f"{date}:{base64.b64encode(hashlib.sha256(body_bytes).digest()).decode()}:{request_path}".encode()
    signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key_file], input=message, capture_output=True, check=True).stdout
    return {"X-Apple-CloudKit-Request-KeyID": key_id, "X-Apple-CloudKit-Request-ISO8601Date": date,
            "X-Apple-CloudKit-Request-SignatureV1": base64.b64encode(signature).decode()}


def op(kind, name, record_type=None, fields=None, tag=None):
    record = {"recordName": name}
    if record_type:
        record["recordType"] = record_type
    if fields is not None:
        record["fields"] = fields
    if tag is not None:
        record["recordChangeTag"] = tag
    return {"operationType": kind, "record": record}


def ref(name, action="NONE"):
    return {"value": {"recordName": name, "action": action}}


def pattern(count, seed):
    """Deterministic bytes, the same in both stores."""
    return bytes((index * 31 + (index >> 7) + seed) % 256 for index in range(count))


ASSETS = {"study": pattern(3000, 1), "sketch": pattern(1500, 2), "page-1": pattern(1200, 3), "page-2": pattern(900, 4),
          "unsaved": pattern(700, 5), "flyer": pattern(2100, 6)}
GALLERY, ARCHIVE, TEMP = {"zoneName": "Gallery"}, {"zoneName": "Archive"}, {"zoneName": "Temp"}
QUERY = {"zoneID": GALLERY, "resultsLimit": 2, "query": {"recordType": "Artwork", "sortBy": [{"fieldName": "year", "ascending": True}]}}


def setup(store, key_file):
    """Writes the scenario; answers the credentials and what a client holds."""
    tokens = {
        "alice": run(store, "user", "add", "alice", "--email", "alice@example.com", "--given-name", "Alice", "--family-name", "Liddell").strip(),
        "bob": run(store, "user", "add", "bob", "--token-name", "desk").strip(),
        "carol": run(store, "user", "add", "carol").strip(),
    }
    tokens["alice/phone"] = run(store, "user", "token", "alice", "--token-name", "phone").strip()
    tokens["alice/laptop"] = run(store, "user", "token", "alice", "--token-name", "laptop", "--expires-in", "3650d").strip()
    tokens["alice/tablet"] = run(store, "user", "token", "alice", "--token-name", "tablet").strip()
    tokens["alice/kiosk"] = run(store, "user", "token", "alice", "--token-name", "kiosk", "--expires-in", "1s").strip()
    run(store, "user", "profile", "bob", "--email", "bob@example.com", "--given-name", "Bob", "--discoverable", "no")
    key_id = run(store, "user", "key", "bob", "--public-key", key_file + ".pub", "--key-name", "backend").strip()
    api_tokens = {
        "web": run(store, "api-token", "add", CONTAINER, ENVIRONMENT, "--name", "web", "--origin", "https://app.example.com").strip(),
        "old-web": run(store, "api-token", "add", CONTAINER, ENVIRONMENT, "--name", "old-web", "--origin", "https://old.example.com", "--origin", "http://localhost:8080").strip(),
    }
    held = {}
    server = Server(store, SETUP_QUOTA)
    A, B = tokens["alice"], tokens["bob"]

    def post(token, database, endpoint, body):
        status, answer, _ = server.send("POST", path(database, endpoint), body=body,
                                        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        answer = json.loads(answer)
        assert status == 200, answer
        for result in answer.get("records", []) + answer.get("zones", []) + answer.get("subscriptions", []):
            assert "serverErrorCode" not in result, result
        return answer

    # What the c9f8f83 fixture holds, written the same way.
    post(A, "private", "zones/modify", {"operations": [
        {"operationType": "create", "zone": {"zoneID": {"zoneName": name}}} for name in ["Gallery", "Archive", "Temp"]]})
    held["database"] = post(A, "private", "changes/database", {})["syncToken"]
    first = post(A, "private", "records/modify", {"zoneID": GALLERY, "operations": [
        op("create", "lilies", "Artwork", {
            "title": {"value": "Water Lilies"}, "year": {"value": 1906}, "price": {"value": 12.5},
            "acquired": {"value": 1700000000000, "type": "TIMESTAMP"}, "thumbnail": {"value": "AAEC", "type": "BYTES"},
            "place": {"value": {"latitude": 49.07, "longitude": 1.53}}, "tags": {"value": ["water", "garden"]},
            "scan": {"value": {"fileChecksum": "abc", "size": 3}, "type": "ASSETID"},
            "artist": ref("monet", "DELETE_SELF"), "related": {"value": [{"recordName": "sunrise"}, {"recordName": "olympia", "action": "NONE"}]},
            "onView": {"value": True}, "details": {"value": {"frame": "gilt", "sizes": [200, 180]}, "type": "NESTED"},
            "curator": {"value": {"recordName": "cassatt", "action": "NULLIFY"}},
        }),
        op("create", "sunrise", "Artwork", {"title": {"value": "Impression, Sunrise"}, "year": {"value": 1872}, "artist": ref("monet", "DELETE_SELF"),
                                            "place": {"value": {"latitude": 49.48, "longitude": 0.1}}}),
        op("create", "haystacks", "Artwork", {"title": {"value": "Haystacks"}, "year": {"value": 1890}, "artist": ref("monet", "DELETE_SELF")}),
        op("create", "olympia", "Artwork", {"title": {"value": "Olympia"}, "year": {"value": 1863}, "artist": ref("manet", "VALIDATE"),
                                            "onView": {"value": False}}),
        op("create", "monet", "Artist", {"name": {"value": "Claude Monet"}, "born": {"value": 1840}}),
        op("create", "manet", "Artist", {"name": {"value": "Édouard Manet"}, "born": {"value": 1832}}),
        op("create", "cassatt", "Artist", {"name": {"value": "Mary Cassatt"}, "born": {"value": 1844}}),
        op("create", "boating", "Artwork", {"title": {"value": "The Boating Party"}, "year": {"value": 1893}, "artist": ref("cassatt", "DELETE_SELF")}),
        op("create", "bath", "Artwork", {"title": {"value": "The Child's Bath"}, "year": {"value": 1893}, "artist": ref("cassatt", "DELETE_SELF")}),
    ]})
    held["manetTag"] = next(r["recordChangeTag"] for r in first["records"] if r["recordName"] == "manet")
    held["gallery"] = post(A, "private", "records/changes", {"zoneID": GALLERY})["syncToken"]
    updated = post(A, "private", "records/modify", {"zoneID": GALLERY, "operations": [
        op("forceUpdate", "sunrise", "Artwork", {"year": {"value": 1873}, "note": {"value": "dated 1872 on the canvas"}})]})
    held["sunriseTag"] = updated["records"][0]["recordChangeTag"]
    post(A, "private", "records/modify", {"zoneID": GALLERY, "operations": [op("forceDelete", "cassatt")]})
    post(A, "private", "records/modify", {"zoneID": GALLERY, "operations": [op("forceDelete", "haystacks")]})
    held["marker"] = post(A, "private", "records/query", QUERY)["continuationMarker"]
    post(A, "private", "records/modify", {"zoneID": ARCHIVE, "operations": [
        op("create", f"letter-{n}", "Letter", dict({"n": {"value": n}, "text": {"value": f"Dear Theo, letter number {n} from Arles"}},
                                                   **({"replyTo": ref(f"letter-{n - 1}", "VALIDATE")} if n else {"place": {"value": "Paris"}})))
        for n in range(5)]})
    post(A, "private", "records/modify", {"zoneID": TEMP, "operations": [op("create", "draft", "Note", {"text": {"value": "x"}})]})
    held["temp"] = post(A, "private", "records/changes", {"zoneID": TEMP})["syncToken"]
    post(A, "private", "zones/modify", {"operations": [{"operationType": "delete", "zone": {"zoneID": TEMP}}]})
    post(A, "private", "zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": TEMP}}]})
    post(A, "public", "records/modify", {"operations": [op("create", "notice", "Notice", {"text": {"value": "Closed on Mondays"}})]})
    post(B, "public", "records/modify", {"operations": [
        op("create", "reply", "Reply", {"text": {"value": "Thanks"}, "about": ref("notice", "DELETE_SELF")})]})
    held["public"] = post(B, "public", "records/changes", {})["syncToken"]
    post(B, "private", "records/modify", {"operations": [op("create", "todo", "Task", {"done": {"value": False}})]})

    # A user deleted later: their public record stays.
    post(tokens["carol"], "public", "records/modify", {"operations": [op("create", "poster", "Notice", {"text": {"value": "Open late on Thursdays"}})]})
    # The named tokens work (the tablet's is revoked after setup).
    post(tokens["alice/phone"], "private", "zones/list", {})
    post(tokens["alice/tablet"], "private", "zones/list", {})

    # The word and place indexes: the first searches mark Artwork, Artist and (through a
    # subscription) Notice, indexing what they hold; the saves below index their own.
    def names(body, token=A, database="private"):
        return [r["recordName"] for r in post(token, database, "records/query", body)["records"]]
    assert names({"zoneID": GALLERY, "query": {"recordType": "Artwork", "filterBy": [
        {"comparator": "CONTAINS_ALL_TOKENS", "fieldValue": {"value": "impression sunrise"}}]}}) == ["sunrise"]
    assert names({"zoneID": GALLERY, "query": {"recordType": "Artist", "filterBy": [
        {"comparator": "CONTAINS_ANY_TOKENS", "fieldName": "name", "fieldValue": {"value": "edouard claude"}}]}}) == ["manet", "monet"]
    assert names({"zoneID": GALLERY, "query": {"recordType": "Artwork", "filterBy": [
        {"comparator": "NEAR", "fieldName": "place", "distance": 100000, "fieldValue": {"value": {"latitude": 49.07, "longitude": 1.53}}}],
        "sortBy": [{"fieldName": "place", "relativeLocation": {"latitude": 49.07, "longitude": 1.53}}]}}) == ["lilies"]
    held["galleryBeforeAssets"] = post(A, "private", "records/changes", {"zoneID": GALLERY})["syncToken"]
    held["databaseBeforeAssets"] = post(A, "private", "changes/database", {})["syncToken"]

    # Subscriptions, and a webcourier URL whose notifications nobody has polled yet.
    post(A, "private", "subscriptions/modify", {"operations": [
        {"operationType": "create", "subscription": {"subscriptionID": "gallery-changes", "subscriptionType": "zone", "zoneID": GALLERY,
                                                     "notificationInfo": {"shouldSendContentAvailable": True}}},
        {"operationType": "create", "subscription": {
            "subscriptionID": "modern-art", "subscriptionType": "query", "zoneID": GALLERY,
            "query": {"recordType": "Artwork", "filterBy": [{"fieldName": "year", "comparator": "GREATER_THAN", "fieldValue": {"value": 1880}}]},
            "firesOn": ["create", "update", "delete"], "notificationInfo": {"alertBody": "new art", "shouldBadge": True, "soundName": "chime.aiff"}}}]})
    post(B, "public", "subscriptions/modify", {"operations": [
        {"operationType": "create", "subscription": {
            "subscriptionID": "closures", "subscriptionType": "query",
            "query": {"recordType": "Notice", "filterBy": [{"comparator": "CONTAINS_ANY_TOKENS", "fieldName": "text", "fieldValue": {"value": "closed shut"}}]},
            "firesOn": ["create", "update"]}}]})
    courier = post(A, "private", "tokens/create", {"apnsEnvironment": "development"})
    held["webcourier"] = courier["webcourierURL"][len(server.base):]

    # Assets, through the upload URLs.
    def upload(token, database, zone, record_type, field, record_name, name):
        body = {"tokens": [{"recordType": record_type, "fieldName": field, "recordName": record_name}]}
        if zone:
            body["zoneID"] = zone
        url = post(token, database, "assets/upload", body)["tokens"][0]["url"]
        assert url.startswith(server.base), url
        status, answer, _ = server.send("POST", url[len(server.base):], raw=ASSETS[name], headers={"Content-Type": "application/octet-stream"})
        answer = json.loads(answer)
        assert status == 200 and answer["singleFile"]["size"] == len(ASSETS[name]), answer
        return answer["singleFile"]

    study = upload(A, "private", GALLERY, "Artwork", "image", "study", "study")
    sketch = upload(A, "private", GALLERY, "Artwork", "image", "sketch", "sketch")
    pages = [upload(A, "private", GALLERY, "Album", "pages", "album", name) for name in ["page-1", "page-2"]]
    upload(A, "private", GALLERY, "Artwork", "image", "never-saved", "unsaved")
    post(A, "private", "records/modify", {"zoneID": GALLERY, "operations": [
        op("create", "study", "Artwork", {"title": {"value": "Study of Water Lilies"}, "year": {"value": 1905}, "image": {"value": study},
                                          "artist": ref("monet", "DELETE_SELF"), "place": {"value": {"latitude": 49.075, "longitude": 1.534}}}),
        op("create", "sketch", "Artwork", {"title": {"value": "Sketch of a Garden"}, "year": {"value": 1911}, "image": {"value": sketch, "type": "ASSETID"}})]})
    post(A, "private", "records/modify", {"zoneID": GALLERY, "operations": [
        op("create", "album", "Album", {"title": {"value": "Giverny garden album"}, "pages": {"value": pages, "type": "ASSETID_LIST"}})]})
    post(A, "private", "records/modify", {"zoneID": GALLERY, "operations": [op("forceDelete", "sketch")]})
    flyer = upload(B, "public", None, "Event", "flyer", "event", "flyer")
    post(B, "public", "records/modify", {"operations": [
        op("create", "event", "Event", {"title": {"value": "Garden evening"}, "flyer": {"value": flyer}, "when": {"value": 1800000000000, "type": "TIMESTAMP"}})]})

    # A request signed with bob's server-to-server key.
    signed_path = path("public", "records/modify")
    body = json.dumps({"operations": [op("create", "bulletin", "Notice", {"text": {"value": "Closed for the holiday"}})]}).encode()
    status, answer, _ = server.send("POST", signed_path, raw=body, headers=dict(sign(key_file, key_id, signed_path, body), **{"Content-Type": "application/json"}))
    assert status == 200 and "serverErrorCode" not in json.loads(answer)["records"][0], answer
    held["galleryAfterAssets"] = post(A, "private", "records/changes", {"zoneID": GALLERY})["syncToken"]
    held["studyTag"] = post(A, "private", "records/lookup", {"zoneID": GALLERY, "records": [{"recordName": "study"}]})["records"][0]["recordChangeTag"]
    server.stop()

    # Changes made with the server stopped, as an operator makes them.
    run(store, "user", "revoke-token", "alice", "tablet")
    run(store, "user", "delete", "carol", "--yes")
    run(store, "api-token", "revoke", CONTAINER, ENVIRONMENT, "old-web")
    run(store, "assets", "rotate-key")
    del tokens["carol"]
    return {"tokens": tokens, "apiTokens": api_tokens, "keyID": key_id, "held": held}


def usage(store, name):
    match = re.match(r"(\d+) records\t(\d+) bytes", run(store, "user", "usage", name))
    assert match, run(store, "user", "usage", name)
    return int(match.group(1)), int(match.group(2))


def transcript(store, made, key_file, key_pem):
    """Replays what a client sends next against `store` (a copy), recording the answers."""
    tokens, api_tokens, held = made["tokens"], made["apiTokens"], made["held"]
    records, size = usage(store, "alice")
    # One more record fits, two do not; 300 bytes more fit, a record of 700 does not.
    flags = ["--quota-records", str(records + 2), "--quota-bytes", str(size + 300)]
    cli_before = [["user", "list"], ["user", "tokens", "alice"], ["user", "tokens", "bob"], ["user", "keys", "bob"], ["user", "keys", "alice"],
                  ["api-token", "list"], ["user", "profile", "alice"], ["user", "profile", "bob"], ["user", "usage", "alice"], ["user", "usage", "bob"]]
    cli_after = [["user", "usage", "alice"], ["user", "usage", "bob"], ["user", "list"]]

    def cli(arguments):
        result = subprocess.run([binary, *arguments, *store.cli], capture_output=True, text=True)
        return {"arguments": arguments, "status": result.returncode, "output": result.stdout}

    before = [cli(arguments) for arguments in cli_before]
    server = Server(store, flags)
    steps = []

    def http(who, database, endpoint, body=None, method="POST", api=None, signed=None, volatile=False, raw_path=None):
        request_path = raw_path or path(database, endpoint)
        query = f"ckAPIToken={api_tokens[api]}" if api else None
        headers = {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if who:
            headers["Authorization"] = f"Bearer {tokens[who]}"
        data = json.dumps(body).encode() if body is not None else None
        if signed:
            headers.update(sign(key_file, made["keyID"], request_path, data or b""))
        status, answer, _ = server.send(method, request_path, query=query, raw=data, headers=headers)
        answer = json.loads(answer) if answer else None
        steps.append({"kind": "http", "user": who, "apiToken": api, "signedBy": signed, "database": database, "endpoint": endpoint,
                      "method": method, "path": request_path, "query": query, "body": body, "status": status, "answer": answer,
                      "volatile": ["timestamp"] if volatile else []})
        return answer

    def download(at_step, at, range_header=None):
        value = steps[at_step]["answer"]
        for key in at:
            value = value[key]
        url = value.replace("${f}", "file.bin")
        assert url.startswith(server.base), url
        status, data, headers = server.send("GET", url[len(server.base):], headers={"Range": range_header} if range_header else {})
        steps.append({"kind": "download", "from": at_step, "at": at, "range": range_header, "status": status, "size": len(data),
                      "sha256": hashlib.sha256(data).hexdigest(), "contentRange": headers.get("Content-Range")})

    # The notifications queued behind the webcourier URL, first (the collector removes those a
    # day old a minute after the server starts), each once, until none is left.
    while True:
        status, answer, _ = server.send("GET", held["webcourier"])
        assert status == 200
        if json.loads(answer) is None:
            break
        steps.append({"kind": "http", "user": None, "apiToken": None, "signedBy": None, "database": None, "endpoint": "webcourier",
                      "method": "GET", "path": held["webcourier"], "query": None, "body": None, "status": status,
                      "answer": json.loads(answer), "volatile": []})

    names = ["lilies", "sunrise", "haystacks", "olympia", "monet", "manet", "cassatt", "boating", "bath", "study", "sketch", "album", "never-saved"]
    http("alice", "private", "records/lookup", {"zoneID": GALLERY, "records": [{"recordName": n} for n in names]})
    lookup = len(steps) - 1
    http("alice", "private", "records/lookup", {"zoneID": GALLERY, "records": [{"recordName": "lilies"}, {"recordName": "study"}], "include": ["artist"]})
    http("alice", "private", "records/lookup", {"zoneID": ARCHIVE, "records": [{"recordName": f"letter-{n}"} for n in range(5)]})
    http("alice", "private", "zones/list", {})
    http("alice", "private", "zones/lookup", {"zones": [GALLERY, ARCHIVE, TEMP, {"zoneName": "Missing"}]})
    http("alice", "private", "changes/database", {"syncToken": held["database"]})
    http("alice", "private", "changes/database", {"syncToken": held["databaseBeforeAssets"]})
    http("alice", "private", "changes/database", {})
    http("alice", "private", "zones/changes", {"metaSyncToken": held["database"]})
    http("alice", "private", "records/changes", {"zoneID": GALLERY, "resultsLimit": 4})
    http("alice", "private", "records/changes", {"zoneID": GALLERY, "syncToken": held["gallery"]})
    http("alice", "private", "records/changes", {"zoneID": GALLERY, "syncToken": held["galleryBeforeAssets"]})
    http("alice", "private", "records/changes", {"zoneID": GALLERY, "syncToken": held["galleryAfterAssets"]})
    http("alice", "private", "records/changes", {"zoneID": GALLERY, "recordSyncCompact": True})
    http("alice", "private", "changes/zone", {"zones": [{"zoneID": ARCHIVE}, {"zoneID": TEMP, "syncToken": held["temp"]}, {"zoneID": TEMP}]})
    http("alice", "private", "records/changes", {"zoneID": TEMP, "syncToken": held["temp"]})
    http("alice", "private", "records/query", dict(QUERY, continuationMarker=held["marker"]))
    http("alice", "private", "records/query", {"zoneID": GALLERY, "query": {"recordType": "Artwork", "filterBy": [
        {"fieldName": "artist", "comparator": "EQUALS", "fieldValue": {"value": {"recordName": "monet"}}}]}})
    # The word and place indexes as setup left them, and one built now (Letter was never searched).
    http("alice", "private", "records/query", {"zoneID": GALLERY, "query": {"recordType": "Artwork", "filterBy": [
        {"comparator": "CONTAINS_ALL_TOKENS", "fieldValue": {"value": "WATER lilies"}}]}})
    http("alice", "private", "records/query", {"zoneID": GALLERY, "query": {"recordType": "Artwork", "filterBy": [
        {"comparator": "CONTAINS_ANY_TOKENS", "fieldName": "tags", "fieldValue": {"value": "garden pond"}}]}})
    http("alice", "private", "records/query", {"zoneID": GALLERY, "query": {"recordType": "Artist", "filterBy": [
        {"comparator": "CONTAINS_ALL_TOKENS", "fieldName": "name", "fieldValue": {"value": "edouard"}}]}})
    http("alice", "private", "records/query", {"zoneID": GALLERY, "query": {"recordType": "Artwork", "filterBy": [
        {"comparator": "NEAR", "fieldName": "place", "distance": 2000, "fieldValue": {"value": {"latitude": 49.07, "longitude": 1.531}}}],
        "sortBy": [{"fieldName": "place", "relativeLocation": {"latitude": 49.07, "longitude": 1.531}}]}})
    http("alice", "private", "records/query", {"zoneID": ARCHIVE, "query": {"recordType": "Letter", "filterBy": [
        {"comparator": "CONTAINS_ALL_TOKENS", "fieldValue": {"value": "theo arles"}}], "sortBy": [{"fieldName": "n", "ascending": False}]}})
    http("alice", "private", "subscriptions/list", {})
    http("alice", "private", "subscriptions/lookup", {"subscriptions": [{"subscriptionID": "modern-art"}, {"subscriptionID": "missing"}]})
    http("bob", "public", "subscriptions/list", {})
    http("alice", "public", "users/caller", None, method="GET")
    http("bob", "public", "users/lookup/email", {"users": [{"emailAddress": "Alice@Example.com"}, {"emailAddress": "bob@example.com"}]})
    http("bob", "public", "users/current", {})
    http("bob", "public", "records/changes", {"syncToken": held["public"]})
    http("bob", "public", "records/lookup", {"records": [{"recordName": n} for n in ["notice", "reply", "poster", "event", "bulletin"]]})
    http("bob", "private", "records/lookup", {"records": [{"recordName": "todo"}]})
    # A signed-out visitor with the API token, and with the revoked one.
    http(None, "public", "records/query", {"query": {"recordType": "Notice", "filterBy": [
        {"comparator": "CONTAINS_ANY_TOKENS", "fieldValue": {"value": "closed"}}]}}, api="web")
    http(None, "public", "records/lookup", {"records": [{"recordName": "event"}]}, api="web")
    visitor_lookup = len(steps) - 1
    http(None, "public", "zones/list", None, method="GET", api="web")
    http(None, "private", "records/lookup", {"records": [{"recordName": "todo"}]}, api="web")
    http(None, "public", "records/modify", {"operations": [op("create", "graffiti", "Notice", {"text": {"value": "hi"}})]}, api="web")
    http(None, "public", "records/query", {"query": {"recordType": "Notice"}}, api="old-web")
    http(None, "public", "records/query", {"query": {"recordType": "Notice"}})
    # Each named token: working, revoked, expired.
    http("alice/phone", "public", "users/caller", {})
    http("alice/laptop", "private", "zones/list", {})
    http("alice/tablet", "private", "zones/list", {})
    http("alice/kiosk", "private", "zones/list", {})
    # The assets' bytes, through the links the replay's own answers give.
    fields = {name: i for i, name in enumerate(names)}
    download(lookup, ["records", fields["study"], "fields", "image", "value", "downloadURL"])
    download(lookup, ["records", fields["study"], "fields", "image", "value", "downloadURL"], "bytes=100-199")
    download(lookup, ["records", fields["album"], "fields", "pages", "value", 1, "downloadURL"])
    download(visitor_lookup, ["records", 0, "fields", "flyer", "value", "downloadURL"])
    # Server-to-server: a signed write in the public database, refused in the private one.
    http(None, "public", "records/modify", {"operations": [op("create", "bulletin-2", "Notice", {"text": {"value": "Closed on Tuesday too"}})]},
         signed="backend", volatile=True)
    http(None, "private", "records/lookup", {"records": [{"recordName": "todo"}]}, signed="backend")
    # Quotas over the usage carried over: one more record fits, a large one and two more do not.
    http("alice", "private", "records/modify", {"zoneID": TEMP, "operations": [op("create", "quota-1", "Note", {"text": {"value": "fits"}})]}, volatile=True)
    http("alice", "private", "records/modify", {"zoneID": TEMP, "operations": [op("create", "quota-2", "Note", {"text": {"value": "y" * 700}})]})
    http("alice", "private", "records/modify", {"zoneID": TEMP, "operations": [
        op("create", "quota-3", "Note", {"text": {"value": "a"}}), op("create", "quota-4", "Note", {"text": {"value": "b"}})]})
    # A tag held from before still matches; an older one is a conflict.
    http("alice", "private", "records/modify", {"zoneID": GALLERY, "operations": [
        op("update", "lilies", "Artwork", {"title": {"value": "Stale"}}, tag="1")]})
    http("alice", "private", "records/modify", {"zoneID": GALLERY, "operations": [
        op("update", "sunrise", "Artwork", {"title": {"value": "Impression, soleil levant"}}, tag=held["sunriseTag"])]}, volatile=True)
    http("alice", "private", "records/modify", {"zoneID": GALLERY, "operations": [
        op("update", "study", "Artwork", {"year": {"value": 1904}}, tag=held["studyTag"])]}, volatile=True)
    http("alice", "private", "records/query", {"zoneID": GALLERY, "query": {"recordType": "Artwork", "filterBy": [
        {"comparator": "CONTAINS_ANY_TOKENS", "fieldValue": {"value": "lilies soleil"}}]}}, volatile=True)
    http("alice", "private", "records/modify", {"zoneID": GALLERY, "operations": [op("delete", "manet", tag=held["manetTag"])]})
    http("alice", "private", "records/modify", {"zoneID": GALLERY, "operations": [op("forceDelete", "monet")]})
    http("alice", "private", "records/changes", {"zoneID": GALLERY, "syncToken": held["galleryAfterAssets"]}, volatile=True)
    http("alice", "private", "changes/database", {"syncToken": held["databaseBeforeAssets"]})
    http("bob", "public", "records/modify", {"operations": [op("forceDelete", "notice")]})
    http("alice", "public", "records/modify", {"operations": [op("forceDelete", "notice")]})
    http("bob", "public", "records/changes", {"syncToken": held["public"]}, volatile=True)
    http("bob", "public", "records/modify", {"operations": [op("forceDelete", "poster")]})
    server.stop()
    after = [cli(arguments) for arguments in cli_after]
    return {"container": CONTAINER, "environment": ENVIRONMENT, "serverArguments": flags,
            "tokens": tokens, "apiTokens": api_tokens, "keys": {"backend": {"keyID": made["keyID"], "privateKey": key_pem}},
            "cliBefore": before, "steps": steps, "cliAfter": after}


SERVER = re.compile(r"^http://127\.0\.0\.1:\d+")


def comparable(value, volatile=()):
    """What the test compares: no error uuid, no server address, no signed link, and the
    step's volatile keys null."""
    if isinstance(value, dict):
        return {key: (None if key in volatile else comparable(member, volatile)) for key, member in value.items() if key != "uuid"}
    if isinstance(value, list):
        return [comparable(member, volatile) for member in value]
    if isinstance(value, str):
        if "/assets/1/download/" in value:
            return "{download}"
        return SERVER.sub("{server}", value)
    return value


def normalised(made):
    steps = [dict(step, answer=comparable(step.get("answer"), step.get("volatile", []))) for step in made["steps"]]
    return {"cliBefore": made["cliBefore"], "steps": steps, "cliAfter": made["cliAfter"]}


def replay_twice(label, fresh_copy, made, key_file, key_pem):
    runs = []
    for attempt in range(2):
        store, cleanup = fresh_copy(attempt)
        try:
            runs.append(transcript(store, made, key_file, key_pem))
        finally:
            cleanup()
    first, second = normalised(runs[0]), normalised(runs[1])
    if first != second:
        for index, (a, b) in enumerate(zip(first["steps"], second["steps"])):
            if a != b:
                print(f"{label}: step {index} differs:\n {json.dumps(a, sort_keys=True)}\n {json.dumps(b, sort_keys=True)}", file=sys.stderr)
        raise SystemExit(f"{label}: two replays differ after normalisation")
    return runs[0]


def write(name, value):
    with open(os.path.join(output, name), "w") as file:
        json.dump(value, file, indent=1, sort_keys=True, ensure_ascii=False)
        file.write("\n")


os.makedirs(output)
work = tempfile.mkdtemp(prefix="release-54bfe40-")
key_file = os.path.join(work, "backend.pem")
subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key_file], check=True)
subprocess.run(["openssl", "ec", "-in", key_file, "-pubout", "-out", key_file + ".pub"], check=True, stderr=subprocess.DEVNULL)
key_pem = open(key_file).read()

# SQLite.
data = os.path.join(output, "data")
sqlite_made = setup(Store(data=data), key_file)
incoming = os.path.join(data, "assets", "incoming")
if os.path.isdir(incoming) and not os.listdir(incoming):
    os.rmdir(incoming)
leftovers = [name for name in os.listdir(data) if name.endswith(("-wal", "-shm"))]
assert not leftovers, f"the server left {leftovers}"


def sqlite_copy(attempt):
    scratch = os.path.join(work, f"sqlite-replay-{attempt}")
    shutil.copytree(data, scratch)
    return Store(data=scratch), lambda: shutil.rmtree(scratch)


sqlite_run = replay_twice("SQLite", sqlite_copy, sqlite_made, key_file, key_pem)
write("transcript.json", sqlite_run)

# PostgreSQL.
url = fresh_database("fixture54")
pg_scratch = os.path.join(work, "pg-node")
os.makedirs(pg_scratch)
pg_made = setup(Store(url=url, scratch=pg_scratch), key_file)
dump = subprocess.run([PG_DUMP, "--no-owner", "--no-privileges", url], capture_output=True, text=True, check=True).stdout
dump = "".join(line for line in dump.splitlines(keepends=True) if not line.startswith(("\\restrict ", "\\unrestrict ")))
with open(os.path.join(output, "postgres.sql"), "w") as file:
    file.write(dump)
drop_database("fixture54")


def postgres_copy(attempt):
    name = f"fixture54_replay{attempt}"
    copy_url = fresh_database(name)
    psql(copy_url, "-f", os.path.join(output, "postgres.sql"))
    scratch = os.path.join(work, f"pg-replay-{attempt}")
    os.makedirs(scratch)
    return Store(url=copy_url, scratch=scratch), lambda: (drop_database(name), shutil.rmtree(scratch))


postgres_run = replay_twice("PostgreSQL", postgres_copy, pg_made, key_file, key_pem)
write("transcript-postgres.json", postgres_run)
shutil.rmtree(work)
print(f"{len(sqlite_run['steps'])} steps on SQLite, {len(postgres_run['steps'])} on PostgreSQL; output in {output}")
