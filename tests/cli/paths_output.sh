#!/bin/bash
# paths_output.sh - names on the terminal and paths on the command line.
#  1. Paths, sessions, labels and messages with ESC, CR, newlines and other
#     control bytes (or bytes that are not UTF-8) are printed C-quoted in
#     double quotes, as git quotes paths; a newline never splits a plan
#     line; error messages escape the same bytes; JSON is unchanged.
#  2. A 4.8 KB path does not push the reason out of an error message.
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

# ===== 1. quoting =============================================================
P=$SCRATCH/p1
mkdir -p "$P" && cd "$P" || exit 1
printf 1 >"a${ESC}[31mred"
printf 2 >"new
line"
printf 3 >"$(printf 'cr\rover')"
printf 4 >"$(printf 'tab\there')"
printf 5 >'q"uote'
printf 6 >'back\slash'
printf 7 >"$(printf 'bad\377byte')"
printf 8 >'café.txt'
printf 9 >plain.txt
label="lab${ESC}]0;pwned$(printf '\007')el"
t_match '[0-9a-f]*' "create with a hostile label, message and session" \
	D checkpoint create --label "$label" --message "$(printf 'msg\rover')" --session "s${ESC}x"
C=$OUT
D checkpoint list --session "s${ESC}x" >"$SCRATCH/list.out" 2>&1
no_ctl "list: no raw control byte" "$SCRATCH/list.out"
case "$(cat "$SCRATCH/list.out")" in
*'"s\033x"'*'["lab\033]0;pwned\ael"]  "msg\rover"') ok "list: session, label and message quoted" ;;
*) not_ok "list: session, label and message quoted" "$(cat -A "$SCRATCH/list.out")" ;;
esac
D checkpoint show "$C" >"$SCRATCH/show.out" 2>&1
no_ctl "show: no raw control byte" "$SCRATCH/show.out"
same "show: the paths, quoted as git quotes them (UTF-8 kept)" \
	"$(sed -n 's/^644 *[0-9a-f]* *[0-9]* //p' "$SCRATCH/show.out")" \
	'"a\033[31mred"
"back\\slash"
"bad\377byte"
café.txt
"cr\rover"
"new\nline"
plain.txt
"q\"uote"
"tab\there"'
same "show: label and message lines" "$(grep -E '^(label|message|session) ' "$SCRATCH/show.out")" \
	'session    "s\033x"
message    "msg\rover"
label      "lab\033]0;pwned\ael"'
D rollback --session "s${ESC}x" >"$SCRATCH/rb.out" 2>&1
no_ctl "rollback list: no raw control byte" "$SCRATCH/rb.out"
rm -f -- * "$(printf 'cr\rover')" "$(printf 'tab\there')"
D checkpoint restore "$C" --dry-run >"$SCRATCH/plan.out" 2>&1
no_ctl "restore --dry-run: no raw control byte" "$SCRATCH/plan.out"
same "restore --dry-run: one line per path, the newline escaped" "$(grep -c '^create ' "$SCRATCH/plan.out")" 9
case "$(cat "$SCRATCH/plan.out")" in
*'create "new\nline"'*) ok "the plan line of new<LF>line" ;;
*) not_ok "the plan line of new<LF>line" "$(cat -A "$SCRATCH/plan.out")" ;;
esac
t "restore --json --dry-run" D --json checkpoint restore "$C" --dry-run
same "JSON keeps the exact names" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sorted(c["path"] for c in d["changes"])[0] == "a\x1b[31mred", any(c["path"] == "new\nline" for c in d["changes"]))')" "True True"
D checkpoint restore "$C" >"$SCRATCH/restore.out" 2>&1
no_ctl "restore: no raw control byte" "$SCRATCH/restore.out"
[ -f "$(printf 'cr\rover')" ] && ok "the files are back" || not_ok "the files are back"
printf 'x' >>"a${ESC}[31mred"
D checkpoint diff "$C" --name-status >"$SCRATCH/ns.out" 2>&1
same "diff --name-status quotes" "$(cat "$SCRATCH/ns.out")" 'M	"a\033[31mred"'
D checkpoint diff "$C" --stat >"$SCRATCH/stat.out" 2>&1
no_ctl "diff --stat: no raw control byte" "$SCRATCH/stat.out"
D checkpoint restore "$C" -- "nope${ESC}[2J" >"$SCRATCH/err.out" 2>&1
no_ctl "an error message naming a hostile path: no raw control byte" "$SCRATCH/err.out"
same "the error message escapes it" "$(cat "$SCRATCH/err.out")" \
	"decree: path 'nope\\033[2J' is neither in the checkpoint nor in the working tree"
# apply: the check lines and the progress lines
printf 'diff --git "a/e\\033x" "b/e\\033x"\nnew file mode 100644\n--- /dev/null\n+++ "b/e\\033x"\n@@ -0,0 +1 @@\n+e\n' >"$SCRATCH/esc.diff"
D apply --check "$SCRATCH/esc.diff" >"$SCRATCH/apply.out" 2>&1
no_ctl "apply --check: no raw control byte" "$SCRATCH/apply.out"
case "$(cat "$SCRATCH/apply.out")" in *'create "e\033x"'*) ok "apply --check quotes the path" ;;
*) not_ok "apply --check quotes the path" "$(cat -A "$SCRATCH/apply.out")" ;; esac
D apply "$SCRATCH/esc.diff" >"$SCRATCH/apply2.out" 2>&1
no_ctl "apply: no raw control byte" "$SCRATCH/apply2.out"

# ===== 2. a 4.8 KB path keeps the reason ======================================
LONG=$(python3 -c 'print("/".join(["d" * 200] * 24))')
t_err "decree: path 'dddd*...*dddd' is neither in the checkpoint nor in the working tree" \
	"restore -- <4.8 KB path>: the reason survives" 1 D checkpoint restore "$C" -- "$LONG"
[ ${#ERR} -lt 1100 ] && ok "the message is shortened (${#ERR} bytes)" || not_ok "the message is shortened" "${#ERR} bytes"
t_err "decree: invalid checkpoint reference 'dddd*...*dddd' (use an id*" \
	"show <4.8 KB ref>: the reason survives" 1 D checkpoint show "$LONG"

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
# rollback N -- PATH: the restore above left a pre-restore capture (u1);
# the original checkpoint is still number 1
t_match "*u1 *pre-restore*" "rollback lists the capture as u1" D rollback
t_match '*restored 1*' "rollback 1 -- deep/t from sub/" D rollback 1 -- deep/t
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
