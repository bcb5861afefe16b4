# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small archives that claim a lot end with their cause quickly and in little memory.

Each case is validated the way tx9_import validates (read_archive, then
validate_payload) in a child process whose address space is capped, with a
timeout as the backstop; the child reports its cause, the CPU time it spent and its peak RSS.
"""

import json
import os
import resource
import subprocess
import sys
import zlib

import pytest

from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import (
    BASE, directory, gz, metadata_for, symlink, tar_bytes, write_tx9)
from ansible_collections.col_agents.tx9.tests.unit.archive.test_archive_tarstream import base_tar, raw_header

CHILD = r'''
import json, resource, sys
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import read_archive, validate_payload
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import no_space
limits = json.loads(sys.argv[2])
if limits:
    limits['on_disk_exceeded'] = no_space('/test')
cause = None
try:
    validate_payload(read_archive(sys.argv[1]), **limits)
except Tx9Error as err:
    cause = err.cause
usage = resource.getrusage(resource.RUSAGE_SELF)
# VmHWM is this program's own peak: ru_maxrss also keeps the peak of the forked parent's image.
with open('/proc/self/status') as status:
    peak = [int(line.split()[1]) * 1024 for line in status if line.startswith('VmHWM:')][0]
print(json.dumps(dict(cause=cause, rss=peak, cpu=usage.ru_utime + usage.ru_stime)))
'''
ADDRESS_SPACE = 1024 ** 3
MAX_RSS = 100 * 1024 ** 2
# CPU seconds the child spent, its interpreter's start included: what the case costs, whatever else
# the machine is doing (wall time under a loaded machine says more about the machine).
MAX_CPU_SECONDS = 5


def tib_member():
    """About 3 KB: a header claiming a 1 TiB member."""
    return gz(base_tar() + raw_header(b'./home/agent/huge', size=1 << 40) + os.urandom(1024))


def pax_record_of_512_mib():
    """About 500 KB of gzip: a pax header of 512 MiB of padding-like records."""
    size = 512 * 1024 * 1024
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [packer.compress(base_tar() + raw_header(b'././@PaxHeader', b'x', size=size))]
    block = b'0' * (16 * 1024 * 1024)
    for _block in range(size // len(block)):
        out.append(packer.compress(block))
    out.append(packer.compress(raw_header(b'./home/agent/f') + b'\0' * 1024))
    out.append(packer.flush())
    return b''.join(out)


def long_symlinks():
    """About 70 KB: 4,000 links whose 2 KiB targets walk 250 directories deep."""
    members = list(BASE) + [directory('./home/agent/' + '/'.join(['d' * 7] * depth)) for depth in range(1, 251)]
    target = '/'.join(['d' * 7] * 250)
    members += [symlink('./home/agent/l%04d' % number, target) for number in range(4000)]
    return gz(tar_bytes(members))


def write_case(path, case):
    if case == 'deep-metadata':
        data = gz(base_tar() + b'\0' * 1024)
        meta = metadata_for(data)
        meta['nested'] = 0
        raw = json.dumps(meta).replace('0}', '%s%s}' % ('[' * 60000, ']' * 60000)).encode('utf-8')
        with open(str(path), 'wb') as out:
            from ansible_collections.col_agents.tx9.plugins.module_utils._archive import envelope as archive
            from ansible_collections.col_agents.tx9.plugins.module_utils._archive import writing
            out.write(writing.member_header('metadata.json', len(raw), 0) + raw + archive.padding(len(raw)))
            out.write(writing.member_header('data.tar.gz', len(data), 0) + data + archive.padding(len(data)))
            out.write(b'\0' * 1024)
        return
    builders = dict(tib=tib_member, pax=pax_record_of_512_mib, symlinks=long_symlinks,
                    space=lambda: gz(tar_bytes(BASE + (directory('./home/agent/x'),))))
    write_tx9(path, builders[case]())


def run_child(path, limits):
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, '-c', CHILD, str(path), json.dumps(limits)], env=env, preexec_fn=cap,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize('case, limits, cause', [
    ('tib', {}, 'ARCHIVE_UNSAFE'),
    ('pax', {}, 'ARCHIVE_UNSAFE'),
    ('symlinks', {}, None),
    ('deep-metadata', {}, 'ARCHIVE_INVALID'),
    ('space', {'max_disk': 4096}, 'NO_SPACE'),
], ids=['a-1-tib-member-in-3-kb', 'a-512-mib-pax-record-in-500-kb', 'four-thousand-long-symlinks',
        'metadata-nested-60000-deep', 'more-than-the-free-space'])
def test_a_small_archive_that_claims_a_lot_ends_with_its_cause_in_seconds_and_little_memory(tmp_path, case, limits, cause):
    path = tmp_path / 'case.tx9'
    write_case(path, case)

    report = run_child(path, limits)

    assert report['cause'] == cause
    assert report['cpu'] < MAX_CPU_SECONDS, '%s took %.1f s of CPU' % (case, report['cpu'])
    assert report['rss'] < MAX_RSS, '%s peaked at %d MB' % (case, report['rss'] // 1024 ** 2)
