# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the soak (soak.py) counts as left behind: the Docker objects of each bed host, and the files
that appeared under the places the collection writes to, on each host and on the controller.

A place is listed once before the first cycle and once after the last; only what is new counts.
A new path is put in the first category it fits: fifo, gpg home, lock file, journal, state file
(below a state home), work dir (below a work dir), tmp (below a temporary directory). In a state home or
work dir each new file counts (not the directories that hold them); elsewhere a new directory counts once,
with only the fifos, gpg homes, locks and journals below it counted besides.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess

# The columns of the residue table, each expected to be 0.
DOCKER_COLUMNS = ('containers', 'helpers', 'volumes', 'networks', 'images')
FILE_COLUMNS = ('tmp', 'workdirs', 'gpg_homes', 'fifos', 'locks', 'journals', 'state')
COLUMNS = DOCKER_COLUMNS + FILE_COLUMNS
BOX_ROLES = ('agent', 'executor', 'egress')
DEFAULT_NETWORKS = ('bridge', 'host', 'none')
# Names the collection gives its temporary gpg homes (_archive/gpgsupport.py) and the ones gpg uses.
GPG_MARKS = ('tx9g-', 'gnupg', '.gnupg')

# Per bed host: the state home and the work dirs are the host's own (the bed binds them per host), as is /tmp.
HOST_STATE = '/root/.tx9'
HOST_PLACES = dict(tmp=('/tmp',), state=(HOST_STATE,))
HOST_WORKDIRS = ('/root/.tx9/migrate', '/root/.tx9/images', '/root/.tx9/precopy')

# One line per Docker object, then one per path: "<type letter> <path>".
HOST_SCRIPT = r"""
docker ps -a --format 'container {{.ID}} {{.Label "tx9.role"}} {{.Names}}'
docker volume ls --format 'volume {{.Name}}'
docker network ls --format 'network {{.Name}}'
docker image ls -q --no-trunc | sort -u | sed 's/^/image /'
for place in "$@"; do
    [ -d "$place" ] && find "$place" -xdev -mindepth 1 -printf 'path %y %p\n' 2>/dev/null
done
true
"""


def scan_host(bed, host, places):
    """{'docker': {...}, 'paths': {path: type letter}} of one bed host, over SSH."""
    proc = bed.ssh(host, ['bash', '-c', HOST_SCRIPT, 'scan'] + list(places), timeout=120)
    return parse_scan(proc.stdout)


def parse_scan(text):
    found = dict(containers=[], volumes=[], networks=[], images=[], paths={})
    for line in text.splitlines():
        kind, _sep, rest = line.partition(' ')
        if kind == 'container':
            ident, role, name = (rest.split(' ', 2) + ['', ''])[:3]
            found['containers'].append(dict(id=ident, role=role, name=name))
        elif kind in ('volume', 'network', 'image'):
            found[kind + 's'].append(rest.strip())
        elif kind == 'path':
            letter, _sep, path = rest.partition(' ')
            found['paths'][path] = letter
    return found


def scan_paths(places):
    """{path: type letter} of everything below places on this machine (find's %y letters)."""
    found = {}
    for place in places:
        if not os.path.isdir(place):
            continue
        proc = subprocess.run(
            ['find', place, '-xdev', '-mindepth', '1', '-printf', '%y %p\\n'],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            check=False,
        )
        for line in proc.stdout.splitlines():
            letter, _sep, path = line.partition(' ')
            found[path] = letter
    return found


def docker_counts(scan, keep_images, box):
    """The Docker columns of one host: what is not one of keep_images nor a default network."""
    helpers = [c for c in scan['containers'] if c['role'] not in BOX_ROLES]
    networks = [n for n in scan['networks'] if n not in DEFAULT_NETWORKS]
    images = [i for i in scan['images'] if i not in keep_images]
    counts = dict(
        containers=len(scan['containers']),
        helpers=len(helpers),
        volumes=len(scan['volumes']),
        networks=len(networks),
        images=len(images),
    )
    samples = [c['name'] for c in scan['containers']] + list(scan['volumes']) + networks + [i[:19] for i in images]
    return counts, samples


def category(path, letter, places):
    """The file column a new path belongs to; places: {'tmp': dirs, 'workdirs': dirs, 'state': dirs}."""
    name = os.path.basename(path)
    if letter == 'p':
        return 'fifos'
    if name.startswith(GPG_MARKS):
        return 'gpg_homes'
    if name.endswith('.lock'):
        return 'locks'
    if 'journal' in name:
        return 'journals'
    for column in ('workdirs', 'state', 'tmp'):
        if any(path == d or path.startswith(d.rstrip('/') + '/') for d in places.get(column, ())):
            return column
    return 'tmp'


def new_paths(before, after, places, ignore=()):
    """{column: [paths]} of what after has and before had not (ignore: paths below which nothing counts)."""
    fresh = dict((p, t) for p, t in after.items() if p not in before and not under_any(p, ignore))
    counted = dict((c, []) for c in FILE_COLUMNS)
    for path, letter in sorted(fresh.items()):
        column = category(path, letter, places)
        if column in ('state', 'workdirs') and letter == 'd':
            continue  # what a state home or work dir holds counts, not the directories that hold it
        inside_new = os.path.dirname(path) in fresh
        if inside_new and column not in ('fifos', 'gpg_homes', 'locks', 'journals', 'state', 'workdirs'):
            continue
        if inside_new and column == 'gpg_homes' and under_gpg_home(path, fresh):
            continue
        counted[column].append(path)
    return counted


def under_any(path, dirs):
    return any(path == d or path.startswith(d.rstrip('/') + '/') for d in dirs)


def under_gpg_home(path, fresh):
    parent = os.path.dirname(path)
    while parent in fresh:
        if os.path.basename(parent).startswith(GPG_MARKS):
            return True
        parent = os.path.dirname(parent)
    return False


def without(new, old):
    """new's Docker objects that old had not."""
    old_ids = set(c['id'] for c in old['containers'])
    return dict(
        containers=[c for c in new['containers'] if c['id'] not in old_ids],
        volumes=[v for v in new['volumes'] if v not in old['volumes']],
        networks=[n for n in new['networks'] if n not in old['networks']],
        images=[i for i in new['images'] if i not in old['images']],
    )


def names_pid(path, pids):
    """Whether the last part of path names one of pids (as tempfile names made with os.getpid() do)."""
    parts = set(os.path.basename(path).replace('.', '-').replace('_', '-').split('-'))
    return any(str(pid) in parts for pid in pids)


def backup_listing(bed, host, directory):
    """The names in directory on host (none when it is missing)."""
    proc = bed.ssh(host, ['sh', '-c', 'ls -1A -- "$1" 2>/dev/null; true', 'sh', directory], timeout=60)
    return sorted(proc.stdout.split())


class Residue:
    """The residue table: a row per bed host and the controller, a column per kind of leftover."""

    def __init__(self):
        self.rows = {}
        self.samples = {}

    def add(self, row, counts, samples):
        self.rows[row] = dict((c, counts.get(c, 0)) for c in COLUMNS)
        self.samples[row] = samples

    def add_files(self, row, counted):
        self.rows.setdefault(row, dict((c, 0) for c in COLUMNS))
        for column, paths in counted.items():
            self.rows[row][column] += len(paths)
            self.samples.setdefault(row, []).extend(f'{column}: {p}' for p in paths)

    def total(self):
        return sum(sum(row.values()) for row in self.rows.values())

    def print_table(self):
        print('\nresidue after the last cycle (each expected 0)')
        print(f'{"where":<12}' + ''.join(f'{c:>11}' for c in COLUMNS))
        for row, counts in self.rows.items():
            print(f'{row:<12}' + ''.join(f'{counts[c]:>11d}' for c in COLUMNS))
        for row, samples in self.samples.items():
            for sample in samples[:25]:
                print(f'  {row}: {sample}')
            if len(samples) > 25:
                print(f'  {row}: ... and {len(samples) - 25} more')

    def as_dict(self):
        return dict(rows=self.rows, samples=self.samples)


def quoted(argv):
    return ' '.join(shlex.quote(a) for a in argv)


def dump(path, value):
    with open(path, 'w') as handle:
        json.dump(value, handle, indent=2, sort_keys=True)
        handle.write('\n')
