# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The new host's half of a pre-copied move: a staged volume that nothing runs on, then the box.

Private to the col_agents.tx9 collection. The base archive is validated and
restored into a volume of its own, labelled tx9.stage=<box> (not a box's
object: no listing, inventory or box module sees it), and the staged tree's
records are kept beside its record in the state home. Each change set is
checked against that tree (changeset.py), then applied: the paths it takes
away are removed here, through descriptors that never follow a link, and the
changed members are extracted by GNU tar in the hardened restore container
from our canonical stream. Promotion makes the box: its agent volume is
created and the staged tree is moved into it by renames on this host (the
two volumes' directories share a filesystem), then the box is created with a
fresh token as an import makes it. A stage whose application did not finish,
or whose base is not the one asked for, is removed, never promoted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import time
from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.changeset import (
    CHANGES_FORMAT,
    ChangeStream,
    check_changes,
    decrypted_once,
    tree_record,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import (
    Archive,
    expansion_bound,
    plain_payload,
    read_archive,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.validator import (
    PayloadValidator,
    iter_members,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import ENGINE_ERRORS, docker_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import write_atomic
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._names import LABEL_VERSION
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.host_volumes import volume_directory
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.import_faults import free_volume_space, no_space
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import (
    AGENT_GID,
    AGENT_UID,
    TAR_EXTRACT,
    Import,
    expected_sha256,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.precopy import UNAVAILABLE_FIX
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.stage_promote import (
    agent_tree,
    move_tree,
    promote_stage,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION, DEFAULT_IMAGE

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._archive.gpg import Gpg
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
    from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import RestoreStream

LABEL_STAGE = 'tx9.stage'
# The data of a superseded copy a promotion replaced, set aside by renames until the move is done.
LABEL_SET_ASIDE = 'tx9.set-aside'
# The change set's members go straight into /data (the staged volume is ours alone);
# the end mark proves the stream whole.
APPLY_SCRIPT = (
    'set -eu\n'
    '[ "$3" = - ] || exec <"$3"\n' + TAR_EXTRACT.replace('"$1"', '/data') + '\n'
    '[ -f "/data/$2" ] || { echo "the change stream ended before its end mark" >&2; exit 3; }\n'
    'rm -f -- "/data/$2"\n'
)
STALE_FIX = 'Run the move again: it stages the box afresh.'


def stage_volume(box: str) -> str:
    return f'tx9-{box}-staged'


def set_aside_volume(box: str) -> str:
    return f'tx9-{box}-set-aside'


class StageRecord:
    """<home>/stages/<box>/: record.json (base, head, step) and tree (the staged tree's records)."""

    def __init__(self, home: StateHome, box: str) -> None:
        self.directory = os.path.join(home.path, 'stages', box)
        self.path = os.path.join(self.directory, 'record.json')
        self.tree = os.path.join(self.directory, 'tree')

    def read(self) -> dict[str, Any] | None:
        try:
            with open(self.path, encoding='utf-8') as handle:
                record: dict[str, Any] = json.load(handle)
        except (OSError, ValueError):
            return None
        return record

    def write(self, **fields: Any) -> None:
        os.makedirs(self.directory, 0o700, exist_ok=True)
        write_atomic(self.path, json.dumps(dict(fields, at=int(time.time()))) + '\n')

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


class Stage(Import):
    """The staged volume of one box: its base, its changes, its promotion, its removal."""

    def __init__(self, client: Any, home: StateHome, box: str, params: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(client, home, params.get('base') or params.get('changes') or '', params, **kwargs)
        self.box = box
        self.record = StageRecord(home, box)
        # Present while a superseded copy's data is set aside and that copy still exists (its data goes back on
        # removal); beside the stage's directory, so a new base does not take it.
        self.aside_marker = os.path.join(home.path, 'stages', f'{box}.set-aside')
        self.changes: Archive | None = None

    def volume(self, box: str) -> str:
        return stage_volume(box)

    def canonical(self, archive: Archive, gpg: Gpg | None, end_mark: str) -> RestoreStream:
        if archive is self.changes:
            return ChangeStream(archive, self.password, gpg, AGENT_UID, AGENT_GID, end_mark=end_mark)
        return super().canonical(archive, gpg, end_mark)

    def exists(self) -> bool:
        try:
            volume = self.client.api.inspect_volume(stage_volume(self.box))
        except ENGINE_ERRORS:
            return False
        return (volume.get('Labels') or {}).get(LABEL_STAGE) == self.box

    def state(self) -> dict[str, Any]:
        record = self.record.read() or {}
        return dict(name=self.box, volume=stage_volume(self.box), staged=self.exists(), **record)

    def remove(self, check_mode: bool = False) -> dict[str, Any]:
        """The stage and the data of a superseded copy a promotion set aside: both go. A promotion that stopped
        after setting that data aside but before it removed the copy gives the copy its data back instead (when
        the copy's volume is gone too, the data stays set aside)."""
        set_aside = self.owned_volume(set_aside_volume(self.box), LABEL_SET_ASIDE) is not None
        began = os.path.exists(self.aside_marker)
        present = self.exists() or self.record.read() is not None or set_aside or began
        if present and not check_mode:
            with box_lock(self.client, self.home, self.box):
                keep = set_aside and began and not self.put_back()
                self.discard_stage()
                if not keep:
                    self.remove_owned(set_aside_volume(self.box), LABEL_SET_ASIDE)
                self.end_set_aside()
        return dict(changed=present, stage=dict(name=self.box, staged=False))

    def put_back(self) -> bool:
        """Move the set-aside tree back into the superseded copy's agent volume; False when that volume is gone."""
        tree = agent_tree(self, self.box)
        if tree is None:
            return False
        move_tree(self.mountpoint(set_aside_volume(self.box)), tree)
        return True

    def end_set_aside(self) -> None:
        """The superseded copy is gone (or was never there): nothing set aside is to go back into it."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.aside_marker)

    def discard_stage(self) -> None:
        self.remove_owned(stage_volume(self.box), LABEL_STAGE)
        self.record.remove()

    def owned_volume(self, name: str, label: str) -> dict[str, Any] | None:
        """The volume, when it exists and carries label=<box>; NAME_CONFLICT when it exists without it."""
        try:
            volume: dict[str, Any] = self.client.api.inspect_volume(name)
        except ENGINE_ERRORS:
            return None
        if (volume.get('Labels') or {}).get(label) != self.box:
            raise Tx9Error(
                f"Volume {name} exists but is not box {self.box}'s (no {label} label).",
                'NAME_CONFLICT',
                f'Rename or remove volume {name} by hand; nothing was changed.',
            )
        return volume

    def remove_owned(self, name: str, label: str) -> None:
        if self.owned_volume(name, label) is None:
            return
        try:
            self.client.api.remove_volume(name, force=True)
        except ENGINE_ERRORS as exc:
            raise docker_error(f'remove volume {name}', exc) from exc

    def set_aside(self, box: str) -> None:
        """Move the tree of the superseded copy's agent volume into a volume of its own by renames, so removing
        that copy is quick while the box is down; the tree goes with the stage (remove), once the move is done."""
        tree = agent_tree(self, box)
        if tree is None:
            return
        name = set_aside_volume(box)
        began = os.path.exists(self.aside_marker) or not os.listdir(tree)
        if not began or self.owned_volume(name, LABEL_SET_ASIDE) is None:
            # What an earlier move set aside and never removed goes; a set-aside a promotion began (its marker says
            # so, or the copy's volume is empty) is kept and finished.
            self.remove_owned(name, LABEL_SET_ASIDE)
            labels = {LABEL_SET_ASIDE: box, LABEL_VERSION: COLLECTION_VERSION}
            try:
                self.client.api.create_volume(name=name, driver='local', labels=labels)
            except ENGINE_ERRORS as exc:
                raise docker_error(f'create volume {name}', exc) from exc
        # Kept outside the stage's record (which a new base replaces) until the copy is gone (end_set_aside).
        os.makedirs(os.path.dirname(self.aside_marker), 0o700, exist_ok=True)
        write_atomic(self.aside_marker, f'{name}\n')
        move_tree(tree, self.mountpoint(name))

    def stage_base(self, sha256: str | None, check_mode: bool = False) -> dict[str, Any]:
        """Validate the base archive and restore it into the staged volume; unchanged when it is staged already."""
        archive = read_archive(self.path, expected_sha256(sha256))
        whole = sha256.lower() if sha256 else self.whole_sha()
        record = self.record.read()
        if record and record.get('base') == whole and record.get('step') == 'ready' and self.exists():
            return dict(changed=False, stage=self.state())
        if check_mode:
            return dict(changed=True, stage=dict(name=self.box, staged=True, base=whole))
        gpg = self.gpg(archive)
        with box_lock(self.client, self.home, self.box):
            self.discard_stage()
            self.record.write(box=self.box, base=whole, head=whole, step='restoring')
            try:
                self.write_tree(archive, gpg)
                self.create_stage_volume()
                self.restore(self.box, self.image_ref(), archive, gpg)
            except BaseException:
                self.discard_stage()
                raise
            self.record.write(box=self.box, base=whole, head=whole, step='ready')
        return dict(changed=True, stage=self.state())

    def whole_sha(self) -> str:
        """The SHA-256 of the whole file at self.path: what the next change set names as its base."""
        digest = hashlib.sha256()
        with open(self.path, 'rb') as handle:
            for chunk in iter(lambda: handle.read(1024 * 1024), b''):
                digest.update(chunk)
        return digest.hexdigest()

    def image_ref(self) -> str:
        return str(self.params.get('image') or DEFAULT_IMAGE)

    def write_tree(self, archive: Archive, gpg: Gpg | None) -> None:
        """Validate the whole payload (space included) while writing the staged tree's records."""
        os.makedirs(self.record.directory, 0o700, exist_ok=True)
        free, where = free_volume_space(self.client)
        validator = PayloadValidator(max_disk=free, on_disk_exceeded=no_space(where))
        descriptor = os.open(self.record.tree, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, 'wb') as out, plain_payload(archive, self.password, gpg) as stream:
            for member in iter_members(stream, max_bytes=expansion_bound(archive)):
                path = validator.feed(member)
                out.write(tree_record(path, member))
            self.needed = validator.finish().disk

    def create_stage_volume(self) -> None:
        labels = {LABEL_STAGE: self.box, LABEL_VERSION: COLLECTION_VERSION}
        try:
            self.client.api.create_volume(name=stage_volume(self.box), driver='local', labels=labels)
        except ENGINE_ERRORS as exc:
            raise docker_error(f'create volume {stage_volume(self.box)}', exc) from exc

    def apply_changes(self, sha256: str | None, check_mode: bool = False) -> dict[str, Any]:
        """Check a change set against the staged tree, then apply it; the stage is removed when that fails."""
        archive = read_archive(self.path, expected_sha256(sha256), expected_format=CHANGES_FORMAT)
        record = self.ready_record()
        whole = sha256.lower() if sha256 else self.whole_sha()
        if record.get('head') == whole:
            return dict(changed=False, stage=self.state())
        gpg = self.gpg(archive)
        with decrypted_once(archive, self.password, gpg, self.record.tree + '.changes') as plain:
            return self.check_and_apply(plain, record, whole, check_mode)

    def check_and_apply(self, archive: Archive, record: dict[str, Any], whole: str, check_mode: bool) -> dict[str, Any]:
        """Check the change set (plain, or decrypted once) against the staged tree, then apply it."""
        new_tree = self.record.tree + '.new'
        free, where = free_volume_space(self.client)
        fields, removals, summary = check_changes(
            archive, None, None, self.record.tree, new_tree, free, no_space(where)
        )
        if fields.base != record.get('head'):
            os.unlink(new_tree)
            raise Tx9Error(
                f'The change set applies to {fields.base}, but the stage of {self.box} holds {record.get("head")}.',
                'STAGE_STALE',
                STALE_FIX,
            )
        result = dict(changed=True, removed=len(removals), members=summary.members)
        if check_mode:
            os.unlink(new_tree)
            return dict(result, stage=self.state())
        with box_lock(self.client, self.home, self.box):
            self.record.write(**dict(record, step='applying'))
            try:
                self.remove_paths(removals)
                self.changes, self.script = archive, APPLY_SCRIPT
                self.restore(self.box, self.image_ref(), archive, None)
            except BaseException:
                self.discard_stage()
                raise
            os.replace(new_tree, self.record.tree)
            self.record.write(**dict(record, head=whole, step='ready'))
        return dict(result, stage=self.state())

    def ready_record(self) -> dict[str, Any]:
        """The record of a stage that is whole; STAGE_STALE (and the stage removed) for one that is not."""
        record = self.record.read()
        if record is not None and record.get('step') == 'ready' and self.exists():
            return record
        if record is not None or self.exists():
            with box_lock(self.client, self.home, self.box):
                self.discard_stage()
        raise Tx9Error(
            f'There is no whole stage of box {self.box} on this host (none, or one whose last step did not finish, '
            'which was removed).',
            'STAGE_STALE',
            STALE_FIX,
        )

    def mountpoint(self, name: str) -> str:
        return volume_directory(self.client, name, 'PRECOPY_UNAVAILABLE', UNAVAILABLE_FIX)

    def remove_paths(self, removals: list[str]) -> None:
        """Remove each staged path (a path of the tree we wrote), never through a link."""
        root = self.mountpoint(stage_volume(self.box))
        for path in removals:
            remove_below(root, path)

    def promote(self, check_mode: bool = False) -> dict[str, Any]:
        """The box from the staged tree: its agent volume made of it, a fresh token, past the readiness gate."""
        self.ready_record()
        return self.run_staged(check_mode)

    def run_staged(self, check_mode: bool) -> dict[str, Any]:
        return promote_stage(self, check_mode)


def remove_below(root: str, path: str) -> None:
    """Remove root/path (its subtree when a directory), opening every parent without following a link."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    parts = path.split('/')
    fd = os.open(root, flags)
    try:
        for part in parts[:-1]:
            child = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = child
        try:
            info = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(parts[-1], dir_fd=fd)  # fd-based: a link inside is removed, never followed
        else:
            os.unlink(parts[-1], dir_fd=fd)
    finally:
        os.close(fd)
