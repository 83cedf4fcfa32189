#!/bin/bash
# escape.sh - symlink escapes.  Between a checkpoint and its restore (and
# during a restore, and before undo/redo) a directory of the tree is replaced
# by a symlink to a directory outside the root.  decree must write, delete
# and create nothing outside (the outside tree is compared byte for byte,
# with mtimes and inode numbers), and either fail cleanly or restore without
# following the link.  A checkpoint records symlinks as links and never reads
# through them (checked on the manifest and with strace).
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary

XO=$SCRATCH/outside
mkdir -p "$XO/sub"
echo 'outside a' >"$XO/a.txt"
echo 'outside victim' >"$XO/victim.txt"
echo 'outside target' >"$XO/target.txt"
echo 'outside deep' >"$XO/sub/deep.txt"
echo 'top secret 6b0f1e0c' >"$XO/secret.txt"
chmod 600 "$XO/secret.txt"
# content, modes, names, mtimes and inodes of everything outside
outside_state() {
	fast_state "$XO"
	(cd "$XO" && find . -printf '%p %y %m %s %T@ %i\n' | LC_ALL=C sort)
}
OUT_FP=$(outside_state)
outside_intact() { # name
	local now
	now=$(outside_state)
	if [ "$now" = "$OUT_FP" ]; then ok "$1: nothing outside the root changed"
	else not_ok "$1: nothing outside the root changed" "$(diff <(echo "$OUT_FP") <(echo "$now") | head -10)"; fi
}
# either it failed cleanly (exit 1, tree as before) or it reached the target
# without following the link
failed_or_restored() { # name tree before-fp target-fp
	local st
	st=$(fast_state "$2")
	if [ "$RC" -eq 1 ] && [ "$st" = "$3" ]; then
		case "$ERR" in *"decree: "*) ok "$1: refused cleanly (${ERR##*decree: })" ;;
		*) not_ok "$1: refused cleanly" "no decree: message: $ERR" ;; esac
	elif [ "$RC" -eq 0 ] && [ "$st" = "$4" ]; then
		ok "$1: restored without following the link"
	else
		not_ok "$1: failed cleanly or restored without following the link" \
			"exit $RC: $ERR
$(diff <(echo "$4") <(echo "$st") | head -8)"
	fi
	if [ -z "$(temps_in "$2")" ] && [ -z "$(wal_in "$2")" ]; then ok "$1: no temp files, no log"
	else not_ok "$1: no temp files, no log" "$(temps_in "$2"; wal_in "$2")"; fi
}

# --- a directory of the tree replaced by a symlink out ----------------------
W=$SCRATCH/w1
mkdir -p "$W/lib/inner"
echo 'lib a' >"$W/a.txt"
echo 'in lib a' >"$W/lib/a.txt"
echo 'in lib b' >"$W/lib/b.txt"
echo 'in lib deep' >"$W/lib/inner/x.txt"
t "dir->symlink: checkpoint X" "$DECREE" -C "$W" checkpoint create --message X
FP_X=$(fast_state "$W")
rm -r "$W/lib" && ln -s "$XO" "$W/lib"
BEFORE=$(fast_state "$W")
_run "$DECREE" -C "$W" checkpoint restore default:X
failed_or_restored "dir->symlink restore" "$W" "$BEFORE" "$FP_X"
[ -L "$W/lib" ] || [ -d "$W/lib" ] || not_ok "dir->symlink: lib is gone"
outside_intact "dir->symlink restore"
t "dir->symlink: fsck" "$DECREE" -C "$W" fsck

# --- paths of the checkpoint under a symlinked parent, one level deeper ---------
W=$SCRATCH/w2
mkdir -p "$W/d"
echo 'd a' >"$W/d/a.txt"
echo 'd sub' >"$W/d/victim.txt"
t "deep: checkpoint X" "$DECREE" -C "$W" checkpoint create --message X
FP_X=$(fast_state "$W")
mkdir -p "$W/real" && mv "$W/d" "$W/real/d" && ln -s real/d "$W/d0" && ln -s "$XO" "$W/d"
BEFORE=$(fast_state "$W")
_run "$DECREE" -C "$W" checkpoint restore default:X -- d
failed_or_restored "restore -- d (d a symlink out)" "$W" "$BEFORE" \
	"$(fast_state "$W")" # any clean outcome; the outside is what matters
outside_intact "restore -- d (d a symlink out)"
_run "$DECREE" -C "$W" checkpoint restore default:X -- d/victim.txt
if [ "$RC" -ne 0 ] || [ ! -L "$W/d" ]; then ok "restore -- d/victim.txt through a symlinked parent: no write through it"
else not_ok "restore -- d/victim.txt through a symlinked parent: no write through it" "exit $RC"; fi
outside_intact "restore -- d/victim.txt"

# --- a symlinked parent of a file the restore deletes ------------------------
# X has keep/a.txt; later keep/victim.txt is created (the restore deletes it);
# then keep becomes a symlink to a directory outside holding victim.txt.
W=$SCRATCH/w3
mkdir -p "$W/keep"
echo 'keep a' >"$W/keep/a.txt"
echo top >"$W/top.txt"
t "delete: checkpoint X" "$DECREE" -C "$W" checkpoint create --message X
FP_X=$(fast_state "$W")
echo 'created later' >"$W/keep/victim.txt"
t "delete: checkpoint Y (with keep/victim.txt)" "$DECREE" -C "$W" checkpoint create --message Y
rm -r "$W/keep" && ln -s "$XO" "$W/keep"
BEFORE=$(fast_state "$W")
_run "$DECREE" -C "$W" checkpoint restore default:X
failed_or_restored "delete under a symlinked parent" "$W" "$BEFORE" "$FP_X"
[ -f "$XO/victim.txt" ] && ok "the outside victim.txt survives" || not_ok "the outside victim.txt survives"
outside_intact "delete under a symlinked parent"

# --- undo/redo replaying stored paths through a symlinked parent -------------------
# restore Y (creates keep/victim.txt), undo (deletes it), swap keep for a
# link out, redo (would create keep/victim.txt) and undo again (would delete).
W=$SCRATCH/w4
mkdir -p "$W/keep"
echo 'keep a' >"$W/keep/a.txt"
"$DECREE" -C "$W" checkpoint create --message X >/dev/null
echo 'victim' >"$W/keep/victim.txt"
echo 'keep a 2' >"$W/keep/a.txt"
"$DECREE" -C "$W" checkpoint create --message Y >/dev/null
t "undo/redo: restore X" "$DECREE" -C "$W" checkpoint restore default:X
t "undo/redo: undo (keep/victim.txt back)" "$DECREE" -C "$W" undo
t "undo/redo: undo nothing more; redo restore X again" "$DECREE" -C "$W" redo
rm -r "$W/keep" && ln -s "$XO" "$W/keep"
_run "$DECREE" -C "$W" undo
outside_intact "undo through a symlinked parent (exit $RC)"
[ -L "$W/keep" ] || [ -d "$W/keep" ] || not_ok "undo: keep vanished"
if [ -z "$(temps_in "$W")$(wal_in "$W")" ]; then ok "undo through a symlinked parent: no temps, no log"
else not_ok "undo through a symlinked parent: no temps, no log" "$(temps_in "$W"; wal_in "$W")"; fi
rm -rf "$W/keep" && ln -s "$XO" "$W/keep"
_run "$DECREE" -C "$W" redo
outside_intact "redo through a symlinked parent (exit $RC)"
t "undo/redo: fsck" "$DECREE" -C "$W" fsck

# --- a file of the tree replaced by a symlink to a file outside ----------------
W=$SCRATCH/w5
mkdir -p "$W"
echo 'conf in tree' >"$W/conf.txt"
printf '#!/bin/sh\n' >"$W/run.sh" && chmod 755 "$W/run.sh"
"$DECREE" -C "$W" checkpoint create --message X >/dev/null
FP_X=$(fast_state "$W")
rm "$W/conf.txt" "$W/run.sh"
ln -s "$XO/target.txt" "$W/conf.txt"
ln -s "$XO/secret.txt" "$W/run.sh" # a mode-only restore must not chmod the target
_run "$DECREE" -C "$W" checkpoint restore default:X
failed_or_restored "file->symlink restore" "$W" "$(fast_state "$W")" "$FP_X"
if [ "$RC" -eq 0 ] && [ ! -L "$W/conf.txt" ]; then ok "the link was replaced, not written through"
else not_ok "the link was replaced, not written through" "exit $RC: $ERR"; fi
outside_intact "file->symlink restore"

# --- refused paths ----------------------------------------------------------------
for p in ../outside/a.txt "$XO/a.txt" 'lib/../../outside/a.txt' .decree/store/lock; do
	_run "$DECREE" -C "$SCRATCH/w5" checkpoint restore default:X -- "$p"
	if [ "$RC" -eq 1 ] || [ "$RC" -eq 2 ]; then ok "restore -- '$p' is refused (exit $RC)"
	else not_ok "restore -- '$p' is refused" "exit $RC: $XO $ERR"; fi
done
outside_intact "refused paths"

# --- a symlink swapped in while the restore runs ------------------------------
# Pause the restore at the first rename of a temp (staging done, lib/ holds
# temps), replace lib/ by a link out, let it go on.
W=$SCRATCH/w6
mkdir -p "$W/lib/inner"
for i in 1 2 3 4; do echo "lib $i" >"$W/lib/f$i.txt"; done
echo 'top' >"$W/a.txt"
"$DECREE" -C "$W" checkpoint create --message X >/dev/null
for i in 1 2 3 4; do echo "lib $i changed" >"$W/lib/f$i.txt"; done
echo 'top changed' >"$W/a.txt"
echo new >"$W/lib/inner/new.txt"
cp -a "$W" "$SCRATCH/w6.pre"
trace_log "$SCRATCH/w6.trace" "$KILLED" -C "$W" checkpoint restore default:X
K=$(calls_in "$SCRATCH/w6.trace" renameat 'decree-tmp-' | head -1)
rm -rf "$W" && cp -a "$SCRATCH/w6.pre" "$W"
(ASAN_OPTIONS=$TRACED_ASAN_OPTIONS exec strace -f -o /dev/null -e trace=renameat \
	-e inject=renameat:delay_enter=1500000:when="$K" \
	"$KILLED" -C "$W" checkpoint restore default:X >"$SCRATCH/w6.out" 2>&1) &
pid=$!
for i in $(seq 1 200); do [ -n "$(wal_in "$W")" ] && break; sleep 0.05; done
if [ -n "$(wal_in "$W")" ]; then
	mv "$W/lib" "$W/lib.moved" && ln -s "$XO" "$W/lib"
	ok "swapped lib/ for a link out while the restore is paused"
else
	not_ok "swapped lib/ for a link out while the restore is paused" "restore did not pause"
fi
wait $pid
rrc=$?
_run "$DECREE" -C "$W" recover
outside_intact "symlink swapped in mid-restore (restore exit $rrc, recover exit $RC)"
if [ -z "$(temps_in "$XO")" ]; then ok "mid-restore swap: no temp file outside"
else not_ok "mid-restore swap: no temp file outside" "$(temps_in "$XO")"; fi
if [ "$RC" -eq 0 ]; then
	ok "mid-restore swap: recover copes with the link"
else
	case "$ERR" in
	*"'lib'"*) ok "mid-restore swap: recover refuses to follow the link, naming 'lib'" ;;
	*) not_ok "mid-restore swap: recover refuses to follow the link, naming 'lib'" "$ERR" ;;
	esac
fi
# once the user puts the directory back, recovery completes
rm -f "$W/lib" && mv "$W/lib.moved" "$W/lib"
t "mid-restore swap undone by hand: recover succeeds" "$DECREE" -C "$W" recover
if [ "$(fast_state "$W")" = "$(fast_state "$SCRATCH/w6.pre")" ] && [ -z "$(temps_in "$W")" ] &&
	[ -z "$(wal_in "$W")" ]; then
	ok "... the tree is as before the restore: no temps, no log"
else
	not_ok "... the tree is as before the restore: no temps, no log" \
		"$(diff <(fast_state "$SCRATCH/w6.pre") <(fast_state "$W") | head; wal_in "$W")"
fi
t "... fsck" "$DECREE" -C "$W" fsck

# --- checkpoints record symlinks as links, never read through them -----------------
W=$SCRATCH/w7
mkdir -p "$W/real"
echo 'real file' >"$W/real/r.txt"
ln -s "$XO" "$W/ext"               # a directory outside
ln -s "$XO/secret.txt" "$W/extfile" # a file outside (mode 600: unreadable for a scan that follows)
ln -s real "$W/inlink"               # a directory inside
ln -s dangling-nowhere "$W/dangling"
(ASAN_OPTIONS=$TRACED_ASAN_OPTIONS strace -f -o "$SCRATCH/ck.trace" \
	-e trace=open,openat,openat2,stat,lstat,newfstatat,statx,access,faccessat,faccessat2,readlink,chdir \
	"$KILLED" -C "$W" checkpoint create --message links >"$SCRATCH/ck.out" 2>&1; exit $?) 2>/dev/null
if [ $? -eq 0 ]; then ok "checkpoint of a tree with links out"; else not_ok "checkpoint of a tree with links out" "$(cat "$SCRATCH/ck.out")"; fi
"$DECREE" -C "$W" --json checkpoint show default:links >"$SCRATCH/show.json"
$PY3 - "$SCRATCH/show.json" "$XO" >"$SCRATCH/links.txt" <<'PY'
import hashlib, json, sys
files = {f["path"]: f for f in json.load(open(sys.argv[1]))["files"]}
out = sys.argv[2]
want = {"ext": out, "extfile": out + "/secret.txt", "inlink": "real", "dangling": "dangling-nowhere"}
for p, target in sorted(want.items()):
    f = files.get(p)
    if f is None:
        print("MISSING", p); continue
    h = hashlib.sha256(target.encode()).hexdigest()
    print("OK" if f["sha256"] == h and f["mode"] not in ("644", "755") else "BAD", p, f["mode"], f["sha256"] == h)
for p in files:
    if p.startswith(("ext/", "inlink/")):
        print("THROUGH", p)
PY
if ! grep -qv '^OK' "$SCRATCH/links.txt"; then ok "links are recorded as links (target string hashed, link mode), nothing below them"
else not_ok "links are recorded as links (target string hashed, link mode), nothing below them" "$(cat "$SCRATCH/links.txt")"; fi
if grep -n "secret\|outside/\|\"ext/\|\"inlink/" "$SCRATCH/ck.trace" | grep -v readlink >"$SCRATCH/through.txt"; then
	not_ok "the checkpoint never opened or stat'ed anything through a link" "$(head -5 "$SCRATCH/through.txt")"
else
	ok "the checkpoint never opened or stat'ed anything through a link"
fi
outside_intact "checkpoint of links"
# and a restore puts links back as links (a regular file in place of one)
rm "$W/extfile" && echo y >"$W/extfile"
t "restore brings a link back over a regular file" "$DECREE" -C "$W" checkpoint restore default:links
if [ "$(readlink "$W/extfile")" = "$XO/secret.txt" ]; then ok "... as a link with the same target"
else not_ok "... as a link with the same target" "$(ls -la "$W")"; fi
# ... and over a directory (a type change: file <-> directory)
rm "$W/ext" && mkdir "$W/ext" && echo x >"$W/ext/f"
t "restore brings a link back over a directory" "$DECREE" -C "$W" checkpoint restore default:links
if [ "$(readlink "$W/ext")" = "$XO" ]; then ok "... as a link with the same target"
else not_ok "... as a link with the same target" "$(ls -la "$W")"; fi
outside_intact "restore of links"
done_testing
