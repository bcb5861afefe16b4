#!/usr/bin/env bash
# Runs make targets side by side: scripts/side-by-side.sh TARGET...
#
# Each target's output goes to .cache/logs/TARGET.log and is printed whole as soon as that
# target ends, in the order they end; while any runs, one line every five minutes says which
# still do. The last lines sum up each target's result and time. Exits non-zero when any
# target failed; the others still run to their end. An interrupt stops them all.
set -u

MAKE=${MAKE:-make}
LOG_DIR=.cache/logs
HEARTBEAT=${SIDE_BY_SIDE_HEARTBEAT:-300}

# "Xm YYs" of a number of seconds.
minutes() { printf '%dm %02ds' $(($1 / 60)) $(($1 % 60)); }

mkdir -p "$LOG_DIR"
declare -A target_of started
# Each target runs in a process group of its own (job control), so that an interrupt of
# this script reaches everything below each target, whose own handlers then clean up.
set -m
trap 'for pid in "${!target_of[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
      kill "${sleeper:-}" 2>/dev/null; wait; exit 130' INT TERM
for target in "$@"; do
    "$MAKE" --no-print-directory "$target" > "$LOG_DIR/$target.log" 2>&1 &
    target_of[$!]=$target
    started[$target]=$(date +%s)
done
echo "side by side: $* (each one's output in $LOG_DIR/<target>.log)"

status=0
summary=()
sleep "$HEARTBEAT" & sleeper=$!
while [ ${#target_of[@]} -gt 0 ]; do
    ended=
    if wait -n -p ended "${!target_of[@]}" "$sleeper"; then code=0; else code=$?; fi
    now=$(date +%s)
    if [ "$ended" = "$sleeper" ]; then
        running=()
        for pid in "${!target_of[@]}"; do
            target=${target_of[$pid]}
            running+=("$target ($(minutes $((now - started[$target]))))")
        done
        echo "side by side: still running: ${running[*]}"
        sleep "$HEARTBEAT" & sleeper=$!
        continue
    fi
    target=${target_of[$ended]}
    unset "target_of[$ended]"
    took=$(minutes $((now - started[$target])))
    if [ "$code" -eq 0 ]; then verdict=passed; else verdict="FAILED (exit $code)"; status=1; fi
    echo "== $target: $verdict in $took; its output follows (also in $LOG_DIR/$target.log) =="
    cat "$LOG_DIR/$target.log"
    summary+=("$target: $verdict in $took")
done
kill "$sleeper" 2>/dev/null
echo "== side by side, summed up =="
printf '%s\n' "${summary[@]}"
exit $status
