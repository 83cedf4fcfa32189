#!/bin/bash
# pipeline_signal.sh - Ctrl-C / SIGTERM while a routine runs (DESIGN "The
# pipeline", docs/pipeline.md "Interrupts"): the routine's process group is
# terminated (a background child it started too), the partial work is
# diffed (changes-<k>.diff), the tree reverted, the message stays in the
# inbox, decree exits 130; the next run processes it.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

# alive PID: running and not a zombie
alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/^.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }
wait_for() { # file seconds
	local i=0
	while [ ! -e "$1" ] && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
	[ -e "$1" ]
}
wait_gone() { # pid seconds
	local i=0
	while alive "$1" && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
	! alive "$1"
}

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" && D -q init || exit 1
printf 'max_retries: 2\n' >.decree/config.yml
export SIG=$SCRATCH/sig
mkdir -p "$SIG"
# slow: changes the tree, starts a background child, then sleeps
# (finishes quickly once $SIG/fast exists)
cat >.decree/routines/slow.sh <<'EOF'
#!/bin/bash
echo "attempt $DECREE_ATTEMPT" >>progress.txt
if [ -f "$SIG/fast" ]; then echo done-fast >fast.txt; exit 0; fi
printf 'partial work\n' >partial.txt
sed -i 's/original/clobbered/' keep.txt
rm -f gone.txt
sleep 300 &
echo $! >"$SIG/bg.pid"
echo $$ >"$SIG/routine.pid"
echo "routine started"
touch "$SIG/started"
sleep 300
echo "never reached" >never.txt
EOF
printf 'original\n' >keep.txt
printf 'will be deleted\n' >gone.txt
pre=$(tree_state "$P")

interrupt() { # SIGNAL NAME: run slow, send SIGNAL to decree once the routine runs
	rm -f "$SIG/started" "$SIG/bg.pid" "$SIG/routine.pid"
	"$DECREE" run -m "$2" -p "slow task" -v routine=slow >"$SCRATCH/$2.out" 2>"$SCRATCH/$2.err" &
	dpid=$!
	if ! wait_for "$SIG/started" 60; then
		not_ok "$2: the routine started" "$(cat "$SCRATCH/$2.err")"
		kill -KILL "$dpid" 2>/dev/null
		return 1
	fi
	ok "$2: the routine started"
	kill -"$1" "$dpid"
	wait "$dpid"
	RC=$?
}

# ===== SIGINT ==============================================================================
interrupt INT ctrl-c
same "SIGINT: decree exits 130" "$RC" 130
check "... the routine is gone" wait_gone "$(cat "$SIG/routine.pid")" 10
check "... the background child it started is gone too" wait_gone "$(cat "$SIG/bg.pid")" 10
M=.decree/inbox/ctrl-c.md
check "... the message stays in the inbox" test -f "$M"
check "... not in done/ or dead/" test ! -e .decree/inbox/done/ctrl-c.md -a ! -e .decree/inbox/dead/ctrl-c.md
id=$(fm "$M" id)
R=.decree/runs/$id
check "... the partial work is diffed: changes-1.diff" grep -q '^+partial work' "$R/changes-1.diff"
check "... changes-1.diff has the deletion too" grep -q '^deleted file mode' "$R/changes-1.diff"
same "... the tree is reverted" "$(tree_state "$P")" "$pre"
check "... no retry after the interrupt (no routine-2.log)" test ! -e "$R/routine-2.log"
same "... outcome.json: interrupted" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["outcome"])' "$R/outcome.json")" interrupted
check "... the routine's log was kept" grep -q 'routine started' "$R/routine.log"
check "... the routine did not run on" test ! -e never.txt

t "status shows the message waiting" D --json status
same "... 1 waiting" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["inbox"]["waiting"])')" 1

# the next run processes it
touch "$SIG/fast"
printf '#!/bin/bash\ntrue\n' >.decree/routines/noop.sh
t "the next decree run" D run -m next -p x -v routine=noop
check "... processed the interrupted message too" test -f .decree/inbox/done/ctrl-c.md
same "... with the same id" "$(fm .decree/inbox/done/ctrl-c.md id)" "$id"
check "... in a fresh run directory (the interrupted one moved aside)" test -f "$R.old-1/changes-1.diff" -a ! -e "$R/changes-1.diff"
same "... its work is in the tree" "$(cat fast.txt)" done-fast
same "... started from the reverted tree (one attempt line)" "$(cat progress.txt)" "attempt 1"
rm -f "$SIG/fast"
D -q revert "$id" && D -q revert "$(fm .decree/inbox/done/next.md id)"
same "(tree back to the start)" "$(tree_state "$P")" "$pre"

# ===== SIGTERM =============================================================================
interrupt TERM sigterm
same "SIGTERM: decree exits 130" "$RC" 130
check "... the routine is gone" wait_gone "$(cat "$SIG/routine.pid")" 10
check "... the background child is gone" wait_gone "$(cat "$SIG/bg.pid")" 10
check "... the message stays in the inbox" test -f .decree/inbox/sigterm.md
same "... the tree is reverted" "$(tree_state "$P")" "$pre"
id=$(fm .decree/inbox/sigterm.md id)
check "... changes-1.diff" test -f ".decree/runs/$id/changes-1.diff"
touch "$SIG/fast"
t "decree process picks it up" D process
check "... done" test -f .decree/inbox/done/sigterm.md
rm -f "$SIG/fast"

# ===== interrupt during decree process ======================================================
printf 'max_retries: 2\ndefault_routine: slow\n' >.decree/config.yml
printf '# A\n' >specs/01-a.spec.md
printf '# B\n' >specs/02-b.spec.md
pre=$(tree_state "$P")
rm -f "$SIG/started"
"$DECREE" process >/dev/null 2>"$SCRATCH/process.err" &
dpid=$!
if wait_for "$SIG/started" 60; then ok "process: the first spec's routine started"; else not_ok "process: the first spec's routine started" "$(cat "$SCRATCH/process.err")"; fi
kill -INT "$dpid"
wait "$dpid"
same "SIGINT during decree process: exit 130" "$?" 130
check "... the spec's message stays in the inbox" test -f .decree/inbox/01-a.md
check "... the second spec was not started" test ! -e .decree/inbox/02-b.md -a ! -e .decree/inbox/done/02-b.md
same "... nothing marked processed" "$(cat specs/processed-spec.md)" ""
same "... the tree is reverted" "$(tree_state "$P")" "$pre"
touch "$SIG/fast"
t "the next decree process" D process
same "... processes both specs, each once" "$(ls .decree/inbox/done | grep -E '^0[12]-' | tr '\n' ' ')" "01-a.md 02-b.md "
same "... processed-spec.md lists each once" "$(cat specs/processed-spec.md)" "$(printf '01-a.spec.md\n02-b.spec.md')"
rm -f "$SIG/fast"
printf 'max_retries: 2\n' >.decree/config.yml

# ===== interrupt during a later attempt =====================================================
cat >.decree/routines/slow2.sh <<'EOF'
#!/bin/bash
echo "attempt $DECREE_ATTEMPT" >>progress2.txt
if [ "$DECREE_ATTEMPT" = 1 ]; then exit 1; fi
touch "$SIG/started2"
sleep 300
EOF
pre=$(tree_state "$P")
rm -f "$SIG/started2"
"$DECREE" run -m later -p x -v routine=slow2 >/dev/null 2>"$SCRATCH/later.err" &
dpid=$!
if wait_for "$SIG/started2" 60; then ok "attempt 2 started"; else not_ok "attempt 2 started" "$(cat "$SCRATCH/later.err")"; fi
kill -INT "$dpid"
wait "$dpid"
same "interrupt during attempt 2: exit 130" "$?" 130
id=$(fm .decree/inbox/later.md id)
check "... changes-1.diff (failed attempt 1) and changes-2.diff (the interrupted one)" test -f ".decree/runs/$id/changes-1.diff" -a -f ".decree/runs/$id/changes-2.diff"
same "... the tree is reverted to before attempt 1" "$(tree_state "$P")" "$pre"
check "... the message stays in the inbox" test -f .decree/inbox/later.md

# ===== a routine that ignores SIGTERM is killed =============================================
cat >.decree/routines/stubborn.sh <<'EOF'
#!/bin/bash
trap '' TERM INT
echo stubborn >stubborn.txt
touch "$SIG/started3"
while :; do sleep 0.2; done
EOF
rm -f "$SIG/started3" .decree/inbox/later.md
start=$(date +%s)
"$DECREE" run -m stubborn -p x -v routine=stubborn >/dev/null 2>"$SCRATCH/stubborn.err" &
dpid=$!
wait_for "$SIG/started3" 60 || not_ok "stubborn started" "$(cat "$SCRATCH/stubborn.err")"
kill -TERM "$dpid"
wait "$dpid"
rc=$?
same "a routine that ignores SIGTERM: decree still exits 130" "$rc" 130
el=$(($(date +%s) - start))
check "... within a bounded time (SIGKILL after the grace period): ${el}s" test "$el" -lt 40
check "... its partial work is reverted" test ! -e stubborn.txt

done_testing
