#!/bin/bash
# pipeline_check.sh - what `decree run` and `decree process` check before
# they queue or run anything (issue 11; docs/pipeline.md "Checks before a
# run"): a routine that calls the AI command ($DECREE_AI_COMMAND outside
# comments) needs commands.ai set and its program found; the messages and
# specs waiting must name routines that exist (all of them listed, with
# the closest name); a refusal changes nothing on disk.  What only shows
# while processing (the router's pick, a follow-up) is dead-lettered at
# once, without an attempt.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

# every file under the project but the store, with a hash of its bytes
listing() { (cd "$1" && find . -path ./.decree/store -prune -o -print | LC_ALL=C sort | while IFS= read -r f; do
	printf '%s %s\n' "$f" "$( [ -f "$f" ] && sha256sum <"$f" | cut -c1-16)"; done); }
# refused NAME: nothing on disk changed since $before
refused() { same "$1" "$(listing "$P")" "$before"; }
py() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print($1)" "$2"; }

BIN=$SCRATCH/bin
mkdir -p "$BIN"
printf '#!/bin/sh\necho "the AI did it" >ai-output.txt\n' >"$BIN/fake-ai"
chmod +x "$BIN/fake-ai"
printf 'not executable\n' >"$BIN/plain-file"

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" && D -q init || exit 1
printf 'seed\n' >seed.txt
cfg() { # AI_CMD: commands.ai; DEFAULT_ROUTINE; ROUTER
	{
		echo "commands:"
		echo "  ai: \"${AI_CMD:-}\""
		[ -n "${ROUTER:-}" ] && echo "  router: $ROUTER"
		echo "max_retries: 1"
		echo "default_routine: ${DEFAULT_ROUTINE:-develop}"
	} >.decree/config.yml
}
cfg
cat >.decree/routines/hello.sh <<'EOF'
#!/bin/bash
# Say hello (no AI).
echo hello >>hello.txt
EOF

# ===== the AI command =======================================================================
before=$(listing "$P")
t_err "decree: routine 'develop' calls the AI command (\$DECREE_AI_COMMAND), but commands.ai is not set: set it in .decree/config.yml, for example 'ai: claude -p {prompt}' under 'commands:'" \
	"run, no commands.ai: refused at once (exit 1)" 1 D run -p "write hello"
refused "... nothing changed on disk"
t_exit 1 "... with --json: exit 1" D --json run -p "write hello"
same "... the run document: no runs, the error member (invalid)" \
	"$(py 'd["runs"], d["done"], d["dead"], d["error"]["code"], "commands.ai is not set" in d["error"]["message"]' "$OUT")" \
	"[] 0 0 invalid True"
refused "... nothing changed on disk"
t_err "decree: routine 'develop' calls the AI command*" "... -q does not hide it" 1 D -q run -p "write hello"
t_err "decree: input file 'specs/ghost.spec.md' does not exist" \
	"a missing input file is said first (not the routine it would have named)" 1 D run -v input_file=specs/ghost.spec.md
refused "... nothing changed on disk"
t "a routine that does not call it runs without commands.ai" D -q run -m hi -p x -v routine=hello
check "... it ran" test -f hello.txt
rm hello.txt

AI_CMD="no-such-ai-program -p {prompt}" cfg
before=$(listing "$P")
t_err "decree: routine 'develop' calls the AI command, but 'no-such-ai-program' (commands.ai in .decree/config.yml) is not found on PATH" \
	"commands.ai names a program not on PATH: refused (exit 1)" 1 D run -p "write hello"
refused "... nothing changed on disk"
AI_CMD="bin/fake-ai {prompt}" cfg
before=$(listing "$P")
t_err "decree: routine 'develop' calls the AI command, but 'bin/fake-ai' (commands.ai in .decree/config.yml) is not an executable file" \
	"a relative path that does not exist (from the project root): refused (exit 1)" 1 D run -p "write hello"
refused "... nothing changed on disk"
AI_CMD="$BIN/plain-file {prompt}" cfg
before=$(listing "$P")
t_err "decree: routine 'develop' calls the AI command, but '$BIN/plain-file' * is not an executable file" \
	"a file that is not executable: refused (exit 1)" 1 D run -p "write hello"
refused "... nothing changed on disk"
AI_CMD="   " cfg
before=$(listing "$P")
t_err "decree: routine 'develop' calls the AI command, but commands.ai in .decree/config.yml names no program" \
	"a blank commands.ai: refused (exit 1)" 1 D run -p "write hello"
refused "... nothing changed on disk"

AI_CMD="$BIN/fake-ai {prompt}" cfg
t "commands.ai found (absolute path): run" D -q run -m abs -p "write hello"
check "... the AI ran" test -f ai-output.txt
rm -f ai-output.txt
AI_CMD="MODEL=small LANG=C fake-ai {prompt}" cfg
PATH=$BIN:$PATH t "assignments before the program, found on PATH: run" D -q run -m assign -p "write hello"
check "... the AI ran" test -f ai-output.txt
rm -f ai-output.txt
export AI_VIA_VAR=$BIN/fake-ai
AI_CMD='$AI_VIA_VAR {prompt}' cfg
t "a first word only a shell can judge (an expansion) is not refused" D -q run -m viavar -p "write hello"
check "... the AI ran" test -f ai-output.txt
rm -f ai-output.txt
AI_CMD="cd . && fake-ai {prompt}" cfg
PATH=$BIN:$PATH t "a shell builtin first: not refused" D -q run -m builtin -p "write hello"

# ===== what waits: process ==================================================================
AI_CMD="$BIN/fake-ai {prompt}" cfg
printf -- '---\nroutine: helo\n---\none\n' >.decree/inbox/b-typo.md
printf -- '---\nroutine: helo\n---\ntwo\n' >.decree/inbox/a-typo.md
printf -- '---\nroutine: zzz-nothing-like-it\n---\nthree\n' >.decree/inbox/c-far.md
printf -- '---\nroutine: hello\n---\nfine\n' >.decree/inbox/d-fine.md
printf -- '---\nroutine: develp\n---\n# A spec\n' >specs/01-typo.spec.md
before=$(listing "$P")
t_err "decree: cannot process the queue (nothing was run): unknown routine 'helo' for .decree/inbox/a-typo.md and .decree/inbox/b-typo.md (did you mean 'hello'?); unknown routine 'zzz-nothing-like-it' for .decree/inbox/c-far.md (the routines are: develop, hello); unknown routine 'develp' for specs/01-typo.spec.md (did you mean 'develop'?); correct their routine: lines, or move those messages to .decree/inbox/dead/" \
	"process: every message and spec naming an unknown routine listed, exit 1" 1 D process
same "... one line" "$(printf '%s\n' "$ERR" | wc -l)" 1
refused "... nothing ran, nothing changed on disk (the fine message still waits)"
t_exit 1 "... --json: exit 1" D --json process
same "... the run document: no runs, the error member (not_found)" "$(py 'd["runs"], d["error"]["code"]' "$OUT")" "[] not_found"

# run: the request is fine, but what waits cannot run
t_err "decree: cannot process the queue (nothing was run): unknown routine 'helo'*" \
	"run while unknown routines wait: refused, exit 1" 1 D run -m mine -p x -v routine=hello
refused "... the new message was not queued either"

# fix them: everything runs
mv .decree/inbox/c-far.md .decree/inbox/dead/
sed -i 's/^routine: helo$/routine: hello/' .decree/inbox/a-typo.md .decree/inbox/b-typo.md
sed -i 's/^routine: develp$/routine: hello/' specs/01-typo.spec.md
t "once corrected: process runs them all" D -q process
same "... three messages and the spec done" "$(ls .decree/inbox/done | grep -c -e typo -e fine)" 4

# the fallback of messages that name no routine
DEFAULT_ROUTINE=helloo AI_CMD="$BIN/fake-ai {prompt}" cfg
for i in 1 2 3 4 5 6; do printf 'task %s\n' $i >.decree/inbox/task-$i.md; done
before=$(listing "$P")
t_err "decree: cannot process the queue (nothing was run): unknown routine 'helloo' (default_routine in .decree/config.yml) for .decree/inbox/task-1.md, .decree/inbox/task-2.md, .decree/inbox/task-3.md, .decree/inbox/task-4.md and 2 more (did you mean 'hello'?); *" \
	"messages without a routine, default_routine unknown: named (4, then a count), exit 1" 1 D process
refused "... nothing changed on disk"
rm .decree/inbox/task-*.md

# what waits needs the AI command
DEFAULT_ROUTINE=develop cfg
printf 'needs the AI\n' >.decree/inbox/ai-task.md
printf -- '---\nroutine: develop\n---\n# spec\n' >specs/02-ai.spec.md
before=$(listing "$P")
t_err "decree: cannot process the queue (nothing was run): for .decree/inbox/ai-task.md and specs/02-ai.spec.md, routine 'develop' calls the AI command (\$DECREE_AI_COMMAND), but commands.ai is not set*" \
	"process: messages and specs for a routine that needs the AI, commands.ai unset: refused, exit 1" 1 D process
refused "... nothing changed on disk"
same "... --json: code invalid" "$(D --json process | python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["code"])')" invalid
rm .decree/inbox/ai-task.md specs/02-ai.spec.md

# a message that cannot be parsed is not the check's: dead-lettered as before
printf -- '---\nroutine: [oops\n---\nbroken\n' >.decree/inbox/broken.md
t_exit 1 "a broken message is not refused by the check: dead-lettered when processed (exit 1)" D -q process
check "... in inbox/dead/" test -f .decree/inbox/dead/broken.md

# ===== what only shows while processing: dead-lettered at once ==============================
# the router picks develop (needs the AI); the fallback (hello) exists
cat >"$BIN/router" <<'EOF'
#!/bin/sh
case "$1" in Choose*) echo develop ;; *) exit 1 ;; esac
EOF
chmod +x "$BIN/router"
ROUTER="$BIN/router {prompt}" DEFAULT_ROUTINE=hello cfg
before_tree=$(tree_state "$P")
t_exit 1 "the router picks a routine that needs the AI, commands.ai unset: exit 1" D run -m routed -p "please develop"
check "... dead-lettered" test -f .decree/inbox/dead/routed.md
id=$(fm .decree/inbox/dead/routed.md id)
check "... at once: no attempt, no log" test ! -e ".decree/runs/$id/routine.log"
check "... dead-letter.md says commands.ai is not set" grep -q "commands.ai is not set" ".decree/runs/$id/dead-letter.md"
same "... the tree is untouched" "$(tree_state "$P")" "$before_tree"

done_testing
