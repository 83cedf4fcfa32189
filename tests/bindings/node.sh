#!/bin/bash
# The Node package (bindings/node) as a user gets it: `npm install
# <top>/bindings/node` into a fresh project (which builds build/libdecree.a
# without sanitizers, then the addon, with the local node headers when
# they are installed), an import of 'decree' from that project, then the
# package's own tests (node --test, test/*.test.mjs) in TAP.  A TAP line per
# step and per test.  Skipped (one "ok 1 # SKIP reason") when node or npm
# is missing, or when the npm registry cannot be reached and its cache
# lacks node-addon-api, as the agent suites are (tests/agents/lib.sh);
# DECREE_BINDINGS_REQUIRED=1 (default under CI=true) makes that a failure.
set -u
top=${DECREE_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
pkg="$top/bindings/node"
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; }

[ "${CI:-}" = true ] && : "${DECREE_BINDINGS_REQUIRED:=1}"
skip() {
	if [ "${DECREE_BINDINGS_REQUIRED:-0}" = 1 ]; then
		echo "not ok 1 - the Node package tests are required (CI=true or DECREE_BINDINGS_REQUIRED=1) but: $1"
		echo "1..1"
		exit 1
	fi
	echo "ok 1 # SKIP $1"
	echo "1..1"
	exit 0
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	skip "node or npm not installed (scripts/deps.sh installs them)"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/app"
printf '{ "name": "app", "private": true, "type": "module" }\n' >"$tmp/app/package.json"

# 1. npm install of the folder (what the README says)
if (cd "$tmp/app" && npm install --no-audit --no-fund "$pkg") >"$tmp/install.log" 2>&1 &&
	[ -f "$pkg/build/Release/decree.node" ]; then
	ok "npm install bindings/node builds the addon"
else
	if grep -Eq 'E(NOTFOUND|AI_AGAIN|CONNREFUSED|TIMEDOUT|NETUNREACH|CONNRESET|NOTCACHED)' "$tmp/install.log" &&
		[ ! -d "$pkg/node_modules/node-addon-api" ]; then
		skip "the npm registry is unreachable and the npm cache lacks node-addon-api"
	fi
	sed 's/^/# /' "$tmp/install.log" | tail -40
	notok "npm install bindings/node builds the addon"
	echo "1..$n"
	exit 1
fi

# 2. the installed package imports and works from the installing project
cat >"$tmp/app/smoke.js" <<'EOF'
import { Store, DecreeError, version } from 'decree';
import { mkdirSync, writeFileSync } from 'node:fs';
const root = process.argv[2];
mkdirSync(root);
writeFileSync(`${root}/a.txt`, 'a\n');
const s = await Store.open({ root });
const c = await s.checkpoint({ session: 'smoke', message: 'm' });
const l = await s.list();
let code = null;
try { await s.show('ffffffff'); } catch (e) { code = e instanceof DecreeError ? e.code : 'not a DecreeError'; }
await s.close();
console.log(`${version} ${c.created} ${l.length} ${l[0].hasChanges} ${code}`);
EOF
out=$(cd "$tmp/app" && node smoke.js "$tmp/proj" 2>&1)
if [ "$out" = "0.1.0 true 1 false not_found" ]; then
	ok "import 'decree' from the installing project: checkpoint, list, DecreeError"
else
	echo "# got: $out"
	notok "import 'decree' from the installing project: checkpoint, list, DecreeError"
fi

# 3. the CLI sees the checkpoint the package made (same store format)
if "${DECREE:-$top/build/decree}" -C "$tmp/proj" checkpoint list 2>&1 | grep -q smoke; then
	ok "decree checkpoint list shows the package's checkpoint"
else
	notok "decree checkpoint list shows the package's checkpoint"
fi

# 4. the package's tests, one TAP line per test (renumbered after ours)
(cd "$pkg" && node --test --test-reporter=tap test/*.test.mjs) >"$tmp/test.tap" 2>&1
rc=$?
awk -v n="$n" '
	/^ok [0-9]+ - / { n++; sub(/^ok [0-9]+ - /, ""); print "ok " n " - node: " $0; next }
	/^not ok [0-9]+ - / { n++; sub(/^not ok [0-9]+ - /, ""); print "not ok " n " - node: " $0; next }
	{ print "# " $0 }
	END { print "1.." n }
' "$tmp/test.tap"
exit "$rc"
