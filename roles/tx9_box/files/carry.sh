#!/usr/bin/env bash
# Carry one file from another host into a directory of this one over SSH, streaming it (bounded
# memory) and taking no byte beyond the size its writer reported, so nothing the other host sends
# can fill this host's disk. Used by the tx9_box role's ship.yml (an image's archive) and the
# tx9_migrate role (a box's archive); the caller checks the SHA-256.
#
#   carry.sh SRC FROM SIZE DIR PEER...
#
# SRC is the file's path on the other host, FROM that host's name (for messages), SIZE its size in
# bytes as written, DIR the directory here (made 0700 with its parents; a leading ~/ is this user's
# home), PEER the command that runs a command there (ssh ... -- host), given `cat -- 'SRC'`.
# Prints the path of the file here. Exit 3: the file sent was longer or shorter than SIZE, or the
# transfer broke off; nothing is kept. Exit 2: wrong arguments.
set -o pipefail
umask 077

if [ "$#" -lt 5 ]; then
    echo "usage: carry.sh SRC FROM SIZE DIR PEER..." >&2
    exit 2
fi
src=$1 from=$2 size=$3 dir=$4
shift 4
case $size in
    '' | *[!0-9]*) echo "carry.sh: SIZE must be a number of bytes, not '$size'" >&2; exit 2 ;;
esac
case $dir in \~/*) dir="$HOME/${dir#\~/}" ;; esac

mkdir -p -- "$dir" && chmod 0700 -- "$dir" || exit 3
target="$dir/${src##*/}"
partial="$target.partial"
trap 'rm -f -- "$partial"' EXIT

# The other host's shell reads the path single-quoted, each ' in it written as '\''.
quoted="'${src//\'/\'\\\'\'}'"
"$@" "cat -- $quoted" | head -c $((size + 1)) > "$partial"
status=$?
arrived=$(stat -c %s -- "$partial" 2>/dev/null || echo 0)
if [ "$arrived" -gt "$size" ]; then
    echo "$from sends more than the $size bytes of $src it wrote; nothing was kept here" >&2
    exit 3
fi
if [ "$status" -ne 0 ] || [ "$arrived" -ne "$size" ]; then
    echo "The transfer of $src from $from broke off after $arrived of $size bytes (exit $status); nothing was kept here" >&2
    exit 3
fi
mv -f -- "$partial" "$target" || exit 3
printf '%s\n' "$target"
