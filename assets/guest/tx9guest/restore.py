# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""restore-promote: replace the data volume with a staged backup (root, in the restore container)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from typing import TYPE_CHECKING

from . import settings
from .errors import HbError, UsageError

if TYPE_CHECKING:
    from .context import Context


class RestoreRefused(HbError):
    """The staged restore is not safe to promote; nothing was changed."""


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _require_dir(path: str, what: str) -> os.stat_result:
    info = _lstat(path)
    if info is None:
        raise RestoreRefused(f'{what} ({path}) is missing')
    if stat.S_ISLNK(info.st_mode):
        raise RestoreRefused(f'{what} ({path}) is a symlink, which is never followed')
    if not stat.S_ISDIR(info.st_mode):
        raise RestoreRefused(f'{what} ({path}) is not a directory')
    return info


def _check_tree(top: str, device: int, special_files_allowed: bool) -> None:
    """Refuse mount points below top, and special files where they are not allowed."""
    for directory, dirs, files in os.walk(top, followlinks=False):
        for name in dirs + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            if info.st_dev != device:
                raise RestoreRefused(f'{path} is a mount point; refusing to remove or replace anything across it')
            special = (
                stat.S_ISCHR(info.st_mode)
                or stat.S_ISBLK(info.st_mode)
                or stat.S_ISFIFO(info.st_mode)
                or stat.S_ISSOCK(info.st_mode)
            )
            if special and not special_files_allowed:
                raise RestoreRefused(f'{path} is a device, FIFO or socket, which a backup never holds')


def _chown_tree(top: str, uid: int, gid: int) -> None:
    """chown top and everything below it, never following a symlink."""
    os.chown(top, uid, gid, follow_symlinks=False)
    for directory, dirs, files in os.walk(top, followlinks=False):
        for name in dirs + files:
            os.chown(os.path.join(directory, name), uid, gid, follow_symlinks=False)


def _remove_entry(path: str) -> None:
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)  # fd-based on Linux: symlinks inside are removed, never followed
    else:
        os.unlink(path)


def _write_new_file(directory: str, name: str, content: str, uid: int, gid: int) -> None:
    """Write directory/name through a fresh temporary file and a rename (never through a symlink)."""
    fd, tmp = tempfile.mkstemp(prefix='.tx9-', dir=directory)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            os.fchmod(f.fileno(), 0o644)
            f.write(content)
        os.chown(tmp, uid, gid, follow_symlinks=False)
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def check_restore(stage: str, data_dir: str) -> tuple[str, str]:
    """Every check of promote_restore, before anything changes; returns (stage, data_dir)."""
    if os.geteuid() != 0:
        raise RestoreRefused('restore-promote must run as root (in the restore container)')
    data_dir = os.path.normpath(data_dir)
    stage = os.path.normpath(stage)
    data_info = _require_dir(data_dir, 'the data directory')
    name = os.path.basename(stage)
    if not os.path.isabs(stage) or os.path.dirname(stage) != data_dir or name in ('', '.', '..'):
        raise RestoreRefused(f'the staging directory must be a direct child of {data_dir}, not {stage}')
    _require_dir(stage, 'the staging directory')
    _require_dir(os.path.join(stage, 'home'), 'the staged home directory')
    _require_dir(os.path.join(stage, 'home', 'agent'), 'the staged agent home')
    for rel in ('.config', '.config/hermes-box'):
        path = os.path.join(stage, 'home', 'agent', rel)
        if _lstat(path) is not None:
            _require_dir(path, f'the staged ~/{rel}')
    if _lstat(os.path.join(stage, 'logs')) is not None:
        _require_dir(os.path.join(stage, 'logs'), 'the staged logs directory')
    _check_tree(stage, data_info.st_dev, special_files_allowed=False)
    for entry in os.listdir(data_dir):
        path = os.path.join(data_dir, entry)
        info = os.lstat(path)
        if entry == name:
            continue
        if info.st_dev != data_info.st_dev:
            raise RestoreRefused(f'{path} is a mount point; refusing to remove anything across it')
        if stat.S_ISDIR(info.st_mode):
            _check_tree(path, data_info.st_dev, special_files_allowed=True)
    return stage, data_dir


def promote_restore(stage: str, data_dir: str, uid: int, gid: int) -> list[str]:
    """Replace everything in data_dir with the entries staged in stage; returns summary lines.

    Raises RestoreRefused (nothing changed) when a check fails, OSError when
    a step fails after the old content started to go.
    """
    try:
        stage, data_dir = check_restore(stage, data_dir)
    except OSError as e:
        raise RestoreRefused(f'cannot inspect {e.filename or data_dir}: {e.strerror or e}') from None
    name = os.path.basename(stage)
    removed = 0
    for entry in os.listdir(data_dir):
        if entry != name:
            _remove_entry(os.path.join(data_dir, entry))
            removed += 1
    moved = sorted(os.listdir(stage))
    for entry in moved:
        os.rename(os.path.join(stage, entry), os.path.join(data_dir, entry))
    os.rmdir(stage)
    home = os.path.join(data_dir, 'home', 'agent')
    logs = os.path.join(data_dir, 'logs')
    if _lstat(logs) is None:
        os.mkdir(logs, 0o700)
    os.chown(os.path.join(data_dir, 'home'), 0, 0, follow_symlinks=False)
    _chown_tree(home, uid, gid)
    _chown_tree(logs, uid, gid)
    state = home
    for rel, mode in (('.config', 0o755), ('hermes-box', 0o700)):
        state = os.path.join(state, rel)
        if _lstat(state) is None:
            os.mkdir(state, mode)
            os.chown(state, uid, gid, follow_symlinks=False)
    os.chmod(state, 0o700)
    _write_new_file(state, 'quiesced', 'import\n', uid, gid)
    _write_new_file(state, 'gateway-disabled', '', uid, gid)
    _write_new_file(state, 'gateway-policy-initialized', '', uid, gid)
    os.chown(data_dir, 0, 0, follow_symlinks=False)
    os.chmod(data_dir, 0o711)
    return [
        f'removed {removed} old entr{"y" if removed == 1 else "ies"} of {data_dir}',
        f'promoted {", ".join(moved)}',
        'the box is quiesced (by import) with its gateway disabled',
    ]


def cmd_restore_promote(ctx: Context, args: list[str]) -> int:
    if len(args) != 1 or args[0].startswith('-'):
        raise UsageError('restore-promote takes exactly one argument: the staging directory')
    account = settings.agent_account()
    try:
        lines = promote_restore(args[0], ctx.paths.data, account.pw_uid, account.pw_gid)
    except RestoreRefused as e:
        raise HbError(f'refused: {e}; nothing was changed, so fix the backup or its staging and import again') from None
    except OSError as e:
        raise HbError(
            f"failed half-way: {e}; the box's data volume is incomplete, so delete the box and import again"
        ) from None
    for line in lines:
        print(f'hb restore-promote: {line}')
    return 0
