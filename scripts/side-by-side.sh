#!/usr/bin/env bash
# Runs streams of make targets side by side: scripts/side-by-side.sh STREAM...
#
# A stream is one target or several joined by "+" (integration+fleet-a), run in that order,
# each one whatever became of the one before. Each target's output goes to
# .cache/logs/TARGET.log and is printed whole as soon as that target ends; while any runs,
# one line every five minutes says which. The last lines sum up each target's result and
# time. Exits non-zero when any target failed. An interrupt stops every stream.
set -u

MAKE=${MAKE:-make}
LOG_DIR=.cache/logs
HEARTBEAT=${SIDE_BY_SIDE_HEARTBEAT:-300}
POLL=${SIDE_BY_SIDE_POLL:-5}

# "Xm YYs" of a number of seconds.
minutes() { printf '%dm %02ds' $(($1 / 60)) $(($1 % 60)); }

# Runs the targets of one stream in order; TARGET.status holds "exit-code seconds" once it ended.
stream() {
    local target started
    for target in ${1//+/ }; do
        started=$(date +%s)
        date +%s > "$LOG_DIR/$target.started"
        "$MAKE" --no-print-directory "$target" > "$LOG_DIR/$target.log" 2>&1
        echo "$? $(($(date +%s) - started))" > "$LOG_DIR/$target.status"
    done
}

mkdir -p "$LOG_DIR"
targets=()
for spec in "$@"; do
    for target in ${spec//+/ }; do
        targets+=("$target")
        rm -f "$LOG_DIR/$target.status" "$LOG_DIR/$target.started"
    done
done
# Each stream runs in a process group of its own (job control), so that an interrupt of this
# script reaches everything below each stream, whose own handlers then clean up.
set -m
pids=()
trap 'kill -TERM -- "${pids[@]/#/-}" 2>/dev/null; wait; exit 130' INT TERM
for spec in "$@"; do
    stream "$spec" &
    pids+=($!)
done
echo "side by side: $* (each target's output in $LOG_DIR/<target>.log)"

status=0
summary=()
declare -A printed=()
count=0
heartbeat_at=$(($(date +%s) + HEARTBEAT))
while [ "$count" -lt ${#targets[@]} ]; do
    sleep "$POLL"
    for target in "${targets[@]}"; do
        if [ -n "${printed[$target]:-}" ] || [ ! -f "$LOG_DIR/$target.status" ]; then
            continue
        fi
        read -r code took < "$LOG_DIR/$target.status"
        if [ "$code" -eq 0 ]; then verdict=passed; else verdict="FAILED (exit $code)"; status=1; fi
        echo "== $target: $verdict in $(minutes "$took"); its output follows (also in $LOG_DIR/$target.log) =="
        cat "$LOG_DIR/$target.log"
        summary+=("$target: $verdict in $(minutes "$took")")
        printed[$target]=1
        count=$((count + 1))
    done
    now=$(date +%s)
    if [ "$now" -ge "$heartbeat_at" ]; then
        running=()
        for target in "${targets[@]}"; do
            if [ -f "$LOG_DIR/$target.started" ] && [ ! -f "$LOG_DIR/$target.status" ]; then
                running+=("$target ($(minutes $((now - $(cat "$LOG_DIR/$target.started")))))")
            fi
        done
        [ ${#running[@]} -eq 0 ] || echo "side by side: still running: ${running[*]}"
        heartbeat_at=$((now + HEARTBEAT))
    fi
done
wait
echo "== side by side, summed up =="
printf '%s\n' "${summary[@]}"
exit $status
