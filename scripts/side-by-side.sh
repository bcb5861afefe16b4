#!/usr/bin/env bash
# Runs streams of make targets side by side: scripts/side-by-side.sh STREAM...
#
# A stream is one target or several joined by "+" (integration+fleet-a), run in that order,
# each one whatever became of the one before. Each target's output goes to
# .cache/logs/TARGET.log and is printed whole as soon as that target ends; while any runs,
# one line every five minutes says which. The last lines sum up each target's result and
# time. Exits non-zero when any target failed. An interrupt stops every stream.
# A stream that dies before a target of it wrote its status (killed, or its make took its
# process group down) never hangs this script: that target, and each one of the stream that
# never ran, is reported FAILED with what became of it.
set -u

MAKE=${MAKE:-make}
LOG_DIR=.cache/logs
HEARTBEAT=${SIDE_BY_SIDE_HEARTBEAT:-300}
POLL=${SIDE_BY_SIDE_POLL:-5}

# "Xm YYs" of a number of seconds.
minutes() { printf '%dm %02ds' $(($1 / 60)) $(($1 % 60)); }

# Runs the targets of one stream in order; TARGET.status holds "exit-code seconds" once it ended
# (written whole: a stream killed while writing it leaves none).
stream() {
    local target started code
    for target in ${1//+/ }; do
        started=$(date +%s)
        echo "$started" > "$LOG_DIR/$target.started"
        "$MAKE" --no-print-directory "$target" > "$LOG_DIR/$target.log" 2>&1
        code=$?
        echo "$code $(($(date +%s) - started))" > "$LOG_DIR/$target.status.new"
        mv -f "$LOG_DIR/$target.status.new" "$LOG_DIR/$target.status"
    done
}

# Whether the stream process pid is gone (bash reaps its ended children as they end).
gone() { ! kill -0 "$1" 2>/dev/null; }

# ended[INDEX]: how stream INDEX ended ("killed by signal 9", "exit 1"), asked of bash once.
declare -A ended=()
stream_ended() {
    local index=$1 code
    if [ -z "${ended[$index]:-}" ]; then
        wait "${pids[$index]}"
        code=$?
        if [ "$code" -gt 128 ]; then ended[$index]="killed by signal $((code - 128))"; else ended[$index]="exit $code"; fi
    fi
}

# Prints a target's verdict and output once, and counts it.
report() {
    local target=$1 verdict=$2 took=$3
    echo "== $target: $verdict in $(minutes "$took"); its output follows (also in $LOG_DIR/$target.log) =="
    cat "$LOG_DIR/$target.log" 2>/dev/null
    summary+=("$target: $verdict in $(minutes "$took")")
    printed[$target]=1
    count=$((count + 1))
}

mkdir -p "$LOG_DIR"
targets=()
declare -A stream_of=()
index=0
for spec in "$@"; do
    for target in ${spec//+/ }; do
        if [ -n "${stream_of[$target]:-}" ]; then
            echo "side by side: $target is named twice; name each target once" >&2
            exit 2
        fi
        targets+=("$target")
        stream_of[$target]=$index
        rm -f "$LOG_DIR/$target.status" "$LOG_DIR/$target.status.new" "$LOG_DIR/$target.started"
    done
    index=$((index + 1))
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
        if [ -n "${printed[$target]:-}" ]; then
            continue
        fi
        if [ -f "$LOG_DIR/$target.status" ]; then
            read -r code took < "$LOG_DIR/$target.status"
            if [ "$code" -eq 0 ]; then verdict=passed; else verdict="FAILED (exit $code)"; status=1; fi
            report "$target" "$verdict" "$took"
            continue
        fi
        index=${stream_of[$target]}
        # Once its stream is gone, no status is still to come (looked for again: it may have come just before).
        if gone "${pids[$index]}" && [ ! -f "$LOG_DIR/$target.status" ]; then
            status=1
            stream_ended "$index"
            if [ -f "$LOG_DIR/$target.started" ]; then
                report "$target" "FAILED (its stream died while it ran, ${ended[$index]}, before it wrote a status)" \
                    $(($(date +%s) - $(cat "$LOG_DIR/$target.started")))
            else
                report "$target" "FAILED (never ran: its stream died before it, ${ended[$index]})" 0
            fi
        fi
    done
    now=$(date +%s)
    if [ "$now" -ge "$heartbeat_at" ]; then
        running=()
        for target in "${targets[@]}"; do
            if [ -z "${printed[$target]:-}" ] && [ -f "$LOG_DIR/$target.started" ]; then
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
