#!/bin/sh
# Install the Debian packages decree needs to build, test and benchmark.
# Idempotent: only missing packages are installed.  Usage: deps.sh [extra...]
set -e
pkgs="build-essential pkg-config libssl-dev libzstd-dev libyaml-dev libjansson-dev
      libcmocka-dev git patch diffutils strace python3 python3-jsonschema
      clang-format $*"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
