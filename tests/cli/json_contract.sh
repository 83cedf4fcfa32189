#!/bin/bash
# json_contract.sh - every --json output is exactly one JSON document on
# stdout with the documented keys and types (DESIGN "Commands",
# "Checkpoints"): list, show, create, restore (and --dry-run), undo, redo,
# rollback, prune, drop, delete, gc, fsck, recover.  Strings with quotes, control
# characters, non-ASCII and non-UTF-8 bytes must survive JSON encoding, and
# failures print no partial JSON, only the error document.  The schemas of
# docs/schema/ are checked by json_schema.sh.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

D() { "$DECREE" "$@"; }
# t_schema NAME PYTHON: run $OUT through python with d = the parsed document;
# the snippet uses `need(cond, msg)`; ok if nothing failed.  The whole of
# stdout must be one document (json.loads of everything).
t_schema() {
	local nm=$1 code=$2
	if printf '%s' "$OUT" | python3 -c '
import json, re, sys
raw = sys.stdin.buffer.read()
try:
    text = raw.decode("utf-8")
except UnicodeDecodeError as e:
    print("stdout is not UTF-8: %s" % e); sys.exit(1)
try:
    d = json.loads(text)
except ValueError as e:
    print("not exactly one JSON document: %s" % e); sys.exit(1)
bad = []
def need(cond, msg):
    if not cond: bad.append(msg)
HEX64 = re.compile(r"^[0-9a-f]{64}$")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
def isint(v): return isinstance(v, int) and not isinstance(v, bool)
def strnull(v): return v is None or isinstance(v, str)
def checkpoint_summary(c, where):
    for k in ("id", "session", "message", "label", "created_at", "file_count", "total_bytes", "has_changes"):
        need(k in c, "%s: key %s missing" % (where, k))
    need(isinstance(c.get("id"), str) and HEX64.match(c["id"]), "%s: id not 64 hex" % where)
    need(isinstance(c.get("session"), str) and c["session"], "%s: session not a non-empty string" % where)
    need(strnull(c.get("message")), "%s: message not string/null" % where)
    need(strnull(c.get("label")), "%s: label not string/null" % where)
    need(isinstance(c.get("created_at"), str) and RFC3339.match(c["created_at"]), "%s: created_at not RFC 3339 UTC" % where)
    need(isint(c.get("file_count")) and c["file_count"] >= 0, "%s: file_count not an int >= 0" % where)
    need(isint(c.get("total_bytes")) and c["total_bytes"] >= 0, "%s: total_bytes not an int >= 0" % where)
    need(isinstance(c.get("has_changes"), bool), "%s: has_changes not a bool" % where)
    need(isinstance(c.get("tree"), str) and HEX64.match(c["tree"]), "%s: tree not 64 hex" % where)
    for k in ("files_changed", "insertions", "deletions"):
        need(k in c and (c[k] is None or (isint(c[k]) and c[k] >= 0)), "%s: %s not an int >= 0 or null" % (where, k))
def changes_report(d, op):
    need(isinstance(d, dict), "not an object")
    need(isinstance(d.get("changes"), list), "changes not a list")
    for i, c in enumerate(d.get("changes") or []):
        need(isinstance(c, dict) and isinstance(c.get("path"), str) and c.get("action") in ("restore", "delete", "create", "replace"),
             "changes[%d] malformed: %r" % (i, c))
    # "replace" (a directory or special file in the way) counts as restored
    for k, a in (("created", ("create",)), ("restored", ("restore", "replace")), ("deleted", ("delete",))):
        if k in d:
            need(isinstance(d[k], list) and d[k] == [c["path"] for c in d["changes"] if c.get("action") in a],
                 "%s=%r does not list the paths of the %s changes" % (k, d[k], "/".join(a)))
    need(isinstance(d.get("skipped_user_edits"), list), "skipped_user_edits not a list")
    if "dry_run" in d: need(isinstance(d["dry_run"], bool), "dry_run not bool")
    if "operation" in d: need(d["operation"] == op, "operation %r, wanted %r" % (d["operation"], op))
exec(sys.argv[1])
if bad:
    print("\n".join(bad)); print("document: " + text[:1500]); sys.exit(1)
' "$code" >"$SCRATCH/.why" 2>&1; then ok "$nm"; else not_ok "$nm" "$(cat "$SCRATCH/.why")"; fi
}

P=$SCRATCH/proj
mkdir -p "$P/dir" "$P/.decree" && cd "$P" || exit 1
printf 'checkpoint:\n  max_file_size: 1K\n' >.decree/config.yml
printf 'plain\n' >plain.txt
printf '#!/bin/sh\n' >run.sh && chmod 755 run.sh
ln -s plain.txt link
: >empty
head -c 3000 /dev/zero >big.bin
printf 'a\n' >$'bad\xff.txt'
printf 'b\n' >'badÿ.txt'
printf 'c\n' >$'q"b\\s\tt\nn.txt'
printf 'd\n' >$'ctl\x01\x1f.txt'
printf 'e\n' >'ünï cödé ✓.txt'
printf 'f\n' >dir/nested.txt

# ----- create / list / show ---------------------------------------------------------
MSG=$'he said "hi"\n\\ é\ttab \x01'
t "create --json" D --json checkpoint create --session 'sess "one"' --message "$MSG" --label $'lab\\el'
t_schema "create --json: one object with a 64-hex id" '
need(isinstance(d, dict) and isinstance(d.get("id"), str) and HEX64.match(d["id"]), "no 64-hex id")
need(sorted(d) == ["created", "id", "notices", "tree"], "keys %r" % sorted(d))
need(isinstance(d["notices"], list), "notices is no list")
need(isinstance(d.get("tree"), str) and HEX64.match(d["tree"]), "no 64-hex tree")
if "created" in d: need(d["created"] is True, "created should be true for a new checkpoint")'
X=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
t "create --json again (same session and message)" D --json checkpoint create --session 'sess "one"' --message "$MSG"
t_schema "repeat create --json: same id" '
need(d.get("id") == "'"$X"'", "different id %r" % d.get("id"))
if "created" in d: need(d["created"] is False, "created should be false for the existing checkpoint")'
t "create --json without message or label" D --json checkpoint create
Y=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' 2>/dev/null)

t "list --json" D --json checkpoint list
t_schema "list --json: {checkpoints:[...]} with the documented keys and types" '
need(isinstance(d, dict) and isinstance(d.get("checkpoints"), list), "no checkpoints list")
for i, c in enumerate(d["checkpoints"]): checkpoint_summary(c, "checkpoints[%d]" % i)
need(len(d["checkpoints"]) == 2, "want 2 checkpoints, got %d" % len(d["checkpoints"]))'
t_schema "list --json: strings round-trip (session, message, label)" '
c = [c for c in d["checkpoints"] if c["id"] == "'"$X"'"][0]
need(c["session"] == "sess \"one\"", "session %r" % c["session"])
need(c["message"] == "he said \"hi\"\n\\ \u00e9\ttab \x01", "message %r" % c["message"])
need(c["label"] == "lab\\el", "label %r" % c["label"])
o = [c for c in d["checkpoints"] if c["id"] != "'"$X"'"][0]
need(o["message"] is None and o["label"] is None, "absent message/label should be null: %r %r" % (o["message"], o["label"]))
need(o["session"] == "default", "default session %r" % o["session"])'
t_schema "list --json: file_count/total_bytes count stored files only (big.bin skipped)" '
c = [c for c in d["checkpoints"] if c["id"] == "'"$X"'"][0]
need(c["file_count"] == 10, "file_count %r, want 10" % c["file_count"])
need(c["total_bytes"] == 6 + 10 + 9 + 0 + 2*5 + 2, "total_bytes %r" % c["total_bytes"])'
t "list --json --session" D --json checkpoint list --session 'sess "one"'
t_schema "list --json --session filters" 'need([c["id"] for c in d["checkpoints"]] == ["'"$X"'"], "got %r" % d["checkpoints"])'
t "list --json for an unknown session" D --json checkpoint list --session nobody
t_schema "... is an empty list" 'need(d == {"checkpoints": []}, "got %r" % d)'

t "show --json" D --json checkpoint show "$X"
t_schema "show --json: files with path/sha256/size/mode, skipped with path/size/reason" '
need(isinstance(d, dict), "not an object")
need(isinstance(d.get("files"), list) and isinstance(d.get("skipped"), list), "files/skipped not lists")
for i, f in enumerate(d.get("files", [])):
    need(isinstance(f.get("path"), str) and f["path"], "files[%d].path" % i)
    need(isinstance(f.get("sha256"), str) and HEX64.match(f["sha256"]), "files[%d].sha256" % i)
    need(isint(f.get("size")) and f["size"] >= 0, "files[%d].size" % i)
    need(f.get("mode") in ("644", "755", "120000"), "files[%d].mode %r" % (i, f.get("mode")))
for i, s in enumerate(d.get("skipped", [])):
    need(isinstance(s.get("path"), str) and isint(s.get("size")) and isinstance(s.get("reason"), str) and s["reason"], "skipped[%d] %r" % (i, s))
need([s["path"] for s in d["skipped"]] == ["big.bin"] and d["skipped"][0]["size"] == 3000, "skipped %r" % d["skipped"])
if "id" in d: need(d["id"] == "'"$X"'", "id")
modes = {f["path"]: f["mode"] for f in d["files"]}
need(modes.get("run.sh") == "755" and modes.get("plain.txt") == "644" and modes.get("link") == "120000", "modes %r" % modes)
sizes = {f["path"]: f["size"] for f in d["files"]}
need(sizes.get("empty") == 0 and sizes.get("dir/nested.txt") == 2, "sizes %r" % sizes)'
t_schema "show --json: odd file names round-trip exactly" '
paths = set(f["path"] for f in d["files"])
for want in ["q\"b\\s\tt\nn.txt", "ctl\x01\x1f.txt", "\u00fcn\u00ef c\u00f6d\u00e9 \u2713.txt", "dir/nested.txt", "bad\u00ff.txt"]:
    need(want in paths, "missing %r in %r" % (want, sorted(paths)))'
t_schema "show --json: distinct names stay distinct (non-UTF-8 bad\\xff.txt vs UTF-8 badÿ.txt)" '
need(len(d["files"]) == len(set(f["path"] for f in d["files"])), "two files share one JSON path: %r" % sorted(f["path"] for f in d["files"]))'
t_schema "show --json: sha256 of plain.txt is the SHA-256 of its bytes" '
import hashlib
s = {f["path"]: f["sha256"] for f in d["files"]}
need(s.get("plain.txt") == hashlib.sha256(b"plain\n").hexdigest(), "sha256 %r" % s.get("plain.txt"))'

# ----- restore / undo / redo ------------------------------------------------------------
rm plain.txt && printf 'changed\n' >dir/nested.txt && printf 'new\n' >new.txt
t "restore --json --dry-run" D --json checkpoint restore "$X" --dry-run
t_schema "restore --dry-run --json: changes with path/action, counts match" '
changes_report(d, "restore")
need(d.get("dry_run") is True, "dry_run should be true")
got = sorted((c["action"], c["path"]) for c in d["changes"])
need(got == [("create", "plain.txt"), ("delete", "new.txt"), ("restore", "dir/nested.txt")], "changes %r" % got)'
t "restore --json" D --json checkpoint restore "$X"
t_schema "restore --json: same changes, dry_run false" '
changes_report(d, "restore")
if "dry_run" in d: need(d["dry_run"] is False, "dry_run should be false")
got = sorted((c["action"], c["path"]) for c in d["changes"])
need(got == [("create", "plain.txt"), ("delete", "new.txt"), ("restore", "dir/nested.txt")], "changes %r" % got)
if "checkpoint" in d: need(d["checkpoint"] == "'"$X"'", "checkpoint %r" % d["checkpoint"])'
t "undo --json --dry-run" D --json undo --dry-run
t_schema "undo --dry-run --json" 'changes_report(d, "undo"); need(len(d["changes"]) == 3, "want 3 changes")'
t "undo --json" D --json undo
t_schema "undo --json: reverses the three changes" '
changes_report(d, "undo")
got = sorted((c["action"], c["path"]) for c in d["changes"])
need(got == [("create", "new.txt"), ("delete", "plain.txt"), ("restore", "dir/nested.txt")], "changes %r" % got)'
t "redo --json" D --json redo
t_schema "redo --json" 'changes_report(d, "redo"); need(len(d["changes"]) == 3, "want 3 changes")'
t "restore --json of the current state (no-op)" D --json checkpoint restore "$X"
t_schema "no-op restore --json: empty changes" 'changes_report(d, "restore"); need(d["changes"] == [], "changes %r" % d["changes"])'
t "restore --json -- PATH" D --json checkpoint restore "$Y" -- dir/nested.txt
t_schema "per-path restore --json" 'changes_report(d, "restore")'

# ----- rollback ------------------------------------------------------------------------------
t "rollback --json" D --json rollback
t_schema "rollback --json: numbered list, newest first" '
cs = d.get("checkpoints")
need(isinstance(cs, list) and cs, "no checkpoints list")
nck = ncap = 0
for i, c in enumerate(cs or []):
    if c.get("kind") == "capture":
        ncap += 1
        need(c.get("n") is None and c.get("ref") == "u%d" % ncap, "capture n %r ref %r at %d" % (c.get("n"), c.get("ref"), i))
    else:
        nck += 1
        need(c.get("kind") == "checkpoint" and c.get("n") == nck and c.get("ref") == str(nck), "n %r ref %r at %d" % (c.get("n"), c.get("ref"), i))
    need(isinstance(c.get("id"), str) and HEX64.match(c["id"]), "id")
    need(isinstance(c.get("created_at"), str) and RFC3339.match(c["created_at"]), "created_at")
    need(strnull(c.get("label")) and strnull(c.get("message")), "label/message")
    need(isinstance(c.get("session"), str), "session")
    need(isinstance(c.get("tree"), str) and HEX64.match(c["tree"]), "tree")
    diff = [v for k, v in c.items() if "differ" in k]
    need(len(diff) == 1 and isint(diff[0]) and diff[0] >= 0, "how many files differ: %r" % c)
need([c["created_at"] for c in cs] == sorted([c["created_at"] for c in cs], reverse=True), "not newest first")'
t "rollback --json --session default" D --json rollback --session default
t_schema "rollback --json --session: only that session" 'need(all(c["session"] == "default" for c in d["checkpoints"]), "other sessions listed")'
t "rollback 1 --json" D --json rollback 1
t_schema "rollback N --json: a restore report" 'changes_report(d, "restore")'

# ----- prune / drop / gc / fsck / recover ------------------------------------------------------
t "prune --json" D --json checkpoint prune --keep 1
t_schema "prune --json: removed count" 'need(isinstance(d, dict) and isint(d.get("removed")) and d["removed"] >= 0, "removed %r" % d)'
t "gc --dry-run --json" D --json gc --dry-run
t_schema "gc --dry-run --json" '
need(d.get("dry_run") is True, "dry_run")
for k in ("objects_freed", "bytes_freed", "objects_kept"): need(isint(d.get(k)) and d[k] >= 0, "%s %r" % (k, d.get(k)))'
t "gc --json" D --json gc
t_schema "gc --json" '
need(d.get("dry_run") is False, "dry_run")
for k in ("objects_freed", "bytes_freed", "objects_kept"): need(isint(d.get(k)) and d[k] >= 0, "%s %r" % (k, d.get(k)))'
t "fsck --json" D --json fsck
t_schema "fsck --json: ok true, no problems" 'need(d.get("ok") is True and d.get("problems") == [], "%r" % d)'
t "recover --json" D --json recover
t_schema "recover --json" 'need(isinstance(d, dict) and isinstance(d.get("recovered"), bool), "%r" % d)'
t "create --json (one to delete)" D --json checkpoint create --session del
Z=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' 2>/dev/null)
t "delete --json" D --json checkpoint delete "$Z"
t_schema "delete --json: {deleted: id}" 'need(d == {"deleted": "'"$Z"'"}, "%r" % d)'
t "drop --json" D --json checkpoint drop --session 'sess "one"'
t_schema "drop --session --json: removed count" 'need(isint(d.get("removed")) and d["removed"] >= 1, "%r" % d)'
t "drop --all --json" D --json checkpoint drop --all
t_schema "drop --all --json: removed count" 'need(isint(d.get("removed")), "%r" % d)'

# ----- failures with --json: error on stderr, no partial document on stdout ------------------
for args in "checkpoint show ffffffff" "checkpoint restore ffffffff" "undo" "redo" "rollback 99"; do
	t_err 'decree: *' "--json $args fails with a decree: error" 1 D --json $args
	if [ -z "$OUT" ] || printf '%s' "$OUT" | python3 -m json.tool >/dev/null 2>&1; then ok "--json $args: stdout empty or one JSON document"
	else not_ok "--json $args: stdout empty or one JSON document" "$OUT"; fi
done
t_err 'decree: *' "--json with a usage error: exit 2" 2 D --json checkpoint list extra
t_schema "usage error: stdout is the error document, code usage, the stderr message" '
need(d == {"error": {"code": "usage", "message": "'"${ERR#decree: }"'"}}, "got %r" % d)'

done_testing
