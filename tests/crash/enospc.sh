#!/bin/bash
# enospc.sh - I/O errors during a restore: ENOSPC on write/openat(O_CREAT)/
# mkdirat/symlinkat, EIO on fsync/syncfs/renameat/rename/unlinkat, injected
# with strace at every (or sampled) invocation, once or from then on ("the
# disk stays full").  A failed restore must exit 1 with a `decree:` message
# and leave the tree exactly as it was, no temp file (tree or store), no
# transaction log (or one that `decree recover` then rolls back), and a store
# that passes fsck.  Finally a restore on a really full file system (a small
# tmpfs; skipped when mount is not permitted).
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary

make_x() {
	mkdir -p "$1" && cd "$1" || return 1
	mkdir -p keep sub gone/inner
	for i in $(seq 1 4); do printf 'keep %d\n' "$i" >keep/k$i.txt; done
	for i in $(seq 1 8); do printf 'mod %d\n' "$i" >sub/m$i.txt; done
	for i in $(seq 1 5); do printf 'gone %d\n' "$i" >gone/inner/g$i.txt; done
	printf '#!/bin/sh\n' >run.sh && chmod 755 run.sh
	ln -s keep/k1.txt link
	cd - >/dev/null
}
make_change() {
	cd "$1" || return 1
	for i in $(seq 1 8); do printf 'changed %d\n' "$i" >sub/m$i.txt; done
	rm -r gone
	mkdir -p fresh/dir
	for i in $(seq 1 6); do printf 'fresh %d\n' "$i" >fresh/dir/f$i.txt; done
	chmod 644 run.sh
	rm link && ln -s keep/k2.txt link
	cd - >/dev/null
}
setup_slot() {
	local d=$SCRATCH/s$1
	mkdir -p "$d"
	make_x "$d/w" || return 1
	"$DECREE" -C "$d/w" checkpoint create --message X >/dev/null || return 1
	[ "$1" = 0 ] && fast_state "$d/w" >"$SCRATCH/fp_x"
	make_change "$d/w" || return 1
	[ "$1" = 0 ] && fast_state "$d/w" >"$SCRATCH/fp_pre"
	cp -a "$d/w" "$d/p"
}
for k in $(seq 0 $((SLOTS - 1))); do
	if ! setup_slot "$k" >"$SCRATCH/setup.log" 2>&1; then
		not_ok "set up the trees (slot $k)" "$(cat "$SCRATCH/setup.log")"
		done_testing
		exit 1
	fi
done
FP_X=$(cat "$SCRATCH/fp_x") FP_PRE=$(cat "$SCRATCH/fp_pre")
reset() { rm -rf "$1/w" && cp -a "$1/p" "$1/w"; }
W0=$SCRATCH/s0/w
reset "$SCRATCH/s0"
trace_log "$SCRATCH/restore.trace" "$KILLED" -C "$W0" checkpoint restore default:X
if [ "$RC" -eq 0 ] && [ "$(fast_state "$W0")" = "$FP_X" ]; then
	ok "an uninterrupted restore (traced) reaches X"
else
	not_ok "an uninterrupted restore (traced) reaches X" "exit $RC: $(tail -3 "$SCRATCH/.kerr")"
fi
reset "$SCRATCH/s0"

# Points: "SYSCALL:ERRNO N M" (N+ = that call and every later one fails).
# Writes to stdout/stderr are left alone: failing to print the summary after
# a successful restore is another matter.
T=$SCRATCH/restore.trace
: >"$SCRATCH/points"
every_other_but_last() { # keep odd lines and the last $1 lines
	awk -v k="$1" '{ a[NR] = $0 } END { for (i = 1; i <= NR; i++) if (i % 2 == 1 || i > NR - k) print a[i] }'
}
add() { # sc errno list-of-n
	local sc=$1 e=$2 m n
	shift 2
	m=$(count_calls "$T" "$sc")
	for n in "$@"; do echo "$sc:$e $n $m" >>"$SCRATCH/points"; done
}
add write ENOSPC $(calls_in "$T" write '^[0-9]+ +write[(]([03-9]|[0-9][0-9]+),' | every_other_but_last 6)
add fsync EIO $(calls_in "$T" fsync)
add syncfs EIO $(calls_in "$T" syncfs)
add fdatasync EIO $(calls_in "$T" fdatasync)
add renameat EIO $(calls_in "$T" renameat | awk 'NR % 3 == 1')
add rename EIO $(calls_in "$T" rename)
add unlinkat EIO $(calls_in "$T" unlinkat '= 0$' | awk 'NR % 3 == 1')
add openat ENOSPC $(calls_in "$T" openat 'O_CREAT' | awk 'NR % 2 == 1')
add mkdirat ENOSPC $(calls_in "$T" mkdirat)
add symlinkat ENOSPC $(calls_in "$T" symlinkat)
add fchmod EIO $(calls_in "$T" fchmod | awk 'NR % 4 == 1')
# the disk stays full (or keeps failing) from some point on, rollback included
wmid=$(calls_in "$T" write '^[0-9]+ +write[(]([03-9]|[0-9][0-9]+),' | awk '{ a[NR] = $1 } END { print a[int(NR / 2)] }')
add write ENOSPC 1+ "$wmid+"
add openat ENOSPC "$(calls_in "$T" openat 'O_CREAT' | awk '{ a[NR] = $1 } END { print a[int(NR / 2)] }')+"
add renameat EIO "$(calls_in "$T" renameat | awk '{ a[NR] = $1 } END { print a[int(NR / 2)] }')+"
add fsync EIO "$(calls_in "$T" fsync | awk '{ a[NR] = $1 } END { print a[int(NR / 2)] }')+"

# check_point SLOTDIR SYSCALL:ERRNO N M IDX
check_point() {
	local d=$1 sc=${2%%:*} e=${2#*:} n=$3 m=$4 w=$1/w why="" st state=other rc err
	local what="$e at $sc #$n/$m" persistent=no
	case $n in *+) persistent=yes ;; esac
	reset "$d"
	fail_at "$sc" "$e" "$n" "$KILLED" -C "$w" checkpoint restore default:X
	rc=$RC err=$ERR
	fault_messages "$rc" "$err" "$sc" $persistent no
	fault_wal "$d" "$w" "$err" "$sc" $persistent
	st=$(fast_state "$w")
	[ "$st" = "$FP_PRE" ] && state=unchanged
	[ "$st" = "$FP_X" ] && state=restored
	case $rc:$state in
	1:unchanged) what="$what: exit 1, unchanged" ;;
	0:restored) what="$what: tolerated, restored" ;;
	1:restored) why="$why; exit 1 ($(echo "$err" | tail -1)) but the tree WAS restored" ;;
	*) why="$why; exit $rc, tree $state: $(echo "$err" | tail -2)
$(diff <(echo "$FP_PRE") <(echo "$st") | head -6)" ;;
	esac
	[ -z "$(temps_in "$w")" ] || why="$why; temp files left: $(temps_in "$w" | head -3)"
	local stemps
	stemps=$(find "$w/.decree" -name '*tmp*' 2>/dev/null)
	[ -z "$stemps" ] || why="$why; store temp files left: $(echo "$stemps" | head -3)"
	[ -z "$(wal_in "$w")" ] || why="$why; txn.wal left after recover"
	"$DECREE" -C "$w" fsck >"$d/fsck.out" 2>&1 || why="$why; fsck failed: $(tail -3 "$d/fsck.out")"
	# history matches the tree, and the restore works once the disk is fine
	if [ -z "$why" ] && [ "$state" = unchanged ]; then
		if ! "$KILLED" -C "$w" checkpoint restore default:X >"$d/again.out" 2>&1 ||
			[ "$(fast_state "$w")" != "$FP_X" ]; then
			why="$why; the restore fails after the error is gone: $(tail -2 "$d/again.out")"
		fi
	elif [ -z "$why" ] && [ "$state" = restored ]; then
		if ! "$KILLED" -C "$w" undo >"$d/again.out" 2>&1 ||
			[ "$(fast_state "$w")" != "$FP_PRE" ]; then
			why="$why; undo of the applied restore failed: $(tail -2 "$d/again.out")"
		fi
	fi
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}
run_points "$SCRATCH/points" "$SCRATCH/res"
echo "# fault points tested: $(wc -l <"$SCRATCH/points")"

# --- a really full file system ---------------------------------------------
MNT=$SCRATCH/mnt
mkdir -p "$MNT"
if mount -t tmpfs -o size=4m decree-test "$MNT" 2>/dev/null; then
	trap 'umount "$MNT" 2>/dev/null; rm -rf "$SCRATCH"' EXIT
	w=$MNT/tree
	mkdir -p "$w"
	# incompressible, deterministic contents: 6 x 96 KiB per state
	gen() { $PY3 -c 'import random, sys
random.seed(sys.argv[1])
sys.stdout.buffer.write(bytes(random.getrandbits(8) for _ in range(96 * 1024)))' "$1"; }
	for i in 1 2 3 4 5 6; do gen "a$i" >"$w/f$i.bin"; done
	echo small >"$w/small.txt"
	t "full fs: checkpoint X on a 4 MiB tmpfs" "$DECREE" -C "$w" checkpoint create --message X
	fx=$(fast_state "$w")
	for i in 1 2 3 4 5 6; do gen "b$i" >"$w/f$i.bin"; done
	echo changed >"$w/small.txt"
	fpre=$(fast_state "$w")
	# leave room for the pre-restore checkpoint (the b contents) but not for
	# the staged a contents as well
	free_kb() { df -Pk "$MNT" | awk 'NR == 2 { print $4 }'; }
	fill=$(($(free_kb) - 6 * 96 - 96 - 64))
	if [ "$fill" -gt 0 ]; then head -c $((fill * 1024)) /dev/zero >"$MNT/filler"; fi
	t_err '*decree: *' "full fs: the restore fails with a decree: message" 1 \
		"$DECREE" -C "$w" checkpoint restore default:X
	case "$ERR" in *"No space left"* | *space*) ok "full fs: the message names the lack of space (${ERR##*decree: })" ;;
	*) not_ok "full fs: the message names the lack of space" "$ERR" ;; esac
	if [ "$(fast_state "$w")" = "$fpre" ]; then ok "full fs: the tree is unchanged"
	else not_ok "full fs: the tree is unchanged" "$(diff <(echo "$fpre") <(fast_state "$w") | head)"; fi
	if [ -z "$(temps_in "$MNT")" ] && [ -z "$(find "$w/.decree" -name '*tmp*')" ]; then
		ok "full fs: no temp files left"
	else
		not_ok "full fs: no temp files left" "$(temps_in "$MNT"; find "$w/.decree" -name '*tmp*')"
	fi
	if [ -z "$(wal_in "$w")" ]; then ok "full fs: no transaction log left"
	else not_ok "full fs: no transaction log left"; fi
	t "full fs: fsck is clean" "$DECREE" -C "$w" fsck
	# completely full: not even the pre-restore checkpoint fits
	head -c $(($(free_kb) * 1024)) /dev/zero >"$MNT/filler2" 2>/dev/null
	t_err '*decree: *' "completely full fs: the restore fails with a decree: message" 1 \
		"$DECREE" -C "$w" checkpoint restore default:X
	if [ "$(fast_state "$w")" = "$fpre" ] && [ -z "$(temps_in "$MNT")" ] &&
		[ -z "$(find "$w/.decree" -name '*tmp*')" ] && [ -z "$(wal_in "$w")" ]; then
		ok "completely full fs: tree unchanged, no temps, no log"
	else
		not_ok "completely full fs: tree unchanged, no temps, no log" \
			"$(temps_in "$MNT"; find "$w/.decree" -name '*tmp*'; wal_in "$w")"
	fi
	t "completely full fs: fsck is clean" "$DECREE" -C "$w" fsck
	rm -f "$MNT/filler" "$MNT/filler2"
	t "space freed: the restore succeeds" "$DECREE" -C "$w" checkpoint restore default:X
	if [ "$(fast_state "$w")" = "$fx" ]; then ok "space freed: the tree is X"
	else not_ok "space freed: the tree is X"; fi
	umount "$MNT" 2>/dev/null
else
	ok "# SKIP full file system: cannot mount a tmpfs here"
fi
done_testing
