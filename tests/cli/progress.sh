#!/bin/bash
# progress.sh - long work is not silent, and short output stays short
# (issue 11):
#   - on a terminal (a pty from util-linux `script`), create, restore,
#     undo, redo and apply show one progress line on stderr, rewritten with
#     "\r" and erased at the end (DECREE_PROGRESS_DELAY_MS=0 shows it at
#     once, so a small tree shows it deterministically); never on a pipe,
#     never with --json or -q, never with TERM=dumb, and not for a
#     command that ends before the delay;
#   - restore, rollback N, undo, redo and apply print a one-line summary,
#     per-file lines only with -v (--dry-run still prints the plan).
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE
D() { "$DECREE" "$@"; }

if ! command -v script >/dev/null 2>&1; then
	ok "# SKIP util-linux script is not installed"
	done_testing
	exit 0
fi

cd "$SCRATCH" && mkdir p && cd p || exit 1
for i in $(seq 1 40); do mkdir -p d$((i % 5)) && echo "file $i" >d$((i % 5))/f$i.txt; done

# on_tty CMD...: run CMD on a pty with stdout to $SCRATCH/tty.out; the pty
# (stderr) into $SCRATCH/tty.err, $RC the status
on_tty() {
	local cmd="" a
	for a in "$@"; do cmd="$cmd $(printf '%q' "$a")"; done
	script -qfec "$cmd >'$SCRATCH/tty.out'" /dev/null >"$SCRATCH/tty.err" 2>&1 </dev/null
	RC=$?
}
# has_progress STAGE: the pty saw a progress line of that stage
has_progress() { tr '\r' '\n' <"$SCRATCH/tty.err" | grep -q "^$1: [0-9,/]* files"; }
# erased: the last progress line was blanked out (\r, spaces, \r)
erased() { LC_ALL=C grep -q "$(printf '\r') *$(printf '\r')" "$SCRATCH/tty.err"; }
# nothing but what is allowed on the pty: no \r, no progress word
quiet_tty() { ! LC_ALL=C grep -q "$(printf '\r')[a-z]*ing:" "$SCRATCH/tty.err"; }

export DECREE_PROGRESS_DELAY_MS=0

# ===== create =================================================================
on_tty "$DECREE" checkpoint create
A=$(cat "$SCRATCH/tty.out")
if [ "$RC" -eq 0 ] && has_progress scanning; then ok "create on a terminal: a 'scanning' progress line"
else not_ok "create on a terminal: a 'scanning' progress line" "exit $RC: $(od -c "$SCRATCH/tty.err" | head)"; fi
check "... erased at the end" erased
same "... stdout is the id alone" "$(printf '%s' "$A" | grep -c '^[0-9a-f]\{64\}$')" 1

on_tty "$DECREE" --json checkpoint create
same "create --json on a terminal: exit 0" "$RC" 0
check "... no progress" quiet_tty
on_tty "$DECREE" -q checkpoint create
check "create -q on a terminal: no progress" quiet_tty
on_tty env TERM=dumb "$DECREE" checkpoint create
check "create with TERM=dumb: no progress" quiet_tty
on_tty env DECREE_PROGRESS_DELAY_MS=60000 "$DECREE" checkpoint create
check "create that ends before the delay (60 s here; 500 ms by default): no progress" quiet_tty
_run D checkpoint create
if [ "$RC" -eq 0 ] && ! printf '%s' "$ERR" | LC_ALL=C grep -q "$(printf '\r')\|ing:"; then ok "create on a pipe: nothing on stderr"
else not_ok "create on a pipe: nothing on stderr" "$ERR"; fi

# ===== restore: summary, -v, --dry-run ========================================
rm -f d1/*.txt && echo new >d2/new.txt && echo changed >d3/f3.txt
BEFORE=$(tree_state .)
_run D checkpoint restore --dry-run "$A"
same "restore --dry-run prints the plan, one line per path" \
	"$(printf '%s\n' "$OUT" | grep -c '^\(create\|delete\|restore\) ')" 10
on_tty "$DECREE" checkpoint restore "$A"
same "restore on a terminal: exit 0" "$RC" 0
same "... stdout: the summary line alone" "$(cat "$SCRATCH/tty.out")" \
	"restore: created 8, restored 1, deleted 1 file(s); 'decree undo' reverts this"
check "... a 'writing' progress line" has_progress writing
check "... erased at the end" erased
on_tty "$DECREE" undo
same "undo on a terminal: the summary line alone" "$(cat "$SCRATCH/tty.out")" \
	"undo: created 1, restored 1, deleted 8 file(s)"
check "... a 'writing' progress line" has_progress writing
same "... the tree is back" "$(tree_state .)" "$BEFORE"
on_tty "$DECREE" redo
same "redo on a terminal: the summary line alone" "$(cat "$SCRATCH/tty.out")" \
	"redo: created 8, restored 1, deleted 1 file(s)"
check "... a 'writing' progress line" has_progress writing
_run D undo -v
same "undo -v: one line per path, then the summary" \
	"$(printf '%s\n' "$OUT" | grep -c '^\(create\|delete\|restore\) ') $(printf '%s\n' "$OUT" | tail -1)" \
	"10 undo: created 1, restored 1, deleted 8 file(s)"
_run D checkpoint restore "$A"
same "restore on a pipe: the summary alone" "$OUT" \
	"restore: created 8, restored 1, deleted 1 file(s); 'decree undo' reverts this"
same "... nothing on stderr" "$ERR" ""
_run D undo --verbose
same "undo --verbose: one line per path" "$(printf '%s\n' "$OUT" | grep -c '^\(create\|delete\|restore\) ')" 10
N=$(D --json rollback | python3 -c 'import json,sys; print([c["n"] for c in json.load(sys.stdin)["checkpoints"] if c["id"] == sys.argv[1]][0])' "$A")
_run D rollback "$N" -v
same "rollback N -v: one line per path" "$(printf '%s\n' "$OUT" | grep -c '^\(create\|delete\|restore\) ')" 10
_run D undo
N=$(D --json rollback | python3 -c 'import json,sys; print([c["n"] for c in json.load(sys.stdin)["checkpoints"] if c["id"] == sys.argv[1]][0])' "$A")
_run D rollback "$N"
same "rollback N: the summary alone" "$OUT" \
	"restore: created 8, restored 1, deleted 1 file(s); 'decree undo' reverts this"
_run D undo
on_tty "$DECREE" --json checkpoint restore "$A"
same "restore --json on a terminal: exit 0" "$RC" 0
check "... no progress" quiet_tty
same "... every path is in the document" \
	"$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["created"]), len(d["restored"]), len(d["deleted"]), len(d["changes"]))' "$SCRATCH/tty.out")" \
	"8 1 1 10"
on_tty "$DECREE" -q undo
check "undo -q on a terminal: no progress" quiet_tty
same "... and no output" "$(cat "$SCRATCH/tty.out")" ""

# ===== apply ==================================================================
mkdir -p "$SCRATCH/pa/old" "$SCRATCH/pa/new"
printf 'one\n' >"$SCRATCH/pa/old/x.txt" && printf 'two\n' >"$SCRATCH/pa/new/x.txt"
printf 'made\n' >"$SCRATCH/pa/new/y.txt"
(cd "$SCRATCH/pa" && diff -ruN old new >p.diff)
printf 'one\n' >x.txt
on_tty "$DECREE" apply "$SCRATCH/pa/p.diff"
same "apply on a terminal: the summary alone on stdout" "$(cat "$SCRATCH/tty.out")" \
	"applied $SCRATCH/pa/p.diff: created 1, modified 1, deleted 0, skipped 0; 'decree undo' reverts this"
check "... a 'writing' progress line" has_progress writing
if ! LC_ALL=C grep -q '^\(staging\|applying\) ' "$SCRATCH/tty.err"; then ok "... no per-file lines without -v"
else not_ok "... no per-file lines without -v" "$(cat "$SCRATCH/tty.err")"; fi
_run D undo
_run D apply -v "$SCRATCH/pa/p.diff"
same "apply -v: staging and applying lines per file on stderr" \
	"$(printf '%s\n' "$ERR" | grep -c '^\(staging\|applying\) ')" 4
_run D undo
_run D apply "$SCRATCH/pa/p.diff"
# stderr not a terminal: the per-file lines of DESIGN.md's contract, and
# never a progress line
same "apply on a pipe: staging and applying lines per file on stderr" \
	"$(printf '%s\n' "$ERR" | grep -c '^\(staging\|applying\) ')" 4
case $ERR in
*"$(printf '\r')"*) not_ok "apply on a pipe: no progress line" "$ERR" ;;
*) ok "apply on a pipe: no progress line" ;;
esac
_run D undo
_run D -q apply "$SCRATCH/pa/p.diff"
same "apply -q on a pipe: nothing on stderr" "$ERR" ""

done_testing
