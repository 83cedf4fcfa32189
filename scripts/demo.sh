#!/bin/sh
# decree demo: a sample project, checkpoints before two "agent turns", a
# cascading restore that deletes what the agent created, and its undo; a
# diff applied as a patch with a failing --exec that is rolled back; then
# the pipeline: a routine run that succeeds, one that fails, is retried,
# reverted and dead-lettered, and a revert of the successful run.
# Runs anywhere, no git, no network, no AI service.
# Usage: sh scripts/demo.sh path/to/decree
set -eu
DECREE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
demo=$(mktemp -d "${TMPDIR:-/tmp}/decree-demo.XXXXXX")
trap 'rm -rf "$demo"' EXIT
cd "$demo"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "a small project (no git anywhere)"
mkdir -p src
printf 'export const Button = () => <button/>;\n' > src/button.tsx
printf 'node_modules/\n*.log\n' > .gitignore
printf 'debug output\n' > build.log
run ls -A

say "turn 1: checkpoint before the agent answers, then the agent edits"
echo "\$ decree checkpoint create --session chat --message msg-1"
"$DECREE" checkpoint create --session chat --message msg-1
printf "export const Button = () => <button className='red'/>;\n" > src/button.tsx
printf 'body { color: red }\n' > src/global.css

say "turn 2: checkpoint again (one per message; a retry returns the same id)"
run "$DECREE" checkpoint create --session chat --message msg-2
run "$DECREE" checkpoint create --session chat --message msg-2
printf 'export const Header = () => <h1/>;\n' > src/header.tsx
chmod +x src/header.tsx

say "what the agent did since turn 1"
run "$DECREE" checkpoint list --session chat
run "$DECREE" rollback

say "restore turn 1: cascading, so files created later are deleted (dry run first)"
run "$DECREE" checkpoint restore chat:msg-1 --dry-run
run "$DECREE" checkpoint restore chat:msg-1
run ls -A src
run cat src/button.tsx
echo "build.log is ignored by .gitignore, so the restore left it alone:"
run cat build.log

say "changed your mind? undo the restore, byte for byte"
run "$DECREE" undo
run ls -lA src
run "$DECREE" redo
run "$DECREE" undo

say "diffs are patches: what the agent changed, applied again atomically"
run "$DECREE" checkpoint diff chat:msg-1 --stat
"$DECREE" checkpoint diff chat:msg-1 > "$demo.turn.diff"
run "$DECREE" checkpoint restore chat:msg-1 -q
run "$DECREE" apply "$demo.turn.diff" --check
echo "apply it, but only if the 'tests' pass (they do not: everything is rolled back)"
printf '$ decree apply turn.diff --exec "touch tests.out; exit 1"\n'
"$DECREE" apply "$demo.turn.diff" --exec 'touch tests.out; exit 1' || true
run ls -A src
run "$DECREE" apply "$demo.turn.diff" -q
run ls -A src
rm -f "$demo.turn.diff"

say "the store verifies itself"
run "$DECREE" fsck
run "$DECREE" gc --dry-run

say "the pipeline: decree init, and two routines that need no AI service"
run "$DECREE" init -q
cat > .decree/routines/add-docs.sh <<'ROUTINE'
#!/usr/bin/env bash
# Write a README section for the component named in the message.
component="${component:-Button}"
set -eu
printf '## %s\n\nSee src/.\n' "$component" >> README.md
echo "documented $component"
ROUTINE
cat > .decree/routines/flaky.sh <<'ROUTINE'
#!/usr/bin/env bash
# A routine whose "tests" never pass: every attempt leaves junk behind.
set -eu
echo "attempt $DECREE_ATTEMPT" >> src/button.tsx
touch "junk-$DECREE_ATTEMPT.txt"
echo "tests failed on attempt $DECREE_ATTEMPT" >&2
exit 1
ROUTINE
run cat .decree/routines/add-docs.sh

say "a run that succeeds: the message, its checkpoint, its diff"
run "$DECREE" run -m "Document the header" -p "Add docs for Header" -v routine=add-docs -v component=Header
run cat README.md
run "$DECREE" diff

say "a run that fails: retried (changes kept), reverted for a clean-slate attempt, dead-lettered"
run "$DECREE" run -m flaky-fix -p "Fix the button" -v routine=flaky || echo "(exit $?: dead-lettered)"
echo "the tree is exactly as before the failing run:"
run ls -A . src
run cat src/button.tsx
run ls .decree/inbox/dead
run "$DECREE" status

say "revert the successful run (verified against its manifest), then undo that"
run "$DECREE" revert "$(ls .decree/runs | head -1)"
run ls -A
run "$DECREE" undo -q
run cat README.md
say "demo finished"
