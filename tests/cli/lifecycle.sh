#!/bin/bash
# lifecycle.sh - prune, drop, gc and fsck (DESIGN "Checkpoints"), and where
# the store lives ("The store"): --store, DECREE_STORE, config store:, one
# store serving two project roots.  After prune + gc every kept checkpoint
# must still restore exactly and the undo history must still work.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

D() { "$DECREE" "$@"; }
same() { # name got want
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "$(diff <(printf '%s\n' "$3") <(printf '%s\n' "$2") | head -40)"; fi
}
check() { name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name" "failed: $*"; fi; }
# py EXPR: evaluate over d = JSON of $OUT, print the result
py() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1" 2>&1; }
# ids of `list --json` (optionally for one session), oldest first, space-separated
ids() { _run D --json checkpoint list "$@"; py '" ".join(c["id"] for c in d["checkpoints"])'; }
msgs() { _run D --json checkpoint list "$@"; py '" ".join(str(c["message"]) for c in d["checkpoints"])'; }
store_files() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); }
STATES=$SCRATCH/states
mkdir -p "$STATES"
# ck NAME SESSION MESSAGE: create a checkpoint, remember its id in $NAME and
# the tree state it captured in $STATES/<id>
ck() {
	_run D checkpoint create --session "$2" --message "$3"
	if [ $RC -ne 0 ]; then not_ok "create $2:$3" "exit $RC: $ERR"; return; fi
	printf -v "$1" '%s' "$OUT"
	tree_state "$PWD" >"$STATES/$OUT"
}
# restores_exactly ID...: each restores to its recorded state
restores_exactly() {
	local id bad=
	for id in "$@"; do
		_run D -q checkpoint restore "$id"
		if [ $RC -ne 0 ]; then bad="$bad
$id: exit $RC: $ERR"; continue; fi
		if [ "$(tree_state "$PWD")" != "$(cat "$STATES/$id")" ]; then bad="$bad
$id: tree differs: $(diff <(tree_state "$PWD") "$STATES/$id" | head -5)"; fi
	done
	[ -z "$bad" ] || { printf '%s\n' "$bad" >"$SCRATCH/.why"; return 1; }
}
t_restores() { # name ids...
	local nm=$1; shift
	if restores_exactly "$@"; then ok "$nm"; else not_ok "$nm" "$(cat "$SCRATCH/.why")"; fi
}

# ===== a history in two sessions =====================================================
P=$SCRATCH/proj
mkdir -p "$P/src" && cd "$P" || exit 1
printf 'shared by every checkpoint\n' >shared.txt
for i in 1 2 3 4 5; do
	printf 'version %s of f\n' "$i" >f.txt
	head -c $((3000 + i)) /dev/urandom >"src/blob$i.bin" # unique per checkpoint
	ck S1_$i s1 "m$i"
done
for i in 1 2 3; do
	printf 'session two, version %s\n' "$i" >f.txt
	rm -f src/blob*.bin
	head -c 2000 /dev/urandom >"src/two$i.bin"
	ck S2_$i s2 "n$i"
done
same "list: 8 checkpoints, oldest first" "$(msgs)" "m1 m2 m3 m4 m5 n1 n2 n3"

# ===== prune ===============================================================================
t_err "decree: *" "prune --keep 0 is a usage error" 2 D checkpoint prune --session s1 --keep 0
t "prune --session s1 --keep 2 --json" D --json checkpoint prune --session s1 --keep 2
same "prune reports 3 removed" "$(py 'd["removed"]')" 3
same "s1 keeps its newest two" "$(msgs --session s1)" "m4 m5"
same "s2 untouched by a prune of s1" "$(msgs --session s2)" "n1 n2 n3"
t_err "decree: *" "a pruned checkpoint is gone (show fails)" 1 D checkpoint show "$S1_1"
t "prune --older-than 1 removes nothing young" D --json checkpoint prune --older-than 1
same "... removed 0" "$(py 'd["removed"]')" 0
same "... list unchanged" "$(msgs)" "m4 m5 n1 n2 n3"
t "prune --keep 2 (all sessions)" D --json checkpoint prune --keep 2
same "... s2 keeps its newest two, s1 unchanged" "$(msgs)" "m4 m5 n2 n3"
t "prune --older-than 0" D --json checkpoint prune --older-than 0
same "--older-than 0 leaves only the newest of each session" "$(msgs)" "m5 n3"
t "prune --session s2 --older-than 0 again" D --json checkpoint prune --session s2 --older-than 0
same "the newest of a session is never pruned" "$(msgs)" "m5 n3"
t "prune --session s2 --keep 1" D --json checkpoint prune --session s2 --keep 1
same "... still m5 n3" "$(msgs)" "m5 n3"

# ===== gc ===================================================================================
STORE=$P/.decree/store
SF=$(store_files "$STORE")
DU_BEFORE=$(du -sb "$STORE" | cut -f1)
t "gc --dry-run --json" D --json gc --dry-run
would=$(py 'd["objects_freed"]')
wouldb=$(py 'd["bytes_freed"]')
check "gc --dry-run would free objects (pruned blobs)" test "${would:-0}" -gt 0
same "gc --dry-run deleted nothing in the store" "$(store_files "$STORE")" "$SF"
t "gc --json" D --json gc
same "gc freed what the dry run announced (objects)" "$(py 'd["objects_freed"]')" "$would"
same "gc freed what the dry run announced (bytes)" "$(py 'd["bytes_freed"]')" "$wouldb"
check "gc: the store is smaller on disk" test "$(du -sb "$STORE" | cut -f1)" -lt "$DU_BEFORE"
t "second gc --json" D --json gc
same "second gc frees nothing" "$(py 'd["objects_freed"]')" 0
t "fsck after prune + gc" D fsck
t_restores "kept checkpoints (m5, n3) restore exactly after prune + gc" "$S1_5" "$S2_3"

# ===== undo history survives gc ===========================================================
ck KEEP s1 keep
printf 'only the undo history has these bytes\n' >undo-only.txt
head -c 5000 /dev/urandom >undo-only.bin
UNDO_STATE=$(tree_state "$P")
t "restore n3 (captures undo-only files as pre-restore)" D checkpoint restore "$S2_3"
check "undo-only.txt deleted by the restore" test ! -e undo-only.txt
ck AFTER s1 after
ck AFTER2 s2 after
t "prune --older-than 0 (drops the pre-restore checkpoint too)" D checkpoint prune --older-than 0
_run D --json checkpoint list
same "no pre-restore checkpoint left" "$(py 'sum(1 for c in d["checkpoints"] if c["label"] == "pre-restore")')" 0
t "gc" D gc
t "fsck" D fsck
t "undo after gc" D undo
same "undo after gc brings back the undo-only files byte-exact" "$(tree_state "$P")" "$UNDO_STATE"
t "redo after gc" D redo
check "redo deleted undo-only.txt again" test ! -e undo-only.txt

# ===== drop =================================================================================
ck D1 s3 x1
ck D2 s3 x2
t "drop --session s3 --json" D --json checkpoint drop --session s3
same "drop reports 2 removed" "$(py 'd["removed"]')" 2
same "s3 gone, others kept" "$(msgs)" "after after"
t "gc after drop" D gc
t_restores "remaining checkpoints restore exactly after drop + gc" "$AFTER" "$AFTER2"
t "drop --all --json" D --json checkpoint drop --all
check "drop --all removed at least 2" test "$(py 'd["removed"]')" -ge 2
same "list is empty after drop --all" "$(ids)" ""
t_err "decree: *" "undo after drop --all fails (history cleared), exit 1" 1 D undo
t_err "decree: *" "redo after drop --all fails, exit 1" 1 D redo
BEFORE=$(tree_state "$P")
t "gc --json after drop --all" D --json gc
same "gc after drop --all keeps no object" "$(py 'd["objects_kept"]')" 0
same "gc did not touch the working tree" "$(tree_state "$P")" "$BEFORE"
t "fsck after drop --all + gc" D fsck
t_match '[0-9a-f]*' "a new checkpoint after drop --all" D checkpoint create --message fresh

# ===== a store outside the tree =========================================================
EXT=$SCRATCH/ext-store
Q=$SCRATCH/q
mkdir -p "$Q" && cd "$Q" || exit 1
printf 'q1\n' >q.txt
_run D --store "$EXT" checkpoint create --message q1
Q1=$OUT
if [ $RC -eq 0 ]; then ok "--store: create"; else not_ok "--store: create" "$ERR"; fi
tree_state "$Q" >"$STATES/$Q1"
check "--store: no .decree/store inside the tree" test ! -e "$Q/.decree/store"
check "--store: the store directory was made" test -d "$EXT"
t_match "*${Q1:0:12}*" "--store: list shows it" D --store "$EXT" checkpoint list
_run D --json checkpoint list
same "... list --json is empty" "$OUT" '{"checkpoints":[]}'
check "... and still no .decree in the tree" test ! -e "$Q/.decree/store"
printf 'q2\n' >q.txt
export DECREE_STORE=$EXT
t_match "*${Q1:0:12}*" "DECREE_STORE: list shows the same checkpoint" D checkpoint list
t "DECREE_STORE: restore" D checkpoint restore "$Q1"
check "DECREE_STORE: restored q.txt" test "$(cat q.txt)" = q1
t "DECREE_STORE: undo" D undo
check "DECREE_STORE: undo gave q2 back" test "$(cat q.txt)" = q2
OTHER=$SCRATCH/other-store
t_match '[0-9a-f]*' "--store overrides DECREE_STORE" D --store "$OTHER" checkpoint create --message over
check "... the --store directory was used" test -d "$OTHER"
_run D --json checkpoint list
check "... and DECREE_STORE's list does not have it" test "$(py 'sum(1 for c in d["checkpoints"] if c["message"] == "over")')" = 0
unset DECREE_STORE
check "no .decree/store was ever created in the tree" test ! -e "$Q/.decree/store"

# config store:
K=$SCRATCH/k
mkdir -p "$K/.decree" && cd "$K" || exit 1
printf 'checkpoint:\n  store: %s\n' "$SCRATCH/cfg-store" >.decree/config.yml
printf 'k\n' >k.txt
t_match '[0-9a-f]*' "config store: create" D checkpoint create
check "config store: store made where configured" test -d "$SCRATCH/cfg-store"
check "config store: no .decree/store in the tree" test ! -e "$K/.decree/store"

# ===== one store, two project roots =============================================================
S=$SCRATCH/shared-store
R1=$SCRATCH/root1
R2=$SCRATCH/root2
mkdir -p "$R1" "$R2"
printf 'same bytes in both roots\n' | tee "$R1/common.txt" >"$R2/common.txt"
head -c 4000 /dev/urandom >"$R1/r1only.bin"
head -c 4000 /dev/urandom >"$R2/r2only.bin"
export DECREE_STORE=$S
cd "$R1" || exit 1
ck R1A s r1a
printf 'r1 change\n' >"$R1/change.txt"
ck R1B s r1b
cd "$R2" || exit 1
ck R2A s r2a
head -c 3000 /dev/urandom >"$R2/r2more.bin"
ck R2B s r2b
same "root1 lists only its checkpoints" "$(D -C "$R1" --json checkpoint list | python3 -c 'import json,sys; print(" ".join(c["message"] for c in json.load(sys.stdin)["checkpoints"]))')" "r1a r1b"
same "root2 lists only its checkpoints" "$(D -C "$R2" --json checkpoint list | python3 -c 'import json,sys; print(" ".join(c["message"] for c in json.load(sys.stdin)["checkpoints"]))')" "r2a r2b"
t_err "decree: *" "root1 cannot resolve root2's S:M" 1 D -C "$R1" checkpoint show s:r2a
t "drop --all in root1" D -C "$R1" checkpoint drop --all
same "root2's checkpoints survive root1's drop --all" "$(D -C "$R2" --json checkpoint list | python3 -c 'import json,sys; print(" ".join(c["message"] for c in json.load(sys.stdin)["checkpoints"]))')" "r2a r2b"
t "gc from root1" D -C "$R1" --json gc
check "gc from root1 freed root1's objects" test "$(py 'd["objects_freed"]')" -gt 0
t "fsck of the shared store" D -C "$R2" fsck
cd "$R2" || exit 1
t_restores "root2's checkpoints restore exactly after root1's gc" "$R2A" "$R2B"
t "gc from root2 frees nothing more" D -C "$R2" --json gc
same "... 0 freed" "$(py 'd["objects_freed"]')" 0
# The root is keyed by its absolute, canonical path: a relative -C, a
# trailing slash, a path with .. and a symlink to the root all name root2.
cd "$SCRATCH" || exit 1
ln -s root2 root2-link
for form in root2 root2/ ./root1/../root2 root2-link "$SCRATCH/root2"; do
	_run D -C "$form" --json checkpoint list
	got=$(py '" ".join(c["message"] for c in d["checkpoints"] if c["message"])')
	same "-C $form lists root2's checkpoints" "$got" "r2a r2b"
done
unset DECREE_STORE

# ===== a damaged store is detected and changes nothing ============================================
Z=$SCRATCH/z
mkdir -p "$Z" && cd "$Z" || exit 1
head -c 200000 /dev/urandom >big.bin
printf 'small\n' >small.txt
_run D checkpoint create
ZX=$OUT
rm big.bin small.txt && printf 'later\n' >later.txt
# flip one byte in the middle of the largest file of the store (it holds big.bin)
largest=$(find .decree/store -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
chmod u+w "$largest"
python3 - "$largest" <<'EOF2'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0xFF; open(p, "wb").write(b)
EOF2
t_err "decree: *" "fsck finds the damaged object, exit 1" 1 D fsck
_run D --json fsck
same "fsck --json: ok false with a problem" "$(py 'd["ok"] is False and len(d["problems"]) >= 1')" True
BEFORE=$(tree_state "$Z")
t_err "decree: *" "restore needing the damaged object fails, exit 1" 1 D checkpoint restore "$ZX"
same "the failed restore changed nothing in the tree" "$(tree_state "$Z")" "$BEFORE"

done_testing
