# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box token and the boxes' health on the real engine: rotation, health checks, no token on any command line."""


import base64
import gzip
import http.client
import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import docker
import pytest

from conftest import BIN, PLAYS, REPO_ROOT, box_token, remove_boxes
from test_box_lifecycle import INITIALIZE, mcp_status, published_port


# How long a wait for an event (a health verdict, an answer) may take before the test fails instead of
# hanging. A hang guard, never a speed bound: Docker's own health-check timers decide when a verdict comes.
HANG_GUARD = 600
SECOND = 10 ** 9


def wait_for(predicate, seconds, step=1.0):
    deadline = time.time() + seconds
    while True:
        value = predicate()
        if value or time.time() >= deadline:
            return value
        time.sleep(step)


def answers(port, token):
    """Whether Executor answers an authenticated initialize (False while it is still starting)."""
    try:
        return mcp_status(port, token) == 200
    except OSError:
        return False


def health(client, container_name):
    return (client.containers.get(container_name).attrs['State'].get('Health') or {}).get('Status')


def both_healthy(client, box):
    return all(health(client, 'tx9-%s-%s' % (box, role)) == 'healthy' for role in ('agent', 'executor'))


def verdicts(client, box):
    """{role: Docker's health verdict} of the box's containers, None while either has none yet.

    A container has a verdict once Docker's health check has decided: healthy or unhealthy, no
    longer starting.
    """
    found = {}
    for role in ('agent', 'executor'):
        status = health(client, 'tx9-%s-%s' % (box, role))
        if status in (None, 'starting'):
            return None
        found[role] = status
    return found


def started_at(client, box):
    return dict((role, client.api.inspect_container('tx9-%s-%s' % (box, role))['State']['StartedAt'])
                for role in ('agent', 'executor'))


def exec_in(client, container_name, argv, user='root'):
    result = client.containers.get(container_name).exec_run(argv, user=user)
    return result.exit_code, result.output.decode('utf-8', 'replace')


class CmdlineWatch:
    """Reads every process's command line on this host, over and over, while it runs."""

    def __init__(self, secret):
        self.secret = secret.encode()
        self.found = []
        self.daemons_seen = 0
        self.rounds = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            for entry in os.listdir('/proc'):
                if not entry.isdigit():
                    continue
                try:
                    with open('/proc/%s/cmdline' % entry, 'rb') as handle:
                        line = handle.read()
                except OSError:
                    continue
                if self.secret in line:
                    self.found.append(line.replace(b'\0', b' ').decode('utf-8', 'replace'))
                if b'daemon\0run\0' in line:
                    self.daemons_seen += 1
            self.rounds += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)


@pytest.fixture(scope='module')
def token_box(built_image, playbooks, client):
    """A box on the image under test; removed afterwards."""
    name = 'tk%s' % uuid.uuid4().hex[:6]
    result = playbooks.module('tx9_box', dict(name=name, image=built_image['tag']))
    assert result['changed'] is True and not result.get('failed'), result
    yield dict(name=name, result=result)
    playbooks.module('tx9_box', dict(name=name, state='absent'))
    remove_boxes(client, name)


def test_both_containers_declare_a_one_minute_start_and_docker_finds_them_healthy_and_tx9_info_reports_it(
        token_box, client, playbooks):
    name = token_box['name']
    for role in ('agent', 'executor'):
        check = client.api.inspect_container('tx9-%s-%s' % (name, role))['Config']['Healthcheck']
        assert check['StartPeriod'] == 60 * SECOND, (role, check)
    # The wait ends on Docker's verdict, which its own health-check timers bring (failed probes count
    # once the start period is over), not on a clock of this test's.
    assert wait_for(lambda: verdicts(client, name), HANG_GUARD) == {'agent': 'healthy', 'executor': 'healthy'}, [
        (role, health(client, 'tx9-%s-%s' % (name, role))) for role in ('agent', 'executor')]
    info = playbooks.module('tx9_info', dict(name=name))['boxes'][0]
    assert info['containers']['executor']['health'] == 'healthy'
    assert info['containers']['agent']['health'] == 'healthy'


def test_no_command_line_on_the_host_shows_the_token_over_three_executor_starts(token_box, client, state_home):
    name = token_box['name']
    token = box_token(state_home, name)
    executor = client.containers.get('tx9-%s-executor' % name)
    with CmdlineWatch(token) as watch:
        for _start in range(3):
            executor.restart(timeout=10)
            port = published_port(client, name)
            assert wait_for(lambda: answers(port, token), HANG_GUARD), 'Executor did not come back'
    assert watch.found == []
    assert watch.daemons_seen > 0 and watch.rounds > 10, 'the watch must have seen Executor booting'
    code, processes = exec_in(client, executor.name, ['ps', '-eo', 'args'])
    assert code == 0 and token not in processes and '--auth-token' not in processes


def test_the_dashboard_still_opens_with_the_token_as_basic_password(token_box, client, state_home):
    port = published_port(client, token_box['name'])
    token = box_token(state_home, token_box['name'])
    request = urllib.request.Request('http://127.0.0.1:%s/' % port, headers={
        'Authorization': 'Basic ' + base64.b64encode(('tx9:%s' % token).encode()).decode()})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def payload_bytes(tx9_path):
    """The uncompressed data tar of an unencrypted .tx9 archive."""
    with tarfile.open(tx9_path) as outer:
        for member in outer.getmembers():
            if member.name.startswith('data.tar'):
                return gzip.decompress(outer.extractfile(member).read())
    raise AssertionError('no payload in %s' % tx9_path)


def test_rotating_the_token_recreates_only_executor_and_the_agent_works_with_the_new_one(
        token_box, client, playbooks, state_home, tmp_path):
    name = token_box['name']
    old = box_token(state_home, name)
    agent_id = client.containers.get('tx9-%s-agent' % name).id
    executor_id = client.containers.get('tx9-%s-executor' % name).id
    check = playbooks.module('tx9_box', dict(name=name, rotate_token=True), '--check')
    assert check['changed'] is True and box_token(state_home, name) == old
    result, output = playbooks.module_with_output('tx9_box', dict(name=name, rotate_token=True), '-vvv')
    assert result['changed'] is True and not result.get('failed'), result
    new = box_token(state_home, name)
    assert new != old and new not in output and old not in output
    assert client.containers.get('tx9-%s-agent' % name).id == agent_id
    assert client.containers.get('tx9-%s-executor' % name).id != executor_id
    port = published_port(client, name)
    assert mcp_status(port, old) == 401
    assert mcp_status(port, new) == 200
    code, listed = exec_in(client, 'tx9-%s-agent' % name, ['claude', 'mcp', 'list'], user='agent')
    assert code == 0 and 'executor' in listed and 'Connected' in listed, listed
    backup = playbooks.module('tx9_backup', dict(name=name, dest=str(tmp_path), encrypt=False))
    assert not backup.get('failed'), backup
    data = payload_bytes(backup['path'])
    assert old.encode() not in data, 'the backup still carries the old token'
    assert new.encode() in data


def executor_daemon_pid(client, name):
    code, text = exec_in(client, 'tx9-%s-executor' % name,
                         ['cat', '/data/home/agent/.executor/server-control/server.json'])
    assert code == 0, text
    return str(json.loads(text)['pid'])


def test_stopping_executors_daemon_turns_it_unhealthy_and_tx9_info_says_so(token_box, client, playbooks):
    name = token_box['name']
    container = 'tx9-%s-executor' % name
    assert wait_for(lambda: health(client, container) == 'healthy', HANG_GUARD)
    pid = executor_daemon_pid(client, name)
    assert exec_in(client, container, ['kill', '-STOP', pid])[0] == 0
    try:
        # From healthy, Docker's next verdict is the only change there can be.
        assert wait_for(lambda: health(client, container) != 'healthy', HANG_GUARD) and \
            health(client, container) == 'unhealthy'
        info = playbooks.module('tx9_info', dict(name=name))['boxes'][0]
        assert info['containers']['executor']['health'] == 'unhealthy'
    finally:
        exec_in(client, container, ['kill', '-CONT', pid])
    assert wait_for(lambda: health(client, container) == 'healthy', HANG_GUARD)


ENGINE_CONFIG_PLAY = """
- name: Configure an engine as tx9_host does
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The role's engine configuration, into the test engine's own file
      ansible.builtin.include_role:
        name: col_agents.tx9.tx9_host
        tasks_from: engine_config
      vars:
        tx9_host_probe: {docker: false, systemd: false, local_engine: true}
        tx9_host_engine_config_path: "%s"
"""


class SecondEngine:
    """A dockerd of this test's own, in its own network namespace, configured by the tx9_host role.

    The role's engine configuration tasks write its configuration file (they write
    /etc/docker/daemon.json on a real host). The machine's own engine is never touched: this one
    has its own data root, exec root, pid file, socket and bridge, and is stopped, killed and
    restarted by the pid it was started with.
    """

    def __init__(self):
        tag = uuid.uuid4().hex[:6]
        self.ns = 'tx9lr%s' % tag
        self.veth = 'tx9lr%s' % tag
        self.subnet = 200 + int(tag[:2], 16) % 50
        self.address = '10.231.%d.2' % self.subnet
        self.root = '/var/lib/tx9lr-%s' % tag
        self.sock = 'unix://%s/docker.sock' % self.root
        self.proc = None

    def setup(self, playbooks):
        os.makedirs(self.root)
        play = os.path.join(self.root, 'configure.yml')
        with open(play, 'w') as handle:
            handle.write(ENGINE_CONFIG_PLAY % os.path.join(self.root, 'daemon.json'))
        playbooks.run(play)
        with open(os.path.join(self.root, 'daemon.json')) as handle:
            assert json.load(handle)['live-restore'] is True
        for argv in (['ip', 'netns', 'add', self.ns],
                     ['ip', 'link', 'add', self.veth + 'a', 'type', 'veth', 'peer', 'name', self.veth + 'b'],
                     ['ip', 'link', 'set', self.veth + 'b', 'netns', self.ns],
                     ['ip', 'addr', 'add', '10.231.%d.1/24' % self.subnet, 'dev', self.veth + 'a'],
                     ['ip', 'link', 'set', self.veth + 'a', 'up'],
                     ['ip', 'netns', 'exec', self.ns, 'ip', 'addr', 'add', self.address + '/24', 'dev', self.veth + 'b'],
                     ['ip', 'netns', 'exec', self.ns, 'ip', 'link', 'set', self.veth + 'b', 'up'],
                     ['ip', 'netns', 'exec', self.ns, 'ip', 'link', 'set', 'lo', 'up']):
            subprocess.run(argv, check=True)
        self.start()

    def in_ns(self, argv):
        return ['nsenter', '--net=/var/run/netns/%s' % self.ns] + argv

    def start(self):
        argv = self.in_ns(['dockerd', '--config-file', os.path.join(self.root, 'daemon.json'),
                           '--data-root', os.path.join(self.root, 'data'), '--exec-root', os.path.join(self.root, 'x'),
                           '--pidfile', os.path.join(self.root, 'docker.pid'), '-H', self.sock,
                           '--bip', '10.232.%d.1/24' % self.subnet])
        log = open(os.path.join(self.root, 'dockerd.log'), 'ab')
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        assert wait_for(self.answers, HANG_GUARD), 'the second engine did not answer'

    def answers(self):
        try:
            return self.client().ping()
        except Exception:
            return False

    def client(self):
        return docker.DockerClient(base_url=self.sock, version='auto', timeout=120)

    def load_from_main(self, tag):
        """This engine gets tag from the machine's engine: docker save piped into docker load.

        The CLI has no read timeout: while the other suites keep the machine's engine busy, the
        save's first bytes may come later than an SDK client's read timeout allows.
        """
        saver = subprocess.Popen(['docker', 'save', tag], stdout=subprocess.PIPE)
        loader = subprocess.run(['docker', '-H', self.sock, 'load'], stdin=saver.stdout,
                                stdout=subprocess.DEVNULL, timeout=1200, check=False)
        saver.stdout.close()
        assert saver.wait(60) == 0 and loader.returncode == 0, 'docker save | docker load of %s failed' % tag

    def kill9(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def playbook_module(self, playbooks, state_home, module, args):
        """Run one tx9 module in the namespace against this engine; its result."""
        work = tempfile.mkdtemp(prefix='tx9-lr-call-')
        try:
            extra, result_path = os.path.join(work, 'vars.json'), os.path.join(work, 'result.json')
            with open(extra, 'w') as handle:
                json.dump(dict(module_args=args, result_path=result_path), handle)
            argv = self.in_ns([os.path.join(BIN, 'ansible-playbook'), os.path.join(PLAYS, '%s.yml' % module),
                               '-e', '@' + extra])
            env = playbooks.env(dict(DOCKER_HOST=self.sock, TX9_HOME=state_home))
            proc = subprocess.run(argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  universal_newlines=True, timeout=900, check=False)
            assert proc.returncode == 0, proc.stdout[-4000:]
            with open(result_path) as handle:
                return json.load(handle)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def teardown(self):
        if self.proc is not None and self.proc.poll() is None and self.answers():
            client = self.client()
            for container in client.containers.list(all=True):
                container.remove(force=True)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.kill_recorded(os.path.join(self.root, 'x', 'containerd', 'containerd.pid'))
        subprocess.run(['ip', 'netns', 'del', self.ns], check=False)
        subprocess.run(['ip', 'link', 'del', self.veth + 'a'], check=False, stderr=subprocess.DEVNULL)
        subprocess.run(['umount', '-R', os.path.join(self.root, 'data')], check=False, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.root, ignore_errors=True)

    @staticmethod
    def kill_recorded(pidfile):
        """Stop the engine's own containerd, found by the pid file it recorded (left over after a SIGKILL)."""
        try:
            with open(pidfile) as handle:
                os.kill(int(handle.read().strip()), signal.SIGTERM)
        except (OSError, ValueError):
            pass


def test_two_boxes_outlive_a_sigkill_of_the_engine_unrestarted_and_healthy_and_answer_after_its_return(
        built_image, playbooks, tmp_path):
    engine = SecondEngine()
    try:
        engine.setup(playbooks)
        engine.load_from_main(built_image['tag'])
        home = str(tmp_path / 'home')
        names = ['lr%s%d' % (uuid.uuid4().hex[:4], index) for index in range(2)]
        for name in names:
            result = engine.playbook_module(playbooks, home, 'tx9_box', dict(name=name, image=built_image['tag']))
            assert result['changed'] is True and not result.get('failed'), result
            agent = engine.client().containers.get('tx9-%s-agent' % name)
            assert agent.exec_run(['sh', '-c', 'echo kept-%s > /data/home/agent/marker' % name], user='agent')[0] == 0
        engine_client = engine.client()
        assert wait_for(lambda: all(both_healthy(engine_client, n) for n in names), HANG_GUARD)
        started = dict((n, started_at(engine_client, n)) for n in names)
        engine.kill9()
        time.sleep(5)
        engine.start()
        engine_client = engine.client()
        # The wait ends on Docker's verdict, not on a clock of this test's. Engines before 23.0 do not
        # resume the health probes of live-restored containers (moby/moby#41871), so the verdict may be
        # the one from before the SIGKILL: that the boxes work is shown below by Executor's answer.
        after = dict((n, wait_for(lambda n=n: verdicts(engine_client, n), HANG_GUARD)) for n in names)
        assert after == dict((n, {'agent': 'healthy', 'executor': 'healthy'}) for n in names), after
        assert dict((n, started_at(engine_client, n)) for n in names) == started, 'they outlived it, never restarted'
        for name in names:
            port = published_port(engine_client, name)
            token = box_token(home, name)
            assert mcp_status_at(engine.address, port, token) == 200
            agent = engine_client.containers.get('tx9-%s-agent' % name)
            assert agent.exec_run(['cat', '/data/home/agent/marker'], user='agent').output.decode().strip() == \
                'kept-%s' % name
    finally:
        engine.teardown()


def mcp_status_at(address, port, token):
    conn = http.client.HTTPConnection(address, int(port), timeout=10)
    try:
        # Executor accepts only the Host names it was given; this address is the test's own.
        conn.request('POST', '/mcp', body=INITIALIZE, headers={
            'Host': '127.0.0.1', 'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream',
            'Authorization': 'Bearer %s' % token})
        return conn.getresponse().status
    finally:
        conn.close()


def test_quiesced_false_resumes_an_imported_box_once_and_tx9_info_shows_it_before_and_after(
        token_box, built_image, client, playbooks, tmp_path):
    name = token_box['name'] + 'i'
    backup = playbooks.module('tx9_backup', dict(name=token_box['name'], dest=str(tmp_path), encrypt=False))
    assert not backup.get('failed'), backup
    try:
        imported = playbooks.module('tx9_import', dict(path=backup['path'], name=name, image=built_image['tag']))
        assert not imported.get('failed'), imported
        before = playbooks.module('tx9_info', dict(name=name))['boxes'][0]
        assert before['quiesced'] is True and before['quiesced_by'] == 'import'
        assert before['gateway']['enabled'] is False
        predicted = playbooks.module('tx9_box', dict(name=name, quiesced=False), '--check')
        assert predicted['changed'] is True and 'resume the box (hb up)' in predicted['actions']
        assert playbooks.module('tx9_info', dict(name=name))['boxes'][0]['quiesced'] is True
        resumed = playbooks.module('tx9_box', dict(name=name, quiesced=False))
        assert resumed['changed'] is True and resumed['box']['quiesced'] is False, resumed
        again = playbooks.module('tx9_box', dict(name=name, quiesced=False))
        assert again['changed'] is False, again['actions']
        after = playbooks.module('tx9_info', dict(name=name))['boxes'][0]
        assert after['quiesced'] is False and after['quiesced_by'] is None
    finally:
        playbooks.module('tx9_box', dict(name=name, state='absent'))


def test_auth_url_file_writes_a_private_working_link_and_no_output_shows_the_token(
        token_box, client, playbooks, state_home, tmp_path):
    name = token_box['name']
    path = str(tmp_path / 'dashboard.url')
    result, output = playbooks.module_with_output('tx9_info', dict(name=name, auth_url_file=path), '-vvv')
    token = box_token(state_home, name)
    assert result['changed'] is True and result['auth_url_file'] == path
    assert token not in output and token not in json.dumps(result)
    assert os.stat(path).st_mode & 0o777 == 0o600
    with open(path) as handle:
        link = handle.read().strip()
    assert token in link
    assert link_status(link) == 200
    refused = playbooks.module('tx9_info', dict(name=name, auth_url_file=path))
    assert refused.get('failed') and refused['cause'] == 'OUTPUT_EXISTS'


def link_status(link):
    """What the dashboard answers a browser opening the link (credentials in the URL sent as Basic)."""
    parts = urllib.parse.urlsplit(link)
    target = '%s://%s:%s%s?%s' % (parts.scheme, '127.0.0.1', parts.port, parts.path or '/', parts.query)
    credentials = base64.b64encode(('%s:%s' % (parts.username, parts.password)).encode()).decode()
    request = urllib.request.Request(target, headers={'Authorization': 'Basic ' + credentials})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_box_stopped_and_started_keeps_its_dashboard_port_and_the_saved_link_still_answers(
        token_box, client, playbooks, tmp_path):
    name = token_box['name']
    path = str(tmp_path / 'before.url')
    assert not playbooks.module('tx9_info', dict(name=name, auth_url_file=path)).get('failed')
    with open(path) as handle:
        link = handle.read().strip()
    port = published_port(client, name)
    for _cycle in range(2):
        stopped = playbooks.module('tx9_box', dict(name=name, state='stopped'))
        assert stopped['changed'] is True and stopped['box']['state'] == 'stopped', stopped
        started = playbooks.module('tx9_box', dict(name=name))
        assert started['changed'] is True and not started.get('failed'), started
        assert published_port(client, name) == port
        assert link_status(link) == 200
    assert playbooks.module('tx9_box', dict(name=name))['changed'] is False
