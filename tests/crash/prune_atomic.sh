#!/bin/bash
# prune_atomic.sh - checkpoint prune, drop and delete remove all they
# remove at once (docs/transactions.md, "Removing checkpoints").
#
# prune --keep 1 (three records to remove), drop --session S (three, and
# S's agent journal), drop --all (records, history, stat cache, every
# journal) and delete (one record) run once under strace; then
# every unlink and fsync they make fails in turn (EIO), and is also the
# point of a SIGKILL.  After each:
#   exit 0   the listing is exactly "after" (a warning may say that the
#            next command finishes deleting files);
#   exit 1   exactly "before", with a "decree:" line;
#   killed   a read-only listing, before any recovery, is already "before"
#            or "after" (never a part), and stays so after `decree recover`;
#   always   after `decree recover`: no checkpoints.drop, no record file of
#            a removed checkpoint, no temp file, fsck clean; a journal the
#            command deletes is gone exactly when the listing is "after".
# Then a damaged checkpoints.drop: fsck names it, recovery removes it and
# keeps every checkpoint.
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary

W=$SCRATCH/w
make_base() {
	rm -rf "$W" && mkdir -p "$W/d" && cd "$W" || return 1
	echo one >d/a.txt && echo two >b.txt
	"$DECREE" -q checkpoint create --message X >/dev/null || return 1
	for k in 2 3 4; do
		echo "$k" >>b.txt
		"$DECREE" -q checkpoint create --message X$k >/dev/null || return 1
	done
	for k in 1 2 3; do
		echo "s$k" >>d/a.txt
		"$DECREE" -q checkpoint create --session S --message S$k >/dev/null || return 1
	done
	"$DECREE" -q checkpoint restore default:X >/dev/null || return 1
	# agent journals (decree/agent.h) of S and of the default session
	rd=$(rootdir "$W")
	mkdir -p "$rd/journal" || return 1
	jline S >"$rd/journal/$(jkey S)" && jline default >"$rd/journal/$(jkey default)"
	cd - >/dev/null
}
jkey() { printf '%s' "$1" | sha256sum | cut -c1-32; }
# a journal's first record, checksummed as docs/format.md says (fsck reads it)
jline() {
	local j='{"type":"session","v":1,"session":"'"$1"'","agent":null,"time":1}'
	printf '%s %s\n' "$(printf '%s' "$j" | sha256sum | cut -c1-16)" "$j"
}
# which journals are left: "S default", "default", "none"
journals() {
	local rd j=""
	rd=$(rootdir "$1")
	[ -e "$rd/journal/$(jkey S)" ] && j="S"
	[ -e "$rd/journal/$(jkey default)" ] && j="${j:+$j }default"
	echo "${j:-none}"
}
ids() { "$DECREE" -C "$1" checkpoint list --json 2>/dev/null | $PY3 -c '
import json, sys
print(" ".join(sorted("%s:%s" % (c["session"], c["message"]) for c in json.load(sys.stdin)["checkpoints"] if c["message"])))'; }
undo_depth() { "$DECREE" -C "$1" undo --dry-run >/dev/null 2>&1 && echo some || echo none; }
rootdir() { dirname "$(find "$1/.decree/store/roots" -name ROOT | head -1)"; }

make_base || { not_ok "set up" "cannot build the base tree"; done_testing; exit 1; }
cp -a "$W" "$SCRATCH/base"

for spec in "prune|checkpoint prune --keep 1" "drop|checkpoint drop --session S" "drop-all|checkpoint drop --all" "delete|checkpoint delete S:S2"; do
	name=${spec%%|*} cmd=${spec#*|}
	rm -rf "$W" && cp -a "$SCRATCH/base" "$W"
	before=$(ids "$W")
	jbefore=$(journals "$W")
	# shellcheck disable=SC2086
	trace_log "$SCRATCH/$name.trace" "$KILLED" -C "$W" $cmd
	after=$(ids "$W")
	jafter=$(journals "$W")
	if [ "$RC" -ne 0 ] || [ "$before" = "$after" ]; then
		not_ok "$name: runs and removes something" "exit $RC: $(cat "$SCRATCH/.kerr")"
		continue
	fi
	case "$name:$jafter" in
	prune:"S default" | delete:"S default" | drop:default | drop-all:none) ok "$name: the journals left: $jafter" ;;
	*) not_ok "$name: the journals left" "$jafter" ;;
	esac
	for sc in unlink unlinkat fsync; do
		m=$(count_calls "$SCRATCH/$name.trace" "$sc")
		for n in $(seq 1 "$m"); do
			for fault in EIO KILL; do
				rm -rf "$W" && cp -a "$SCRATCH/base" "$W"
				what="$name: $fault at $sc #$n/$m" why=""
				if [ $fault = KILL ]; then
					# shellcheck disable=SC2086
					kill_at "$sc" "$n" "$KILLED" -C "$W" $cmd
					err=$(cat "$SCRATCH/.kerr")
				else
					# shellcheck disable=SC2086
					fail_at "$sc" EIO "$n" "$KILLED" -C "$W" $cmd
					err=$ERR
				fi
				st=$(ids "$W")
				case "$RC:$st" in
				0:"$after") ;;
				0:*) why="$why; exit 0 but the listing is not 'after': $st" ;;
				137:"$after" | 137:"$before") ;;
				137:*) why="$why; killed: the listing shows a part: $st" ;;
				*:"$before") case "$err" in *"decree: "*) ;; *) why="$why; exit $RC without a 'decree:' line" ;; esac ;;
				*) why="$why; exit $RC ($(echo "$err" | tail -1)) but the listing is not 'before': $st" ;;
				esac
				"$DECREE" -C "$W" recover >"$SCRATCH/rec.out" 2>&1 ||
					why="$why; recover failed: $(cat "$SCRATCH/rec.out")"
				[ "$(ids "$W")" = "$st" ] || why="$why; recover changed the listing: $(ids "$W")"
				rd=$(rootdir "$W")
				[ ! -e "$rd/checkpoints.drop" ] || why="$why; checkpoints.drop left after recover"
				nrec=$(find "$rd/checkpoints" -type f | wc -l)
				nlist=$("$DECREE" -C "$W" checkpoint list --json | $PY3 -c 'import json,sys; print(len(json.load(sys.stdin)["checkpoints"]))')
				[ "$nrec" = "$nlist" ] || why="$why; $nrec record files for $nlist checkpoints"
				[ -z "$(find "$W/.decree" -name '*tmp*')" ] || why="$why; temp files: $(find "$W/.decree" -name '*tmp*')"
				"$DECREE" -C "$W" fsck >"$SCRATCH/fsck.out" 2>&1 || why="$why; fsck: $(head -3 "$SCRATCH/fsck.out")"
				case "$(ids "$W")|$(journals "$W")" in
				"$after|$jafter" | "$before|$jbefore") ;;
				*) why="$why; journals and records disagree: journals $(journals "$W"), listing $(ids "$W")" ;;
				esac
				if [ "$name" = drop-all ]; then
					# the history goes with the records, never apart
					case "$(ids "$W"):$(undo_depth "$W")" in
					"$after":none | "$before":some) ;;
					*) why="$why; history and records disagree: $(undo_depth "$W") undo entries, listing $(ids "$W")" ;;
					esac
				fi
				if [ -z "$why" ]; then ok "$what (exit $RC)"; else not_ok "$what (exit $RC)" "${why#; }"; fi
			done
		done
	done
done

# A damaged list: fsck names it; recovery drops it and keeps the records.
rm -rf "$W" && cp -a "$SCRATCH/base" "$W"
before=$(ids "$W")
rd=$(rootdir "$W")
printf 'DCKD garbage' >"$rd/checkpoints.drop"
t_exit 0 "damaged list: listing ignores it" "$DECREE" -C "$W" checkpoint list
[ "$(ids "$W")" = "$before" ] && ok "damaged list: every checkpoint is listed" ||
	not_ok "damaged list: every checkpoint is listed" "$(ids "$W")"
"$DECREE" -C "$W" fsck >"$SCRATCH/fsck.out" 2>&1
case "$?:$(cat "$SCRATCH/fsck.out")" in
1:*checkpoints.drop*) ok "damaged list: fsck names it" ;;
*) not_ok "damaged list: fsck names it" "$(cat "$SCRATCH/fsck.out")" ;;
esac
t_err "*warning: *checkpoints.drop*kept*" "damaged list: recover removes it with a warning" 0 "$DECREE" -C "$W" recover
[ ! -e "$rd/checkpoints.drop" ] && [ "$(ids "$W")" = "$before" ] &&
	ok "damaged list: gone, checkpoints kept" ||
	not_ok "damaged list: gone, checkpoints kept" "$(ls "$rd"); $(ids "$W")"
t "damaged list: fsck clean afterwards" "$DECREE" -C "$W" fsck
done_testing
