# bash completion for decree                              -*- shell-script -*-
#
# Installed by `make install` as $(PREFIX)/share/bash-completion/completions/decree,
# where the bash-completion package loads it the first time `decree` is
# completed; or source it from ~/.bashrc.  Needs nothing from
# bash-completion itself.
#
# Completes commands, subcommands (also after `help`), each command's
# options, -C/--store directories, --color=WHEN, PATCH files, agents,
# checkpoint REFs and sessions (from `decree --json checkpoint list`),
# rollback's numbers (from `decree --json log`; both only where a store
# already exists: completing never creates one), workspace names (from
# `decree --json workspace list`, likewise), run ids (.decree/runs/) and
# routine= names (.decree/routines/).  The lists here are checked against
# the program's --help texts and option tables by tests/cli/completion.sh.

_decree_commands="checkpoint apply rollback rewind undo redo recover gc fsck
projects hook init run process status log diff revert workspace help"
_decree_globals="-C --store --json -q --quiet --color --no-pager -h --help --version"

# _decree_subs CMD: the subcommands of CMD (none for most commands)
_decree_subs()
{
	case $1 in
	checkpoint) echo "create list show diff restore prune drop delete" ;;
	hook) echo "install uninstall status" ;;
	projects) echo "move" ;;
	workspace) echo "create list path diff conflicts apply discard" ;;
	esac
}

# _decree_spec PATH: the options of a command (PATH: "apply",
# "checkpoint create", ...): _decree_flags take no value, _decree_argopts
# take one (the next word).
_decree_spec()
{
	_decree_flags= _decree_argopts=
	case $1 in
	"checkpoint create")
		_decree_flags="--if-changed"
		_decree_argopts="-s --session -m --message -l --label --exclude --max-file-size" ;;
	"checkpoint list") _decree_argopts="-s --session" ;;
	"checkpoint diff")
		_decree_flags="--stat --name-status"
		_decree_argopts="-U --unified" ;;
	"checkpoint restore") _decree_flags="-n --dry-run --agent-only -v --verbose" ;;
	"checkpoint prune") _decree_argopts="-s --session --keep --older-than" ;;
	"checkpoint drop")
		_decree_flags="--all"
		_decree_argopts="-s --session" ;;
	apply)
		_decree_flags="--check -R --reverse -v --verbose"
		_decree_argopts="--exec -p --strip -s --session" ;;
	rollback)
		_decree_flags="-n --dry-run -v --verbose"
		_decree_argopts="-s --session" ;;
	rewind)
		_decree_flags="-n --dry-run --agent-only -v --verbose"
		_decree_argopts="-s --session" ;;
	undo | redo) _decree_flags="-n --dry-run --drop-damaged -v --verbose" ;;
	recover) _decree_flags="--rollback" ;;
	gc) _decree_flags="-n --dry-run" ;;
	fsck) _decree_flags="--repair" ;;
	"hook install" | "hook uninstall") _decree_flags="--user" ;;
	run)
		_decree_flags="--stream --no-stream"
		_decree_argopts="-m --message -p --prompt -v --var" ;;
	process) _decree_flags="--stream --no-stream" ;;
	diff) _decree_flags="--stat --name-status" ;;
	"workspace create")
		_decree_flags="--no-reflink"
		_decree_argopts="--from" ;;
	"workspace diff") _decree_flags="--stat --name-status" ;;
	"workspace apply")
		_decree_flags="--check -v --verbose"
		_decree_argopts="--exec -s --session" ;;
	esac
}

# _decree_root: the project root this invocation names (-C, else the
# nearest ancestor of the current directory holding .decree/), or
# nothing.
_decree_root()
{
	local d=${_decree_C:-$PWD}
	[ -n "$_decree_C" ] && { [ -d "$d" ] && printf '%s\n' "$d"; return; }
	while :; do
		[ -d "$d/.decree" ] && { printf '%s\n' "$d"; return; }
		[ -z "$d" ] || [ "$d" = / ] && return
		d=${d%/*}
		[ -z "$d" ] && d=/
	done
}

# _decree_query ARGS...: `decree --json ARGS...` on this invocation's
# project and store, when the store exists already.
_decree_query()
{
	local root store=${_decree_store:-${DECREE_STORE:-}}
	root=$(_decree_root)
	if [ -z "$store" ]; then
		[ -n "$root" ] && { [ -d "$root/.decree/store" ] || [ -f "$root/.decree/config.yml" ]; } || return
	fi
	local -a args=(--json)
	[ -n "$_decree_C" ] && args+=(-C "$_decree_C")
	[ -n "$_decree_store" ] && args+=(--store "$_decree_store")
	"${_decree_prog:-decree}" "${args[@]}" "$@" 2>/dev/null
}

_decree_list()
{
	_decree_query checkpoint list
}

# rollback's numbers, as `decree log` shows them: 1, 2, ... for the
# checkpoints (and the runs, whose number is their checkpoint's), u1,
# u2, ... for the captures.  They number all sessions: with --session S
# the numbers are S's own, which only `decree rollback -s S` lists.
_decree_rollback_refs()
{
	_decree_query log | grep -o '"ref":"u\{0,1\}[0-9][0-9]*"' | sed 's/^"ref":"//; s/"$//'
}

# Checkpoint REFs: 12-digit id prefixes and SESSION:MESSAGE names
# (messages that need no quoting).
_decree_refs()
{
	_decree_list | tr '{' '\n' |
		sed -n 's/^"id":"\([0-9a-f]\{12\}\)[0-9a-f]*","session":"\([^"\\]*\)","message":\(null\|"\([^"\\]*\)"\).*/\1\n\2:\4/p' |
		sed '/:$/d; /[^A-Za-z0-9._:@+,-]/d'
}

# workspace names of this project
_decree_workspaces()
{
	_decree_query workspace list | grep -o '"name":"[^"\\]*"' | sed 's/^"name":"//; s/"$//'
}

_decree_sessions()
{
	_decree_list | grep -o '"session":"[^"\\]*"' | sed 's/^"session":"//; s/"$//' | sort -u
}

# run ids: the directories of .decree/runs/
_decree_runs()
{
	local - root f
	set +f
	root=$(_decree_root)
	[ -n "$root" ] && [ -d "$root/.decree/runs" ] || return
	for f in "$root"/.decree/runs/*/; do
		[ -d "$f" ] || continue
		f=${f%/}
		printf '%s\n' "${f##*/}"
	done
}

# routine names: .decree/routines/NAME.sh and NAME.ipynb
_decree_routines()
{
	local - root f
	set +f
	root=$(_decree_root)
	[ -n "$root" ] && [ -d "$root/.decree/routines" ] || return
	for f in "$root"/.decree/routines/*.sh "$root"/.decree/routines/*.ipynb; do
		[ -f "$f" ] || continue
		f=${f##*/}
		printf '%s\n' "${f%.*}"
	done
}

# _decree_words WORDS...: COMPREPLY = the words that start with $cur.
# compgen -W expands its words ($, `): a word from a store or a directory
# listing with anything but these characters is left out.
_decree_words()
{
	local - IFS=$' \t\n' w
	local -a safe=()
	set -f
	for w in $*; do
		[[ $w == *[!A-Za-z0-9._:@+,=/-]* ]] || safe+=("$w")
	done
	COMPREPLY=($(compgen -W "${safe[*]}" -- "$cur"))
}

_decree_files()
{
	compopt -o filenames 2>/dev/null
	local IFS=$'\n'
	COMPREPLY=($(compgen -f -- "$cur"))
}

_decree_dirs()
{
	compopt -o filenames 2>/dev/null
	local IFS=$'\n'
	COMPREPLY=($(compgen -d -- "$cur"))
}

# _decree_words_of_line: words[] and cword from COMP_WORDS, with the
# pieces bash split at a COMP_WORDBREAKS character (':' of
# SESSION:MESSAGE, '=' of --store=DIR) glued back as they stand in
# COMP_LINE.
_decree_words_of_line()
{
	local i p=0 sp w
	words=() cword=0
	for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
		w=${COMP_WORDS[i]}
		sp=0
		while [ "$p" -lt "${#COMP_LINE}" ] && [[ ${COMP_LINE:p:1} == [[:space:]] ]]; do
			p=$((p + 1)) sp=1
		done
		if [ "$i" -gt 0 ] && [ "$sp" -eq 0 ] && [ -n "${COMP_LINE:-}" ] && [ -n "$w" ]; then
			words[${#words[@]} - 1]+=$w
		else
			words+=("$w")
		fi
		p=$((p + ${#w}))
		[ "$i" -eq "$COMP_CWORD" ] && cword=$((${#words[@]} - 1))
	done
	[ "${#words[@]}" -gt 0 ] || words=("")
}

_decree()
{
	local -a words
	local cword cur prev=
	local cmd= sub= path= npos=0 dashdash= session= i w
	local -a pos=()
	local _decree_C= _decree_store= _decree_prog=${COMP_WORDS[0]}
	local _decree_flags _decree_argopts
	_decree_words_of_line
	cur=${words[cword]}
	[ "$cword" -gt 0 ] && prev=${words[cword - 1]}
	COMPREPLY=()

	# what the words before the cursor say: globals, command,
	# subcommand, how many positional arguments, "--"
	for ((i = 1; i < cword; i++)); do
		w=${words[i]}
		if [ -n "$dashdash" ]; then
			continue
		fi
		case $w in
		--) dashdash=1; continue ;;
		-C) _decree_C=${words[i + 1]}; i=$((i + 1)); continue ;;
		--store) _decree_store=${words[i + 1]}; i=$((i + 1)); continue ;;
		-C?*) _decree_C=${w#-C}; continue ;;
		--store=*) _decree_store=${w#--store=}; continue ;;
		--json | -q | --quiet | --help | -h | --version | --no-pager | --color | --color=*) continue ;;
		esac
		if [ -z "$cmd" ]; then
			cmd=$w path=$w
			continue
		fi
		if [ -z "$sub" ]; then
			case "$cmd $w" in
			"checkpoint "[!-]* | "workspace "[!-]* | "hook install" | "hook uninstall" | "hook status" | "projects move")
				sub=$w path="$cmd $w"
				continue ;;
			esac
		fi
		_decree_spec "$path"
		case " $_decree_argopts " in
		*" $w "*)
			case $w in -s | --session) session=1 ;; esac
			i=$((i + 1))
			continue ;;
		esac
		case $w in
		--session=*) session=1 ;;
		-*) ;;
		*) pos+=("$w") npos=$((npos + 1)) ;;
		esac
	done
	_decree_spec "$path"

	_decree_complete
	# readline replaces only what follows the last word-break character
	# (':' of SESSION:MESSAGE, '=' of --store=DIR): drop what precedes it
	local pre=${cur%"${cur##*[:=]}"}
	if [ -n "$pre" ] && [[ $COMP_WORDBREAKS == *"${pre: -1}"* ]]; then
		for i in "${!COMPREPLY[@]}"; do
			COMPREPLY[i]=${COMPREPLY[i]#"$pre"}
		done
	fi
	return 0
}

# _decree_complete: COMPREPLY for cur, given what _decree found.
_decree_complete()
{
	# the value of an option
	if [ -z "$dashdash" ]; then
		case $prev in
		-C | --store) _decree_dirs; return ;;
		esac
		case " $_decree_argopts " in
		*" $prev "*)
			case $prev in
			-s | --session) _decree_words "$(_decree_sessions)" ;;
			--from) _decree_words "$(_decree_refs)" ;;
			--exec) compopt -o default 2>/dev/null ;;
			-v | --var)
				_decree_words "$(_decree_routines | sed 's/^/routine=/') input_file="
				compopt -o nospace 2>/dev/null ;;
			esac
			return ;;
		esac
	fi

	if [ -n "$dashdash" ]; then
		_decree_files
		return
	fi
	case $cur in
	--store=*)
		# readline replaces what follows '='
		local cur=${cur#--store=}
		_decree_dirs
		return ;;
	--color=*)
		local cur=${cur#--color=}
		_decree_words "auto always never"
		return ;;
	-*)
		_decree_words "$_decree_flags $_decree_argopts $_decree_globals"
		return ;;
	esac
	if [ -z "$cmd" ]; then
		_decree_words "$_decree_commands"
		return
	fi
	case "$path" in
	checkpoint | workspace) _decree_words "$(_decree_subs "$path")" ;;
	hook | projects) [ "$npos" -eq 0 ] && _decree_words "$(_decree_subs "$path")" ;;
	help)
		if [ "$npos" -eq 0 ]; then
			_decree_words "$_decree_commands"
		elif [ "$npos" -eq 1 ]; then
			_decree_words "$(_decree_subs "${pos[0]}")"
		fi ;;
	"hook install" | "hook uninstall")
		[ "$npos" -eq 0 ] && _decree_words "claude-code claude codex gemini" ;;
	"projects move") [ "$npos" -lt 2 ] && _decree_dirs ;;
	"checkpoint show" | "checkpoint delete" | "checkpoint restore")
		[ "$npos" -eq 0 ] && _decree_words "$(_decree_refs)" ;;
	"checkpoint diff") [ "$npos" -lt 2 ] && _decree_words "$(_decree_refs)" ;;
	"workspace path" | "workspace diff" | "workspace conflicts" | "workspace apply" | "workspace discard")
		[ "$npos" -eq 0 ] && _decree_words "$(_decree_workspaces)" ;;
	apply) [ "$npos" -eq 0 ] && _decree_files ;;
	log | revert) [ "$npos" -eq 0 ] && _decree_words "$(_decree_runs)" ;;
	diff) [ "$npos" -eq 0 ] && _decree_words "$(_decree_runs) $(_decree_refs)" ;;
	rollback) [ "$npos" -eq 0 ] && [ -z "$session" ] && _decree_words "$(_decree_rollback_refs)" ;;
	esac
}
complete -F _decree decree
