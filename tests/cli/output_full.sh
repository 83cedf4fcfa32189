#!/bin/bash
# output_full.sh - when a command's report cannot be written (stdout on a
# full disk: /dev/full), the exit status is 1 and the one error line says
# so; when the command had already changed something, that same line says
# what (cli_did in src/cli/opt.c): the checkpoint made and its whole id,
# the restore, undo or redo done, the patch or workspace applied, the
# workspace made or discarded (docs/cli/exit-codes.md).  The change itself stands: the store and the tree are checked
# afterwards.  A command that changed nothing says only that the output
# failed; when its reader went away (a closed pipe) it ends quietly by
# SIGPIPE instead.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE
if [ ! -c /dev/full ] || [ ! -w /dev/full ]; then
	echo "ok 1 # SKIP no writable /dev/full here"
	echo "1..1"
	exit 0
fi

# full NAME PATTERN CMD...: CMD with stdout on /dev/full exits 1, and of
# its stderr (notices and progress lines come first) the one error line is
# the last, matching the shell pattern PATTERN; $ERR is that line
full() {
	local name=$1 pat=$2 n
	shift 2
	"$DECREE" "$@" >/dev/full 2>"$SCRATCH/full.err"
	RC=$?
	n=$(grep -c '^decree: cannot write output' "$SCRATCH/full.err")
	ERR=$(tail -n 1 "$SCRATCH/full.err")
	# shellcheck disable=SC2053
	if [ $RC -eq 1 ] && [ "$n" = 1 ] && [[ $ERR == $pat ]]; then
		ok "$name"
	else
		not_ok "$name" "exit $RC; stderr: $ERR"
	fi
}

P=$SCRATCH/p
mkdir -p "$P" && cd "$P" || exit 1
printf 'one\n' >a.txt
printf 'two\n' >b.txt
D -q init >/dev/null || exit 1
C1=$(D -q checkpoint create -m first)

# checkpoint create: the id that could not be printed is on stderr
printf 'changed\n' >a.txt
full "create: exit 1, one line naming the checkpoint made" \
	"decree: cannot write output: No space left on device; checkpoint [0-9a-f]* was created" \
	checkpoint create -m second
C2=${ERR##*checkpoint }
C2=${C2%% was created}
same "... its whole id" "${#C2}" 64
t_out "$C2" "... and it exists: the newest checkpoint" sh -c \
	'"$DECREE" --json checkpoint list | python3 -c "import json,sys; print(json.load(sys.stdin)[\"checkpoints\"][-1][\"id\"])"'
# the same message again returns the existing checkpoint: nothing made
full "create returning an existing checkpoint: only the output error" \
	"decree: cannot write output: No space left on device" \
	checkpoint create -m second

# restore: done, and said so
full "restore: exit 1, one line saying the restore was done" \
	"decree: cannot write output: No space left on device; restore done: created 0, restored 1, deleted 0 file(s)" \
	checkpoint restore "$C1"
same "... the tree is the checkpoint's" "$(cat a.txt)" one
full "undo: exit 1, one line saying the undo was done" \
	"decree: cannot write output: No space left on device; undo done: created 0, restored 1, deleted 0 file(s)" \
	undo
same "... the restore is undone" "$(cat a.txt)" changed

full "redo: exit 1, one line saying the redo was done" \
	"decree: cannot write output: No space left on device; redo done: created 0, restored 1, deleted 0 file(s)" \
	redo
same "... the restore is done again" "$(cat a.txt)" one
D -q undo >/dev/null

# apply: applied, and said so
D -q checkpoint create -m before-patch >/dev/null
cat >"$SCRATCH/p.diff" <<'EOF'
--- a/b.txt
+++ b/b.txt
@@ -1 +1 @@
-two
+TWO
EOF
full "apply: exit 1, one line saying the patch was applied" \
	"decree: cannot write output: No space left on device; $SCRATCH/p.diff was applied: created 0, modified 1, deleted 0 file(s)" \
	apply "$SCRATCH/p.diff"
same "... the file is patched" "$(cat b.txt)" TWO

# workspace create and discard
full "workspace create: exit 1, one line naming the workspace and its place" \
	"decree: cannot write output: No space left on device; workspace w1 was created at /*" \
	workspace create w1
WS=${ERR##* was created at }
check "... it exists there" test -f "$WS/a.txt"
printf 'in the workspace\n' >"$WS/c.txt"
full "workspace apply: exit 1, one line saying it was applied" \
	"decree: cannot write output: No space left on device; workspace w1 was applied: created 1, modified 0, deleted 0 file(s)" \
	workspace apply w1
same "... its file is in the project" "$(cat c.txt)" "in the workspace"
full "workspace discard: exit 1, one line saying it was discarded" \
	"decree: cannot write output: No space left on device; workspace w1 was discarded (captured as [0-9a-f]*)" \
	workspace discard w1
check "... it is gone" test ! -e "$WS"

# read-only commands: only the output error
full "checkpoint list: only the output error" \
	"decree: cannot write output: No space left on device" \
	checkpoint list
full "status: only the output error" \
	"decree: cannot write output: No space left on device" \
	status

# a reader that went away (`| head`): a command that changed nothing ends
# quietly by SIGPIPE, as git does; a change still says what it did.  The
# pipe's read end is closed before decree starts, so every write fails.
# closed NAME CMD...: CMD's exit status (-13: killed by SIGPIPE) and stderr
closed() {
	python3 - "$DECREE" "$@" <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE)
print(p.returncode)
sys.stdout.write(p.stderr.decode())
PY
}
same "checkpoint list into a closed pipe: killed by SIGPIPE, nothing said" \
	"$(closed checkpoint list)" -13
same "checkpoint show --json into a closed pipe: the same" \
	"$(closed --json checkpoint show "$C1")" -13
same "diff into a closed pipe: the same" "$(closed checkpoint diff "$C1")" -13
printf 'piped\n' >a.txt
got=$(closed -q checkpoint create -m piped)
case $got in
"1
decree: cannot write output: Broken pipe; checkpoint "*" was created") ok "create into a closed pipe: exit 1, the line naming the checkpoint made" ;;
*) not_ok "create into a closed pipe: exit 1, the line naming the checkpoint made" "$got" ;;
esac

t "fsck is clean" D fsck

done_testing
