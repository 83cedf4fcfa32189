#!/bin/bash
# projects.sh - checkpoints survive a project being moved or renamed
# (DESIGN "Checkpoints"; docs/projects.md): `decree projects` lists the
# roots a store serves with counts, bytes, last time and whether each
# still exists; -C may name a root that is gone for list, drop and gc
# (restore says clearly that it is gone); `projects move OLD NEW`
# re-attaches records and undo history; a store inside the project
# follows the project by itself; gc keeps a moved project's objects.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE
cd "$SCRATCH" || exit 1
py() { python3 -c "$1"; }
# field of the project whose root is $1 in `projects --json` on stdin
proj() { python3 -c 'import json,sys
d=json.load(sys.stdin); r=[p for p in d["projects"] if p["root"]==sys.argv[1]]
print(r[0][sys.argv[2]] if r else "none")' "$1" "$2"; }
nroots() { ls "$1/roots" | wc -l; }

# ===== 1. several roots sharing one external store ============================
ST=$SCRATCH/store
mkdir -p a b c
echo a1 >a/f.txt
echo b1 >b/f.txt
echo c1 >c/f.txt
t "a: first checkpoint" "$DECREE" --store "$ST" -C a checkpoint create -m one
t "a: second checkpoint" sh -c "echo a2 >a/f.txt && '$DECREE' --store '$ST' -C a checkpoint create -m two"
t "b: one checkpoint" "$DECREE" --store "$ST" -C b checkpoint create
t "c: one checkpoint" "$DECREE" --store "$ST" -C c checkpoint create
t_match "*CHECKPOINTS*BYTES*LAST*STATE*ROOT*" "projects: a table" "$DECREE" --store "$ST" -C a projects
case "$OUT" in *"*           2 "*"exists   $SCRATCH/a"*) ok "projects: a has 2 checkpoints, exists, is current" ;;
*) not_ok "projects: a has 2 checkpoints, exists, is current" "$OUT" ;; esac
[ "$(printf '%s\n' "$OUT" | wc -l)" = 4 ] && ok "projects: header + 3 roots" || not_ok "projects: header + 3 roots" "$OUT"
t "projects --json" "$DECREE" --store "$ST" -C a --json projects
J=$OUT
[ "$(printf '%s' "$J" | proj "$SCRATCH/a" checkpoint_count)" = 2 ] && ok "json: a has 2" || not_ok "json: a has 2" "$J"
[ "$(printf '%s' "$J" | proj "$SCRATCH/b" checkpoint_count)" = 1 ] && ok "json: b has 1" || not_ok "json: b has 1" "$J"
[ "$(printf '%s' "$J" | proj "$SCRATCH/b" exists)" = True ] && ok "json: b exists" || not_ok "json: b exists" "$J"
[ "$(printf '%s' "$J" | proj "$SCRATCH/a" current)" = True ] && ok "json: a is current" || not_ok "json: a is current" "$J"
[ "$(printf '%s' "$J" | proj "$SCRATCH/b" current)" = False ] && ok "json: b is not current" || not_ok "json: b is not current" "$J"
case "$(printf '%s' "$J" | proj "$SCRATCH/a" last_checkpoint_at)" in
[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z) ok "json: last checkpoint time is RFC 3339 UTC" ;;
*) not_ok "json: last checkpoint time is RFC 3339 UTC" "$J" ;; esac
# bytes: the root's own files in the store (records, caches, history)
want=$(find "$ST/roots/$(printf '%s' "$J" | proj "$SCRATCH/a" key)" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
[ "$(printf '%s' "$J" | proj "$SCRATCH/a" bytes)" = "$want" ] && ok "json: bytes = the root's files in the store ($want)" ||
	not_ok "json: bytes = the root's files in the store" "got $(printf '%s' "$J" | proj "$SCRATCH/a" bytes), want $want"
same "json: the store path" "$(printf '%s' "$J" | py 'import json,sys; print(json.load(sys.stdin)["store"])')" "$ST"
same "json: a is no workspace" "$(printf '%s' "$J" | proj "$SCRATCH/a" workspace)" None
# a workspace is a root of the store too: listed as one
t "b: workspace create wb" "$DECREE" -q --store "$ST" -C b workspace create wb
WB=$OUT
t "projects --json with a workspace" "$DECREE" --store "$ST" -C a --json projects
same "json: the workspace's root names it" "$(printf '%s' "$OUT" | proj "$WB" workspace)" wb
same "json: b is still no workspace" "$(printf '%s' "$OUT" | proj "$SCRATCH/b" workspace)" None
t "projects (human)" "$DECREE" --store "$ST" -C a projects
case "$OUT" in *"exists   $WB  (workspace wb)"*) ok "human: the workspace's line says so" ;;
*) not_ok "human: the workspace's line says so" "$OUT" ;; esac
t "b: workspace discard wb" "$DECREE" -q --store "$ST" -C b workspace discard wb
t "projects --json after the discard" "$DECREE" --store "$ST" -C a --json projects
same "json: the discarded workspace's root is still named (its checkpoints stay until gc)" "$(printf '%s' "$OUT" | proj "$WB" workspace)" wb

# ===== 2. a moved project, external store: -C OLD, then projects move =========
(cd a && "$DECREE" --store "$ST" checkpoint restore default:one >/dev/null) && ok "a: restore one (undoable)" || not_ok "a: restore one"
same "a: restored" "$(cat a/f.txt)" "a1"
mv a a2
t_out "missing" "projects: a is missing after mv" sh -c "'$DECREE' --store '$ST' --json projects | python3 -c 'import json,sys; print([\"exists\",\"missing\"][not [p for p in json.load(sys.stdin)[\"projects\"] if p[\"root\"]==\"$SCRATCH/a\"][0][\"exists\"]])'"
t_match "*one*two*pre-restore*" "list -C a (gone) works" "$DECREE" --store "$ST" -C a checkpoint list
t_match '*"has_changes":null*' "list --json -C a: has_changes null (no tree)" "$DECREE" --store "$ST" -C a --json checkpoint list
t_err "decree: cannot use 'a' as project root: it does not exist*" "restore -C a (gone): clear error" 1 \
	"$DECREE" --store "$ST" -C a checkpoint restore default:two
t_err "decree: project root '*/nowhere' does not exist and store '$ST' has no checkpoints for it*" \
	"list -C of an unknown missing root" 1 "$DECREE" --store "$ST" -C nowhere checkpoint list
t_err "decree: project root 'gone' does not exist*" "list -C of a missing root without --store" 1 \
	"$DECREE" -C gone checkpoint list
t_match "*kept*" "gc -C a (gone) works" "$DECREE" --store "$ST" -C a gc
t "show -C a (gone) after gc: its objects were kept" "$DECREE" --store "$ST" -C a checkpoint show "$(cd "$SCRATCH" && "$DECREE" --store "$ST" -C a --json checkpoint list | py 'import json,sys; print(json.load(sys.stdin)["checkpoints"][0]["id"])')"
# errors of move
t_err "decree: store '$ST' has no checkpoints for '$SCRATCH/ax' (did you mean '$SCRATCH/a'?)" \
	"move: unknown OLD names the closest root" 1 "$DECREE" --store "$ST" projects move ax a2
t_err "decree: cannot move checkpoints to 'a3': not a directory" "move: NEW must exist" 1 \
	"$DECREE" --store "$ST" projects move a a3
touch afile
t_err "decree: cannot move checkpoints to 'afile': not a directory" "move: NEW must be a directory" 1 \
	"$DECREE" --store "$ST" projects move a afile
t_err "decree: store '$ST' has checkpoints or undo history for '$SCRATCH/b' already" \
	"move: NEW with checkpoints of its own is refused" 1 "$DECREE" --store "$ST" projects move a b
t_err "decree: OLD '~/a' starts with '~'*" "move: an unexpanded ~ is refused" 2 "$DECREE" --store "$ST" projects move '~/a' a2
t_err "decree: usage: decree projects move OLD NEW*" "move: needs two paths" 2 "$DECREE" --store "$ST" projects move a
t_exit 2 "projects: unknown subcommand" "$DECREE" --store "$ST" projects frob
# the store lock
if command -v flock >/dev/null; then
	t_err "decree: *lock*" "move: a locked store is reported" 1 \
		flock "$ST/lock" env DECREE_LOCK_TIMEOUT_MS=0 "$DECREE" --store "$ST" projects move a a2
else ok "# SKIP flock not installed"; fi
before=$(nroots "$ST")
t_out "moved the checkpoints of 'a/' to 'a2'" "move a/ a2 (relative, normalised)" "$DECREE" --store "$ST" projects move a/ a2
same "the store still has $before roots" "$(nroots "$ST")" "$before"
t_err "decree: store '$ST' has no checkpoints for '$SCRATCH/a'*" "nothing is keyed to the old path" 1 \
	"$DECREE" --store "$ST" projects move a a2
t_match "*one*two*pre-restore*" "list at the new path" "$DECREE" --store "$ST" -C a2 checkpoint list
t "undo at the new path (history followed)" "$DECREE" --store "$ST" -C a2 undo
same "undo brought a2 back" "$(cat a2/f.txt)" "a2"
t "restore at the new path" "$DECREE" --store "$ST" -C a2 checkpoint restore default:one
same "restored at a2" "$(cat a2/f.txt)" "a1"
t "gc after the move" "$DECREE" --store "$ST" -C a2 gc
t "fsck after the move" "$DECREE" --store "$ST" -C a2 fsck
t "restore two after gc" "$DECREE" --store "$ST" -C a2 checkpoint restore default:two
same "two at a2" "$(cat a2/f.txt)" "a2"
grep -rl "^$SCRATCH/a\$" "$ST"/roots/*/ROOT >/dev/null && not_ok "no ROOT names the old path" || ok "no ROOT names the old path"
ls "$ST"/roots/*/ROOT.next >/dev/null 2>&1 && not_ok "no ROOT.next left" || ok "no ROOT.next left"
# a new root with only caches (a failed first use) is replaced
mkdir -p d && echo d >d/f.txt
mv c c2
mkdir -p "$ST/roots/x" && rmdir "$ST/roots/x"
t "projects move c c2" "$DECREE" --store "$ST" -C c2 projects move c c2
t_match "*c2*" "projects lists c2" "$DECREE" --store "$ST" projects
t "drop --all -C of a gone root" sh -c "mv c2 c3 && '$DECREE' --store '$ST' -C c2 checkpoint drop --all"
t_out "0" "dropped: c2 has no checkpoints" sh -c "'$DECREE' --store '$ST' --json projects | python3 -c 'import json,sys; print([p for p in json.load(sys.stdin)[\"projects\"] if p[\"root\"]==\"$SCRATCH/c2\"][0][\"checkpoint_count\"])'"

# ===== 3. an in-tree store follows its project ================================
mkdir -p p && echo 1 >p/x
(cd p && "$DECREE" checkpoint create -m one >/dev/null && echo 2 >x &&
	"$DECREE" checkpoint create -m two >/dev/null &&
	"$DECREE" checkpoint restore default:one >/dev/null) && ok "p: two checkpoints and a restore" || not_ok "p: set up"
mv p q
cd q || exit 1
t_match "*one*two*" "after mv p q: list in q" "$DECREE" checkpoint list
t_match "*missing*$SCRATCH/p*" "projects before any write: the old root, missing, current" "$DECREE" projects
t "undo in q (the first locked command re-attaches)" "$DECREE" undo
same "undo worked" "$(cat x)" "2"
t_match "*exists*$SCRATCH/q" "projects: q now" "$DECREE" projects
same "one attachment" "$(nroots .decree/store)" "1"
t "fsck in q" "$DECREE" fsck
t "restore in q" "$DECREE" checkpoint restore default:one
same "restored in q" "$(cat x)" "1"
cd "$SCRATCH" || exit 1
# a copy: its store follows the copy, the original keeps its own
cp -a q r
t_match "*one*two*" "cp -a q r: list in r" "$DECREE" -C r checkpoint list
t "checkpoint in r" "$DECREE" -C r checkpoint create -m three
t_match "*exists*$SCRATCH/r" "r's store serves r" "$DECREE" -C r projects
t_match "*exists*$SCRATCH/q" "q's store still serves q" "$DECREE" -C q projects
t_match "*one*two*" "q keeps its checkpoints" "$DECREE" -C q checkpoint list
# a store that merely also serves another project (with a store of its
# own) is not a copy: nothing follows
mkdir -p x/.decree y && echo x >x/f && echo y >y/f
t "y: a checkpoint in its own store" "$DECREE" -C y checkpoint create
t "y: a checkpoint in x's store" "$DECREE" -C y --store x/.decree/store checkpoint create -m in-x
t_out "" "x lists nothing of y's" "$DECREE" -C x checkpoint list
t "x: its first checkpoint" "$DECREE" -C x checkpoint create
t_match "*in-x*" "y's checkpoint stays y's in x's store" "$DECREE" -C y --store x/.decree/store checkpoint list

# ===== 4. the store's .gitignore from the very first checkpoint ===============
if command -v git >/dev/null; then
	mkdir g && cd g && git init -q . && echo a >a.txt
	t "first checkpoint in a git repo, no decree init" "$DECREE" checkpoint create
	[ -f .decree/store/.gitignore ] && ok ".decree/store/.gitignore exists" || not_ok ".decree/store/.gitignore exists"
	git add -A
	same "git add -A stages nothing under .decree/store" "$(git status --porcelain | grep -c '\.decree/store')" 0
	cd "$SCRATCH" || exit 1
else ok "# SKIP git not installed"; fi
done_testing
