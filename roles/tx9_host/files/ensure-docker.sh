#!/usr/bin/env bash
# Make sure a Docker engine answers, starting one on this machine when needed.
#
# An engine that already answers (DOCKER_HOST is respected) is left alone.
# As root, Debian's docker.io (and debootstrap and gnupg, which building the
# box image needs) is installed when missing, and dockerd is started: through
# systemd when systemd runs, else in the background under a restart loop, its
# output in a log.
set -euo pipefail

LOG=${TX9_DOCKERD_LOG:-/var/log/tx9-dockerd.log}
WAIT_SECONDS=${TX9_DOCKERD_WAIT:-60}
SUPERVISOR_PID=${TX9_DOCKERD_SUPERVISOR_PID:-/run/tx9-dockerd-supervisor.pid}
# The default dockerd's own pidfile; other daemons on this machine use their own.
PIDFILE=/var/run/docker.pid

answers() {
    command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1
}

if answers; then
    echo "engine: Docker answers at ${DOCKER_HOST:-the default socket}"
    exit 0
fi

case "${DOCKER_HOST:-}" in
    "" | unix:///var/run/docker.sock | unix:///run/docker.sock) ;;
    *)
        echo "engine: the Docker engine at DOCKER_HOST=$DOCKER_HOST does not answer;" \
            "start it, or unset DOCKER_HOST to use a local engine." >&2
        exit 1
        ;;
esac

if [ "$(id -u)" -ne 0 ]; then
    echo "engine: no Docker engine answers and this user cannot start one;" \
        "install and start Docker (as root: apt-get install docker.io && dockerd &)," \
        "or set DOCKER_HOST to an engine that runs." >&2
    exit 1
fi

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v gpg >/dev/null 2>&1 || missing+=(gnupg)
if [ ${#missing[@]} -gt 0 ]; then
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    echo "engine: installing ${missing[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    echo "engine: starting docker with systemctl"
    systemctl start docker
elif [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    # The default dockerd is still starting up: wait for it rather than start a second one.
    echo "engine: dockerd (pid $(cat "$PIDFILE")) is running but not answering yet; waiting for it"
else
    echo "engine: starting a supervised dockerd in the background (log: $LOG)"
    mkdir -p "$(dirname "$LOG")"
    # No service manager runs: a small loop restarts dockerd if it dies, a few seconds later.
    # dockerd reads /etc/docker/daemon.json, where the tx9_host role sets live-restore, so the
    # containers keep running while it is gone and are adopted again when it is back.
    setsid nohup sh -c 'while :; do dockerd; echo "tx9: dockerd exited ($?); restarting in 3 s"; sleep 3; done' \
        >>"$LOG" 2>&1 </dev/null &
    echo "$!" > "$SUPERVISOR_PID"
    echo "engine: dockerd supervisor pid $!"
fi

for _ in $(seq "$WAIT_SECONDS"); do
    if answers; then
        echo "engine: Docker answers"
        exit 0
    fi
    sleep 1
done

echo "engine: Docker did not answer within ${WAIT_SECONDS}s; the end of $LOG says why:" >&2
tail -n 30 "$LOG" >&2 2>/dev/null || true
exit 1
