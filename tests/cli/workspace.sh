#!/bin/bash
# workspace.sh - decree workspace (docs/workspaces.md), on the file system
# the tests run on (copy mode on ext4; tests/cli/workspace_reflink.sh is
# the XFS reflink run):
#   - create: a byte-, mode- and symlink-exact copy of the scanned tree
#     (ignored files and .decree/ left out), its base recorded; the
#     project untouched; list / path / --json;
#   - diff: base -> workspace, lossless, as checkpoint diff;
#   - apply: changes to different files and to different parts of one
#     file merge (checked against git merge-file); overlapping edits,
#     delete/modify, binary changed on both sides and modes changed
#     differently are conflicts with nothing written; --check; --exec
#     rollback; undo/redo;
#   - discard: removed, 'decree undo' makes it again exactly, redo
#     discards it again; gc keeps what a workspace needs, fsck is clean;
#   - bad input: one decree: line, exit 2 / 1, nothing changed.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

py() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1" 2>&1; }

P=$SCRATCH/p
mkdir -p "$P/src/deep" "$P/node_modules/x" && cd "$P" || exit 1
seq 1 30 >src/lines.txt
printf 'no final newline' >nofinal.txt
printf 'crlf\r\nline\r\n' >crlf.txt
printf 'bin\0ary\0' >blob.bin
printf 'secret\n' >secret && chmod 600 secret
printf '#!/bin/sh\necho hi\n' >run.sh && chmod 755 run.sh
: >empty
ln -s src/lines.txt link
ln -s missing dangling
echo deep >src/deep/f
echo ignored >node_modules/x/i.js
printf 'build/\n' >.gitignore
mkdir build && echo out >build/o
BEFORE=$(tree_state "$P")

# ===== create ================================================================
t "create: exit 0" D workspace create
W1=$OUT
same "... prints the workspace path (stdout, one line)" "$W1" "$P/.decree/store/workspaces/ws-1"
same "... the project is untouched" "$(tree_state "$P")" "$BEFORE"
same "... the copy is byte-, mode- and link-exact (ignored files left out)" \
	"$(tree_state "$W1" | grep -v '^F ./build/\|node_modules')" \
	"$(tree_state "$P" | grep -v '^F ./build/\|node_modules')"
check "... node_modules/ and build/ (ignored) are not copied" test ! -e "$W1/node_modules" -a ! -e "$W1/build"
check "... the workspace's .decree/config.yml points at the project's store" grep -qx 'store: ../..' "$W1/.decree/config.yml"
same "... a dangling symlink stays a link" "$(readlink "$W1/dangling")" missing

t "create --json a second one" D --json workspace create two
same "... name, path, project, base, copy counts" \
	"$(py '(d["name"], d["path"].endswith("/workspaces/two"), d["project"], len(d["base"]), d["mode"] in ("copy","reflink","mixed"), d["copy"]["links"], d["copy"]["cloned"]+d["copy"]["copied"]+d["copy"]["from_store"])')" \
	"('two', True, '$P', 64, True, 2, 9)"
t_err "decree: workspace 'two' already exists*" "create an existing name: exit 1, one line" 1 D workspace create two
same "... one line" "$(printf '%s\n' "$ERR" | wc -l)" 1
t_err "decree: invalid workspace name '../x'*" "create ../x: refused" 1 D workspace create ../x
t_err "decree: invalid workspace name '.hidden'*" "create .hidden: refused" 1 D workspace create .hidden
t_exit 2 "create a b: usage error" D workspace create a b
t_exit 2 "workspace frobnicate: usage error" D workspace frobnicate
case "$ERR" in *"did you mean"*) ok "... with a suggestion" ;; *) ok "... (no near name)" ;; esac

t "list" D workspace list
same "... both, by name" "$(printf '%s\n' "$OUT" | awk 'NR>1 {print $1}')" "two
ws-1"
t "list --json" D --json workspace list
same "... as documents" "$(py '[w["name"] for w in d["workspaces"]]')" "['two', 'ws-1']"
t_out "$W1" "path ws-1" D workspace path ws-1
t_err "decree: no workspace 'nope' in this store*" "path nope: exit 1" 1 D workspace path nope

# --from an older checkpoint: the copy holds that checkpoint's bytes
OLD=$(D checkpoint create)
echo changed >>src/deep/f
t "create --from an older checkpoint" D workspace create old --from "$OLD"
same "... it has the checkpoint's bytes, not the project's" "$(cat "$OUT/src/deep/f")" deep
git checkout -q 2>/dev/null; printf 'deep\n' >src/deep/f

# inside a workspace decree works as in any project, on the same store
t "checkpoint list inside the workspace" D -C "$W1" checkpoint list
case "$OUT" in *"base of workspace ws-1"*) ok "... shows its base checkpoint" ;; *) not_ok "... base" "$OUT" ;; esac

# ===== diff ==================================================================
cd "$W1" || exit 1
sed -i 's/^5$/five/' src/lines.txt
echo added >new.txt
rm empty
chmod 700 run.sh
cd "$P" || exit 1
t "diff ws-1" D workspace diff ws-1
same "... the same records as checkpoint diff inside the workspace" "$OUT" \
	"$(cd "$W1" && "$DECREE" checkpoint diff "$(D -C "$W1" --json checkpoint list | python3 -c 'import json,sys; print([c["id"] for c in json.load(sys.stdin)["checkpoints"] if c["label"]=="base of workspace ws-1"][0])')")"
t "diff --name-status" D workspace diff ws-1 --name-status
same "... A/D/M" "$OUT" "D	empty
A	new.txt
M	run.sh
M	src/lines.txt"
same "... the project is still untouched" "$(tree_state "$P")" "$BEFORE"

# ===== apply: a clean merge ===================================================
# the project changed meanwhile: another part of the same file, another file
sed -i 's/^25$/twenty-five/' src/lines.txt
echo proj >>crlf.txt
t "conflicts ws-1: none" D workspace conflicts ws-1
t "apply --check" D workspace apply ws-1 --check
same "... lists what would change" "$(printf '%s\n' "$OUT" | grep -c '^\(create\|modify\|delete\) ')" 4
PRE=$(tree_state "$P")
same "... --check writes nothing" "$PRE" "$(tree_state "$P")"
# git merge-file is the oracle for the merged text
BASE_LINES=$(seq 1 30)
printf '%s\n' "$BASE_LINES" >"$SCRATCH/base"
sed 's/^25$/twenty-five/' "$SCRATCH/base" >"$SCRATCH/ours"
sed 's/^5$/five/' "$SCRATCH/base" >"$SCRATCH/theirs"
git merge-file -p "$SCRATCH/ours" "$SCRATCH/base" "$SCRATCH/theirs" >"$SCRATCH/want"
t "apply ws-1" D workspace apply ws-1
case "$OUT" in "applied workspace ws-1: created 1, modified 2, deleted 1, skipped 0; 'decree undo' reverts this") ok "... summary" ;; *) not_ok "... summary" "$OUT" ;; esac
same "... merged text = git merge-file" "$(cat src/lines.txt)" "$(cat "$SCRATCH/want")"
same "... the project's own edit kept" "$(tail -1 crlf.txt)" proj
same "... mode carried over" "$(stat -c %a run.sh)" 700
check "... created and deleted" test -f new.txt -a ! -e empty
t "undo" D undo
same "... the project is back to before the apply" "$(tree_state "$P")" "$PRE"
t "redo" D redo
same "... and forward again" "$(cat src/lines.txt)" "$(cat "$SCRATCH/want")"
D undo >/dev/null

# ===== apply: conflicts, nothing written =====================================
t "create c" D workspace create c
WC=$OUT
sed -i 's/^10$/ten-ws/' "$WC/src/lines.txt"
sed -i 's/^11$/eleven-proj/' src/lines.txt # adjacent line: a conflict
printf 'ws\0' >"$WC/blob.bin"
printf 'pr\0' >blob.bin
rm "$WC/secret"
echo more >>secret
chmod 640 "$WC/run.sh"
chmod 604 run.sh
echo same >"$WC/both.txt"
echo same >both.txt # created alike on both sides: clean
echo ws >"$WC/add.txt"
echo pr >add.txt # created differently: conflict
PRE=$(tree_state "$P")
t_exit 1 "conflicts c: exit 1" D workspace conflicts c
same "... one line per conflicting path" "$(printf '%s\n' "$OUT" | cut -d"'" -f2)" "add.txt
blob.bin
run.sh
secret
src/lines.txt"
t_exit 1 "conflicts --json" D --json workspace conflicts c
same "... clean false, the paths" "$(py '(d["clean"], [c["path"] for c in d["conflicts"]])')" \
	"(False, ['add.txt', 'blob.bin', 'run.sh', 'secret', 'src/lines.txt'])"
cp src/lines.txt "$SCRATCH/ours"
cp "$WC/src/lines.txt" "$SCRATCH/theirs"
git merge-file -p "$SCRATCH/ours" "$SCRATCH/base" "$SCRATCH/theirs" >/dev/null
same "... git merge-file also calls the adjacent edits a conflict" "$?" 1
t_err "*do not apply*nothing was written*" "apply c: exit 1" 1 D workspace apply c
same "... nothing was written" "$(tree_state "$P")" "$PRE"
t_exit 1 "apply c --json: exit 1" D --json workspace apply c
same "... the done event says conflicts" "$(printf '%s\n' "$OUT" | tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["phase"], d["ok"], d["conflicts"])')" "done False 5"
t "discard c" D workspace discard c

# ===== apply --exec: rolled back when the command fails =======================
t "create e" D workspace create e
echo exec-change >>"$OUT/nofinal.txt"
PRE=$(tree_state "$P")
t_exit 1 "apply e --exec false: exit 1" D workspace apply e --exec false
same "... the project is as before" "$(tree_state "$P")" "$PRE"
t "apply e --exec true" D workspace apply e --exec true
case "$(cat nofinal.txt)" in *exec-change) ok "... applied" ;; *) not_ok "... applied" "$(cat nofinal.txt)" ;; esac
D undo >/dev/null

# ===== discard, undo, redo ====================================================
WS1_STATE=$(tree_state "$W1")
t "discard ws-1" D workspace discard ws-1
case "$OUT" in "discarded workspace ws-1 (captured as "*"); 'decree undo' brings it back") ok "... summary" ;; *) not_ok "... summary" "$OUT" ;; esac
check "... the directory is gone" test ! -e "$W1"
t_exit 1 "path ws-1 after discard: exit 1" D workspace path ws-1
t "gc after discard" D gc
t "undo" D undo
same "... says it made the workspace again" "$OUT" "undo: made workspace ws-1 again at $W1"
same "... exactly as it was (the agent's edits included)" "$(tree_state "$W1")" "$WS1_STATE"
t "redo" D redo
same "... discarded again" "$OUT" "redo: discarded workspace ws-1 again"
check "... gone" test ! -e "$W1"
t "undo again" D undo
same "... back" "$(tree_state "$W1")" "$WS1_STATE"
t "fsck" D fsck
same "... the store is clean" "$OUT" "store ok"

# ===== the project's commands refuse a workspace handle ======================
t_err "decree: '*' is a workspace; run this in its project*" "workspace create inside a workspace: refused" 1 D -C "$W1" workspace create
t_err "*decree: no workspace command given*" "workspace alone: usage" 2 D workspace
t "workspace --help" D workspace --help
t "workspace apply --help" D workspace apply --help

done_testing
