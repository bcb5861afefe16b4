# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""craft_changes.py KIND ARRIVED OUT: a change set as an old host under someone else's control would write it.

It keeps what the arrived change set says (its base, its list of paths) and carries, written by the
collection's own writers, members the new host must refuse: a file through a link the staged tree holds
(through-a-symlink), a hard link out of the root (hard-link-outside), more than its metadata announces
(larger-than-announced), a directory that becomes a link with a member below it
(directory-to-symlink-with-children). Used by plays/tasks/craft_changes.yml.
"""

import gzip
import hashlib
import io
import os
import sys
import tarfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO_ROOT, '.cache', 'collections'))

from ansible_collections.col_agents.tx9.plugins.module_utils._archive.changeset import (  # noqa: E402
    CHANGES_FORMAT, paths_member)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import (  # noqa: E402
    plain_payload, read_archive)
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.writing import write_archive  # noqa: E402

TREE = './home/agent/workspace-small/tree/'


def members(kind):
    """(TarInfo, data) pairs of the crafted members."""
    def entry(name, type_=tarfile.REGTYPE, data=b'', link=''):
        info = tarfile.TarInfo(TREE + name)
        info.type, info.size, info.linkname, info.mode, info.uid, info.gid = type_, len(data), link, 0o644, 1001, 1001
        return info, data
    if kind == 'through-a-symlink':
        return [entry('link/evil', data=b'written through the link\n')]
    if kind == 'hard-link-outside':
        return [entry('evil', tarfile.LNKTYPE, link='../../../../../etc/passwd')]
    if kind == 'larger-than-announced':
        return [entry('extra', data=b'x' * 100)]
    if kind == 'directory-to-symlink-with-children':
        return [entry('sub', tarfile.SYMTYPE, link='.'), entry('sub/x', data=b'below the link\n')]
    raise SystemExit('unknown kind %r' % kind)


def main(kind, arrived, out):
    archive = read_archive(arrived, expected_format=CHANGES_FORMAT)
    with plain_payload(archive) as stream:
        with tarfile.open(fileobj=gzip.GzipFile(fileobj=stream), mode='r|') as tar:
            first = tar.next()
            listed = tar.extractfile(first).read()
    body = io.BytesIO()
    with tarfile.open(fileobj=body, mode='w', format=tarfile.GNU_FORMAT) as tar:
        for info, data in members(kind):
            tar.addfile(info, io.BytesIO(data) if data else None)
    # The list first, then the members (the member tar's own end blocks end the payload).
    payload = gzip.compress(paths_member(listed, 0) + body.getvalue())
    metadata = dict(archive.metadata.raw)
    files = [(info, data) for info, data in members(kind) if info.type == tarfile.REGTYPE]
    announced = (0, 0) if kind == 'larger-than-announced' else (len(members(kind)), sum(len(d) for unused, d in files))
    metadata['changes'] = dict(metadata['changes'], members=announced[0], bytes=announced[1])
    metadata.update(payload_sha256=hashlib.sha256(payload).hexdigest(), payload_size=len(payload))
    with open(out, 'wb') as handle:
        write_archive(handle, metadata, io.BytesIO(payload))


if __name__ == '__main__':
    main(*sys.argv[1:4])
