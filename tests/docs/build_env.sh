# build_env.sh - sourced by the setup of docs/install.md's blocks
# (tests/docs/blocks.py runs them): what those pages assume, made in the
# block's sandbox ($HOME) from the build under test, never in a system
# prefix and never in the source tree's own build directories.
#
#   source_copy   a copy of the source tree in $HOME/decree (no build/,
#                 no .git), the working directory: `make` there builds
#                 from scratch, as in a fresh checkout
#   source_tree   the source tree as the working directory, with make
#                 using the build under test (B, SANITIZE): `make
#                 install PREFIX=...` installs it without building
#   install_home  `make install PREFIX=$HOME/.local` of the build under
#                 test, then the environment docs/install.md describes
#                 for that prefix: PKG_CONFIG_PATH, PREFIX/bin on PATH
#                 (after the logging decree wrapper), man finding the
#                 page beside it
#
# The build under test is the directory of $DOCS_TEST_DECREE.  A
# sanitized one (make check's build/san) makes libdecree.so need the
# sanitizer runtime first in a client's library list, so `cc` then adds
# the sanitizer flags, as a client of that library must.
# Nothing from a calling make or run-all.sh (MAKEFLAGS, B, DESTDIR, ...)
# reaches the block's make.
unset MAKEFLAGS MFLAGS MAKELEVEL B SANITIZE DESTDIR PREFIX BINDIR LIBDIR \
	INCLUDEDIR DATADIR MANDIR DOCDIR BASHCOMPDIR ZSHCOMPDIR FISHCOMPDIR \
	PC_RPATH MANPATH PKG_CONFIG_PATH LD_LIBRARY_PATH
docs_build=$(cd "$(dirname "$DOCS_TEST_DECREE")" && pwd)
docs_san=0
readelf -d "$docs_build/libdecree.so" 2>/dev/null | grep -q libasan && docs_san=1
export TMPDIR="$HOME/tmp"
mkdir -p "$TMPDIR"

source_copy() {
	mkdir -p "$HOME/decree"
	tar -C "$DECREE_TOP" --exclude=./build --exclude=./.git -cf - . |
		tar -C "$HOME/decree" -xf -
	cd "$HOME/decree"
}

source_tree() {
	export B="$docs_build" SANITIZE="$docs_san"
	cd "$DECREE_TOP"
}

install_home() {
	make -C "$DECREE_TOP" --no-print-directory B="$docs_build" \
		SANITIZE="$docs_san" install PREFIX="$HOME/.local" \
		>"$TMPDIR/install.log" 2>&1 || {
		tail -20 "$TMPDIR/install.log"
		return 1
	}
	export PATH="$PATH:$HOME/.local/bin"
	export PKG_CONFIG_PATH="$HOME/.local/lib/pkgconfig"
	if [ "$docs_san" = 1 ]; then
		cc() { command cc -fsanitize=address,undefined "$@"; }
	fi
}
