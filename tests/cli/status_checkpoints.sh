#!/bin/bash
# status_checkpoints.sh - decree status, log and diff in every project
# (docs/cli/status.md): in a directory with checkpoints and no pipeline,
# status says what changed since the last checkpoint (the newest that is
# not a capture: rollback's number 1), log lists the checkpoints and
# captures newest first with rollback's numbers, diff shows the changes
# since the last checkpoint exactly as `checkpoint diff` does (--stat,
# --name-status, --json, a REF); in a pipeline project status adds the
# pipeline's part, log interleaves the runs (each shown once, with its own
# checkpoint's number), and diff without ID is the latest run's
# changes.diff when the last checkpoint is a run's own, else the changes
# since the last checkpoint.  None of them changes anything on disk.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

py() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$@" 2>&1; }
in_out() { case "$OUT" in *"$2"*) ok "$1" ;; *) not_ok "$1" "'$2' not in: $OUT" ;; esac; }
disk_state() { (cd "$1" && find . -print0 | LC_ALL=C sort -z | xargs -0 stat -c '%n %F %a %s %Y %i'); }

# ===== a directory with nothing ===============================================================
P=$SCRATCH/plain
mkdir -p "$P" && cd "$P" || exit 1
printf 'a\n' >a.txt
EMPTY=$(disk_state "$P")
t_out "no checkpoints yet ('decree checkpoint create' makes one)" "status without checkpoints" D status
t_out "" "log without checkpoints: nothing" D log
t_err "decree: nothing to diff: no checkpoints yet ('decree checkpoint create' makes one)" "diff without checkpoints: exit 1" 1 D diff
same "... nothing was created" "$(disk_state "$P")" "$EMPTY"

# ===== a checkpoint-only project ==============================================================
printf 'b\n' >b.txt
printf 'keep\n' >keep.txt
printf 'build\n' >out.log
C1=$(D checkpoint create -s chat -m turn-1 -l 'first prompt' --exclude '*.log')
printf 'a2\n' >a.txt
C2=$(D checkpoint create -s chat -m turn-2 -l 'second prompt' --exclude '*.log')
t "status right after a checkpoint" D status
case "$OUT" in "last checkpoint: ${C2:0:12}, "*" ("*")  chat  [second prompt]  turn-2
no changes since") ok "... names it (id, age, time, session, label, message): no changes" ;;
*) not_ok "... names it (id, age, time, session, label, message): no changes" "$OUT" ;; esac

# modified, added, deleted, a changed mode, and a file the checkpoint's own
# --exclude leaves out
printf 'a3\n' >a.txt
printf 'new\n' >new.txt
rm b.txt
chmod 755 keep.txt
printf 'more\n' >>out.log
BEFORE=$(disk_state "$P")
t "status after edits" D status
same "... one line per path, M/A/D, then the count" "$(printf '%s\n' "$OUT" | tail -n +2)" "  M a.txt
  D b.txt
  M keep.txt
  A new.txt
4 files changed since; 'decree diff' shows how, 'decree rollback 1' puts them back"
t "status --json" D --json status
same "... the checkpoint and the changes" "$(py 'd["checkpoint"]["id"], d["checkpoint"]["message"], d["changes"], d["specs"], d["runs"]')" \
	"('$C2', 'turn-2', [{'path': 'a.txt', 'status': 'M'}, {'path': 'b.txt', 'status': 'D'}, {'path': 'keep.txt', 'status': 'M'}, {'path': 'new.txt', 'status': 'A'}], None, [])"
same "... the same paths as checkpoint diff --name-status" "$(py '"\n".join(c["status"] + "\t" + c["path"] for c in d["changes"])')" \
	"$(D checkpoint diff "$C2" --name-status)"

# ===== diff: since the last checkpoint, as checkpoint diff gives it ===========================
t "diff" D diff
same "... byte for byte checkpoint diff LAST" "$OUT" "$(D checkpoint diff "$C2")"
case "$ERR" in "decree: the changes since checkpoint 1 (${C2:0:12}, just now)" | "decree: the changes since checkpoint 1 (${C2:0:12}, "[0-9]*" second"*" ago)")
	ok "... a note on stderr says what it compares" ;;
*) not_ok "... a note on stderr says what it compares" "$ERR" ;; esac
t "diff --stat" D diff --stat
same "... as checkpoint diff --stat" "$OUT" "$(D checkpoint diff "$C2" --stat)"
t "diff --name-status" D diff --name-status
same "... as checkpoint diff --name-status" "$OUT" "$(D checkpoint diff "$C2" --name-status)"
t "-q diff" D -q diff
same "... -q: no note" "$ERR" ""
t "diff --json" D --json diff
same "... the checkpoint, then checkpoint diff's document" "$(py 'd["checkpoint"]["id"], {k: v for k, v in d.items() if k != "checkpoint"} == json.loads(sys.argv[2])' "$(D --json checkpoint diff "$C2")")" \
	"('$C2', True)"
t "diff REF (the first checkpoint)" D diff "${C1:0:8}"
same "... as checkpoint diff REF" "$OUT" "$(D checkpoint diff "$C1")"
t "diff SESSION:MESSAGE" D diff chat:turn-1
same "... the same" "$OUT" "$(D checkpoint diff "$C1")"
t_err "decree: no checkpoint matches 'ffffff'" "diff of an unknown checkpoint: exit 1" 1 D diff ffffff
t_err "decree: invalid checkpoint reference*" "diff of a bad reference: exit 1" 1 D diff zz
t_err "decree: --stat and --name-status exclude each other*" "diff --stat --name-status: exit 2" 2 D diff --stat --name-status
t_err "decree: usage: decree diff*" "diff A B: exit 2" 2 D diff "$C1" "$C2"
t_err "decree: usage: decree diff*" "diff -- PATH: exit 2" 2 D diff -- a.txt
same "status and diff changed nothing on disk" "$(disk_state "$P")" "$BEFORE"

# ===== the last checkpoint is never a capture ===================================================
t "rollback 2 (the first checkpoint)" D -q rollback 2
t "status after the rollback" D status
case "$OUT" in "last checkpoint: ${C2:0:12}, "*) ok "... still compares with checkpoint 1, not the pre-restore capture" ;;
*) not_ok "... still compares with checkpoint 1, not the pre-restore capture" "$OUT" ;; esac
same "... what differs from it now: a.txt (and b.txt, back)" "$(printf '%s\n' "$OUT" | tail -n +2)" "  M a.txt
1 file changed since; 'decree diff' shows how, 'decree rollback 1' puts it back"

# ===== log: checkpoints and captures, newest first ============================================
t "log" D log
same "... the capture first (u1), then 1 and 2" "$(printf '%s\n' "$OUT" | awk '{print $1, $3, $4}')" \
	"$(D --json rollback | python3 -c 'import json,sys; [print(c["ref"], c["kind"], c["id"][:12]) for c in json.load(sys.stdin)["checkpoints"]]')"
case "$(printf '%s\n' "$OUT" | sed -n 2p)" in "   1  "*"  checkpoint  ${C2:0:12}        chat  1 file  [second prompt]  turn-2") ok "... a checkpoint line: number, time, kind, id, session, files changed, label, message" ;;
*) not_ok "... a checkpoint line" "$OUT" ;; esac
case "$(printf '%s\n' "$OUT" | sed -n 1p)" in "  u1  "*"  capture     "*"[pre-restore]") ok "... the capture line" ;;
*) not_ok "... the capture line" "$OUT" ;; esac
t "log --json" D --json log
same "... kinds, refs and ids, newest first" "$(py '[(e["kind"], e["ref"], e["id"][:12]) for e in d["log"]]')" \
	"$(D --json rollback | python3 -c 'import json,sys; print([(c["kind"], c["ref"], c["id"][:12]) for c in json.load(sys.stdin)["checkpoints"]])')"
same "... the files each changed (against its session's previous)" "$(py '[e["files_changed"] for e in d["log"]][1:]')" "[1, 3]"
t_err "decree: not a decree project (run decree init)" "log ID outside a pipeline project: exit 1" 1 D log 20260101000000-0

# ===== names that need quoting ================================================================
printf 'x\n' >$'new\nline.txt'
t "status with a newline in a name" D status
in_out "... it is C-quoted on its line" '  A "new\nline.txt"'
t "status --json" D --json status
same "... --json carries it exactly" "$(py '[c["path"] for c in d["changes"] if c["status"] == "A"]')" "['new\\nline.txt']"
rm $'new\nline.txt'

# ===== a pipeline project =====================================================================
Q=$SCRATCH/pipe
mkdir -p "$Q" && cd "$Q" && D -q init || exit 1
printf 'max_retries: 1\n' >.decree/config.yml
cat >.decree/routines/edit.sh <<'EOF'
#!/bin/bash
# Edit the tree.
echo "run $message_id" >>log.txt
printf 'by %s\n' "$message_id" >"made-$seq-$(date +%s%N).txt"
EOF
printf 'base\n' >base.txt
t "status: no runs, no checkpoints" D status
same "... the pipeline's part, then that there is no checkpoint" "$OUT" "specs: 0 processed, 0 pending
inbox: 0 waiting, 0 done, 0 dead
runs: 0

no checkpoints yet ('decree checkpoint create' makes one)"
t_err "decree: nothing to diff: no runs and no checkpoints yet" "diff: nothing yet, exit 1" 1 D diff
PRE=$(tree_state "$Q")
t "run" D -q run -m first -p x -v routine=edit
R1=$(fm .decree/inbox/done/first.md id)
POST1=$(tree_state "$Q")
t "status after a run" D status
in_out "... the pipeline's part" "runs: 1 (most recent last)"
in_out "... the last checkpoint is the run's own" "  decree  [first.md]  $R1"
in_out "... the run's changes since it" "  A log.txt"
t "diff (no ID): the last checkpoint is the run's own" D diff
same "... so it is the run's changes.diff" "$OUT" "$(cat ".decree/runs/$R1/changes.diff")"
same "... and the note says so" "$ERR" "decree: the changes of the latest run, $R1"

# a checkpoint after the run (an agent turn): diff is since that one
printf 'mine\n' >base.txt
CK=$(D checkpoint create -s chat -m t1 -l 'a turn')
printf 'mine, later\n' >base.txt
t "diff (no ID) after a checkpoint made since the run" D diff
same "... is the changes since that checkpoint" "$OUT" "$(D checkpoint diff "$CK")"
in_out "... (base.txt)" "+mine, later"
t "diff RUN-ID still gives the run's" D diff "$R1"
same "... its changes.diff" "$OUT" "$(cat ".decree/runs/$R1/changes.diff")"
t "diff --stat RUN-ID" D diff --stat "$R1"
in_out "... git's summary of its changes.diff" " 2 files changed, 2 insertions(+), 0 deletions(-)"
t "diff --name-status RUN-ID" D diff --name-status "$R1"
same "... A per file" "$(printf '%s\n' "$OUT" | cut -f1 | tr '\n' ' ')" "A A "
t "diff CHECKPOINT" D diff "${CK:0:10}"
same "... since it" "$OUT" "$(D checkpoint diff "$CK")"
t "diff --json RUN-ID" D --json diff "$R1"
same "... a runs document" "$(py 'd["runs"][0]["id"], d["runs"][0]["files_changed"]')" "('$R1', 2)"
t "diff --json (no ID)" D --json diff
same "... a checkpoint document" "$(py 'd["checkpoint"]["id"]')" "$CK"
t_err "decree: no run or checkpoint matches '19990101'" "diff of an id matching nothing: exit 1" 1 D diff 19990101

# another run: the last checkpoint is a run's own again
t "second run" D -q run -m second -p x -v routine=edit
R2=$(fm .decree/inbox/done/second.md id)
t "diff (no ID) after the second run" D diff
same "... the second run's changes.diff" "$OUT" "$(cat ".decree/runs/$R2/changes.diff")"

# ===== log: runs and checkpoints interleaved ==================================================
t "log" D log
same "... second run, the turn, first run (run checkpoints shown as their runs)" "$(printf '%s\n' "$OUT" | awk '{print $1, $3, $4}')" \
	"1 run $R2
2 checkpoint ${CK:0:12}
3 run $R1"
case "$(printf '%s\n' "$OUT" | sed -n 3p)" in "   3  "*"  run         $R1  done  edit  2 files  first.md") ok "... a run line: outcome, routine, files, message" ;;
*) not_ok "... a run line" "$OUT" ;; esac
t "log --json" D --json log
same "... each run with its own checkpoint and rollback's number of it" \
	"$(py '[(e["kind"], e["ref"], e["id"] if e["kind"] == "run" else e["id"][:12], e.get("checkpoint") == [c for c in json.loads(sys.argv[2])["checkpoints"] if c["message"] == e["id"]][0]["id"] if e["kind"] == "run" else None) for e in d["log"]]' \
		"$(D --json checkpoint list --session decree)")" \
	"[('run', '1', '$R2', True), ('checkpoint', '2', '${CK:0:12}', None), ('run', '3', '$R1', True)]"
t "log RUN-ID: its attempts' logs" D log "$R1"
in_out "... the routine's output" "-- attempt 1 (.decree/runs/$R1/routine.log) --"
t "rollback 3 (the first run's number in the log)" D -q rollback 3
same "... the tree is as it was before that run" "$(tree_state "$Q" | grep -v ' ./specs/')" "$(printf '%s\n' "$PRE" | grep -v ' ./specs/')"
t "log after the rollback" D log
same "... the numbers did not move; the capture is u1" "$(printf '%s\n' "$OUT" | awk '{print $1, $3}')" \
	"u1 capture
1 run
2 checkpoint
3 run"

done_testing
