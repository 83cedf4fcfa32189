#!/bin/sh
# The Python binding's pytest suite (bindings/python/tests) against the
# library of this build: DECREE_LIBRARY=$DECREE_BUILD/libdecree.so, and
# DECREE (the program) for the tests that compare with it.  Debian's
# python3 and python3-pytest (scripts/deps.sh) run it: /usr/bin/python3
# first, since another python3 on PATH (pyenv, a venv) may lack pytest.
#
# A sanitizer build's library needs the ASan runtime loaded first in the
# interpreter: it is preloaded (LD_PRELOAD of the compiler's libasan and
# libubsan), leak checking off (the interpreter itself keeps memory until
# exit, which is not decree's leak; the C suites check leaks).
set -u
top=${DECREE_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
build=${DECREE_BUILD:-$top/build}
lib=$build/libdecree.so
[ -f "$lib" ] || { echo "python.sh: $lib is missing (make all)"; exit 1; }
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if ! $py -c 'import pytest' 2>/dev/null; then
	echo "python.sh: pytest is missing (sh scripts/deps.sh installs python3-pytest)"
	exit 1
fi
export DECREE_LIBRARY="$lib"
if nm -D "$lib" 2>/dev/null | grep -q ' U __asan_init'; then
	cc=${CC:-cc}
	asan=$($cc -print-file-name=libasan.so)
	ubsan=$($cc -print-file-name=libubsan.so)
	export LD_PRELOAD="$asan${ubsan:+ $ubsan}"
	export ASAN_OPTIONS="detect_leaks=0:abort_on_error=0"
	echo "python.sh: sanitizer build, preloading $LD_PRELOAD"
fi
cd "$top/bindings/python" || exit 1
exec $py -m pytest -p no:cacheprovider -q -rfE tests "$@"
