#!/bin/sh
# fuzz/gitbin-seeds.sh OUT - git binary patches as seeds for fuzz/corpus/patch.
#
# Runs git (the oracle only; decree never runs it) on small binary files
# changed every way `git diff --binary` writes (delta, literal, creation,
# deletion, emptied file, mode change, rename and copy with a change, a
# text change beside a binary one) and writes each patch as
# OUT/gitbin-<what>, plus the same patches with 7-digit ids
# (gitbin-<what>-abbrev) and without their reverse blocks
# (gitbin-<what>-fwd), and a few raw git deltas (gitbin-raw-delta-*: the
# target reads its whole input as a delta too, fuzz/fuzz_patch.c).
# Deterministic: the content comes from a fixed seed.
# Usage: sh fuzz/gitbin-seeds.sh /tmp/seeds
set -eu
OUT=$1
mkdir -p "$OUT"
work=$(mktemp -d "${TMPDIR:-/tmp}/decree-gitbin-seeds.XXXXXX")
trap 'rm -rf "$work"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
G() { git -c user.name=s -c user.email=s@s "$@"; }
# rnd SEED N FILE: N pseudo-random bytes (a NUL among them)
rnd() { python3 -c '
import random, sys
r = random.Random(int(sys.argv[1])); d = bytearray(r.randbytes(int(sys.argv[2])))
d[len(d) // 2] = 0
open(sys.argv[3], "wb").write(d)' "$@"; }
# poke FILE OFFSET: change one byte
poke() { python3 -c '
import sys
d = bytearray(open(sys.argv[1], "rb").read()); d[int(sys.argv[2])] ^= 0x5a
open(sys.argv[1], "wb").write(d)' "$@"; }

cd "$work"
G init -q .
rnd 1 600 small.bin
rnd 2 300 rewrite.bin
rnd 3 200 gone.bin
rnd 4 250 empty.bin
rnd 5 400 mode.bin
rnd 6 800 moved.bin
rnd 7 700 orig.bin
printf 'a\nb\nc\n' >text.txt
G add -A && G commit -qm old

# one change per commit, one patch per commit
step() { # NAME: commit what is staged, write its patch
	G add -A
	G diff --cached --binary -M -C --find-copies-harder >"$OUT/gitbin-$1"
	G commit -qm "$1"
}
poke small.bin 300 && step delta
rnd 12 300 rewrite.bin && step literal
rnd 13 150 new.bin && step new
rm gone.bin && step deleted
: >empty.bin && step emptied
poke mode.bin 10 && chmod +x mode.bin && step mode
G mv moved.bin moved2.bin && poke moved2.bin 700 && step rename
cp orig.bin copy.bin && poke copy.bin 5 && step copy
poke small.bin 10 && printf 'a\nB\nc\n' >text.txt && step mixed

for f in "$OUT"/gitbin-*; do
	case $f in *-abbrev | *-fwd) continue ;; esac
	sed -E 's/^index ([0-9a-f]{7})[0-9a-f]{33}\.\.([0-9a-f]{7})[0-9a-f]{33}/index \1..\2/' \
		"$f" >"$f-abbrev"
	# drop the second block (and its empty line) of each record
	awk '/^GIT binary patch$/ { n = 0 }
	     /^(literal|delta) / { n++ }
	     n == 2 { if ($0 == "") n = 3; next }
	     { print }' "$f" >"$f-fwd"
done

# raw deltas: source 16, target 20 (insert 4, copy 16); a 0x10000 copy
printf '\020\024\004abcd\220\020' >"$OUT/gitbin-raw-delta-small"
printf '\200\200\004\200\200\004\200' >"$OUT/gitbin-raw-delta-64k"
printf '\012\012\221\002\010\002zz' >"$OUT/gitbin-raw-delta-offset"
