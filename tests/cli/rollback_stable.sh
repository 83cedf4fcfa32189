#!/bin/bash
# rollback_stable.sh - the numbers of `decree rollback` stay put
# (docs/cli/rollback.md): the user's checkpoints are numbered 1, 2, ...
# from the newest, decree's captures (pre-restore, pre-undo, pre-redo,
# exec-failed) are listed among them as u1, u2, ... and never take a
# number, so `rollback N`, `undo` and `redo` renumber none of the
# checkpoints a user is reading; deleting an older checkpoint leaves the
# newer ones' numbers alone; a new checkpoint becomes 1.  `rollback N
# --dry-run` prints the plan of `checkpoint restore --dry-run` and changes
# nothing, in the tree or in the store; `rollback uN` restores a capture;
# bad numbers are usage errors (exit 2) or not found (exit 1) and change
# nothing.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

py() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1" 2>&1; }
# every file of the store with its size, mtime and inode
store_state() { (cd "$1/.decree/store" && find . -print0 | LC_ALL=C sort -z | xargs -0 stat -c '%n %F %s %Y %i'); }
# every path of the tree (not .decree) with its type, mode, size, mtime, inode
plain_state() { find . -path ./.decree -prune -o -print0 | LC_ALL=C sort -z | xargs -0 stat -c '%n %F %a %s %Y %i'; }
# "REF ID" per line of `rollback --json`, newest first
refs() { D --json rollback "$@" | python3 -c 'import json,sys; [print(c["ref"], c["id"]) for c in json.load(sys.stdin)["checkpoints"]]'; }
# the ref of checkpoint ID in `rollback --json`
ref_of() { refs | awk -v id="$1" '$2 == id {print $1}'; }

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" || exit 1
# four turns of two sessions; the third carries decree's label with a
# message of its own: a checkpoint of the user's, not a capture
printf 'one\n' >a.txt
C1=$(D checkpoint create -s chat -m t1 -l 'first')
printf 'two\n' >a.txt && printf 'b\n' >b.txt
C2=$(D checkpoint create -s chat -m t2 -l 'second')
printf 'three\n' >a.txt && printf 'c\n' >c.txt
C3=$(D checkpoint create -s other -m t3 -l 'pre-restore')
printf 'four\n' >a.txt && rm b.txt
C4=$(D checkpoint create -s chat -m t4)
ST1=$(tree_state "$P")
printf 'edited\n' >a.txt && printf 'new\n' >new.txt
EDITED=$(tree_state "$P")

# ===== the numbered list =======================================================================
t "rollback lists the checkpoints" D rollback
same "... numbered 1..4, newest first" "$(printf '%s\n' "$OUT" | awk '{print $1, $3}')" \
	"$(printf '1 %s\n2 %s\n3 %s\n4 %s' "${C4:0:12}" "${C3:0:12}" "${C2:0:12}" "${C1:0:12}")"
BEFORE=$(refs)
same "--json: the same numbers" "$BEFORE" "$(printf '1 %s\n2 %s\n3 %s\n4 %s' "$C4" "$C3" "$C2" "$C1")"
t "rollback --json" D --json rollback
same "--json: kind and n of each" "$(py '[(c["kind"], c["n"]) for c in d["checkpoints"]]')" \
	"[('checkpoint', 1), ('checkpoint', 2), ('checkpoint', 3), ('checkpoint', 4)]"

# ===== --dry-run changes nothing ===============================================================
STAMPS=$(plain_state)
STORE=$(store_state "$P")
t_out "restore a.txt
create b.txt
delete c.txt
delete new.txt
dry run: would create 1, restore 1, delete 2 file(s)" "rollback 3 --dry-run: the plan of checkpoint restore --dry-run" D rollback 3 --dry-run
same "... the same as checkpoint restore --dry-run" "$(D checkpoint restore "$C2" --dry-run)" "$OUT"
same "... the tree is unchanged" "$(tree_state "$P")" "$EDITED"
same "... not a file touched (inode, mtime)" "$(plain_state)" "$STAMPS"
same "... the store is unchanged (no capture, no history)" "$(store_state "$P")" "$STORE"
t "rollback 3 -n --json" D --json rollback 3 -n
same "... --json: a dry-run restore report of checkpoint 3" "$(py 'd["operation"], d["checkpoint"], d["dry_run"], d["pre_checkpoint"], sorted(d["deleted"])')" \
	"('restore', '$C2', True, None, ['c.txt', 'new.txt'])"
t_out "restore a.txt
dry run: would create 0, restore 1, delete 0 file(s)" "rollback 3 --dry-run -- a.txt" D rollback 3 --dry-run -- a.txt
same "... nothing changed" "$(store_state "$P")" "$STORE"
same "... the tree neither" "$(tree_state "$P")" "$EDITED"

# ===== rollback N renumbers nothing ============================================================
t_match "*restore: created 1, restored 1, deleted 2 file(s)*" "rollback 3" D rollback 3
same "... the tree is checkpoint 3 (chat:t2)" "$(tree_state "$P")" "$(printf 'F ./a.txt 644 %s\nF ./b.txt 644 %s' "$(printf 'two\n' | sha256sum | cut -c1-64)" "$(printf 'b\n' | sha256sum | cut -c1-64)")"
AFTER=$(refs)
same "... every checkpoint keeps its number" "$(printf '%s\n' "$AFTER" | grep -v '^u')" "$BEFORE"
same "... and the capture it made is u1, the newest entry" "$(printf '%s\n' "$AFTER" | head -1 | cut -d' ' -f1)" "u1"
U1=$(printf '%s\n' "$AFTER" | awk '$1 == "u1" {print $2}')
t "rollback (human)" D rollback
case "$(printf '%s\n' "$OUT" | head -1)" in "  u1  "*"${U1:0:12}"*"[pre-restore]") ok "... the capture is shown as u1, labelled pre-restore" ;;
*) not_ok "... the capture is shown as u1, labelled pre-restore" "$OUT" ;; esac
same "... the human numbers did not move either" "$(printf '%s\n' "$OUT" | awk '$1 !~ /^u/ {print $1, $3}')" \
	"$(printf '1 %s\n2 %s\n3 %s\n4 %s' "${C4:0:12}" "${C3:0:12}" "${C2:0:12}" "${C1:0:12}")"
t "rollback --json after it" D --json rollback
same "... the capture: kind capture, n null, ref u1" "$(py '[(c["kind"], c["n"], c["ref"], c["label"], c["message"]) for c in d["checkpoints"] if c["id"] == "'"$U1"'"]')" \
	"[('capture', None, 'u1', 'pre-restore', None)]"

t "rollback 1 (typed from the same list)" D -q rollback 1
same "... restores checkpoint 1 (chat:t4), as the list said" "$(tree_state "$P")" "$ST1"
AFTER2=$(refs)
same "... the checkpoints still keep their numbers" "$(printf '%s\n' "$AFTER2" | grep -v '^u')" "$BEFORE"
same "... the new capture is u1, the first one u2" "$(printf '%s\n' "$AFTER2" | grep '^u' | cut -d' ' -f1 | tr '\n' ' ')" "u1 u2 "
same "... u2 is the capture of the first rollback" "$(printf '%s\n' "$AFTER2" | awk '$1 == "u2" {print $2}')" "$U1"

# ===== rollback uN restores a capture ==========================================================
t "rollback u2 --dry-run" D rollback u2 --dry-run
case "$OUT" in *"dry run: would create 1, restore 1, delete 0 file(s)"*) ok "... the plan back to the edited tree" ;; *) not_ok "... the plan back to the edited tree" "$OUT" ;; esac
t "rollback u2 (the tree before the first rollback)" D -q rollback u2
same "... the edits are back" "$(tree_state "$P")" "$EDITED"
same "... still no checkpoint renumbered" "$(refs | grep -v '^u')" "$BEFORE"

# ===== undo and redo renumber nothing ==========================================================
printf 'after\n' >a.txt # an edit after the restore: undo keeps it in a pre-undo capture
t "undo" D -q undo
t "redo" D -q redo
AFTER3=$(refs)
same "undo, redo: the checkpoints keep their numbers" "$(printf '%s\n' "$AFTER3" | grep -v '^u')" "$BEFORE"
t "rollback --json" D --json rollback
same "... the pre-undo capture is listed apart too" "$(py 'sorted(set(c["label"] for c in d["checkpoints"] if c["kind"] == "capture"))')" "['pre-restore', 'pre-undo']"
same "... captures are u1..uN, newest first" "$(py '[c["ref"] for c in d["checkpoints"] if c["kind"] == "capture"] == ["u%d" % (i + 1) for i in range(len([c for c in d["checkpoints"] if c["kind"] == "capture"]))]')" "True"

# ===== --session numbers among that session ====================================================
t "rollback --session chat --json" D --json rollback --session chat
same "... chat's checkpoints, 1..3" "$(py '[(c["ref"], c["message"]) for c in d["checkpoints"] if c["kind"] == "checkpoint"]')" \
	"[('1', 't4'), ('2', 't2'), ('3', 't1')]"
t_out "restore a.txt
create b.txt
delete c.txt
delete new.txt
dry run: would create 1, restore 1, delete 2 file(s)" "rollback --session chat 2 --dry-run is chat:t2" D rollback --session chat 2 --dry-run

# ===== deleting and creating ===================================================================
D -q checkpoint restore "$C4"
t "checkpoint delete the oldest (chat:t1)" D -q checkpoint delete "$C1"
same "... the newer ones keep their numbers" "$(refs | grep -v '^u')" "$(printf '%s\n' "$BEFORE" | head -3)"
C5=$(D checkpoint create -s chat -m t5)
same "a new checkpoint is 1, the others move down by one" "$(refs | grep -v '^u')" "$(printf '1 %s\n2 %s\n3 %s\n4 %s' "$C5" "$C4" "$C3" "$C2")"
same "... and the captures keep theirs" "$(refs | grep '^u' | cut -d' ' -f1 | head -1)" "u1"

# ===== bad numbers change nothing ==============================================================
STORE=$(store_state "$P")
TREE=$(tree_state "$P")
t_err "decree: no checkpoint number 9 (there are 4)" "rollback 9: not found, exit 1" 1 D rollback 9
t_err "decree: no capture u99 (there are *)" "rollback u99: not found, exit 1" 1 D rollback u99
t_err "decree: no checkpoint number 9 (there are 4)" "rollback 9 --dry-run: the same" 1 D rollback 9 --dry-run
for bad in 0 u0 u 3x +2 ' 2' U1 uu1 1u; do
	t_err "decree: usage: decree rollback*" "rollback '$bad': usage error, exit 2" 2 D rollback "$bad"
done
t_err "decree: unknown option '-1'*" "rollback -1: usage error, exit 2" 2 D rollback -1
t_err "decree: --dry-run and paths need a checkpoint number*" "rollback --dry-run without N: exit 2" 2 D rollback --dry-run
t_err "decree: --dry-run and paths need a checkpoint number*" "rollback -- a.txt without N: exit 2" 2 D rollback -- a.txt
t_err "decree: usage: decree rollback*" "rollback 1 2: exit 2" 2 D rollback 1 2
same "... nothing changed in the store" "$(store_state "$P")" "$STORE"
same "... nor in the tree" "$(tree_state "$P")" "$TREE"

# ===== an exec-failed capture is one too =======================================================
printf 'x\n' >x.txt
D -q checkpoint create -s chat -m t6
printf -- '--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-x\n+y\n' >"$SCRATCH/p.diff"
D -q apply "$SCRATCH/p.diff" --exec 'echo more >>x.txt; exit 3' 2>/dev/null
t "rollback --json after a failed apply --exec" D --json rollback
same "... its exec-failed capture is u1" "$(py '[(c["ref"], c["label"]) for c in d["checkpoints"]][0]')" "('u1', 'exec-failed')"
same "... the newest checkpoint is still 1" "$(py '[c["message"] for c in d["checkpoints"] if c["n"] == 1]')" "['t6']"

done_testing
