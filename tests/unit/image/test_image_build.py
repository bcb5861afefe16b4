# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Debian mirror from apt sources, which box images are unused, their removal, and the build log's name."""

from __future__ import annotations

import os
import pathlib
import re
from typing import Any

import docker
import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._image import build as image
from ansible_collections.col_agents.tx9.plugins.module_utils._names import LABEL_OWNER

ASSETS = pathlib.Path(__file__).resolve().parents[3] / 'assets'

DEBIAN_SOURCES = """\
# Modernized from /etc/apt/sources.list
Types: deb deb-src
URIs: https://mirror.example.net/debian
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

# The security updates
Types: deb
URIs: http://security.example.net/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""

SECURITY_FIRST = """\
Types: deb
URIs: http://security.example.net/debian-security
Suites: bookworm-security
Components: main

Types: deb
URIs: http://deb.example.net/debian
Suites: bookworm
Components: main
"""


def test_a_deb822_stanza_serving_the_suite_gives_its_uri() -> None:
    assert image.debian_mirror([DEBIAN_SOURCES], 'bookworm') == 'https://mirror.example.net/debian'


def test_a_security_stanza_does_not_serve_the_plain_suite() -> None:
    assert image.debian_mirror([SECURITY_FIRST], 'bookworm') == 'http://deb.example.net/debian'
    assert image.debian_mirror([SECURITY_FIRST], 'bookworm-security') == 'http://security.example.net/debian-security'


def test_a_later_suite_in_the_suites_field_is_served_too() -> None:
    assert image.debian_mirror([DEBIAN_SOURCES], 'bookworm-updates') == 'https://mirror.example.net/debian'


def test_commented_out_fields_and_source_only_stanzas_are_ignored() -> None:
    text = ('Types: deb-src\nURIs: http://src.example.net/debian\nSuites: bookworm\n\n'
            'Types: deb\n# URIs: http://old.example.net/debian\nURIs: http://new.example.net/debian\n'
            'Suites: bookworm\n')
    assert image.debian_mirror([text], 'bookworm') == 'http://new.example.net/debian'


def test_a_stanza_with_enabled_no_is_ignored() -> None:
    text = ('Enabled: no\nTypes: deb\nURIs: http://off.example.net/debian\nSuites: bookworm\n\n'
            'Types: deb\nURIs: http://on.example.net/debian\nSuites: bookworm\n')
    assert image.debian_mirror([text], 'bookworm') == 'http://on.example.net/debian'


def test_a_deb822_uri_that_is_not_http_is_skipped() -> None:
    text = 'Types: deb\nURIs: cdrom:/media/cdrom http://deb.example.net/debian\nSuites: bookworm\n'
    assert image.debian_mirror([text], 'bookworm') == 'http://deb.example.net/debian'


def test_a_one_line_source_gives_its_uri() -> None:
    text = '# deb http://commented.example.net/debian bookworm main\ndeb http://deb.example.net/debian bookworm main\n'
    assert image.debian_mirror([text], 'bookworm') == 'http://deb.example.net/debian'


def test_a_one_line_source_with_a_signed_by_option_gives_its_uri() -> None:
    text = ('deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.example.net/debian '
            'bookworm main\n')
    assert image.debian_mirror([text], 'bookworm') == 'http://deb.example.net/debian'


def test_a_one_line_source_with_several_options_gives_its_uri() -> None:
    text = ('deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] '
            'http://deb.example.net/debian bookworm main\n')
    assert image.debian_mirror([text], 'bookworm') == 'http://deb.example.net/debian'


def test_one_line_deb_src_and_security_lines_do_not_serve_the_suite() -> None:
    text = ('deb-src http://src.example.net/debian bookworm main\n'
            'deb http://security.example.net/debian-security bookworm-security main\n')
    assert image.debian_mirror([text], 'bookworm') is None


def test_the_first_text_with_a_mirror_wins_and_none_means_none() -> None:
    other = 'deb http://other.example.net/debian bookworm main\n'
    assert image.debian_mirror(['', SECURITY_FIRST, other], 'bookworm') == 'http://deb.example.net/debian'
    assert image.debian_mirror([DEBIAN_SOURCES], 'trixie') is None
    assert image.debian_mirror([], 'bookworm') is None


class FakeApi:
    def __init__(self, containers: list[dict[str, Any]], images: list[dict[str, Any]]) -> None:
        self._containers = containers
        self._images = images

    def containers(self, **kwargs: Any) -> list[dict[str, Any]]:
        assert kwargs == {'all': True}
        return self._containers

    def images(self, **kwargs: Any) -> list[dict[str, Any]]:
        assert kwargs == {'all': False}
        return self._images


class FakeClient:
    def __init__(self, containers: list[dict[str, Any]], images: list[dict[str, Any]]) -> None:
        self.api = FakeApi(containers, images)


def tx9_image(image_id: str, tags: list[str] | None, labelled: bool = True) -> dict[str, Any]:
    return {'Id': image_id, 'RepoTags': tags, 'Labels': {LABEL_OWNER: '1'} if labelled else None}


def unused(containers: list[dict[str, Any]], images: list[dict[str, Any]],
           keep: tuple[str, ...] | list[str] = ()) -> list[tuple[str, list[str]]]:
    return image.unused_box_images(FakeClient(containers, images), list(keep))


def test_an_image_a_container_uses_is_kept() -> None:
    images = [tx9_image('sha256:used', ['tx9-box:0.0.9'])]
    assert unused([{'Id': 'c1', 'ImageID': 'sha256:used'}], images) == []


def test_an_unused_tx9_image_is_listed_with_its_tx9_tags() -> None:
    images = [tx9_image('sha256:old', ['tx9-box:0.0.9', 'tx9-box:old'])]
    assert unused([], images) == [('sha256:old', ['tx9-box:0.0.9', 'tx9-box:old'])]


def test_an_image_with_the_keep_tag_is_kept() -> None:
    images = [tx9_image('sha256:current', ['tx9-box:0.1.0']), tx9_image('sha256:old', ['tx9-box:0.0.9'])]
    assert unused([], images, keep=['tx9-box:0.1.0']) == [('sha256:old', ['tx9-box:0.0.9'])]


def test_a_tx9_labelled_image_retagged_only_for_other_use_is_kept() -> None:
    assert unused([], [tx9_image('sha256:mine', ['registry.example.net/mine:1'])]) == []


def test_only_the_tx9_tags_of_an_image_that_is_also_tagged_otherwise_are_listed() -> None:
    images = [tx9_image('sha256:both', ['tx9-box:0.0.9', 'mine:1'])]
    assert unused([], images) == [('sha256:both', ['tx9-box:0.0.9'])]


def test_untagged_tx9_labelled_images_are_listed_by_id() -> None:
    images = [tx9_image('sha256:dangling', None), tx9_image('sha256:none', ['<none>:<none>'])]
    assert unused([], images) == [('sha256:dangling', []), ('sha256:none', [])]


def test_images_that_are_not_tx9_are_never_listed() -> None:
    images = [tx9_image('sha256:debian', ['debian:bookworm-slim'], labelled=False),
              tx9_image('sha256:anon', None, labelled=False),
              {'Id': 'sha256:other', 'RepoTags': ['x:1'], 'Labels': {LABEL_OWNER: '0'}}]
    assert unused([], images) == []


def test_an_unlabelled_image_with_a_tx9_tag_is_listed() -> None:
    assert unused([], [tx9_image('sha256:tag', ['tx9-box:dev'], labelled=False)]) == [('sha256:tag', ['tx9-box:dev'])]


class RemovingApi:
    """An engine whose remove_image raises what it is given."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def remove_image(self, ref: str) -> None:
        raise self.error


class RemovingClient:
    def __init__(self, error: BaseException) -> None:
        self.api = RemovingApi(error)


def test_an_image_already_gone_is_no_error_and_an_engine_refusal_is_docker_error() -> None:
    image.remove_images(RemovingClient(docker.errors.NotFound('gone')), [('sha256:old', ['tx9-box:0.0.9'])])
    with pytest.raises(Tx9Error) as raised:
        image.remove_images(RemovingClient(docker.errors.APIError('in use')), [('sha256:old', [])])
    assert raised.value.cause == 'DOCKER_ERROR' and 'remove image sha256:old' in raised.value.reason


def test_a_programming_error_while_removing_an_image_is_not_turned_into_docker_error() -> None:
    with pytest.raises(TypeError):
        image.remove_images(RemovingClient(TypeError('bad call')), [('sha256:old', ['tx9-box:0.0.9'])])


def test_the_build_log_is_named_for_the_tag_in_the_log_dir(tmp_path: pathlib.Path) -> None:
    builder = image.ImageBuilder(None, str(ASSETS), tag='registry.example.net/tx9-box:1.0', log_dir=str(tmp_path))
    path = builder.new_log_path()
    assert os.path.dirname(path) == str(tmp_path)
    assert re.fullmatch(r'image-build-registry\.example\.net_tx9-box_1\.0-[0-9]{8}-[0-9]{6}\.log', os.path.basename(path))
