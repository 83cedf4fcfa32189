#!/bin/bash
# tests/layers.sh - the architecture of decree, checked against the code.
#
# The table below is the layering of the source tree.  This script holds
# the code to it three ways and speaks TAP ("ok N - ...", "not ok N - ..."),
# one "not ok" line per violation, naming file:line or object -> symbol:
#
#   include  every #include "..." in src/ and include/ names a header of
#            the file's own layer or of a layer it may use, and the public
#            headers include no system header but the three below;
#   call     with nm on the objects of $B: each undefined symbol that
#            another project object defines is defined in the same layer
#            or in a layer this one may use;
#   cycle    no two files depend on each other, even inside one layer:
#            the graph "object A uses a symbol object B defines" has no
#            strongly connected component of more than one file.
#
# Plus: no symbol is defined by two objects, and the contract between the
# library and its clients: what libdecree.so exports is exactly what the
# public headers mark DECREE_API, and util defines nothing public (a
# program links its own copy of util, see the Makefile).
#
# Usage: [B=build/san] bash tests/layers.sh   (make layers; run-all.sh runs
# it as the suite lint/layers).  Needs a built $B (make), nm and awk.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${DECREE_BUILD:-$top/${B:-build}}

# --------------------------------------------------------------------------
# The rules.  A layer may use its own folder and the layers listed for it,
# nothing else; a folder of src/ or include/ missing here is an error.
#
#   layer     folder              may use, besides itself
RULES='
    util      src/util            -
    diff      src/lib/diff        util
    store     src/lib/store       util
    merge     src/lib/merge       util diff store
    scan      src/lib/scan        util store
    txn       src/lib/txn         util store scan
    journal   src/lib/journal     util store
    ops       src/lib/ops         util diff merge store scan txn journal
    pipeline  src/pipeline        util api
    hooks     src/hooks           util api
    cli       src/cli             util api hooks
    api       include/decree      -
'
# "api" is the public contract: the headers include/decree/*.h and the
# symbols libdecree.so exports (DECREE_API, default visibility).  The
# clients, pipeline and cli, reach the engine only through it.  Inside the
# engine a call is judged by the layer that defines the callee, so "api"
# would grant nothing there.
#
# Including a public header is declarations and types, not a dependency on
# a layer: every layer may include decree/*.h, except util, the bottom,
# which may include only the vocabulary it reports errors in (the error
# codes and DECREE_API):
UTIL_PUBLIC_HEADERS='decree/common.h'
# The public headers include nothing but other decree/ headers and:
PUBLIC_SYSTEM_HEADERS='stddef.h stdint.h stdbool.h'
# Cycles between files tolerated, one component per line as its sorted
# source files separated by spaces.  None: keep it that way.
CYCLE_ALLOW='
'
# --------------------------------------------------------------------------

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/decree-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The table, parsed: the folder of each layer and the layers it may use.
declare -A DIR USES
LAYERS=()
while read -r l d u; do
	[ -n "$l" ] || continue
	LAYERS+=("$l")
	DIR[$l]=$d
	USES[$l]=${u#-}
done <<<"$RULES"

# layer_of PATH: REPLY = the layer of a path relative to $top (the
# longest folder that prefixes it), "" if none.
layer_of() {
	local l len=0
	REPLY=
	for l in "${LAYERS[@]}"; do
		case "$1" in "${DIR[$l]}"/*)
			[ ${#DIR[$l]} -gt $len ] && REPLY=$l len=${#DIR[$l]} ;;
		esac
	done
}
# may_use LAYER TARGET: 0 if LAYER may use TARGET (itself or listed).
may_use() {
	[ "$1" = "$2" ] && return 0
	case " ${USES[$1]} " in *" $2 "*) return 0 ;; esac
	return 1
}
uses_text() { echo "${USES[$1]:-nothing else}"; }

# --- (a) includes -----------------------------------------------------------
# Resolve like the compiler: the including file's folder, then -Iinclude,
# -Isrc, -Isrc/lib (the engine's path; resolved for every file so that a
# client reaching into the engine is reported, not just a missing file).
(cd "$top" && find src include -name '*.[ch]' | LC_ALL=C sort) >"$tmp/files"
viol=0
while IFS= read -r f; do
	layer_of "$f"
	fl=$REPLY
	if [ -z "$fl" ]; then
		not_ok "layer: $f is in no layer of the table in tests/layers.sh"
		viol=1
		continue
	fi
	grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$top/$f" |
		sed 's/^\([0-9]*\):[^<"]*\([<"]\)\([^>"]*\)[>"].*/\1 \2 \3/' >"$tmp/inc"
	while read -r line kind name; do
		where="$f:$line"
		target=
		if [ "$kind" = '"' ]; then
			for d in "$(dirname "$f")" include src src/lib; do
				if [ -f "$top/$d/$name" ]; then
					target=$(realpath -m --relative-to="$top" "$top/$d/$name")
					break
				fi
			done
			if [ -z "$target" ]; then
				not_ok "include: $where: \"$name\" is not a file of the project"
				viol=1
				continue
			fi
		else
			for d in include src src/lib; do
				[ -f "$top/$d/$name" ] && target=$d/$name && break
			done
			if [ -z "$target" ]; then # a system header
				if [ "$fl" = api ]; then
					case " $PUBLIC_SYSTEM_HEADERS " in
					*" $name "*) ;;
					*)
						not_ok "include: $where: <$name> in a public header; only <${PUBLIC_SYSTEM_HEADERS// /> <}> and decree/ headers"
						viol=1
						;;
					esac
				fi
				continue
			fi
		fi
		layer_of "$target"
		tl=$REPLY
		[ "$tl" = "$fl" ] && continue
		if [ "$tl" = api ]; then
			[ "$fl" != util ] && continue
			case " $UTIL_PUBLIC_HEADERS " in *" ${target#include/} "*) continue ;; esac
			not_ok "include: $where: \"$name\" is a public header; util may include only $UTIL_PUBLIC_HEADERS"
			viol=1
			continue
		fi
		if ! may_use "$fl" "$tl"; then
			not_ok "include: $where: \"$name\" is ${tl:-in no layer} ($target); $fl may use $(uses_text "$fl")"
			viol=1
		fi
	done <"$tmp/inc"
done <"$tmp/files"
[ $viol = 0 ] && ok "include: every #include of src/ and include/ respects the layers"

# --- the objects --------------------------------------------------------------
# Every object of $B/src whose source still exists (a moved file leaves
# its old object behind).  OLAYER[object] = layer; defs: "symbol object";
# refs: "object symbol"; EXPORTED[symbol] for what libdecree.so exports.
if [ ! -d "$build/src" ] || [ ! -f "$build/libdecree.so" ]; then
	not_ok "objects: no $build/src or $build/libdecree.so: build first (make)"
	echo "1..$n"
	exit 1
fi
: >"$tmp/defs"
: >"$tmp/refs"
declare -A OLAYER
(cd "$build" && find src -name '*.o' | LC_ALL=C sort) >"$tmp/olist"
while IFS= read -r o; do
	src=${o%.o}.c
	if [ ! -f "$top/$src" ]; then
		echo "# skipped $o: no $src (stale object)"
		continue
	fi
	layer_of "$src"
	OLAYER[$o]=$REPLY
	nm -P -g "$build/$o" | awk -v o="$o" -v refs="$tmp/refs" '
		$2 == "U" || $2 == "w" || $2 == "v" { print o, $1 >>refs; next }
		$1 !~ /^__odr_asan/ { print $1, o }' >>"$tmp/defs"
done <"$tmp/olist"
nm -D --defined-only "$build/libdecree.so" | awk '{ print $3 }' | LC_ALL=C sort -u >"$tmp/exported"
declare -A EXPORTED
while read -r sym; do EXPORTED[$sym]=1; done <"$tmp/exported"

dups=$(awk '{ c[$1]++; o[$1] = o[$1] " " $2 } END { for (s in c) if (c[s] > 1) print s ":" o[s] }' "$tmp/defs")
if [ -n "$dups" ]; then
	while IFS= read -r d; do not_ok "symbol: ${d%%:*} is defined by several objects:${d#*:}"; done <<<"$dups"
else
	ok "symbol: every symbol is defined by one object"
fi

# --- (b) calls ----------------------------------------------------------------
# uses: "object symbol defining-object" for every reference resolved inside
# the project.
awk 'FILENAME == ARGV[1] { def[$1] = $2; next } ($2 in def) && def[$2] != $1 { print $1, $2, def[$2] }' \
	"$tmp/defs" "$tmp/refs" | LC_ALL=C sort -u >"$tmp/uses"
viol=0
while read -r o sym d; do
	ol=${OLAYER[$o]} dl=${OLAYER[$d]}
	[ "$ol" = "$dl" ] && continue
	may_use "$ol" "$dl" && continue
	if may_use "$ol" api; then
		[ -n "${EXPORTED[$sym]:-}" ] && continue
		not_ok "call: $o -> $sym, defined in $d ($dl) and not exported; $ol may use $(uses_text "$ol")"
	else
		not_ok "call: $o -> $sym, defined in $d ($dl); $ol may use $(uses_text "$ol")"
	fi
	viol=1
done <"$tmp/uses"
[ $viol = 0 ] && ok "call: every object uses only its own layer and the layers it may use"

# --- (c) cycles between files -----------------------------------------------
# Tarjan's strongly connected components over object -> object.  Each
# component of more than one file is reported with the symbols that tie it.
awk '{ print $1, $3 }' "$tmp/uses" | LC_ALL=C sort -u |
	awk '
	function visit(v,   i, w, c) {
		idx[v] = low[v] = ++counter
		stack[++sp] = v
		onstack[v] = 1
		for (i = 1; i <= deg[v]; i++) {
			w = adj[v, i]
			if (!(w in idx)) {
				visit(w)
				if (low[w] < low[v]) low[v] = low[w]
			} else if (onstack[w] && idx[w] < low[v])
				low[v] = idx[w]
		}
		if (low[v] == idx[v]) {
			c = ""
			do {
				w = stack[sp--]
				onstack[w] = 0
				c = c " " w
			} while (w != v)
			print substr(c, 2)
		}
	}
	{ adj[$1, ++deg[$1]] = $2; node[$1]; node[$2] }
	END { for (v in node) if (!(v in idx)) visit(v) }' >"$tmp/scc"
viol=0
while read -r -a comp; do
	[ ${#comp[@]} -gt 1 ] || continue
	files=$(printf '%s\n' "${comp[@]}" | sed 's/\.o$/.c/' | LC_ALL=C sort | tr '\n' ' ')
	files=${files% }
	if printf '%s\n' "$CYCLE_ALLOW" | grep -qxF "$files"; then
		echo "# allowed cycle: $files"
		continue
	fi
	not_ok "cycle: ${files// / <-> }"
	# the ties: object -> object: symbols
	printf '%s\n' "${comp[@]}" >"$tmp/members"
	awk 'FILENAME == ARGV[1] { m[$1]; next }
		($1 in m) && ($3 in m) { s[$1 " -> " $3] = s[$1 " -> " $3] " " $2 }
		END { for (k in s) print "#   " k ":" s[k] }' "$tmp/members" "$tmp/uses" | LC_ALL=C sort
	viol=1
done <"$tmp/scc"
[ $viol = 0 ] && ok "cycle: no two files depend on each other"

# --- the contract of the shared library -----------------------------------
# What the headers mark DECREE_API (the name before the first "(" of each
# marked declaration) and what libdecree.so exports are the same set.
grep -hv '^#' "$top"/include/decree/*.h | tr '\n' ' ' | grep -o 'DECREE_API[^;(]*(' |
	sed 's/[[:space:]]*($//; s/.*[^A-Za-z0-9_]//' | LC_ALL=C sort -u >"$tmp/declared"
missing=$(LC_ALL=C comm -23 "$tmp/declared" "$tmp/exported" | tr '\n' ' ')
extra=$(LC_ALL=C comm -13 "$tmp/declared" "$tmp/exported" | tr '\n' ' ')
if [ -z "$missing$extra" ]; then
	ok "api: libdecree.so exports exactly the $(wc -l <"$tmp/declared") DECREE_API functions of include/decree"
else
	[ -n "$missing" ] && not_ok "api: declared DECREE_API but not exported by libdecree.so: ${missing% }"
	[ -n "$extra" ] && not_ok "api: exported by libdecree.so but not declared DECREE_API: ${extra% }"
fi
# util is linked into programs too: a public definition there would be a
# second copy that shadows the library's.
viol=0
while read -r sym o; do
	[ "${OLAYER[$o]}" = util ] && [ -n "${EXPORTED[$sym]:-}" ] || continue
	not_ok "api: $o defines the public $sym; util must not (a program's copy of util would shadow the library's)"
	viol=1
done <"$tmp/defs"
[ $viol = 0 ] && ok "api: util defines no public symbol"

echo "1..$n"
[ $failed -eq 0 ]
