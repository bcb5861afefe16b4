# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`hb init`: the box's managed directories, markers and runtime directory."""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

from . import settings
from .cmdargs import parse_flags
from .errors import HbError
from .files import ensure_dir, ensure_runtime, give_to_agent, probe_writable, remove, touch
from .settings import Paths

if TYPE_CHECKING:
    from .context import Context

# Home directories the box manages; STATE (.config/hermes-box) stays private
# because it holds the token env file.
MANAGED_DIRS = (
    ('.claude', 0o755),
    ('.codex', 0o755),
    ('.hermes', 0o755),
    ('workspace', 0o755),
    ('.config', 0o755),
    ('.config/hermes-box', 0o700),
    ('.config/hermes-box/services.d', 0o700),
    ('.local', 0o755),
    ('.local/share', 0o755),
    ('.local/state', 0o755),
)


def clear_runtime(paths: Paths) -> None:
    """Forget the previous container run's PIDs and locks (its processes are gone)."""
    if not os.path.isdir(paths.runtime) or os.path.islink(paths.runtime):
        return
    for entry in os.listdir(paths.runtime):
        path = os.path.join(paths.runtime, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            remove(path)


def cmd_init(ctx: Context, args: list[str]) -> int:
    boot = parse_flags('init', args, {'--boot'})['--boot']
    settings.agent_account()
    home = ctx.paths.home
    as_root = os.geteuid() == 0
    # Root can probe /data itself; the agent only owns its home below it.
    data_dir, log_dir = ctx.paths.data, ctx.paths.logs
    probe_dir = data_dir if as_root else home
    if not os.path.isdir(probe_dir):
        raise HbError(f"{probe_dir} does not exist; the box's data volume is not mounted at {data_dir}")
    problem = probe_writable(probe_dir)
    if problem:
        raise HbError(f"{probe_dir} is not writable ({problem}); check the box's data volume")
    if not as_root and not os.path.isdir(log_dir):
        raise HbError(f'{log_dir} is missing and only root can create it; run `hb init` as root')
    ensure_dir(os.path.dirname(home), 0o755)
    ensure_dir(home, 0o755)
    give_to_agent(home)
    for rel, mode in MANAGED_DIRS:
        path = os.path.join(home, rel)
        ensure_dir(path, mode)
        give_to_agent(path)
    ensure_dir(log_dir, 0o700)
    give_to_agent(log_dir)
    os.chmod(log_dir, 0o700)
    os.chmod(ctx.paths.state, 0o700)
    if boot:
        clear_runtime(ctx.paths)
    if as_root or os.path.isdir(ctx.paths.runtime):
        ensure_runtime(ctx.paths)
        give_to_agent(ctx.paths.runtime)
    # Every new box starts with its gateway disabled; the policy marker keeps
    # a later `init` from disabling a gateway the user has since enabled.
    if not os.path.lexists(ctx.paths.gateway_policy):
        touch(ctx.paths.gateway_disabled)
        touch(ctx.paths.gateway_policy)
    print(f'hb init: {home} ready')
    return 0
