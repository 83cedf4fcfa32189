#!/bin/sh
# decree demo: a sample project, checkpoints before two "agent turns", a
# cascading restore that deletes what the agent created, and its undo.
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

say "the store verifies itself"
run "$DECREE" fsck
run "$DECREE" gc --dry-run
say "demo finished"
