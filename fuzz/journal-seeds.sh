#!/bin/sh
# fuzz/journal-seeds.sh BUILD OUT - seed inputs for fuzz_journal.
#
# Builds fuzz/journal-seeds.c against BUILD/libdecree.a (make, or the
# sanitizer build) and runs it on a scratch project: agent sessions of
# Claude Code, Codex and Gemini through decree/agent.h, as the hooks run
# them (turns, paths named by Write/Edit/apply_patch, walks after shell
# tools and subagents that create, delete, rename, chmod, make a symlink
# and a file whose name is not UTF-8); each session's journal becomes
# OUT/real-<agent>.  Then hand-made edge cases, each line with its right
# checksum unless damaged on purpose (OUT/edge-*): a torn last line, a
# flipped byte, an empty line, a record of an unknown type, known types
# missing what they need, path_base64, a long prompt, escapes, no
# newline, no checksums, nothing.
# The committed corpus fuzz/corpus/journal/ started from these, then grew
# by fuzzing and was minimized with -merge=1 (docs/fuzzing.md).
# Usage: sh fuzz/journal-seeds.sh build /tmp/seeds/journal
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "$1" && pwd)
OUT=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/decree-jseeds.XXXXXX")
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
mkdir -p "$OUT" "$work/p"
OUT=$(cd "$OUT" && pwd)
san=
if nm "$B/libdecree.a" 2>/dev/null | grep -q __asan_init; then
	san=-fsanitize=address,undefined
fi
${CC:-cc} -std=c11 $san -I"$top/include" -o "$work/gen" \
	"$top/fuzz/journal-seeds.c" "$B/libdecree.a" \
	-lcrypto -lzstd -lz -ljansson -lyaml -lpthread
ASAN_OPTIONS=detect_leaks=0 "$work/gen" "$work/p" "$OUT"

# --- edge cases ------------------------------------------------------------
line() { # json -> a journal line with its right checksum
	printf '%s %s\n' "$(printf '%s' "$1" | sha256sum | cut -c1-16)" "$1"
}
id=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
S='{"type":"session","v":1,"session":"s","agent":null,"time":1}'
T='{"type":"turn","turn":1,"message":"m","prompt":"p","checkpoint":"'$id'","time":2}'
W='{"type":"write","turn":1,"tool":"Edit","tool_id":"t","path":"a/b.txt","id":"'$id'","mode":"100644","time":3}'
D='{"type":"write","turn":1,"tool":"Bash","tool_id":null,"path":"gone","id":null,"mode":null,"time":4}'
X='{"type":"start","turn":1,"tool":"Bash","tool_id":"t","time":5}'
{ line "$S"; line "$T"; line "$X"; line "$W"; line "$D"; } >"$OUT/edge-all-types"
{ line "$S"; line "$T"; line "$W" | head -c 60; } >"$OUT/edge-torn-last"
{ line "$S"; line "$T" | sed 's/"m"/"n"/'; line "$W"; } >"$OUT/edge-flipped"
{ line "$S"; echo; line "$T"; } >"$OUT/edge-empty-line"
{ line "$S"; line '{"type":"rename","turn":1,"from":"a","to":"b"}'; line "$T"; } >"$OUT/edge-unknown-type"
{
	line '{"type":"turn","turn":0,"message":"m","checkpoint":"'$id'"}'
	line '{"type":"turn","turn":1,"checkpoint":"'$id'"}'
	line '{"type":"turn","turn":1,"message":"m","checkpoint":"x"}'
	line '{"type":"write","turn":1,"tool":"t","id":null}'
	line '{"type":"write","turn":1,"path":"a","id":"'$id'"}'
	line '{"type":"write","turn":1,"path":"a","id":"'$id'","mode":"64x"}'
	line '{"type":"session","agent":"x"}'
} >"$OUT/edge-incomplete"
{
	line "$S"
	line '{"type":"write","turn":1,"tool":"Bash","tool_id":null,"path":"d\ufffdr","path_base64":"ZP9y","id":null,"mode":null,"time":6}'
	line '{"type":"write","turn":1,"tool":"Bash","tool_id":null,"path":"a","path_base64":"YQBi","id":null,"mode":null,"time":6}'
} >"$OUT/edge-path-base64"
long=$(head -c 3000 /dev/zero | tr '\0' 'x')
{ line "$S"; line '{"type":"turn","turn":1,"message":"m","prompt":"'$long'","checkpoint":"'$id'","time":2}'; } >"$OUT/edge-long-prompt"
{ line "$S"; line "$T" | tr -d '\n'; } >"$OUT/edge-no-newline"
line '{"type":"write","turn":1,"tool":"\u00e9\\\"\u0001","tool_id":"\ud83d\ude00","path":"a\nb","id":"'$id'","mode":"120000","time":-1}' >"$OUT/edge-escapes"
printf '%s\n' "$S" "$T" "$W" >"$OUT/edge-no-sums"
: >"$OUT/edge-empty"
