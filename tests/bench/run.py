# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make bench`: the cost of a no-op rerun of tx9_box, against community.docker.

A no-op rerun is what a person pays every time they re-apply a play to a box
that is already right, so it is what this measures:

* a one-task play calling col_agents.tx9.tx9_box (box bench-box, defaults);
* the equivalent hand-written play of community.docker modules (a network, two
  volumes, two containers with the options tx9_box gives), on objects named
  bench-cd..., so the two never touch each other's objects;
* playbooks/create-box.yml -e box_name=bench-box, the documented entry point;
* for reading the others, the floor: a play of one ping task.

Each play converges once, then reruns (--runs, default 5); the reruns of the
four interleave in a rotating order, each after the machine settled
(benchkit.settle), so that drift on the host (other containers, caches) hits
them alike. Each play's median and spread (slowest less fastest rerun) are
reported; the targets are tx9_box at most 0.30x the baseline, and
create-box.yml at most 2x the floor. The
baseline runs from its own venv (.cache/bench-venv: PyPI's `ansible` package,
which bundles community.docker), pinned to the ansible-core of .venv so the
two plays differ only in their modules.

It prints a table, writes .cache/bench/report.json and exits non-zero only
when something failed to run or a rerun was not a no-op (its time would then
not be the time of a no-op); a missed target is printed as MISSED.
"""


import argparse
import datetime
import glob
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import distributions, version as dist_version

import docker

from benchkit import (  # noqa: E402 (it puts the collection on sys.path first)
    BENCH_DIR, PLAY_DIR, REPO_ROOT, TX9_BIN, begin, fmt, last_error, print_target, rounded, settle, timed,
    write_report)

# The baseline mirrors tx9's own defaults and helpers, so a change there moves both sides.
from ansible_collections.col_agents.tx9.plugins.module_utils._box import limits as _resources
from ansible_collections.col_agents.tx9.plugins.module_utils._box.executor_config import url_host_for
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import EXECUTOR_PORT, SYSCTLS
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION, DEFAULT_IMAGE

LOG_DIR = os.path.join(BENCH_DIR, 'logs')
REPORT_PATH = os.path.join(BENCH_DIR, 'report.json')
BENCH_VENV = os.path.join(REPO_ROOT, '.cache', 'bench-venv')
BENCH_BIN = os.path.join(BENCH_VENV, 'bin')
ANSIBLE_CFG = os.path.join(REPO_ROOT, 'ansible.cfg')
CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'

# ansible 12 bundles community.docker 4.x and runs on ansible-core 2.19, as .venv does.
BASELINE_ANSIBLE = '12.3.0'
BOX = 'bench-box'
BASELINE = 'bench-cd'
# The baseline's labels have the shape of tx9's under a key of their own: the docker
# modules compare as many labels as on a box, yet tx9_info, tx9_prune and name
# generation never see the baseline's objects as a box.
BASELINE_LABEL = 'tx9-bench'
DUMMY_TOKEN = '0' * 64

TARGET_RATIO = 0.30
# create-box.yml on a box that exists, against the floor (a play of one ping task).
TARGET_CREATE_BOX_FLOOR = 2.0
RUN_TIMEOUT = 900
IMAGE_TIMEOUT = 3600

TX9_PLAY = '''---
- name: A tx9 box, the tx9 way
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The box bench-box, running
      col_agents.tx9.tx9_box:
        name: %s
''' % BOX

# What any one-task play costs here (ansible's start, one module round trip): the part
# of both plays' time that neither side's modules can win back.
FLOOR_PLAY = '''---
- name: The cost of any one-task play
  hosts: localhost
  gather_facts: false
  tasks:
    - name: One module round trip
      ansible.builtin.ping:
'''

# The same box by hand. Values that depend on the host (limits, the dashboard host)
# come in as vars, computed from tx9's own defaults.
BASELINE_PLAY = '''---
- name: A tx9-like box, the community.docker way
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The private network
      community.docker.docker_network:
        name: "{{ names.network }}"
        driver: bridge
        enable_ipv6: false
        labels: "{{ labels.box }}"

    - name: The agent data volume
      community.docker.docker_volume:
        volume_name: "{{ names.agent_volume }}"
        driver: local
        labels: "{{ labels.agent }}"

    - name: The executor scratch volume
      community.docker.docker_volume:
        volume_name: "{{ names.executor_volume }}"
        driver: local
        labels: "{{ labels.executor }}"

    - name: The executor container
      community.docker.docker_container:
        name: "{{ names.executor }}"
        image: "{{ image }}"
        state: started
        labels: "{{ labels.executor_container }}"
        env: "{{ env.executor }}"
        entrypoint: ["/opt/tx9/bin/tx9-executor-entrypoint"]
        volumes: ["{{ names.executor_volume }}:/data:rw"]
        init: true
        restart_policy: unless-stopped
        sysctls: "{{ sysctls }}"
        network_mode: "{{ names.network }}"
        networks:
          - name: "{{ names.network }}"
            aliases: [executor]
        published_ports: ["{{ publish }}"]
        cpus: "{{ limits.executor_cpus }}"
        memory: "{{ limits.executor_memory }}"
        memory_swap: "{{ limits.executor_memory_swap }}"

    - name: The agent container
      community.docker.docker_container:
        name: "{{ names.agent }}"
        image: "{{ image }}"
        state: started
        labels: "{{ labels.agent_container }}"
        env: "{{ env.agent }}"
        volumes: ["{{ names.agent_volume }}:/data:rw"]
        init: true
        restart_policy: unless-stopped
        sysctls: "{{ sysctls }}"
        network_mode: "{{ names.network }}"
        networks:
          - name: "{{ names.network }}"
            aliases: [agent]
        cpus: "{{ limits.agent_cpus }}"
        memory: "{{ limits.agent_memory }}"
        memory_swap: "{{ limits.agent_memory_swap }}"
'''


class BenchError(Exception):
    """Something the benchmark needed did not run as it should."""


# ---- the baseline's objects ---------------------------------------------------------------


def baseline_names():
    prefix = BASELINE
    return dict(network=prefix, agent=prefix + '-agent', executor=prefix + '-executor',
                agent_volume=prefix + '-agent-data', executor_volume=prefix + '-exec-data')


def baseline_labels():
    box = {BASELINE_LABEL: '1', BASELINE_LABEL + '.box': BASELINE, BASELINE_LABEL + '.version': COLLECTION_VERSION}
    labels = dict(box=box)
    for role in ('agent', 'executor'):
        labels[role] = dict(box, **{BASELINE_LABEL + '.role': role})
        # tx9 containers also carry a config digest; a fixed one costs the same to compare.
        labels[role + '_container'] = dict(labels[role], **{BASELINE_LABEL + '.config': '0' * 64})
    return labels


def baseline_limits(host_cpus):
    """tx9_box's default limits on this host, as community.docker spells them."""
    defaults = _resources.defaults(host_cpus)
    limits = {}
    for role in ('agent', 'executor'):
        memory = defaults['%s_memory' % role]
        limits['%s_cpus' % role] = defaults['%s_cpus' % role] / float(_resources.NANO)
        limits['%s_memory' % role] = str(memory)
        limits['%s_memory_swap' % role] = str(2 * memory)
    return limits


def baseline_vars(host_cpus):
    """Everything BASELINE_PLAY needs: the values tx9_box gives a box with defaults."""
    url_host = url_host_for('0.0.0.0')
    env = dict(
        agent={'EXECUTOR_HOST': 'executor', 'BOXD_EXECUTOR_TOKEN': DUMMY_TOKEN,
               'BOX_EXECUTOR_BRIDGE_PORT': str(EXECUTOR_PORT), 'TX9_BOX_NAME': BASELINE},
        executor={'EXECUTOR_MCP_TOKEN': DUMMY_TOKEN, 'TX9_BOX_NAME': BASELINE,
                  'TX9_EXECUTOR_ALLOWED_HOSTS': url_host})
    return dict(names=baseline_names(), labels=baseline_labels(), image=DEFAULT_IMAGE, env=env,
                sysctls=SYSCTLS, publish='0.0.0.0::%d' % EXECUTOR_PORT, limits=baseline_limits(host_cpus))


def remove_baseline(client):
    """Remove every baseline object, by name, whatever state a run left it in."""
    names = baseline_names()
    for key in ('agent', 'executor'):
        _ignore_missing(lambda ref=names[key]: client.api.remove_container(ref, force=True, v=False))
    _ignore_missing(lambda: client.api.remove_network(names['network']))
    for key in ('agent_volume', 'executor_volume'):
        _ignore_missing(lambda ref=names[key]: client.api.remove_volume(ref, force=True))


def _ignore_missing(call):
    try:
        call()
    except docker.errors.NotFound:
        pass


# ---- running plays ------------------------------------------------------------------------


def ansible_env(bin_dir, state_home):
    """Both sides run under the repo's ansible.cfg (same inventory, callback, settings)."""
    env = dict(os.environ)
    env.update(ANSIBLE_CONFIG=ANSIBLE_CFG, TX9_HOME=state_home, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               PATH=bin_dir + os.pathsep + env.get('PATH', ''))
    return env


def recap(output):
    """The PLAY RECAP counters of localhost as a dict of ints (empty when there is none)."""
    match = re.search(r'^localhost\s+:\s+(.*)$', output, re.MULTILINE)
    if not match:
        return {}
    return dict((k, int(v)) for k, v in re.findall(r'(\w+)=(\d+)', match.group(1)))


def run_logged(label, argv, env, timeout=RUN_TIMEOUT):
    """Run argv from the repo root, keep its output in logs/<label>.log; (seconds, rc, output)."""
    started = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise BenchError('%s did not finish within %d s' % (label, timeout)) from exc
    seconds = time.perf_counter() - started
    with open(os.path.join(LOG_DIR, '%s.log' % label), 'w') as handle:
        handle.write(proc.stdout)
    return seconds, proc.returncode, proc.stdout


class Series:
    """One play: its converge run, then its timed no-op reruns."""

    def __init__(self, key, title, argv, env):
        self.key = key
        self.title = title
        self.argv = argv
        self.env = env
        self.converge_seconds = None
        self.seconds = []
        self.error = None

    def _run(self, label, noop):
        seconds, rc, output = run_logged('%s-%s' % (self.key, label), self.argv, self.env)
        counters = recap(output)
        if rc != 0 or not counters or counters.get('failed') or counters.get('unreachable'):
            raise BenchError('%s %s failed (rc %d): %s' % (self.title, label, rc, last_error(output)))
        if noop and counters.get('changed'):
            raise BenchError('%s %s changed %d task(s), so it was not a no-op; see .cache/bench/logs/%s-%s.log'
                             % (self.title, label, counters['changed'], self.key, label))
        return seconds

    def converge(self):
        try:
            self.converge_seconds = self._run('converge', noop=False)
        except BenchError as exc:
            self.error = str(exc)
        return self.error is None

    def rerun(self, index):
        """One timed no-op rerun; the first failure ends the series."""
        if self.error:
            return
        try:
            self.seconds.append(self._run('rerun-%d' % (index + 1), noop=True))
        except BenchError as exc:
            self.error = str(exc)

    def median(self):
        return statistics.median(self.seconds) if self.seconds and not self.error else None

    def minimum(self):
        return min(self.seconds) if self.seconds and not self.error else None

    def spread(self):
        return max(self.seconds) - min(self.seconds) if self.seconds and not self.error else None

    def as_report(self):
        return dict(title=self.title, command=' '.join(_shown(arg) for arg in self.argv),
                    converge_seconds=rounded(self.converge_seconds), seconds=[rounded(s) for s in self.seconds],
                    median=rounded(self.median()), min=rounded(self.minimum()), spread=rounded(self.spread()),
                    error=self.error)


def _shown(arg):
    """An argument as a reader at the repo root would type it."""
    return os.path.relpath(arg, REPO_ROOT) if arg.startswith(REPO_ROOT) else arg


# ---- the bench venv -----------------------------------------------------------------------


def pip_env():
    """pip trusts the host's CA bundle: TLS to PyPI may be inspected."""
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK='1')
    if 'PIP_CERT' not in env and os.path.exists(CA_BUNDLE):
        env['PIP_CERT'] = CA_BUNDLE
    return env


def tx9_core_version():
    return dist_version('ansible-core')


def ensure_bench_venv():
    """Make .cache/bench-venv when missing or stale; returns what it holds (and whether it installed)."""
    # community.docker talks to the daemon through requests, which ansible does not bring.
    wanted = ['ansible==%s' % BASELINE_ANSIBLE, 'ansible-core==%s' % tx9_core_version(), 'requests']
    stamp = os.path.join(BENCH_VENV, '.bench-requirements')
    python = os.path.join(BENCH_BIN, 'python')
    installed = False
    if not (os.path.exists(python) and _read(stamp) == ' '.join(wanted)):
        if not os.path.exists(python):
            _check_call([shutil.which('python3') or sys.executable, '-m', 'venv', BENCH_VENV], 'create the bench venv')
        _pip_install(python, wanted)
        with open(stamp, 'w') as handle:
            handle.write(' '.join(wanted))
        installed = True
    versions = bench_versions()
    versions['installed_now'] = installed
    return versions


def _pip_install(python, wanted):
    argv = [python, '-m', 'pip', 'install', '--quiet'] + wanted
    proc = subprocess.run(argv, env=pip_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=1800, check=False)
    if proc.returncode != 0:
        # The usual cause: .venv moved to an ansible-core that this ansible release does not pair with.
        raise BenchError('pip could not install %s into %s (if ansible-core moved, set BASELINE_ANSIBLE in '
                         'tests/bench/run.py to the ansible release that pairs with it): %s'
                         % (' '.join(wanted), BENCH_VENV, proc.stdout.strip()[-800:]))


def bench_versions():
    """ansible, ansible-core and the community.docker the baseline really runs with."""
    site = glob.glob(os.path.join(BENCH_VENV, 'lib', 'python*', 'site-packages'))[0]
    dists = dict((dist.metadata['Name'].lower(), dist.version) for dist in distributions(path=[site]))
    with open(os.path.join(site, 'ansible_collections', 'community', 'docker', 'MANIFEST.json')) as handle:
        community_docker = json.load(handle)['collection_info']['version']
    return dict(ansible=dists.get('ansible'), ansible_core=dists.get('ansible-core'), community_docker=community_docker)


def _check_call(argv, what):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise BenchError('could not %s: %s' % (what, proc.stdout.strip()[-800:]))


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except IOError:
        return None


# ---- the bench ----------------------------------------------------------------------------


def write_plays(host_cpus):
    """The two plays and the baseline's vars, written where a reader of the report finds them.

    The plays live in this file rather than as .yml files in the tree: the baseline's
    modules exist only in the bench venv, so the linter's syntax check would fail on it.
    """
    os.makedirs(PLAY_DIR, exist_ok=True)
    paths = {}
    for name, text in (('tx9-box.yml', TX9_PLAY), ('baseline.yml', BASELINE_PLAY), ('floor.yml', FLOOR_PLAY)):
        paths[name] = os.path.join(PLAY_DIR, name)
        with open(paths[name], 'w') as handle:
            handle.write(text)
    paths['vars'] = os.path.join(PLAY_DIR, 'baseline-vars.json')
    with open(paths['vars'], 'w') as handle:
        json.dump(baseline_vars(host_cpus), handle, indent=2, sort_keys=True)
    return paths


def tx9_box_adhoc(state_home, args, label):
    """tx9_box through the ad-hoc CLI; used to start from, and leave, no bench-box."""
    argv = [os.path.join(TX9_BIN, 'ansible'), 'localhost', '-m', 'col_agents.tx9.tx9_box', '-a', args]
    seconds, rc, output = run_logged(label, argv, ansible_env(TX9_BIN, state_home))
    if rc != 0:
        raise BenchError('tx9_box %s failed (rc %d): %s' % (args, rc, last_error(output)))
    return seconds


def build_image(state_home):
    argv = [os.path.join(TX9_BIN, 'ansible-playbook'), 'playbooks/build-image.yml']
    seconds, rc, output = run_logged('build-image', argv, ansible_env(TX9_BIN, state_home), timeout=IMAGE_TIMEOUT)
    if rc != 0:
        raise BenchError('playbooks/build-image.yml failed (rc %d): %s' % (rc, last_error(output)))
    return seconds


def make_series(paths, state_home):
    tx9_env = ansible_env(TX9_BIN, state_home)
    tx9 = Series('tx9', 'col_agents.tx9.tx9_box', [os.path.join(TX9_BIN, 'ansible-playbook'), paths['tx9-box.yml']],
                 tx9_env)
    baseline = Series('baseline', 'community.docker baseline',
                      [os.path.join(BENCH_BIN, 'ansible-playbook'), paths['baseline.yml'], '-e', '@' + paths['vars']],
                      ansible_env(BENCH_BIN, state_home))
    floor = Series('floor', 'floor: one ping task', [os.path.join(TX9_BIN, 'ansible-playbook'), paths['floor.yml']],
                   tx9_env)
    create_box = Series('create-box', 'playbooks/create-box.yml',
                        [os.path.join(TX9_BIN, 'ansible-playbook'), 'playbooks/create-box.yml', '-e', 'box_name=' + BOX],
                        tx9_env)
    return tx9, baseline, floor, create_box


def measure(series, runs, phases):
    """Converge each play, then interleave the reruns in a rotating order, the machine settled before each.

    Interleaving and rotating spread drift on the host (other containers, caches) over all plays alike.
    create-box.yml reruns on the tx9 play's box; its converge run settles its own tasks (host checks, the image).
    """
    tx9, baseline, floor, create_box = series
    for one in (baseline, tx9, floor):
        one.converge()
    if tx9.error:
        create_box.error = 'not run: the tx9_box play did not work'
    else:
        create_box.converge()
    rotation = [tx9, baseline, floor, create_box]
    for index in range(runs):
        for one in rotation[index % 4:] + rotation[:index % 4]:
            if not one.error:
                settle(phases, 'settle_%s_%d' % (one.key, index + 1))
                one.rerun(index)


def _ratio(numerator, denominator):
    return numerator / denominator if numerator is not None and denominator else None


def targets(series):
    """The two targets from the series that got numbers (None where one is missing).

    above_floor is for reading, not a target: the ratio of what each side costs
    beyond a one-task play, i.e. of what the modules themselves cost.
    """
    by_key = dict((s.key, s) for s in series)
    tx9, baseline, floor, create_box = (by_key.get(k) or Series(k, k, [], {})
                                        for k in ('tx9', 'baseline', 'floor', 'create-box'))
    ratio = _ratio(tx9.median(), baseline.median())
    above_floor = None
    if None not in (tx9.median(), baseline.median(), floor.median()):
        above_floor = _ratio(tx9.median() - floor.median(), baseline.median() - floor.median())
    create_ratio = _ratio(create_box.median(), floor.median())
    return dict(
        ratio=dict(value=rounded(ratio), min_ratio=rounded(_ratio(tx9.minimum(), baseline.minimum())),
                   above_floor=rounded(above_floor), target=TARGET_RATIO,
                   met=None if ratio is None else ratio <= TARGET_RATIO),
        create_box=dict(value=rounded(create_box.median()), floor_ratio=rounded(create_ratio),
                        target=TARGET_CREATE_BOX_FLOOR,
                        met=None if create_ratio is None else create_ratio <= TARGET_CREATE_BOX_FLOOR))


def cleanup(client, state_home, phases):
    """Remove bench-box (the tx9 way) and the baseline (by name); report what could not be."""
    problems = []
    started = time.perf_counter()
    try:
        tx9_box_adhoc(state_home, 'name=%s state=absent' % BOX, 'cleanup-tx9')
    except BenchError as exc:
        problems.append(str(exc))
    try:
        remove_baseline(client)
    except Exception as exc:  # pylint: disable=broad-except
        # Whatever went wrong is reported, never raised: it would hide how the bench itself ended.
        problems.append('could not remove the baseline objects: %s' % exc)
    phases['cleanup'] = rounded(time.perf_counter() - started)
    return problems


# ---- output -------------------------------------------------------------------------------


def print_table(report):
    rows = report['series']
    runs = max([len(s['seconds']) for s in rows] or [0])
    print('\ntx9 bench: wall seconds of no-op reruns (after one converge run each)\n')
    print('%-28s %9s %8s %8s %8s  %s' % ('play', 'converge', 'median', 'min', 'spread', 'reruns'))
    for series in rows:
        print('%-28s %9s %8s %8s %8s  %s' % (
            series['title'], fmt(series['converge_seconds']), fmt(series['median']), fmt(series['min']),
            fmt(series.get('spread')), ' '.join(fmt(s) for s in series['seconds'])))
    ratio = report['targets']['ratio']
    create_box = report['targets']['create_box']
    print()
    print_target('ratio tx9/baseline (median)', fmt(ratio['value']), '<= %.2f' % ratio['target'], ratio['met'])
    print_target('create-box.yml no-op rerun / floor (medians)', fmt(create_box['floor_ratio']),
                 '<= %.1f' % create_box['target'], create_box['met'])
    print('(create-box.yml no-op rerun, median: %s)' % fmt(create_box['value'], ' s'))
    print('(for reading: ratio of the mins %s; ratio of the medians above the floor %s)'
          % (fmt(ratio['min_ratio']), fmt(ratio['above_floor'])))
    for series in rows:
        if series['error']:
            print('\nFAILED %s: %s' % (series['title'], series['error']))
    for problem in report['problems']:
        print('\nFAILED %s' % problem)
    print('\nreruns per play: %d; phases (s): %s' % (runs, ', '.join('%s %s' % kv for kv in report['phases'].items())))
    print('report: %s' % os.path.relpath(REPORT_PATH, REPO_ROOT))


def new_report(client, args):
    info = client.info()
    return dict(
        started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
        host=dict(cpus=info.get('NCPU'), memory=info.get('MemTotal'), docker=info.get('ServerVersion'),
                  kernel=info.get('KernelVersion'), containers_running=info.get('ContainersRunning')),
        runs=max(args.runs, 3),
        tx9_ansible_core=tx9_core_version(), baseline=None, series=[], targets=None, phases={}, problems=[])


def parse_args():
    parser = argparse.ArgumentParser(description='Time no-op reruns of tx9_box against community.docker.')
    parser.add_argument('--runs', type=int, default=5, help='timed no-op reruns of each play (default 5, at least 3)')
    return parser.parse_args()


def bench(client, report, args, state_home, series):
    """Everything up to the numbers; series (a list) is filled in as far as the run gets."""
    phases = report['phases']
    report['baseline'] = timed(phases, 'bench_venv', ensure_bench_venv)
    timed(phases, 'build_image', build_image, state_home)
    paths = write_plays(client.info().get('NCPU') or 0)
    # Start from nothing, so that the converge runs create and a killed earlier run leaves no trace.
    remove_baseline(client)
    tx9_box_adhoc(state_home, 'name=%s state=absent' % BOX, 'preclean-tx9')
    series.extend(make_series(paths, state_home))
    timed(phases, 'measure', measure, series, report['runs'], phases)


def finish(client, report, state_home, series, started):
    """Clean up, then write and print whatever was measured."""
    # A second SIGTERM must not cut the cleanup short and leave objects behind.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    report['problems'].extend(cleanup(client, state_home, report['phases']))
    shutil.rmtree(state_home, ignore_errors=True)
    report['phases']['total'] = rounded(time.perf_counter() - started)
    report['series'] = [s.as_report() for s in series]
    report['targets'] = targets(series)
    write_report(report, REPORT_PATH)
    print_table(report)


def main():
    args = parse_args()
    _lock = begin(LOG_DIR)  # held until the process exits
    started = time.perf_counter()
    client = docker.from_env(version='auto', timeout=120)
    report = new_report(client, args)
    state_home = tempfile.mkdtemp(prefix='tx9-bench-home-')
    series = []
    try:
        bench(client, report, args, state_home, series)
    except BenchError as exc:
        report['problems'].append(str(exc))
    except docker.errors.DockerException as exc:
        report['problems'].append('Docker refused a bench step: %s' % exc)
    except (KeyboardInterrupt, SystemExit):
        report['problems'].append('interrupted: the numbers above are partial')
        raise
    finally:
        finish(client, report, state_home, series, started)
    failed = report['problems'] or any(s['error'] for s in report['series'])
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
