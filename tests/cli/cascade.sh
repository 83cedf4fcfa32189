#!/bin/bash
# cascade.sh - the cascading-restore scenario of seed 001 (Checkpoints PRD,
# "Example Scenario"), end to end through the CLI:
#
#   Message A: "Add a button to the homepage"  -> AI creates button.tsx
#   Message B: "Make the button red"           -> checkpoint B; AI modifies
#                                                  button.tsx, creates global.css
#   Message C: "Add a header"                  -> checkpoint C; AI creates header.tsx
#   Message D: "Change header to blue"         -> checkpoint D; AI modifies header.tsx
#
# A checkpoint is taken before every message (session = conversation,
# --message = message id).  Restoring B must give button.tsx its B bytes and
# delete global.css and header.tsx; has_changes must follow the PRD; undo,
# redo and the rollback numbering are checked on the same history.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

D() { "$DECREE" "$@"; }
# t_py EXPR NAME: ok if the python expression over d (= JSON of $OUT) is true.
t_py() {
	if printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" 2>"$SCRATCH/.pyerr"; then ok "$2"
	else not_ok "$2" "assertion failed: $1
output: $OUT
$(cat "$SCRATCH/.pyerr")"; fi
}
# has_changes of the checkpoints of session conv1 with the given messages,
# as "A=true B=false ..." (from the last `list --json` in $OUT).
hc() {
	printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
by = {c["message"]: c for c in d["checkpoints"] if c["session"] == "conv1"}
print(" ".join("%s=%s" % (m, str(by[m]["has_changes"]).lower() if m in by else "missing") for m in sys.argv[1:]))' "$@"
}
t_hc() { # expected name
	want=$1 name=$2
	_run D --json checkpoint list --session conv1
	got=$(hc $(printf '%s\n' "$want" | tr ' ' '\n' | cut -d= -f1))
	if [ $RC -eq 0 ] && [ "$got" = "$want" ]; then ok "$name"; else not_ok "$name" "exit $RC; got: $got; wanted: $want; stderr: $ERR"; fi
}
same() { # name a b
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "$(diff <(printf '%s\n' "$2") <(printf '%s\n' "$3"))"; fi
}
sha() { sha256sum <"$1" | cut -c1-64; }

P=$SCRATCH/app
mkdir -p "$P"
cd "$P" || exit 1
BUTTON_A='export function Button() {
  return <button>Click me</button>
}
'
BUTTON_B='export function Button() {
  return <button style={{ color: "red" }}>Click me</button>
}
'
HEADER_C='export const Header = () => <h1>Header</h1>
'
HEADER_D='export const Header = () => <h1 style={{ color: "blue" }}>Header</h1>
'

# --- message A ------------------------------------------------------------
t_match '[0-9a-f]*' "checkpoint A (empty app) before message A" D checkpoint create --session conv1 --message A
A=$OUT
case "$A" in *[!0-9a-f]*) not_ok "id A is 64 lowercase hex" "$A" ;;
*) if [ ${#A} -eq 64 ]; then ok "id A is 64 lowercase hex"; else not_ok "id A is 64 lowercase hex" "$A"; fi ;; esac
ST_A=$(tree_state "$P")
t_hc "A=false" "has_changes A=false before the AI answers"
printf '%s' "$BUTTON_A" >button.tsx # AI: creates button.tsx
t_hc "A=true" "has_changes A=true after button.tsx is created"

# --- message B ------------------------------------------------------------
t_match '[0-9a-f]*' "checkpoint B before message B" D checkpoint create --session conv1 --message B
B=$OUT
ST_B=$(tree_state "$P")
t_hc "A=true B=false" "has_changes after checkpoint B"
printf '%s' "$BUTTON_B" >button.tsx # AI: button red, creates global.css
printf 'button { color: red; }\n' >global.css
t_hc "A=true B=true" "has_changes after message B's changes"

# --- message C ------------------------------------------------------------
t_match '[0-9a-f]*' "checkpoint C before message C" D checkpoint create --session conv1 --message C
C=$OUT
ST_C=$(tree_state "$P")
t_hc "A=true B=true C=false" "has_changes after checkpoint C"
printf '%s' "$HEADER_C" >header.tsx # AI: creates header.tsx
t_hc "A=true B=true C=true" "has_changes after header.tsx is created"

# --- message D ------------------------------------------------------------
t_match '[0-9a-f]*' "checkpoint D before message D" D checkpoint create --session conv1 --message D
DD=$OUT
ST_D=$(tree_state "$P")
t_hc "A=true B=true C=true D=false" "has_changes after checkpoint D"
printf '%s' "$HEADER_D" >header.tsx # AI: header blue
t_hc "A=true B=true C=true D=true" "has_changes after message D's changes (last vs disk)"

n=$(printf '%s\n' "$A" "$B" "$C" "$DD" | sort -u | wc -l)
if [ "$n" -eq 4 ]; then ok "four distinct checkpoint ids"; else not_ok "four distinct checkpoint ids" "$A $B $C $DD"; fi

# The same (session, message) again: same id, no new checkpoint.
t_out "$B" "create for (conv1, B) again returns B's id" D checkpoint create --session conv1 --message B
_run D --json checkpoint list --session conv1
t_py 'len(d["checkpoints"]) == 4' "still exactly four checkpoints in conv1"
t_py '[c["id"] for c in d["checkpoints"]] == "'"$A $B $C $DD"'".split()' "list is oldest first: A B C D"
t_py '[c["file_count"] for c in d["checkpoints"]] == [0, 1, 2, 3]' "file_count A..D = 0 1 2 3"
t_py '[c["total_bytes"] for c in d["checkpoints"]] == ['"0, ${#BUTTON_A}, $((${#BUTTON_B} + 23)), $((${#BUTTON_B} + 23 + ${#HEADER_C}))"']' "total_bytes A..D match the files"
t_py 'all(c["session"] == "conv1" for c in d["checkpoints"])' "session is conv1 for all"

# A second conversation does not disturb conv1's list.
t_match '[0-9a-f]*' "checkpoint in a second conversation" D checkpoint create --session conv2 --message X
t_hc "A=true B=true C=true D=true" "conv1 has_changes unchanged by conv2's checkpoint"
_run D --json checkpoint list --session conv2
t_py '[c["message"] for c in d["checkpoints"]] == ["X"] and d["checkpoints"][0]["has_changes"] is False' "list --session conv2 shows only X, no changes"

# --- restore B (dry run first) --------------------------------------------
BEFORE=$(tree_state "$P")
mkdir -p "$SCRATCH/pre" && cp -a button.tsx global.css header.tsx "$SCRATCH/pre/"
t "restore B --dry-run" D checkpoint restore "$B" --dry-run
plan=$(printf '%s\n' "$OUT" | grep -E '^(restore|delete|create) ' | LC_ALL=C sort)
same "dry-run plan: restore button.tsx, delete global.css and header.tsx" "$plan" "delete global.css
delete header.tsx
restore button.tsx"
same "dry run changed nothing" "$(tree_state "$P")" "$BEFORE"

t "restore B" D checkpoint restore -v "$B"
plan=$(printf '%s\n' "$OUT" | grep -E '^(restore|delete|create) ' | LC_ALL=C sort)
same "restore -v printed the three changes" "$plan" "delete global.css
delete header.tsx
restore button.tsx"
if [ -f button.tsx ] && [ "$(sha button.tsx)" = "$(printf '%s' "$BUTTON_A" | sha256sum | cut -c1-64)" ]; then
	ok "button.tsx is back to its state at B (basic button)"
else not_ok "button.tsx is back to its state at B (basic button)" "$(cat button.tsx 2>&1)"; fi
if [ ! -e global.css ] && [ ! -L global.css ]; then ok "global.css deleted (did not exist at B)"; else not_ok "global.css deleted (did not exist at B)"; fi
if [ ! -e header.tsx ] && [ ! -L header.tsx ]; then ok "header.tsx deleted (did not exist at B)"; else not_ok "header.tsx deleted (did not exist at B)"; fi
same "tree equals checkpoint B exactly" "$(tree_state "$P")" "$ST_B"

_run D --json checkpoint list
t_py 'any(c["label"] == "pre-restore" for c in d["checkpoints"])' "restore captured a pre-restore checkpoint"
t_hc "A=true B=true C=true D=true" "has_changes A..D all true after restoring B"
# --- undo / redo ------------------------------------------------------------
t "undo" D undo
same "undo brings back the pre-restore tree" "$(tree_state "$P")" "$BEFORE"
for f in button.tsx global.css header.tsx; do
	if cmp -s "$f" "$SCRATCH/pre/$f"; then ok "undo: $f byte-exact"; else not_ok "undo: $f byte-exact"; fi
done
t "redo" D redo
same "redo re-applies the restore of B" "$(tree_state "$P")" "$ST_B"
t "undo again" D undo
same "undo again gives the pre-restore tree" "$(tree_state "$P")" "$BEFORE"

# --- rollback ------------------------------------------------------------------
t "rollback lists checkpoints" D rollback
lines=$(printf '%s\n' "$OUT" | grep -cE '^ *[0-9]+ ')
ulines=$(printf '%s\n' "$OUT" | grep -cE '^ *u[0-9]+ ')
_run D --json checkpoint list
nall=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["checkpoints"]))')
ncap=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(len([c for c in json.load(sys.stdin)["checkpoints"] if c["label"] in ("pre-restore", "pre-undo", "pre-redo") and c["message"] is None]))')
newest_first=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(" ".join(c["id"] for c in reversed(json.load(sys.stdin)["checkpoints"])))')
if [ "$lines" -eq $((nall - ncap)) ] && [ "$ulines" -eq "$ncap" ] && [ "$ncap" -gt 0 ]; then ok "rollback numbers the checkpoints ($((nall - ncap))) and lists the $ncap captures as u1.."; else not_ok "rollback numbers the checkpoints and lists the captures apart" "$lines + $ulines lines vs $nall checkpoints, $ncap captures"; fi
_run D --json rollback
t_py '[c["n"] for c in d["checkpoints"] if c["kind"] == "checkpoint"] == list(range(1, len(d["checkpoints"]) - '"$ncap"' + 1))' "rollback --json numbers the checkpoints 1..N"
t_py '[c["ref"] for c in d["checkpoints"] if c["kind"] == "capture"] == ["u%d" % i for i in range(1, '"$ncap"' + 1)] and all(c["n"] is None and c["label"] in ("pre-restore", "pre-undo", "pre-redo") for c in d["checkpoints"] if c["kind"] == "capture")' "rollback --json: the captures are u1..uN, without a number"
t_py '" ".join(c["id"] for c in d["checkpoints"]) == "'"$newest_first"'"' "rollback order is newest first (reverse of list)"
t_py '[c["created_at"] for c in d["checkpoints"]] == sorted([c["created_at"] for c in d["checkpoints"]], reverse=True)' "rollback created_at descending"
numC=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print([c["n"] for c in json.load(sys.stdin)["checkpoints"] if c["id"] == sys.argv[1]][0])' "$C")
numA=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print([c["n"] for c in json.load(sys.stdin)["checkpoints"] if c["id"] == sys.argv[1]][0])' "$A")
_run D rollback
line=$(printf '%s\n' "$OUT" | grep -E "^ *$numC " | head -1)
case "$line" in *"${C:0:12}"*) ok "human rollback line #$numC shows C's id" ;; *) not_ok "human rollback line #$numC shows C's id" "$OUT" ;; esac
_run D --json rollback
t_py '[c for c in d["checkpoints"] if c["id"] == "'"$DD"'"][0]["files_differ"] == 1' "rollback --json: D differs from the tree in 1 file (header.tsx)"
t_py '[c for c in d["checkpoints"] if c["id"] == "'"$A"'"][0]["files_differ"] == 3' "rollback --json: A differs from the tree in 3 files"

t "rollback $numC (checkpoint C)" D rollback "$numC"
same "rollback N restored checkpoint C exactly" "$(tree_state "$P")" "$ST_C"
if [ ! -e header.tsx ] && [ -f global.css ] && [ "$(sha button.tsx)" = "$(printf '%s' "$BUTTON_B" | sha256sum | cut -c1-64)" ]; then ok "at C: red button, global.css, no header.tsx"; else not_ok "at C: red button, global.css, no header.tsx"; fi
t "undo the rollback" D undo
same "undo after rollback gives the pre-rollback tree" "$(tree_state "$P")" "$BEFORE"
# The rollback added a capture; the checkpoints keep their numbers.
_run D --json rollback
same "A keeps its number after a rollback (#$numA)" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print([c["n"] for c in json.load(sys.stdin)["checkpoints"] if c["id"] == sys.argv[1]][0])' "$A")" "$numA"
t "rollback $numA (checkpoint A, the empty app)" D rollback "$numA"
same "rollback to A deletes every file created since" "$(tree_state "$P")" "$ST_A"
t "undo the rollback to A" D undo
same "tree back to the pre-rollback state" "$(tree_state "$P")" "$BEFORE"
t_err 'decree: *' "rollback 999 fails" 1 D rollback 999
same "failed rollback changed nothing" "$(tree_state "$P")" "$BEFORE"
t_err 'decree: *' "rollback 0 is a usage error" 2 D rollback 0
t_out "" "restore D by S:M reference (conv1:D), -q prints nothing" D -q checkpoint restore conv1:D
same "tree equals checkpoint D" "$(tree_state "$P")" "$ST_D"

# rollback N -- PATH restores only that path
printf 'edited by hand\n' >header.tsx
printf 'edited by hand\n' >button.tsx
_run D --json rollback --session conv1
numB=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print([c["n"] for c in json.load(sys.stdin)["checkpoints"] if c["id"] == sys.argv[1]][0])' "$B")
t "rollback --session conv1 $numB -- button.tsx" D rollback --session conv1 "$numB" -- button.tsx
if [ "$(sha button.tsx)" = "$(printf '%s' "$BUTTON_A" | sha256sum | cut -c1-64)" ]; then ok "button.tsx has B's bytes"; else not_ok "button.tsx has B's bytes" "$(cat button.tsx)"; fi
if [ "$(cat header.tsx)" = "edited by hand" ] && [ -f global.css ]; then ok "other paths untouched by rollback N -- PATH"; else not_ok "other paths untouched by rollback N -- PATH"; fi

# has_changes sees a mode-only change
t_match '[0-9a-f]*' "checkpoint E" D checkpoint create --session conv1 --message E
t_hc "E=false" "has_changes E=false right after it"
chmod +x button.tsx
t_hc "E=true" "has_changes E=true after a chmod +x only"
chmod -x button.tsx
t_hc "E=false" "has_changes E=false after chmod -x"
ln -s button.tsx link.tsx
t_hc "E=true" "has_changes E=true after a new symlink"
# Each restore stores its pre-restore capture as a pack; restores merge the
# small packs as checkpoint create does (more than 16), so that a long run
# of restores does not make every object lookup search one pack more.
rm link.tsx
t_match '[0-9a-f]*' "checkpoint F" D checkpoint create --session conv1 --message F
F=$OUT
packs_ok=true
i=1
while [ $i -le 24 ]; do
	printf 'restore round %d\n' $i >>header.tsx
	D -q checkpoint restore "$F" >/dev/null 2>&1 || packs_ok=false
	i=$((i + 1))
done
npacks=$(find "$P/.decree" -name 'pack-*.pack' | wc -l)
if $packs_ok && [ "$npacks" -le 17 ]; then ok "24 restores in a row leave $npacks packs (<= 17)"; else not_ok "24 restores in a row leave <= 17 packs" "restores ok: $packs_ok, packs: $npacks"; fi
# The same for apply, whose new files' bytes go into a pack each time.
i=1
while [ $i -le 24 ]; do
	cp header.tsx "$SCRATCH/h.old"
	printf 'applied round %d\n' $i >>header.tsx
	diff -u --label a/header.tsx --label b/header.tsx "$SCRATCH/h.old" header.tsx >"$SCRATCH/round.diff"
	cp "$SCRATCH/h.old" header.tsx
	D -q apply "$SCRATCH/round.diff" >/dev/null 2>&1 || packs_ok=false
	i=$((i + 1))
done
grep -q 'applied round 24' header.tsx || packs_ok=false
npacks=$(find "$P/.decree" -name 'pack-*.pack' | wc -l)
if $packs_ok && [ "$npacks" -le 17 ]; then ok "24 applies in a row leave $npacks packs (<= 17)"; else not_ok "24 applies in a row leave <= 17 packs" "applies ok: $packs_ok, packs: $npacks"; fi
t "fsck is clean at the end" D fsck

done_testing
