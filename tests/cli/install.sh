#!/bin/bash
# install.sh - `make install` and `make uninstall` (docs/install.md) of the
# build under test ($DECREE_BUILD, not rebuilt), twice: into a prefix of
# its own (PREFIX=$SCRATCH/prefix: what a user without root does), and
# staged (DESTDIR=$SCRATCH/root PREFIX=/usr/local: what a package does).
# After the install:
#  - the installed decree runs from the prefix, no LD_LIBRARY_PATH;
#  - libdecree.so.VERSION has the soname libdecree.so.0, with the
#    libdecree.so.0 and libdecree.so links; the program needs no libdecree.so;
#  - pkg-config (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig) gives flags that
#    compile, link and run a program using <decree/decree.h> and
#    libdecree.so from the prefix (its rpath), and a static one;
#  - `man -w decree` finds the page through MANPATH, and through PATH
#    alone (man-db looks beside each PATH directory); the page names the
#    installed docs, which exist, and the installed completions;
#  - the completions are where bash-completion, zsh and fish look, and the
#    installed bash one, loaded by bash-completion's own loader, completes;
#  - uninstall leaves no file and no decree directory behind.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C
unset DECREE_STORE MANPATH PKG_CONFIG_PATH LD_LIBRARY_PATH XDG_DATA_DIRS
TOP=${DECREE_TOP:?}
BUILD=${DECREE_BUILD:?}
VERSION=$(sed -n 's/^VERSION *:= *//p' "$TOP/Makefile")
# a sanitized build's objects need the same flags if make has to relink
SAN=0
readelf -d "$BUILD/libdecree.so" 2>/dev/null | grep -q 'libasan' && SAN=1

# make_in TARGET VAR=VALUE...: make in the source tree with the build under test
# (nothing from a calling make or the environment: make check's MAKEFLAGS,
# a DESTDIR or LIBDIR of the caller's)
make_in() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u DESTDIR -u PREFIX -u BINDIR -u LIBDIR \
		-u INCLUDEDIR -u DATADIR -u MANDIR -u DOCDIR -u BASHCOMPDIR -u ZSHCOMPDIR \
		-u FISHCOMPDIR -u PC_RPATH \
		make -C "$TOP" --no-print-directory B="$BUILD" SANITIZE="$SAN" "$@" >"$SCRATCH/make.log" 2>&1
}
# what is left: every file and link under DIR
files_in() { (cd "$1" 2>/dev/null && find . ! -type d | sort); }

# ===== PREFIX=$SCRATCH/prefix =================================================
PFX=$SCRATCH/prefix
if make_in install PREFIX="$PFX"; then ok "make install PREFIX=$PFX"; else
	not_ok "make install PREFIX=$PFX" "$(tail -20 "$SCRATCH/make.log")"
	done_testing
	exit 1
fi
grep -q ldconfig "$SCRATCH/make.log" && not_ok "no ldconfig for a LIBDIR the loader does not search" || ok "no ldconfig for a LIBDIR the loader does not search"

# the program
t_out "decree $VERSION" "the installed decree --version runs (no LD_LIBRARY_PATH)" env -u LD_LIBRARY_PATH "$PFX/bin/decree" --version
check "the program needs no libdecree.so (it links libdecree.a)" \
	sh -c "! readelf -d '$PFX/bin/decree' | grep -q 'libdecree'"
mkdir -p "$SCRATCH/proj" && cd "$SCRATCH/proj" && echo x >x.txt
t "the installed decree checkpoints" "$PFX/bin/decree" checkpoint create -m one

# the libraries
check "libdecree.so.$VERSION is a file" test -f "$PFX/lib/libdecree.so.$VERSION" -a ! -L "$PFX/lib/libdecree.so.$VERSION"
same "libdecree.so.0 -> libdecree.so.$VERSION" "$(readlink "$PFX/lib/libdecree.so.0")" "libdecree.so.$VERSION"
same "libdecree.so -> libdecree.so.0" "$(readlink "$PFX/lib/libdecree.so")" libdecree.so.0
same "SONAME libdecree.so.0" "$(readelf -d "$PFX/lib/libdecree.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')" libdecree.so.0
check "libdecree.a" test -f "$PFX/lib/libdecree.a"
same "the headers" "$(cd "$PFX/include/decree" && ls | tr '\n' ' ')" "$(cd "$TOP/include/decree" && ls | tr '\n' ' ')"

# pkg-config: compile, link and run against the installed library
export PKG_CONFIG_PATH=$PFX/lib/pkgconfig
t_out "$VERSION" "pkg-config --modversion decree" pkg-config --modversion decree
t_match "-I$PFX/include " "pkg-config --cflags decree" pkg-config --cflags decree
t_match "*-L$PFX/lib -ldecree -Wl,-rpath,$PFX/lib*" "pkg-config --libs decree: -L, -l and the rpath of the prefix" pkg-config --libs decree
cat >"$SCRATCH/client.c" <<'EOF'
#include <decree/decree.h>
#include <stdio.h>
#include <string.h>
/* a store of its own, a checkpoint, the library's version */
int main(int argc, char **argv)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	decree_checkpoint_create_options co = DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	char id[DECREE_ID_HEXLEN + 1];
	decree_store *s;

	if (argc != 2)
		return 2;
	o.root = argv[1];
	if (decree_store_open(&s, &o) < 0 ||
	    decree_checkpoint_create(id, NULL, s, &co) < 0) {
		fprintf(stderr, "%s\n", decree_error_last());
		return 1;
	}
	decree_store_free(s);
	printf("%s %zu\n", decree_version(), strlen(id));
	return 0;
}
EOF
CFLAGS_SAN=
[ "$SAN" = 1 ] && CFLAGS_SAN="-fsanitize=address,undefined"
mkdir -p "$SCRATCH/app"
# shellcheck disable=SC2046
if cc -std=c11 -Wall -Werror $CFLAGS_SAN -o "$SCRATCH/client" "$SCRATCH/client.c" $(pkg-config --cflags --libs decree) 2>"$SCRATCH/cc.err"; then
	ok "cc client.c \$(pkg-config --cflags --libs decree)"
else
	not_ok "cc client.c \$(pkg-config --cflags --libs decree)" "$(cat "$SCRATCH/cc.err")"
fi
t_out "$VERSION 64" "... it runs, no LD_LIBRARY_PATH: a store and a checkpoint" env -u LD_LIBRARY_PATH "$SCRATCH/client" "$SCRATCH/app"
same "... with the prefix's libdecree.so.0" \
	"$(ldd "$SCRATCH/client" | awk '$1 == "libdecree.so.0" { print $3 }')" "$PFX/lib/libdecree.so.0"
# shellcheck disable=SC2046
if cc -std=c11 $CFLAGS_SAN -o "$SCRATCH/client-static" "$SCRATCH/client.c" $(pkg-config --cflags decree) \
	"$PFX/lib/libdecree.a" $(pkg-config --static --libs decree | tr ' ' '\n' | grep -v -e '^-ldecree$' -e '^-L' -e rpath) \
	2>"$SCRATCH/cc.err"; then
	ok "cc client.c libdecree.a \$(pkg-config --static --libs decree)"
else
	not_ok "cc client.c libdecree.a \$(pkg-config --static --libs decree)" "$(cat "$SCRATCH/cc.err")"
fi
mkdir -p "$SCRATCH/app2"
t_out "$VERSION 64" "... it runs" "$SCRATCH/client-static" "$SCRATCH/app2"
check "... and needs no libdecree.so" sh -c "! readelf -d '$SCRATCH/client-static' | grep -q libdecree"
unset PKG_CONFIG_PATH

# the man page and the docs
if command -v man >/dev/null; then
	t_out "$PFX/share/man/man1/decree.1" "MANPATH=PREFIX/share/man man -w decree" env MANPATH="$PFX/share/man" man -w decree
	t_out "$PFX/share/man/man1/decree.1" "PATH=PREFIX/bin:\$PATH man -w decree (no MANPATH)" env PATH="$PFX/bin:$PATH" man -w decree
	page=$(MANWIDTH=200 MANPATH="$PFX/share/man" man -P cat decree 2>/dev/null | sed 's/.\x08//g')
	check "man decree renders (NAME, FILES, SEE ALSO)" \
		sh -c 'printf "%s" "$1" | grep -q "^NAME" && printf "%s" "$1" | grep -q "^FILES" && printf "%s" "$1" | grep -q "^SEE ALSO"' _ "$page"
else
	ok "man -w decree # SKIP man is not installed (scripts/deps.sh installs man-db)"
fi
MAN1=$PFX/share/man/man1/decree.1
check "the page names no source-tree docs/ any more" sh -c "! grep -q 'docs/' '$MAN1'"
check "the page names no /usr/local path (PREFIX is elsewhere)" sh -c "! grep -q '/usr/local' '$MAN1'"
refs=$(grep -o "$PFX/share/[A-Za-z0-9_./-]*" "$MAN1" | sort -u)
check "the page names installed files ($(echo "$refs" | wc -l))" test "$(echo "$refs" | wc -l)" -ge 6
for r in $refs; do
	check "... $r exists" test -e "$r"
done
DOC=$PFX/share/doc/decree
for f in README.md config.md scanning.md api.md cli/checkpoint.md cli/exit-codes.md schema/README.md schema/error.schema.json; do
	check "docs: share/doc/decree/$f" test -s "$DOC/$f"
done
same "docs: every docs/*.md, docs/cli/*, docs/schema/* is installed" \
	"$(cd "$TOP/docs" && ls *.md cli/* schema/* | sort)" \
	"$(cd "$DOC" && ls *.md cli/* schema/* | grep -vx README.md | sort)"

# the completions, where the shells look
BC=$PFX/share/bash-completion/completions/decree
ZC=$PFX/share/zsh/site-functions/_decree
FC=$PFX/share/fish/vendor_completions.d/decree.fish
for f in "$BC" "$ZC" "$FC"; do
	check "completion: ${f#"$PFX"/}" test -s "$f"
done
if [ -f /usr/share/bash-completion/bash_completion ]; then
	# bash-completion's loader finds it through XDG_DATA_DIRS (its
	# default, /usr/local/share:/usr/share, covers PREFIX /usr/local)
	out=$(cd "$SCRATCH/proj" && PATH="$PFX/bin:$PATH" XDG_DATA_DIRS="$PFX/share:/usr/share" \
		bash --norc --noprofile -c '
		. /usr/share/bash-completion/bash_completion
		_completion_loader decree
		complete -p decree
		for line in "decree chec" "decree checkpoint re" "decree checkpoint show "; do
			read -ra COMP_WORDS <<<"$line"; [[ $line == *" " ]] && COMP_WORDS+=("")
			COMP_LINE=$line COMP_POINT=${#line} COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) COMPREPLY=()
			_decree decree "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
			echo "$line -> ${COMPREPLY[*]}"
		done' 2>&1)
	case $out in *"complete -F _decree decree"*) ok "bash-completion loads the installed file for decree" ;;
	*) not_ok "bash-completion loads the installed file for decree" "$out" ;; esac
	case $out in *"decree chec -> checkpoint"*) ok "... decree chec<TAB> -> checkpoint" ;;
	*) not_ok "... decree chec<TAB> -> checkpoint" "$out" ;; esac
	case $out in *"decree checkpoint re -> restore"*) ok "... decree checkpoint re<TAB> -> restore" ;;
	*) not_ok "... decree checkpoint re<TAB> -> restore" "$out" ;; esac
	id=$(cd "$SCRATCH/proj" && "$PFX/bin/decree" checkpoint list | cut -c1-12)
	case $out in *"decree checkpoint show  -> $id"*) ok "... decree checkpoint show <TAB> -> the checkpoint ($id)" ;;
	*) not_ok "... decree checkpoint show <TAB> -> the checkpoint" "$out" ;; esac
else
	ok "bash-completion's loader # SKIP bash-completion is not installed (scripts/deps.sh installs it)"
fi
if command -v zsh >/dev/null; then
	t_out _decree "zsh: compinit on the prefix's site-functions registers _decree" \
		zsh -fc 'fpath=("$1" $fpath); autoload -U compinit; compinit -u -d "$2"; print -r -- $_comps[decree]' \
		_ "${ZC%/*}" "$SCRATCH/zcompdump"
	zsh_fpath=$(zsh -fc 'print -l $fpath')
	case "$zsh_fpath" in
	*/usr/local/share/zsh/site-functions*) ok "zsh's default fpath has /usr/local/share/zsh/site-functions (PREFIX /usr/local)" ;;
	*) not_ok "zsh's default fpath has /usr/local/share/zsh/site-functions" "$zsh_fpath" ;;
	esac
else
	ok "zsh # SKIP zsh is not installed"
fi
if command -v fish >/dev/null; then
	t_out checkpoint "fish: XDG_DATA_DIRS=PREFIX/share: decree chec<TAB> -> checkpoint" \
		env HOME="$SCRATCH/home" XDG_CONFIG_HOME="$SCRATCH/home/.config" XDG_DATA_HOME="$SCRATCH/home/.local/share" \
		XDG_DATA_DIRS="$PFX/share" PATH="$PFX/bin:$PATH" fish -c 'complete -C"decree chec" | cut -f1'
else
	ok "fish # SKIP fish is not installed"
fi

# uninstall
if make_in uninstall PREFIX="$PFX"; then ok "make uninstall PREFIX=$PFX"; else
	not_ok "make uninstall PREFIX=$PFX" "$(tail -20 "$SCRATCH/make.log")"
fi
same "uninstall: no file left in the prefix" "$(files_in "$PFX")" ""
same "uninstall: no decree directory left" "$(cd "$PFX" && find . -name '*decree*')" ""
t "uninstall again: nothing to do, no error" make_in uninstall PREFIX="$PFX"

# ===== DESTDIR=$SCRATCH/root PREFIX=/usr/local ================================
R=$SCRATCH/root
if make_in install DESTDIR="$R" PREFIX=/usr/local; then ok "make install DESTDIR=$R PREFIX=/usr/local"; else
	not_ok "make install DESTDIR=$R PREFIX=/usr/local" "$(tail -20 "$SCRATCH/make.log")"
fi
grep -q ldconfig "$SCRATCH/make.log" && not_ok "no ldconfig when staging (DESTDIR)" || ok "no ldconfig when staging (DESTDIR)"
for f in bin/decree lib/libdecree.a lib/libdecree.so lib/libdecree.so.0 lib/libdecree.so.$VERSION \
	lib/pkgconfig/decree.pc include/decree/decree.h share/man/man1/decree.1 share/doc/decree/README.md \
	share/bash-completion/completions/decree share/zsh/site-functions/_decree \
	share/fish/vendor_completions.d/decree.fish; do
	check "staged: /usr/local/$f" test -e "$R/usr/local/$f"
done
check "nothing outside DESTDIR/usr/local" test "$(cd "$R" && find . -mindepth 2 -maxdepth 2)" = ./usr/local
t_out /usr/local "decree.pc: prefix=/usr/local (not DESTDIR)" \
	env PKG_CONFIG_PATH="$R/usr/local/lib/pkgconfig" pkg-config --variable=prefix decree
t_match "-L/usr/local/lib -ldecree " "decree.pc: no rpath for /usr/local/lib (ldconfig's)" \
	env PKG_CONFIG_PATH="$R/usr/local/lib/pkgconfig" pkg-config --libs decree
check "the page names /usr/local/share/doc/decree" grep -q /usr/local/share/doc/decree/config.md "$R/usr/local/share/man/man1/decree.1"
check "the page does not name DESTDIR" sh -c "! grep -q '$R' '$R/usr/local/share/man/man1/decree.1'"
t_out "decree $VERSION" "the staged decree runs" "$R/usr/local/bin/decree" --version
t "make uninstall DESTDIR=$R PREFIX=/usr/local" make_in uninstall DESTDIR="$R" PREFIX=/usr/local
same "uninstall: no file left in DESTDIR" "$(files_in "$R")" ""
same "uninstall: no decree directory left" "$(cd "$R" && find . -name '*decree*')" ""
done_testing
