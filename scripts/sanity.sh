#!/usr/bin/env bash
# ansible-test sanity on a copy of the tree.
#
# ansible-test needs its working directory inside ansible_collections/NS/NAME
# and resolves symlinks, so the collection link does not do: the tree is
# copied (without the venv, caches, git data and test output) to
# .cache/sanity/ansible_collections/col_agents/tx9 and tested there. Extra
# arguments go to ansible-test, e.g. `scripts/sanity.sh --test pep8`.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
PYTHON_VERSION=${PYTHON_VERSION:-3.11}
COPY=$ROOT/.cache/sanity/ansible_collections/col_agents/tx9

# The shellcheck sanity test only warns when shellcheck is missing; install it
# (as root) so the shell scripts are checked on every machine alike.
if ! command -v shellcheck >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "sanity: installing shellcheck with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq shellcheck >/dev/null 2>&1 \
        || { apt-get update -qq && apt-get install -y -qq shellcheck >/dev/null; }
fi

rm -rf "$COPY"
mkdir -p "$COPY"
tar -C "$ROOT" -c \
    --exclude=./.git --exclude=./.venv --exclude='./.venv-*' --exclude=./.cache \
    --exclude=./tests/output --exclude=.pytest_cache --exclude=__pycache__ --exclude='*.pyc' \
    . | tar -C "$COPY" -x
# Its own git repository, so that ansible-test lists the copy's files (honouring
# .gitignore) instead of asking the enclosing repository, which ignores .cache.
git -C "$COPY" init -q

cd "$COPY"
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
sanity() {
    "$VENV/bin/ansible-test" sanity --local --python "$PYTHON_VERSION" --requirements --color no "$@" 2>&1 | tee "$LOG"
}

# Where ansible-test cannot download its pip bootstrap script, it stops and
# names the path the script may be saved to by hand: a stand-in goes there
# (scripts/ansible-test-bootstrap.py says what it does) and the run starts
# again. A machine with a normal network never takes this path.
status=0
sanity "$@" || status=$?
for _ in 1 2 3; do
    [ "$status" -ne 0 ] || break
    script=$(sed -n 's/^The bootstrap script can be manually downloaded and saved to: //p' "$LOG" | tail -n 1)
    if [ -z "$script" ] || [ -e "$script" ]; then
        break
    fi
    echo "sanity: ansible-test could not download its pip bootstrap script; running again with a stand-in"
    "$VENV/bin/python" "$ROOT/scripts/ansible-test-bootstrap.py" "$script"
    status=0
    sanity "$@" || status=$?
done

# Keep the reports where a reader of the repo looks for them.
if [ -d tests/output ]; then
    rm -rf "$ROOT/tests/output"
    mkdir -p "$ROOT/tests"
    cp -a tests/output "$ROOT/tests/output"
fi
exit "$status"
