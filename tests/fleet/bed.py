# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A multi-host test bed on one machine: SSH-reachable hosts, each with its own
network, mount and UTS namespace, address, sshd, Docker engine and state home.

    python tests/fleet/bed.py up [COUNT] [STATE_DIR]     bring the bed up (idempotent)
    python tests/fleet/bed.py load-image [STATE_DIR]     put the box image into every running engine
    python tests/fleet/bed.py status [STATE_DIR]         what runs, as JSON
    python tests/fleet/bed.py down [STATE_DIR] [purge]   stop everything (purge: also delete host data)
    python tests/fleet/bed.py resolver ADDRESS           the bed's resolver (`up` starts it)

Each host gets a network namespace with one end of a veth pair (the other end
sits on the bridge tx9fleet0, 10.209.0.1/24, in the root namespace), and a
mount namespace held open by an anchor process, in which a per-host directory
is bound over /root/.tx9 (the default state home), /var/lib/docker, /etc/docker (a daemon.json with the
host's own bridge and address pool), /var/log and /tmp, and a tmpfs is mounted
on /run. sshd is started inside both namespaces; Docker is NOT started: the
tx9_host role, run over SSH, starts it exactly as on a real machine. One iptables
rule (DOCKER-USER, else FORWARD) accepts traffic between two ports of the bed's
bridge, so the hosts reach each other; `down` removes it.

The hosts have no route to any outside resolver, so each is given one, as a
machine on an isolated network has: its /etc/resolv.conf names the bridge's
address, where the bed answers every query at once with "no such name"
(NXDOMAIN). Without it a container's lookup of an outside name waits out the
resolver's timeouts (10 s for each `executor --version` in a box).

Must run as root. See docs/testing.md.
"""

import fcntl
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_COUNT = 2
MAX_COUNT = 8
IMAGE = 'tx9-box:0.1.0'
LABEL_ASSETS = 'tx9.assets'

STATE_HOME = '/root/.tx9'
# How the host role starts an engine where no service manager runs (a restart loop around dockerd).
ENSURE_DOCKER = os.path.join(REPO_ROOT, 'roles', 'tx9_host', 'files', 'ensure-docker.sh')


def bed_slot():
    """TX9_FLEET_SLOT (0-9, default 0): beds of different slots run side by side on one machine."""
    value = os.environ.get('TX9_FLEET_SLOT', '0')
    if not value.isdigit() or int(value) > 9:
        raise SystemExit('TX9_FLEET_SLOT must be a digit 0-9, not %r' % value)
    return int(value)


SLOT = bed_slot()
DEFAULT_STATE_DIR = os.path.join(REPO_ROOT, '.cache', 'fleet' if SLOT == 0 else 'fleet%d' % SLOT)
# The saved box image, one file for the beds of every slot (and the benchmarks' beds).
IMAGE_CACHE_DIR = os.path.join(REPO_ROOT, '.cache', 'fleet-image')
# Slot 0 is the bridge tx9fleet0 on 10.209.0.0/24 with host engines on 10.210-217; slot S
# is tx9fleetS on 10.(100+10S).0.0/24 with host engines on the eight /16s after it.
NET_BASE = 209 if SLOT == 0 else 100 + 10 * SLOT
BRIDGE = 'tx9fleet%d' % SLOT
SUBNET_PREFIX = '10.%d.0.' % NET_BASE
BRIDGE_ADDRESS = SUBNET_PREFIX + '1'
NETNS_PREFIX = 'tx9fleet' if SLOT == 0 else 'tx9f%ds' % SLOT
VETH_PREFIX = 'tx9fl' if SLOT == 0 else 'tx9f%dl' % SLOT

# The anchor holds the host's mount namespace open. Everything variable is a
# positional parameter: $1 the host directory, $2 the readiness file, $3 the host name,
# $4 the checkout's path below /tmp when it lies there (else empty): the host's own /tmp
# would hide it, so it is bound into that /tmp at the same place first.
ANCHOR_SCRIPT = r'''
set -eu
hostname "$3"
mount --make-rprivate /
mount --bind "$1/tx9" /root/.tx9
mount --bind "$1/docker" /var/lib/docker
mount --bind "$1/etc-docker" /etc/docker
mount --bind "$1/log" /var/log
if [ -n "$4" ]; then
    mkdir -p "$1/tmp/$4"
    mount --bind "/tmp/$4" "$1/tmp/$4"
    mount --rbind "$1/tmp" /tmp
else
    mount --bind "$1/tmp" /tmp
fi
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /run/sshd /run/lock
resolv=$(readlink -f /etc/resolv.conf)
mkdir -p "$(dirname "$resolv")"
[ -e "$resolv" ] || : > "$resolv"
mount --bind "$1/resolv.conf" "$resolv"
echo ready > "$2"
exec sleep infinity
'''

SSHD_CONFIG = '''# sshd of the fleet test host {name}; written by tests/fleet/bed.py
ListenAddress {address}:22
PidFile {pidfile}
HostKey {host_key}
AuthorizedKeysFile {authorized_keys}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
Subsystem sftp /usr/lib/openssh/sftp-server
'''


class BedError(Exception):
    pass


def root_problem(euid):
    """Why a process of effective uid euid cannot bring the bed up (None for root).

    The fleet suite fails with this message rather than skip: a suite that skips
    itself passes having run nothing.
    """
    if euid == 0:
        return None
    return ('the fleet test bed needs root: it makes network and mount namespaces, bind mounts and an sshd '
            'per host, and this run has uid %d, so no fleet test could run. Run the fleet suite as root '
            '(sudo make test-fleet), or leave tests/fleet out of the run (make unit, make integration).' % euid)


def log(message):
    sys.stderr.write('bed: %s\n' % message)
    sys.stderr.flush()


def run(argv, check=True, timeout=120, **kwargs):
    """Run argv (a list, never a shell string); returns the CompletedProcess."""
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                              timeout=timeout, check=False, **kwargs)
    except subprocess.TimeoutExpired:
        raise BedError('%s did not finish within %d s' % (' '.join(argv), timeout))
    if check and proc.returncode != 0:
        raise BedError('%s failed (%d): %s' % (' '.join(argv), proc.returncode, (proc.stderr or proc.stdout).strip()))
    return proc


def wait_for(what, probe, timeout, interval=0.5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if probe():
            return
        time.sleep(interval)
    raise BedError('%s within %d s' % (what, timeout))


def pid_alive(pid):
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie counts as gone.
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def below_tmp(path):
    """path relative to /tmp when it lies below /tmp, else ''."""
    relative = os.path.relpath(os.path.realpath(path), '/tmp')
    return '' if relative == '.' or relative.startswith('..') else relative


def read_pid(path):
    try:
        with open(path) as handle:
            return int(handle.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def kill_and_wait(pid, what, timeout=20):
    """SIGTERM pid, wait up to timeout, then SIGKILL."""
    if not pid_alive(pid):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + timeout
    while time.time() < deadline and pid_alive(pid):
        time.sleep(0.2)
    if pid_alive(pid):
        log('%s (pid %d) ignored SIGTERM for %d s; killing it' % (what, pid, timeout))
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Host:
    """One test host; index 1..MAX_COUNT."""

    def __init__(self, state_dir, index):
        self.index = index
        self.name = 'fleet%d' % index
        self.address = SUBNET_PREFIX + str(10 + index)
        self.netns = '%s%d' % (NETNS_PREFIX, index)
        self.veth_root = '%s%dr' % (VETH_PREFIX, index)
        self.veth_host = '%s%dh' % (VETH_PREFIX, index)
        self.dir = os.path.join(state_dir, 'hosts', self.name)
        self.anchor_pidfile = os.path.join(self.dir, 'anchor.pid')
        self.sshd_pidfile = os.path.join(self.dir, 'sshd.pid')
        self.sshd_config = os.path.join(self.dir, 'sshd_config')
        self.host_key = os.path.join(self.dir, 'ssh_host_ed25519_key')
        # Docker's own bridge and the pool its user networks come from: distinct per
        # host and away from the machine's engine (172.17/16, 172.18+) and the bed's /24.
        self.bip = '10.%d.0.1/24' % (NET_BASE + index)
        self.pool = '10.%d.128.0/17' % (NET_BASE + index)

    @property
    def anchor(self):
        return read_pid(self.anchor_pidfile)

    def in_ns(self, argv):
        """argv run inside this host's network and mount namespaces."""
        return ['nsenter', '-t', str(self.anchor), '--net', '--mount', '--uts', '--'] + list(argv)

    def ns_file(self, path):
        """A path as this host sees it (through the anchor's root)."""
        return '/proc/%d/root%s' % (self.anchor, path)

    def netns_pids(self):
        proc = run(['ip', 'netns', 'pids', self.netns], check=False)
        return [int(p) for p in proc.stdout.split() if p.isdigit()] if proc.returncode == 0 else []

    def netns_exists(self):
        return os.path.exists(os.path.join('/var/run/netns', self.netns))

    def anchor_ok(self):
        pid = self.anchor
        if not pid_alive(pid) or not self.netns_exists():
            return False
        try:
            return os.stat('/proc/%d/ns/net' % pid).st_ino == os.stat('/var/run/netns/%s' % self.netns).st_ino
        except OSError:
            return False

    def sshd_ok(self):
        return pid_alive(read_pid(self.sshd_pidfile))

    def engine_answers(self):
        if not self.anchor_ok():
            return False
        return run(self.in_ns(['timeout', '20', 'docker', 'info', '--format', '{{.ID}}']), check=False,
                   timeout=30).returncode == 0

    def image_id(self, ref):
        proc = run(self.in_ns(['docker', 'image', 'inspect', '--format', '{{.Id}}', ref]), check=False, timeout=60)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def status(self):
        return dict(name=self.name, address=self.address, netns=self.netns, dir=self.dir, anchor=self.anchor,
                    anchor_running=self.anchor_ok(), sshd_running=self.sshd_ok(),
                    engine_answers=self.engine_answers(), bip=self.bip, pool=self.pool)

    # -- bring-up ---------------------------------------------------------------------------------

    def up(self, key_pub):
        if self.anchor_ok() and self.sshd_ok():
            log('%s: already up at %s' % (self.name, self.address))
            return
        self.down()
        for sub in ('tx9', 'docker', 'etc-docker', 'log', 'tmp'):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        os.chmod(os.path.join(self.dir, 'tx9'), 0o700)
        os.chmod(os.path.join(self.dir, 'tmp'), 0o1777)
        with open(os.path.join(self.dir, 'etc-docker', 'daemon.json'), 'w') as handle:
            json.dump({'bip': self.bip, 'default-address-pools': [{'base': self.pool, 'size': 24}]}, handle,
                      indent=2)
        with open(os.path.join(self.dir, 'resolv.conf'), 'w') as handle:
            handle.write('# the fleet bed\'s resolver (tests/fleet/bed.py): no outside name resolves\n'
                         'nameserver %s\n' % BRIDGE_ADDRESS)
        shutil.copyfile(key_pub, os.path.join(self.dir, 'authorized_keys'))
        if not os.path.exists(self.host_key):
            run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', self.name, '-f', self.host_key])

        # Network: a namespace, a veth pair into it, an address on the bed's /24.
        run(['ip', 'netns', 'add', self.netns])
        run(['ip', 'link', 'add', self.veth_root, 'type', 'veth', 'peer', 'name', self.veth_host])
        run(['ip', 'link', 'set', self.veth_host, 'netns', self.netns])
        run(['ip', 'link', 'set', self.veth_root, 'master', BRIDGE])
        run(['ip', 'link', 'set', self.veth_root, 'up'])
        run(['ip', '-n', self.netns, 'addr', 'add', self.address + '/24', 'dev', self.veth_host])
        run(['ip', '-n', self.netns, 'link', 'set', 'lo', 'up'])
        run(['ip', '-n', self.netns, 'link', 'set', self.veth_host, 'up'])
        run(['ip', '-n', self.netns, 'route', 'add', 'default', 'via', BRIDGE_ADDRESS])

        # Mounts: an anchor process in its own mount namespace, inside the network namespace.
        ready = os.path.join(self.dir, 'anchor.ready')
        if os.path.exists(ready):
            os.unlink(ready)
        anchor_log = open(os.path.join(self.dir, 'anchor.log'), 'w')
        anchor = subprocess.Popen(
            ['nsenter', '--net=/var/run/netns/%s' % self.netns, '--', 'unshare', '--mount', '--uts',
             '--propagation', 'private', '--', 'sh', '-c', ANCHOR_SCRIPT, 'anchor', self.dir, ready, self.name,
             below_tmp(REPO_ROOT)],
            stdin=subprocess.DEVNULL, stdout=anchor_log, stderr=subprocess.STDOUT, start_new_session=True)
        anchor_log.close()
        with open(self.anchor_pidfile, 'w') as handle:
            handle.write('%d\n' % anchor.pid)

        def anchor_ready():
            if anchor.poll() is not None:
                with open(os.path.join(self.dir, 'anchor.log')) as handle:
                    raise BedError('%s: the mount namespace could not be set up: %s' % (self.name, handle.read()))
            return os.path.exists(ready)
        wait_for('%s: the mount namespace was not ready' % self.name, anchor_ready, 20)

        # sshd, inside both namespaces, on the host's own address.
        with open(self.sshd_config, 'w') as handle:
            handle.write(SSHD_CONFIG.format(name=self.name, address=self.address, pidfile=self.sshd_pidfile,
                                            host_key=self.host_key,
                                            authorized_keys=os.path.join(self.dir, 'authorized_keys')))
        if os.path.exists(self.sshd_pidfile):
            os.unlink(self.sshd_pidfile)
        run(self.in_ns(['/usr/sbin/sshd', '-t', '-f', self.sshd_config]))
        run(self.in_ns(['/usr/sbin/sshd', '-f', self.sshd_config, '-E', os.path.join(self.dir, 'sshd.log')]))
        wait_for('%s: sshd did not write its pid file' % self.name, self.sshd_ok, 20)
        log('%s: up at %s (netns %s, anchor pid %d, sshd pid %d)' % (
            self.name, self.address, self.netns, self.anchor, read_pid(self.sshd_pidfile)))

    # -- teardown ---------------------------------------------------------------------------------

    def down(self):
        anchor = self.anchor if self.anchor_ok() else 0
        if anchor:
            self.stop_engine()
        kill_and_wait(read_pid(self.sshd_pidfile), '%s sshd' % self.name, 10)
        # Whatever else still runs in the host's network namespace (ssh sessions, modules).
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = [p for p in self.netns_pids() if p != anchor]
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            if pids and sig == signal.SIGTERM:
                time.sleep(2)
        if anchor:
            kill_and_wait(anchor, '%s anchor' % self.name, 10)
        for path in (self.anchor_pidfile, self.sshd_pidfile):
            if os.path.exists(path):
                os.unlink(path)
        if self.netns_exists():
            run(['ip', 'netns', 'del', self.netns], check=False)
        if os.path.exists('/sys/class/net/%s' % self.veth_root):
            run(['ip', 'link', 'del', self.veth_root], check=False)

    def engine_pids(self):
        """(dockerd's pid, its containerd's pid); 0 for one that does not run."""
        dockerd = read_pid(self.ns_file('/run/docker.pid'))
        containerd = read_pid(self.ns_file('/run/docker/containerd/containerd.pid'))
        return (dockerd if pid_alive(dockerd) else 0), (containerd if pid_alive(containerd) else 0)

    def kill_engine(self, timeout=20):
        """SIGKILL this host's dockerd and containerd at once, as a crash does; returns the pids killed.

        The restart loop around dockerd (ensure-docker.sh) is left running: it starts dockerd again a
        few seconds later, and dockerd its containerd. Containers live on (live-restore).
        """
        pids = [pid for pid in self.engine_pids() if pid]
        if not pids:
            raise BedError('%s: no dockerd runs to kill' % self.name)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_for('%s: the killed engine (pids %s) did not go' % (self.name, pids),
                 lambda: not any(pid_alive(pid) for pid in pids), timeout, 0.05)
        return pids

    def wait_engine(self, timeout=120):
        """Wait until this host's engine answers again (after kill_engine, its restart loop starts it)."""
        wait_for('%s: the engine did not answer again' % self.name, self.engine_answers, timeout, 0.5)

    def start_engine(self):
        """Start this host's engine as the host role does where no service manager runs (after stop_engine)."""
        proc = subprocess.run(self.in_ns(['env', '-i', 'PATH=/usr/sbin:/usr/bin:/sbin:/bin', 'bash', ENSURE_DOCKER]),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=180, check=False)
        if proc.returncode != 0 or not self.engine_answers():
            raise BedError('%s: the engine did not start: %s' % (self.name, proc.stdout[-2000:]))

    def stop_engine(self):
        """Stop this host's engine: its containers, the restart loop around dockerd, dockerd."""
        containers = []
        if self.engine_answers():
            proc = run(self.in_ns(['docker', 'ps', '-q', '--no-trunc']), check=False, timeout=60)
            containers = proc.stdout.split()
            if containers:
                run(self.in_ns(['docker', 'kill'] + containers), check=False, timeout=60)
        # ensure-docker.sh records its restart loop's pid in /run; dockerd its own pid in /run.
        kill_and_wait(read_pid(self.ns_file('/run/tx9-dockerd-supervisor.pid')), '%s dockerd loop' % self.name, 5)
        kill_and_wait(read_pid(self.ns_file('/run/docker.pid')), '%s dockerd' % self.name, 40)
        # Any container process that outlived its engine, found by its own cgroup.
        for container in containers:
            procs = '/sys/fs/cgroup/pids/docker/%s/cgroup.procs' % container
            for pid in (int(p) for p in open(procs).read().split()) if os.path.exists(procs) else ():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


class Bed:
    def __init__(self, state_dir=None, count=None):
        self.state_dir = os.path.abspath(state_dir or DEFAULT_STATE_DIR)
        self.record = os.path.join(self.state_dir, 'bed.json')
        if count is None:
            count = self.recorded_count() or DEFAULT_COUNT
        if not 1 <= count <= MAX_COUNT:
            raise BedError('the bed has 1 to %d hosts, not %d' % (MAX_COUNT, count))
        self.hosts = [Host(self.state_dir, i) for i in range(1, count + 1)]
        self.key = os.path.join(self.state_dir, 'id_ed25519')
        self.resolver_pidfile = os.path.join(self.state_dir, 'resolver.pid')
        self.inventory = os.path.join(self.state_dir, 'inventory.yml')
        self.known_hosts = os.path.join(self.state_dir, 'known_hosts')

    def recorded_count(self):
        try:
            with open(self.record) as handle:
                return json.load(handle)['count']
        except (OSError, ValueError, KeyError):
            return 0

    def up(self):
        problem = root_problem(os.geteuid())
        if problem:
            raise BedError(problem)
        ensure_packages()
        # The mount point of each host's state home. Only /root/.tx9 is private, not all of
        # /root: the interpreters (and the venv's base) may live under /root.
        if not os.path.isdir(STATE_HOME):
            os.makedirs(STATE_HOME, mode=0o700)
        os.makedirs(self.state_dir, exist_ok=True)
        recorded = self.recorded_count()
        if recorded > len(self.hosts):
            for index in range(len(self.hosts) + 1, recorded + 1):
                Host(self.state_dir, index).down()
        with open(self.record, 'w') as handle:
            json.dump(dict(count=len(self.hosts)), handle)
        if not os.path.exists(self.key):
            run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'tx9-fleet-controller', '-f', self.key])
        if not os.path.exists('/sys/class/net/%s' % BRIDGE):
            run(['ip', 'link', 'add', BRIDGE, 'type', 'bridge'])
            run(['ip', 'addr', 'add', BRIDGE_ADDRESS + '/24', 'dev', BRIDGE])
        run(['ip', 'link', 'set', BRIDGE, 'up'])
        allow_between_hosts(True)
        self.start_resolver()
        for host in self.hosts:
            host.up(self.key + '.pub')
        self.write_known_hosts()
        self.write_inventory()
        for host in self.hosts:
            wait_for('%s: SSH at %s did not answer' % (host.name, host.address),
                     lambda h=host: self.ssh(h, ['true'], check=False).returncode == 0, 30, 1)
        log('up: %d hosts; inventory %s' % (len(self.hosts), self.inventory))

    def ssh(self, host, argv, check=True, timeout=60):
        """argv run on host over SSH; each word is quoted for the remote shell ssh hands it to."""
        return run(['ssh', '-i', self.key, '-o', 'BatchMode=yes', '-o', 'UserKnownHostsFile=' + self.known_hosts,
                    '-o', 'StrictHostKeyChecking=yes', '-o', 'ConnectTimeout=5', 'root@' + host.address, '--',
                    ' '.join(shlex.quote(word) for word in argv)], check=check, timeout=timeout)

    def write_known_hosts(self):
        lines = []
        for host in self.hosts:
            with open(host.host_key + '.pub') as handle:
                key_type, key = handle.read().split()[:2]
            lines.append('%s %s %s\n' % (host.address, key_type, key))
        with open(self.known_hosts, 'w') as handle:
            handle.writelines(lines)

    def write_inventory(self):
        python = os.path.join(REPO_ROOT, '.venv', 'bin', 'python')
        ssh_args = '-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes' % self.known_hosts
        hosts = {}
        for host in self.hosts:
            hosts[host.name] = {'ansible_host': host.address, 'ansible_user': 'root',
                                'ansible_ssh_private_key_file': self.key,
                                'ansible_ssh_common_args': ssh_args,
                                'ansible_python_interpreter': python}
        # One SSH connection per host kept open between tasks, without ssh's compression (a local bridge:
        # it only costs CPU, most of all on archives that are compressed already). The hosts reach each
        # other over SSH with the controller's key, as tx9_migrate's direct transfer asks.
        group_vars = {'ansible_ssh_args': '-o ControlMaster=auto -o ControlPersist=120s',
                      'tx9_migrate_peer_ssh_args': ['-i', self.key, '-o', 'UserKnownHostsFile=' + self.known_hosts,
                                                    '-o', 'StrictHostKeyChecking=yes']}
        # JSON is YAML; the inventory plugin reads it as such.
        with open(self.inventory, 'w') as handle:
            json.dump({'fleet': {'hosts': hosts, 'vars': group_vars}}, handle, indent=2)
            handle.write('\n')

    def start_resolver(self):
        """The hosts' resolver on the bridge's address (see resolve_nothing), unless it answers already."""
        if pid_alive(read_pid(self.resolver_pidfile)) and resolver_answers():
            return
        kill_and_wait(read_pid(self.resolver_pidfile), 'the bed\'s resolver', 5)
        with open(os.path.join(self.state_dir, 'resolver.log'), 'w') as resolver_log:
            resolver = subprocess.Popen([sys.executable, os.path.abspath(__file__), 'resolver', BRIDGE_ADDRESS],
                                        stdin=subprocess.DEVNULL, stdout=resolver_log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        with open(self.resolver_pidfile, 'w') as handle:
            handle.write('%d\n' % resolver.pid)
        wait_for('the bed\'s resolver did not answer on %s:53' % BRIDGE_ADDRESS, resolver_answers, 10, 0.2)

    def down(self, purge=False):
        for host in self.hosts:
            host.down()
        kill_and_wait(read_pid(self.resolver_pidfile), 'the bed\'s resolver', 5)
        if os.path.exists(self.resolver_pidfile):
            os.unlink(self.resolver_pidfile)
        if os.path.exists('/sys/class/net/%s' % BRIDGE):
            run(['ip', 'link', 'del', BRIDGE], check=False)
        allow_between_hosts(False)
        if purge:
            hosts_dir = os.path.join(self.state_dir, 'hosts')
            if os.path.isdir(hosts_dir):
                shutil.rmtree(hosts_dir)
        log('down: %d hosts stopped%s' % (len(self.hosts), ' and purged' if purge else ''))

    def status(self):
        return dict(state_dir=self.state_dir, inventory=self.inventory, bridge=BRIDGE,
                    bridge_up=os.path.exists('/sys/class/net/%s' % BRIDGE),
                    resolver_running=pid_alive(read_pid(self.resolver_pidfile)),
                    hosts=[h.status() for h in self.hosts])

    # -- the box image ----------------------------------------------------------------------------

    def image_archive(self, source_docker=('docker',)):
        """The controller's box image saved once to .cache/fleet-image/tx9-box-<assets hash>.tar.

        Beds of several slots share the file; a lock lets one of them save it while the
        others wait for it.
        """
        proc = run(list(source_docker) + ['image', 'inspect', '--format',
                                          '{{.Id}} {{index .Config.Labels "%s"}}' % LABEL_ASSETS, IMAGE],
                   check=False)
        if proc.returncode != 0:
            raise BedError('the controller engine has no %s; build it first '
                           '(ansible-playbook playbooks/build-image.yml)' % IMAGE)
        image_id, assets = proc.stdout.split()
        path = os.path.join(IMAGE_CACHE_DIR, 'tx9-box-%s.tar' % assets)
        os.makedirs(IMAGE_CACHE_DIR, exist_ok=True)
        with open(os.path.join(IMAGE_CACHE_DIR, '.lock'), 'w') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.exists(path):
                for name in os.listdir(IMAGE_CACHE_DIR):
                    if name.startswith('tx9-box-') and name.endswith(('.tar', '.tar.partial')):
                        os.unlink(os.path.join(IMAGE_CACHE_DIR, name))
                started = time.time()
                partial = path + '.partial'
                run(list(source_docker) + ['save', '-o', partial, IMAGE], timeout=900)
                os.rename(partial, path)
                log('saved %s to %s in %.0f s' % (IMAGE, path, time.time() - started))
        return image_id, path

    def load_image(self):
        """docker load the saved image into every host engine that lacks that image ID (in parallel)."""
        image_id, path = self.image_archive()
        jobs = []
        for host in self.hosts:
            if not host.engine_answers():
                raise BedError('%s: no Docker engine answers; run the tx9_host role first' % host.name)
            if host.image_id(IMAGE) == image_id:
                log('%s: already has %s (%s)' % (host.name, IMAGE, image_id[:19]))
                continue
            log('%s: loading %s' % (host.name, path))
            jobs.append((host, time.time(), subprocess.Popen(
                host.in_ns(['docker', 'load', '-q', '-i', path]), stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, universal_newlines=True)))
        for host, started, job in jobs:
            try:
                output = job.communicate(timeout=900)[0]
            except subprocess.TimeoutExpired:
                job.kill()
                raise BedError('%s: docker load did not finish within 900 s' % host.name)
            if job.returncode != 0 or host.image_id(IMAGE) != image_id:
                raise BedError('%s: docker load failed: %s' % (host.name, output.strip()))
            log('%s: loaded %s in %.0f s' % (host.name, IMAGE, time.time() - started))
        return image_id


def forward_chain():
    """DOCKER-USER when the machine's engine made it (its FORWARD policy is DROP), else FORWARD; None without iptables."""
    if shutil.which('iptables') is None:
        return None
    return 'DOCKER-USER' if run(['iptables', '-S', 'DOCKER-USER'], check=False).returncode == 0 else 'FORWARD'


def allow_between_hosts(allow):
    """Let the bed's hosts reach each other across its bridge (allow), or take that rule away again.

    With br_netfilter loaded (the machine's Docker loads it), traffic between two ports of a bridge
    goes through iptables' FORWARD chain, whose policy Docker sets to DROP: without this rule the
    hosts reach the controller but not each other. The rule names the bed's own bridge only.
    """
    chain = forward_chain()
    if chain is None:
        return
    rule = ['-i', BRIDGE, '-o', BRIDGE, '-j', 'ACCEPT']
    present = run(['iptables', '-C', chain] + rule, check=False).returncode == 0
    if allow and not present:
        run(['iptables', '-I', chain] + rule)
    while not allow and present:
        run(['iptables', '-D', chain] + rule, check=False)
        present = run(['iptables', '-C', chain] + rule, check=False).returncode == 0


def nxdomain(query):
    """The answer to a DNS query from a resolver that knows no name: NXDOMAIN, the question echoed.

    None for what is not a query with at most one plain question (no answer is sent to it).
    """
    if len(query) < 12 or query[2] & 0x80 or int.from_bytes(query[4:6], 'big') > 1:
        return None
    end = 12
    if query[5]:
        while end < len(query) and query[end]:
            if query[end] & 0xC0:
                return None
            end += 1 + query[end]
        end += 5  # the root label, QTYPE and QCLASS
        if end > len(query):
            return None
    # QR and RA set; the opcode and RD echoed; RCODE 3 (NXDOMAIN); no answer, authority or additional records.
    flags = 0x8000 | ((query[2] & 0x79) << 8) | 0x0080 | 3
    return query[:2] + flags.to_bytes(2, 'big') + query[4:6] + bytes(6) + query[12:end]


def resolve_nothing(address):
    """Answer every DNS query on address:53 (UDP) with NXDOMAIN, until killed."""
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind((address, 53))
    while True:
        query, peer = server.recvfrom(4096)
        answer = nxdomain(query)
        if answer is not None:
            server.sendto(answer, peer)


def resolver_answers():
    """Whether the bed's resolver answers a query for a name with NXDOMAIN."""
    query = b'\x12\x34\x01\x00\x00\x01' + bytes(6) + b'\x05fleet\x00\x00\x01\x00\x01'
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.settimeout(0.5)
        try:
            probe.sendto(query, (BRIDGE_ADDRESS, 53))
            answer = probe.recv(512)
        except OSError:
            return False
    return answer[:2] == query[:2] and answer[3] & 0x0F == 3


def ensure_packages():
    """sshd and ip are installed with apt-get when missing (CI machines start bare)."""
    missing = []
    if not os.path.exists('/usr/sbin/sshd'):
        missing.append('openssh-server')
    if shutil.which('ip') is None:
        missing.append('iproute2')
    for tool in ('nsenter', 'unshare'):
        if shutil.which(tool) is None:
            missing.append('util-linux')
    if not missing:
        return
    missing = sorted(set(missing))
    log('installing %s with apt-get' % ' '.join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    if run(['apt-get', 'install', '-y', '-qq'] + missing, check=False, timeout=600, env=env).returncode != 0:
        run(['apt-get', 'update', '-qq'], timeout=600, env=env)
        run(['apt-get', 'install', '-y', '-qq'] + missing, timeout=600, env=env)


def main(argv):
    usage = 'usage: bed.py up [COUNT] [STATE_DIR] | load-image [STATE_DIR] | status [STATE_DIR] | ' \
            'down [STATE_DIR] [purge] | resolver ADDRESS'
    if not argv:
        sys.exit(usage)
    command, args = argv[0], argv[1:]

    def on_sigterm(signum, frame):
        raise SystemExit(128 + signum)
    # SIGTERM unwinds like Ctrl-C does, so an interrupted `up` tears down what it made.
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        if command == 'up':
            count = int(args[0]) if args else DEFAULT_COUNT
            bed = Bed(args[1] if len(args) > 1 else None, count)
            try:
                bed.up()
            except BaseException:
                log('bring-up failed; tearing down what was made')
                bed.down()
                raise
            print(bed.inventory)
        elif command == 'load-image':
            Bed(args[0] if args else None).load_image()
        elif command == 'status':
            print(json.dumps(Bed(args[0] if args else None).status(), indent=2))
        elif command == 'down':
            Bed(args[0] if args else None).down(purge=len(args) > 1 and args[1] == 'purge')
        elif command == 'resolver' and len(args) == 1:
            resolve_nothing(args[0])
        else:
            sys.exit(usage)
    except BedError as exc:
        sys.exit('bed: %s' % exc)


if __name__ == '__main__':
    main(sys.argv[1:])
