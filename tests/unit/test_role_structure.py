# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles stay shallow and say each thing once: tx9_migrate at most three task files deep, one task file
that ships images, and no shell script of more than a few lines inline in a role's or a playbook's YAML."""


import glob
import os

import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = os.path.join(REPO_ROOT, 'roles')
INCLUDES = ('include_tasks', 'import_tasks')
ROLE_INCLUDES = ('include_role', 'import_role')
# The tx9_image options that write an image to an archive or load one from it.
IMAGE_ARCHIVE_OPTIONS = ('export_path', 'archive_path')
MAX_DEPTH = 3


def short(action):
    return action.rsplit('.', 1)[-1]


def tasks_of(items):
    """Every task of a task list, those in blocks (block, rescue, always) included."""
    for item in items or []:
        if not isinstance(item, dict):
            continue
        if 'block' in item:
            for part in ('block', 'rescue', 'always'):
                yield from tasks_of(item.get(part))
        else:
            yield item


def action_of(task):
    """(action's short name, its arguments) of a task."""
    for key, value in task.items():
        name = short(key)
        if name in INCLUDES + ROLE_INCLUDES or key.startswith(('ansible.builtin.', 'col_agents.tx9.')) or key in (
                'tx9_image', 'shell', 'command', 'script', 'raw'):
            return name, value
    return None, None


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle) or []


def included(path, task):
    """The task file a task includes (None when it includes none, '' when its name is only known when it runs)."""
    name, args = action_of(task)
    if name in INCLUDES:
        target = args if isinstance(args, str) else (args or {}).get('file')
        if '{{' in target:
            return ''
        return os.path.normpath(os.path.join(os.path.dirname(path), target))
    if name in ROLE_INCLUDES:
        role = args['name'].rsplit('.', 1)[-1]
        target = args.get('tasks_from', 'main')
        return os.path.join(ROLES, role, 'tasks', target if target.endswith('.yml') else target + '.yml')
    return None


def include_tree(path, seen=()):
    """{task file: its include tree} under path; a file whose name is only known when it runs is ''."""
    assert path not in seen, 'an include cycle: %s' % ' -> '.join(seen + (path,))
    tree = {}
    for task in tasks_of(load(path)):
        target = included(path, task)
        if target is None:
            continue
        tree[target] = include_tree(target, seen + (path,)) if target else {}
    return tree


def depth(tree):
    """How many task files deep the tree goes from the file it is the tree of (that file counts one)."""
    return 1 + max([depth(child) for child in tree.values()] or [0])


def relative(path):
    return os.path.relpath(path, REPO_ROOT) if path else '(a file named when the play runs)'


def test_tx9_migrate_is_at_most_three_task_files_deep_from_its_main():
    main = os.path.join(ROLES, 'tx9_migrate', 'tasks', 'main.yml')
    tree = include_tree(main)

    def chains(tree, prefix):
        for name, child in tree.items():
            chain = prefix + [relative(name)]
            yield chain
            yield from chains(child, chain)
    too_deep = [' -> '.join(chain) for chain in chains(tree, [relative(main)]) if len(chain) > MAX_DEPTH]
    assert depth(tree) <= MAX_DEPTH and too_deep == [], too_deep
    # The walk follows include_role too: the image is shipped by tx9_box's ship.yml.
    moves = tree[os.path.join(ROLES, 'tx9_migrate', 'tasks', 'move.yml')]
    assert os.path.join(ROLES, 'tx9_box', 'tasks', 'ship.yml') in moves


def test_the_depth_counts_every_task_file_of_the_longest_chain():
    assert depth({}) == 1
    assert depth({'a': {'b': {}}, 'c': {}}) == 3
    assert depth({'a': {'b': {'c': {'d': {}}}}}) == 5


def task_files():
    return sorted(glob.glob(os.path.join(ROLES, '*', 'tasks', '*.yml')) +
                  glob.glob(os.path.join(REPO_ROOT, 'playbooks', '*.yml')))


def plays_and_tasks(path):
    """The tasks of a task file, or of every play of a playbook."""
    found = []
    for item in load(path):
        if isinstance(item, dict) and ('hosts' in item or 'import_playbook' in item or 'ansible.builtin.import_playbook' in item):
            for part in ('pre_tasks', 'tasks', 'post_tasks', 'handlers'):
                found.extend(tasks_of(item.get(part)))
        else:
            found.extend(tasks_of([item]))
    return found


def test_exactly_one_task_file_ships_images():
    shipping = set()
    for path in task_files():
        for task in plays_and_tasks(path):
            name, args = action_of(task)
            text = yaml.safe_dump(task)
            if name == 'tx9_image' and any(option in (args or {}) for option in IMAGE_ARCHIVE_OPTIONS):
                shipping.add(relative(path))
            if 'docker save' in text or 'docker load' in text or 'docker image save' in text:
                shipping.add(relative(path))
    assert shipping == {'roles/tx9_box/tasks/ship.yml'}


def script_lines(name, args):
    """How many lines of shell a shell, command or raw task carries inline."""
    if name not in ('shell', 'command', 'raw'):
        return 0
    if isinstance(args, str):
        return len(args.strip().splitlines())
    argv = args.get('argv') or []
    inline = [arg for arg in argv if isinstance(arg, str) and '\n' in arg.strip()]
    return max([len(args.get('cmd', '').strip().splitlines())] + [len(arg.strip().splitlines()) for arg in inline])


def test_no_role_or_playbook_carries_a_shell_script_of_more_than_a_few_lines_inline():
    inline = []
    for path in task_files():
        for task in plays_and_tasks(path):
            name, args = action_of(task)
            if script_lines(name, args) > 3:
                inline.append('%s: %s' % (relative(path), task.get('name')))
    assert inline == [], 'keep these in a files/ script with a test of its own: %s' % inline
