#!/bin/bash
# embed.sh - what an app that embeds decree needs (DESIGN "Checkpoints";
# docs/cli/checkpoint.md): create --if-changed, the tree id in every
# checkpoint's JSON, create --exclude/--max-file-size carried by the
# checkpoint (a restore never deletes what they left out), checkpoint
# delete, the change counts of list --json, and a store that forgets a
# root left with nothing (drop --all + gc) and never registers the
# directory gc runs in.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

D() { "$DECREE" "$@"; }
# py EXPR: evaluate over d = JSON of $OUT, print the result
py() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1" 2>&1; }
same() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "got: $2; wanted: $3"; fi; }
check() { name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name" "failed: $*"; fi; }
# the id field of the JSON in $OUT
jid() { py 'd["id"]'; }
rootdir_of() { dirname "$(grep -lx "$2" "$1"/roots/*/ROOT)"; }

# ===== --if-changed, and the tree id =========================================
P=$SCRATCH/p
mkdir -p "$P/src" && cd "$P" || exit 1
printf 'one\n' >a.txt
printf 'x\n' >src/x.txt
t "create --json" D --json checkpoint create
A=$(jid)
same "create --json: {id, created, tree, notices}" "$(py 'sorted(d) == ["created", "id", "notices", "tree"] and d["created"] is True and len(d["tree"]) == 64 and d["notices"] == []')" True
TA=$(py 'd["tree"]')
t "create --if-changed --json on an unchanged tree" D --json checkpoint create --if-changed
same "... creates nothing: created false" "$(py 'd["created"]')" False
same "... and gives the latest id" "$(jid)" "$A"
same "... and its tree" "$(py 'd["tree"]')" "$TA"
t_out "$A" "human --if-changed prints the id as usual" D checkpoint create --if-changed
_run D --json checkpoint list
same "still one checkpoint" "$(py 'len(d["checkpoints"])')" 1
t "create without --if-changed makes a second one" D --json checkpoint create
B=$(jid)
same "... with the same tree id (same files)" "$(py 'd["tree"]')" "$TA"
check "... and another id" test "$A" != "$B"
t "--if-changed in another session (no checkpoint yet) creates" D --json checkpoint create --if-changed --session other
same "... created true" "$(py 'd["created"]')" True
O1=$(jid)
printf 'two\n' >>a.txt
t "--if-changed on a changed tree" D --json checkpoint create --if-changed
same "... creates" "$(py 'd["created"]')" True
C=$(jid)
TC=$(py 'd["tree"]')
check "... with another tree id" test "$TC" != "$TA"
t "--if-changed again, same tree" D --json checkpoint create --if-changed
same "... returns the newest of the session" "$(jid):$(py 'd["created"]')" "$C:False"
t "--if-changed for session other, whose latest has the old tree" D --json checkpoint create --if-changed --session other
same "... creates (the session's latest differs)" "$(py 'd["created"]')" True
t "--message of an existing (session, message) wins over --if-changed" D --json checkpoint create --message m1
M1=$(jid)
printf 'three\n' >>a.txt
t "create --message m1 --if-changed again" D --json checkpoint create --message m1 --if-changed
same "... returns the message's checkpoint" "$(jid):$(py 'd["created"]')" "$M1:False"

# the tree id in list, show and rollback
t "list --json" D --json checkpoint list
same "list: every entry has a 64-hex tree" "$(py 'all(len(c["tree"]) == 64 and int(c["tree"], 16) >= 0 for c in d["checkpoints"])')" True
same "list: A and B share a tree, C has its own" "$(py '[c["tree"] for c in d["checkpoints"] if c["id"] in ("'"$A"'", "'"$B"'", "'"$C"'")]')" "['$TA', '$TA', '$TC']"
t "show --json" D --json checkpoint show "$C"
same "show: the tree" "$(py 'd["tree"]')" "$TC"
t "rollback --json" D --json rollback
same "rollback: every entry has its tree" "$(py 'all(len(c["tree"]) == 64 for c in d["checkpoints"]) and [c["tree"] for c in d["checkpoints"] if c["id"] == "'"$C"'"] == ["'"$TC"'"]')" True

# ===== change counts ===========================================================
Q=$SCRATCH/q
mkdir -p "$Q" && cd "$Q" || exit 1
printf 'l1\nl2\nl3\n' >text.txt
printf 'no final newline' >nonl.txt
printf 'bin\0ary\n' >data.bin
printf 'gone\n' >gone.txt
t "counts: first checkpoint" D --json checkpoint create -s c
printf 'l1\nL2\nl3\nl4\n' >text.txt
rm gone.txt
printf 'bin\0ary two\n' >data.bin
chmod 755 nonl.txt
printf 'new\nfile\n' >new.txt
t "counts: second checkpoint" D --json checkpoint create -s c
t "counts: a checkpoint of another session" D --json checkpoint create -s d
t "counts: list --json" D --json checkpoint list
# the root's first: its 4 files added, the lines unknown (null)
same "the first: every file added, lines unknown" \
	"$(py '[(c["files_changed"], c["insertions"], c["deletions"]) for c in d["checkpoints"]][0]')" "(4, None, None)"
# text.txt 1 changed + 1 added line; gone.txt -1; data.bin binary 0;
# nonl.txt mode only 0; new.txt +2
same "the second: against the first of the session" \
	"$(py '[(c["files_changed"], c["insertions"], c["deletions"]) for c in d["checkpoints"]][1]')" "(5, 4, 2)"
same "another session's first: against the root's newest (the same tree)" \
	"$(py '[(c["files_changed"], c["insertions"], c["deletions"]) for c in d["checkpoints"]][2]')" "(0, 0, 0)"
t "counts: --if-changed returning the latest" D --json checkpoint create -s c --if-changed
t "counts: an unchanged checkpoint" D --json checkpoint create -s c
t "counts: list --json" D --json checkpoint list
same "an unchanged tree: 0 0 0" "$(py '[(c["files_changed"], c["insertions"], c["deletions"]) for c in d["checkpoints"]][-1]')" "(0, 0, 0)"
# with a message the records loaded to look for it serve the counts too
# (record_meta.known): the same previous checkpoint as without one
printf 'l1\nL2\nl3\nl4\nl5\n' >text.txt
t "counts with a message: a checkpoint" D --json checkpoint create -s c -m with-message
t "counts: list --json" D --json checkpoint list
same "... against the session's previous: one line added" "$(py '[(c["files_changed"], c["insertions"], c["deletions"]) for c in d["checkpoints"]][-1]')" "(1, 1, 0)"
printf 'more\n' >>new.txt
t "counts with a message: a new session's first" D --json checkpoint create -s e -m first-of-e
t "counts: list --json" D --json checkpoint list
same "... against the root's newest" "$(py '[(c["files_changed"], c["insertions"], c["deletions"]) for c in d["checkpoints"]][-1]')" "(1, 1, 0)"
t_match "*+4 -2*" "human list shows +I -D" D checkpoint list --session c
_run D --json checkpoint list
# a record made before decree counted: null in JSON, nothing in human list
ST=$Q/.decree/store
RD=$(rootdir_of "$ST" "$Q")
T=$(py 'd["checkpoints"][0]["tree"]')
OLDREC='{"version":1,"type":"checkpoint","root":"'$Q'","session":"old","message":null,"label":null,"created_at":"2020-01-01T00:00:00Z","created_ns":1577836800000000000,"tree":"'$T'","file_count":4,"total_bytes":30,"skipped":[]}'
OLDID=$(printf '%s\n' "$OLDREC" | sha256sum | cut -c1-64)
printf '%s\n' "$OLDREC" >"$RD/checkpoints/$OLDID"
t "list --json with a record from before the counts" D --json checkpoint list
same "... its counts are null" "$(py '[(c["files_changed"], c["insertions"], c["deletions"]) for c in d["checkpoints"] if c["id"] == "'"$OLDID"'"]')" "[(None, None, None)]"
same "... and it still has its tree" "$(py '[c["tree"] for c in d["checkpoints"] if c["id"] == "'"$OLDID"'"]')" "['$T']"
t "... it still restores" D checkpoint restore "$OLDID"
t "fsck is clean (the new cache and records)" D fsck

# ===== --exclude and --max-file-size: carried by the checkpoint =================
E=$SCRATCH/e
mkdir -p "$E/big" "$E/keep" && cd "$E" || exit 1
printf 'a\n' >a.txt
printf 'huge\n' >big/one.bin
head -c 3000 /dev/zero >large.dat
t "create --exclude big/ --max-file-size 2K" D --json checkpoint create --exclude 'big/' --max-file-size 2K -m x
X=$(jid)
t "show --json" D --json checkpoint show "$X"
same "big/ is not in it, large.dat is skipped" "$(py '[f["path"] for f in d["files"]], [s["path"] for s in d["skipped"]]')" "(['a.txt'], ['large.dat'])"
REC=$(cat "$(rootdir_of .decree/store "$E")/checkpoints/$X")
case "$REC" in *'"version":2'*'"excludes":["big/"]'*'"max_file_size":2048'*) ok "the record carries its excludes and size limit (version 2)" ;;
*) not_ok "the record carries its excludes and size limit (version 2)" "$REC" ;; esac
# files the agent made later, inside the excluded directory and too large
printf 'later\n' >big/two.bin
head -c 2500 /dev/zero >large2.dat
printf 'new\n' >b.txt
t "restore --dry-run --json" D --json checkpoint restore "$X" --dry-run
same "... deletes only b.txt" "$(py '[(c["path"], c["action"]) for c in d["changes"]]')" "[('b.txt', 'delete')]"
t "restore" D checkpoint restore "$X"
check "big/ is never deleted: both files are there" test -f big/one.bin -a -f big/two.bin
check "a file above the checkpoint's size limit is never deleted" test -f large2.dat
check "b.txt (created later, not excluded) is deleted" test ! -e b.txt
# (a file above the size limit is a difference, as with the store's own
# limit: there, not stored; big/ is none)
t "diff against it: big/ is left out" D --json checkpoint diff "$X"
same "... only the new large file, skipped" "$(py '[(f["path"], f["status"], f["skipped"]) for f in d["files"]]')" "[('large2.dat', 'A', True)]"
t_out "A	large2.dat" "diff --name-status: the same" D checkpoint diff "$X" --name-status
t "rollback --json" D --json rollback
same "... 1 file differs from it" "$(py '[c["files_differ"] for c in d["checkpoints"] if c["id"] == "'"$X"'"]')" "[1]"
# the pre-restore capture carries the rules too: restoring it deletes
# nothing in big/ either
PRE=$(D --json checkpoint list | python3 -c 'import json,sys; print([c["id"] for c in json.load(sys.stdin)["checkpoints"] if c["label"] == "pre-restore"][-1])')
printf 'even later\n' >big/three.bin
t "restore the pre-restore capture" D checkpoint restore "$PRE"
check "... big/ untouched" test -f big/one.bin -a -f big/two.bin -a -f big/three.bin
check "... b.txt back" test -f b.txt
t "undo" D undo
t "restore by SESSION:MESSAGE (the record read from its file)" D checkpoint restore default:x
check "... big/ untouched" test -f big/one.bin -a -f big/two.bin -a -f big/three.bin
# --if-changed compares the tree scanned with the same rules
LATEST=$(D --json checkpoint list | python3 -c 'import json,sys; print(json.load(sys.stdin)["checkpoints"][-1]["id"])')
t "--if-changed with the same rules" D --json checkpoint create --if-changed --exclude 'big/' --max-file-size 2K
same "... returns the latest (the last restore's capture, same tree)" "$(jid):$(py 'd["created"]')" "$LATEST:False"
t "--if-changed without the rules" D --json checkpoint create --if-changed
same "... sees big/ and the large files: creates" "$(py 'd["created"]')" True
# repeatable, --exclude=PATTERN, negation
t "create --exclude A --exclude=B" D --json checkpoint create --exclude 'big/' --exclude='*.dat' --exclude '!large.dat'
t "show" D --json checkpoint show "$(jid)"
same "... gitignore rules, the last match wins" "$(py 'sorted(f["path"] for f in d["files"]) + [s["path"] for s in d["skipped"]]')" "['a.txt', 'large.dat']"
# usage errors and bad patterns change nothing
n_before=$(D --json checkpoint list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["checkpoints"]))')
t_err "decree: --max-file-size needs a positive size*" "--max-file-size 0: usage error" 2 D checkpoint create --max-file-size 0
t_err "decree: --max-file-size needs a positive size*" "--max-file-size 5X: usage error" 2 D checkpoint create --max-file-size 5X
t_err "decree: option '--exclude' needs a value*" "--exclude without a value: usage error" 2 D checkpoint create --exclude
t_err "decree: exclude pattern * must be one line of UTF-8 text" "a pattern with a newline is refused" 1 D checkpoint create --exclude $'a\nb'
t_err "decree: exclude pattern * must be one line of UTF-8 text" "a pattern that is not UTF-8 is refused" 1 D checkpoint create --exclude $'\xff'
same "nothing was created" "$(D --json checkpoint list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["checkpoints"]))')" "$n_before"
t "--max-file-size 1M (suffixes as in config.yml)" D --json checkpoint create --max-file-size 1M
t "show" D --json checkpoint show "$(jid)"
same "... large.dat is stored now" "$(py '[s["path"] for s in d["skipped"]]')" "[]"

# ===== config.yml excludes: recorded by every checkpoint ======================
# (a restore never deletes what the config excluded when the checkpoint
# was made, whatever the config says today; docs/format.md)
CF=$SCRATCH/cfg
mkdir -p "$CF/.decree" "$CF/a" && cd "$CF" || exit 1
printf 'keep\n' >a/x.txt
printf 'data\n' >a/y.tmp
printf 'checkpoint:\n  exclude:\n    - "*.tmp"\n' >.decree/config.yml
t "create with a config exclude" D --json checkpoint create -m cfg
X=$(jid)
CRD=$(rootdir_of .decree/store "$CF")
REC=$(cat "$CRD/checkpoints/$X")
case "$REC" in *'"version":3'*'"config_excludes":["*.tmp"]'*) ok "the record carries the config's excludes (version 3)" ;;
*) not_ok "the record carries the config's excludes (version 3)" "$REC" ;; esac
rm .decree/config.yml
printf 'later\n' >a/z.tmp
t_out "" "the exclude left the config: diff --name-status still empty" D checkpoint diff "$X" --name-status
t "list --json (twice: the second reads the record cache)" D --json checkpoint list
t "list --json" D --json checkpoint list
same "... has_changes false" "$(py 'd["checkpoints"][-1]["has_changes"]')" False
t "restore --dry-run --json" D --json checkpoint restore "$X" --dry-run
same "... deletes nothing" "$(py 'd["changes"]')" "[]"
t "restore" D checkpoint restore "$X"
check "the files the checkpoint's config excluded are still there" test -f a/y.tmp -a -f a/z.tmp
# an exclude added to the config later hides nothing the checkpoint has
printf 'checkpoint:\n  exclude:\n    - "*.txt"\n' >.decree/config.yml
printf 'edited\n' >a/x.txt
t_out "M	a/x.txt" "an exclude added later: diff names the edit, not a deletion" D checkpoint diff "$X" --name-status
t "restore" D checkpoint restore "$X"
same "... a/x.txt restored" "$(cat a/x.txt)" "keep"
t "a new checkpoint" D --json checkpoint create -m cfg2
REC2=$(cat "$CRD/checkpoints/$(jid)")
case "$REC2" in *'"config_excludes":["*.txt"]'*) ok "... records today's config" ;;
*) not_ok "... records today's config" "$REC2" ;; esac
rm .decree/config.yml
t "without a config" D --json checkpoint create -m cfg3
REC3=$(cat "$CRD/checkpoints/$(jid)")
case "$REC3" in '{"version":1,'*'"config_excludes":[]'*) ok "... an empty list, version 1" ;;
*) not_ok "... an empty list, version 1" "$REC3" ;; esac
# a record from before decree recorded them: today's config applies
OLDREC=$(printf '%s' "$REC" | sed 's/"version":3/"version":1/; s/,"config_excludes":\["\*\.tmp"\]//')
case "$OLDREC" in *config_excludes*) not_ok "an old record made" "$OLDREC" ;; *) ok "an old record made" ;; esac
OLDID=$(printf '%s' "$OLDREC" | sha256sum | cut -c1-64)
printf '%s' "$OLDREC" >"$CRD/checkpoints/$OLDID"
t "restore --dry-run --json of the old record, no config today" D --json checkpoint restore "$OLDID" --dry-run
same "... deletes the .tmp files, as decree always did" "$(py 'sorted((c["path"], c["action"]) for c in d["changes"])')" "[('a/y.tmp', 'delete'), ('a/z.tmp', 'delete')]"
printf 'checkpoint:\n  exclude:\n    - "*.tmp"\n' >.decree/config.yml
t "with the exclude in today's config" D --json checkpoint restore "$OLDID" --dry-run
same "... deletes nothing" "$(py 'd["changes"]')" "[]"
t "fsck is clean (records of versions 1 and 3, the cache)" D fsck

# ===== the test of the safety rule: create --exclude 'big/'; restore ===========
R=$SCRATCH/r
mkdir -p "$R/big/deep" && cd "$R" || exit 1
printf 'src\n' >main.c
printf 'artifact\n' >big/build.o
printf 'deep\n' >big/deep/cache.bin
t "create --exclude 'big/'" D checkpoint create --exclude 'big/'
X=$OUT
printf 'more\n' >big/new.o
printf 'edit\n' >main.c
t "restore" D checkpoint restore "$X"
same "big/ is exactly as it was before the restore" "$(find big -type f | LC_ALL=C sort | tr '\n' ' ')" "big/build.o big/deep/cache.bin big/new.o "
same "main.c restored" "$(cat main.c)" "src"
rm -rf big
t "restore when big/ is gone" D checkpoint restore "$X"
check "... nothing to bring back: big/ was never in it" test ! -e big
# has_changes of the newest: the working tree as its rules see it
t "create --exclude 'big/' --if-changed" D --json checkpoint create --exclude 'big/' --if-changed
mkdir -p big && printf 'x\n' >big/later.o
t "list --json" D --json checkpoint list
same "has_changes: a file in big/ is no change" "$(py 'd["checkpoints"][-1]["has_changes"]')" False
t "compare (rollback --json): 0 files differ" D --json rollback
same "... for the newest" "$(py 'd["checkpoints"][0]["files_differ"]')" 0
t_out "" "diff --name-status: empty" D checkpoint diff "$(D --json checkpoint list | python3 -c 'import json,sys; print(json.load(sys.stdin)["checkpoints"][-1]["id"])')" --name-status
printf 'x\n' >other.c
t "list --json" D --json checkpoint list
same "has_changes: a file elsewhere is" "$(py 'd["checkpoints"][-1]["has_changes"]')" True

# ===== checkpoint delete =======================================================
cd "$P" || exit 1
t "delete --json" D --json checkpoint delete "$B"
same "... says the id" "$OUT" "{\"deleted\":\"$B\"}"
_run D --json checkpoint list
same "... it is gone from the list" "$(py '"'"$B"'" in [c["id"] for c in d["checkpoints"]]')" False
t_err "decree: no checkpoint matches*" "delete it again: not found" 1 D checkpoint delete "$B"
t_match "deleted checkpoint ${C}*" "delete by prefix (human), the newest of its session too" D checkpoint delete "${C:0:12}"
t_err "decree: no checkpoint matches*" "show of a deleted checkpoint fails" 1 D checkpoint show "$C"
t_match "deleted checkpoint ${M1}*" "delete by SESSION:MESSAGE" D checkpoint delete default:m1
t_err "decree: usage: decree checkpoint delete REF*" "delete without REF: usage error" 2 D checkpoint delete
t_err "decree: usage: decree checkpoint delete REF*" "delete with two REFs: usage error" 2 D checkpoint delete "$A" "$O1"
t_err "decree: invalid checkpoint reference*" "delete with a bad reference" 1 D checkpoint delete zz
t "a deleted checkpoint's objects go with gc, the others restore" D gc
t "restore A after the deletes and gc" D checkpoint restore "$A"
same "A's content" "$(cat a.txt)" "one"
# an unfinished transaction that cannot be finished: refused, nothing deleted
RDP=$(rootdir_of .decree/store "$P")
printf 'not a log' >"$RDP/txn.wal"
t_err "decree: *transaction log*damaged*" "delete with a damaged transaction log is refused" 1 D checkpoint delete "$A"
rm -f "$RDP/txn.wal"
_run D --json checkpoint list
same "... and A is still there" "$(py '"'"$A"'" in [c["id"] for c in d["checkpoints"]]')" True

# ===== drop, journals, gc and `decree projects` ================================
S=$SCRATCH/store
mkdir -p "$SCRATCH/j" "$SCRATCH/k" "$SCRATCH/fresh" && cd "$SCRATCH" || exit 1
echo j >j/f && echo k >k/f
t "j: a checkpoint in session s1" D --store "$S" -C j checkpoint create -s s1
t "j: a checkpoint in session s2" D --store "$S" -C j checkpoint create -s s2
t "k: a checkpoint" D --store "$S" -C k checkpoint create
RJ=$(rootdir_of "$S" "$SCRATCH/j")
RK=$(rootdir_of "$S" "$SCRATCH/k")
key() { printf '%s' "$1" | sha256sum | cut -c1-32; }
mkdir -p "$RJ/journal" "$RK/journal"
echo turn >"$RJ/journal/$(key s1)"
echo turn >"$RJ/journal/$(key s2)"
echo turn >"$RK/journal/$(key k1)"
t "drop --session s1" D --store "$S" -C j checkpoint drop --session s1
check "... deletes s1's agent journal" test ! -e "$RJ/journal/$(key s1)"
check "... keeps s2's" test -f "$RJ/journal/$(key s2)"
echo turn >"$RJ/journal/$(key s3)"
t "drop --session s3 (a journal, no checkpoints)" D --store "$S" -C j checkpoint drop --session s3
check "... deletes that journal too" test ! -e "$RJ/journal/$(key s3)"
t "drop --all" D --store "$S" -C j checkpoint drop --all
check "... deletes the whole journal directory" test ! -e "$RJ/journal"
t "gc" D --store "$S" -C j gc
check "roots/<key>/ of j is gone" test ! -e "$RJ"
t "projects --json" D --store "$S" --json projects
same "projects no longer lists j, still lists k" "$(py '[p["root"] for p in d["projects"]]')" "['$SCRATCH/k']"
t "k: drop --session of its only session" D --store "$S" -C k checkpoint drop --session default
t "gc" D --store "$S" -C k gc
check "k has a journal left: its entry stays" test -f "$RK/journal/$(key k1)"
t "projects --json" D --store "$S" --json projects
same "... and is listed" "$(py '[(p["root"], p["checkpoint_count"]) for p in d["projects"]]')" "[('$SCRATCH/k', 0)]"
echo mine >"$RK/hook-state"
rm -f "$RK/journal/$(key k1)"
t "gc" D --store "$S" -C k gc
check "a file decree does not know keeps an entry" test -f "$RK/hook-state"
rm -f "$RK/hook-state"
t "gc" D --store "$S" -C k gc
check "an empty journal directory does not" test ! -e "$RK"
t "projects --json" D --store "$S" --json projects
same "no project left" "$(py 'd["projects"]')" "[]"
# gc and the other commands that only read or remove register no root
before=$(ls "$S/roots" | wc -l)
t "gc in a directory the store never saw" D --store "$S" -C fresh gc
t "gc --dry-run there" D --store "$S" -C fresh gc --dry-run
t "prune there" D --store "$S" -C fresh checkpoint prune --keep 1
t "drop --all there" D --store "$S" -C fresh checkpoint drop --all
t "drop --session there" D --store "$S" -C fresh checkpoint drop --session s
t_exit 1 "delete there: not found" D --store "$S" -C fresh checkpoint delete abcd
t "recover there" D --store "$S" -C fresh recover
same "... none of them created an entry" "$(ls "$S/roots" | wc -l)" "$before"
cd fresh || exit 1
t "gc in an in-tree store's project, nothing else there" D gc
check "... registers nothing" test ! -e .decree/store/roots -o -z "$(ls .decree/store/roots 2>/dev/null)"
t "a checkpoint after all that" D checkpoint create
t_match "*exists*$SCRATCH/fresh*" "... registers the root" D projects
done_testing
