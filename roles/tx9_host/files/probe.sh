#!/bin/sh
# Print, as one JSON object, what this host already has for tx9.
# $1: the Python interpreter the tx9 modules will run under.
python=$1
has() { command -v "$1" >/dev/null 2>&1 && echo true || echo false; }
docker_answers=false
if command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1; then
    docker_answers=true
fi
libs=false
# The modules need the Docker SDK 7+ and python-gnupg 0.5.4+ (Debian 12 ships older ones).
"$python" - >/dev/null 2>&1 <<'PY' && libs=true
import docker, gnupg, isal
def version(text):
    return tuple(int(''.join(c for c in p if c.isdigit()) or 0) for p in text.split('.')[:3])
assert version(docker.__version__) >= (7, 0, 0) and version(gnupg.__version__) >= (0, 5, 4)
PY
venv=false
"$python" -c 'import sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)' >/dev/null 2>&1 && venv=true
systemd=false
[ -d /run/systemd/system ] && systemd=true
# The engine is this machine's own (its configuration file is ours to keep) unless DOCKER_HOST points elsewhere.
local_engine=false
case "${DOCKER_HOST:-}" in "" | unix:///var/run/docker.sock | unix:///run/docker.sock) local_engine=true ;; esac
printf '{"docker": %s, "dockerd": %s, "gpg": %s, "debootstrap": %s, "python_libs": %s, "python_in_venv": %s, "systemd": %s, "local_engine": %s, "state_home": "%s"}\n' \
    "$docker_answers" "$(has dockerd)" "$(has gpg)" \
    "$( (command -v debootstrap || test -x /usr/sbin/debootstrap) >/dev/null 2>&1 && echo true || echo false)" \
    "$libs" "$venv" "$systemd" "$local_engine" "${TX9_HOME:-$HOME/.tx9}"
