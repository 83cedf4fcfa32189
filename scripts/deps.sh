#!/bin/sh
# Install the Debian packages decree needs to build, test and benchmark
# (nodejs and npm: the agent CLIs of tests/agents; bash-completion: what
# loads the installed bash completion, tests/cli/install.sh; man-db:
# `man decree`; zlib1g-dev: git binary patches are zlib streams,
# docs/diff-format.md 2.4; xfsprogs: mkfs.xfs for the reflink workspace
# test, tests/cli/workspace_reflink.sh, and bench/run.sh's workspace group).
# Idempotent: only missing packages are installed.  Usage: deps.sh [extra...]
set -e
pkgs="build-essential pkg-config libssl-dev libzstd-dev zlib1g-dev libyaml-dev libjansson-dev
      libcmocka-dev git patch diffutils strace python3 python3-jsonschema
      clang-format nodejs npm bash-completion man-db xfsprogs $*"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" && continue
	# NodeSource's nodejs bundles npm (it Provides and Conflicts with the
	# npm package): installing Debian's npm beside it would fail
	[ "$p" = npm ] && command -v npm >/dev/null 2>&1 && continue
	missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
