#!/bin/bash
# special_files.sh - FIFOs, sockets, devices and directories where decree
# expects files (DESIGN "Special files never hang or break a scan"): they
# are never opened for reading, a directory named like a rules file is
# walked but not read as rules, a special file named .decree/config.yml is
# a clear error, and restore replaces a directory or special file standing
# where the checkpoint has a file, with --dry-run saying so and agreeing
# with the real run.  Every command runs under `timeout`, so a hang fails
# the test instead of hanging the suite.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

TMO=30
D() { timeout "$TMO" "$DECREE" "$@"; }
same() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "$(diff <(printf '%s\n' "$3") <(printf '%s\n' "$2") | head -20)"; fi; }
files_of() { D --json checkpoint show "$1" | python3 -c 'import json,sys; print("\n".join(f["path"] for f in json.load(sys.stdin)["files"]))'; }
mksock() { python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$1"; }

# ===== 1. rules files that are not files ======================================
P=$SCRATCH/p1
mkdir -p "$P/sub" && cd "$P" || exit 1
echo a >a.txt
echo s >sub/s.txt
mkfifo .gitignore sub/.gitignore
t_match '[0-9a-f]*' "create with FIFOs named .gitignore (root and below)" D checkpoint create
A=$OUT
same "the FIFOs are not recorded, the files are" "$(files_of "$A")" "a.txt
sub/s.txt"
rm .gitignore sub/.gitignore
mkfifo .decreeignore
echo b >b.txt
t_match '*' "list (it scans for has_changes) with a FIFO named .decreeignore" D checkpoint list
t_match '[0-9a-f]*' "create with a FIFO named .decreeignore" D checkpoint create
t_match '*' "diff with a FIFO named .decreeignore" D checkpoint diff "$A"
rm .decreeignore
mkdir .gitignore .decreeignore
echo inner >.gitignore/inner.txt
echo rule >.decreeignore/x
t_match '[0-9a-f]*' "create with directories named .gitignore and .decreeignore" D checkpoint create
same "the directories are walked like any other" "$(files_of "$OUT")" ".decreeignore/x
.gitignore/inner.txt
a.txt
b.txt
sub/s.txt"
rm -r .gitignore .decreeignore
printf '*.log\n' >.gitignore
mkfifo sub/.decreeignore
echo l >x.log
t_match '[0-9a-f]*' "a real .gitignore still works next to a FIFO .decreeignore" D checkpoint create
same "x.log is ignored" "$(files_of "$OUT")" ".gitignore
a.txt
b.txt
sub/s.txt"
rm sub/.decreeignore

# ===== 2. .decree/config.yml that is not a file ===============================
mkdir -p .decree
mkfifo .decree/config.yml
t_err "decree: '$P/.decree/config.yml' is not a regular file" \
	"create: a FIFO config.yml is a clear error" 1 D checkpoint create
t_err "decree: '$P/.decree/config.yml' is not a regular file" \
	"list: the same" 1 D checkpoint list
rm .decree/config.yml
mkdir .decree/config.yml
t_err "decree: '$P/.decree/config.yml' is not a regular file" \
	"a directory config.yml is a clear error too" 1 D checkpoint list
rmdir .decree/config.yml
printf 'max_retries: 2\n' >"$SCRATCH/real-config.yml"
ln -s "$SCRATCH/real-config.yml" .decree/config.yml
t_match '*' "a symlink to a regular config.yml is read" D checkpoint list
rm -r .decree
P=$SCRATCH/prun
mkdir -p "$P" && cd "$P" || exit 1
t "decree init" D init
mv .decree/config.yml .decree/config.yml.orig && mkfifo .decree/config.yml
t_err "decree: '$P/.decree/config.yml' is not a regular file" \
	"run: a FIFO config.yml is a clear error, no hang" 1 D run -m x -p hello
t_err "decree: '$P/.decree/config.yml' is not a regular file" \
	"process: the same" 1 D process
rm .decree/config.yml && mv .decree/config.yml.orig .decree/config.yml

# ===== 3. restore over directories and special files ==========================
P=$SCRATCH/p3
mkdir -p "$P" && cd "$P" || exit 1
printf '*.log\n' >.gitignore
echo x >x
ln -s x lnk
C=$(D checkpoint create)
check_x() { # name
	if [ -f x ] && [ ! -L x ] && [ "$(cat x)" = x ]; then ok "$1"; else not_ok "$1" "$(ls -la x 2>&1)"; fi
}
for kind in fifo socket dir emptydir; do
	rm -rf x
	case $kind in
	fifo) mkfifo x ;;
	socket) mksock x ;;
	dir) mkdir x && echo in >x/in.txt ;;
	emptydir) mkdir x ;;
	esac
	want="replace x"
	[ $kind = dir ] && want="replace x
delete x/in.txt"
	t_out "$want
dry run: would create 0, restore 1, delete $([ $kind = dir ] && echo 1 || echo 0) file(s)" \
		"$kind where the checkpoint has a file: dry run says replace" D checkpoint restore "$C" --dry-run
	t_match "replace x*restore: created 0, restored 1*" \
		"$kind: the real run replaces it" D checkpoint restore -v "$C"
	check_x "$kind: x is the checkpoint's file again"
done
# a symlink in the checkpoint, a FIFO in its place
rm lnk && mkfifo lnk
t_match '*"action":"replace"*' "FIFO where the checkpoint has a symlink: dry run --json says replace" \
	D --json checkpoint restore "$C" --dry-run
t_match '*replace lnk*' "and the real run replaces it" D checkpoint restore -v "$C"
same "lnk is the symlink again" "$(readlink lnk)" "x"
# a device, where the system lets us make one
rm x
if mknod x c 1 3 2>/dev/null; then
	t_match '*replace x*' "character device where the checkpoint has a file: replaced" D checkpoint restore -v "$C"
	check_x "device: x is the checkpoint's file again"
else
	rm -f x && echo x >x
	ok "# SKIP mknod not permitted"
	ok "# SKIP mknod not permitted"
fi
# a directory the restore cannot empty (an ignored file inside): both the
# dry run and the real run refuse it with the same message, nothing written
rm x && mkdir x && echo keep >x/keep.log
t_err "decree: cannot write 'x': a non-empty directory is in the way" \
	"dry run refuses the non-empty directory in the way" 1 D checkpoint restore "$C" --dry-run
dry_err=$ERR
t_err "decree: cannot write 'x': a non-empty directory is in the way" \
	"the real run refuses it the same way" 1 D checkpoint restore "$C"
same "dry run and real run say the same" "$ERR" "$dry_err"
same "nothing was written" "$(cat x/keep.log)" "keep"
# a FIFO where the checkpoint needs a directory
rm -r x && mkdir d && echo f >d/f && C2=$(D checkpoint create) && rm -r d && mkfifo d
t_err "decree: cannot create 'd/f': 'd' is in the way" \
	"dry run refuses a FIFO where a directory must be" 1 D checkpoint restore "$C2" --dry-run
t_err "decree: cannot create 'd/f': 'd' is in the way" \
	"the real run refuses it the same way" 1 D checkpoint restore "$C2"
[ -p d ] && ok "the FIFO is left alone" || not_ok "the FIFO is left alone"
rm d

# ===== 4. undo after replacing a FIFO =========================================
rm -rf x && mkfifo x
t_match '*replace x*' "restore replaces a FIFO" D checkpoint restore -v "$C"
t_match '*delete x*' "undo removes the restored file (a FIFO holds nothing to bring back)" D undo -v
[ -e x ] && not_ok "x is gone after the undo" || ok "x is gone after the undo"

done_testing
