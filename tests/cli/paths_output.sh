#!/bin/bash
# paths_output.sh - names on the terminal and paths on the command line.
#  3. Paths after "--" are relative to the current directory (as in git;
#     -C makes the root the current directory), for restore, diff and
#     rollback; a path outside the root is a clear error.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

D() { "$DECREE" "$@"; }
same() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "$(diff <(printf '%s\n' "$3") <(printf '%s\n' "$2") | head -20)"; fi; }
# no_ctl NAME FILE: ok if FILE holds no byte below 0x20 other than \n, nor DEL
no_ctl() {
	if LC_ALL=C grep -q "$(printf '[\001-\011\013-\037\177]')" "$2"; then
		not_ok "$1" "$(cat -A "$2" | head -10)"
	else ok "$1"; fi
}
ESC=$(printf '\033')

# ===== 3. paths relative to the current directory =============================
P=$SCRATCH/p3
mkdir -p "$P/sub/deep" "$P/.decree" && cd "$P" || exit 1
echo root >README && echo sub >sub/README && echo deep >sub/deep/t
C=$(D checkpoint create)
change() { echo changed >README; echo changed >sub/README; echo changed >sub/deep/t; }
change
cd sub || exit 1
t_out "restore sub/README
dry run: would create 0, restore 1, delete 0 file(s)" \
	"from sub/: restore -- README plans sub/README" D checkpoint restore "$C" --dry-run -- README
t_match '*restored 1*' "from sub/: restore -- README" D checkpoint restore "$C" -- README
same "sub/README is restored" "$(cat README)" sub
same "the root's README is not" "$(cat ../README)" changed
t_out "restore README
restore sub/deep/t
dry run: would create 0, restore 2, delete 0 file(s)" \
	"../README and deep/ (trailing slash)" D checkpoint restore "$C" --dry-run -- ../README deep/
t_out "restore sub/deep/t
dry run: would create 0, restore 1, delete 0 file(s)" \
	"-- . means this directory" D checkpoint restore "$C" --dry-run -- .
t_out "restore README
dry run: would create 0, restore 1, delete 0 file(s)" \
	"an absolute path inside the root" D checkpoint restore "$C" --dry-run -- "$P/README"
t_out "restore sub/deep/t
dry run: would create 0, restore 1, delete 0 file(s)" \
	"./deep//t and deep/../deep/t" D checkpoint restore "$C" --dry-run -- ./deep//t deep/../deep/t
t_err "decree: path '../../x' is outside the project root '$P'" \
	"a path above the root is a clear error" 1 D checkpoint restore "$C" --dry-run -- ../../x
t_err "decree: path '/etc/passwd' is outside the project root '$P'" \
	"an absolute path elsewhere too" 1 D checkpoint restore "$C" --dry-run -- /etc/passwd
t_out "M	sub/deep/t" "diff -- deep: relative to sub/" D checkpoint diff "$C" --name-status -- deep
t_out "M	README" "diff -- ../README" D checkpoint diff "$C" --name-status -- ../README
t_err "decree: path '../..' is outside*" "diff refuses a path outside" 1 D checkpoint diff "$C" -- ../..
# rollback N -- PATH: number 1 is the newest (the pre-restore capture), the
# original checkpoint is the oldest
n=$(D rollback | grep -c differ)
t_match '*restored 1*' "rollback $n -- deep/t from sub/" D rollback "$n" -- deep/t
same "sub/deep/t is restored" "$(cat deep/t)" deep
same "the root's README still is not" "$(cat ../README)" changed
cd "$P" || exit 1
t_out "restore README
dry run: would create 0, restore 1, delete 0 file(s)" \
	"at the root: -- README is the root's" D checkpoint restore "$C" --dry-run -- README
cd "$SCRATCH" || exit 1
t_out "restore README
dry run: would create 0, restore 1, delete 0 file(s)" \
	"-C ROOT: paths are relative to the root" D -C "$P" checkpoint restore "$C" --dry-run -- README

done_testing
