#!/bin/bash
# pipeline_retry.sh - the retry strategy (seed 002 "Retry Strategy",
# "Retry and Dead-Letter"; DESIGN "Processing one message"): attempts
# 1..max_retries keep each other's changes (each leaves changes-<k>.diff
# and its log), then revert + failure-context.md + one clean-slate attempt
# (DECREE_FAILURE_CONTEXT), then revert + dead-letter (dead-letter.md,
# exit 1, all artifacts kept).  A message moved back from dead/ to inbox/
# is processed again by the next run/process in a fresh run directory.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

has() { # name file fixed-string
	if grep -qF -- "$3" "$2" 2>/dev/null; then ok "$1"; else not_ok "$1" "'$3' not in $2: $(head -c 3000 "$2" 2>/dev/null)"; fi
}
outcome() { python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["outcome"], o["attempts"])' "$1/outcome.json" 2>&1; }
lsrun() { (cd "$1" && ls | LC_ALL=C sort | tr '\n' ' '); }

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" && D -q init || exit 1
printf 'max_retries: 3\n' >.decree/config.yml
printf 'original\n' >keep.txt
printf 'doomed\n' >doomed.txt
# flaky: appends to progress.txt each attempt, records what it saw, fails
# with status 10+attempt until attempt succeed_at
cat >.decree/routines/flaky.sh <<'EOF'
#!/bin/bash
# Fail until attempt succeed_at.
succeed_at="${succeed_at:-99}"
k=$DECREE_ATTEMPT
cat progress.txt >"$message_dir/seen-before-$k" 2>/dev/null || : >"$message_dir/seen-before-$k"
echo "attempt $k" >>progress.txt
echo "attempt $k was here" >"scratch-$k.txt"
printf 'edited by %s\n' "$k" >>keep.txt
rm -f doomed.txt
printf '%s' "${DECREE_FAILURE_CONTEXT-<unset>}" >"$message_dir/fc-env-$k"
if [ -n "${DECREE_FAILURE_CONTEXT:-}" ]; then cp "$DECREE_FAILURE_CONTEXT" "$message_dir/fc-seen-$k"; fi
echo "log tail marker of attempt $k"
if [ "$k" -ge "$succeed_at" ]; then exit 0; fi
echo "error: attempt $k failed" >&2
exit $((10 + k))
EOF
pre=$(tree_state "$P")

# ===== success on attempt 3 of 3: attempts keep each other's changes ====================
t "flaky, succeeding on attempt 3" D run -m third -p x -v routine=flaky -v succeed_at=3
id=$(fm .decree/inbox/done/third.md id)
R=.decree/runs/$id
same "... done after 3 attempts" "$(outcome "$R")" "done 3"
same "... attempt 1 started from the original tree" "$(cat "$R/seen-before-1")" ""
same "... attempt 2 sees attempt 1's changes (not reverted)" "$(cat "$R/seen-before-2")" "attempt 1"
same "... attempt 3 sees attempts 1 and 2" "$(cat "$R/seen-before-3")" "$(printf 'attempt 1\nattempt 2')"
same "... DECREE_ATTEMPT 1, 2, 3: no failure context before the clean slate" "$(cat "$R/fc-env-1") $(cat "$R/fc-env-2") $(cat "$R/fc-env-3")" "<unset> <unset> <unset>"
same "... artifacts: a log per attempt, a diff per failed attempt, the net changes.diff" "$(lsrun "$R")" \
	"changes-1.diff changes-2.diff changes.diff fc-env-1 fc-env-2 fc-env-3 manifest.json message.md outcome.json routine-2.log routine-3.log routine.log seen-before-1 seen-before-2 seen-before-3 "
has "... changes-1.diff: the tree after attempt 1" "$R/changes-1.diff" '+attempt 1'
has "... changes-1.diff: its new file" "$R/changes-1.diff" '+++ b/scratch-1.txt'
if grep -q 'scratch-2' "$R/changes-1.diff"; then not_ok "... changes-1.diff has nothing of attempt 2"; else ok "... changes-1.diff has nothing of attempt 2"; fi
has "... changes-2.diff: attempts 1 and 2 (against the manifest)" "$R/changes-2.diff" '+attempt 2'
has "... changes-2.diff still holds attempt 1's file" "$R/changes-2.diff" '+++ b/scratch-1.txt'
has "... routine.log is attempt 1's" "$R/routine.log" 'log tail marker of attempt 1'
has "... routine-2.log is attempt 2's" "$R/routine-2.log" 'log tail marker of attempt 2'
has "... stderr in the log too" "$R/routine-2.log" 'error: attempt 2 failed'
has "... changes.diff: the net change of all three" "$R/changes.diff" "$(printf '+attempt 1\n+attempt 2\n+attempt 3')"
same "... the tree keeps all three attempts' work" "$(cat progress.txt)" "$(printf 'attempt 1\nattempt 2\nattempt 3')"
# pre-run tree + the net changes.diff = the post-run tree
mkdir -p "$SCRATCH/copy" && printf 'original\n' >"$SCRATCH/copy/keep.txt" && printf 'doomed\n' >"$SCRATCH/copy/doomed.txt"
cp -r specs "$SCRATCH/copy/" && : >"$SCRATCH/copy/specs/processed-spec.md"
t "GNU patch -p1 applies the net changes.diff to a copy of the pre-run tree" patch -p1 -s -d "$SCRATCH/copy" -i "$P/$R/changes.diff"
same "... giving the post-run tree" "$(tree_state "$SCRATCH/copy")" "$(tree_state "$P")"
# put the tree back for the next case
t "decree revert of that run" D -q revert "$id"
same "... tree as before" "$(tree_state "$P")" "$pre"

# ===== attempts 1..3 fail, clean slate succeeds ============================================
t "flaky, succeeding only on the clean-slate attempt (4)" D run -m clean -p x -v routine=flaky -v succeed_at=4
id=$(fm .decree/inbox/done/clean.md id)
R=.decree/runs/$id
same "... done after 4 attempts" "$(outcome "$R")" "done 4"
same "... attempt 3 still saw 1 and 2" "$(cat "$R/seen-before-3")" "$(printf 'attempt 1\nattempt 2')"
same "... the clean slate: reverted to the original checkpoint first" "$(cat "$R/seen-before-4")" ""
check "... failure-context.md written" test -f "$R/failure-context.md"
same "... DECREE_FAILURE_CONTEXT points at it (relative to the root)" "$(cat "$R/fc-env-4")" "$R/failure-context.md"
check "... the routine could read it" cmp -s "$R/failure-context.md" "$R/fc-seen-4"
for k in 1 2 3; do
	has "... failure-context.md: attempt $k's exit status ($((10 + k)))" "$R/failure-context.md" "$((10 + k))"
	has "... failure-context.md: attempt $k's log tail" "$R/failure-context.md" "log tail marker of attempt $k"
done
has "... failure-context.md: the errors" "$R/failure-context.md" 'error: attempt 3 failed'
same "... changes.diff: only the clean-slate attempt's work" "$(grep -x '+attempt [0-9]' "$R/changes.diff")" "+attempt 4"
same "... the tree: only attempt 4's work" "$(cat progress.txt; ls scratch-*)" "$(printf 'attempt 4\nscratch-4.txt')"
check "... changes-3.diff kept" test -f "$R/changes-3.diff"
check "... routine-4.log kept" test -f "$R/routine-4.log"
t "decree revert of that run" D -q revert "$id"
same "... tree as before" "$(tree_state "$P")" "$pre"

# ===== all retries exhausted: revert, dead-letter ============================================
t_exit 1 "flaky, never succeeding: exit 1" D run -m never -p x -v routine=flaky
check "... the message is in inbox/dead/" test -f .decree/inbox/dead/never.md
check "... not in inbox/ or done/" test ! -e .decree/inbox/never.md -a ! -e .decree/inbox/done/never.md
id=$(fm .decree/inbox/dead/never.md id)
R=.decree/runs/$id
same "... the tree is reverted to the original checkpoint" "$(tree_state "$P")" "$pre"
same "... the deleted file is back" "$(cat doomed.txt)" doomed
same "... outcome dead after 4 attempts (3 + clean slate)" "$(outcome "$R")" "dead 4"
same "... the run directory keeps every attempt's artifacts" "$(lsrun "$R" | tr ' ' '\n' | grep -v -e '^seen' -e '^fc-' | tr '\n' ' ')" \
	"changes-1.diff changes-2.diff changes-3.diff changes-4.diff dead-letter.md failure-context.md manifest.json message.md outcome.json routine-2.log routine-3.log routine-4.log routine.log "
same "... the clean slate (attempt 4) started from the original tree" "$(cat "$R/seen-before-4")" ""
check "... dead-letter.md says why" grep -qiE 'fail|attempt' "$R/dead-letter.md"
case "$ERR" in *never*) ok "... stderr reports the dead-letter" ;; *) not_ok "... stderr reports the dead-letter" "$ERR" ;; esac
has "... changes-4.diff: the clean-slate attempt's partial work" "$R/changes-4.diff" '+attempt 4'
if grep -q '+attempt 1' "$R/changes-4.diff"; then not_ok "... without attempts 1-3"; else ok "... without attempts 1-3"; fi
t "decree status afterwards" D --json status
same "... 1 dead, 2 done" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin)["inbox"]; print(d["waiting"], d["done"], d["dead"])')" "0 2 1"

# ===== max_retries from config ==============================================================
printf 'max_retries: 1\n' >.decree/config.yml
t_exit 1 "max_retries: 1 -> 2 attempts in all" D run -m mr1 -p x -v routine=flaky
R=.decree/runs/$(fm .decree/inbox/dead/mr1.md id)
same "... dead after 2" "$(outcome "$R")" "dead 2"
same "... attempt 2 was the clean slate" "$(cat "$R/fc-env-2")" "$R/failure-context.md"
printf 'max_retries: 2\n' >.decree/config.yml
t "max_retries: 2, success on the clean slate (3)" D run -m mr2 -p x -v routine=flaky -v succeed_at=3
R=.decree/runs/$(fm .decree/inbox/done/mr2.md id)
same "... done after 3; attempt 2 saw attempt 1; attempt 3 clean" "$(outcome "$R")|$(cat "$R/seen-before-2")|$(cat "$R/seen-before-3")" "done 3|attempt 1|"
D -q revert "$(fm .decree/inbox/done/mr2.md id)"
printf '# no max_retries key\n' >.decree/config.yml
t_exit 1 "no max_retries in config.yml: the default, 3" D run -m mrdefault -p x -v routine=flaky
R=.decree/runs/$(fm .decree/inbox/dead/mrdefault.md id)
same "... 3 + the clean slate = 4 attempts" "$(outcome "$R")" "dead 4"
printf 'max_retries: 0\n' >.decree/config.yml
t_err "decree: *max_retries*" "max_retries: 0 is a config error" 1 D run -m mr0 -p x -v routine=flaky
printf 'max_retries: 3\n' >.decree/config.yml

# ===== re-queue a dead message: processed again in a fresh run directory =================
same "before re-queue: tree as before" "$(tree_state "$P")" "$pre"
cat >.decree/routines/once.sh <<'EOF'
#!/bin/bash
# fails until $ONCE_OK exists
if [ -f "$ONCE_OK" ]; then echo fixed >fixed.txt; exit 0; fi
echo "stale-marker" >"$message_dir/stale-marker"
echo "stale-log-line"
exit 1
EOF
export ONCE_OK=$SCRATCH/once-ok
t_exit 1 "a message that fails" D run -m requeue-me -p x -v routine=once
id=$(fm .decree/inbox/dead/requeue-me.md id)
cp .decree/inbox/dead/requeue-me.md "$SCRATCH/requeue-me.dead"
mv .decree/inbox/dead/requeue-me.md .decree/inbox/
touch "$ONCE_OK"
printf 'echo other >other.txt\n' >.decree/routines/other.sh
t "the next decree run (of another message) picks up the re-queued one" D run -m other -p y -v routine=other
check "... the re-queued message is done" test -f .decree/inbox/done/requeue-me.md
check "... not in dead/ any more" test ! -e .decree/inbox/dead/requeue-me.md
same "... its id is kept" "$(fm .decree/inbox/done/requeue-me.md id)" "$id"
R=.decree/runs/$id
same "... a fresh run directory: done after 1 attempt" "$(outcome "$R")" "done 1"
same "... with no stale files from the first run" "$(lsrun "$R")" "changes.diff manifest.json message.md outcome.json routine.log "
check "... the old run directory moved aside as <id>.old-1" test -f "$R.old-1/dead-letter.md"
check "... with its artifacts" test -f "$R.old-1/stale-marker" -a -f "$R.old-1/routine-4.log"
check "... the work is in the tree" test -f fixed.txt
t "decree checkpoint list --session decree --json" D --json checkpoint list --session decree
same "... the re-run got its own checkpoint (<id>.2)" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(" ".join(c["message"] for c in json.load(sys.stdin)["checkpoints"] if (c["message"] or "").startswith(sys.argv[1])))' "$id")" "$id $id.2"

rm -f "$ONCE_OK" fixed.txt
t_exit 1 "another failing message" D run -m requeue-two -p x -v routine=once
id=$(fm .decree/inbox/dead/requeue-two.md id)
mv .decree/inbox/dead/requeue-two.md .decree/inbox/
t_exit 1 "re-queued and still failing: decree process dead-letters it again" D process
check "... back in dead/" test -f .decree/inbox/dead/requeue-two.md
check "... the first run directory moved aside" test -f ".decree/runs/$id.old-1/dead-letter.md"
check "... a fresh one for the second run" test -f ".decree/runs/$id/dead-letter.md"
mv .decree/inbox/dead/requeue-two.md .decree/inbox/
touch "$ONCE_OK"
t "re-queued again, now succeeding: decree process" D process
check "... done" test -f .decree/inbox/done/requeue-two.md
check "... .old-1 and .old-2 kept" test -d ".decree/runs/$id.old-1" -a -d ".decree/runs/$id.old-2"
same "... the fresh one has no stale files" "$(lsrun ".decree/runs/$id")" "changes.diff manifest.json message.md outcome.json routine.log "
t "decree log of the re-run id" D log "$id"
case "$OUT" in *stale-log-line*) not_ok "... shows only the fresh run" "$OUT" ;; *) ok "... shows only the fresh run" ;; esac

done_testing
