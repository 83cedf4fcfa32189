#!/bin/bash
# pipeline_escape.sh - a routine must not outlive, deadlock or outwit its
# run (issue 9 item 8; docs/pipeline.md "Routines", "Interrupts"):
#   - what a routine leaves running (background jobs, in its own process
#     group too) is killed when it exits: nothing writes to the tree after
#     the run is diffed, reverted or dead-lettered;
#   - a routine calling `decree run` or `decree process` on its own project
#     gets a clear error at once instead of waiting forever for the lock;
#   - a routine that deletes .decree/runs (or its run directory) cannot stop
#     the run from being recorded and reverted; one that deletes its inbox
#     message makes the run fail with the tree put back, undoably.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/^.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }
wait_gone() { # pid seconds
	local i=0
	while alive "$1" && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
	! alive "$1"
}

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" && D -q init || exit 1
printf 'max_retries: 1\n' >.decree/config.yml
export SIG=$SCRATCH/sig
mkdir -p "$SIG"

# late: starts a background job (plain) and one in a process group of its
# own (job control on), both of which write to the tree 2 s later; then
# exits with $late_status
cat >.decree/routines/late.sh <<'EOF'
#!/bin/bash
late_status="${late_status:-1}"
echo "attempt $DECREE_ATTEMPT" >>attempts.txt
(sleep 2; echo late >late-bg.txt) &
echo $! >"$SIG/bg.pid"
set -m
(sleep 2; echo late >late-pg.txt) &
echo $! >"$SIG/pg.pid"
set +m
exit "$late_status"
EOF
printf 'original\n' >keep.txt
pre=$(tree_state "$P")

# ===== (a) what a routine leaves running is killed =========================================
t_exit 1 "a failing routine with background jobs is dead-lettered" D -q run -m bg-dead -p x -v routine=late
check "... the plain background job is gone" wait_gone "$(cat "$SIG/bg.pid")" 5
check "... the job in a process group of its own is gone" wait_gone "$(cat "$SIG/pg.pid")" 5
sleep 3
check "... nothing was written after the revert (late-bg.txt)" test ! -e late-bg.txt
check "... (late-pg.txt)" test ! -e late-pg.txt
same "... the tree is exactly as before" "$(tree_state "$P")" "$pre"

t "a succeeding routine with background jobs" D -q run -m bg-done -p x -v routine=late -v late_status=0
check "... its background jobs are gone" wait_gone "$(cat "$SIG/pg.pid")" 5
sleep 3
check "... they wrote nothing after the run was diffed" test ! -e late-bg.txt -a ! -e late-pg.txt
id=$(fm .decree/inbox/done/bg-done.md id)
check "... changes.diff is the tree now" sh -c "'$DECREE' checkpoint diff decree:$id | cmp -s - .decree/runs/$id/changes.diff"
D -q revert "$id" >/dev/null

# ===== (b) a routine running its own project's pipeline ====================================
cat >.decree/routines/nested.sh <<'EOF'
#!/bin/bash
start=$(date +%s)
"$DECREE" process >"$SIG/nested.out" 2>"$SIG/nested.err"
echo "$? $(($(date +%s) - start))" >"$SIG/nested.rc"
"$DECREE" run -p inner -v routine=late >>"$SIG/nested.out" 2>>"$SIG/nested.err"
echo "$?" >>"$SIG/nested.rc"
echo done >nested.txt
EOF
t "a routine calling decree process and decree run" timeout 60 "$DECREE" -q run -m nested -p x -v routine=nested
read -r nrc nsec <"$SIG/nested.rc"
check "... the nested process fails" test "$nrc" -ne 0
check "... at once (${nsec}s)" test "$nsec" -lt 5
check "... the nested run fails too" test "$(sed -n 2p "$SIG/nested.rc")" -ne 0
check "... saying why" grep -q "cannot run or process its own project's pipeline" "$SIG/nested.err"
same "... one 'decree:' line per call" "$(grep -c '^decree: ' "$SIG/nested.err")" 2
check "... nothing was queued by the nested run" test -z "$(ls .decree/inbox/*.md 2>/dev/null)"
check "... the outer run went on (nested.txt)" test -f nested.txt
id=$(fm .decree/inbox/done/nested.md id)
D -q revert "$id" >/dev/null
pre=$(tree_state "$P")

# ===== (c) a routine deleting the pipeline's own files =====================================
cat >.decree/routines/wipe.sh <<'EOF'
#!/bin/bash
wipe_status="${wipe_status:-1}"
echo wiped >wiped.txt
rm -rf .decree/runs
exit "$wipe_status"
EOF
t_exit 1 "a failing routine that deletes .decree/runs is still dead-lettered" D -q run -m wipe-dead -p x -v routine=wipe
same "... the tree is reverted" "$(tree_state "$P")" "$pre"
check "... in dead/" test -f .decree/inbox/dead/wipe-dead.md
id=$(fm .decree/inbox/dead/wipe-dead.md id)
check "... its run directory came back with the attempts' diffs" test -f ".decree/runs/$id/changes-2.diff"
check "... and with manifest.json and message.md" test -f ".decree/runs/$id/manifest.json" -a -f ".decree/runs/$id/message.md"
check "... and dead-letter.md, outcome.json" test -f ".decree/runs/$id/dead-letter.md" -a -f ".decree/runs/$id/outcome.json"

t "a succeeding routine that deletes .decree/runs" D -q run -m wipe-done -p x -v routine=wipe -v wipe_status=0
id=$(fm .decree/inbox/done/wipe-done.md id)
check "... changes.diff is recorded" grep -q '^+wiped' ".decree/runs/$id/changes.diff"
t "... and revert works from it" D -q revert "$id"
same "... the tree is as before" "$(tree_state "$P")" "$pre"

cat >.decree/routines/eat.sh <<'EOF'
#!/bin/bash
echo eaten >eaten.txt
rm -f .decree/inbox/*.md
EOF
t_err "decree: *put back*" "a routine that deletes its own inbox message: exit 1" 1 D -q run -m eat -p x -v routine=eat
check "... the error says why first" sh -c "printf '%s' \"\$1\" | grep -q \"cannot move 'eat.md'\"" _ "$ERR"
same "... the tree is put back" "$(tree_state "$P")" "$pre"
t "... and undo brings the routine's work back" D -q undo
check "... (eaten.txt)" grep -q eaten eaten.txt

done_testing
