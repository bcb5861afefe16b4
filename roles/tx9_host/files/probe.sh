#!/bin/sh
# Print, as one JSON object, what this host already has for tx9.
# $1: the Python interpreter the tx9 modules will run under; $2: the engine settings tx9 keeps (JSON);
# $3: the engine's configuration file; $4: the box image; $5: the CA bundle a box image build trusts.
# What the probe finds in place, the roles need not check again.
python=$1
engine_config=${2:-'{}'}
engine_config_path=${3:-/etc/docker/daemon.json}
box_image=${4:-}
# An image reference is plain; anything else is not looked up (and not echoed into the JSON below).
case "$box_image" in *[!A-Za-z0-9:/._@-]*) box_image= ;; esac
ca_bundle=${5:-}
has() { command -v "$1" >/dev/null 2>&1 && echo true || echo false; }
docker_answers=false
if command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1; then
    docker_answers=true
fi
# The box image's tx9.assets label (the digest of the assets and CA bundle it was built from), and the
# bundle's SHA-256 (of no bytes when there is none): the box role's plan needs nothing more.
image_assets=
if [ "$docker_answers" = true ] && [ -n "$box_image" ]; then
    # The engine the modules use (DOCKER_HOST, else the local socket), never another the CLI's context names.
    image_assets=$(DOCKER_CONTEXT=default docker image inspect \
        --format '{{ with .Config.Labels }}{{ index . "tx9.assets" }}{{ end }}' -- "$box_image" 2>/dev/null |
        grep -xE '[0-9a-f]{64}')
fi
if [ -n "$ca_bundle" ] && [ -f "$ca_bundle" ]; then
    ca_sha256=$(sha256sum < "$ca_bundle" | cut -c1-64)
else
    ca_sha256=$(printf '' | sha256sum | cut -c1-64)
fi
# One start of the interpreter answers three questions, as three words (false for each it cannot answer):
# - the modules' libraries: the Docker SDK 7+ and python-gnupg 0.5.4+ (Debian 12 ships older ones), and isal
#   (the SDK's version from its installed metadata: importing it costs more than the rest of the probe);
# - whether the interpreter runs in a virtualenv;
# - whether the engine's configuration already holds every setting tx9 keeps (a file that is not one JSON
#   object does not; the role then reads and rewrites it).
answers=$("$python" - "$engine_config" "$engine_config_path" 2>/dev/null <<'PY'
import json, sys


def version(text):
    return tuple(int(''.join(c for c in p if c.isdigit()) or 0) for p in text.split('.')[:3])


def libs():
    try:
        from importlib.metadata import version as installed
        import gnupg, isal  # noqa: F401
        return version(installed('docker')) >= (7, 0, 0) and version(gnupg.__version__) >= (0, 5, 4)
    except Exception:
        return False


def config_current():
    try:
        wanted = json.loads(sys.argv[1])
        with open(sys.argv[2], encoding='utf-8') as handle:
            now = json.load(handle)
        return isinstance(now, dict) and all(key in now and now[key] == value for key, value in wanted.items())
    except Exception:
        return False


answers = (libs(), sys.prefix != sys.base_prefix, config_current())
print(' '.join('true' if answer else 'false' for answer in answers))
PY
)
# shellcheck disable=SC2086 # three words, split on purpose
set -- $answers
libs=${1:-false}
venv=${2:-false}
engine_config_current=${3:-false}
systemd=false
[ -d /run/systemd/system ] && systemd=true
state_home=${TX9_HOME:-$HOME/.tx9}
# The state home and its directories exist, this user's, mode 0700.
state_home_ready=true
for dir in "$state_home" "$state_home/boxes" "$state_home/locks" "$state_home/logs"; do
    if [ -L "$dir" ] || [ ! -d "$dir" ] || [ "$(stat -c '%a %u' "$dir" 2>/dev/null)" != "700 $(id -u)" ]; then
        state_home_ready=false
    fi
done
# The engine is this machine's own (its configuration file is ours to keep) unless DOCKER_HOST points elsewhere.
local_engine=false
case "${DOCKER_HOST:-}" in "" | unix:///var/run/docker.sock | unix:///run/docker.sock) local_engine=true ;; esac
printf '{"docker": %s, "dockerd": %s, "gpg": %s, "debootstrap": %s, "python_libs": %s, "python_in_venv": %s, "systemd": %s, "local_engine": %s, "engine_config_current": %s, "state_home": "%s", "state_home_ready": %s, "box_image": "%s", "image_assets": "%s", "ca_sha256": "%s"}\n' \
    "$docker_answers" "$(has dockerd)" "$(has gpg)" \
    "$( (command -v debootstrap || test -x /usr/sbin/debootstrap) >/dev/null 2>&1 && echo true || echo false)" \
    "$libs" "$venv" "$systemd" "$local_engine" "$engine_config_current" "$state_home" "$state_home_ready" \
    "$box_image" "$image_assets" "$ca_sha256"
