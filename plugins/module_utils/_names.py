# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Box names, generated names, object names and labels.

Private to the col_agents.tx9 collection.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Collection

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION

NAME_PATTERN = re.compile(r'^[a-z0-9][a-z0-9_-]{0,62}\Z')

LABEL_OWNER = 'tx9'
LABEL_BOX = 'tx9.box'
LABEL_VERSION = 'tx9.version'
LABEL_ROLE = 'tx9.role'
LABEL_ASSETS = 'tx9.assets'

ROLE_AGENT = 'agent'
ROLE_EXECUTOR = 'executor'
# A box with an egress policy has a third container, its proxy, on the box network and its own outside one.
ROLE_EGRESS = 'egress'

ADJECTIVES = (
    'amber',
    'bold',
    'brave',
    'bright',
    'calm',
    'clever',
    'cosy',
    'crisp',
    'eager',
    'fair',
    'fancy',
    'fast',
    'gentle',
    'glad',
    'golden',
    'grand',
    'happy',
    'jolly',
    'keen',
    'kind',
    'large',
    'lively',
    'lucky',
    'merry',
    'mighty',
    'neat',
    'nimble',
    'noble',
    'proud',
    'quick',
    'quiet',
    'rapid',
    'shiny',
    'silver',
    'smart',
    'steady',
    'sunny',
    'swift',
    'tidy',
    'witty',
)
ANIMALS = (
    'badger',
    'bear',
    'beaver',
    'bison',
    'cat',
    'crab',
    'crane',
    'deer',
    'dolphin',
    'eagle',
    'falcon',
    'ferret',
    'finch',
    'fox',
    'gecko',
    'goose',
    'hare',
    'hawk',
    'heron',
    'ibis',
    'koala',
    'lemur',
    'lynx',
    'marten',
    'moose',
    'newt',
    'otter',
    'owl',
    'panda',
    'puffin',
    'quail',
    'raven',
    'robin',
    'seal',
    'sloth',
    'stoat',
    'swan',
    'tiger',
    'walrus',
    'wolf',
)


def validate_box_name(name: object) -> str:
    """Return name when it is a valid box name, else raise INVALID_NAME."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise Tx9Error(
            f'The box name {name!r} is not valid: it must be 1 to 63 characters of a-z, 0-9, "_" '
            'and "-", starting with a letter or digit.',
            'INVALID_NAME',
            'Choose a name such as "my-box", or omit the name to get a generated one.',
        )
    return name


def names_in(directory: str, suffix: str) -> list[str]:
    """Valid box names of the files <name><suffix> in directory, sorted; none when it cannot be read."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return []
    names: list[str] = []
    for entry in sorted(entries):
        if entry.endswith(suffix) and not entry.startswith('.'):
            try:
                names.append(validate_box_name(entry[: -len(suffix)]))
            except Tx9Error:
                continue
    return names


def generate_name(taken: Collection[str], rng: random.Random | None = None) -> str:
    """A friendly adjective-animal name not in taken (a set of names).

    The first free pair in a shuffled order; when every pair is taken, a pair
    with a four-digit suffix.
    """
    rng = rng or random.SystemRandom()
    pairs = [f'{a}-{b}' for a in ADJECTIVES for b in ANIMALS]
    rng.shuffle(pairs)
    for name in pairs:
        if name not in taken:
            return name
    while True:
        name = f'{rng.choice(pairs)}-{rng.randrange(10000):04d}'
        if name not in taken:
            return name


def object_names(box: str) -> dict[str, str]:
    """The Docker object names of one box."""
    prefix = f'tx9-{box}'
    return dict(
        network=prefix,
        agent=prefix + '-agent',
        executor=prefix + '-executor',
        agent_volume=prefix + '-agent-data',
        executor_volume=prefix + '-exec-data',
        egress=prefix + '-egress',
        egress_network=prefix + '-out',
    )


def box_labels(box: str, role: str | None = None, version: str = COLLECTION_VERSION) -> dict[str, str]:
    """The labels every object of a box carries; containers add their role."""
    labels = {LABEL_OWNER: '1', LABEL_BOX: box, LABEL_VERSION: version}
    if role:
        labels[LABEL_ROLE] = role
    return labels


def owned_by(labels: dict[str, str] | None, box: str) -> bool:
    """True when an object's labels prove it belongs to box."""
    labels = labels or {}
    return labels.get(LABEL_OWNER) == '1' and labels.get(LABEL_BOX) == box
