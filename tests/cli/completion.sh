#!/bin/bash
# completion.sh - the shell completions of scripts/completions/ (bash,
# zsh, fish) against the program they complete, so that they cannot
# drift from it:
#  - the commands of `decree --help` and the subcommands of `decree
#    checkpoint|hook|projects|workspace --help` are exactly what each shell
#    offers;
#  - every option of every command, as its --help text names it and as
#    its option table in src/cli/*.c declares it, is offered for that
#    command (bash, fish: by completing "decree CMD -"; zsh: in the
#    command's function _decree_CMD), and bash offers no option the
#    command does not have;
#  - real completions: "decree chec" -> checkpoint, "decree checkpoint re"
#    -> restore, checkpoint REFs and sessions from the store, workspace
#    names, run ids, routine= names, directories; and completing where
#    there is no store creates none.
# bash is always tested; zsh and fish when they are installed (else
# skipped with a note).  tests/cli/install.sh tests the installed copies.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE
export LC_ALL=C
COMP=${DECREE_TOP:?}/scripts/completions
SRC=$DECREE_TOP/src/cli

# the program under its own name, first on PATH (the completions run
# `decree --json checkpoint list`)
mkdir -p "$SCRATCH/bin"
ln -s "$(readlink -f "$DECREE")" "$SCRATCH/bin/decree"
export PATH="$SCRATCH/bin:$PATH"

words() { tr ' ' '\n' | sed '/^$/d' | sort -u; }

# ===== what the program says it has ==========================================
# commands: the lines between "commands:" and the next blank line
COMMANDS=$("$DECREE" --help | sed -n '/^commands:/,/^$/{/^  [a-z]/{s/^  \([a-z-]*\).*/\1/;p}}' | sort -u)
# subcommands: "decree CMD SUB" in the usage lines of CMD --help
subs_of() { "$DECREE" "$1" --help | sed -n "s/^\(usage:\)\{0,1\} *decree $1 \([a-z][a-z-]*\).*/\2/p" | sort -u; }
CK_SUBS=$(subs_of checkpoint)
HOOK_SUBS=$(subs_of hook)
PROJ_SUBS=$(subs_of projects)
WS_SUBS=$(subs_of workspace)
check "decree --help lists commands ($(echo $COMMANDS | wc -w))" test "$(echo $COMMANDS | wc -w)" -ge 18
check "checkpoint --help lists subcommands ($(echo $CK_SUBS))" test "$(echo $CK_SUBS | wc -w)" -ge 8
same "hook --help: install, status, uninstall" "$(echo $HOOK_SUBS)" "install status uninstall"
same "projects --help: move" "$(echo $PROJ_SUBS)" "move"
same "workspace --help: its subcommands" "$(echo $WS_SUBS)" "apply conflicts create diff discard list path"
# global options: the option lines of "global options:" ("  -q, --quiet",
# "  --color[=WHEN]"; not the continuation lines, indented further)
GLOBALS=$("$DECREE" --help | sed -n '/^global options:/,/^$/p' |
	grep -o -- '^  -[A-Za-z-]*\(, --[a-z-]*\)\{0,1\}' | tr ', ' '\n\n' | sed '/^$/d' | sort -u | tr '\n' ' ')
for g in -C --store --json -q --quiet --color --no-pager -h --help --version; do
	case " $GLOBALS " in *" $g "*) ;; *) not_ok "decree --help lists the global option $g" "$GLOBALS" ;; esac
done
ok "decree --help lists the global options: $GLOBALS"

# The command paths ("apply", "checkpoint create", "hook install", ...)
PATHS=$(for c in $COMMANDS; do
	case $c in
	checkpoint) for s in $CK_SUBS; do echo "checkpoint:$s"; done ;;
	hook) for s in $HOOK_SUBS; do echo "hook:$s"; done ;;
	projects) echo projects; for s in $PROJ_SUBS; do echo "projects:$s"; done ;;
	workspace) for s in $WS_SUBS; do echo "workspace:$s"; done ;;
	*) echo "$c" ;;
	esac
done)

# help_opts "CMD SUB": the options the --help text gives for that command:
# its usage lines ("usage: decree CMD SUB [--opt X] ...", and their
# continuation lines "   [--opt]"; a page with several usage lines
# gives each command its own) and, when the page is the command's own
# (its first usage line is the command's), the option lines
# ("  -R, --reverse   ...").
help_opts() {
	"$DECREE" $1 --help 2>/dev/null | awk -v want="$1" '
		function cmdpath(line,   n, w, i, p) {
			sub(/.*decree /, "", line); n = split(line, w, " "); p = ""
			for (i = 1; i <= n && w[i] ~ /^[a-z][a-z-]*$/; i++)
				p = p == "" ? w[i] : p " " w[i]
			return p
		}
		function opts(line,   t) {
			while (match(line, /(^|[^A-Za-z0-9-])--?[A-Za-z][A-Za-z-]*/)) {
				t = substr(line, RSTART, RLENGTH); sub(/^[^-]*/, "", t)
				if (t ~ /^--/ || length(t) == 2) print t
				line = substr(line, RSTART + RLENGTH)
			}
		}
		/^(usage:)? *([^|]*\| *)?decree / {
			cur = cmdpath($0); if (page == "") page = cur
			if (cur == want) opts($0)
			next
		}
		/^ +\[/ { if (cur == want) opts($0); next }
		{ cur = "" }
		/^ *(-[A-Za-z], )?--?[A-Za-z]/ { if (page == want) opts($1 " " $2) }
	' | sort -u
}

# src_opts "CMD SUB": the options of the option tables (opt_spec,
# opt_list) of the C function that runs the command, as --long and -s.
# FUNCS maps each such function to its commands: a function with an
# option table that is not here fails the test (a new command's options
# must reach the completions).
FUNCS="ck_create=checkpoint:create ck_list=checkpoint:list ck_restore=checkpoint:restore
ck_prune=checkpoint:prune ck_drop=checkpoint:drop cmd_checkpoint_diff=checkpoint:diff
replay_cmd=undo,redo cmd_rollback=rollback cmd_rewind=rewind cmd_recover=recover
cmd_gc=gc cmd_fsck=fsck install=hook:install,hook:uninstall cmd_apply=apply cmd_run=run
cmd_process=process cmd_diff=diff ws_create=workspace:create ws_diff=workspace:diff
ws_apply=workspace:apply"
awk '/^(static )?int [a-z_]+\(/ { fn = $0; sub(/\(.*/, "", fn); sub(/.* /, "", fn) }
	match($0, /\{ "[a-z][a-z-]*", ('"'"'.'"'"'|0), (true|false), /) || match($0, /\{ "[a-z][a-z-]*", NULL, &/) {
		s = substr($0, RSTART, RLENGTH); split(s, p, "\"")
		print fn, "--" p[2]
		if (match(s, /'"'"'.'"'"'/)) print fn, "-" substr(s, RSTART + 1, 1)
	}' "$SRC"/*.c | sort -u >"$SCRATCH/src-opts"
# options parsed by hand, not through a table: run's -v/--var
# (cmd_pipeline.c; the line goes stale when the source no longer has it)
grep -q '"--var' "$SRC/cmd_pipeline.c" && printf 'cmd_run --var\ncmd_run -v\n' >>"$SCRATCH/src-opts"
for fn in $(cut -d' ' -f1 "$SCRATCH/src-opts" | sort -u); do
	case " $(echo $FUNCS) " in
	*" $fn="*) ok "src/cli: $fn's options are mapped to commands" ;;
	*) not_ok "src/cli: $fn has an option table; add it to FUNCS here and to the completions" \
		"$(grep "^$fn " "$SCRATCH/src-opts")" ;;
	esac
done
src_opts() {
	local p=${1/ /:} m fn
	for m in $FUNCS; do
		fn=${m%%=*}
		case ",${m#*=}," in *",$p,"*) grep "^$fn " "$SCRATCH/src-opts" | cut -d' ' -f2 ;; esac
	done | sort -u
}
check "the option tables are read ($(wc -l <"$SCRATCH/src-opts") options)" \
	test "$(wc -l <"$SCRATCH/src-opts")" -ge 30

# ===== bash ==================================================================
# _comp LINE: what bash completion offers with the cursor at the end of
# LINE (COMP_WORDS split as bash splits them: at blanks, and at ':' and
# '=', which stand as words of their own)
cat >"$SCRATCH/comp.bash" <<'EOF'
_comp() {
	local line=$1 w head
	local -a split
	COMP_LINE=$line COMP_POINT=${#line} COMP_WORDS=()
	read -ra split <<<"$line"
	for w in "${split[@]}"; do
		while [[ $w == *[:=]* ]]; do
			head=${w%%[:=]*}
			[ -n "$head" ] && COMP_WORDS+=("$head")
			COMP_WORDS+=("${w:${#head}:1}")
			w=${w:${#head}+1}
		done
		[ -n "$w" ] && COMP_WORDS+=("$w")
	done
	[[ $line == *[[:space:]] ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_decree decree "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort -u | sed '/^$/d'
}
EOF
# bcomp LINE...: each line's completions, one block per line ("== LINE")
bcomp() {
	bash --norc --noprofile -c '. "$1"; . "$2"; shift 2; for l; do echo "== $l"; _comp "$l"; done' \
		_ "$COMP/decree.bash" "$SCRATCH/comp.bash" "$@" 2>&1
}
block() { awk -v l="== $2" '$0 == l { on = 1; next } /^== / { on = 0 } on' "$1"; }

t "bash -n decree.bash" bash -n "$COMP/decree.bash"
cd "$SCRATCH" && mkdir -p empty && cd empty || exit 1
lines=("decree " "decree chec" "decree checkpoint re" "decree checkpoint " "decree hook "
	"decree projects " "decree workspace " "decree help workspace " "decree --json " "decree -C . checkpoint list --" "decree -"
	"decree --color=" "decree --color=al" "decree --no-pager --color status --"
	"decree help " "decree help checkpoint " "decree help hook " "decree help log ")
while IFS= read -r p; do lines+=("decree ${p/:/ } -"); done <<<"$PATHS"
bcomp "${lines[@]}" >"$SCRATCH/bash.out"
same "bash: decree <TAB> offers exactly the commands" "$(block "$SCRATCH/bash.out" "decree ")" "$COMMANDS"
same "bash: decree chec<TAB> -> checkpoint" "$(block "$SCRATCH/bash.out" "decree chec")" checkpoint
same "bash: decree checkpoint re<TAB> -> restore" "$(block "$SCRATCH/bash.out" "decree checkpoint re")" restore
same "bash: decree checkpoint <TAB> offers exactly its subcommands" "$(block "$SCRATCH/bash.out" "decree checkpoint ")" "$CK_SUBS"
same "bash: decree hook <TAB>" "$(block "$SCRATCH/bash.out" "decree hook ")" "$HOOK_SUBS"
same "bash: decree projects <TAB>" "$(block "$SCRATCH/bash.out" "decree projects ")" "$PROJ_SUBS"
same "bash: decree workspace <TAB>" "$(block "$SCRATCH/bash.out" "decree workspace ")" "$WS_SUBS"
same "bash: decree help workspace <TAB>" "$(block "$SCRATCH/bash.out" "decree help workspace ")" "$WS_SUBS"
same "bash: global options before the command: decree --json <TAB>" "$(block "$SCRATCH/bash.out" "decree --json ")" "$COMMANDS"
same "bash: -C DIR before the command: checkpoint list --<TAB>" \
	"$(block "$SCRATCH/bash.out" "decree -C . checkpoint list --")" \
	"$(printf '%s\n' --session $GLOBALS | grep -- '^--' | sort)"
same "bash: decree -<TAB>: the global options" "$(block "$SCRATCH/bash.out" "decree -")" "$(echo $GLOBALS | words)"
same "bash: decree --color=<TAB>: auto always never" "$(block "$SCRATCH/bash.out" "decree --color=")" "$(printf 'always\nauto\nnever')"
same "bash: decree --color=al<TAB> (readline replaces what follows '=')" "$(block "$SCRATCH/bash.out" "decree --color=al")" always
same "bash: --no-pager --color before the command: status --<TAB>" \
	"$(block "$SCRATCH/bash.out" "decree --no-pager --color status --")" "$(echo $GLOBALS | words | grep -- '^--')"
same "bash: decree help <TAB>: the commands" "$(block "$SCRATCH/bash.out" "decree help ")" "$COMMANDS"
same "bash: decree help checkpoint <TAB>: its subcommands" "$(block "$SCRATCH/bash.out" "decree help checkpoint ")" "$CK_SUBS"
same "bash: decree help hook <TAB>" "$(block "$SCRATCH/bash.out" "decree help hook ")" "$HOOK_SUBS"
same "bash: decree help log <TAB>: nothing (log has no subcommands)" "$(block "$SCRATCH/bash.out" "decree help log ")" ""

# every option of every command, and nothing else
: >"$SCRATCH/want-all"
while IFS= read -r p; do
	cmd=${p/:/ }
	want=$( (help_opts "$cmd"; src_opts "$cmd") | sort -u)
	printf '%s\n' "$want" | sed "/^\$/d; s/^/$p /" >>"$SCRATCH/want-all"
	got=$(block "$SCRATCH/bash.out" "decree $cmd -")
	missing=$(comm -23 <(printf '%s\n' "$want" | sed '/^$/d') <(printf '%s\n' "$got"))
	extra=$(comm -13 <( (printf '%s\n' "$want"; echo $GLOBALS -h | words) | sort -u) <(printf '%s\n' "$got"))
	if [ -z "$missing" ] && [ -z "$extra" ]; then
		ok "bash: decree $cmd -<TAB>: $(echo $want)"
	else
		not_ok "bash: decree $cmd -<TAB>" "missing: $(echo $missing); not an option of it: $(echo $extra)"
	fi
done <<<"$PATHS"
check "... the options found are many ($(wc -l <"$SCRATCH/want-all"))" test "$(wc -l <"$SCRATCH/want-all")" -ge 40
same "completing in a directory without a store created nothing" "$(ls -A "$SCRATCH/empty")" ""

# ----- values: refs, sessions, runs, routines, directories --------------------
P=$SCRATCH/proj
mkdir -p "$P/sub" && cd "$P" || exit 1
echo a >a.txt
t "a checkpoint chat:msg-1" D checkpoint create -s chat -m msg-1
ID1=$OUT
echo b >b.txt
t "a checkpoint chat:'two words' (a name that needs quoting)" D checkpoint create -s chat -m "two words"
t "a checkpoint in session other" D checkpoint create -s other
mkdir -p .decree/runs/2026000000000001-1 .decree/runs/2026000000000001-2 .decree/routines
touch .decree/routines/hello.sh .decree/routines/nb.ipynb
bcomp "decree checkpoint show " "decree checkpoint show chat:" "decree checkpoint show chat:m" \
	"decree checkpoint diff ${ID1:0:6} " "decree checkpoint diff a b " "decree checkpoint restore " \
	"decree checkpoint list -s " "decree rewind --session " "decree log " "decree revert 2026" \
	"decree run -v " "decree -C s" "decree --store s" "decree projects move s" \
	"decree hook install " "decree checkpoint restore x -- s" "decree apply a." \
	>"$SCRATCH/values.out"
same "bash: checkpoint show <TAB>: ids (12 digits) and SESSION:MESSAGE" \
	"$(block "$SCRATCH/values.out" "decree checkpoint show " | grep -c '^[0-9a-f]\{12\}$'):$(block "$SCRATCH/values.out" "decree checkpoint show " | grep -v '^[0-9a-f]\{12\}$')" \
	"3:chat:msg-1"
check "... the ids are the checkpoints'" grep -qx "${ID1:0:12}" "$SCRATCH/values.out"
same "bash: checkpoint show chat:<TAB> (readline replaces what follows ':')" "$(block "$SCRATCH/values.out" "decree checkpoint show chat:")" msg-1
same "bash: checkpoint show chat:m<TAB>" "$(block "$SCRATCH/values.out" "decree checkpoint show chat:m")" msg-1
same "bash: checkpoint diff REF <TAB>: a second REF" "$(block "$SCRATCH/values.out" "decree checkpoint diff ${ID1:0:6} " | wc -l)" 4
same "bash: checkpoint diff REF REF2 <TAB>: nothing" "$(block "$SCRATCH/values.out" "decree checkpoint diff a b ")" ""
same "bash: checkpoint restore <TAB>" "$(block "$SCRATCH/values.out" "decree checkpoint restore " | wc -l)" 4
same "bash: -s <TAB>: the sessions" "$(block "$SCRATCH/values.out" "decree checkpoint list -s ")" "$(printf 'chat\nother')"
same "bash: rewind --session <TAB>" "$(block "$SCRATCH/values.out" "decree rewind --session ")" "$(printf 'chat\nother')"
same "bash: log <TAB>: run ids" "$(block "$SCRATCH/values.out" "decree log ")" "$(printf '2026000000000001-1\n2026000000000001-2')"
same "bash: revert 2026<TAB>" "$(block "$SCRATCH/values.out" "decree revert 2026" | wc -l)" 2
same "bash: run -v <TAB>: routine= names, input_file=" "$(block "$SCRATCH/values.out" "decree run -v ")" \
	"$(printf 'input_file=\nroutine=hello\nroutine=nb')"
for l in "decree -C s" "decree --store s" "decree projects move s" "decree checkpoint restore x -- s"; do
	same "bash: $l<TAB> -> sub" "$(block "$SCRATCH/values.out" "$l")" sub
done
same "bash: hook install <TAB>: the agents" "$(block "$SCRATCH/values.out" "decree hook install ")" \
	"$(printf 'claude\nclaude-code\ncodex\ngemini')"
same "bash: apply a.<TAB>: files" "$(block "$SCRATCH/values.out" "decree apply a.")" a.txt
# -C names the project from elsewhere
cd "$SCRATCH/empty" || exit 1
bcomp "decree -C $P checkpoint list -s " "decree -C $P --store $P/.decree/store checkpoint delete chat:" >"$SCRATCH/c.out"
same "bash: -C DIR checkpoint list -s <TAB>: that project's sessions" "$(block "$SCRATCH/c.out" "decree -C $P checkpoint list -s ")" "$(printf 'chat\nother')"
same "bash: -C DIR --store DIR ... delete chat:<TAB>" "$(block "$SCRATCH/c.out" "decree -C $P --store $P/.decree/store checkpoint delete chat:")" msg-1
same "... and still no store where completion ran" "$(ls -A "$SCRATCH/empty")" ""
bcomp "decree rollback " >"$SCRATCH/c.out"
same "bash: rollback <TAB> where there is no store: nothing" "$(block "$SCRATCH/c.out" "decree rollback ")" ""
same "... and created none" "$(ls -A "$SCRATCH/empty")" ""
cd "$P" || exit 1
# a capture (restore's pre-restore), numbered u1 by rollback and log
echo c >c.txt
t "a restore (its capture is u1)" D -q checkpoint restore "$ID1"
t "undo it" D -q undo
bcomp "decree rollback " "decree rollback -n " "decree rollback -s chat " "decree rollback 2 " "decree diff " >"$SCRATCH/r.out"
same "bash: rollback <TAB>: the numbers rollback lists" "$(block "$SCRATCH/r.out" "decree rollback ")" \
	"$(D --json rollback | grep -o '"ref":"[u0-9]*"' | sed 's/"ref":"//; s/"//' | sort)"
same "... 1 2 3 u1" "$(block "$SCRATCH/r.out" "decree rollback " | tr '\n' ' ')" "1 2 3 u1 "
same "bash: rollback -n <TAB>: the numbers" "$(block "$SCRATCH/r.out" "decree rollback -n " | tr '\n' ' ')" "1 2 3 u1 "
same "bash: rollback -s S <TAB>: none (S has numbers of its own)" "$(block "$SCRATCH/r.out" "decree rollback -s chat ")" ""
same "bash: rollback N <TAB>: nothing" "$(block "$SCRATCH/r.out" "decree rollback 2 ")" ""
# kinds WORDS: "runs:ids:the rest" of a list of completions
kinds() {
	printf '%s\n' "$1" | awk '/^2026000000000001-[12]$/ { r++; next } /^[0-9a-f]+$/ && length($0) == 12 { i++; next }
		NF { o = o (o == "" ? "" : " ") $0 } END { printf "%d:%d:%s", r, i, o }'
}
same "bash: diff <TAB>: run ids and checkpoints" "$(kinds "$(block "$SCRATCH/r.out" "decree diff ")")" "2:4:chat:msg-1"

# ===== zsh ===================================================================
# _decree_PATH functions: the options each one's _arguments spec names
zfunc() { # the body of zsh function NAME in _decree
	awk -v f="$1" '$0 ~ "^" f "\\(\\) *\\{" { on = 1 } on { print } on && (/^}/ || /\}$/) { exit }' "$COMP/_decree"
}
zopt_in() { # OPTION TEXT: the option in an _arguments spec
	printf '%s' "$2" | grep -q -- "$1[+=,}[']"
}
for g in $GLOBALS; do
	zopt_in "$g" "$(sed -n '/^_decree_globals=(/,/^)/p' "$COMP/_decree")" || not_ok "zsh: global $g in _decree_globals"
done
ok "zsh: _decree_globals has every global option"
same "zsh: the commands of _decree" "$(zfunc _decree | sed -n "s/^[[:space:]]*'\([a-z-]*\):.*/\1/p" | sort -u)" "$COMMANDS"
same "zsh: the subcommands of _decree_checkpoint" "$(zfunc _decree_checkpoint | sed -n "s/^[[:space:]]*'\([a-z-]*\):.*/\1/p" | sort -u)" "$CK_SUBS"
same "zsh: the subcommands of _decree_hook" "$(zfunc _decree_hook | sed -n "s/^[[:space:]]*'\([a-z-]*\):.*/\1/p" | sort -u)" "$HOOK_SUBS"
same "zsh: the subcommands of _decree_workspace" "$(zfunc _decree_workspace | sed -n "s/^[[:space:]]*'\([a-z-]*\):.*/\1/p" | sort -u)" "$WS_SUBS"
while IFS= read -r p; do
	f=_decree_${p/:/_}
	body=$(zfunc "$f")
	# a function that passes on to another (_decree_redo -> _decree_undo)
	case $body in *"{ _decree_"*) body=$(zfunc "$(printf '%s' "$body" | sed -n 's/.*{ \(_decree_[a-z_]*\).*/\1/p')") ;; esac
	if [ -z "$body" ]; then
		not_ok "zsh: $f exists"
		continue
	fi
	missing=
	for o in $(sed -n "s/^$p //p" "$SCRATCH/want-all"); do
		case " $GLOBALS " in *" $o "*) continue ;; esac
		zopt_in "$o" "$body" || missing="$missing $o"
	done
	if [ -z "$missing" ]; then ok "zsh: $f has its options"; else not_ok "zsh: $f" "missing:$missing"; fi
done <<<"$PATHS"
if command -v zsh >/dev/null; then
	t "zsh -n _decree" zsh -n "$COMP/_decree"
	t_out _decree "zsh: compinit registers _decree for decree (#compdef)" \
		zsh -fc 'fpath=("$1" $fpath); autoload -U compinit; compinit -u -d "$2"; print -r -- $_comps[decree]' \
		_ "$COMP" "$SCRATCH/zcompdump"
	if command -v python3 >/dev/null; then
		# a real TAB in an interactive zsh on a pseudo-terminal
		ztab() { # LINE EXPECTED: what the line becomes after TAB
			python3 - "$COMP" "$SCRATCH/zcompdump" "$1" "$2" <<'PY'
import os, pty, select, sys, time, re
comp, dump, line, want = sys.argv[1:5]
pid, fd = pty.fork()
if pid == 0:
    os.execvp('zsh', ['zsh', '-f', '-i'])
out = b''
def wait(pat, secs=10):
    global out
    end = time.time() + secs
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                return False
            text = re.sub(r'\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08]', '', out.decode('utf-8', 'replace'))
            if pat in text:
                return True
    return False
os.write(fd, ('fpath=(%s $fpath); autoload -U compinit; compinit -u -d %s; PS1="READY> "\n' % (comp, dump)).encode())
ok = wait('READY> ')
out = b''
os.write(fd, (line + '\t').encode())
ok = ok and wait(want)
print('ok' if ok else 'timeout: ' + repr(out[-300:]))
os.kill(pid, 9)
PY
		}
		t_out ok "zsh: a real TAB: decree chec -> decree checkpoint" ztab "decree chec" "decree checkpoint "
		t_out ok "zsh: a real TAB: decree checkpoint show chat:m -> chat:msg-1" ztab "decree checkpoint show chat:m" "chat:msg-1 "
		t_out ok "zsh: a real TAB: decree help chec -> decree help checkpoint" ztab "decree help chec" "decree help checkpoint "
		t_out ok "zsh: a real TAB: decree help checkpoint cr -> create" ztab "decree help checkpoint cr" "decree help checkpoint create "
		t_out ok "zsh: a real TAB: decree --color=al -> --color=always" ztab "decree --color=al" "decree --color=always "
		t_out ok "zsh: a real TAB: decree diff --na -> --name-status" ztab "decree diff --na" "decree diff --name-status "
		t_out ok "zsh: a real TAB: decree run --no-s -> --no-stream" ztab "decree run --no-s" "decree run --no-stream "
		t_out ok "zsh: a real TAB: decree rollback u -> u1 (the capture)" ztab "decree rollback u" "decree rollback u1 "
		t_out ok "zsh: a real TAB: decree diff 2026000000000001-<TAB> lists the runs" ztab "decree diff 2026000000000001-" "2026000000000001-2"
	fi
else
	ok "zsh: syntax and real completion # SKIP zsh is not installed"
fi

# ===== fish ==================================================================
if command -v fish >/dev/null; then
	t "fish -n decree.fish" fish -n "$COMP/decree.fish"
	fcomp() { # LINE...: complete -C per line, one block per line
		fish --no-config -c 'source $argv[1]; for l in $argv[2..-1]; echo "== $l"; complete -C"$l" | cut -f1 | sort -u; end' \
			"$COMP/decree.fish" "$@" 2>&1
	}
	flines=("decree " "decree chec" "decree checkpoint re" "decree checkpoint " "decree hook " "decree projects "
		"decree workspace " "decree help workspace "
		"decree checkpoint show chat:" "decree checkpoint list -s " "decree log " "decree run -v "
		"decree --" "decree --color=" "decree help " "decree help checkpoint " "decree help projects "
		"decree help log " "decree rollback " "decree rollback -s chat " "decree diff ")
	while IFS= read -r p; do flines+=("decree ${p/:/ } -"); done <<<"$PATHS"
	fcomp "${flines[@]}" >"$SCRATCH/fish.out"
	same "fish: decree <TAB> offers exactly the commands" "$(block "$SCRATCH/fish.out" "decree ")" "$COMMANDS"
	same "fish: decree chec<TAB> -> checkpoint" "$(block "$SCRATCH/fish.out" "decree chec")" checkpoint
	same "fish: decree checkpoint re<TAB> -> restore" "$(block "$SCRATCH/fish.out" "decree checkpoint re")" restore
	same "fish: decree checkpoint <TAB>" "$(block "$SCRATCH/fish.out" "decree checkpoint ")" "$CK_SUBS"
	same "fish: decree hook <TAB>" "$(block "$SCRATCH/fish.out" "decree hook ")" "$HOOK_SUBS"
	same "fish: decree projects <TAB>" "$(block "$SCRATCH/fish.out" "decree projects ")" "$PROJ_SUBS"
	same "fish: decree workspace <TAB>" "$(block "$SCRATCH/fish.out" "decree workspace ")" "$WS_SUBS"
	same "fish: decree help workspace <TAB>" "$(block "$SCRATCH/fish.out" "decree help workspace ")" "$WS_SUBS"
	same "fish: checkpoint show chat:<TAB>" "$(block "$SCRATCH/fish.out" "decree checkpoint show chat:")" chat:msg-1
	same "fish: -s <TAB>: the sessions" "$(block "$SCRATCH/fish.out" "decree checkpoint list -s ")" "$(printf 'chat\nother')"
	same "fish: log <TAB>: run ids" "$(block "$SCRATCH/fish.out" "decree log ")" "$(printf '2026000000000001-1\n2026000000000001-2')"
	same "fish: run -v <TAB>" "$(block "$SCRATCH/fish.out" "decree run -v ")" "$(printf 'input_file=\nroutine=hello\nroutine=nb')"
	same "fish: decree --<TAB>: the long global options" "$(block "$SCRATCH/fish.out" "decree --")" "$(echo $GLOBALS | words | grep -- '^--')"
	same "fish: decree --color=<TAB>" "$(block "$SCRATCH/fish.out" "decree --color=")" "$(printf -- '--color=always\n--color=auto\n--color=never')"
	same "fish: decree help <TAB>: the commands" "$(block "$SCRATCH/fish.out" "decree help ")" "$COMMANDS"
	same "fish: decree help checkpoint <TAB>" "$(block "$SCRATCH/fish.out" "decree help checkpoint ")" "$CK_SUBS"
	same "fish: decree help projects <TAB>" "$(block "$SCRATCH/fish.out" "decree help projects ")" "$PROJ_SUBS"
	same "fish: decree help log <TAB>: nothing" "$(block "$SCRATCH/fish.out" "decree help log ")" ""
	same "fish: rollback <TAB>: the numbers" "$(block "$SCRATCH/fish.out" "decree rollback " | tr '\n' ' ')" "1 2 3 u1 "
	same "fish: rollback -s S <TAB>: none" "$(block "$SCRATCH/fish.out" "decree rollback -s chat ")" ""
	same "fish: diff <TAB>: run ids and checkpoints" "$(kinds "$(block "$SCRATCH/fish.out" "decree diff ")")" "2:4:chat:msg-1"
	while IFS= read -r p; do
		cmd=${p/:/ }
		got=$(block "$SCRATCH/fish.out" "decree $cmd -")
		missing=$(comm -23 <(sed -n "s/^$p //p" "$SCRATCH/want-all" | sort -u) <(printf '%s\n' "$got"))
		if [ -z "$missing" ]; then ok "fish: decree $cmd -<TAB> has its options"; else not_ok "fish: decree $cmd -<TAB>" "missing: $(echo $missing)"; fi
	done <<<"$PATHS"
else
	ok "fish: syntax and completions # SKIP fish is not installed"
fi
# ===== workspace names (all three shells) ======================================
cd "$SCRATCH/empty" || exit 1
bcomp "decree workspace path " >"$SCRATCH/w.out"
same "bash: workspace path <TAB> where there is no store: nothing" "$(block "$SCRATCH/w.out" "decree workspace path ")" ""
same "... and created none" "$(ls -A "$SCRATCH/empty")" ""
WP=$SCRATCH/wsp
mkdir -p "$WP" && cd "$WP" || exit 1
echo a >a.txt
t "a workspace fix" D -q workspace create fix
t "a workspace ws-1" D -q workspace create
wlines=("decree workspace path " "decree workspace apply f" "decree workspace diff --stat "
	"decree workspace conflicts " "decree workspace discard " "decree workspace discard fix "
	"decree workspace create " "decree workspace create --from " "decree workspace apply fix -s ")
bcomp "${wlines[@]}" >"$SCRATCH/w.out"
WS_NAMES=$(D --json workspace list | python3 -c 'import json,sys; print("\n".join(w["name"] for w in json.load(sys.stdin)["workspaces"]))')
same "the workspaces are fix and ws-1" "$(echo $WS_NAMES)" "fix ws-1"
for l in "decree workspace path " "decree workspace diff --stat " "decree workspace conflicts " "decree workspace discard "; do
	same "bash: $l<TAB>: the workspace names" "$(block "$SCRATCH/w.out" "$l")" "$WS_NAMES"
done
same "bash: workspace apply f<TAB> -> fix" "$(block "$SCRATCH/w.out" "decree workspace apply f")" fix
same "bash: workspace discard NAME <TAB>: nothing" "$(block "$SCRATCH/w.out" "decree workspace discard fix ")" ""
same "bash: workspace create <TAB>: nothing (a new name)" "$(block "$SCRATCH/w.out" "decree workspace create ")" ""
same "bash: workspace create --from <TAB>: the checkpoints (the two bases)" \
	"$(block "$SCRATCH/w.out" "decree workspace create --from " | grep -c '^[0-9a-f]\{12\}$')" 2
same "bash: workspace apply NAME -s <TAB>: the sessions" "$(block "$SCRATCH/w.out" "decree workspace apply fix -s ")" workspace
if command -v zsh >/dev/null && command -v python3 >/dev/null; then
	t_out ok "zsh: a real TAB: decree workspace pa -> path" ztab "decree workspace pa" "decree workspace path "
	t_out ok "zsh: a real TAB: decree workspace apply f -> fix" ztab "decree workspace apply f" "decree workspace apply fix "
else
	ok "zsh: workspace names # SKIP zsh is not installed"
fi
if command -v fish >/dev/null; then
	fcomp "decree workspace path " "decree workspace apply f" "decree workspace create --from " >"$SCRATCH/wf.out"
	same "fish: workspace path <TAB>: the workspace names" "$(block "$SCRATCH/wf.out" "decree workspace path ")" "$WS_NAMES"
	same "fish: workspace apply f<TAB> -> fix" "$(block "$SCRATCH/wf.out" "decree workspace apply f")" fix
	same "fish: workspace create --from <TAB>: the checkpoints" \
		"$(block "$SCRATCH/wf.out" "decree workspace create --from " | grep -c '^[0-9a-f]\{12\}$')" 2
else
	ok "fish: workspace names # SKIP fish is not installed"
fi
same "no completion created a store or file in the project" "$(ls -A "$P/.decree" | sort | tr '\n' ' ')" "routines runs store "
done_testing
