# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Builders for the archive tests: tar members, payloads and .tx9 files, made in code."""


import gzip
import hashlib
import io
import json
import os
import tarfile

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import metadata as archive_metadata
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import writing
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import tarheader
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import validator
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

MTIME = 1764470834


def member(name, kind=tarfile.REGTYPE, data=b'', link='', mode=None, pax=None):
    """One tar member as (TarInfo, bytes); kind is a tarfile type such as tarfile.SYMTYPE."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind in (tarfile.REGTYPE, tarfile.AREGTYPE) else 0
    info.mode = mode if mode is not None else (0o755 if kind == tarfile.DIRTYPE else 0o644)
    info.mtime = MTIME
    if pax:
        info.pax_headers = dict(pax)
    return info, data


def directory(name, mode=None):
    return member(name, tarfile.DIRTYPE, mode=mode)


def regular(name, data=b'', mode=None):
    return member(name, data=data, mode=mode)


def symlink(name, target):
    return member(name, tarfile.SYMTYPE, link=target)


def hardlink(name, target):
    return member(name, tarfile.LNKTYPE, link=target)


BASE = (directory('.'), directory('./home'), directory('./home/agent'))


KINDS = {tarfile.REGTYPE: tarheader.REGULAR, tarfile.AREGTYPE: tarheader.REGULAR, tarfile.DIRTYPE: tarheader.DIRECTORY,
         tarfile.SYMTYPE: tarheader.SYMLINK, tarfile.LNKTYPE: tarheader.HARDLINK}


def as_member(info):
    """The reader's Member for a TarInfo built here, for tests that feed the validator directly."""
    return tarheader.Member(info.name, KINDS[info.type], info.size, info.mode, info.mtime, info.linkname)


def tar_bytes(members, fmt=tarfile.PAX_FORMAT):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w', format=fmt) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.size else None)
    return buf.getvalue()


def gz(data):
    return gzip.compress(data, mtime=0)


def payload(*members, base=True):
    """The gzip bytes of a payload holding the root, home and home/agent (unless base=False), then members."""
    return gz(tar_bytes((BASE if base else ()) + tuple(members)))


def validate(data, **limits):
    return validator.validate_stream(io.BytesIO(data), validator=validator.PayloadValidator(**limits))


def refused(data, cause='ARCHIVE_UNSAFE', **limits):
    """The Tx9Error validating data raises; it must carry cause."""
    with pytest.raises(Tx9Error) as info:
        validate(data, **limits)
    assert info.value.cause == cause, info.value.reason
    return info.value


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def container(members, fmt=tarfile.PAX_FORMAT):
    """A .tx9-like outer tar from (name, bytes) or prepared (TarInfo, bytes) pairs."""
    prepared = []
    for name, data in members:
        if isinstance(name, tarfile.TarInfo):
            prepared.append((name, data))
        else:
            prepared.append(member(name, data=data, mode=0o600))
    return tar_bytes(prepared, fmt)


def metadata_for(data, encrypted=False, **changes):
    meta = archive_metadata.new_metadata('dev', 'tx9-box:0.1.0', encrypted, sha256(data), len(data),
                                         created_at='2026-11-30T02:47:14Z')
    meta.update(changes)
    return meta


def cli_metadata(encrypted=False, **changes):
    """The metadata the tx9 Go CLI writes."""
    meta = dict(box_name='dev', created_at='2026-11-30T02:47:14Z', cli_version='0.12.0', image_version='0.12.0',
                encrypted=encrypted, format_version=1)
    meta.update(changes)
    return meta


def meta_json(meta):
    return json.dumps(meta, indent=2).encode('utf-8')


def write_tx9(path, data, meta=None, encrypted=False):
    """Write a .tx9 with this collection's writer; return the metadata used."""
    meta = meta or metadata_for(data, encrypted)
    with open(str(path), 'wb') as out:
        writing.write_archive(out, meta, io.BytesIO(data))
    return meta


def realpath_limit_members():
    """CVE-2025-4517 as published: dirs and step links past PATH_MAX, a long link climbing out, writes through it."""
    steps = 'abcdefghijklmnop'
    component = 'd' * 247
    members, path, step_path = [], '', ''
    for step in steps:
        members.append(directory(os.path.join(path, component)))
        members.append(symlink(os.path.join(path, step), component))
        path = os.path.join(path, component)
        step_path = os.path.join(step_path, step)
    link_path = os.path.join(step_path, 'l' * 254)
    members.append(symlink(link_path, os.path.join(*(['..'] * len(steps)))))
    members.append(symlink('escape', os.path.join(link_path, '..')))
    members.append(hardlink('flaglink', os.path.join('escape', 'flag')))
    members.append(regular('flaglink', b'overwrite'))
    members.append(regular('escape/newfile', b'new'))
    return members
