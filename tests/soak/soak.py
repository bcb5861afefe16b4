# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make soak`: the box life cycle over and over on a fleet bed, then what it left behind and whether it slowed.

    python tests/soak/soak.py [--cycles 30] [--slot 8]

It brings up a fleet bed of two hosts (tests/fleet/bed.py) in slot --slot (default TX9_FLEET_SLOT, else 8),
prepares them with the host role, loads the box image (IMAGE) and builds a second image build (NEW, tagged
tx9-box:0.1.1: IMAGE with one more label) in each host's engine. Then, --cycles times, one box (soak-box):

  create   tx9_box on the first host, on IMAGE
  write    a payload into its /data (random bytes and small files), its SHA-256 noted
  backup   playbooks/backup.yml with tx9_backup_keep_last=2 and tx9_backup_drill=true
  migrate  playbooks/migrate.yml to the second host, then back (each move checks the payload)
  upgrade  playbooks/upgrade.yml to NEW (its archive kept, tx9_upgrade_keep_backup's default; payload checked)
  delete   playbooks/delete-box.yml on both hosts (the second host's stopped old copy goes too)

Each cycle prints its wall time, the time of each step, and the peak RSS of the processes it ran: every
process below the commands it started and below each bed host's sshd (the modules, gpg, tar, ssh, the
docker CLI), sampled every 0.2 s as VmHWM (the kernel's high-water mark), by command name; and the exact
ru_maxrss of each controller command from wait4(). Docker's engines and the containers are not counted.

After the last cycle it prints the residue table (residue.py): per host and the controller, the containers,
helper containers, volumes, networks, images (beyond IMAGE and NEW), and the new files under /tmp, the work
dirs, gpg homes, fifos, lock files, journals and state files, each expected 0; everything there before the
first cycle is left out. The backup directory must hold exactly the archives of the last two backups, the
upgrades' directory every upgrade's archive. The controller's commands run with a private HOME, TMPDIR and
TX9_HOME, which are listed too; the shared /tmp, /var/tmp, ~/.cache and ~/.ansible/tmp of this machine (the
hosts' too) count what names a pid of the soak and is still there 30 s later.

Then the growth figures, the first five cycles against the last five (soakcheck.py): the wall time and the
exact (wait4) peaks by each window's median, the sampled peaks by each window's maximum (a sample can miss part
of a peak, never add to it). Each passes within 10 %, a peak RSS also when it grew by less than 1 MB. It exits
non-zero when a step failed, residue was found or a figure grew more. Report: .cache/soak/report-slot<N>.json;
each command's output: .cache/soak/logs-slot<N>/. The bed is torn down (its host data purged) on exit; needs root.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))


def slot_from_argv(argv):
    """--slot N (or --slot=N) of argv, else TX9_FLEET_SLOT, else 8: the bed reads it when it is imported."""
    for index, word in enumerate(argv):
        if word == '--slot' and index + 1 < len(argv):
            return argv[index + 1]
        if word.startswith('--slot='):
            return word.split('=', 1)[1]
    return os.environ.get('TX9_FLEET_SLOT', '8')


os.environ['TX9_FLEET_SLOT'] = slot_from_argv(sys.argv[1:])
sys.path[:0] = [HERE, os.path.join(REPO_ROOT, 'tests', 'bench'), os.path.join(REPO_ROOT, 'tests', 'fleet')]

import bed as bedlib  # noqa: E402
import residue  # noqa: E402
from benchkit import TX9_BIN, ansible_env, rounded, write_file  # noqa: E402
from migrate_sides import HOST_PLAY, Peaks, ssh_daemons  # noqa: E402
from soakcheck import growth, print_backups, print_cycle, print_growth  # noqa: E402

SOAK_DIR = os.path.join(REPO_ROOT, '.cache', 'soak')
LOG_DIR = os.path.join(SOAK_DIR, f'logs-slot{bedlib.SLOT}')
REPORT_PATH = os.path.join(SOAK_DIR, f'report-slot{bedlib.SLOT}.json')
PLAYBOOKS = os.path.join(REPO_ROOT, 'playbooks')

BOX = 'soak-box'
IMAGE = bedlib.IMAGE
NEW = 'tx9-box:0.1.1'
# A second build of the same release (its tx9.version label stays the collection's, so tx9_doctor passes the box
# on either); upgrade.yml moves the box from IMAGE to it.
NEW_DOCKERFILE = f'FROM {IMAGE}\nLABEL tx9.soak.build=2\n'
PASSPHRASE = uuid.uuid4().hex
KEEP_LAST = 2
# On the hosts' own /tmp (the bed gives each host one); left out of the /tmp residue, checked on their own.
BACKUPS = '/tmp/tx9-soak-backups'
UPGRADE_BACKUPS = '/tmp/tx9-soak-upgrade-backups'
PAYLOAD = '/data/home/agent/workspace/soak'
WRITE = (
    'set -e; mkdir -p "$1"; head -c 8388608 /dev/urandom > "$1/blob"; '
    'for i in $(seq 1 200); do head -c 4096 /dev/urandom | base64 > "$1/file$i.txt"; done'
)
DIGEST = 'cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d" " -f1'
STEP_TIMEOUT = 1800
# The machine's places that every process shares: a new entry counts when a pid of the soak is in its name.
SHARED_PLACES = ('/tmp', '/var/tmp', '/root/.cache', '/root/.ansible/tmp')
SETTLE = 30


class SoakError(Exception):
    """A step of the soak failed."""


class Soak:
    def __init__(self, bed, work):
        self.bed = bed
        self.work = work
        self.private = dict((name, os.path.join(work, name)) for name in ('home', 'tmp', 'state', 'plays'))
        for path in self.private.values():
            os.makedirs(path, mode=0o700)
        self.env = ansible_env(self.private['state'], dict(HOME=self.private['home'], TMPDIR=self.private['tmp']))
        self.own = []
        self.pids = set()
        self.maxrss_kb = {}
        self.digest = None
        self.keep_images = {}
        self.archives = []
        self.upgrade_archives = []

    # ---- running commands -----------------------------------------------------------------

    def run(self, label, argv, timeout=STEP_TIMEOUT):
        """argv from the checkout in a session of its own, output to LOG_DIR/<label>.log; its wait4 ru_maxrss kept."""
        log = os.path.join(LOG_DIR, label + '.log')
        with open(log, 'w') as handle:
            proc = subprocess.Popen(
                argv,
                cwd=REPO_ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.own.append(proc.pid)
        deadline = time.monotonic() + timeout
        try:
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    raise SoakError(f'{label} did not finish within {timeout} s')
                time.sleep(0.1)
        except BaseException:
            stop_session(proc.pid)
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
        name = os.path.basename(argv[0])
        self.maxrss_kb[name] = max(self.maxrss_kb.get(name, 0), usage.ru_maxrss)
        with open(log) as handle:
            output = handle.read()
        if proc.returncode != 0:
            raise SoakError(f'{label} failed (rc {proc.returncode}): {last_lines(output)}')
        return output

    def playbook(self, label, playbook, *args):
        argv = [os.path.join(TX9_BIN, 'ansible-playbook'), '-i', self.bed.inventory, playbook] + list(args)
        return self.run(label, argv)

    def module(self, label, pattern, module, args):
        argv = [os.path.join(TX9_BIN, 'ansible'), '-i', self.bed.inventory, pattern, '-m', module, '-a', args]
        return self.run(label, argv)

    def on_host(self, label, host, script, *args):
        argv = [
            'ssh',
            '-i',
            self.bed.key,
            '-o',
            'BatchMode=yes',
            '-o',
            'UserKnownHostsFile=' + self.bed.known_hosts,
            '-o',
            'StrictHostKeyChecking=yes',
            'root@' + host.address,
            '--',
            residue.quoted(['bash', '-c', script, 'soak'] + [str(a) for a in args]),
        ]
        return self.run(label, argv, 600)

    # ---- the bed ----------------------------------------------------------------------------

    def bring_up(self):
        # The hosts start empty: what an earlier run left would hide the same leftovers of this one.
        self.bed.down(purge=True)
        self.bed.up()
        self.playbook('host-role', HOST_PLAY)
        image_id = self.bed.load_image()
        for host in self.bed.hosts:
            self.on_host(
                'build-new-' + host.name, host, 'printf "%s" "$1" | docker build -q -t "$2" -', NEW_DOCKERFILE, NEW
            )
            new_id = self.on_host('new-id-' + host.name, host, 'docker image inspect -f "{{.Id}}" "$1"', NEW).strip()
            self.keep_images[host.name] = (image_id, new_id)

    # ---- one cycle --------------------------------------------------------------------------

    def cycle(self, number):
        """One box through its life; {seconds, steps, rss_mb, maxrss_mb}."""
        first, second = self.bed.hosts
        tag = f'c{number:02d}'
        steps = {}
        self.own[:] = []
        self.maxrss_kb = {}
        started = time.perf_counter()
        with Peaks(lambda: self.own + ssh_daemons(self.bed.hosts), lambda: ssh_daemons(self.bed.hosts)) as peaks:
            self.step(
                steps,
                'create',
                self.module,
                tag + '-create',
                first.name,
                'col_agents.tx9.tx9_box',
                f'name={BOX} image={IMAGE}',
            )
            self.step(steps, 'write', self.write, tag, first)
            self.step(steps, 'backup', self.backup, tag, first)
            self.step(steps, 'migrate_there', self.migrate, tag + '-there', second)
            self.step(steps, 'migrate_back', self.migrate, tag + '-back', first)
            self.step(steps, 'upgrade', self.upgrade, tag, first)
            self.step(
                steps,
                'delete',
                self.playbook,
                tag + '-delete',
                os.path.join(PLAYBOOKS, 'delete-box.yml'),
                '-e',
                'tx9_hosts=fleet',
                '-e',
                f'box_name={BOX}',
                '-e',
                f'tx9_confirm_delete={BOX}',
            )
        seconds = time.perf_counter() - started
        rss_mb, _count = peaks.by_command()
        self.pids.update(pid for pid, _comm in peaks.peaks)
        maxrss = dict((f'{name} (wait4)', round(kb * 1024 / 1e6, 1)) for name, kb in self.maxrss_kb.items())
        return dict(
            cycle=number,
            seconds=rounded(seconds),
            steps=steps,
            rss_mb=rss_mb,
            maxrss_mb=maxrss,
            load=rounded(os.getloadavg()[0], 2),
        )

    def step(self, steps, name, call, *args):
        began = time.perf_counter()
        try:
            return call(*args)
        finally:
            steps[name] = rounded(time.perf_counter() - began)

    def write(self, tag, host):
        agent = f'tx9-{BOX}-agent'
        self.on_host(tag + '-write', host, 'docker exec -u agent "$1" bash -c "$2" write "$3"', agent, WRITE, PAYLOAD)
        self.digest = self.payload_digest(tag + '-digest', host)

    def payload_digest(self, label, host):
        agent = f'tx9-{BOX}-agent'
        return self.on_host(
            label, host, 'docker exec -u root "$1" bash -c "$2" digest "$3"', agent, DIGEST, PAYLOAD
        ).strip()

    def check_payload(self, label, host):
        found = self.payload_digest(label, host)
        if found != self.digest:
            raise SoakError(
                '{}: the payload on {} differs from the one written ({}, not {})'.format(
                    label, host.name, found[:12], (self.digest or '')[:12]
                )
            )

    def new_archives(self, label, host, directory, playbook, *args):
        """Runs playbook and returns the names it added to directory on host; none is a SoakError."""
        before = set(residue.backup_listing(self.bed, host, directory))
        self.playbook(label, playbook, *args)
        made = sorted(set(residue.backup_listing(self.bed, host, directory)) - before)
        if not made:
            raise SoakError(f'{label}: no new file in {directory} on {host.name}')
        return made

    def backup(self, tag, host):
        made = self.new_archives(
            tag + '-backup',
            host,
            BACKUPS,
            os.path.join(PLAYBOOKS, 'backup.yml'),
            '-e',
            f'tx9_hosts={host.name}',
            '-e',
            f'tx9_backup_dest={BACKUPS}',
            '-e',
            f'tx9_backup_password={PASSPHRASE}',
            '-e',
            f'tx9_backup_keep_last={KEEP_LAST}',
            '-e',
            'tx9_backup_drill=true',
        )
        self.archives.append(made)

    def migrate(self, label, dest):
        placement = write_file(
            os.path.join(self.private['plays'], f'placement-{dest.name}.yml'),
            f'{{"all": {{"hosts": {{"{dest.name}": {{"tx9_boxes": ["{BOX}"]}}}}}}}}\n',
        )
        self.playbook(label + '-migrate', os.path.join(PLAYBOOKS, 'migrate.yml'), '-i', placement)
        self.check_payload(label + '-digest', dest)

    def upgrade(self, tag, host):
        # tx9_upgrade_keep_backup at its default: each upgrade's archive stays.
        made = self.new_archives(
            tag + '-upgrade',
            host,
            UPGRADE_BACKUPS,
            os.path.join(PLAYBOOKS, 'upgrade.yml'),
            '-e',
            f'tx9_hosts={host.name}',
            '-e',
            f'tx9_upgrade_image={NEW}',
            '-e',
            f'tx9_upgrade_backup_dest={UPGRADE_BACKUPS}',
            '-e',
            f'tx9_upgrade_backup_password={PASSPHRASE}',
        )
        self.upgrade_archives.extend(made)
        self.check_payload(tag + '-upgrade-digest', host)

    def remove_box(self):
        """The box gone from both hosts, whatever a failed cycle left (best effort)."""
        try:
            self.module('remove-box', 'fleet', 'col_agents.tx9.tx9_box', f'name={BOX} state=absent')
        except SoakError as exc:
            print(f'soak: removing {BOX} after the failure: {exc}')

    # ---- what is left -----------------------------------------------------------------------

    def places(self):
        home = self.private['home']
        return dict(tmp=(self.private['tmp'],), workdirs=(home,), state=(self.private['state'],))

    def snapshot(self):
        hosts = dict((h.name, residue.scan_host(self.bed, h, HOST_PLACES_ALL)) for h in self.bed.hosts)
        mine = self.places()
        controller = residue.scan_paths([d for dirs in mine.values() for d in dirs])
        shared = residue.scan_paths(SHARED_PLACES)
        return dict(hosts=hosts, controller=controller, shared=shared)

    def settled_shared(self, after):
        """The shared places' new entries that name a pid of the soak and are still there SETTLE seconds later
        (another run's module, or one of ours just ending, has a temporary directory there for a moment)."""
        time.sleep(SETTLE)
        again = residue.scan_paths(SHARED_PLACES)
        return dict((p, t) for p, t in after['shared'].items() if p in again and residue.names_pid(p, self.pids))

    def residue(self, before, after):
        table = residue.Residue()
        host_places = dict(residue.HOST_PLACES, workdirs=residue.HOST_WORKDIRS)
        for host in self.bed.hosts:
            old, new = before['hosts'][host.name], after['hosts'][host.name]
            counts, samples = residue.docker_counts(residue.without(new, old), self.keep_images[host.name], BOX)
            table.add(host.name, counts, samples)
            table.add_files(
                host.name, residue.new_paths(old['paths'], new['paths'], host_places, ignore=(BACKUPS, UPGRADE_BACKUPS))
            )
        table.add('controller', {}, [])
        # ansible-playbook's own SSH connections (ControlPersist) outlive it for a while: not the collection's.
        sockets = (os.path.join(self.private['home'], '.ansible', 'cp'),)
        table.add_files(
            'controller', residue.new_paths(before['controller'], after['controller'], self.places(), ignore=sockets)
        )
        shared = dict(
            (p, t)
            for p, t in self.settled_shared(after).items()
            if p not in before['shared'] and not p.startswith(self.work)
        )
        table.add_files('controller', residue.new_paths({}, shared, dict(tmp=SHARED_PLACES)))
        return table

    def backups_left(self):
        """What the backup directories hold against what retention says: the KEEP_LAST newest of backup.yml on
        the first host, every upgrade's archive (tx9_upgrade_keep_backup), nothing on the second host."""
        first, second = self.bed.hosts
        found = dict(
            kept=residue.backup_listing(self.bed, first, BACKUPS),
            wanted=sorted(name for made in self.archives[-KEEP_LAST:] for name in made),
            upgrade=residue.backup_listing(self.bed, first, UPGRADE_BACKUPS),
            upgrade_wanted=sorted(self.upgrade_archives),
            elsewhere=residue.backup_listing(self.bed, second, BACKUPS)
            + residue.backup_listing(self.bed, second, UPGRADE_BACKUPS),
        )
        found['ok'] = (
            found['kept'] == found['wanted'] and found['upgrade'] == found['upgrade_wanted'] and not found['elsewhere']
        )
        return found


HOST_PLACES_ALL = residue.HOST_PLACES['tmp'] + residue.HOST_PLACES['state']


def stop_session(pid):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        time.sleep(2)


def last_lines(output):
    lines = output.strip().splitlines() or ['no output']
    telling = [line for line in lines if '"msg"' in line or line.startswith(('fatal:', '[ERROR]'))]
    return (telling or lines)[-1].strip()[:500]


def run_cycles(soak, args, report):
    for number in range(1, args.cycles + 1):
        try:
            record = soak.cycle(number)
        except SoakError as exc:
            report['problems'].append(f'cycle {number}: {exc}')
            print(f'cycle {number}/{args.cycles} FAILED: {exc}')
            soak.remove_box()
            return
        report['cycles'].append(record)
        print_cycle(record, args.cycles)


def soak_run(args, report, work):
    bed = bedlib.Bed(count=2)
    soak = Soak(bed, work)
    started = time.perf_counter()
    soak.bring_up()
    report['phases']['bring_up'] = rounded(time.perf_counter() - started)
    print(f'bed up in slot {bedlib.SLOT} ({report["phases"]["bring_up"]:.0f} s); {args.cycles} cycles of {BOX}')
    before = soak.snapshot()
    run_cycles(soak, args, report)
    table = soak.residue(before, soak.snapshot())
    table.print_table()
    report['residue'] = table.as_dict()
    backups = soak.backups_left()
    report['backups'] = backups
    print_backups(backups, BACKUPS, bed.hosts[0].name, KEEP_LAST)
    report['growth'] = growth(report['cycles'])
    print_growth(report['growth'])
    return table.total() == 0 and backups['ok'] and all(row['met'] is not False for row in report['growth'])


def parse_args():
    parser = argparse.ArgumentParser(
        description='Run the box life cycle over and over on a fleet bed; print what '
        'it left behind and whether it slowed down.'
    )
    parser.add_argument('--cycles', type=int, default=30, help='cycles to run (default 30)')
    parser.add_argument(
        '--slot', default=os.environ['TX9_FLEET_SLOT'], help='the fleet bed slot (default TX9_FLEET_SLOT, else 8)'
    )
    return parser.parse_args()


def main():
    args = parse_args()
    if os.geteuid() != 0:
        sys.exit('soak: the fleet bed needs root')
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    shutil.rmtree(LOG_DIR, ignore_errors=True)
    os.makedirs(LOG_DIR)
    report = dict(
        started=datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds'),
        slot=bedlib.SLOT,
        args=dict(cycles=args.cycles),
        cycles=[],
        phases={},
        problems=[],
    )
    work = tempfile.mkdtemp(prefix='tx9-soak-')
    ok = False
    try:
        ok = soak_run(args, report, work)
    except (SoakError, bedlib.BedError, OSError) as exc:
        report['problems'].append(str(exc))
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            bedlib.Bed(count=2).down(purge=True)
        except (bedlib.BedError, OSError) as exc:
            report['problems'].append(f'tearing the bed down: {exc}')
        shutil.rmtree(work, ignore_errors=True)
        residue.dump(REPORT_PATH, report)
    for problem in report['problems']:
        print(f'FAILED {problem}')
    print(f'report: {os.path.relpath(REPORT_PATH, REPO_ROOT)}')
    return 0 if ok and not report['problems'] else 1


if __name__ == '__main__':
    sys.exit(main())
