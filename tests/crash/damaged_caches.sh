#!/bin/bash
# damaged_caches.sh - a damaged cache is a cache: never trusted, never
# fatal (docs/format.md "Stat cache": "A damaged cache is ignored";
# "Trusting stored objects": packs/sealed).
#
# The base stat cache (statcache), its delta (statcache.delta) and the
# record of sealed packs (packs/sealed) are damaged in
# many ways: cut at many lengths, single bytes flipped in the header, the
# records and the checksum, a 4 KiB page zeroed, garbage appended, an empty
# file, and replaced by a directory, a FIFO and a symlink.  Then, each
# command under a timeout:
#   - `checkpoint create` exits 0 and records the true bytes of every file
#     (files were rewritten with the same size and mtime after the cache
#     was written, so a trusted stale entry would record the old bytes);
#   - `checkpoint restore` of an earlier checkpoint and `undo` work and the
#     tree is exactly what they promise;
#   - `fsck` is clean, nothing hangs, no temp file is left;
#   - the next create leaves a readable cache (a regular file) behind.
# DAMAGE_BUDGET bounds the cut and flip offsets tried per file.
. "$DECREE_TOP/tests/crash/lib.sh"

BUDGET=${DAMAGE_BUDGET:-10}
T() { timeout 30 "$DECREE" "$@"; }

make_tree() {
	mkdir -p "$1/d/e" && (
		cd "$1" || exit 1
		for i in $(seq 1 40); do printf 'file %02d v1\n' "$i" >d/f$i.txt; done
		for i in 1 2 3; do printf 'deep %d\n' "$i" >d/e/g$i.txt; done
		printf 'top\n' >top.txt
		# old enough for the cache to hold them (not racy)
		find . -type f -exec touch -d '-2 minutes' {} +
	)
}

# Rewrite some files with bytes of the same size and the same mtime as
# before (ctime moves, as it always does): only a cache that is read and
# trusted without its checks could miss them.
same_size_edit() {
	$PY3 - "$1" <<'EOF'
import os, sys
root = sys.argv[1]
for i in (3, 17, 29):
    p = os.path.join(root, "d", "f%d.txt" % i)
    st = os.stat(p)
    with open(p, "wb") as f:
        f.write(b"file %02d v2\n" % i)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
EOF
}

# Every file's true SHA-256 against what checkpoint REF recorded.
true_content() { # root ref
	T -C "$1" --json checkpoint show "$2" | $PY3 -c 'import json, sys, hashlib, os
root = sys.argv[1]
files = [f for f in json.load(sys.stdin)["files"] if f.get("sha256")]
bad = [f["path"] for f in files
       if hashlib.sha256(open(os.path.join(root, f["path"]), "rb").read()).hexdigest() != f["sha256"]]
print(len(files), " ".join(bad))' "$1"
}

# damage FILE KIND ARG: one way of damaging FILE
damage() {
	local f=$1 kind=$2 arg=${3:-}
	case $kind in
	cut) $PY3 -c 'import sys; p, n = sys.argv[1], int(sys.argv[2]); d = open(p, "rb").read(); open(p, "wb").write(d[:n])' "$f" "$arg" ;;
	flip) $PY3 -c 'import sys; p, n = sys.argv[1], int(sys.argv[2]); d = bytearray(open(p, "rb").read()); d[n % len(d)] ^= 0x40; open(p, "wb").write(d)' "$f" "$arg" ;;
	zero) $PY3 -c 'import sys; p = sys.argv[1]; d = bytearray(open(p, "rb").read()); d[:4096] = bytes(min(4096, len(d))); open(p, "wb").write(d)' "$f" ;;
	garbage) head -c 777 /dev/urandom >>"$f" ;;
	empty) : >"$f" ;;
	dir) rm -f "$f" && mkdir "$f" && echo x >"$f/inside" ;;
	fifo) rm -f "$f" && mkfifo "$f" ;;
	symlink) rm -f "$f" && ln -s /dev/zero "$f" ;;
	esac
}

W=$SCRATCH/w
ROOTDIR=

# A fresh tree and its first checkpoint A (a cache of real inodes: a copy
# of a tree would invalidate every entry), and for the delta a second
# checkpoint D that changed one file.
fresh() { # file
	rm -rf "$W" && make_tree "$W" &&
		T -C "$W" checkpoint create --message A >/dev/null || return 1
	ROOTDIR=$(dirname "$(ls "$W"/.decree/store/roots/*/statcache)")
	if [ "$1" = statcache.delta ]; then
		echo "v1b" >"$W/d/e/g1.txt" && touch -d '-1 minute' "$W/d/e/g1.txt"
		T -C "$W" checkpoint create --message D >/dev/null 2>&1 || return 1
	fi
	[ -f "$(cpath "$1")" ]
}

cpath() { # the path of cache file $1
	case $1 in
	sealed) echo "$W/.decree/store/packs/sealed" ;;
	*) echo "$ROOTDIR/$1" ;;
	esac
}

# The cases: (file, kind, arg) for both cache files.  The delta exists
# after a second checkpoint that changed a few files.
cases() {
	local f=$1 size=$2
	for n in $(pick_points $((size - 1)) "$BUDGET"); do echo "$f cut $n"; done
	for n in 0 4 8 16 24 $((size / 2)) $((size - 33)) $((size - 1)); do
		[ "$n" -ge 0 ] && echo "$f flip $n"
	done
	for k in zero garbage empty dir fifo symlink; do echo "$f $k"; done
}

n_cases=0 n_ok=0
run_case() { # file kind arg
	local file=$1 kind=$2 arg=${3:-} what="$1 $2${3:+ $3}" res bad
	fresh "$file" || { not_ok "$what: setup"; return; }
	same_size_edit "$W"
	damage "$(cpath "$file")" "$kind" "$arg"
	n_cases=$((n_cases + 1))
	if ! T -C "$W" checkpoint create --message B >"$SCRATCH/out" 2>&1; then
		not_ok "$what: create fails" "$(cat "$SCRATCH/out")"
		return
	fi
	res=$(true_content "$W" default:B)
	bad=${res#* }
	if [ -n "$bad" ] || [ "${res%% *}" -lt 44 ]; then
		not_ok "$what: create records the true bytes" "wrong: $res"
		return
	fi
	local after
	after=$(fast_state "$W")
	if ! T -C "$W" checkpoint restore default:A >/dev/null 2>&1 ||
		[ "$(fast_state "$W")" = "$after" ]; then
		not_ok "$what: restore A" "$(T -C "$W" checkpoint restore default:A 2>&1)"
		return
	fi
	if ! T -C "$W" undo >/dev/null 2>&1 || [ "$(fast_state "$W")" != "$after" ]; then
		not_ok "$what: undo brings B back"
		return
	fi
	# a directory where a cache belongs cannot be replaced by a rename:
	# the cache is not used, fsck names it and --repair removes it
	if [ "$kind" = dir ]; then
		if T -C "$W" fsck >"$SCRATCH/fsck" 2>&1 ||
			! grep -q "$file.*not a regular file" "$SCRATCH/fsck"; then
			not_ok "$what: fsck names it" "$(cat "$SCRATCH/fsck")"
			return
		fi
		T -C "$W" fsck --repair >/dev/null 2>&1
	fi
	if ! T -C "$W" fsck >"$SCRATCH/fsck" 2>&1; then
		not_ok "$what: fsck clean" "$(cat "$SCRATCH/fsck")"
		return
	fi
	if [ -n "$(temps_in "$W")" ] || [ -n "$(find "$W/.decree/store" -name '*tmp-*')" ]; then
		not_ok "$what: no temp file" "$(temps_in "$W"; find "$W/.decree/store" -name '*tmp-*')"
		return
	fi
	local c
	c=$(cpath "$file")
	if [ -e "$c" ] && [ ! -f "$c" -o -L "$c" ]; then
		not_ok "$what: a readable cache is left" "$(ls -l "$ROOTDIR")"
		return
	fi
	n_ok=$((n_ok + 1))
	ok "$what: create true, restore, undo, fsck clean"
}

for file in statcache statcache.delta sealed; do
	if ! fresh "$file"; then
		not_ok "$file exists after its checkpoint"
		continue
	fi
	size=$(stat -c %s "$(cpath "$file")")
	while read -r f k a; do
		run_case "$f" "$k" "$a"
	done < <(cases "$file" "$size")
done
echo "# outcome: $n_ok of $n_cases cache damages: create true, restore, undo, fsck clean"
