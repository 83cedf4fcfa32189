#!/bin/bash
# pipeline_inspect.sh - looking at and undoing runs (DESIGN "The pipeline",
# docs/cli/pipeline.md, docs/cli/status.md): decree status (--json), log
# [ID], diff [ID] [--stat | --name-status] (a chain id: all its runs in
# numeric seq order), revert ID (reverse-applies
# changes.diff as one transaction verified against manifest.json; a file
# edited after the run is a hard error naming it, exit 1, tree unchanged;
# decree undo re-does), unique prefixes and ambiguous ones; the engine
# checkpoint of each run (checkpoint list --session decree, restore, undo).
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

py() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1" 2>&1; }
in_out() { # name pattern: $OUT contains
	case "$OUT" in *"$2"*) ok "$1" ;; *) not_ok "$1" "'$2' not in: $OUT" ;; esac
}

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" && D -q init || exit 1
printf 'max_retries: 1\nmax_depth: 20\ndefault_routine: edit\n' >.decree/config.yml
printf 'build/\n*.log\n' >.gitignore
for i in $(seq 1 20); do echo "line $i"; done >long.txt
printf 'keep me\n' >old.txt
printf 'a\n' >a.txt
# edit: changes a line of long.txt, adds new.txt, deletes old.txt, an ignored file
cat >.decree/routines/edit.sh <<'EOF'
#!/bin/bash
# Edit the tree.
echo "editing for $message_id"
sed -i 's/^line 2$/line two/' long.txt
printf 'new\n' >new.txt
rm -f old.txt
mkdir -p build && printf 'artifact\n' >build/out.bin
printf 'log\n' >run.log
EOF
cat >.decree/routines/fail.sh <<'EOF'
#!/bin/bash
echo "failing attempt $DECREE_ATTEMPT"
printf 'partial %s\n' "$DECREE_ATTEMPT" >partial.txt
exit 7
EOF
# counter: a chain of 11 runs, each adding file-<seq>.txt
cat >.decree/routines/counter.sh <<'EOF'
#!/bin/bash
echo "counter $seq" >"file-$seq.txt"
echo "counter log $seq"
if [ "$seq" -lt 10 ]; then printf -- '---\nroutine: counter\n---\n' >".decree/inbox/$chain-$((seq + 1)).md"; fi
EOF
printf '# spec\n' >specs/01-x.spec.md
printf '# spec\n' >specs/02-y.spec.md
# the tree without ignored files (build/, *.log)
vis_state() { tree_state "$1" | grep -v -e ' ./build/' -e '\.log '; }
pre_edit=$(vis_state "$P")

t_out "" "log with no runs (and no checkpoints) yet: nothing to list" D log
t_err "decree: *no runs*" "diff with no runs yet: exit 1" 1 D diff

t "run edit" D run -m edit -p x -v routine=edit
E=$(fm .decree/inbox/done/edit.md id)
post_edit=$(vis_state "$P")
t_exit 1 "run fail (dead-lettered)" D run -m fail -p x -v routine=fail
F=$(fm .decree/inbox/dead/fail.md id)
t "run counter (a chain of 11)" D run -m counter -p x -v routine=counter
C=$(fm .decree/inbox/done/counter.md chain)
check "... 11 runs -0..-10" test -d ".decree/runs/$C-10" -a -d ".decree/runs/$C-9" -a ! -e ".decree/runs/$C-11"
printf -- '---\nroutine: edit\n---\nwaiting\n' >.decree/inbox/waiting.md # not processed yet

# ===== status =================================================================================
t "status" D status
in_out "... specs: 0 processed, 2 pending" "specs: 0 processed, 2 pending"
in_out "... inbox: 1 waiting, 12 done, 1 dead" "inbox: 1 waiting, 12 done, 1 dead"
case "$OUT" in *"$C-10"*done*) ok "... the latest run, done" ;; *) not_ok "... the latest run, done" "$OUT" ;; esac
t "status --json" D --json status
same "... specs" "$(py 'd["specs"]["processed"], d["specs"]["pending"]')" "(0, 2)"
same "... inbox" "$(py 'd["inbox"]["waiting"], d["inbox"]["done"], d["inbox"]["dead"]')" "(1, 12, 1)"
same "... recent runs: the last 10, oldest first, with outcome" "$(py '" ".join(r["id"]+":"+r["outcome"] for r in d["runs"])')" \
	"$(for s in 1 2 3 4 5 6 7 8 9 10; do printf '%s ' "$C-$s:done"; done | sed 's/ $//')"
same "... e.g. $C-10: counter, 1 attempt, <chain>-10.md" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print([(r["routine"], r["attempts"], r["message"]) for r in d["runs"] if r["id"].endswith("-10")])')" "[('counter', 1, '$C-10.md')]"

# ===== log ====================================================================================
t "log ID of the failed run" D log "$F"
in_out "... attempt 1's log" "failing attempt 1"
in_out "... attempt 2's log" "failing attempt 2"
case "$OUT" in *"failing attempt 1"*"failing attempt 2"*) ok "... in attempt order" ;; *) not_ok "... in attempt order" "$OUT" ;; esac
in_out "... says the run is dead" "dead"
t "log without ID: every run, newest first" D log
same "... the counter chain from -10 down to -0, then fail and edit" "$(printf '%s\n' "$OUT" | awk '$3 == "run" {print $4}' | tr '\n' ' ')" \
	"$(for s in $(seq 10 -1 0); do printf '%s ' "$C-$s"; done)$F $E "
case "$OUT" in *"$F  dead  fail"*) ok "... with outcome and routine" ;; *) not_ok "... with outcome and routine" "$OUT" ;; esac
t "log ID of the latest run" D log "$C-10"
in_out "... the last run of the counter chain" "counter log 10"
case "$OUT" in *"counter log 9"*) not_ok "... only that run" "$OUT" ;; *) ok "... only that run" ;; esac
t "log CHAIN: every run of the chain, in numeric seq order" D log "$C"
same "... 11 logs, -0 .. -10" "$(printf '%s\n' "$OUT" | grep '^counter log' | tr '\n' ' ')" \
	"$(for s in $(seq 0 10); do printf 'counter log %s ' "$s"; done)"

# ===== diff ===================================================================================
t "diff ID prints the run's changes.diff" D diff "$E"
same "... byte for byte" "$OUT" "$(cat ".decree/runs/$E/changes.diff")"
in_out "... a unified diff" "--- a/long.txt"
t "diff without ID: the latest run" D diff
same "... the changes.diff of $C-10" "$OUT" "$(cat ".decree/runs/$C-10/changes.diff")"
t "diff CHAIN: all its runs in seq order" D diff "$C"
same "... -0, -1, ..., -9, -10 (10 after 9)" "$(printf '%s\n' "$OUT" | sed -n 's|^+++ b/||p' | tr '\n' ' ')" \
	"$(for s in $(seq 0 10); do printf 'file-%s.txt ' "$s"; done)"
t "diff --name-status CHAIN: a summary per run" D diff --name-status "$C"
same "... under a header each, in seq order" "$(printf '%s\n' "$OUT" | head -5)" "== run $C-0 ==
A	file-0.txt

== run $C-1 ==
A	file-1.txt"
same "... 11 runs" "$(printf '%s\n' "$OUT" | grep -c '^== run ')" 11
t "diff --stat ID" D diff --stat "$E"
same "... git's summary of its changes.diff" "$OUT" " long.txt | 2 +-
 new.txt  | 1 +
 old.txt  | 1 -
 3 files changed, 2 insertions(+), 2 deletions(-)"
t_err "decree: *$F*changes-*" "diff of a dead-lettered run fails, pointing to changes-<k>.diff" 1 D diff "$F"

# ===== ids: unique prefixes, ambiguous prefixes ===============================================
t "diff with a unique prefix of a run id" D diff "${E%-0}-"
same "... is that run" "$OUT" "$(cat ".decree/runs/$E/changes.diff")"
t "diff $C-1 (exact id, also a prefix of $C-10)" D diff "$C-1"
same "... the exact id wins" "$OUT" "$(cat ".decree/runs/$C-1/changes.diff")"
t_err "decree: *ambiguous*" "an ambiguous prefix ($C-) fails, exit 1" 1 D diff "$C-"
case "$ERR" in *"$C-0"*"$C-1"*) ok "... and lists the candidates" ;; *) not_ok "... and lists the candidates" "$ERR" ;; esac
t_err "decree: *no run*" "an id matching nothing: exit 1" 1 D log 19990101000000
t_err "decree: *" "log takes one ID at most: exit 2" 2 D log "$E" "$F"

# ===== revert =================================================================================
t_err "decree: *" "revert without ID: usage error, exit 2" 2 D revert
t_err "decree: *" "revert of a chain id is refused, exit 1" 1 D revert "$C"
t_err "decree: *changes.diff*" "revert of a dead-lettered run (no changes.diff): exit 1" 1 D revert "$F"
# undo the counter chain so the tree is as after `edit`
for s in 10 9 8 7 6 5 4 3 2 1 0; do D -q revert "$C-$s" || not_ok "revert $C-$s" "exit $?"; done
same "reverting the chain's runs, last first, leaves the tree as after edit" "$(vis_state "$P")" "$post_edit"
t "revert ID (by prefix)" D revert "${E%-0}-"
same "... the tree is as before the run" "$(vis_state "$P")" "$pre_edit"
check "... the deleted file is back" test -f old.txt
check "... the added file is gone" test ! -e new.txt
same "... gitignored files the run made are left alone" "$(cat build/out.bin run.log)" "$(printf 'artifact\nlog')"
t "decree undo re-does the run's changes" D undo
same "... tree as after the run" "$(vis_state "$P")" "$post_edit"
t "decree redo reverts again" D redo
same "... tree as before the run" "$(vis_state "$P")" "$pre_edit"
t "decree undo" D undo
t "revert --json" D --json revert "$E"
same "... counts" "$(py 'd["run"], d["restored"], d["created"], d["deleted"], d["skipped"], d["verified"]')" "('$E', 1, 1, 1, 0, 3)"
D -q undo

# a file edited after the run: conflict in the reverse patch
sed -i 's/^line two$/line TWO by the user/' long.txt
before=$(tree_state "$P")
t_err "*long.txt*" "revert after the file was edited at the run's hunk: hard error naming long.txt, exit 1" 1 D revert "$E"
same "... the tree is unchanged" "$(tree_state "$P")" "$before"
sed -i 's/^line TWO by the user$/line two/' long.txt
# a file edited after the run where the reverse patch still applies: the manifest check
sed -i 's/^line 20$/line 20 edited later/' long.txt
before=$(tree_state "$P")
t_err "*long.txt*" "revert after an edit outside the hunk: verification against manifest.json fails naming long.txt, exit 1" 1 D revert "$E"
same "... the tree is unchanged" "$(tree_state "$P")" "$before"
sed -i 's/^line 20 edited later$/line 20/' long.txt
# a file the run created, edited later
printf 'new, then edited\n' >new.txt
before=$(tree_state "$P")
t_err "*new.txt*" "revert after the run's new file was edited: exit 1 naming new.txt" 1 D revert "$E"
same "... the tree is unchanged" "$(tree_state "$P")" "$before"
printf 'new\n' >new.txt
# a file the run deleted, re-created by the user
printf 'mine now\n' >old.txt
before=$(tree_state "$P")
t_err "*old.txt*" "revert after the run's deleted file was re-created: exit 1 naming old.txt" 1 D revert "$E"
same "... the tree is unchanged" "$(tree_state "$P")" "$before"
rm old.txt
# a manifest cut short (what a crash before its fsync, which runs while the
# routine does, could leave; a run's diff is written only once it is
# durable) or missing: one clear error naming it, the tree unchanged
M=.decree/runs/$E/manifest.json
cp "$M" "$SCRATCH/manifest.save"
head -c 100 "$SCRATCH/manifest.save" >"$M"
before=$(tree_state "$P")
t_err "decree: cannot read $E/manifest.json: missing or damaged; 'decree checkpoint restore decree:$E' restores the tree before the run" \
	"revert with a torn manifest.json: exit 1, a clear error" 1 D revert "$E"
same "... the tree is unchanged" "$(tree_state "$P")" "$before"
t "... the checkpoint it names exists" D -q checkpoint show "decree:$E"
rm "$M"
t_err "*cannot read $E/manifest.json: missing or damaged*" \
	"revert with no manifest.json: exit 1, the same error" 1 D revert "$E"
same "... the tree is unchanged" "$(tree_state "$P")" "$before"
mv "$SCRATCH/manifest.save" "$M"
t "after putting everything back, revert works" D -q revert "$E"
same "... tree as before the run" "$(vis_state "$P")" "$pre_edit"
D -q undo

# ===== the engine checkpoint of each run ======================================================
t "checkpoint list --session decree --json" D --json checkpoint list --session decree
runs=$(cd .decree/runs && ls | grep -E '^[0-9]{16}-[0-9]+$' | sort -t- -k1,1 -k2,2n | tr '\n' ' ')
same "... one checkpoint per run, message = the run id, in run order" \
	"$(py '" ".join(c["message"] for c in d["checkpoints"] if c["message"]) + " "')" "$runs"
same "... labelled with the message file" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print([c["label"] for c in d["checkpoints"] if c["message"] == sys.argv[1]])' "$E")" "['edit.md']"
t "checkpoint list --session decree (human)" D checkpoint list --session decree
in_out "... shows $E" "$E"
cur=$(tree_state "$P")
t "checkpoint restore decree:$E (the tree before that run)" D -q checkpoint restore "decree:$E"
same "... the pre-run tree" "$(vis_state "$P")" "$pre_edit"
t "decree undo" D undo
same "... back to the current tree" "$(tree_state "$P")" "$cur"
t "checkpoint diff decree:$E" D checkpoint diff "decree:$E"
in_out "... shows the run's change to long.txt (and what came later)" "+line two"

# ===== a run that changed nothing ============================================================
printf '#!/bin/bash\necho nothing to change\n' >.decree/routines/noop.sh
t "a run that changes nothing" D run -m noop -p x -v routine=noop
N=$(fm .decree/inbox/done/noop.md id)
check "... its changes.diff is empty" test -f ".decree/runs/$N/changes.diff" -a ! -s ".decree/runs/$N/changes.diff"
t_out "" "... decree diff prints nothing" D diff "$N"
cur=$(tree_state "$P")
t "... decree revert: nothing to revert, exit 0" D revert "$N"
same "... the tree is unchanged" "$(tree_state "$P")" "$cur"

# ===== status after everything =====
t "process (the specs; the waiting message went with the last run)" D process
t "status --json" D --json status
same "... 0 waiting; specs processed" "$(py 'd["inbox"]["waiting"], d["specs"]["processed"], d["specs"]["pending"]')" "(0, 2, 0)"
t_exit 1 "one more failing run" D run -m fail2 -p x -v routine=fail
F2=$(fm .decree/inbox/dead/fail2.md id)
t "status" D status
case "$OUT" in *"$F2"*dead*fail*"fail2.md (2 attempts)"*) ok "... shows it as dead, with routine, message and attempts" ;; *) not_ok "... shows it as dead, with routine, message and attempts" "$OUT" ;; esac
in_out "... 2 dead" ", 2 dead"

done_testing
