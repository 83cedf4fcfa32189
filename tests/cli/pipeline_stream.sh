#!/bin/bash
# pipeline_stream.sh - a routine's output on the terminal while it runs
# (issue 11; docs/cli/pipeline.md "Watching a routine"): each line, as
# "  | LINE" on stderr, before the routine ends (on a pty: script(1));
# by default only when stderr is a terminal and neither -q nor --json is
# given, --stream / --no-stream decide; never on stdout.  The logs are
# byte for byte what the routine wrote, streamed or not, large output
# included (no deadlock); the exit status still decides retries; Ctrl-C
# during a streamed run still stops, reverts and exits 130.  No timing
# guesses: a routine waits for a file the test creates only after it saw
# the routine's first line.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

if ! script -qec true /dev/null >/dev/null 2>&1; then
	ok "streaming on a terminal # SKIP no script(1)"
	done_testing
	exit
fi

# wait_for FILE PATTERN SECONDS: FILE holds a line matching PATTERN (grep -E)
wait_for() {
	local i=0
	while ! grep -qE "$2" "$1" 2>/dev/null && [ $i -lt $(($3 * 20)) ]; do sleep 0.05; i=$((i + 1)); done
	grep -qE "$2" "$1" 2>/dev/null
}
# on_pty OUTFILE CMD...: run CMD on a pseudo-terminal (stdin, stdout and
# stderr), in the background; its whole screen output goes to OUTFILE
on_pty() {
	local out=$1
	shift
	script -qfec "$(printf '%q ' "$@")" /dev/null </dev/null >"$out" 2>&1 &
	PTY_PID=$!
}
# the newest run directory
lastrun() { ls -d .decree/runs/*/ | sort | tail -1; }
streamed() { grep -c '^  | ' "$1" | tr -d '\n'; }

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" && D -q init || exit 1
printf 'max_retries: 2\ndefault_routine: talk\n' >.decree/config.yml
printf 'original\n' >keep.txt
export GO=$SCRATCH/go
# talk: one line, then waits for $GO (at most 120 s, then fails), then
# more lines, one on stderr
cat >.decree/routines/talk.sh <<'EOF'
#!/bin/bash
# Print, wait for the test, print.
echo "first line"
echo "$PPID" >"$GO.decree-pid"
n=0
while [ ! -e "$GO" ]; do
	sleep 0.05
	n=$((n + 1))
	[ $n -lt 2400 ] || exit 3
done
echo "second line"
echo "to stderr" >&2
echo changed >keep.txt
EOF
# shapes: bytes that show differently than they are
cat >.decree/routines/shapes.sh <<'EOF'
#!/bin/bash
printf 'tab\there\n'
printf 'esc \033[31mred\033[0m\n'
printf 'progress 10%%\rprogress 50%%\rprogress 100%%\n'
printf 'crlf line\r\n'
printf 'two crs\r\r\n'
printf 'nul\000byte\n'
printf 'bad utf8 \377\376 and caf\303\251\n'
printf 'no newline at the end'
EOF
printf 'tab\there\nesc \033[31mred\033[0m\nprogress 10%%\rprogress 50%%\rprogress 100%%\ncrlf line\r\ntwo crs\r\r\nnul\000byte\nbad utf8 \377\376 and caf\303\251\nno newline at the end' >"$SCRATCH/shapes.expected"
# big: about 13 MB through stdout and stderr, interleaved
head -c 5000000 /dev/urandom | base64 >"$SCRATCH/big.b64"
export BIG=$SCRATCH/big.b64
cat >.decree/routines/big.sh <<'EOF'
#!/bin/bash
cat "$BIG"
cat "$BIG" >&2
printf 'tail line\n'
EOF
cat "$BIG" "$BIG" >"$SCRATCH/big.expected"
printf 'tail line\n' >>"$SCRATCH/big.expected"
# long: one line of 100000 bytes
cat >.decree/routines/long.sh <<'EOF'
#!/bin/bash
head -c 100000 /dev/zero | tr '\0' a
echo
EOF
# flaky: fails its first attempt, succeeds on the second
cat >.decree/routines/flaky.sh <<'EOF'
#!/bin/bash
echo "attempt $DECREE_ATTEMPT says hi"
[ "$DECREE_ATTEMPT" -ge 2 ] || exit 7
EOF

# ===== on a terminal: live ==================================================================
rm -f "$GO" "$GO.decree-pid"
on_pty "$SCRATCH/live.out" "$DECREE" run -m live -p x -v routine=talk
if wait_for "$SCRATCH/live.out" '^  \| first line' 60; then
	ok "on a terminal: the routine's first line is shown while it still runs"
	same "... and nothing after it yet" "$(grep -c 'second line' "$SCRATCH/live.out")" 0
else
	not_ok "on a terminal: the routine's first line is shown while it still runs" "$(cat -A "$SCRATCH/live.out")"
fi
touch "$GO"
wait "$PTY_PID"
same "... decree exits 0" "$?" 0
tr -d '\r' <"$SCRATCH/live.out" >"$SCRATCH/live.txt"
same "... the screen: the progress lines, the routine's lines prefixed with '  | ', stdout and stderr alike" \
	"$(grep -v '^queued\|^processing\|attempt 1 succeeded' "$SCRATCH/live.txt")" "  | first line
  | second line
  | to stderr"
case "$(cat "$SCRATCH/live.txt")" in
"queued .decree/inbox/live.md"*"processing "*"  | first line"*"  | to stderr"*"  attempt 1 succeeded"*) ok "... in order: queued, processing, the output, the outcome" ;;
*) not_ok "... in order: queued, processing, the output, the outcome" "$(cat "$SCRATCH/live.txt")" ;;
esac
R=$(lastrun)
same "... routine.log is what the routine wrote, unprefixed" "$(cat "$R/routine.log")" "first line
second line
to stderr"
check "... the run is done" test -f .decree/inbox/done/live.md
rm -f "$GO"

# -q, --no-stream, --json on a terminal: not streamed
for opts in "-q" "--no-stream" "--json"; do
	rm -f "$GO"
	touch "$GO" # no waiting needed: this is about what is shown
	# shellcheck disable=SC2086
	on_pty "$SCRATCH/quiet.out" "$DECREE" run $opts -m "quiet$opts" -p x -v routine=talk
	wait "$PTY_PID"
	RC=$?
	same "on a terminal with $opts: exit 0, nothing streamed" "$RC $(streamed "$SCRATCH/quiet.out")" "0 0"
done
rm -f "$GO"

# ===== not a terminal =======================================================================
touch "$GO"
t "stderr not a terminal: run" D run -m plain -p x -v routine=talk
same "... nothing streamed (as before)" "$(printf '%s\n' "$ERR" | grep -c '^  | ')" 0
t "--stream with stderr not a terminal" D run --stream -m forced -p x -v routine=talk
same "... the lines on stderr" "$(printf '%s\n' "$ERR" | grep '^  | ')" "  | first line
  | second line
  | to stderr"
same "... nothing on stdout" "$OUT" ""
t "--json --stream" D --json run --stream -m jstream -p x -v routine=talk
same "... stdout is exactly the run document" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["done"], d["runs"][0]["outcome"])')" "1 done"
same "... the lines on stderr" "$(printf '%s\n' "$ERR" | grep -c '^  | ')" 3
t_err "decree: --stream and --no-stream exclude each other*" "--stream --no-stream: usage error" 2 D run --stream --no-stream -p x -v routine=talk
t_err "decree: --stream and --no-stream exclude each other*" "... process too" 2 D process --stream --no-stream
t_err "decree: unknown option '--streams'*" "process --streams: usage error" 2 D process --streams

# ===== what is shown, what is logged ========================================================
t "shapes, streamed" D run --stream -m shapes1 -p x -v routine=shapes
check "... routine.log: the exact bytes" cmp "$(lastrun)routine.log" "$SCRATCH/shapes.expected"
printf '%s\n' "$ERR" | grep '^  | ' >"$SCRATCH/shapes.shown"
same "... shown readable: tabs kept, control bytes escaped, a progress line's last state, CRLF an ending, the open line ended" \
	"$(cat "$SCRATCH/shapes.shown")" "$(printf '  | tab\there
  | esc \\033[31mred\\033[0m
  | progress 100%%
  | crlf line
  | two crs
  | nul\\000byte
  | bad utf8 \\377\\376 and caf\303\251
  | no newline at the end')"
case "$ERR" in *"  | no newline at the end
  attempt 1 succeeded"*) ok "... the open line is ended before decree's next line" ;;
*) not_ok "... the open line is ended before decree's next line" "$ERR" ;; esac
t "shapes, not streamed" D run --no-stream -m shapes2 -p x -v routine=shapes
check "... the same log, byte for byte" cmp "$(lastrun)routine.log" "$SCRATCH/shapes.expected"

t "13 MB of output through stdout and stderr, streamed: no deadlock" timeout 300 "$DECREE" run --stream -m big1 -p x -v routine=big
check "... routine.log is complete and exact" cmp "$(lastrun)routine.log" "$SCRATCH/big.expected"
same "... every line was shown" "$(printf '%s\n' "$ERR" | grep -c '^  | ')" "$(wc -l <"$SCRATCH/big.expected")"
t "the same, not streamed" timeout 300 "$DECREE" run --no-stream -m big2 -p x -v routine=big
check "... the same log" cmp "$(lastrun)routine.log" "$SCRATCH/big.expected"

t "a line of 100000 bytes, streamed" D run --stream -m long -p x -v routine=long
same "... shown in two pieces (64 KiB, then the rest)" "$(printf '%s\n' "$ERR" | grep '^  | ' | awk '{ print length($0) - 4 }')" "65536
34464"
same "... the log holds the one line" "$(wc -c <"$(lastrun)routine.log") $(wc -l <"$(lastrun)routine.log")" "100001 1"

# ===== retries: the exit status decides ====================================================
t "a routine that fails its first attempt, streamed" D run --stream -m flaky -p x -v routine=flaky
same "... each attempt's lines, then its outcome" "$(printf '%s\n' "$ERR" | grep -e '^  | ' -e '^  attempt')" \
	"  | attempt 1 says hi
  attempt 1 failed with status 7 (log: $(lastrun | sed 's|/$||')/routine.log)
  | attempt 2 says hi
  attempt 2 succeeded: 0 file(s) changed ($(lastrun | sed 's|/$||')/changes.diff)"
same "... each log holds its own attempt" "$(cat "$(lastrun)routine.log")|$(cat "$(lastrun)routine-2.log")" "attempt 1 says hi|attempt 2 says hi"

# process streams too
printf -- '---\nroutine: flaky\n---\n# spec\n' >specs/01-flaky.spec.md
t "process --stream" D process --stream
same "... the spec's routine output shown" "$(printf '%s\n' "$ERR" | grep -c '^  | attempt')" 2

# ===== Ctrl-C during a streamed run on a terminal ==========================================
rm -f "$GO" "$GO.decree-pid"
pre=$(tree_state "$P")
on_pty "$SCRATCH/int.out" "$DECREE" run -m intr -p x -v routine=talk
if wait_for "$SCRATCH/int.out" '^  \| first line' 60 && [ -s "$GO.decree-pid" ]; then
	ok "Ctrl-C: the routine runs, its first line shown"
	kill -INT "$(cat "$GO.decree-pid")"
else
	not_ok "Ctrl-C: the routine runs, its first line shown" "$(cat -A "$SCRATCH/int.out")"
	touch "$GO"
fi
wait "$PTY_PID"
same "... decree exits 130" "$?" 130
check "... the message stays in the inbox" test -f .decree/inbox/intr.md
same "... the tree is as before" "$(tree_state "$P")" "$pre"
check "... the log kept the line" grep -qx 'first line' "$(lastrun)routine.log"
check "... the screen says it was interrupted" grep -q 'interrupted' "$SCRATCH/int.out"
touch "$GO"
t "the next run processes it" D -q process
check "... done" test -f .decree/inbox/done/intr.md

done_testing
