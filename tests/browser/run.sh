#!/bin/sh
# run.sh — what `make check-browser` runs: the explorer page in Debian's Chromium.
#   sh tests/browser/run.sh BIN WORKDIR [LESSON_PAGE...]
#   sh tests/browser/run.sh --screenshot PAGE OUT.png [STEP [QUERY KEY]]   (screenshot.mjs)
# Installs what the test needs when it can: Debian's chromium (and nodejs and npm when
# there is no node) through .ci/deps.sh as root, then playwright-core from
# tests/browser/package-lock.json with `npm ci` (into tests/browser/node_modules,
# git-ignored). As another user with something missing, it prints the install line
# and "skipped: why", and passes.
set -eu
SHOT=0
if [ "${1:-}" = --screenshot ]; then
    SHOT=1
    shift
else
    BIN=$1
    WORK=$2
    shift 2
fi
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
missing=""
[ -x "$CHROMIUM" ] || missing="$missing chromium"
command -v node > /dev/null 2>&1 || missing="$missing nodejs"
command -v npm > /dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get > /dev/null 2>&1; then
        echo "check-browser: skipped: missing Debian packages:$missing (install them with: sudo apt-get install -y$missing)"
        exit 0
    fi
    sh .ci/deps.sh $missing
fi
if ! node -e 'process.exit(+process.versions.node.split(".")[0] >= 18 ? 0 : 1)'; then
    echo "check-browser: skipped: node $(node --version) is older than 18, which playwright-core needs"
    exit 0
fi
# npm ci only when the lock file changed since the last install
if [ ! -f tests/browser/node_modules/.package-lock.json ] ||
   [ tests/browser/package-lock.json -nt tests/browser/node_modules/.package-lock.json ]; then
    if ! (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error); then
        echo "check-browser: npm ci failed in tests/browser (is the npm registry reachable?)" >&2
        exit 1
    fi
fi
if [ $SHOT = 1 ]; then
    CHROMIUM=$CHROMIUM exec node tests/browser/screenshot.mjs "$@"
fi
CHROMIUM=$CHROMIUM node tests/browser/explorer_test.mjs "$BIN" "$WORK" "$@"
