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
ANSIBLE_TEST=${ANSIBLE_TEST:-$ROOT/.venv/bin/ansible-test}
PYTHON_VERSION=${PYTHON_VERSION:-3.11}
COPY=$ROOT/.cache/sanity/ansible_collections/col_agents/tx9

rm -rf "$COPY"
mkdir -p "$COPY"
tar -C "$ROOT" -c \
    --exclude=./.git --exclude=./.venv --exclude='./.venv-*' --exclude=./.cache \
    --exclude=./tests/output --exclude=.pytest_cache --exclude=__pycache__ --exclude='*.pyc' \
    . | tar -C "$COPY" -x

"$ROOT/scripts/ansible-test-bootstrap.sh" "$ANSIBLE_TEST"

cd "$COPY"
status=0
"$ANSIBLE_TEST" sanity --local --python "$PYTHON_VERSION" --requirements --color no "$@" || status=$?

# Keep the reports where a reader of the repo looks for them.
if [ -d tests/output ]; then
    rm -rf "$ROOT/tests/output"
    mkdir -p "$ROOT/tests"
    cp -a tests/output "$ROOT/tests/output"
fi
exit "$status"
