#!/bin/sh
# Install the Debian packages decree needs to build, test and benchmark
# (nodejs and npm: the agent CLIs of tests/agents and the Node package,
# bindings/node, whose install runs node-gyp: python3, make, g++; Debian's
# npm brings Debian's node-gyp and the node headers, libnode-dev, and
# NodeSource's nodejs carries its own npm and headers, so the addon builds
# without fetching node headers with either; bash-completion: what
# loads the installed bash completion, tests/cli/install.sh; man-db:
# `man decree`; zlib1g-dev: git binary patches are zlib streams,
# docs/diff-format.md 2.4; python3-pytest, -pip, -venv, -setuptools,
# -wheel: the Python binding, its tests and `pip install ./bindings/python`
# without a download; xfsprogs: mkfs.xfs for the reflink workspace test,
# tests/cli/workspace_reflink.sh, and bench/run.sh's workspace group).
# Idempotent: only missing packages are installed.  Usage: deps.sh [extra...]
set -e
pkgs="build-essential g++ make pkg-config libssl-dev libzstd-dev zlib1g-dev libyaml-dev libjansson-dev
      libcmocka-dev git patch diffutils strace python3 python3-jsonschema
      python3-pytest python3-pip python3-venv python3-setuptools python3-wheel
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
