#!/bin/bash
# workspace_reflink.sh - decree workspace on a file system with reflink
# (docs/workspaces.md): an XFS file system made with `mkfs.xfs -m
# reflink=1` on a loop file, the project and its store on it.
#   - create --json: mode "reflink", reflink_verified true, cloned = the
#     number of regular non-empty files, copied 0;
#   - the copy is byte-, mode- and symlink-exact, and its files really
#     share their extents with the project's (filefrag -v: "shared");
#   - df before/after: the workspace costs far less than the tree;
#   - an edit in the workspace leaves the project's file alone (copy on
#     write), in place (dd conv=notrunc) as well as by rewrite;
#   - apply, undo, discard, undo of the discard, fsck, all on XFS;
#   - --no-reflink: mode "copy", no shared extent, the full size in df.
# Needs root (mkfs, mount), a loop device, mkfs.xfs (xfsprogs, installed by
# scripts/deps.sh) and filefrag; skipped with one "ok 1 # SKIP" otherwise.
# The file system is unmounted and its loop device detached on exit.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

skip() {
	echo "ok 1 # SKIP $1"
	echo "1..1"
	exit 0
}
[ "$(id -u)" = 0 ] || skip "not root: cannot make and mount an XFS file system"
for c in mkfs.xfs losetup mount umount filefrag; do
	command -v $c >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
	command -v $c >/dev/null 2>&1 ||
		skip "$c is not installed (scripts/deps.sh installs xfsprogs)"
done
grep -qw xfs /proc/filesystems 2>/dev/null || modprobe xfs 2>/dev/null
grep -qw xfs /proc/filesystems 2>/dev/null || skip "the kernel has no XFS"

IMG=$SCRATCH/xfs.img MNT=$SCRATCH/mnt LOOP=""
cleanup() {
	cd / || :
	if mountpoint -q "$MNT" 2>/dev/null; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	[ -z "$LOOP" ] || losetup -d "$LOOP" 2>/dev/null
	[ "${DECREE_TEST_PRESERVE:-0}" = 1 ] || rm -rf "$SCRATCH"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE
# the loop file lives on a disk file system, not in memory
[ "$(stat -f -c %T "$SCRATCH")" != tmpfs ] || {
	IMG=$(mktemp /var/tmp/decree-xfs.XXXXXX) || skip "no room for a loop file"
	trap 'cleanup; rm -f "$IMG"' EXIT
}
truncate -s 600M "$IMG" || skip "cannot make a 600 MiB loop file"
mkfs.xfs -q -f -m reflink=1 "$IMG" >"$SCRATCH/mkfs.log" 2>&1 ||
	skip "mkfs.xfs -m reflink=1 failed: $(head -1 "$SCRATCH/mkfs.log")"
LOOP=$(losetup -f --show "$IMG" 2>"$SCRATCH/losetup.log") ||
	skip "no loop device: $(head -1 "$SCRATCH/losetup.log")"
mkdir -p "$MNT"
mount -t xfs "$LOOP" "$MNT" 2>"$SCRATCH/mount.log" ||
	skip "cannot mount the XFS file system: $(head -1 "$SCRATCH/mount.log")"
ok "an XFS file system with reflink on $LOOP, mounted at $MNT"

py() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1" 2>&1; }
used() { sync && df -B1 --output=used "$MNT" | tail -1 | tr -d ' '; }
# every regular non-empty file below $1 (relative), ignored ones left out
files() { (cd "$1" && find . -path ./.decree -prune -o -path ./build -prune -o -type f -size +0 -print | sort); }
# the files of $1 (relative list on stdin) whose extents are not all shared
not_shared() {
	local f
	while read -r f; do
		filefrag -v "$1/$f" 2>/dev/null | awk '
			/^ *[0-9]+:/ { n++; if ($0 !~ /shared/) bad = 1 }
			END { exit (n == 0 || bad) }' || echo "$f"
	done
}
sha() { sha256sum "$1" | cut -c1-64; }

# --- the project: 40 MiB in 47 regular non-empty files and an empty one ---------------------------------
P=$MNT/p
mkdir -p "$P/src/deep" "$P/data" "$P/build" && cd "$P" || exit 1
for i in $(seq 1 4); do head -c $((10 * 1024 * 1024)) /dev/urandom >data/big$i.bin; done
for i in $(seq 1 36); do seq 1 $((i * 50)) >src/f$i.txt; done
seq 1 30 >src/deep/lines.txt
printf 'secret\n' >secret && chmod 600 secret
printf '#!/bin/sh\necho hi\n' >run.sh && chmod 755 run.sh
printf 'bin\0ary\0' >blob.bin
printf 'crlf\r\n' >crlf.txt
printf 'no final newline' >nofinal.txt
: >empty
ln -s src/deep/lines.txt link
ln -s missing dangling
printf 'build/\n' >.gitignore
head -c 1000000 /dev/urandom >build/ignored.o
NREG=$(files "$P" | wc -l)
TREE_BYTES=$(files "$P" | (cd "$P" && xargs stat -c %s) | awk '{ s += $1 } END { print s }')
same "the project: 47 regular non-empty files (build/ ignored)" "$NREG" 47
# a checkpoint first: the objects are in the store before the workspace
# (so df measures the workspace alone)
t "checkpoint create" D checkpoint create
BEFORE=$(tree_state "$P")
SHA_BIG1=$(sha "$P/data/big1.bin")

# ===== create: reflink ========================================================
U0=$(used)
t "workspace create --json (XFS, reflink=1)" D --json workspace create r
U1=$(used)
W=$(py 'd["path"]')
same "... mode reflink, verified" "$(py '(d["mode"], d["reflink_verified"])')" "('reflink', True)"
same "... cloned = the $NREG regular non-empty files; the empty one copied, none from the store" \
	"$(py '(d["copy"]["cloned"], d["copy"]["copied"], d["copy"]["from_store"], d["copy"]["links"])')" \
	"($NREG, 1, 0, 2)"
same "... bytes = the tree's" "$(py 'd["copy"]["bytes"]')" "$TREE_BYTES"
same "... the project is untouched" "$(tree_state "$P")" "$BEFORE"
same "... the copy is byte-, mode- and link-exact (build/ left out)" \
	"$(tree_state "$W")" "$(tree_state "$P" | grep -v '^F ./build/')"
check "... the empty file is there, empty" test -f "$W/empty" -a ! -s "$W/empty"
check "... build/ (ignored) is not copied" test ! -e "$W/build"
NS=$(files "$W" | not_shared "$W")
same "... every non-empty file shares its extents (filefrag -v: shared)" "$NS" ""
NS=$(files "$P" | not_shared "$P")
same "... and so do the project's (both sides of each clone)" "$NS" ""
EXTRA=$((U1 - U0))
echo "# df: tree $TREE_BYTES bytes; the reflink workspace used $EXTRA bytes more"
if [ "$EXTRA" -lt $((TREE_BYTES / 100)) ]; then
	ok "... df: $EXTRA bytes more, under 1% of the $TREE_BYTES-byte tree"
else
	not_ok "... df: the workspace costs under 1% of the tree" "$EXTRA bytes more for a $TREE_BYTES-byte tree"
fi
t "list --json shows it as reflink" D --json workspace list
same "... mode and counts kept in its description" \
	"$(py '[(w["name"], w["mode"], w["reflink_verified"], w["copy"]["cloned"]) for w in d["workspaces"]]')" \
	"[('r', 'reflink', True, $NREG)]"

# ===== copy on write: edits in the workspace ==================================
printf 'XXXXXXXX' | dd of="$W/data/big1.bin" bs=1 seek=4096 conv=notrunc status=none
sed -i 's/^7$/seven/' "$W/src/f1.txt"
echo added >"$W/new.txt"
rm "$W/src/f2.txt"
chmod 700 "$W/run.sh"
same "an in-place write in the workspace leaves the project's file alone" "$(sha "$P/data/big1.bin")" "$SHA_BIG1"
check "... the workspace's file has the write" sh -c "[ \"\$(dd if='$W/data/big1.bin' bs=1 skip=4096 count=8 status=none)\" = XXXXXXXX ]"
same "... the project as a whole is untouched" "$(tree_state "$P")" "$BEFORE"
NS=$(echo ./data/big2.bin | not_shared "$W")
same "... the untouched clones still share their extents" "$NS" ""

# ===== apply, undo, redo ======================================================
t "workspace diff --name-status" D workspace diff r --name-status
same "... the five changes" "$OUT" "M	data/big1.bin
A	new.txt
M	run.sh
M	src/f1.txt
D	src/f2.txt"
echo proj >>src/f3.txt # the project moved on meanwhile
PRE=$(tree_state "$P")
t "workspace apply r" D workspace apply r
same "... the workspace's bytes are in the project" "$(sha "$P/data/big1.bin")" "$(sha "$W/data/big1.bin")"
check "... created, deleted, mode, edit" sh -c "[ -f '$P/new.txt' ] && [ ! -e '$P/src/f2.txt' ] && [ \$(stat -c %a '$P/run.sh') = 700 ] && grep -qx seven '$P/src/f1.txt'"
same "... the project's own edit kept" "$(tail -1 "$P/src/f3.txt")" proj
POST=$(tree_state "$P")
t "undo" D undo
same "... the project is exactly as before the apply" "$(tree_state "$P")" "$PRE"
t "redo" D redo
same "... and exactly after again" "$(tree_state "$P")" "$POST"

# ===== discard, undo ==========================================================
WS=$(tree_state "$W")
t "workspace discard r" D workspace discard r
check "... gone" test ! -e "$W"
t "undo (the discard)" D undo
same "... the workspace is back, exactly" "$(tree_state "$W")" "$WS"
t "fsck" D fsck
same "... clean" "$OUT" "store ok"
t "workspace discard r again" D workspace discard r

# ===== --no-reflink on the same XFS ===========================================
U0=$(used)
t "workspace create --no-reflink --json" D --json workspace create c --no-reflink
U1=$(used)
WC=$(py 'd["path"]')
same "... mode copy, nothing cloned" \
	"$(py '(d["mode"], d["reflink_verified"], d["copy"]["cloned"], d["copy"]["copied"] + d["copy"]["from_store"])')" \
	"('copy', False, 0, $((NREG + 1)))"
same "... exact" "$(tree_state "$WC")" "$(tree_state "$P" | grep -v '^F ./build/')"
NS=$(files "$WC" | not_shared "$WC" | wc -l)
same "... no file shares its extents" "$NS" "$NREG"
EXTRA=$((U1 - U0))
echo "# df: the --no-reflink workspace used $EXTRA bytes more"
if [ "$EXTRA" -ge $((TREE_BYTES * 9 / 10)) ]; then
	ok "... df: $EXTRA bytes more, the tree's size (so df does see copies)"
else
	not_ok "... df sees the copy's bytes" "$EXTRA bytes more for a $TREE_BYTES-byte tree"
fi
t "fsck at the end" D fsck

done_testing
