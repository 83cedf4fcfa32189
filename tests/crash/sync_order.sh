#!/bin/bash
# sync_order.sh - what a restore makes durable, and when, read from an
# strace of the real command (strace -y names each fd's file):
#  - a small restore never calls syncfs (which would also wait for every
#    other writer's unsynced data on the file system);
#  - every temp is fsync-ed before it is renamed over its target (a symlink
#    temp: its directory);
#  - after the last rename into the tree and before the COMMIT reaches the
#    log, every directory whose entries changed (renamed into, unlinked
#    from, a directory made or removed in it) is fsync-ed, unless the
#    restore removed that directory;
#  - a restore of more than 128 paths uses one syncfs per step instead.
# (What syncfs costs while someone else's data waits: docs/format.md.)
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary
TRACE=fsync,fdatasync,syncfs,renameat,renameat2,rename,unlinkat,mkdirat,symlinkat

make_x() { # dir
	mkdir -p "$1" && cd "$1" || return 1
	mkdir -p keep sub gone/inner deep/a/b
	for i in 1 2 3; do printf 'keep %d\n' "$i" >keep/k$i.txt; done
	for i in 1 2 3 4; do printf 'mod %d\n' "$i" >sub/m$i.txt; done
	for i in 1 2; do printf 'gone %d\n' "$i" >gone/inner/g$i.txt; done
	printf 'deep\n' >deep/a/b/d.txt
	printf 'top\n' >top.txt
	ln -s keep/k1.txt link
	cd - >/dev/null
}
make_change() { # dir
	cd "$1" || return 1
	for i in 1 2 3 4; do printf 'changed %d\n' "$i" >sub/m$i.txt; done
	printf 'top changed\n' >top.txt
	rm -r gone deep/a/b/d.txt
	mkdir -p fresh/dir
	printf 'fresh\n' >fresh/dir/f.txt
	printf 'new\n' >keep/new.txt
	rm link && ln -s keep/k2.txt link
	cd - >/dev/null
}

# check_order LOG ROOT: the rules above for the tree ROOT (no syncfs);
# prints one line per broken rule, or "held: N renames, M directories"
check_order() {
	$PY3 - "$1" "$2" <<'EOF'
import os, re, sys
log, root = sys.argv[1], os.path.realpath(sys.argv[2])
store = os.path.join(root, ".decree")
fd = r"(?:-?\d+|AT_FDCWD)<([^>]*)>"
calls = []  # (syscall, args text, result)
for line in open(log):
    m = re.match(r"\d+\s+(\w+)\((.*)\)\s+=\s+(-?\d+)", line)
    if m and int(m.group(3)) >= 0:
        calls.append((m.group(1), m.group(2)))
def in_tree(p):
    return (p == root or p.startswith(root + "/")) and not (
        p == store or p.startswith(store + "/"))
bad = []
synced = set()      # fds (paths) fsync-ed so far
changed = {}        # directory -> index of its last entry change
removed = set()     # directories the restore removed
last_rename = commit = None
nren = 0
dirs_seen = set()
for i, (sc, a) in enumerate(calls):
    if sc == "syncfs" and in_tree(re.match(fd, a).group(1)):
        bad.append("syncfs called on the tree")
    if sc in ("fsync", "fdatasync"):
        p = re.match(fd, a).group(1)
        synced.add(p)
        if p.endswith("/txn.wal") and last_rename is not None and commit is None:
            commit = i
        if in_tree(p) and p in changed and changed[p] < i:
            del changed[p]
        continue
    if sc in ("renameat", "renameat2", "rename"):
        if sc == "rename":
            m = re.match(r'"([^"]*)", "([^"]*)"', a)
            tmp, dst = m.groups()
        else:
            m = re.match(fd + r', "([^"]*)", ' + fd + r', "([^"]*)"', a)
            tmp = os.path.join(m.group(1), m.group(2))
            dst = os.path.join(m.group(3), m.group(4))
        d = os.path.dirname(dst)
        if not in_tree(d):
            continue
        if os.path.basename(tmp).startswith(".decree-tmp-"):
            if tmp not in synced and os.path.dirname(tmp) not in synced:
                bad.append("%s renamed before it was fsync-ed" % tmp)
            last_rename = i
            nren += 1
        changed[d] = i
        dirs_seen.add(d)
    elif sc in ("unlinkat", "mkdirat"):
        m = re.match(fd + r', "([^"]*)"(, (\w+))?', a)
        full = os.path.join(m.group(1), m.group(2))
        d = os.path.dirname(full)
        if not in_tree(d) or os.path.basename(full).startswith(".decree-tmp-"):
            continue
        changed[d] = i
        dirs_seen.add(d)
        if sc == "unlinkat" and m.group(4) == "AT_REMOVEDIR":
            removed.add(full)
ndirs = len(dirs_seen - removed)
if last_rename is None:
    bad.append("no temp renamed into the tree")
elif commit is None:
    bad.append("no fsync of txn.wal after the renames")
else:
    for d, at in sorted(changed.items()):
        if d not in removed:
            bad.append("%s changed (call %d), not fsync-ed before the COMMIT (call %d)" % (d, at, commit))
for b in bad:
    print(b)
if not bad:
    print("held: %d renames, %d directories" % (nren, ndirs))
EOF
}

W=$SCRATCH/w
make_x "$W" || exit 1
X=$("$DECREE" -C "$W" checkpoint create -q --message X) || exit 1
ok "checkpoint X"
fast_state "$W" >"$SCRATCH/fp_x"
make_change "$W"
(ASAN_OPTIONS=$TRACED_ASAN_OPTIONS strace -f -y -o "$SCRATCH/small.trace" \
	-e trace="$TRACE" "$KILLED" -C "$W" checkpoint restore "$X" \
	>"$SCRATCH/.kout" 2>"$SCRATCH/.kerr")
RC=$?
if [ "$RC" -eq 0 ] && [ "$(fast_state "$W")" = "$(cat "$SCRATCH/fp_x")" ]; then
	ok "a small restore (traced) gives checkpoint X back"
else
	not_ok "a small restore (traced) gives checkpoint X back" "exit $RC: $(tail -3 "$SCRATCH/.kerr")"
fi
problems=$(check_order "$SCRATCH/small.trace" "$W")
echo "# $problems" | head -1
if [ "${problems#held: }" != "$problems" ]; then
	ok "small restore: no syncfs; temps fsync-ed before their renames; changed directories fsync-ed before the COMMIT"
else
	not_ok "small restore: no syncfs; temps fsync-ed before their renames; changed directories fsync-ed before the COMMIT" "$problems"
fi
# the checker itself: a trace whose directory fsyncs are dropped fails it
grep -v 'fsync([0-9]*</[^>]*/\(sub\|keep\|fresh\|fresh/dir\)>)' \
	"$SCRATCH/small.trace" >"$SCRATCH/cut.trace"
if check_order "$SCRATCH/cut.trace" "$W" | grep -q "not fsync-ed before the COMMIT"; then
	ok "the order check fails a trace without the directory fsyncs"
else
	not_ok "the order check fails a trace without the directory fsyncs" "$(check_order "$SCRATCH/cut.trace" "$W")"
fi

# more than 128 paths: one syncfs per step, no fsync per temp
B=$SCRATCH/big
mkdir -p "$B/d"
for i in $(seq 1 150); do printf 'v1 %d\n' "$i" >"$B/d/f$i"; done
V1=$("$DECREE" -C "$B" checkpoint create -q --message V1) || exit 1
ok "checkpoint V1 of 150 files"
for i in $(seq 1 150); do printf 'v2 %d\n' "$i" >"$B/d/f$i"; done
(ASAN_OPTIONS=$TRACED_ASAN_OPTIONS strace -f -y -o "$SCRATCH/big.trace" \
	-e trace="$TRACE" "$KILLED" -C "$B" checkpoint restore "$V1" \
	>"$SCRATCH/.kout" 2>"$SCRATCH/.kerr")
RC=$?
nsyncfs=$(grep -c 'syncfs(' "$SCRATCH/big.trace")
ntmp=$(grep -c 'fsync([0-9]*<[^>]*\.decree-tmp-' "$SCRATCH/big.trace")
if [ "$RC" -eq 0 ] && [ "$nsyncfs" -eq 2 ] && [ "$ntmp" -eq 0 ] &&
	[ "$(cat "$B/d/f150")" = "v1 150" ]; then
	ok "a restore of 150 files syncs with two syncfs, no fsync per temp"
else
	not_ok "a restore of 150 files syncs with two syncfs, no fsync per temp" \
		"exit $RC, $nsyncfs syncfs, $ntmp temp fsyncs: $(tail -2 "$SCRATCH/.kerr")"
fi

done_testing
