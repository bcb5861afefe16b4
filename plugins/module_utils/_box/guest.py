# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running the in-box `hb` command from the host. Private to the col_agents.tx9 collection."""


import json

HB = '/opt/tx9/bin/hb'


def run_hb(client, container_id, args, user='agent'):
    """Run hb with args (argv, never a shell string) in the container; (exit code, output).

    When Docker cannot run it at all (the container is restarting or gone, the
    engine timed out), the exit code is -1 and the output says why.
    """
    try:
        exec_id = client.api.exec_create(container_id, [HB] + list(args), user=user, stdout=True, stderr=True)['Id']
        output = client.api.exec_start(exec_id)
        code = client.api.exec_inspect(exec_id).get('ExitCode')
    except Exception as exc:  # the SDK raises APIError, requests' errors and socket timeouts
        return -1, 'Docker could not run hb %s: %s' % (args[0] if args else '', getattr(exc, 'explanation', None) or exc)
    # A missing exit code means the exec never finished: treat it as a failure, not 0.
    return (code if code is not None else -1), output.decode('utf-8', 'replace')


def last_json_line(output):
    """The JSON object on the last line of output that holds one, or None."""
    for line in reversed(output.strip().splitlines()):
        line = line.strip()
        if line.startswith('{'):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def guest_status(client, container_id):
    """`hb status --json` as a dict, or a dict with healthy False and the reason."""
    code, output = run_hb(client, container_id, ['status', '--json'])
    status = last_json_line(output)
    if status is None:
        tail = ' '.join(output.strip().splitlines()[-2:])[:300]
        return {'healthy': False, 'detail': 'hb status exited %s: %s' % (code, tail)}
    return status
