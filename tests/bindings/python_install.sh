#!/bin/bash
# The Python package (bindings/python) as a user installs it, offline:
# `pip install --no-build-isolation --no-index ./bindings/python` into a
# fresh venv made with --system-site-packages (so pip finds Debian's
# setuptools and wheel, scripts/deps.sh), as bindings/python/README.md
# says.  The install bundles build/libdecree.so (built here without
# sanitizers if missing, as the Node package builds build/libdecree.a), and
# the installed package must then work from another directory with no
# DECREE_LIBRARY set and no path into the source tree.  A TAP line per
# step.
set -u
top=${DECREE_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); failed=1; echo "not ok $n - $*"; }
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the library the package bundles: the plain build's (a sanitized one
# cannot be loaded by a plain interpreter)
if (cd "$top" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE \
	make --no-print-directory B=build build/libdecree.so) >"$tmp/make.log" 2>&1; then
	ok "make build/libdecree.so (no sanitizers)"
else
	sed 's/^/# /' "$tmp/make.log" | tail -20
	notok "make build/libdecree.so (no sanitizers)"
	echo "1..$n"
	exit 1
fi

if $py -m venv --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1; then
	ok "python3 -m venv --system-site-packages"
else
	sed 's/^/# /' "$tmp/venv.log" | tail -20
	notok "python3 -m venv --system-site-packages (python3-venv)"
	echo "1..$n"
	exit 1
fi

# what the README says to type, from the top of the tree
if (cd "$top" && env -u DECREE_LIBRARY "$tmp/venv/bin/pip" install -q --no-build-isolation \
	--no-index ./bindings/python) >"$tmp/pip.log" 2>&1; then
	ok "pip install --no-build-isolation --no-index ./bindings/python"
else
	sed 's/^/# /' "$tmp/pip.log" | tail -30
	notok "pip install --no-build-isolation --no-index ./bindings/python"
	echo "1..$n"
	exit 1
fi

# the installed package, elsewhere, on its own
mkdir "$tmp/elsewhere"
cat >"$tmp/elsewhere/smoke.py" <<'EOF'
import os, sys, decree
proj = sys.argv[1]
os.makedirs(proj)
with open(os.path.join(proj, "a.txt"), "w") as f:
    f.write("a\n")
with decree.Store(proj) as s:
    cp = s.create(session="s", message="turn 1")
    with open(os.path.join(proj, "a.txt"), "w") as f:
        f.write("changed\n")
    s.restore(cp.id)
    ids = [c.id for c in s.list() if not c.is_capture]
with open(os.path.join(proj, "a.txt")) as f:
    back = f.read()
try:
    decree.Store(proj).resolve("ffff")
    err = "none"
except decree.DecreeError as e:
    err = e.name
print(os.path.realpath(decree.__file__))
print(ids == [cp.id], repr(back), err)
EOF
out=$(cd "$tmp/elsewhere" && env -u DECREE_LIBRARY -u PYTHONPATH \
	"$tmp/venv/bin/python" smoke.py "$tmp/elsewhere/proj" 2>&1)
where=$(printf '%s\n' "$out" | head -1)
case "$where" in
"$tmp/venv/"*) ok "import decree comes from the venv ($where)" ;;
*) notok "import decree comes from the venv: $out" ;;
esac
if [ -f "$(dirname "$where")/libdecree.so" ]; then
	ok "the install bundled libdecree.so beside the package"
else
	notok "the install bundled libdecree.so beside the package"
fi
case "$(printf '%s\n' "$out" | tail -1)" in
"True 'a\n' DECREE_ENOTFOUND") ok "checkpoint, restore, list and an error work from the installed package" ;;
*) notok "checkpoint, restore, list and an error work from the installed package: $out" ;;
esac
echo "1..$n"
exit $failed
