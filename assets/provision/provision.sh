#!/bin/sh
# Runs inside `docker build`. One step per image layer, so a change to a later
# step (the guest files) reuses the cached layers of the heavy earlier ones.
#   provision.sh os       OS packages, the host CA bundle, the agent user
#   provision.sh npm      Node and the npm tools (Claude Code, Codex, Executor)
#   provision.sh hermes   Hermes in its own virtualenv
#   provision.sh assets   the guest runtime: the tx9guest package in /opt/tx9/guest,
#                         its launchers (hb, tx9-logs, entrypoints) in /opt/tx9/bin, profile
# Every tool is verified with --version before its layer is done.
set -eu

. /opt/tx9/box.env
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
TX9=/opt/tx9
AGENT_HOME=/data/home/agent

say() { printf 'tx9-provision: %s\n' "$*"; }
fail() { printf 'tx9-provision: FAILED: %s\n' "$*" >&2; exit 1; }

verify() {
    # verify NAME COMMAND...: the tool answers --version as the agent user.
    name=$1; shift
    out=$(runuser -u agent -- env HOME="$AGENT_HOME" PATH="$TX9/bin:/usr/local/bin:/usr/bin:/bin" "$@" --version 2>&1) \
        || fail "$name did not answer --version: $out"
    say "$name: $(printf '%s' "$out" | head -n 1)"
}

step_os() {
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends \
        ca-certificates curl git tmux sudo jq ripgrep python3 python3-venv \
        python-is-python3 sqlite3 procps less openssh-client gnupg xz-utils unzip
    # Trust the host's CA bundle (TLS-inspecting proxies): split it into one
    # certificate per file so update-ca-certificates folds it into the store.
    if [ -s "$TX9/host-ca.crt" ]; then
        mkdir -p /usr/local/share/ca-certificates/tx9-host
        awk -v dir=/usr/local/share/ca-certificates/tx9-host '
            /-----BEGIN CERTIFICATE-----/ { n++; f = sprintf("%s/host-%04d.crt", dir, n) }
            f { print > f }
            /-----END CERTIFICATE-----/ { close(f); f = "" }' "$TX9/host-ca.crt"
        update-ca-certificates
    fi
    groupadd --gid 1001 agent
    useradd --uid 1001 --gid 1001 --home-dir "$AGENT_HOME" --no-create-home --shell /bin/bash agent
    printf 'agent ALL=(ALL) NOPASSWD:ALL\n' > /etc/sudoers.d/agent
    chmod 0440 /etc/sudoers.d/agent
    mkdir -p "$AGENT_HOME" /data/logs "$TX9/bin"
    chown -R agent:agent "$AGENT_HOME" /data/logs
    chmod 0711 /data
    rm -rf /var/lib/apt/lists/*
}

step_npm() {
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends nodejs npm
    rm -rf /var/lib/apt/lists/*
    major=$(node --version | sed 's/^v\([0-9]*\).*/\1/')
    [ "$major" = "$NODE_MAJOR" ] || fail "node major is $major, box.env pins $NODE_MAJOR"
    npm config set --global cafile "$CA_BUNDLE"
    npm config set --global fund false
    npm config set --global update-notifier false
    pkgs=""
    [ "$INSTALL_CLAUDE" = 1 ] && pkgs="$pkgs $CLAUDE_CODE_PACKAGE@$CLAUDE_CODE_VERSION"
    [ "$INSTALL_CODEX" = 1 ] && pkgs="$pkgs $CODEX_PACKAGE@$CODEX_VERSION"
    [ "$INSTALL_EXECUTOR" = 1 ] && pkgs="$pkgs $EXECUTOR_PACKAGE@$EXECUTOR_VERSION"
    if [ -n "$pkgs" ]; then
        # shellcheck disable=SC2086
        npm install --global --no-audit --loglevel=error $pkgs
    fi
    npm cache clean --force >/dev/null 2>&1 || true
    rm -rf /root/.npm /tmp/*
    [ "$INSTALL_CLAUDE" = 1 ] && verify claude claude
    [ "$INSTALL_CODEX" = 1 ] && verify codex codex
    [ "$INSTALL_EXECUTOR" = 1 ] && verify executor executor
    true
}

step_hermes() {
    [ "$INSTALL_HERMES" = 1 ] || { say "hermes disabled"; return 0; }
    python3 -m venv "$TX9/hermes"
    PIP_CERT="$CA_BUNDLE" PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
        "$TX9/hermes/bin/pip" install --quiet "${HERMES_PACKAGE}[${HERMES_EXTRAS}]==${HERMES_VERSION}"
    ln -sf "$TX9/hermes/bin/hermes" "$TX9/bin/hermes"
    find "$TX9/hermes" -name '__pycache__' -prune -exec rm -rf {} + 2>/dev/null || true
    verify hermes hermes
}

step_egress() {
    # Squid for a box's egress container (the same image, run as the proxy user); no service starts here.
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends squid iproute2 iptables
    rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
    squid -v | head -n 1
}

step_assets() {
    # Each launcher runs the package in $TX9/guest/tx9guest; its bytecode is
    # compiled here, as the agent cannot write beside it.
    python3 -m compileall -q "$TX9/guest/tx9guest"
    for f in hb tx9-logs tx9-agent-entrypoint tx9-executor-entrypoint tx9-egress-entrypoint; do
        install -m 0755 "$TX9/guest/$f" "$TX9/bin/$f"
    done
    install -m 0644 "$TX9/guest/ERR_EGRESS_DENIED" /usr/share/squid/errors/templates/ERR_EGRESS_DENIED
    # sudo keeps a confined box's proxy settings, so root's tools go the same way as the agent's.
    printf 'Defaults env_keep += "http_proxy https_proxy HTTP_PROXY HTTPS_PROXY no_proxy NO_PROXY NODE_USE_ENV_PROXY"\n' \
        > /etc/sudoers.d/tx9-proxy
    chmod 0440 /etc/sudoers.d/tx9-proxy
    install -m 0644 "$TX9/guest/profile.sh" /etc/profile.d/tx9-box.sh
    install -m 0644 "$TX9/box.env" /etc/tx9-box.env
    install -m 0644 "$TX9/guest/tmux.conf" /etc/tmux.conf
    printf '[ -f /etc/profile ] && . /etc/profile\n' > /etc/skel/.bash_profile
    install -o agent -g agent -m 0644 /etc/skel/.bash_profile "$AGENT_HOME/.bash_profile"
    "$TX9/bin/hb" init
    runuser -u agent -- "$TX9/bin/hb" versions
}

case "${1:-}" in
    os) step_os ;;
    npm) step_npm ;;
    hermes) step_hermes ;;
    egress) step_egress ;;
    assets) step_assets ;;
    *) fail "unknown step '${1:-}' (expected os, npm, hermes, egress or assets)" ;;
esac
