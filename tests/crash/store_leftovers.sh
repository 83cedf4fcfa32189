#!/bin/bash
# store_leftovers.sh - what a killed or failing store writer leaves behind
# is removed by the next command, never by gc alone (issue 9: "no temp
# files").
#
# `checkpoint create` is killed at every write, fsync and rename it makes
# (the pack, its index, packs/sealed, the record, the record cache, the stat
# cache); then `decree recover` (what every mutating command does first)
# must leave no temp file anywhere in the store, and fsck must be clean.
# `gc` (with garbage to free) then fails at every unlink and fsync it
# makes (EIO): whatever it exits with, fsck must be clean (an old pack's
# index must never outlive its data), and a second gc frees the rest.
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary

W=$SCRATCH/w
mkdir -p "$W/d"
for i in 1 2 3 4; do printf 'file %d\n' "$i" >"$W/d/f$i.txt"; done
"$DECREE" -C "$W" checkpoint create --message one >/dev/null
echo more >>"$W/d/f1.txt"
cp -a "$W" "$SCRATCH/base"
trace_log "$SCRATCH/create.trace" "$KILLED" -C "$W" checkpoint create --message two
[ "$RC" -eq 0 ] || not_ok "create runs under strace" "$(cat "$SCRATCH/.kerr")"

for sc in write fsync renameat rename; do
	m=$(count_calls "$SCRATCH/create.trace" "$sc")
	for n in $(seq 1 "$m"); do
		rm -rf "$W" && cp -a "$SCRATCH/base" "$W"
		kill_at "$sc" "$n" "$KILLED" -C "$W" checkpoint create --message two
		why=""
		"$DECREE" -C "$W" recover >"$SCRATCH/rec.out" 2>&1 || why="$why; recover: $(cat "$SCRATCH/rec.out")"
		left=$(find "$W/.decree" -name '*tmp*')
		[ -z "$left" ] || why="$why; temp files left after recover: $(echo "$left" | sed "s|$W/||" | tr '\n' ' ')"
		"$DECREE" -C "$W" fsck >"$SCRATCH/fsck.out" 2>&1 || why="$why; fsck: $(head -3 "$SCRATCH/fsck.out")"
		if [ -z "$why" ]; then ok "create killed at $sc #$n/$m (exit $RC): recover leaves no temp"; else not_ok "create killed at $sc #$n/$m (exit $RC)" "${why#; }"; fi
	done
done

# gc: checkpoints of a session, dropped: their objects are garbage
rm -rf "$W" && cp -a "$SCRATCH/base" "$W"
for k in 1 2 3; do
	echo "gc $k" >"$W/d/g$k.txt"
	"$DECREE" -C "$W" checkpoint create --session S --message "s$k" >/dev/null
done
rm -f "$W"/d/g*.txt
"$DECREE" -C "$W" checkpoint drop --session S >/dev/null
cp -a "$W" "$SCRATCH/gcbase"
trace_log "$SCRATCH/gc.trace" "$KILLED" -C "$W" gc
[ "$RC" -eq 0 ] || not_ok "gc runs under strace" "$(cat "$SCRATCH/.kerr")"
for sc in unlink fsync; do
	m=$(count_calls "$SCRATCH/gc.trace" "$sc")
	for n in $(seq 1 "$m"); do
		rm -rf "$W" && cp -a "$SCRATCH/gcbase" "$W"
		fail_at "$sc" EIO "$n" "$KILLED" -C "$W" gc
		why="" rc=$RC
		"$DECREE" -C "$W" fsck >"$SCRATCH/fsck.out" 2>&1 || why="$why; fsck: $(head -3 "$SCRATCH/fsck.out")"
		"$DECREE" -C "$W" gc >"$SCRATCH/gc.out" 2>&1 || why="$why; a second gc: $(cat "$SCRATCH/gc.out")"
		"$DECREE" -C "$W" fsck >"$SCRATCH/fsck.out" 2>&1 || why="$why; fsck after a second gc: $(head -3 "$SCRATCH/fsck.out")"
		"$DECREE" -C "$W" checkpoint restore default:one >/dev/null 2>&1 || why="$why; restore after gc failed"
		if [ -z "$why" ]; then ok "gc with EIO at $sc #$n/$m (exit $rc): fsck clean"; else not_ok "gc with EIO at $sc #$n/$m (exit $rc)" "${why#; }"; fi
	done
done
done_testing
