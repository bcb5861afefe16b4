# shellcheck shell=sh
# tx9 box login environment (/etc/profile.d/tx9-box.sh), for every login
# shell in the agent container and in tmux windows.

export HOME="${HOME:-/data/home/agent}"
case ":$PATH:" in
    *":/opt/tx9/bin:"*) ;;
    *) PATH="/opt/tx9/bin:$PATH" ;;
esac
case ":$PATH:" in
    *":$HOME/.local/bin:"*) ;;
    *) PATH="$HOME/.local/bin:$PATH" ;;
esac
# Tools pinned per box (tx9_tools) come before the image's copies.
case ":$PATH:" in
    *":/data/home/agent/.local/share/tx9/tools/bin:"*) ;;
    *) PATH="/data/home/agent/.local/share/tx9/tools/bin:$PATH" ;;
esac
export PATH

export CLAUDE_CONFIG_DIR="${CLAUDE_CONFIG_DIR:-/data/home/agent/.claude}"
export CODEX_HOME="${CODEX_HOME:-/data/home/agent/.codex}"
export HERMES_HOME="${HERMES_HOME:-/data/home/agent/.hermes}"
export XDG_CONFIG_HOME="${XDG_CONFIG_HOME:-$HOME/.config}"
export XDG_DATA_HOME="${XDG_DATA_HOME:-$HOME/.local/share}"
export XDG_STATE_HOME="${XDG_STATE_HOME:-$HOME/.local/state}"

# The Executor token for Codex (bearer_token_env_var) and Hermes (${...}
# placeholder); hb wire-mcp keeps this file current.
if [ -r "$HOME/.config/hermes-box/executor-mcp.env" ]; then
    . "$HOME/.config/hermes-box/executor-mcp.env"
fi
# The token tx9 injects into the container is the current one; the file can
# lag behind it for one workload pass after a token change.
if [ -n "${BOXD_EXECUTOR_TOKEN:-}" ]; then
    export EXECUTOR_MCP_TOKEN="$BOXD_EXECUTOR_TOKEN"
fi
