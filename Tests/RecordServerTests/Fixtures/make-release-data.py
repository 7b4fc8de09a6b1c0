#!/usr/bin/env python3
"""Writes the data directory that OldDataDirectoryTests opens, with a server of an earlier release.

    python3 make-release-data.py RECORDSERVER_BINARY OUTPUT_FOLDER

It was run once, with the `recordserver` built from commit c9f8f83 (the last release before the
CloudKit rules moved above the storage protocol), and its output is committed: `data/` (the data
directory, as that server left it after a graceful shutdown) and `transcript.json`. Never run it
again over the committed output: the point is that the data was written by the old binary.

The setup phase writes users, zones (one deleted and created again), records of every field type,
references of every action, an update, deletes and a cascade, in private and public databases,
and keeps the change tokens, continuation marker and change tags a client would hold. The server
is then stopped, the data directory copied aside, and the transcript phase runs against the same
old server restarted on a copy: every request a client holding those tokens would send next
(lookups, change pages since the held tokens, the database feed, a query page after the held
marker, a conflict with a stale tag, then new writes and the changes since), with the answers
the old server gave. The test replays the transcript against the new server over the committed
data directory and expects the same answers (timestamps of records written during the replay
excepted).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request

binary, output = sys.argv[1], sys.argv[2]
CONTAINER = "iCloud.test.Release"


def start(data):
    process = subprocess.Popen([binary, "--port", "0", "--data", data], stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if match:
            return process, int(match.group(1))
    raise SystemExit("recordserver did not start")


def stop(process):
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def user(data, name):
    return subprocess.check_output([binary, "user", "add", name, "--data", data], text=True).strip()


def post(port, token, database, endpoint, body):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/database/1/{CONTAINER}/development/{database}/{endpoint}",
        data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


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


data = os.path.join(output, "data")
os.makedirs(data)
tokens = {"alice": user(data, "alice"), "bob": user(data, "bob")}
held = {}
process, port = start(data)
A, B = tokens["alice"], tokens["bob"]


def must(status_body):
    status, body = status_body
    assert status == 200, body
    for result in body.get("records", []) + body.get("zones", []):
        assert "serverErrorCode" not in result, result
    return body


must(post(port, A, "private", "zones/modify", {"operations": [
    {"operationType": "create", "zone": {"zoneID": {"zoneName": name}}} for name in ["Gallery", "Archive", "Temp"]]}))
held["database"] = must(post(port, A, "private", "changes/database", {}))["syncToken"]
gallery = {"zoneName": "Gallery"}
first = must(post(port, A, "private", "records/modify", {"zoneID": gallery, "operations": [
    op("create", "lilies", "Artwork", {
        "title": {"value": "Water Lilies"}, "year": {"value": 1906}, "price": {"value": 12.5},
        "acquired": {"value": 1700000000000, "type": "TIMESTAMP"}, "thumbnail": {"value": "AAEC", "type": "BYTES"},
        "place": {"value": {"latitude": 49.07, "longitude": 1.53}}, "tags": {"value": ["water", "garden"]},
        "scan": {"value": {"fileChecksum": "abc", "size": 3}, "type": "ASSETID"},
        "artist": ref("monet", "DELETE_SELF"), "related": {"value": [{"recordName": "sunrise"}, {"recordName": "olympia", "action": "NONE"}]},
    }),
    op("create", "sunrise", "Artwork", {"title": {"value": "Impression, Sunrise"}, "year": {"value": 1872}, "artist": ref("monet", "DELETE_SELF")}),
    op("create", "haystacks", "Artwork", {"title": {"value": "Haystacks"}, "year": {"value": 1890}, "artist": ref("monet", "DELETE_SELF")}),
    op("create", "olympia", "Artwork", {"title": {"value": "Olympia"}, "year": {"value": 1863}, "artist": ref("manet", "VALIDATE")}),
    op("create", "monet", "Artist", {"name": {"value": "Claude Monet"}, "born": {"value": 1840}}),
    op("create", "manet", "Artist", {"name": {"value": "Édouard Manet"}, "born": {"value": 1832}}),
    op("create", "cassatt", "Artist", {"name": {"value": "Mary Cassatt"}, "born": {"value": 1844}}),
    op("create", "boating", "Artwork", {"title": {"value": "The Boating Party"}, "year": {"value": 1893}, "artist": ref("cassatt", "DELETE_SELF")}),
    op("create", "bath", "Artwork", {"title": {"value": "The Child's Bath"}, "year": {"value": 1893}, "artist": ref("cassatt", "DELETE_SELF")}),
]}))
held["manetTag"] = next(r["recordChangeTag"] for r in first["records"] if r["recordName"] == "manet")
held["gallery"] = must(post(port, A, "private", "records/changes", {"zoneID": gallery}))["syncToken"]
updated = must(post(port, A, "private", "records/modify", {"zoneID": gallery, "operations": [
    op("forceUpdate", "sunrise", "Artwork", {"year": {"value": 1873}, "note": {"value": "dated 1872 on the canvas"}})]}))
held["sunriseTag"] = updated["records"][0]["recordChangeTag"]
must(post(port, A, "private", "records/modify", {"zoneID": gallery, "operations": [op("forceDelete", "cassatt")]}))
must(post(port, A, "private", "records/modify", {"zoneID": gallery, "operations": [op("forceDelete", "haystacks")]}))
query = {"zoneID": gallery, "resultsLimit": 2, "query": {"recordType": "Artwork", "sortBy": [{"fieldName": "year", "ascending": True}]}}
held["marker"] = must(post(port, A, "private", "records/query", query))["continuationMarker"]

archive = {"zoneName": "Archive"}
must(post(port, A, "private", "records/modify", {"zoneID": archive, "operations": [
    op("create", f"letter-{n}", "Letter", dict({"n": {"value": n}}, **({"replyTo": ref(f"letter-{n - 1}", "VALIDATE")} if n else {"place": {"value": "Paris"}}))) for n in range(5)]}))

temp = {"zoneName": "Temp"}
must(post(port, A, "private", "records/modify", {"zoneID": temp, "operations": [op("create", "draft", "Note", {"text": {"value": "x"}})]}))
held["temp"] = must(post(port, A, "private", "records/changes", {"zoneID": temp}))["syncToken"]
must(post(port, A, "private", "zones/modify", {"operations": [{"operationType": "delete", "zone": {"zoneID": temp}}]}))
must(post(port, A, "private", "zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": temp}}]}))

must(post(port, A, "public", "records/modify", {"operations": [op("create", "notice", "Notice", {"text": {"value": "Closed on Mondays"}})]}))
must(post(port, B, "public", "records/modify", {"operations": [
    op("create", "reply", "Reply", {"text": {"value": "Thanks"}, "about": ref("notice", "DELETE_SELF")})]}))
held["public"] = must(post(port, B, "public", "records/changes", {}))["syncToken"]
must(post(port, B, "private", "records/modify", {"operations": [op("create", "todo", "Task", {"done": {"value": False}})]}))
stop(process)

# The transcript, against the old server restarted on a copy (the committed data stays as the
# setup left it).
scratch = os.path.join(output, "scratch")
shutil.copytree(data, scratch)
process, port = start(scratch)
steps = []


def step(who, database, endpoint, body, volatile=False):
    status, answer = post(port, tokens[who], database, endpoint, body)
    steps.append({"user": who, "database": database, "endpoint": endpoint, "body": body,
                  "status": status, "answer": answer, "volatileTimestamps": volatile})
    return answer


step("alice", "private", "records/lookup", {"zoneID": gallery, "records": [
    {"recordName": n} for n in ["lilies", "sunrise", "haystacks", "olympia", "monet", "manet", "cassatt", "boating", "bath"]]})
step("alice", "private", "records/lookup", {"zoneID": gallery, "records": [{"recordName": "lilies"}], "include": ["artist"]})
step("alice", "private", "records/lookup", {"zoneID": archive, "records": [{"recordName": f"letter-{n}"} for n in range(5)]})
step("alice", "private", "zones/list", {})
step("alice", "private", "zones/lookup", {"zones": [gallery, archive, temp, {"zoneName": "Missing"}]})
step("alice", "private", "changes/database", {"syncToken": held["database"]})
step("alice", "private", "changes/database", {})
step("alice", "private", "records/changes", {"zoneID": gallery, "resultsLimit": 4})
step("alice", "private", "records/changes", {"zoneID": gallery, "syncToken": held["gallery"]})
step("alice", "private", "records/changes", {"zoneID": temp, "syncToken": held["temp"]})
step("alice", "private", "records/changes", {"zoneID": temp})
step("alice", "private", "records/query", dict(query, continuationMarker=held["marker"]))
step("alice", "private", "records/query", {"zoneID": gallery, "query": {"recordType": "Artwork", "filterBy": [
    {"fieldName": "artist", "comparator": "EQUALS", "fieldValue": {"value": {"recordName": "monet"}}}]}})
step("bob", "public", "records/changes", {"syncToken": held["public"]})
step("bob", "public", "records/lookup", {"records": [{"recordName": "notice"}, {"recordName": "reply"}]})
step("bob", "private", "records/lookup", {"records": [{"recordName": "todo"}]})
# A tag held from before still matches; an older one is a conflict.
step("alice", "private", "records/modify", {"zoneID": gallery, "operations": [
    op("update", "lilies", "Artwork", {"title": {"value": "Stale"}}, tag="1")]})
step("alice", "private", "records/modify", {"zoneID": gallery, "operations": [
    op("update", "sunrise", "Artwork", {"title": {"value": "Impression, soleil levant"}}, tag=held["sunriseTag"])]}, volatile=True)
step("alice", "private", "records/modify", {"zoneID": gallery, "operations": [op("delete", "manet", tag=held["manetTag"])]})
step("alice", "private", "records/modify", {"zoneID": gallery, "operations": [op("forceDelete", "monet")]})
latest = step("alice", "private", "records/changes", {"zoneID": gallery, "syncToken": held["gallery"]}, volatile=True)
step("bob", "public", "records/modify", {"operations": [op("forceDelete", "notice")]})
step("alice", "public", "records/modify", {"operations": [op("forceDelete", "notice")]})
step("bob", "public", "records/changes", {"syncToken": held["public"]})
stop(process)
shutil.rmtree(scratch)

with open(os.path.join(output, "transcript.json"), "w") as file:
    json.dump({"container": CONTAINER, "tokens": tokens, "steps": steps}, file, indent=1, sort_keys=True, ensure_ascii=False)
    file.write("\n")
print(f"{len(steps)} steps; data in {data}")
