#!/bin/bash
# interrupt.sh - Ctrl-C (SIGINT), SIGTERM or SIGHUP during a large restore,
# undo or apply: the transaction is rolled back, its temp files removed,
# the log removed, and decree exits 130 with one line saying so
# (docs/transactions.md "Interrupted", docs/cli/exit-codes.md), with
# --json also the error document on stdout.  The tree
# is exactly as before, and the store checks clean.
#
# To hit the middle of the writes every time, strace slows each fchmod
# (one per staged file) by 10 ms; the signal is sent once temp files have
# appeared in the tree.  Without a working strace the cases are skipped.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" || exit 1
N=3000
# files d<0..29>/f<0..99>; "append" adds a line to each
files() {
	python3 - "$1" <<'EOF'
import os, sys
for d in range(30):
    os.makedirs("d%d" % d, exist_ok=True)
    for i in range(100):
        with open("d%d/f%d" % (d, i), "a") as f:
            f.write("changed\n" if sys.argv[1] == "append" else "file %d/%d\n" % (d, i))
EOF
}
# a quick fingerprint of the tree (tree_state forks twice per file)
state() {
	(cd "$P" && find . -path ./.decree -prune -o \( -type d -printf '%y %p %m\n' -o -printf '%y %p %m %s\n' \) | LC_ALL=C sort &&
		find . -path ./.decree -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
}
files create
t "checkpoint X of $N files" D checkpoint create -m X
X=$OUT
files append
t "checkpoint Y" D checkpoint create -m Y
Y=$OUT

temps() { find "$P" -name '.decree-tmp-*' | wc -l; }
wal() { find "$P/.decree" -name 'txn.wal' -o -name '.txn.wal.tmp-*' | wc -l; }

if ! strace -qq -o /dev/null -e trace=none true 2>/dev/null; then
	ok "# SKIP strace cannot trace here"
	done_testing
	exit
fi

# interrupted SIG "what" decree-args...: run decree slowed down, send SIG
# once temp files exist; RC, ERR set.
interrupted() {
	local sig=$1 what=$2
	shift 2
	rm -f "$SCRATCH/pid"
	# LeakSanitizer cannot run under ptrace (sanitizer builds)
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
		strace -f -qq -o /dev/null -e trace=fchmod \
		-e inject=fchmod:delay_exit=10000 \
		sh -c 'echo $$ >"$0"; exec "$@"' "$SCRATCH/pid" "$DECREE" "$@" \
		>"$SCRATCH/.out" 2>"$SCRATCH/.err" &
	local tracer=$! n=0
	while [ "$(temps)" -lt 20 ] && [ $n -lt 600 ]; do
		sleep 0.05
		n=$((n + 1))
	done
	seen_temps=$(temps)
	kill "-$sig" "$(cat "$SCRATCH/pid")"
	wait $tracer
	RC=$?
	ERR=$(cat "$SCRATCH/.err")
}

# ---- restore, SIGINT --------------------------------------------------------
before=$(state)
nck=$(D checkpoint list | wc -l)
interrupted INT restore checkpoint restore "$X"
check "temp files existed when SIGINT came ($seen_temps)" test "$seen_temps" -ge 20
check "restore interrupted: exit 130 (got $RC)" test "$RC" = 130
same "... one line says it was rolled back" "$ERR" \
	"decree: interrupted; the restore was rolled back, nothing changed"
same "... no .decree-tmp-* file is left" "$(temps)" 0
same "... no transaction log is left" "$(wal)" 0
same "... the tree is exactly as before" "$(state)" "$before"
same "... no pre-restore checkpoint is left" "$(D checkpoint list | wc -l)" "$nck"
t_err "*nothing to undo*" "... and nothing to undo" 1 D undo
t "fsck" D fsck

# ---- the same restore, uninterrupted, then undo with SIGTERM ----------------
t "restore X" D -q checkpoint restore "$X"
after=$(state)
interrupted TERM undo undo
check "undo interrupted by SIGTERM: exit 130 (got $RC)" test "$RC" = 130
same "... one line says it was rolled back" "$ERR" \
	"decree: interrupted; the undo was rolled back, nothing changed"
same "... no .decree-tmp-* file is left" "$(temps)" 0
same "... no transaction log is left" "$(wal)" 0
same "... the tree is exactly as before" "$(state)" "$after"
# --json: the interruption is the one error document on stdout
interrupted INT undo --json undo
check "undo --json interrupted by SIGINT: exit 130 (got $RC)" test "$RC" = 130
same "... stdout is the error document, code interrupted" "$(cat "$SCRATCH/.out")" \
	'{"error":{"code":"interrupted","message":"interrupted; the undo was rolled back, nothing changed"}}'
same "... the tree is exactly as before" "$(state)" "$after"
t "the undo still works afterwards" D -q undo
same "... and gives Y" "$(state)" "$before"

# ---- apply, SIGHUP -----------------------------------------------------------
t "diff Y X" D checkpoint diff "$Y" "$X"
printf '%s\n' "$OUT" >"$SCRATCH/yx.diff"
interrupted HUP apply apply "$SCRATCH/yx.diff"
check "apply interrupted by SIGHUP: exit 130 (got $RC)" test "$RC" = 130
case "$ERR" in
*"decree: interrupted; the apply was rolled back, nothing changed") ok "... the last line says it was rolled back" ;;
*) not_ok "... the last line says it was rolled back" "$(printf '%s' "$ERR" | tail -3)" ;;
esac
same "... no .decree-tmp-* file is left" "$(temps)" 0
same "... no transaction log is left" "$(wal)" 0
same "... the tree is exactly as before" "$(state)" "$before"
t "fsck" D fsck

done_testing
