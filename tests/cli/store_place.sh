#!/bin/bash
# store_place.sh - where the store may live (DESIGN "The store is never
# part of the tree"): a store that is the project root or one of its
# ancestors is refused, whichever way it is named (--store, DECREE_STORE,
# store: in config.yml), and nothing is created; a store inside the tree is
# never captured and never restored; a store inside the project carries its
# own .gitignore from the first checkpoint, so `git add -A` never stages it.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

same() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "$(diff <(printf '%s\n' "$3") <(printf '%s\n' "$2") | head -20)"; fi; }
listing() { (cd "$1" && find . | LC_ALL=C sort); }
files_of() { "$DECREE" "${@:2}" --json checkpoint show "$1" | python3 -c 'import json,sys; print("\n".join(f["path"] for f in json.load(sys.stdin)["files"]))'; }

# ===== 1. at or above the root: refused, nothing created ======================
P=$SCRATCH/p1
mkdir -p "$P/sub" && cd "$P" || exit 1
echo a >a.txt
before=$(listing "$P")
t_err "decree: cannot use '$P' as the store: it is the project root '$P'" \
	"--store . is refused" 1 "$DECREE" --store . checkpoint create
t_err "decree: cannot use '$SCRATCH' as the store: it contains the project root '$P'" \
	"--store .. (an ancestor) is refused" 1 "$DECREE" --store .. checkpoint create
t_err "decree: cannot use '/' as the store: it contains*" \
	"--store / is refused" 1 "$DECREE" --store / checkpoint create
t_err "decree: cannot use '$P' as the store: it is*" \
	"--store sub/.. is refused" 1 "$DECREE" --store sub/.. checkpoint create
ln -s "$P" "$SCRATCH/rootlink"
t_err "decree: cannot use '$P' as the store: it is*" \
	"a symlink to the root is refused" 1 "$DECREE" --store "$SCRATCH/rootlink" checkpoint create
t_err "decree: cannot use '$P' as the store: it is*" \
	"DECREE_STORE=. is refused" 1 env DECREE_STORE=. "$DECREE" checkpoint create
t_err "decree: cannot use '$P' as the store: it is*" \
	"list refuses it too" 1 env DECREE_STORE=. "$DECREE" checkpoint list
t_err "decree: cannot use '$P' as the store: it is*" \
	"-C with --store of the root is refused" 1 "$DECREE" -C "$P" --store "$P" checkpoint create
same "nothing was created by the refusals" "$(listing "$P")" "$before"
mkdir .decree
printf 'store: .\n' >.decree/config.yml
t_err "decree: cannot use '$P' as the store: it is*" \
	"store: . in config.yml is refused" 1 "$DECREE" checkpoint create
printf 'checkpoint:\n  store: sub/..\n' >.decree/config.yml
t_err "decree: cannot use '$P' as the store: it is*" \
	"checkpoint.store: sub/.. is refused" 1 "$DECREE" checkpoint create
printf 'store: ..\n' >.decree/config.yml
t_err "decree: cannot use '$SCRATCH' as the store: it contains*" \
	"store: .. is refused" 1 "$DECREE" checkpoint create
from_sub() { (cd sub && "$DECREE" checkpoint create); }
t_err "decree: cannot use '$SCRATCH' as the store: it contains*" \
	"refused from a subdirectory as well" 1 from_sub
rm -r .decree
same "nothing was created by the config refusals" "$(listing "$P")" "$before"

# ===== 2. inside the tree: never captured, never restored =====================
P=$SCRATCH/p2
mkdir -p "$P/var" "$P/real" && cd "$P" || exit 1
echo a >a.txt
mkdir .decree && printf 'store: var/x/../ckpt\n' >.decree/config.yml
t_match '[0-9a-f]*' "a store at var/ckpt (named with ..) is created" "$DECREE" checkpoint create
A=$OUT
check_dir() { if [ -d "$1" ]; then ok "$2"; else not_ok "$2" "missing $1"; fi; }
check_dir "$P/var/ckpt/packs" "the store lives at the canonical path"
if [ -e "$P/var/x" ]; then not_ok "no stray directory from the .. path"; else ok "no stray directory from the .. path"; fi
same "the store is not in the checkpoint" "$(files_of "$A")" "a.txt"
echo b >b.txt
t_match '[0-9a-f]*' "second checkpoint (the store exists)" "$DECREE" checkpoint create
same "still not in the checkpoint" "$(files_of "$OUT")" "a.txt
b.txt"
store_before=$(cd var/ckpt && find . -path ./roots -prune -o -print | LC_ALL=C sort)
t_match '*restore*' "restore the first checkpoint" "$DECREE" checkpoint restore "$A"
[ -e b.txt ] && not_ok "b.txt deleted by the restore" || ok "b.txt deleted by the restore"
same "the store's files are untouched by the restore" \
	"$(cd var/ckpt && find . -path ./roots -prune -o -print | LC_ALL=C sort)" "$store_before"
t_match '*' "the store still works after the restore" "$DECREE" checkpoint list
case "$OUT" in *pre-restore*) ok "the pre-restore capture is listed" ;; *) not_ok "the pre-restore capture is listed" "$OUT" ;; esac
# through a symlink inside the tree
P=$SCRATCH/p2b
mkdir -p "$P/real" && cd "$P" || exit 1
echo a >a.txt
ln -s real ln
t_match '[0-9a-f]*' "a store named through a symlink (ln/st)" "$DECREE" --store ln/st checkpoint create
check_dir "$P/real/st/packs" "the store is at the symlink's target"
t_match '[0-9a-f]*' "again, the store exists now" "$DECREE" --store ln/st checkpoint create
same "real/st is not in the checkpoint" "$(files_of "$OUT" --store ln/st)" "a.txt
ln"

# ===== 3. the store's .gitignore keeps it out of git ==========================
if command -v git >/dev/null; then
	P=$SCRATCH/p3
	mkdir -p "$P" && cd "$P" || exit 1
	git init -q . && echo a >a.txt
	t_match '[0-9a-f]*' "first checkpoint without decree init" "$DECREE" checkpoint create
	same "the default store has its .gitignore" "$(cat .decree/store/.gitignore)" "# decree store: never commit it
*"
	git add -A
	same "git add -A stages nothing of the store" "$(git status --porcelain)" "A  a.txt"
	# a store elsewhere inside the tree
	mkdir -p data
	t_match '[0-9a-f]*' "checkpoint with --store data/ckpt" "$DECREE" --store data/ckpt checkpoint create
	git add -A
	same "git add -A stages nothing of data/ckpt" "$(git status --porcelain)" "A  a.txt"
	if ls -a data/ckpt | grep -q '\.gitignore\.tmp'; then not_ok "no temp file left"; else ok "no temp file left"; fi
	# a store created by an older version (no .gitignore) gets one
	rm .decree/store/.gitignore
	echo c >c.txt
	t_match '[0-9a-f]*' "a checkpoint into an existing store" "$DECREE" checkpoint create
	git add -A
	same "its .gitignore is back" "$(git status --porcelain)" "A  a.txt
A  c.txt"
	# a store outside the project gets none
	t_match '[0-9a-f]*' "a store outside the project" "$DECREE" --store "$SCRATCH/outside" checkpoint create
	[ -e "$SCRATCH/outside/.gitignore" ] && not_ok "no .gitignore outside the project" || ok "no .gitignore outside the project"
else
	ok "# SKIP git not installed"
fi

# ===== 4. fsck of something that is not a store ===============================
P=$SCRATCH/p4
mkdir -p "$P/notastore" && cd "$P" || exit 1
echo x >notastore/file
t_err "decree: '$P/notastore' is not a decree store (it has no DECREE-STORE marker)" \
	"fsck of a directory that is not a store: exit 1, says so" 1 "$DECREE" --store notastore fsck
case "$OUT" in *"store ok"*) not_ok "no 'store ok' for it" "$OUT" ;; *) ok "no 'store ok' for it" ;; esac
t_err "decree: no decree store at '$P/missing'" \
	"fsck of a missing store: exit 1, says so" 1 "$DECREE" --store missing fsck
[ -e missing ] && not_ok "fsck created nothing" || ok "fsck created nothing"
t_err "decree: no decree store at '$P/.decree/store'" \
	"fsck before the first checkpoint: no store yet" 1 "$DECREE" fsck
t_match '[0-9a-f]*' "a checkpoint makes the store" "$DECREE" checkpoint create
t_out "store ok" "then fsck says store ok" "$DECREE" fsck

done_testing
