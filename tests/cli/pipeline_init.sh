#!/bin/bash
# pipeline_init.sh - `decree init` (DESIGN "The pipeline", docs/pipeline.md
# "Project layout"): what it creates, that it never overwrites and can run
# twice; the example routine develop.sh and commands.ai; every other
# pipeline command outside a project fails with
# "decree: not a decree project (run decree init)", exit 1, except status,
# log and diff, which show the checkpoints there (docs/cli/status.md).
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

# every file and directory under the project, with its mode (not the store)
listing() { (cd "$1" && find . -path ./.decree/store -prune -o -print | LC_ALL=C sort | while IFS= read -r f; do
	printf '%s %s %s\n' "$f" "$(stat -c %a "$f")" "$( [ -f "$f" ] && sha256sum <"$f" | cut -c1-16)"; done); }

NOTPROJ='decree: not a decree project (run decree init)'

# ===== outside a project ==================================================================
mkdir -p "$SCRATCH/plain" && cd "$SCRATCH/plain" || exit 1
echo data >file.txt
for c in "run -p hello" "run -m x -p hello" "process" "log 20260101000000-0" "revert 20260101000000-0"; do
	# shellcheck disable=SC2086
	t_err "$NOTPROJ*" "outside a project: decree $c fails, exit 1" 1 D $c
	same "... with exactly one error line" "$ERR" "$NOTPROJ"
done
t_err "$NOTPROJ*" "outside a project: piped decree run fails, exit 1" 1 D run <<<"task"
t_out "no checkpoints yet ('decree checkpoint create' makes one)" "outside a project: status says there is no checkpoint" D status
t_out "" "outside a project: log lists nothing" D log
t_err "decree: nothing to diff: no checkpoints yet*" "outside a project: diff has nothing to diff, exit 1" 1 D diff
check "outside a project: nothing was created" test ! -e .decree
# A directory that only holds checkpoints (.decree/store) is not a project either.
t "checkpoint create works anywhere" D -q checkpoint create
t_err "$NOTPROJ*" "a .decree/ with only a store is not a project: run" 1 D run -p hello
t_match "last checkpoint: *" "... status shows the checkpoint part only" D status
case "$OUT" in *specs:*) not_ok "... no pipeline part" "$OUT" ;; *) ok "... no pipeline part" ;; esac
t_err "$NOTPROJ*" "... process" 1 D process
check "... and no inbox was made" test ! -e .decree/inbox
# -C names the project root
t_match "last checkpoint: *" "-C DIR outside a project: status" D -C "$SCRATCH/plain" status
t_err "$NOTPROJ*" "-C DIR outside a project: log ID" 1 D -C "$SCRATCH/plain" log 20260101000000-0

# ===== init ===============================================================================
P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" || exit 1
t "decree init" D init
for f in .decree/config.yml .decree/.gitignore .decree/routines/develop.sh specs/processed-spec.md; do
	check "init creates $f" test -f "$f"
done
for d in .decree/routines .decree/inbox .decree/inbox/done .decree/inbox/dead .decree/runs specs; do
	check "init creates $d/" test -d "$d"
done
for f in .decree/config.yml .decree/.gitignore .decree/routines/develop.sh specs/processed-spec.md; do
	case "$OUT" in *"$f"*) ok "init reports $f" ;; *) not_ok "init reports $f" "$OUT" ;; esac
done
check "specs/processed-spec.md starts empty" test ! -s specs/processed-spec.md
for pat in 'inbox/' 'runs/' 'store/' 'last-run.yml'; do
	check ".decree/.gitignore lists $pat" grep -qxF "$pat" .decree/.gitignore
done
for key in 'max_retries: 3' 'max_depth: 10' 'default_routine: develop' 'notebook_support: false'; do
	check "config.yml documents the default '$key'" grep -q "^$key" .decree/config.yml
done
check "config.yml has commands.router" grep -q '^  router:' .decree/config.yml
check "config.yml has commands.ai" grep -q '^  ai:' .decree/config.yml
check "config.yml has a checkpoint: section" grep -q '^checkpoint:' .decree/config.yml
check "develop.sh uses DECREE_AI_COMMAND" grep -q 'DECREE_AI_COMMAND' .decree/routines/develop.sh
check "develop.sh is valid bash" bash -n .decree/routines/develop.sh
check "no .git was created" test ! -e .git

t "status works in the new project (json)" D --json status
same "... empty project: nothing processed, no checkpoint" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["specs"], d["inbox"], d["runs"], d["checkpoint"], d["changes"])')" \
	"{'processed': 0, 'pending': 0} {'waiting': 0, 'done': 0, 'dead': 0} [] None []"

# ===== running init twice, never overwriting =============================================
before=$(listing "$P")
t "init a second time" D init
same "... is harmless: nothing changes" "$(listing "$P")" "$before"
case "$OUT" in *created*) not_ok "... and creates nothing" "$OUT" ;; *) ok "... and creates nothing" ;; esac

printf 'max_retries: 1\n# mine\n' >.decree/config.yml
printf '#!/bin/bash\necho my develop\n' >.decree/routines/develop.sh
printf 'mine/\n' >.decree/.gitignore
printf '01-x.spec.md\n' >specs/processed-spec.md
rmdir .decree/inbox/dead .decree/runs
before=$(listing "$P")
t "init with edited files and missing directories" D init
same "... keeps my config.yml" "$(cat .decree/config.yml)" "$(printf 'max_retries: 1\n# mine')"
same "... keeps my develop.sh" "$(cat .decree/routines/develop.sh)" "$(printf '#!/bin/bash\necho my develop')"
same "... keeps my .gitignore" "$(cat .decree/.gitignore)" "mine/"
same "... keeps my processed-spec.md" "$(cat specs/processed-spec.md)" "01-x.spec.md"
check "... re-creates inbox/dead/" test -d .decree/inbox/dead
check "... re-creates runs/" test -d .decree/runs
same "... and reports only what it created" "$(printf '%s\n' "$OUT" | grep created | LC_ALL=C sort)" \
	"$(printf 'created .decree/inbox/dead/\ncreated .decree/runs/')"

# init refuses, rather than clobbers, a file where a directory belongs
P2=$SCRATCH/clash
mkdir -p "$P2/.decree" && cd "$P2" && echo x >.decree/inbox
t_err "decree: *" "init with a file in the way of inbox/ fails" 1 D init
same "... and leaves that file alone" "$(cat .decree/inbox)" "x"

# init in a sub-directory of nothing else: -C
mkdir -p "$SCRATCH/viaC"
cd "$SCRATCH" && t "init -C DIR" D -C "$SCRATCH/viaC" init
check "... creates the project there" test -d "$SCRATCH/viaC/.decree/inbox/done"

# ===== develop.sh and commands.ai =========================================================
P=$SCRATCH/dev
mkdir -p "$P" && cd "$P" && D -q init || exit 1
printf 'seed\n' >seed.txt
sed -i 's/^max_retries: 3/max_retries: 1/' .decree/config.yml
before=$(listing "$P")
t_err "decree: routine 'develop' calls the AI command (\$DECREE_AI_COMMAND), but commands.ai is not set: set it in .decree/config.yml, for example 'ai: claude -p {prompt}' under 'commands:'" \
	"right after init, develop.sh without commands.ai: refused before anything is queued (exit 1)" 1 D run -m no-ai -p "write hello"
same "... one line on stderr" "$(printf '%s\n' "$ERR" | wc -l)" 1
same "... nothing changed on disk: no message, no run, no lock file" "$(listing "$P")" "$before"
# the routine's own check stays, for a routine run by hand
check "... develop.sh itself still says no AI command is configured" \
	sh -c 'message_file=/dev/null bash .decree/routines/develop.sh 2>&1 | grep -q "no AI command is configured"'

# a fake AI: records its one argument, writes a file
mkdir -p "$SCRATCH/bin"
cat >"$SCRATCH/bin/fake-ai" <<'EOF'
#!/bin/bash
printf '%s' "$#" >"$FAKE_AI_LOG.argc"
printf '%s' "$1" >"$FAKE_AI_LOG"
echo "made by the AI" >ai-output.txt
EOF
chmod +x "$SCRATCH/bin/fake-ai"
export FAKE_AI_LOG=$SCRATCH/ai.prompt
sed -i "s|^  ai: .*|  ai: $SCRATCH/bin/fake-ai {prompt}|" .decree/config.yml
printf -- '---\nroutine: develop\n---\n# Spec one\nBuild the "thing" it'"'"'s $(never) `run`.\n' >specs/01-one.spec.md
t "develop.sh with commands.ai: run succeeds" D run -m with-ai -p "write hello, it's \"quoted\""
check "... the AI command ran in the project root" test -f ai-output.txt
same "... got exactly one argument" "$(cat "$FAKE_AI_LOG.argc")" 1
case "$(cat "$FAKE_AI_LOG")" in *"write hello, it's \"quoted\""*) ok "... the prompt holds the message body, intact" ;;
*) not_ok "... the prompt holds the message body, intact" "$(cat "$FAKE_AI_LOG")" ;; esac
id=$(fm .decree/inbox/done/with-ai.md id)
check "... changes.diff records the AI's file" grep -q '^+++ b/ai-output.txt' ".decree/runs/$id/changes.diff"
rm -f ai-output.txt
t "develop.sh on a spec message" D run -v input_file=specs/01-one.spec.md
case "$(cat "$FAKE_AI_LOG")" in *'Build the "thing" it'"'"'s $(never) `run`.'*) ok "... the AI prompt includes the spec text, intact" ;;
*) not_ok "... the AI prompt includes the spec text, intact" "$(cat "$FAKE_AI_LOG")" ;; esac
check "... the spec is marked processed" grep -qx '01-one.spec.md' specs/processed-spec.md

# DECREE_AI_COMMAND is exported to every routine, unset without commands.ai
cat >.decree/routines/showai.sh <<'EOF'
#!/bin/bash
printf '%s' "${DECREE_AI_COMMAND-<unset>}" >"$message_dir/ai.txt"
EOF
t "a routine sees DECREE_AI_COMMAND" D run -m show1 -p x -v routine=showai
same "... equal to commands.ai" "$(cat ".decree/runs/$(fm .decree/inbox/done/show1.md id)/ai.txt")" "$SCRATCH/bin/fake-ai {prompt}"
sed -i 's|^  ai: .*|  ai: ""|' .decree/config.yml
t_err "decree: routine 'showai' calls the AI command*commands.ai is not set*" "without commands.ai: a routine naming it is refused (exit 1)" 1 D run -m show2 -p x -v routine=showai
# a routine that does not name the variable (outside comments) runs, and
# does not get it
cat >.decree/routines/noai.sh <<'EOF'
#!/bin/bash
# Not an AI routine: DECREE_AI_COMMAND appears in this comment only.
env | grep -c '^DECREE_AI_' >"$message_dir/ai.txt" || true
EOF
t "without commands.ai: a routine that does not call it runs" D run -m show3 -p x -v routine=noai
same "... DECREE_AI_COMMAND is not set" "$(cat ".decree/runs/$(fm .decree/inbox/done/show3.md id)/ai.txt")" "0"

done_testing
