# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers of the portable-box integration tests: in-box scripts, archives built with plain tools, the unsafe corpus.

The unsafe payloads reuse the unit corpus' member builders
(tests/unit/archive/tx9_archive_kit.py); every case names the rule of the
archive format's "What a valid payload may contain" it breaks and where its
public description comes from.
"""


import datetime
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
import uuid
import zlib

from conftest import PLAYS
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import envelope as archive
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import (
    BASE, directory, gz, hardlink, member, payload, realpath_limit_members, regular, symlink, tar_bytes)

HOME = '/data/home/agent'
HERMES_PYTHON = '/opt/tx9/hermes/bin/python3'
BIG_FILE_SIZE = 50 * 1024 * 1024
AGENT_UID = 1001

# Builds the round-trip tree under ~/rt as the agent: nested dirs, unicode, modes, links, a 50 MB random file,
# and things every backup leaves out by design (caches, dependency trees, bytecode).
MAKE_TREE = r'''
import os, sys
root = sys.argv[1]
big = int(sys.argv[2])
def write(rel, data=b'', mode=0o644):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as handle:
        handle.write(data)
    os.chmod(path, mode)
os.makedirs(root)
write('a/b/c/d/e/deep.txt', b'deep\n')
write('a/b/notes.md', b'# notes\n' * 100)
write('run.sh', b'#!/bin/sh\necho hello from the box\n', 0o755)
write('tools/bin/tool', b'#!/bin/sh\nexit 0\n', 0o750)
write('private.key', b'not really a key\n', 0o600)
write('read-only.txt', b'frozen\n', 0o444)
write('empty', b'')
write('\u00dcbung \u2013 \u65e5\u672c\u8a9e/gr\u00fc\u00dfe.txt', '\u00e4\u00f6\u00fc \u00df \u2603\n'.encode('utf-8'))
write('emoji-\U0001f642.md', b'smile\n')
write('dir with spaces/file with spaces.txt', b'spaces\n')
write('l' * 120 + '/' + 'n' * 150 + '.txt', b'a name longer than a ustar header holds\n')
with open('/dev/urandom', 'rb') as src, open(os.path.join(root, 'big.bin'), 'wb') as dst:
    left = big
    while left:
        chunk = src.read(min(left, 1 << 20))
        dst.write(chunk)
        left -= len(chunk)
os.makedirs(os.path.join(root, 'secret'), 0o700)
os.chmod(os.path.join(root, 'secret'), 0o700)
write('secret/inside', b'hidden\n', 0o600)
os.makedirs(os.path.join(root, 'group-only'))
os.chmod(os.path.join(root, 'group-only'), 0o750)
os.makedirs(os.path.join(root, 'empty-dir'))
os.symlink('a/b/c/d/e/deep.txt', os.path.join(root, 'link-to-file'))
os.symlink('a/b', os.path.join(root, 'link-to-dir'))
os.symlink('../../../run.sh', os.path.join(root, 'a/b/c/up-to-run'))
os.symlink('does-not-exist-yet', os.path.join(root, 'dangling'))
os.symlink('link-to-dir/notes.md', os.path.join(root, 'link-through-link'))
os.link(os.path.join(root, 'run.sh'), os.path.join(root, 'hard-run.sh'))
os.link(os.path.join(root, 'run.sh'), os.path.join(root, 'a/b/c/hard-run-deep.sh'))
os.link(os.path.join(root, 'a/b/notes.md'), os.path.join(root, 'notes-again.md'))
write('node_modules/left-pad/index.js', b'module.exports = 1\n')
write('pkg/__pycache__/mod.cpython-311.pyc', b'\x00bytecode')
write('pkg/mod.pyc', b'\x00bytecode')
write('.cache/blob', b'cache\n')
write('.venv/bin/python', b'', 0o755)
'''

# A listing of a tree as JSON: per path its type, mode, owner, size, SHA-256, link target and hard-link group.
LISTING = r'''
import hashlib, json, os, stat, sys
root = sys.argv[1]
skip_dirs = set(sys.argv[2].split(',')) if len(sys.argv) > 2 and sys.argv[2] else set()
excluded_names = ('node_modules', '.venv', 'venv', '__pycache__', '.cache')
excluded_suffixes = ('.pyc', '.pyo', '.db-wal', '.db-shm', '.db-journal')
entries, inodes = {}, {}
for top, dirs, files in os.walk(root):
    rel_top = os.path.relpath(top, root)
    dirs[:] = [d for d in dirs if d not in excluded_names and os.path.normpath(os.path.join(rel_top, d)) not in skip_dirs]
    for name in dirs + files:
        path = os.path.join(top, name)
        rel = os.path.normpath(os.path.relpath(path, root))
        if name.endswith(excluded_suffixes):
            continue
        st = os.lstat(path)
        entry = dict(mode='%04o' % stat.S_IMODE(st.st_mode), uid=st.st_uid, gid=st.st_gid)
        if stat.S_ISLNK(st.st_mode):
            entry.update(type='symlink', target=os.readlink(path))
        elif stat.S_ISDIR(st.st_mode):
            entry.update(type='dir')
        elif stat.S_ISREG(st.st_mode):
            digest = hashlib.sha256()
            with open(path, 'rb') as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b''):
                    digest.update(chunk)
            entry.update(type='file', size=st.st_size, sha256=digest.hexdigest())
            if st.st_nlink > 1:
                inodes.setdefault((st.st_dev, st.st_ino), []).append(rel)
        else:
            entry.update(type='other')
        entries[rel] = entry
for names in inodes.values():
    for name in names:
        entries[name]['hardlinks'] = sorted(names)
print(json.dumps(entries, sort_keys=True))
'''

# Writes a Hermes session database through Hermes' own SessionDB, then more rows that stay in the WAL only:
# no checkpoint and no close, so a backup that skips the checkpoint loses them.
WRITE_HERMES_DB = r'''
import os, sqlite3, sys
from hermes_state import SessionDB
db = SessionDB()
path = str(db.db_path)
db.create_session('tx9-it-session', 'cli', model='tx9-it-model')
for number in range(int(sys.argv[1])):
    db.append_message('tx9-it-session', 'user' if number % 2 == 0 else 'assistant', content='message %d \u00fc\u2603' % number)
db.close()
conn = sqlite3.connect(path, isolation_level=None)
conn.execute('PRAGMA wal_autocheckpoint=0')
mode = conn.execute('PRAGMA journal_mode').fetchone()[0]
conn.execute('BEGIN')
conn.execute("INSERT OR REPLACE INTO state_meta (key, value) VALUES ('tx9-it', 'only in the WAL')")
conn.execute("UPDATE sessions SET title = 'written last' WHERE id = 'tx9-it-session'")
conn.execute('COMMIT')
wal = os.path.getsize(path + '-wal') if os.path.exists(path + '-wal') else 0
print('%s %s %d' % (path, mode, wal))
sys.stdout.flush()
os._exit(0)
'''

READ_HERMES_DB = r'''
import json, sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
print(json.dumps(dict(
    integrity=conn.execute('PRAGMA integrity_check').fetchall(),
    journal_mode=conn.execute('PRAGMA journal_mode').fetchone()[0],
    messages=conn.execute("SELECT count(*) FROM messages WHERE session_id = 'tx9-it-session'").fetchone()[0],
    last=conn.execute("SELECT content FROM messages WHERE session_id = 'tx9-it-session' ORDER BY id DESC LIMIT 1").fetchone()[0],
    title=conn.execute("SELECT title FROM sessions WHERE id = 'tx9-it-session'").fetchone()[0],
    meta=conn.execute("SELECT value FROM state_meta WHERE key = 'tx9-it'").fetchone()[0])))
'''


def in_box(client, box, argv, user='agent', environment=None):
    """(exit code, output) of argv run in the box's agent container."""
    env = dict(HOME=HOME) if user == 'agent' else {}
    env.update(environment or {})
    result = client.containers.get('tx9-%s-agent' % box).exec_run(argv, user=user, environment=env)
    return result.exit_code, result.output.decode('utf-8', 'replace')


def in_box_ok(client, box, argv, user='agent', environment=None):
    code, output = in_box(client, box, argv, user, environment)
    assert code == 0, '%s exited %d in %s:\n%s' % (argv[0], code, box, output[-3000:])
    return output


def listing(client, box, root, skip=()):
    """The tree at root inside the box as {relative path: attributes} (read as root, so nothing is hidden)."""
    return json.loads(in_box_ok(client, box, ['python3', '-c', LISTING, root, ','.join(skip)], user='root'))


def hb_status(client, box):
    """The last JSON line of `hb status --json`, run as the agent."""
    output = in_box_ok(client, box, ['hb', 'status', '--json'])
    return json.loads(output.strip().splitlines()[-1])


def labelled(client, box):
    """Every Docker object labelled with the box, by kind (empty lists when there is none)."""
    label = {'label': 'tx9.box=%s' % box}
    return dict(containers=[c.name for c in client.containers.list(all=True, filters=label)],
                networks=[n.name for n in client.networks.list(filters=label)],
                volumes=[v.name for v in client.volumes.list(filters=label)])


def nothing_left(client, state_home, box):
    """The leftovers of a box (Docker objects and its state file); {} when there are none."""
    left = dict((kind, names) for kind, names in labelled(client, box).items() if names)
    state_file = os.path.join(state_home, 'boxes', '%s.env' % box)
    if os.path.exists(state_file):
        left['state_file'] = state_file
    return left


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b''):
            digest.update(chunk)
    return digest.hexdigest()


def tx9_names(directory):
    """Every path under directory whose name ends in .tx9."""
    found = []
    for top, _dirs, files in os.walk(directory):
        found.extend(os.path.join(top, name) for name in files if name.endswith('.tx9'))
    return sorted(found)


# Plain tools: tar and gpg, the way a person without tx9 would use them.

def gpg_symmetric(src, dst, passphrase, extra=()):
    """Encrypt src to dst with plain gpg (AES-256, binary, gpg's defaults otherwise) in a throwaway GNUPGHOME."""
    home = tempfile.mkdtemp(prefix='tx9it-g-', dir='/tmp')
    try:
        subprocess.run(['gpg', '--homedir', home, '--batch', '--yes', '--pinentry-mode', 'loopback', '--passphrase', passphrase,
                        '--symmetric', '--cipher-algo', 'AES256'] + list(extra) + ['--output', dst, src],
                       check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        subprocess.run(['gpgconf', '--homedir', home, '--kill', 'all'], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(home, ignore_errors=True)


def gpg_decrypt(src, dst, passphrase):
    """Decrypt src to dst with exactly the command the format names (plus a throwaway GNUPGHOME)."""
    home = tempfile.mkdtemp(prefix='tx9it-g-', dir='/tmp')
    try:
        return subprocess.run(['gpg', '--homedir', home, '--batch', '--pinentry-mode', 'loopback', '--passphrase', passphrase,
                               '--output', dst, '--decrypt', src],
                              check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    finally:
        subprocess.run(['gpgconf', '--homedir', home, '--kill', 'all'], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(home, ignore_errors=True)


def make_home_tree(root):
    """A small /data on this host: home/agent with nested dirs, an executable, unicode, a symlink and a hard link."""
    agent = os.path.join(root, 'home', 'agent')
    os.makedirs(os.path.join(agent, 'workspace', 'proj', 'src'))
    os.makedirs(os.path.join(agent, '.config', 'hermes-box'))
    files = {
        'workspace/proj/README.md': (b'# brought over with tar and gpg\n', 0o644),
        'workspace/proj/src/main.py': (b'print("hi")\n', 0o644),
        'workspace/proj/run.sh': (b'#!/bin/sh\necho run\n', 0o755),
        'workspace/\u00fcber \u65e5\u672c.txt': ('gr\u00fc\u00dfe\n'.encode('utf-8'), 0o600),
    }
    for rel, (data, mode) in files.items():
        path = os.path.join(agent, rel)
        with open(path, 'wb') as handle:
            handle.write(data)
        os.chmod(path, mode)
    os.symlink('proj/src/main.py', os.path.join(agent, 'workspace', 'main-link'))
    os.link(os.path.join(agent, 'workspace/proj/run.sh'), os.path.join(agent, 'workspace/run-hard.sh'))
    os.chmod(root, 0o711)
    os.chmod(os.path.join(root, 'home'), 0o755)
    os.chmod(os.path.join(agent, '.config', 'hermes-box'), 0o700)
    for top, dirs, names in os.walk(agent):
        for name in dirs + names + ['.']:
            os.lchown(os.path.normpath(os.path.join(top, name)), AGENT_UID, AGENT_UID)
    return files


def plain_tool_tx9(path, root, passphrase, box, workdir):
    """A .tx9 made only with tar, gpg and a hand-written metadata.json; returns the metadata."""
    plain = os.path.join(workdir, 'data.tar.gz')
    subprocess.run(['tar', '-cz', '--numeric-owner', '-f', plain, '-C', root, '.'], check=True)
    sealed = os.path.join(workdir, 'data.tar.gz.gpg')
    gpg_symmetric(plain, sealed, passphrase)
    os.unlink(plain)
    metadata = dict(format='tx9-archive', format_version=1, box=box, created_at='2026-11-30T02:47:14Z',
                    tx9_version='0.1.0', image='tx9-box:0.1.0', encrypted=True, payload='data.tar.gz.gpg',
                    payload_sha256=sha256_file(sealed), payload_size=os.path.getsize(sealed))
    with open(os.path.join(workdir, 'metadata.json'), 'w') as handle:
        json.dump(metadata, handle, indent=2)
    for name in ('metadata.json', 'data.tar.gz.gpg'):
        os.chmod(os.path.join(workdir, name), 0o600)
    subprocess.run(['tar', '-c', '--format=ustar', '-f', path, '-C', workdir, 'metadata.json', 'data.tar.gz.gpg'], check=True)
    return metadata


def read_members(path):
    """[(name, mode, bytes)] of a .tx9 container."""
    with tarfile.open(path, 'r:') as tar:
        return [(info.name, info.mode, tar.extractfile(info).read()) for info in tar.getmembers()]


def write_container(path, members):
    """A .tx9 container (uncompressed ustar) from [(name, bytes)], members mode 0600 as the Go CLI writes them."""
    with tarfile.open(path, 'w', format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o600
            info.mtime = 1764470834
            tar.addfile(info, io.BytesIO(data))


def rewrap(src, dst, payload_bytes, fix_metadata):
    """dst: src's container with another payload; the metadata's size and SHA-256 follow it when fix_metadata."""
    (meta_name, _mode, meta_raw), (payload_name, _mode2, _old) = read_members(src)
    metadata = json.loads(meta_raw.decode('utf-8'))
    if fix_metadata:
        metadata.update(payload_sha256=hashlib.sha256(payload_bytes).hexdigest(), payload_size=len(payload_bytes))
        meta_raw = json.dumps(metadata, indent=2).encode('utf-8')
    write_container(dst, [(meta_name, meta_raw), (payload_name, payload_bytes)])


def flipped(data, at):
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]


def cli_payload():
    """A payload as the Go CLI's tar writer makes it: names without ./ and no root entry, agent-owned home."""
    def own(entry):
        info, data = entry
        info.uid = info.gid = AGENT_UID
        return info, data
    members = [directory('home'), own(directory('home/agent')), own(directory('home/agent/workspace')),
               own(regular('home/agent/workspace/from-the-cli.md', b'made by the tx9 CLI\n')),
               own(regular('home/agent/workspace/tool', b'#!/bin/sh\n', mode=0o755)),
               own(symlink('home/agent/workspace/tool-link', 'tool'))]
    return gz(tar_bytes(members))


def cli_tx9(path, box, passphrase, workdir):
    """An archive in the original tx9 CLI's shape: its metadata keys, no payload_sha256, 0600 members."""
    plain = os.path.join(workdir, 'cli-data.tar.gz')
    with open(plain, 'wb') as handle:
        handle.write(cli_payload())
    sealed = plain + '.gpg'
    gpg_symmetric(plain, sealed, passphrase, extra=['--compress-algo', 'none'])
    with open(sealed, 'rb') as handle:
        sealed_bytes = handle.read()
    metadata = dict(box_name=box, created_at='2026-07-04T10:00:00Z', cli_version='0.12.0', image_version='0.12.0',
                    encrypted=True, format_version=1)
    write_container(path, [('metadata.json', json.dumps(metadata).encode('utf-8')), ('data.tar.gz.gpg', sealed_bytes)])
    return metadata


def placeholder_names(box, start, seconds):
    """The archive names a backup of box could take from start (UTC) for the given number of seconds."""
    return [archive.archive_file_name(box, start + datetime.timedelta(seconds=offset)) for offset in range(seconds)]


# The unsafe corpus.

def many_members(count):
    """A payload of the root, home, home/agent and count empty files: a raw ustar stream, gzipped as it is made."""
    info = tarfile.TarInfo('home/agent/m0000000')
    info.mode = 0o644
    info.mtime = 1764470834
    header = bytearray(info.tobuf(tarfile.USTAR_FORMAT))
    digits_at = len('home/agent/m')
    header[148:156] = b' ' * 8
    base = sum(header) - sum(b'0000000')
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    out = [compressor.compress(tar_bytes(BASE, fmt=tarfile.USTAR_FORMAT)[:3 * 512])]
    batch = []
    for number in range(count):
        digits = b'%07d' % number
        header[digits_at:digits_at + 7] = digits
        header[148:156] = b'%06o\0 ' % (base + sum(digits))
        batch.append(bytes(header))
        if len(batch) == 50000:
            out.append(compressor.compress(b''.join(batch)))
            batch = []
    out.append(compressor.compress(b''.join(batch) + b'\0' * 1024))
    out.append(compressor.flush())
    return b''.join(out)


def path_max_escape():
    """CVE-2025-4517 as published (see the unit kit)."""
    return payload(*realpath_limit_members())


def unsafe_corpus(outside):
    """[(case id, rule, payload gzip bytes)]: one or more cases for every rule the validator enforces.

    outside is an absolute path the escaping members aim at, by absolute name
    and by climbing with "..". Nothing is created there: an archive is
    validated whole on the host before any Docker object exists, and its
    payload is only ever unpacked inside a container.
    """
    return [(case, rule, data) for case, rule, data, _member, _says in unsafe_corpus_and_refusals(outside)]


def unsafe_corpus_and_refusals(outside):
    """unsafe_corpus(outside) with, per case, the member its refusal names and words the refusal says.

    [(case id, rule, payload gzip bytes, member, says)]: member is the name as
    it stands in the archive (the refusal shows it with controls escaped and
    long names cut), says is part of the reason.
    """
    up = '../' * 16 + outside.lstrip('/')
    chain = [symlink('./home/agent/l%d' % number, 'l%d' % (number + 1)) for number in range(41)]
    nul_path = 'home/agent/ok\x00/../../../../etc/passwd'
    control = 'has a control character in its name'
    others = 'only regular files, directories, symbolic links and hard links may travel'
    below = 'sits below the symbolic link "%s"'
    out = 'leads out of the root'
    path_max_link = '/'.join('abcdefghijklmnop') + '/' + 'l' * 254
    too_many = 1000001 - len(BASE)
    cases = [
        # Names.
        ('empty-name', 'names: not empty', payload(regular('')), '', 'has an empty name'),
        ('nul-in-pax-path', 'names: no NUL (CVE-2025-4138 pax path)',
         payload(member('./home/agent/x', pax={'path': nul_path})), './home/agent/x', 'has an empty pax "path" or one holding a NUL'),
        ('newline-in-name', 'names: no control character', payload(regular('home/agent/a\nb')), 'home/agent/a\nb', control),
        ('escape-in-name', 'names: no control character', payload(regular('home/agent/\x1b[31mred')),
         'home/agent/\x1b[31mred', control),
        ('c1-in-name', 'names: no control character', payload(regular('home/agent/csi\x9b')), 'home/agent/csi\x9b', control),
        ('absolute-name', 'names: not absolute', payload(regular(outside + '/absolute', b'x')), outside + '/absolute',
         'has an absolute name'),
        ('double-slash-absolute', 'names: not absolute', payload(regular('/' + outside + '/double', b'x')),
         '/' + outside + '/double', 'has an absolute name'),
        ('dot-dot-name', 'names: no .. component (jwilk traversal)', payload(regular(up + '/dotdot', b'x')), up + '/dotdot',
         'has a ".." component in its name'),
        ('dot-dot-inside', 'names: no .. component', payload(regular('./home/agent/../../../' + up + '/inside', b'x')),
         './home/agent/../../../' + up + '/inside', 'has a ".." component in its name'),
        ('duplicate-after-normalising', 'names: no repeat after normalisation',
         payload(regular('./home/agent/f', b'1'), regular('home//agent/./f', b'2')), 'home//agent/./f',
         'names "home/agent/f" a second time'),
        ('repeated-dir-new-mode', 'names: no repeat (CVE-2024-12718 mode re-apply)',
         payload(directory('./home/agent/d', mode=0o700), directory('./home/agent/d', mode=0o4777)), './home/agent/d',
         'names "home/agent/d" a second time'),
        ('symlink-then-file', 'names: no repeat (jwilk symlink-then-write)',
         payload(symlink('./home/agent/moo', up + '/moo'), regular('./home/agent/moo', b'pwned')), './home/agent/moo',
         'names "home/agent/moo" a second time'),
        # Types.
        ('char-device', 'types: no character device', payload(member('./home/agent/tty', tarfile.CHRTYPE)), './home/agent/tty',
         'is a character device; ' + others),
        ('block-device', 'types: no block device', payload(member('./home/agent/sda', tarfile.BLKTYPE)), './home/agent/sda',
         'is a block device; ' + others),
        ('fifo', 'types: no FIFO', payload(member('./home/agent/pipe', tarfile.FIFOTYPE)), './home/agent/pipe',
         'is a FIFO; ' + others),
        ('gnu-volume-label', 'types: no unknown type', payload(member('./home/agent/label', b'V')), './home/agent/label',
         'is a GNU volume label; ' + others),
        ('unknown-type', 'types: no unknown type', payload(member('./home/agent/odd', b'Z')), './home/agent/odd',
         'is of the unknown tar type "Z"; ' + others),
        # The root, home and home/agent.
        ('root-is-a-file', 'root is a directory', gz(tar_bytes([regular('.', b'x'), directory('home'), directory('home/agent')])),
         '.', 'is the root of the archive but a regular file, not a directory'),
        ('root-is-a-symlink', 'root is a directory', gz(tar_bytes([symlink('.', outside), directory('home'), directory('home/agent')])),
         '.', 'is the root of the archive but a symbolic link, not a directory'),
        ('home-is-a-symlink', 'home is a directory', gz(tar_bytes([directory('.'), symlink('./home', outside), directory('./home/agent')])),
         './home', 'is a symbolic link, but "home" must be a directory'),
        ('agent-is-a-file', 'home/agent is a directory', gz(tar_bytes([directory('.'), directory('./home'), regular('./home/agent', b'x')])),
         './home/agent', 'is a regular file, but "home/agent" must be a directory'),
        ('no-home-agent', 'home/agent is a directory', gz(tar_bytes([directory('.'), directory('./home')])),
         'home/agent', 'has no "home/agent" directory'),
        # Nothing below a link.
        ('below-a-dir-symlink', 'nothing below a symlink (libarchive secure-symlinks)',
         payload(directory('./home/agent/dir'), symlink('./home/agent/link_to_dir', 'dir'), regular('./home/agent/link_to_dir/filea', b'x')),
         './home/agent/link_to_dir/filea', below % 'home/agent/link_to_dir'),
        ('below-a-later-symlink', 'nothing below a symlink', payload(regular('./home/agent/d/f', b'x'), symlink('./home/agent/d', '../../..')),
         './home/agent/d/f', below % 'home/agent/d'),
        ('jwilk-dirsymlink', 'nothing below a symlink (jwilk dirsymlink)', payload(symlink('./dir', '..'), regular('./dir/moo', b'x')),
         './dir/moo', below % 'dir'),
        ('below-a-regular-file', 'every parent is a directory', payload(regular('./home/agent/f', b'x'), regular('./home/agent/f/x', b'x')),
         './home/agent/f/x', 'sits below "home/agent/f", which is a regular file, not a directory'),
        ('parent-not-in-archive', 'every parent is a directory in the archive', payload(regular('./home/agent/nowhere/f', b'x')),
         './home/agent/nowhere/f', 'sits in "home/agent/nowhere", which is not a directory in the archive'),
        # Symbolic links.
        ('symlink-empty-target', 'symlink target not empty', payload(symlink('./home/agent/l', '')), './home/agent/l',
         'is a symbolic link with an empty target'),
        ('symlink-absolute-target', 'symlink target relative', payload(symlink('./home/agent/l', outside)), './home/agent/l',
         'is a symbolic link to the absolute path "%s"' % outside),
        ('symlink-out-of-root', 'symlink stays inside', payload(symlink('./home/agent/l', '../../../etc/passwd')), './home/agent/l',
         'is a symbolic link to "../../../etc/passwd", which ' + out),
        ('jwilk-dirsymlink2', 'symlink stays inside, following links (jwilk dirsymlink2)',
         payload(symlink('./cur', '.'), symlink('./par', 'cur/..')), './par', 'is a symbolic link to "cur/..", which ' + out),
        ('symlink-chain-escape', 'symlink stays inside through a chain (CVE-2025-4138, CVE-2025-4330)',
         payload(symlink('./home/agent/a', 'b'), symlink('./home/agent/b', 'c'), symlink('./home/agent/c', '../../..')),
         './home/agent/a', 'is a symbolic link to "b", which %s (at the link "home/agent/c")' % out),
        ('path-max-escape', 'nothing below a symlink (CVE-2025-4517)', path_max_escape(), path_max_link, below % 'a'),
        ('symlink-cycle', 'symlink cycles refused', payload(symlink('./home/agent/a', 'b'), symlink('./home/agent/b', 'a')),
         './home/agent/a', 'is part of a cycle of links'),
        ('symlink-41-hops', 'at most 40 hops', payload(*chain), './home/agent/l0', 'takes more than 40 hops to resolve'),
        # Hard links.
        ('hardlink-absolute', 'hard link target relative', payload(hardlink('./home/agent/h', outside + '/hard')), './home/agent/h',
         'is a hard link to the absolute path "%s/hard"' % outside),
        ('hardlink-outside', 'hard link inside the root', payload(hardlink('./home/agent/h', up + '/hard')), './home/agent/h',
         'is a hard link whose target "%s/hard" leaves the root' % up),
        ('hardlink-missing', 'hard link names an earlier member', payload(hardlink('./home/agent/h', 'home/agent/missing')),
         './home/agent/h', 'is a hard link to "home/agent/missing", which is not an earlier member'),
        ('hardlink-later', 'hard link names an earlier member',
         payload(hardlink('./home/agent/h', 'home/agent/later'), regular('./home/agent/later', b'y')),
         './home/agent/h', 'is a hard link to "home/agent/later", which is not an earlier member'),
        ('hardlink-to-directory', 'hard link names a regular file', payload(hardlink('./home/agent/h', 'home/agent')),
         './home/agent/h', 'is a hard link to "home/agent", which is a directory, not a regular file'),
        ('hardlink-to-escaping-symlink', 'hard link names a regular file (CVE-2024-12718, CVE-2025-4330)',
         payload(symlink('./home/agent/s', up + '/passwd'), hardlink('./home/agent/h', 'home/agent/s'),
                 regular('./home/agent/h', b'root::0:0::/:/bin/sh', mode=0o4755)),
         './home/agent/h', 'is a hard link to "home/agent/s", which is a symbolic link, not a regular file'),
        # The member count.
        ('too-many-members', 'at most 1,000,000 members', many_members(too_many), 'home/agent/m%07d' % (too_many - 1),
         'is one more than the 1000000 members an archive may hold'),
    ]
    return cases


class CreateEvents:
    """The engine's create events while a block runs, read live as they happen.

    The engine keeps only its latest events, so a query afterwards can miss some
    on a busy engine; a stream opened before the block misses none. A volume made
    and removed at the start and at the end marks where the block begins and ends.
    """

    def __init__(self, client):
        self.client = client
        self.events = []
        self.marks = []

    def __enter__(self):
        self.stream = self.client.api.events(decode=True, filters={'event': 'create'})
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()
        self.mark('start')
        return self

    def __exit__(self, *exc_info):
        try:
            self.mark('end')
        finally:
            self.stream.close()
            self.reader.join(10)

    def read(self):
        try:
            for event in self.stream:
                self.events.append(event)
        except Exception:  # the stream closed under the reader
            pass

    def mark(self, what):
        name = 'tx9-events-%s-%s' % (what, uuid.uuid4().hex[:8])
        self.client.volumes.create(name).remove()
        deadline = time.time() + 120
        while time.time() < deadline:
            if any(self.name(event) == name for event in list(self.events)):
                self.marks.append(name)
                return
            time.sleep(0.2)
        raise AssertionError('the engine never reported the create of %s: its event stream is not live' % name)

    @staticmethod
    def name(event):
        actor = event.get('Actor') or {}
        return (actor.get('Attributes') or {}).get('name') or actor.get('ID') or ''

    def named(self, prefix):
        """'<type> <name>' of every object whose name starts with prefix."""
        return ['%s %s' % (event.get('Type'), self.name(event)) for event in self.events
                if self.name(event).startswith(prefix)]

    def labelled(self, prefix):
        """The events of objects labelled for boxes whose names start with prefix."""
        return [event for event in self.events
                if ((event.get('Actor') or {}).get('Attributes') or {}).get('tx9.box', '').startswith(prefix)]


def import_each(playbooks, imports, *flags):
    """tx9_import once per entry of imports, in ONE playbook run; the list of results."""
    work = tempfile.mkdtemp(prefix='tx9-it-each-')
    try:
        extra = os.path.join(work, 'vars.json')
        result_path = os.path.join(work, 'results.json')
        with open(extra, 'w') as handle:
            json.dump(dict(imports=imports, result_path=result_path), handle)
        playbooks.run(os.path.join(PLAYS, 'portable_import_each.yml'), '-e', '@' + extra, *flags, timeout=3600)
        with open(result_path) as handle:
            return json.load(handle)
    finally:
        shutil.rmtree(work, ignore_errors=True)


class EngineOverTcp:
    """The local engine's socket offered on a TCP port of 127.0.0.1, byte for byte, both ways.

    A module given docker_host=tcp://127.0.0.1:PORT reaches the same engine
    but cannot tell it runs here, so it moves a box's bytes through Docker's
    exec and attach streams instead of a named pipe. Each direction's end is
    passed on (a half-close), as a closed standard input must be.
    """

    def __init__(self, unix_path='/var/run/docker.sock'):
        self.unix_path = unix_path
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.bind(('127.0.0.1', 0))
        self.server.listen(16)
        self.url = 'tcp://127.0.0.1:%d' % self.server.getsockname()[1]
        self.connections = 0
        self.thread = threading.Thread(target=self.serve, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.close()

    def serve(self):
        while True:
            try:
                client, _address = self.server.accept()
            except OSError:
                return
            self.connections += 1
            engine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            engine.connect(self.unix_path)
            for source, sink in ((client, engine), (engine, client)):
                threading.Thread(target=self.pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def pump(source, sink):
        try:
            while True:
                data = source.recv(1024 * 1024)
                if not data:
                    sink.shutdown(socket.SHUT_WR)
                    return
                sink.sendall(data)
        except OSError:
            for each in (source, sink):
                try:
                    each.close()
                except OSError:
                    pass
