#!/bin/bash
# store_leftovers.sh - what a killed or failing store writer leaves behind
# is removed by the next command, never by gc alone (issue 9: "no temp
# files").
#
# `checkpoint create` is killed at every write, fsync and rename it makes
# (the pack, its index, packs/sealed, the record, the record cache, the stat
# cache); then `decree recover` (what every mutating command does first)
# must leave no temp file anywhere in the store, and fsck must be clean.
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
done_testing
