#!/usr/bin/env bash
# galaxy-importer, the checks Galaxy and Automation Hub run on an uploaded
# collection, on the tarball `ansible-galaxy collection build` makes from this
# tree (settings: tests/galaxy-importer.cfg). galaxy-importer itself fails only
# on errors; any ERROR or WARNING line in its output fails this script too.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
OUT=$ROOT/.cache/galaxy
rm -rf "$OUT"
mkdir -p "$OUT/tmp"

cd "$ROOT"
"$VENV/bin/ansible-galaxy" collection build --force --output-path "$OUT" >/dev/null
tarball=$(ls "$OUT"/*.tar.gz)
echo "galaxy-import: built $tarball"

export GALAXY_IMPORTER_CONFIG=$ROOT/tests/galaxy-importer.cfg
export GALAXY_IMPORTER_TMP_ROOT_DIR=$OUT/tmp
export PATH=$VENV/bin:$PATH
status=0
(cd "$OUT" && "$VENV/bin/python" -m galaxy_importer.main "$tarball") >"$OUT/import.log" 2>&1 || status=$?
if grep -E '^(ERROR|WARNING)' "$OUT/import.log"; then
    echo "galaxy-import: the lines above are galaxy-importer's errors and warnings (whole log: $OUT/import.log)"
    exit 1
fi
if [ "$status" -ne 0 ]; then
    cat "$OUT/import.log"
    echo "galaxy-import: galaxy-importer exited $status"
    exit "$status"
fi
echo "galaxy-import: no error, no warning ($(grep -c '^Loading' "$OUT/import.log") items loaded; log: $OUT/import.log)"
