#!/bin/sh
# Install the Debian packages kvscope needs (as root), or stop and print the exact
# command that installs them. Called by the Makefile before anything is built.
# usage: .ci/deps.sh PACKAGE...
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "kvscope: installing Debian packages:$missing"
    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; then
        exit 0
    fi
    echo "kvscope: apt-get could not install:$missing" >&2
    exit 1
fi
echo "kvscope: missing Debian packages:$missing" >&2
echo "kvscope: install them with:  sudo apt-get install -y$missing" >&2
exit 1
