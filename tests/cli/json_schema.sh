#!/bin/bash
# json_schema.sh - every --json document validates against its JSON Schema
# (draft 2020-12) in docs/schema/ (DESIGN "Machine output",
# docs/schema/README.md).  Each command runs with --json in realistic
# situations, succeeding and failing, on empty and non-empty projects, and
# its stdout is checked with Debian's python3-jsonschema under
# /usr/bin/python3:
#   - stdout is UTF-8 and exactly one document on one line (apply: one
#     event object per line), and the document validates;
#   - a failure (exit != 0) has an "error" object whose message is a
#     "decree: " line of stderr and whose code fits the exit status (usage
#     2, interrupted and cancelled 130, any other 1); a success has none;
#     (workspace conflicts: exit 1 exactly when "clean" is false, and no
#     error object, docs/schema/README.md);
#   - every schema is itself a valid schema and strict: each object lists
#     its required members and allows no others;
#   - a document that drifts from its schema (a member renamed, removed,
#     added, or of another type) is rejected.
# Schemas of documents this branch does not print yet (checkpoint delete)
# are checked only as schemas when the command does not exist.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

SCHEMAS=$(cd "$(dirname "$0")/../../docs/schema" && pwd)
PY=/usr/bin/python3
if ! $PY -c 'import jsonschema; jsonschema.Draft202012Validator' 2>/dev/null; then
	not_ok "python3-jsonschema with draft 2020-12 under $PY (scripts/deps.sh installs it)"
	done_testing
	exit 1
fi

# The checker: validate.py SCHEMA MODE RC STDOUT STDERR [EXPR]
# MODE doc: one document on one line; lines: one object per line.  EXPR:
# a Python expression over d (the document; lines: the last object) and L
# (every object) that must be true.
cat >"$SCRATCH/validate.py" <<'EOF'
import json, sys
from jsonschema import Draft202012Validator

schema_path, mode, rc, out_path, err_path = sys.argv[1:6]
expr = sys.argv[6] if len(sys.argv) > 6 else ""
rc = int(rc)
bad = []
raw = open(out_path, "rb").read()
stderr = open(err_path, "rb").read().decode("utf-8", "replace").splitlines()
try:
    text = raw.decode("utf-8")
except UnicodeDecodeError as e:
    print("stdout is not UTF-8: %s" % e); sys.exit(1)
if not text.endswith("\n"):
    bad.append("stdout does not end with a newline")
lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
if mode == "doc" and len(lines) != 1:
    bad.append("stdout is %d lines, not one document on one line" % len(lines))
L = []
for n, line in enumerate(lines, 1):
    try:
        L.append(json.loads(line))
    except ValueError as e:
        bad.append("line %d is not JSON (%s): %r" % (n, e, line[:200]))
if bad:
    print("\n".join(bad)); print("stdout: %r" % text[:1500]); sys.exit(1)
v = Draft202012Validator(json.load(open(schema_path)))
for n, o in enumerate(L, 1):
    for e in sorted(v.iter_errors(o), key=lambda e: list(e.absolute_path)):
        bad.append("line %d: at /%s: %s" % (n, "/".join(map(str, e.absolute_path)), e.message[:300]))
d = L[-1] if L else None
err = d.get("error") if isinstance(d, dict) else None
if rc == 0 and err is not None:
    bad.append("exit 0 with an error: %r" % err)
# workspace conflicts: exit 1 says "there are conflicts", which is what
# was asked for, not a failure: its document has clean:false, no error
conflicts_doc = schema_path.endswith("/workspace-conflicts.schema.json")
if conflicts_doc and isinstance(d, dict) and "error" not in d:
    if (rc == 1) != (d.get("clean") is False):
        bad.append("workspace conflicts: exit %d with clean %r" % (rc, d.get("clean")))
elif rc != 0:
    if not isinstance(err, dict):
        bad.append("exit %d without an error object" % rc)
    else:
        want = {"usage": 2, "interrupted": 130, "cancelled": 130}.get(err.get("code"), 1)
        if want != rc:
            bad.append("code %r with exit %d (wants %d)" % (err.get("code"), rc, want))
        if "decree: %s" % err.get("message") not in stderr:
            bad.append("message %r is no 'decree: ' line of stderr %r" % (err.get("message"), stderr))
if expr and not bad:
    try:
        if not eval(expr):
            bad.append("not true: %s" % expr)
    except Exception as e:
        bad.append("%s: %r" % (expr, e))
if bad:
    print("\n".join(bad)); print("stdout: %s" % text[:1500]); sys.exit(1)
EOF

USED=" "
# jv NAME SCHEMA RC [EXPR] -- CMD...: run CMD, want exit RC, validate its
# stdout against docs/schema/SCHEMA.schema.json (apply-event: line by line)
jv() {
	local name=$1 sch=$2 want=$3 expr="" mode=doc why
	shift 3
	if [ "$1" != "--" ]; then expr=$1; shift; fi
	shift
	[ "$sch" = apply-event ] && mode=lines
	USED="$USED$sch "
	_run "$@"
	if [ "$RC" -ne "$want" ]; then
		not_ok "$name" "exit $RC, wanted $want; stderr: $ERR; stdout: $OUT"
	elif why=$($PY "$SCRATCH/validate.py" "$SCHEMAS/$sch.schema.json" $mode "$RC" \
		"$SCRATCH/.out" "$SCRATCH/.err" "$expr" 2>&1); then
		ok "$name"
	else
		not_ok "$name" "$why"
	fi
}
# je NAME RC CODE -- CMD...: a failure: the error document with CODE
je() {
	local name=$1 want=$2 code=$3
	shift 3
	jv "$name" error "$want" "d['error']['code'] == '$code'" "$@"
}

# ===== every schema is a valid, strict draft 2020-12 schema =================================
for f in "$SCHEMAS"/*.schema.json; do
	n=$(basename "$f" .schema.json)
	if why=$($PY - "$f" <<'EOF' 2>&1
import json, sys
from jsonschema import Draft202012Validator
s = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(s)
bad = []
if s.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
    bad.append("$schema is not draft 2020-12")
if not s.get("title") or not s.get("description"):
    bad.append("no title or description")
def walk(x, at):
    if isinstance(x, dict):
        if x.get("type") == "object":
            if x.get("additionalProperties") is not False:
                bad.append("%s: object without additionalProperties: false" % at)
            props = x.get("properties", {})
            if not props:
                bad.append("%s: object without properties" % at)
            req = x.get("required")
            if not isinstance(req, list):
                bad.append("%s: object without required" % at)
            else:
                bad.extend("%s: required %r is no property" % (at, r) for r in req if r not in props)
        for k, v in x.items():
            walk(v, at + "/" + k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            walk(v, "%s/%d" % (at, i))
walk(s, "")
if bad:
    print("\n".join(bad)); sys.exit(1)
EOF
	); then ok "schema $n: valid draft 2020-12, strict"; else not_ok "schema $n: valid draft 2020-12, strict" "$why"; fi
done

# ===== failures before a command runs ========================================================
P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" || exit 1
je "no command" 2 usage -- D --json
je "unknown command" 2 usage -- D --json frobnicate
je "a global option without its value" 2 usage -- D --json --store
je "an unknown option" 2 usage -- D --json checkpoint list --frob
je "checkpoint without a subcommand" 2 usage -- D --json checkpoint
je "an unknown checkpoint subcommand" 2 usage -- D --json checkpoint frob
je "-C naming no directory" 1 not_found -- D --json -C "$SCRATCH/nowhere" checkpoint create
jv "--version" version 0 -- D --json --version

# ===== checkpoints on an empty project ========================================================
jv "list: no checkpoints yet" checkpoint-list 0 'd == {"checkpoints": []}' -- D --json checkpoint list
jv "rollback: nothing to number" rollback 0 'd == {"checkpoints": []}' -- D --json rollback
jv "status: no checkpoints, no pipeline" status 0 'd == {"specs": None, "inbox": None, "runs": [], "checkpoint": None, "changes": []}' -- D --json status
jv "log: nothing yet" log 0 'd == {"log": []}' -- D --json log
je "diff: nothing to diff yet" 1 not_found -- D --json diff
je "undo: nothing to undo" 1 not_found -- D --json undo
jv "gc of an empty store" gc 0 -- D --json gc --dry-run

# ===== checkpoints ==========================================================================
mkdir -p .decree dir
printf 'checkpoint:\n  max_file_size: 1K\n' >.decree/config.yml
printf 'plain\n' >plain.txt
printf '#!/bin/sh\n' >run.sh && chmod 755 run.sh
ln -s plain.txt link
: >empty
head -c 3000 /dev/zero >big.bin
printf 'a\0b\n' >small.bin
printf 'a\n' >$'bad\xff.txt'
printf 'c\n' >$'q"b\\s\tt\nn.txt'
printf 'f\n' >dir/nested.txt
printf 'secret\n' >key && chmod 600 key
jv "create (big.bin above the limit: a too_large notice)" checkpoint-create 0 \
	'd["created"] is True and [(n["code"], n["count"], n["largest"]["path"]) for n in d["notices"]] == [("too_large", 1, "big.bin")]' \
	-- D --json checkpoint create -s work -m $'turn "1"\n' -l 'first turn'
X=$(printf '%s' "$OUT" | $PY -c 'import json,sys; print(json.load(sys.stdin)["id"])')
jv "create again for the same message: the existing one, and an existing notice" checkpoint-create 0 \
	"d['id'] == '$X' and d['created'] is False and [n['code'] for n in d['notices']] == ['existing']" \
	-- D --json checkpoint create -s work -m $'turn "1"\n'
jv "create without message or label" checkpoint-create 0 -- D --json checkpoint create
Y=$(printf '%s' "$OUT" | $PY -c 'import json,sys; print(json.load(sys.stdin)["id"])')
je "create with an empty session" 2 usage -- D --json checkpoint create -s ''
if command -v flock >/dev/null; then
	je "create while another process holds the store lock" 1 locked \
		-- flock .decree/store/lock env DECREE_LOCK_TIMEOUT_MS=0 "$DECREE" --json checkpoint create
else
	ok "a locked store # SKIP flock not installed"
fi
jv "list" checkpoint-list 0 'len(d["checkpoints"]) == 2' -- D --json checkpoint list
jv "list --session nobody" checkpoint-list 0 'd["checkpoints"] == []' -- D --json checkpoint list --session nobody
je "list with an argument" 2 usage -- D --json checkpoint list extra
jv "show" checkpoint-show 0 '[s["path"] for s in d["skipped"]] == ["big.bin"] and any("path_base64" in f for f in d["files"])' \
	-- D --json checkpoint show "$X"
je "show of an unknown checkpoint" 1 not_found -- D --json checkpoint show ffffffff
je "show without REF" 2 usage -- D --json checkpoint show

# changes: modified, deleted, created, binary, mode, non-UTF-8 name
printf 'plain v2\n' >plain.txt
rm dir/nested.txt
printf 'new\n' >$'new\xfe.txt'
printf 'a\0c\n' >small.bin
chmod 644 key
jv "diff against the working tree" checkpoint-diff 0 'd["files_changed"] == len(d["files"]) == 5 and "diff" in d["files"][0]' \
	-- D --json checkpoint diff "$X"
jv "diff --stat" checkpoint-diff 0 'all("diff" not in f for f in d["files"])' -- D --json checkpoint diff "$X" --stat
jv "diff --name-status" checkpoint-diff 0 -- D --json checkpoint diff "$X" --name-status
jv "diff of two equal checkpoints: empty" checkpoint-diff 0 'd == {"files": [], "files_changed": 0, "insertions": 0, "deletions": 0}' \
	-- D --json checkpoint diff "$X" "$Y"
je "diff of an unknown checkpoint" 1 not_found -- D --json checkpoint diff nosuch:message
je "diff with --stat and --name-status" 2 usage -- D --json checkpoint diff "$X" --stat --name-status

jv "restore --dry-run" checkpoint-restore 0 'd["dry_run"] and d["pre_checkpoint"] is None and len(d["changes"]) == 5' \
	-- D --json checkpoint restore "$X" --dry-run
jv "restore" checkpoint-restore 0 'd["operation"] == "restore" and d["checkpoint"] == "'"$X"'"' -- D --json checkpoint restore "$X"
jv "restore again: nothing to do" checkpoint-restore 0 'd["changes"] == []' -- D --json checkpoint restore "$X"
jv "restore -- PATH" checkpoint-restore 0 -- D --json checkpoint restore "$Y" -- plain.txt
je "restore of an unknown checkpoint" 1 not_found -- D --json checkpoint restore ffffffff
je "restore -- a path outside the root" 1 invalid -- D --json checkpoint restore "$X" -- ../outside
jv "undo --dry-run" checkpoint-restore 0 'd["operation"] == "undo" and d["checkpoint"] is None' -- D --json undo --dry-run
jv "undo" checkpoint-restore 0 -- D --json undo
jv "redo" checkpoint-restore 0 'd["operation"] == "redo" and d["notices"] == []' -- D --json redo
printf 'edited after the redo\n' >plain.txt
jv "undo after an edit: an edits_saved notice" checkpoint-restore 0 \
	'[(n["code"], n["paths"], n["checkpoint"] == d["pre_checkpoint"]) for n in d["notices"]] == [("edits_saved", ["plain.txt"], True)]' \
	-- D --json undo
mkdir -p "$SCRATCH/ign" && for i in $(seq 1 12); do printf 'x\n' >"$SCRATCH/ign/f$i.tmp"; done
printf '*.tmp\n' >"$SCRATCH/ign/.gitignore"
jv "create where the ignore rules exclude nearly everything: a mostly_ignored notice" checkpoint-create 0 \
	'[(n["code"], n["excluded"], n["file_count"], n["rule"]) for n in d["notices"]] == [("mostly_ignored", 12, 1, {"source": ".gitignore", "pattern": "*.tmp", "excluded": 12})]' \
	-- D --json -C "$SCRATCH/ign" checkpoint create
je "undo --drop-damaged --dry-run" 2 usage -- D --json undo --drop-damaged --dry-run
jv "undo --drop-damaged: none damaged" undo-drop-damaged 0 'd == {"dropped": 0}' -- D --json undo --drop-damaged
jv "redo --drop-damaged" undo-drop-damaged 0 -- D --json redo --drop-damaged
jv "rollback" rollback 0 '[c["n"] for c in d["checkpoints"] if c["kind"] == "checkpoint"] == [1, 2] and [c["ref"] for c in d["checkpoints"] if c["kind"] == "capture"] == ["u%d" % i for i in range(1, 1 + len([c for c in d["checkpoints"] if c["n"] is None]))] and d["checkpoints"][0]["ref"] == "u1"' -- D --json rollback
jv "rollback 1 --dry-run" checkpoint-restore 0 'd["dry_run"] is True and d["pre_checkpoint"] is None' -- D --json rollback 1 --dry-run
jv "rollback u1 --dry-run" checkpoint-restore 0 'd["dry_run"] is True' -- D --json rollback u1 --dry-run
jv "rollback 1" checkpoint-restore 0 -- D --json rollback 1
je "rollback u9" 1 not_found -- D --json rollback u9
je "rollback --dry-run without N" 2 usage -- D --json rollback --dry-run
# a checkpoint-only project: status, log and diff
printf 'plain v3\n' >plain.txt
jv "status: since the last checkpoint" status 0 'd["specs"] is None and d["checkpoint"]["id"] == "'"$Y"'" and d["changes"] == [{"path": "plain.txt", "status": "M"}]' -- D --json status
jv "log: checkpoints and captures, newest first" log 0 '[e["kind"] for e in d["log"]].count("checkpoint") == 2 and all(e["kind"] in ("checkpoint", "capture") for e in d["log"]) and d["log"][-1]["id"] == "'"$X"'"' -- D --json log
jv "diff: since the last checkpoint" diff 0 'd["checkpoint"]["id"] == "'"$Y"'" and [f["path"] for f in d["files"]] == ["plain.txt"] and "diff" in d["files"][0]' -- D --json diff
jv "diff REF --stat" diff 0 'd["checkpoint"]["id"] == "'"$X"'" and all("diff" not in f for f in d["files"])' -- D --json diff "$X" --stat
je "diff of an unknown checkpoint" 1 not_found -- D --json diff ffffffff
je "rollback 99" 1 not_found -- D --json rollback 99
je "rollback x" 2 usage -- D --json rollback x
jv "recover: nothing to recover" recover 0 'd == {"recovered": False, "left_alone": 0}' -- D --json recover
jv "fsck" fsck 0 'd == {"ok": True, "problems": []}' -- D --json fsck
jv "fsck --repair of a sound store" fsck 0 'd["repaired"] == d["lost"] == d["remaining"] == []' -- D --json fsck --repair
je "fsck of a directory that is no store" 1 not_found -- D --json --store "$SCRATCH/nostore" fsck
jv "gc --dry-run" gc 0 'd["dry_run"] is True' -- D --json gc --dry-run
jv "prune --keep 1" checkpoint-prune 0 'd["removed"] >= 1' -- D --json checkpoint prune --keep 1
je "prune without --keep or --older-than" 2 usage -- D --json checkpoint prune
jv "gc" gc 0 'd["dry_run"] is False' -- D --json gc
if D checkpoint --help 2>/dev/null | grep -q 'checkpoint delete'; then
	jv "create, to delete" checkpoint-create 0 -- D --json checkpoint create -m doomed
	Z=$(printf '%s' "$OUT" | $PY -c 'import json,sys; print(json.load(sys.stdin)["id"])')
	jv "delete" checkpoint-delete 0 "d == {'deleted': '$Z'}" -- D --json checkpoint delete "$Z"
	je "delete of an unknown checkpoint" 1 not_found -- D --json checkpoint delete ffffffff
else
	ok "checkpoint delete # SKIP not in this build (its schema is checked above)"
	USED="${USED}checkpoint-delete "
fi
jv "drop --session work" checkpoint-drop 0 -- D --json checkpoint drop --session work
je "drop without --session or --all" 2 usage -- D --json checkpoint drop
jv "drop --all" checkpoint-drop 0 -- D --json checkpoint drop --all

# damage: one object of a copy of the project's store
cp -a "$P" "$SCRATCH/damaged" && cd "$SCRATCH/damaged" || exit 1
D -q checkpoint create -m before-damage >/dev/null
if obj=$(find .decree/store -type f -name '*.pack' | head -1) && [ -n "$obj" ]; then
	sz=$(stat -c %s "$obj")
	printf '\xff\xff\xff\xff' | dd of="$obj" bs=1 seek=$((sz / 2)) conv=notrunc 2>/dev/null
fi
jv "fsck of a damaged store: the report carries the error" fsck 1 'd["ok"] is False and d["problems"] and d["error"]["code"] == "corrupt"' \
	-- D --json fsck
cd "$P" || exit 1

# ===== projects ================================================================================
ST=$SCRATCH/store
mkdir -p "$SCRATCH/a" "$SCRATCH/b"
echo a >"$SCRATCH/a/f"
D -q --store "$ST" -C "$SCRATCH/a" checkpoint create >/dev/null
D -q --store "$ST" -C "$SCRATCH/b" checkpoint create >/dev/null
jv "projects" projects 0 'len(d["projects"]) == 2' -- D --json --store "$ST" -C "$SCRATCH/a" projects
mv "$SCRATCH/a" "$SCRATCH/a2"
jv "list -C a root that is gone: has_changes null" checkpoint-list 0 'd["checkpoints"][0]["has_changes"] is None' \
	-- D --json --store "$ST" -C "$SCRATCH/a" checkpoint list
jv "projects with a root that is gone" projects 0 'sorted(p["exists"] for p in d["projects"]) == [False, True]' \
	-- D --json --store "$ST" projects
jv "projects move" projects-move 0 -- D --json --store "$ST" projects move "$SCRATCH/a" "$SCRATCH/a2"
je "projects move of a root it does not know" 1 not_found -- D --json --store "$ST" projects move "$SCRATCH/zz" "$SCRATCH/a2"
je "projects move with one path" 2 usage -- D --json --store "$ST" projects move "$SCRATCH/a"

# ===== apply ===================================================================================
A=$SCRATCH/apply
mkdir -p "$A" && cd "$A" || exit 1
printf 'one\ntwo\n' >f.txt
printf 'gone\n' >old.txt
D -q checkpoint create >/dev/null
printf 'one\nTWO\n' >f.txt
rm old.txt
printf 'new\n' >$'n\xfd.txt'
D checkpoint diff "$(D --json checkpoint list | $PY -c 'import json,sys; print(json.load(sys.stdin)["checkpoints"][0]["id"])')" >"$SCRATCH/p.diff"
D -q checkpoint restore "$(D --json checkpoint list | $PY -c 'import json,sys; print(json.load(sys.stdin)["checkpoints"][0]["id"])')"
jv "apply --check" apply-event 0 'L[-1]["check"] and all(o["phase"] == "checking" for o in L[:-1])' -- D --json apply --check "$SCRATCH/p.diff"
jv "apply" apply-event 0 'd["ok"] and d["created"] == d["modified"] == d["deleted"] == 1 and d["error"] is None' -- D --json apply "$SCRATCH/p.diff"
jv "apply again: every file skipped" apply-event 0 'd["skipped"] == 3' -- D --json apply "$SCRATCH/p.diff"
jv "apply -R" apply-event 0 -- D --json apply -R "$SCRATCH/p.diff"
printf 'ONE\ntwo\n' >f.txt
jv "apply with a conflict: the done event carries the error" apply-event 1 \
	'd["ok"] is False and d["conflicts"] == 1 and d["error"]["code"] == "conflict" and L[0].get("detail")' -- D --json apply "$SCRATCH/p.diff"
printf 'one\ntwo\n' >f.txt
jv "apply --exec that fails: rolled back" apply-event 1 \
	'd["exec_status"] == 3 and any(o["phase"] == "rolling_back" for o in L) and d["error"]["code"] == "exec"' \
	-- D --json apply --exec 'echo out; touch swept.txt; exit 3' "$SCRATCH/p.diff"
je "apply of a missing patch" 1 error -- D --json apply "$SCRATCH/none.diff"
printf 'not a diff\n' >"$SCRATCH/bad.diff"
jv "apply of something that is no diff" apply-event 1 'd["error"]["code"] == "invalid"' -- D --json apply "$SCRATCH/bad.diff"
je "apply without PATCH" 2 usage -- D --json apply
je "apply --check --exec" 2 usage -- D --json apply --check --exec true "$SCRATCH/p.diff"

# ===== the pipeline ==============================================================================
Q=$SCRATCH/pipe
mkdir -p "$Q" && cd "$Q" || exit 1
jv "status outside a pipeline project" status 0 'd["specs"] is None and d["inbox"] is None and d["checkpoint"] is None' -- D --json status
jv "init" init 0 '".decree/config.yml" in d["created"] and ".decree/inbox/" in d["created"]' -- D --json init
jv "init again: nothing created" init 0 'd["created"] == []' -- D --json init
je "init with an argument" 2 usage -- D --json init extra
printf 'max_retries: 1\nmax_depth: 3\n' >.decree/config.yml
printf 'line 1\nline 2\n' >long.txt
printf 'old\n' >old.txt
cat >.decree/routines/edit.sh <<'EOF'
#!/bin/bash
echo "editing $message_id"
printf '\001binary\000\n'
sed -i 's/^line 2$/line two/' long.txt
printf 'new\n' >new.txt
rm -f old.txt
EOF
cat >.decree/routines/noop.sh <<'EOF'
#!/bin/bash
echo nothing
EOF
cat >.decree/routines/fail.sh <<'EOF'
#!/bin/bash
echo "failing"
exit 7
EOF
cat >.decree/routines/chain.sh <<'EOF'
#!/bin/bash
echo "chain $seq" >"chain-$seq.txt"
if [ "$seq" -lt 2 ]; then printf -- '---\nroutine: chain\n---\n' >".decree/inbox/$chain-$((seq + 1)).md"; fi
EOF
jv "status: no runs yet" status 0 'd["runs"] == [] and d["specs"] == {"processed": 0, "pending": 0}' -- D --json status
jv "log: no runs yet" log 0 'd == {"log": []}' -- D --json log
je "diff: no runs and no checkpoints yet" 1 not_found -- D --json diff
jv "process: nothing to do" run 0 'd == {"runs": [], "done": 0, "dead": 0, "interrupted": False}' -- D --json process
jv "run" run 0 'd["done"] == 1 and d["runs"][0]["started_at"] and d["runs"][0]["outcome"] == "done"' -- D --json run -m edit -p x -v routine=edit
E=$(printf '%s' "$OUT" | $PY -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
jv "run that changes nothing" run 0 -- D --json run -m noop -p x -v routine=noop
N=$(printf '%s' "$OUT" | $PY -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
jv "run dead-lettered: the document carries the error" run 1 'd["dead"] == 1 and d["runs"][0]["reason"] and d["error"]["code"] == "exec"' \
	-- D --json run -m fail -p x -v routine=fail
F=$(printf '%s' "$OUT" | $PY -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
jv "run of a chain" run 0 'len(d["runs"]) == 3' -- D --json run -m chain -p x -v routine=chain
C=$(printf '%s' "$OUT" | $PY -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"].split("-")[0])')
printf '# spec\n' >specs/01-a.spec.md
printf -- '---\nroutine: noop\n---\n# spec\n' >specs/01-a.spec.md
jv "process a spec" run 0 'd["done"] == 1' -- D --json process
je "run -v with a bad key" 2 usage -- D --json run -p x -v 'b@d=1'
je "run of an unknown routine: refused before queueing" 2 usage -- D --json run -p x -v routine=nosuch
je "run with a blank message: refused" 2 usage -- D --json run -p ' ' -v routine=noop
jv "run of a routine that needs commands.ai, unset: the document carries the error" run 1 'd["runs"] == [] and d["error"]["code"] == "invalid"' \
	-- D --json run -m noai -p x -v routine=develop
printf -- '---\nroutine: nosuch\n---\nx\n' >.decree/inbox/waiting.md
jv "process with a message for an unknown routine waiting: the document carries the error" run 1 'd["runs"] == [] and d["error"]["code"] == "not_found"' \
	-- D --json process
rm .decree/inbox/waiting.md
jv "run with an input_file that does not exist: the document carries the error" run 1 'd["runs"] == [] and d["error"]["code"] == "invalid"' \
	-- D --json run -m ghost -v input_file=specs/ghost.spec.md
jv "status" status 0 'len(d["runs"]) == 7 and all(r["finished_at"] for r in d["runs"])' -- D --json status
jv "log: the runs, newest first, each with its checkpoint" log 0 'len(d["log"]) == 7 and all(e["kind"] == "run" and e["checkpoint"] and e["ref"] for e in d["log"]) and d["log"][-1]["id"] == "'"$E"'" and d["log"][-1]["files_changed"] == 3' -- D --json log
jv "diff: the latest run's" diff 0 'len(d["runs"]) == 1' -- D --json diff
jv "log ID: the text is exact" log 0 '"\x01binary\x00" in d["runs"][0]["logs"][0]["text"]' -- D --json log "$E"
jv "log of a dead run: two attempts" log 0 '[l["attempt"] for l in d["runs"][0]["logs"]] == [1, 2]' -- D --json log "$F"
jv "log of a chain" log 0 'len(d["runs"]) == 3' -- D --json log "$C"
je "log of an unknown run" 1 not_found -- D --json log 1999
je "log of a prefix of several runs" 1 ambiguous -- D --json log 20
je "log with two IDs" 2 usage -- D --json log "$E" "$F"
jv "diff ID" diff 0 'sorted((f["path"], f["status"]) for f in d["runs"][0]["files"]) == [("long.txt", "M"), ("new.txt", "A"), ("old.txt", "D")] and d["runs"][0]["insertions"] == 2' \
	-- D --json diff "$E"
jv "diff of a run that changed nothing" diff 0 'd["runs"][0]["files"] == [] and d["runs"][0]["files_changed"] == 0' -- D --json diff "$N"
jv "diff of a chain" diff 0 'len(d["runs"]) == 3' -- D --json diff "$C"
je "diff of a dead run: no changes.diff" 1 not_found -- D --json diff "$F"
jv "revert" revert 0 'd["run"] == "'"$E"'" and d["verified"] == 3' -- D --json revert "$E"
D -q undo
chmod 600 long.txt
je "revert after a chmod: the check against manifest.json fails" 1 verify -- D --json revert "$E"
chmod 644 long.txt
printf 'edited after the run\n' >new.txt
je "revert after an edit: a conflict" 1 conflict -- D --json revert "$E"
je "revert of a chain of several runs" 1 invalid -- D --json revert "$C"
je "revert without ID" 2 usage -- D --json revert

# Ctrl-C while a routine runs: the run document carries "interrupted"
cat >.decree/routines/slow.sh <<'EOF'
#!/bin/bash
touch "$SIG_STARTED"
sleep 300
EOF
export SIG_STARTED=$SCRATCH/started
"$DECREE" --json run -m slow -p x -v routine=slow >"$SCRATCH/.out" 2>"$SCRATCH/.err" &
dpid=$!
i=0
while [ ! -e "$SIG_STARTED" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill -INT "$dpid"
wait "$dpid"
RC=$?
USED="${USED}run "
if [ "$RC" -ne 130 ]; then
	not_ok "run interrupted: exit 130" "exit $RC; $(cat "$SCRATCH/.err")"
elif why=$($PY "$SCRATCH/validate.py" "$SCHEMAS/run.schema.json" doc 130 "$SCRATCH/.out" "$SCRATCH/.err" \
	'd["interrupted"] is True and d["error"]["code"] == "interrupted"' 2>&1); then
	ok "run interrupted: exit 130, the document carries the error"
else
	not_ok "run interrupted: exit 130, the document carries the error" "$why"
fi

# ===== agent hooks and rewind ====================================================================
A=$SCRATCH/agentproj
mkdir -p "$A" && cd "$A" || exit 1
printf 'alpha\nbeta\n' >edit-me.txt
printf 'keep\n' >keep.txt
jv "hook install claude-code" hook-install 0 'd["changed"] is True and d["scope"] == "project"' -- D --json hook install claude-code
jv "hook install claude-code again: nothing to change" hook-install 0 'd["changed"] is False' -- D --json hook install claude-code
jv "hook install gemini --user" hook-install 0 'd["scope"] == "user"' -- env HOME="$SCRATCH/home" "$DECREE" --json hook install gemini --user
jv "hook uninstall gemini --user" hook-install 0 'd["changed"] is True' -- env HOME="$SCRATCH/home" "$DECREE" --json hook uninstall gemini --user
je "hook install of an unknown agent" 2 usage -- D --json hook install frobnicator
je "rewind before any agent session" 1 not_found -- D --json rewind
hook() { # EVENT PAYLOAD: what Claude Code runs
	printf '%s' "$2" | "$DECREE" hook claude-code "$1" >/dev/null 2>&1
}
pl='"session_id":"js-1","cwd":"'"$A"'","prompt_id":"p1"'
hook UserPromptSubmit "{$pl,\"prompt\":\"Edit it\"}"
printf 'alpha\nBETA\n' >edit-me.txt
hook PostToolUse "{$pl,\"tool_name\":\"Edit\",\"tool_input\":{\"file_path\":\"$A/edit-me.txt\"}}"
hook PreToolUse "{$pl,\"tool_name\":\"Bash\",\"tool_use_id\":\"b1\",\"tool_input\":{\"command\":\"x\"}}"
sleep 0.05
printf 'made\n' >made.txt
hook PostToolUse "{$pl,\"tool_name\":\"Bash\",\"tool_use_id\":\"b1\",\"tool_input\":{\"command\":\"x\"}}"
jv "hook status" hook-status 0 'd["hooks"][0]["installed"] is True and d["sessions"][0]["session"] == "js-1" and d["last_error"] is None' -- D --json hook status
jv "rewind: the turns" rewind 0 'd["turns"][0]["files"] == ["edit-me.txt", "made.txt"]' -- D --json rewind
jv "rewind 1 --agent-only --dry-run" checkpoint-restore 0 'd["operation"] == "rewind" and d["dry_run"] and d["deleted"] == ["made.txt"] and d["restored"] == ["edit-me.txt"]' -- D --json rewind 1 --agent-only --dry-run
printf 'alpha\nmine\n' >edit-me.txt
jv "rewind 1 --agent-only: a user edit kept" checkpoint-restore 0 'd["skipped_user_edits"] == ["edit-me.txt"] and d["deleted"] == ["made.txt"] and d["changes"] == [{"path": "made.txt", "action": "delete"}]' -- D --json rewind 1 --agent-only
je "rewind a turn that does not exist" 1 not_found -- D --json rewind 7
je "rewind --agent-only without a turn" 2 usage -- D --json rewind --agent-only
cd "$P" || exit 1

# ===== workspaces ================================================================================
W=$SCRATCH/wsproj
mkdir -p "$W/src" && cd "$W" || exit 1
printf 'one\ntwo\nthree\nfour\nfive\n' >src/a.txt
printf 'gone\n' >old.txt
printf 'a\0b\n' >bin.dat
ln -s src/a.txt link
jv "workspace list: none yet" workspace-list 0 'd == {"workspaces": []}' -- D --json workspace list
jv "workspace create" workspace 0 \
	'd["name"] == "fix" and d["project"] == "'"$W"'" and d["path"].endswith("/workspaces/fix") and d["copy"]["links"] == 1 and d["copy"]["cloned"] + d["copy"]["copied"] + d["copy"]["from_store"] == 3' \
	-- D --json workspace create fix
WSP=$(printf '%s' "$OUT" | $PY -c 'import json,sys; print(json.load(sys.stdin)["path"])')
BASE=$(printf '%s' "$OUT" | $PY -c 'import json,sys; print(json.load(sys.stdin)["base"])')
jv "workspace create --from REF --no-reflink, no name: ws-1, copied" workspace 0 \
	'd["name"] == "ws-1" and d["base"] == "'"$BASE"'" and d["mode"] == "copy" and d["copy"]["cloned"] == 0' \
	-- D --json workspace create --from "$BASE" --no-reflink
je "workspace create of a name that is taken" 1 exists -- D --json workspace create fix
je "workspace create of an invalid name" 1 invalid -- D --json workspace create ../x
je "workspace create --from an unknown checkpoint" 1 not_found -- D --json workspace create other --from ffffffff
je "workspace create with two names" 2 usage -- D --json workspace create a b
je "workspace without a subcommand" 2 usage -- D --json workspace
je "workspace frob" 2 usage -- D --json workspace frob
jv "workspace list" workspace-list 0 '[w["name"] for w in d["workspaces"]] == ["fix", "ws-1"]' -- D --json workspace list
je "workspace list with an argument" 2 usage -- D --json workspace list x
jv "workspace path" workspace 0 'd["name"] == "fix" and d["path"] == "'"$WSP"'"' -- D --json workspace path fix
je "workspace path of no workspace" 1 not_found -- D --json workspace path nope
je "workspace path without NAME" 2 usage -- D --json workspace path
jv "workspace diff: nothing changed yet" checkpoint-diff 0 'd == {"files": [], "files_changed": 0, "insertions": 0, "deletions": 0}' \
	-- D --json workspace diff fix
printf 'one\nTWO\nthree\nfour\nfive\n' >"$WSP/src/a.txt"
rm "$WSP/old.txt"
printf 'new\n' >"$WSP/new.txt"
printf 'a\0c\n' >"$WSP/bin.dat"
jv "workspace diff" checkpoint-diff 0 \
	'sorted((f["path"], f["status"]) for f in d["files"]) == [("bin.dat", "M"), ("new.txt", "A"), ("old.txt", "D"), ("src/a.txt", "M")] and all("diff" in f for f in d["files"])' \
	-- D --json workspace diff fix
jv "workspace diff --stat" checkpoint-diff 0 'd["files_changed"] == 4 and all("diff" not in f for f in d["files"])' -- D --json workspace diff fix --stat
jv "workspace diff --name-status" checkpoint-diff 0 -- D --json workspace diff fix --name-status
je "workspace diff --stat --name-status" 2 usage -- D --json workspace diff fix --stat --name-status
je "workspace diff of no workspace" 1 not_found -- D --json workspace diff nope
printf 'one\ntwo\nthree\nfour\nFIVE\n' >src/a.txt
jv "workspace conflicts: clean (edits apart merge)" workspace-conflicts 0 'd == {"clean": True, "files": 4, "conflicts": []}' \
	-- D --json workspace conflicts fix
printf 'a\0d\n' >bin.dat
jv "workspace conflicts: a binary file changed on both sides, exit 1" workspace-conflicts 1 \
	'd["clean"] is False and [c["path"] for c in d["conflicts"]] == ["bin.dat"] and d["conflicts"][0]["detail"]' \
	-- D --json workspace conflicts fix
je "workspace conflicts of no workspace" 1 not_found -- D --json workspace conflicts nope
jv "workspace apply with a conflict: the done event carries the error" apply-event 1 \
	'd["ok"] is False and d["conflicts"] == 1 and d["error"]["code"] == "conflict" and L[0]["action"] == "conflict"' \
	-- D --json workspace apply fix
printf 'a\0b\n' >bin.dat
jv "workspace apply --check" apply-event 0 'd["check"] is True and d["ok"] and all(o["phase"] == "checking" for o in L[:-1])' \
	-- D --json workspace apply fix --check
jv "workspace apply --exec that fails: rolled back" apply-event 1 \
	'd["exec_status"] == 3 and any(o["phase"] == "rolling_back" for o in L) and d["error"]["code"] == "exec"' \
	-- D --json workspace apply fix --exec 'touch swept.txt; exit 3'
jv "workspace apply" apply-event 0 'd["ok"] and (d["created"], d["modified"], d["deleted"]) == (1, 2, 1) and d["error"] is None' \
	-- D --json workspace apply fix
jv "workspace apply of no workspace: the done event carries the error" apply-event 1 'd["error"]["code"] == "not_found"' \
	-- D --json workspace apply nope
je "workspace apply --check --exec" 2 usage -- D --json workspace apply fix --check --exec true
jv "workspace discard" workspace-discard 0 'd["discarded"] == "fix"' -- D --json workspace discard fix
je "workspace discard of no workspace" 1 not_found -- D --json workspace discard fix
jv "undo of the discard: a workspace notice, made" checkpoint-restore 0 \
	'd["changes"] == [] and [(n["code"], n["workspace"], n["path"], n["made"]) for n in d["notices"]] == [("workspace", "fix", "'"$WSP"'", True)]' \
	-- D --json undo
jv "redo of the discard: a workspace notice, not made" checkpoint-restore 0 \
	'[(n["code"], n["workspace"], n["made"]) for n in d["notices"]] == [("workspace", "fix", False)]' \
	-- D --json redo
cd "$P" || exit 1

# ===== every schema was used ======================================================================
for f in "$SCHEMAS"/*.schema.json; do
	n=$(basename "$f" .schema.json)
	case "$USED" in *" $n "*) ok "schema $n: a document was checked against it" ;;
	*) not_ok "schema $n: a document was checked against it" "no test uses it" ;; esac
done

# ===== drift is caught ===========================================================================
# the same checker rejects documents that are not what their schema says
drift() { # NAME SCHEMA DOCUMENT
	printf '%s\n' "$3" >"$SCRATCH/drift.out"
	: >"$SCRATCH/drift.err"
	if $PY "$SCRATCH/validate.py" "$SCHEMAS/$2.schema.json" doc 0 "$SCRATCH/drift.out" "$SCRATCH/drift.err" >/dev/null 2>&1; then
		not_ok "drift is rejected: $1" "$3 validated against $2"
	else
		ok "drift is rejected: $1"
	fi
}
ID=$(printf 'a%.0s' $(seq 64))
CK='"session":"s","message":null,"label":null,"created_at":"2026-11-27T20:41:03Z","file_count":1,"total_bytes":2'
printf '%s\n' '{"checkpoints":[{"id":"'"$ID"'",'"$CK"',"has_changes":true}]}' >"$SCRATCH/drift.out"
: >"$SCRATCH/drift.err"
if $PY "$SCRATCH/validate.py" "$SCHEMAS/checkpoint-list.schema.json" doc 0 "$SCRATCH/drift.out" "$SCRATCH/drift.err" >/dev/null 2>&1; then
	ok "the control document validates"
else
	not_ok "the control document validates"
fi
drift "a member renamed (has_changes -> changed)" checkpoint-list '{"checkpoints":[{"id":"'"$ID"'",'"$CK"',"changed":true}]}'
drift "a member missing (no has_changes)" checkpoint-list '{"checkpoints":[{"id":"'"$ID"'",'"$CK"'}]}'
drift "a member of another type (file_count a string)" checkpoint-list '{"checkpoints":[{"id":"'"$ID"'",'"${CK/\"file_count\":1/\"file_count\":\"1\"}"',"has_changes":true}]}'
drift "a local time" checkpoint-list '{"checkpoints":[{"id":"'"$ID"'",'"${CK/T20:41:03Z/T20:41:03+01:00}"',"has_changes":true}]}'
drift "a Unix time" checkpoint-list '{"checkpoints":[{"id":"'"$ID"'",'"${CK/\"2026-11-27T20:41:03Z\"/1795898463}"',"has_changes":true}]}'
drift "an unknown error code" error '{"error":{"code":"oops","message":"m"}}'
drift "a mode in git notation" checkpoint-show '{"id":"'"$ID"'",'"$CK"',"files":[{"path":"a","sha256":"'"$ID"'","size":1,"mode":"100644"}],"skipped":[]}'
WS='{"name":"fix","path":"/p/.decree/store/workspaces/fix","project":"/p","base":"'"$ID"'","base_tree":"'"$ID"'","created_at":"2026-11-27T20:41:03Z","mode":"copy","reflink_verified":false,"copy":{"cloned":0,"copied":1,"from_store":0,"links":0,"dirs":0,"bytes":2}}'
printf '%s\n' "$WS" >"$SCRATCH/drift.out"
if $PY "$SCRATCH/validate.py" "$SCHEMAS/workspace.schema.json" doc 0 "$SCRATCH/drift.out" "$SCRATCH/drift.err" >/dev/null 2>&1; then
	ok "the control workspace validates"
else
	not_ok "the control workspace validates"
fi
drift "a workspace without its copy counts" workspace "${WS/,\"copy\":*/\}}"
drift "a workspace copy mode it does not have" workspace "${WS/\"copy\",/\"clone\",}"
drift "a workspace name with a slash" workspace-list '{"workspaces":['"${WS/\"fix\"/\"a\/b\"}"']}'
drift "a workspace notice without made" checkpoint-restore '{"operation":"undo","checkpoint":null,"dry_run":false,"pre_checkpoint":null,"created":[],"restored":[],"deleted":[],"skipped_user_edits":[],"changes":[],"notices":[{"code":"workspace","message":"m","workspace":"fix","path":"/p"}]}'
drift "two documents on stdout" gc '{"dry_run":true,"objects_freed":0,"bytes_freed":0,"objects_kept":0}
{"error":{"code":"error","message":"m"}}'

done_testing
