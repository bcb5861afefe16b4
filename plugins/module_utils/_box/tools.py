# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_tools: an agent CLI pinned per box, installed from npm onto the agent volume.

Private to the col_agents.tx9 collection. Each tool lives in
TOOLS_ROOT/<tool> with a link in TOOLS_ROOT/bin, which comes before the image's
copy on the agent's PATH. The install runs in the agent container as agent
through INSTALL_SCRIPT, whose variable inputs are all positional parameters:
npm installs into a staging directory on the same volume, the staged binary
must report the version, the old marker goes, the live tree is swapped and
checked again, and the marker (JSON naming the package and version) is
written last. A marker whose binary is missing or broken counts as not
installed. npm is limited by the script itself (`timeout` kills its process
group); the host waits the limit plus BACKSTOP_MARGIN, then kills what is left
and confirms it is gone.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box.guest import run_in
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import BoxObjects, container_state
from ansible_collections.col_agents.tx9.plugins.module_utils._box.tool_pins import LATEST, PACKAGES, VERSION_PATTERN
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._names import ROLE_AGENT, validate_box_name

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome

TOOLS_ROOT = '/data/home/agent/.local/share/tx9/tools'
TOOLS_BIN = f'{TOOLS_ROOT}/bin'
VERSION_IN_OUTPUT = re.compile(r'v?(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?)')
DEFAULT_TIMEOUT = 540
# The host waits this much longer than the script's own limit (which itself allows KILL_AFTER more).
BACKSTOP_MARGIN = 30
KILL_AFTER = 10
# Exit codes of `timeout` when it stopped npm (TERM, then KILL).
TIMED_OUT_CODES = (124, 137)
TOO_LONG = 'the install took too long and was stopped'
NOT_STOPPED = 'the install took too long and could not be stopped; wait a minute before trying again'
FIX = (
    "Read npm's words in msg: check the version exists (npm view <package> versions) and that the box reaches "
    'the npm registry, or raise timeout; the previous install is still in place.'
)

# `$1` tools root, then pairs of `tool command`. One line per tool: tool, 1 when anything of it is on the
# volume, the marker's JSON, the box binary's first --version line, the image binary's (each `-` when none).
CHECK_SCRIPT = r"""ROOT="$1"; shift
while [ "$#" -ge 2 ]; do
    TOOL="$1"; BIN="$2"; shift 2
    DIR="$ROOT/$TOOL"; PRESENT=0; MARKER=-; BOX=; IMAGE=
    if [ -e "$DIR" ] || [ -L "$ROOT/bin/$BIN" ]; then PRESENT=1; fi
    for f in "$DIR"/.installed-*.json; do
        if [ -f "$f" ]; then MARKER=$(head -c 4096 "$f" | tr -d '\t\r\n'); fi
    done
    if [ -x "$DIR/node_modules/.bin/$BIN" ]; then
        BOX=$("$DIR/node_modules/.bin/$BIN" --version </dev/null 2>/dev/null | head -n 1 | tr -d '\t\r') || BOX=
    fi
    IMAGE=$(PATH=/usr/local/bin:/usr/bin:/bin; export PATH
        "$BIN" --version </dev/null 2>/dev/null | head -n 1 | tr -d '\t\r') || IMAGE=
    printf '%s\t%s\t%s\t%s\t%s\n' "$TOOL" "$PRESENT" "$MARKER" "${BOX:--}" "${IMAGE:--}"
done"""

# `$1` tools root, `$2` tool, `$3` npm package, `$4` requested version or latest, `$5` command, `$6` marker
# file name, `$7` seconds npm may run. An attempt that dies half-way leaves only its staging directory,
# which the next attempt clears; the marker is written last, so a marker always means a finished install.
INSTALL_SCRIPT = r"""set -eu
ROOT="$1"; TOOL="$2"; PKG="$3"; REQ="$4"; BIN="$5"; MARKER="$6"; LIMIT="$7"
DIR="$ROOT/$TOOL"
STAGE="$DIR/.staging"
reports() {
    if ! "$1" --version </dev/null 2>&1 | tr -s ' \t()' '\n' | sed 's/^v//' | grep -qxF "$2"; then
        echo "$1 --version does not report $2" >&2
        return 1
    fi
}
mkdir -p "$DIR" "$ROOT/bin"
rm -rf "$STAGE"
mkdir -p "$STAGE"
trap 'rm -rf "$STAGE"' EXIT
export npm_config_cache="$STAGE/.npm-cache" npm_config_update_notifier=false
timeout -k 10 "$LIMIT" npm install --prefix "$STAGE" --no-audit --no-fund --no-progress --loglevel=error "$PKG@$REQ"
VERSION=$(node -p 'require(process.argv[1]).version' "$STAGE/node_modules/$PKG/package.json")
if [ "$REQ" != latest ] && [ "$VERSION" != "$REQ" ]; then
    echo "npm installed $PKG $VERSION, not $REQ" >&2
    exit 3
fi
reports "$STAGE/node_modules/.bin/$BIN" "$VERSION"
rm -f "$DIR"/.installed-*
rm -rf "$DIR/node_modules"
mv "$STAGE/node_modules" "$DIR/node_modules"
reports "$DIR/node_modules/.bin/$BIN" "$VERSION"
ln -sfn "../$TOOL/node_modules/.bin/$BIN" "$ROOT/bin/$BIN"
printf '{"tool": "%s", "package": "%s", "requested": "%s", "version": "%s"}\n' \
    "$TOOL" "$PKG" "$REQ" "$VERSION" > "$STAGE/marker"
mv "$STAGE/marker" "$DIR/$MARKER"
echo "installed $PKG $VERSION"
"""

# `$1` tools root, `$2` tool, `$3` command: the marker first, then the link, then the tree.
REMOVE_SCRIPT = r"""set -eu
rm -f "$1/$2"/.installed-*
rm -f "$1/bin/$3"
rm -rf "$1/$2"
echo removed"""

# `$1` and `$2` patterns (pgrep -f form) of the install's processes. Kills each, and the process group
# of each that leads one (`timeout` leads npm's; dash's kill takes no `--`), then waits until none is
# left. Prints `gone` only then.
REAP_SCRIPT = r"""i=0
while :; do
    PIDS=$(pgrep -f "$1"; pgrep -f "$2") || true
    if [ -z "$PIDS" ]; then echo gone; exit 0; fi
    for p in $PIDS; do
        g=$(ps -o pgid= -p "$p" 2>/dev/null | tr -d ' ') || g=
        if [ "$g" = "$p" ]; then kill -KILL "-$g" 2>/dev/null || true; fi
        kill -KILL "$p" 2>/dev/null || true
    done
    i=$((i+1))
    if [ "$i" -gt 20 ]; then echo alive; exit 1; fi
    sleep 0.5
done"""
INSTALL_NAME = 'tx9-tools-install'


def marker_name(package: str, requested: str) -> str:
    """The marker's file name for package at requested: a plain name that changes with the pin."""
    safe = re.sub(r'[^A-Za-z0-9._+-]', '-', f'{package}@{requested}').lstrip('-.')
    return f'.installed-{safe}.json'


def tool_dir(tool: str) -> str:
    return f'{TOOLS_ROOT}/{tool}'


def check_argv(tools: list[str]) -> list[str]:
    argv = ['sh', '-c', CHECK_SCRIPT, 'tx9-tools-check', TOOLS_ROOT]
    for tool in tools:
        argv += [tool, PACKAGES[tool][1]]
    return argv


def install_argv(tool: str, requested: str, limit: int) -> list[str]:
    """The install's argv: every variable input a positional parameter, never part of the script text."""
    package, command = PACKAGES[tool]
    marker = marker_name(package, requested)
    return [
        'sh',
        '-c',
        INSTALL_SCRIPT,
        INSTALL_NAME,
        TOOLS_ROOT,
        tool,
        package,
        requested,
        command,
        marker,
        str(max(1, limit)),
    ]


def remove_argv(tool: str) -> list[str]:
    return ['sh', '-c', REMOVE_SCRIPT, 'tx9-tools-remove', TOOLS_ROOT, tool, PACKAGES[tool][1]]


def reap_argv() -> list[str]:
    """Kills what is left of an install; the brackets keep the reap's own command line from matching."""
    return [
        'sh',
        '-c',
        REAP_SCRIPT,
        'tx9-tools-reap',
        f'[n]pm install --prefix {TOOLS_ROOT}/',
        f'[t]x9-tools-install {TOOLS_ROOT}',
    ]


def reap_says_gone(output: str) -> bool:
    return any(line.strip() == 'gone' for line in output.splitlines())


def output_tail(output: str, lines: int = 8, limit: int = 800) -> str:
    """The last lines of output (at most limit characters, whole lines where possible), blank lines dropped."""
    kept = [line.rstrip() for line in output.strip().splitlines() if line.strip()][-lines:]
    text = '\n'.join(kept)
    if len(text) > limit:
        text = text[-limit:]
        text = text.split('\n', 1)[1] if '\n' in text[:-1] else text
    return text.strip()


def failure_detail(code: int | None, timed_out: bool, stopped: bool | None, output: str) -> str:
    """Why an install did not finish, in words: too long (stopped or not), npm's last lines, or the status."""
    if timed_out or code in TIMED_OUT_CODES:
        return TOO_LONG if stopped is not False else NOT_STOPPED
    # npm's pointer to its log names a file in the staging directory, which is gone by now.
    kept = [line for line in output.splitlines() if 'A complete log of this run' not in line and '_logs/' not in line]
    tail = output_tail('\n'.join(kept))
    return tail or f'the install exited with status {code if code is not None else "unknown"}'


def parse_version(text: str | None) -> str | None:
    found = VERSION_IN_OUTPUT.search(text or '')
    return found.group(1) if found else None


@dataclass
class Seen:
    """One tool as the check script found it in the box."""

    present: bool
    marker: dict[str, Any] | None
    box_version: str | None
    image_version: str | None

    def installed(self, tool: str) -> str | None:
        """The box install's version, when its marker names the tool's package and its binary reports it."""
        marker = self.marker or {}
        version = marker.get('version')
        if marker.get('package') != PACKAGES[tool][0] or not version or self.box_version != version:
            return None
        return str(version)

    def satisfies(self, tool: str, requested: str) -> bool:
        installed = self.installed(tool)
        if installed is None:
            return False
        if requested == LATEST:
            return (self.marker or {}).get('requested') == LATEST
        return installed == requested

    def view(self, tool: str, requested: str | None) -> dict[str, Any]:
        installed = self.installed(tool)
        if installed is not None:
            return dict(requested=requested, installed=installed, source='box', package=PACKAGES[tool][0])
        return dict(requested=requested, installed=self.image_version, source='image', package=PACKAGES[tool][0])


def parse_check(output: str) -> dict[str, Seen]:
    """The check script's lines as tool -> Seen; a marker that is not a JSON object counts as none."""
    seen: dict[str, Seen] = {}
    for line in output.splitlines():
        fields = line.rstrip('\r').split('\t')
        if len(fields) != 5 or fields[0] not in PACKAGES:
            continue
        tool, present, marker_text, box, image = fields
        marker: dict[str, Any] | None = None
        if marker_text != '-':
            try:
                loaded = json.loads(marker_text)
            except ValueError:
                loaded = None
            marker = loaded if isinstance(loaded, dict) else None
        seen[tool] = Seen(present == '1', marker, parse_version(box), parse_version(image))
    return seen


def wanted_tools(tools: Any, state: str) -> dict[str, str | None]:
    """The tools option as tool -> requested version (None with state absent); INVALID_ARGUMENT otherwise."""
    if not isinstance(tools, dict) or not tools:
        raise invalid('tools must be a mapping of tool to version, such as codex: 0.169.0')
    wanted: dict[str, str | None] = {}
    for tool, version in tools.items():
        if tool not in PACKAGES:
            raise invalid(f'tx9_tools knows no tool {tool!r}; it installs {", ".join(sorted(PACKAGES))}')
        if state == 'absent':
            wanted[tool] = None
            continue
        text = '' if version is None else str(version).strip()
        if text != LATEST and not VERSION_PATTERN.match(text):
            raise invalid(f'The version of {tool} must be latest or a version such as 0.169.0, not {text!r}')
        wanted[tool] = text
    return wanted


def invalid(reason: str) -> Tx9Error:
    return Tx9Error(reason, 'INVALID_ARGUMENT', 'Correct the tools option as msg says.')


class ToolsRun:
    """One tx9_tools run."""

    def __init__(self, client: Any, home: StateHome, params: dict[str, Any], check_mode: bool = False) -> None:
        self.client = client
        self.home = home
        self.box: str = validate_box_name(params['name'])
        self.state: str = params.get('state') or 'present'
        self.wanted = wanted_tools(params.get('tools'), self.state)
        self.limit = int(params.get('timeout') or DEFAULT_TIMEOUT)
        if self.limit < 1:
            raise Tx9Error('timeout must be at least 1 second.', 'INVALID_ARGUMENT', 'Give a positive timeout.')
        self.check_mode = check_mode

    def run(self) -> dict[str, Any]:
        with box_lock(self.client, self.home, self.box):
            return self.run_locked(self.agent_id())

    def agent_id(self) -> str:
        objects = BoxObjects(self.client, self.box)
        objects.check_ownership()
        if not objects.exists():
            raise Tx9Error(
                f'There is no box named {self.box}.',
                'NO_BOX',
                'Check the name with col_agents.tx9.tx9_info, or create the box with col_agents.tx9.tx9_box.',
            )
        agent = objects.containers[ROLE_AGENT]
        if agent is None or container_state(agent) != 'running':
            raise Tx9Error(
                f'The agent container of box {self.box} is not running, and the tools are installed in it.',
                'NOT_RUNNING',
                'Start the box with col_agents.tx9.tx9_box state=present.',
            )
        return str(agent['Id'])

    def run_locked(self, agent_id: str) -> dict[str, Any]:
        seen = self.check(agent_id)
        if self.state == 'absent':
            todo = [tool for tool in self.wanted if seen[tool].present]
        else:
            todo = [tool for tool, version in self.wanted.items() if not seen[tool].satisfies(tool, str(version))]
        action = 'remove' if self.state == 'absent' else 'install'
        actions = {tool: action if tool in todo else 'none' for tool in self.wanted}
        if self.check_mode or not todo:
            return dict(changed=bool(todo), tools=self.views(seen, actions))
        done: list[str] = []
        for tool in todo:
            try:
                self.apply(agent_id, tool)
            except Tx9Error as err:
                err.details.update(done=done)
                raise
            done.append(tool)
        return dict(changed=True, tools=self.views(self.check(agent_id), actions))

    def views(self, seen: dict[str, Seen], actions: dict[str, str]) -> dict[str, Any]:
        return {
            tool: dict(seen[tool].view(tool, version), action=actions[tool]) for tool, version in self.wanted.items()
        }

    def check(self, agent_id: str) -> dict[str, Seen]:
        code, output = run_in(self.client, agent_id, check_argv(list(self.wanted)), 'agent', 'the tools check')
        seen = parse_check(output)
        missing = [tool for tool in self.wanted if tool not in seen]
        if code != 0 or missing:
            raise Tx9Error(
                f'Box {self.box} could not report its tools (exit {code}): {output_tail(output, 3, 300)}',
                'GUEST_FAILED',
                'Run `hb doctor` in the box and fix what it names, then run again.',
            )
        return seen

    def apply(self, agent_id: str, tool: str) -> None:
        if self.state == 'absent':
            self.remove(agent_id, tool)
        else:
            self.install(agent_id, tool)

    def remove(self, agent_id: str, tool: str) -> None:
        code, output = run_in(self.client, agent_id, remove_argv(tool), 'agent', f'the removal of {tool}')
        if code != 0:
            raise Tx9Error(
                f'Removing the box install of {tool} from box {self.box} failed: {output_tail(output)}',
                'TOOL_INSTALL_FAILED',
                'Read the words in msg, fix their cause in the box, and run again.',
            )

    def install(self, agent_id: str, tool: str) -> None:
        requested = str(self.wanted[tool])
        code, timed_out, output = run_with_backstop(
            self.client, agent_id, install_argv(tool, requested, self.limit), self.limit + KILL_AFTER + BACKSTOP_MARGIN
        )
        if code == 0 and not timed_out:
            return
        stopped = self.reap(agent_id) if timed_out or code in TIMED_OUT_CODES else None
        detail = failure_detail(code, timed_out, stopped, output)
        raise Tx9Error(
            f'Installing {tool} {requested} in box {self.box} failed: {detail}',
            'TOOL_INSTALL_FAILED',
            FIX,
            details=dict(tool=tool, requested=requested),
        )

    def reap(self, agent_id: str) -> bool:
        code, output = run_in(self.client, agent_id, reap_argv(), 'root', 'the reap of the install')
        return code == 0 and reap_says_gone(output)


def run_with_backstop(client: Any, agent_id: str, argv: list[str], wait: float) -> tuple[int | None, bool, str]:
    """(exit code, timed out, output) of argv run as agent, waiting at most wait seconds for it to end."""
    api = client.api
    saved = api.timeout
    # npm may print nothing for minutes: the socket must outlast the wait, which is the real limit.
    api.timeout = wait + BACKSTOP_MARGIN
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        future = pool.submit(run_in, client, agent_id, argv, 'agent', 'the tool install')
        try:
            code, output = future.result(timeout=wait)
        except FutureTimeout:
            return None, True, ''
        return code, False, output
    finally:
        pool.shutdown(wait=False)
        api.timeout = saved
