#!/bin/bash
# pipeline_workspace.sh - routines run in a workspace (docs/pipeline.md
# "Running in a workspace"; issue 12): with `workspace: true` (config.yml,
# or a message's frontmatter, which overrides it) a message's attempts run
# in a workspace under the store; the project is written only when the run
# succeeds, by applying the workspace (merged with what changed in the
# project meanwhile).  A failed run, or one whose changes conflict with a
# concurrent edit, never touches the project.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

has() { # name file fixed-string
	if grep -qF -- "$3" "$2" 2>/dev/null; then ok "$1"; else not_ok "$1" "'$3' not in $2: $(head -c 3000 "$2" 2>/dev/null)"; fi
}
hasnt() {
	if grep -qF -- "$3" "$2" 2>/dev/null; then not_ok "$1" "'$3' in $2"; else ok "$1"; fi
}
outcome() { python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["outcome"], o["attempts"])' "$1/outcome.json" 2>&1; }
wslist() { D --json workspace list | python3 -c 'import json,sys; print(" ".join(w["name"] for w in json.load(sys.stdin)["workspaces"]))' 2>&1; }

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" && D -q init || exit 1
printf 'max_retries: 2\nworkspace: true\n' >.decree/config.yml
printf 'one\ntwo\nthree\nfour\nfive\nsix\nseven\n' >a.txt
printf 'keep\n' >b.txt
printf 'gone\n' >doomed.txt
STORE=$P/.decree/store

# edit: changes the tree where it runs, and records what it saw of the
# project ($proj) while running
cat >.decree/routines/edit.sh <<'EOF'
#!/bin/bash
# Edit a.txt, add new.txt, delete doomed.txt; note what the project holds.
proj="${proj:-}"
set -e
pwd >"$message_dir/cwd"
printf '%s\n' "$message_dir" >"$message_dir/message_dir"
printf '%s\n' "$message_file" >"$message_dir/message_file"
sed -i 's/^two$/TWO/' a.txt
echo "made in a workspace" >new.txt
rm -f doomed.txt
cp "$proj/a.txt" "$message_dir/project-a-during"
if [ -e "$proj/new.txt" ] || [ ! -e "$proj/doomed.txt" ]; then echo leaked >"$message_dir/leak"; fi
EOF
pre=$(tree_state "$P")

# ===== success: the project changes only at the end =====================================
t "workspace: true, a routine that succeeds" D run -m ok -p x -v routine=edit -v proj="$P"
id=$(fm .decree/inbox/done/ok.md id)
R=.decree/runs/$id
same "... done after 1 attempt" "$(outcome "$R")" "done 1"
same "... the routine ran in workspace run-<id> under the store" "$(cat "$R/cwd")" "$(realpath "$STORE")/workspaces/run-$id"
same "... message_dir is absolute, in the project's .decree/runs" "$(cat "$R/message_dir")" "$P/$R"
same "... so is message_file" "$(cat "$R/message_file")" "$P/$R/message.md"
same "... while it ran, the project's a.txt was as before" "$(cat "$R/project-a-during")" "$(printf 'one\ntwo\nthree\nfour\nfive\nsix\nseven')"
check "... and the project had no new.txt and still its doomed.txt" test ! -e "$R/leak"
same "... afterwards the project has the routine's edit" "$(sed -n 2p a.txt)" "TWO"
same "... its new file" "$(cat new.txt 2>&1)" "made in a workspace"
check "... and not the file it deleted" test ! -e doomed.txt
has "... changes.diff has the edit" "$R/changes.diff" "+TWO"
has "... the new file" "$R/changes.diff" "+++ b/new.txt"
has "... the deletion" "$R/changes.diff" "--- a/doomed.txt"
mkdir -p "$SCRATCH/copy" && (cd "$SCRATCH/copy" && printf 'one\ntwo\nthree\nfour\nfive\nsix\nseven\n' >a.txt &&
	printf 'keep\n' >b.txt && printf 'gone\n' >doomed.txt && cp -r "$P/specs" . && : >specs/processed-spec.md)
t "GNU patch -p1 applies changes.diff to a copy of the pre-run tree" patch -p1 -s -d "$SCRATCH/copy" -i "$P/$R/changes.diff"
same "... giving the project as it is now" "$(tree_state "$SCRATCH/copy")" "$(tree_state "$P")"
same "... the workspace is gone" "$(wslist)" ""
check "... and its directory" test ! -e "$STORE/workspaces/run-$id"
after=$(tree_state "$P")
t "decree undo right after the run" D -q undo
same "... undoes the apply (the workspace's removal made no undo entry)" "$(tree_state "$P")" "$pre"
same "... and brings no workspace back" "$(wslist)" ""
t "decree redo" D -q redo
same "... applies it again" "$(tree_state "$P")" "$after"
t "decree revert of the workspace run" D -q revert "$id"
same "... puts the project back" "$(tree_state "$P")" "$pre"

# ===== a failing routine never touches the project ======================================
cat >.decree/routines/fail.sh <<'EOF'
#!/bin/bash
# Change the workspace, check the project did not move, fail.
proj="${proj:-}"
k=$DECREE_ATTEMPT
cat progress.txt >"$message_dir/seen-before-$k" 2>/dev/null || : >"$message_dir/seen-before-$k"
echo "attempt $k" >>progress.txt
sed -i "s/^three\$/THREE-$k/" a.txt
rm -f b.txt
cp "$proj/a.txt" "$message_dir/project-a-during-$k"
if [ -e "$proj/progress.txt" ] || [ ! -e "$proj/b.txt" ]; then echo leaked >"$message_dir/leak-$k"; fi
printf '%s' "${DECREE_FAILURE_CONTEXT-<unset>}" >"$message_dir/fc-env-$k"
exit 3
EOF
pre=$(tree_state "$P")
t_exit 1 "a routine that fails every attempt: dead-lettered (exit 1)" D run -m bad -p x -v routine=fail -v proj="$P"
id=$(fm .decree/inbox/dead/bad.md id)
R=.decree/runs/$id
same "... 3 attempts (2 + the clean slate)" "$(outcome "$R")" "dead 3"
same "... the project is exactly as before" "$(tree_state "$P")" "$pre"
same "... during every attempt the project's a.txt was unchanged" \
	"$(cat "$R/project-a-during-1" "$R/project-a-during-2" "$R/project-a-during-3" | sort | uniq -c | awk '{print $1}')" "3
3
3
3
3
3
3"
check "... and it had no progress.txt, and its b.txt" test ! -e "$R/leak-1" -a ! -e "$R/leak-2" -a ! -e "$R/leak-3"
same "... attempt 2 kept attempt 1's changes (in the workspace)" "$(cat "$R/seen-before-2")" "attempt 1"
same "... the clean slate started from the original tree" "$(cat "$R/seen-before-3")" ""
same "... DECREE_FAILURE_CONTEXT is absolute, in the project" "$(cat "$R/fc-env-3")" "$P/$R/failure-context.md"
has "... changes-1.diff: the workspace after attempt 1" "$R/changes-1.diff" "+THREE-1"
has "... changes-2.diff: attempts 1 and 2" "$R/changes-2.diff" "+attempt 2"
has "... dead-letter.md says the project was not touched" "$R/dead-letter.md" "in a workspace; the project was not touched"
same "... the workspace was discarded" "$(wslist)" ""
t "decree undo brings the discarded workspace back" D -q undo
same "... as run-<id>" "$(wslist)" "run-$id"
has "... holding the clean-slate attempt's work" "$STORE/workspaces/run-$id/a.txt" "THREE-3"
same "... the project still as before" "$(tree_state "$P")" "$pre"
t "discard it again" D -q workspace discard "run-$id"

# ===== a concurrent edit of the project: merged, or a conflict ===========================
cat >.decree/routines/race.sh <<'EOF'
#!/bin/bash
# Edit line `line` of a.txt here and line `theirs` in the project.
proj="${proj:-}"
line="${line:-1}"
theirs="${theirs:-7}"
set -e
sed -i "${line}s/.*/routine/" a.txt
sed -i "${theirs}s/.*/user/" "$proj/a.txt"
EOF
pre_a=$(cat a.txt)
t "a concurrent project edit of another part of the file" D run -m merged -p x -v routine=race -v proj="$P" -v line=1 -v theirs=7
id=$(fm .decree/inbox/done/merged.md id)
R=.decree/runs/$id
same "... done" "$(outcome "$R")" "done 1"
same "... the project has both edits" "$(cat a.txt)" "$(printf 'routine\ntwo\nthree\nfour\nfive\nsix\nuser')"
has "... changes.diff has the routine's edit" "$R/changes.diff" "+routine"
hasnt "... and not the user's" "$R/changes.diff" "+user"
printf '%s\n' "$pre_a" >a.txt
pre=$(tree_state "$P")
t_exit 1 "a concurrent project edit of the same line: dead-lettered (exit 1)" D run -m clash -p x -v routine=race -v proj="$P" -v line=4 -v theirs=4
id=$(fm .decree/inbox/dead/clash.md id)
R=.decree/runs/$id
same "... outcome dead" "$(outcome "$R")" "dead 1"
same "... the project has the user's edit only" "$(sed -n 4p a.txt)" "user"
has "... conflicts.md names the file" "$R/conflicts.md" '- `a.txt`: '
has "... dead-letter.md tells why" "$R/dead-letter.md" "conflict with changes made in the project meanwhile; nothing was applied"
has "... changes.diff is the routine's change" "$R/changes.diff" "+routine"
same "... the workspace is kept for resolving" "$(wslist)" "run-$id"
has "... with the routine's work" "$STORE/workspaces/run-$id/a.txt" "routine"
t_exit 1 "decree workspace apply still conflicts" D -q workspace apply "run-$id"
t "decree workspace discard" D -q workspace discard "run-$id"
printf '%s\n' "$pre_a" >a.txt

# ===== the frontmatter overrides the config ===============================================
cat >.decree/routines/where.sh <<'EOF'
#!/bin/bash
# Say where it runs.
pwd >"$message_dir/cwd"
EOF
t "workspace: false in the message, true in config.yml" D run -m here -p x -v routine=where -v workspace=false
id=$(fm .decree/inbox/done/here.md id)
same "... ran in the project" "$(cat ".decree/runs/$id/cwd")" "$P"
printf 'max_retries: 2\nworkspace: false\n' >.decree/config.yml
t "workspace: true in the message, false in config.yml" D run -m there -p x -v routine=where -v workspace=true
id=$(fm .decree/inbox/done/there.md id)
same "... ran in a workspace" "$(cat ".decree/runs/$id/cwd")" "$(realpath "$STORE")/workspaces/run-$id"
t "no workspace: key anywhere (config false)" D run -m plain -p x -v routine=where
id=$(fm .decree/inbox/done/plain.md id)
same "... ran in the project" "$(cat ".decree/runs/$id/cwd")" "$P"
t_exit 1 "workspace: maybe is dead-lettered" D run -m maybe -p x -v routine=where -v workspace=maybe
id=$(fm .decree/inbox/dead/maybe.md id)
has "... InvalidWorkspace" ".decree/runs/$id/dead-letter.md" "InvalidWorkspace: 'workspace: maybe' must be true or false"
printf 'workspace: perhaps\n' >.decree/config.yml
t_err "decree: *config.yml:1: 'workspace' must be true or false*" "config.yml workspace: perhaps is refused" 1 D run -m x -p x -v routine=where
printf 'max_retries: 2\nworkspace: true\n' >.decree/config.yml

# ===== follow-ups written in the workspace reach the project's inbox ======================
cat >.decree/routines/chain.sh <<'EOF'
#!/bin/bash
# Write a follow-up on seq 0; on the follow-up, note it ran.
set -e
if [ "$seq" = 0 ]; then
	printf -- '---\nroutine: chain\n---\nnext\n' >".decree/inbox/${chain}-1.md"
else
	echo "follow-up ran" >followup.txt
fi
EOF
t "a routine in a workspace writes a follow-up" D run -m first -p x -v routine=chain
chain=$(fm .decree/inbox/done/first.md chain)
check "... the follow-up was processed" test -f ".decree/inbox/done/${chain}-1.md"
same "... in its own workspace, applied" "$(cat followup.txt 2>&1)" "follow-up ran"
same "... no workspace left" "$(wslist)" ""

done_testing
