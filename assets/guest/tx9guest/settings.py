# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Paths and settings: where every file of a box is, and what /etc/tx9-box.env says.

Docker only injects the per-box variables, so the build pins and feature flags
come from the box.env file; the process environment overrides them.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
from collections.abc import Mapping
from typing import overload

from .errors import HbError

AGENT_USER = 'agent'
DEFAULT_DATA_DIR = '/data'
DEFAULT_RUNTIME_DIR = '/run/tx9'
DEFAULT_TOKEN_FILE = '/var/lib/tx9/executor-token'
# The groups of the box's host mounts, set by tx9 on the agent container (its group_add, as a list).
MOUNT_GIDS_VAR = 'TX9_AGENT_MOUNT_GIDS'
MAX_MOUNT_GIDS = 64
GID_MAX = 2**32 - 2


class Paths:
    """Every file and directory the guest runtime reads or writes.

    All of the box's own files live on the data volume, TX9_DATA_DIR (tests
    point it at a temporary directory); only the runtime state (PIDs, locks)
    stays outside it, so it never travels with a backup.
    """

    bin_dir = '/opt/tx9/bin'
    # Tools pinned per box (tx9_tools) come before the image's copies in /usr/local/bin.
    box_tools_bin = '/data/home/agent/.local/share/tx9/tools/bin'
    tool_dirs = (box_tools_bin, bin_dir, '/usr/local/bin')
    box_env = '/etc/tx9-box.env'
    profile = '/etc/profile.d/tx9-box.sh'

    def __init__(self, settings: Mapping[str, str]) -> None:
        self.data = settings.get('TX9_DATA_DIR') or DEFAULT_DATA_DIR
        self.logs = os.path.join(self.data, 'logs')
        self.home = home = os.path.join(self.data, 'home', AGENT_USER)
        self.claude_dir = settings.get('CLAUDE_CONFIG_DIR') or os.path.join(home, '.claude')
        self.codex_home = settings.get('CODEX_HOME') or os.path.join(home, '.codex')
        self.hermes_home = settings.get('HERMES_HOME') or os.path.join(home, '.hermes')
        self.state = os.path.join(home, '.config', 'hermes-box')
        self.marker = os.path.join(home, '.hermes-box-wired')
        self.token_env = os.path.join(self.state, 'executor-mcp.env')
        self.quiesced = os.path.join(self.state, 'quiesced')
        self.gateway_disabled = os.path.join(self.state, 'gateway-disabled')
        self.gateway_policy = os.path.join(self.state, 'gateway-policy-initialized')
        self.manifest = os.path.join(self.state, 'manifest.json')
        # Each tool's version with what identifies its file, so a manifest asks only a changed tool.
        self.tool_versions = os.path.join(self.state, 'tool-versions.json')
        self.executor_data = os.path.join(home, '.executor')
        config_home = settings.get('XDG_CONFIG_HOME') or ''
        if not os.path.isabs(config_home):
            config_home = os.path.join(home, '.config')
        self.services_dir = os.path.join(config_home, 'hermes-box', 'services.d')
        self.claude_json = os.path.join(self.claude_dir, '.claude.json')
        self.codex_toml = os.path.join(self.codex_home, 'config.toml')
        self.hermes_yaml = os.path.join(self.hermes_home, 'config.yaml')
        # Runtime state: never on the data volume, cleared when the container starts.
        self.runtime = settings.get('TX9_RUNTIME_DIR') or DEFAULT_RUNTIME_DIR
        # The token tx9 delivered to this container after a rotation (the container's own
        # layer: a recreate starts without it, and the environment then carries the token).
        self.token_file = settings.get('TX9_TOKEN_FILE') or DEFAULT_TOKEN_FILE
        self.wiring_lock = os.path.join(self.runtime, 'wiring.lock')
        self.services_lock = os.path.join(self.runtime, 'services.lock')
        self.services_runtime = os.path.join(self.runtime, 'services')
        self.gateway_lock = os.path.join(self.runtime, 'gateway.lock')
        self.gateway_state = os.path.join(self.runtime, 'gateway.state')
        self.workload_pid = os.path.join(self.runtime, 'workload.pid')

    def service_state(self, name: str) -> str:
        return os.path.join(self.services_runtime, f'{name}.state')

    def launcher(self, name: str) -> str:
        """The installed launcher NAME (hb, tx9-logs), or the one beside this package in a source tree."""
        installed = os.path.join(self.bin_dir, name)
        if os.path.isfile(installed):
            return installed
        return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), name)


def read_text(path: str) -> str | None:
    """The file's text, or None when it does not exist or cannot be read."""
    try:
        with open(path, encoding='utf-8') as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def parse_env_file(text: str) -> dict[str, str]:
    """KEY=VALUE lines of a shell env file (box.env); quotes are stripped."""
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        if line.startswith('export '):
            line = line[len('export ') :].lstrip()
        key, sep, value = line.partition('=')
        if not sep or not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', key):
            continue
        try:
            parts = shlex.split(value, comments=True)
        except ValueError:
            parts = [value]
        values[key] = parts[0] if parts else ''
    return values


def load_settings(environ: Mapping[str, str] | None = None, box_env_path: str = Paths.box_env) -> dict[str, str]:
    """box.env values overlaid by the process environment."""
    settings = parse_env_file(read_text(box_env_path) or '')
    settings.update(os.environ if environ is None else environ)
    return settings


def flag(settings: Mapping[str, str], name: str, default: str = '1') -> bool:
    return settings.get(name, default).strip() == '1'


@overload
def number(settings: Mapping[str, str], name: str, default: int) -> int:
    """An int for an int default, a float for a float default."""


@overload
def number(settings: Mapping[str, str], name: str, default: float) -> float:
    """An int for an int default, a float for a float default."""


def number(settings: Mapping[str, str], name: str, default: float) -> float:
    """A numeric setting, or default when it is unset or not a number."""
    try:
        value = float(settings.get(name) or default)
    except ValueError:
        return default
    return int(value) if isinstance(default, int) else value


def agent_account() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(AGENT_USER)
    except KeyError:
        raise HbError(
            f"the '{AGENT_USER}' user is missing from this image; "
            'rebuild the box image (its provision step creates the user)'
        ) from None


def mount_gids(environ: Mapping[str, str] | None = None) -> list[int]:
    """The host mounts' groups tx9 gives the agent (TX9_AGENT_MOUNT_GIDS: comma-separated GIDs).

    Digits only, each a group other than root (1 to GID_MAX), at most
    MAX_MOUNT_GIDS distinct ones; anything else raises HbError.
    """
    environ = os.environ if environ is None else environ
    raw = environ.get(MOUNT_GIDS_VAR, '').strip()
    gids: list[int] = []
    for part in raw.split(',') if raw else []:
        part = part.strip()
        if not re.fullmatch(r'[0-9]{1,10}', part) or not 0 < int(part) <= GID_MAX:
            raise HbError(
                f'{MOUNT_GIDS_VAR} holds {part[:20]!r}, which is not a group id from 1 to {GID_MAX}; '
                'recreate the agent container with tx9 (tx9_box recreate: true) so it gets a valid list'
            )
        if int(part) not in gids:
            gids.append(int(part))
    if len(gids) > MAX_MOUNT_GIDS:
        raise HbError(
            f'{MOUNT_GIDS_VAR} names {len(gids)} groups, more than the {MAX_MOUNT_GIDS} a box takes; '
            "give the box's host mounts fewer distinct groups, then recreate its agent container"
        )
    return gids


def agent_groups(account: pwd.struct_passwd, environ: Mapping[str, str] | None = None) -> list[int]:
    """The agent's supplementary groups: its own (from /etc/group), then those of its host mounts."""
    groups = os.getgrouplist(account.pw_name, account.pw_gid)
    return groups + [gid for gid in mount_gids(environ) if gid not in groups]


def agent_ids() -> tuple[int, int] | None:
    """(uid, gid) of the agent, or None on a machine without that user."""
    try:
        entry = pwd.getpwnam(AGENT_USER)
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return None
