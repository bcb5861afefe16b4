#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_image
short_description: Build the tx9 box image, or export it to an archive and load it on other hosts
version_added: 0.1.0
description:
  - Builds C(tx9-box:<collection version>) on the target host's Docker engine from the
    Dockerfile, provision script, guest runtime and C(box.env) shipped in the collection's
    C(assets/) directory. The action plugin ships those assets from the controller, so a remote
    host needs no checkout; it sends their digest first, and the assets only when a build is due.
  - "Build once, run everywhere: with O(export_path), the image (built, or already present with
    O(source=present)) is written as a gzip-compressed C(docker save) archive, its SHA-256 taken while
    it is written and recorded beside it in C(<export_path>.json). On another host,
    O(source=archive) checks the archive's SHA-256 against O(archive_sha256) before anything reaches
    C(docker load). Both ends are idempotent by image ID and stream in bounded pieces; the
    C(col_agents.tx9.build_image) playbook moves the archive between hosts."
  - Every run returns RV(image_id) and RV(assets_hash), so a play can compare them across hosts.
  - The image is labelled C(tx9=1), C(tx9.version) and C(tx9.assets), the digest of the build context
    (the SHA-256 of the assets as the context holds them, with the SHA-256 of the host's CA bundle beside
    it; the controller computes the first, see P(col_agents.tx9.image_digest#lookup)). When an image with
    the same tag and the same digest exists, nothing is built and no assets are sent.
  - The base image named in C(box.env) is used when present, else pulled, else (with
    O(base_bootstrap=auto) and a Debian base) made with C(debootstrap) from the host's configured
    Debian mirror and imported under its name.
  - Docker's build output goes to a log file on the target host, returned as RV(log_path), so a
    person can follow a long build with C(tail -f). To say where before the build starts, name the
    file with O(log_path); a run in check mode returns RV(built) and RV(log_dir) to decide on.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
attributes:
  check_mode:
    support: full
    description: Reports whether the image would be built, exported, loaded or pruned; writes, builds, loads and
      removes nothing.
  diff_mode:
    support: none
    description: Nothing to show; RV(assets_hash) says which assets the image holds.
  idempotent:
    support: full
    description: An image built from the same assets is never rebuilt unless O(force=true); an export whose file
      already holds the image ID, and a load on an engine that already has the image ID, do nothing.
  action:
    support: full
    description: The action plugin computes the digest of the controller's assets and, when the image is due for
      a build, packs the assets and sends them to the target (only with O(source=build)).
options:
  image:
    description:
      - The tag to build, export or load.
    type: str
    default: tx9-box:0.1.0
  source:
    description:
      - Where the image comes from.
      - V(build) builds it from the collection's assets when it is missing or was built from other assets.
      - V(present) takes the image already on the engine and never builds; fails with cause C(IMAGE_MISSING)
        when it is not there.
      - V(archive) loads it from O(archive_path), an archive another host exported, unless the engine already has
        O(image_id) (then O(image) is only pointed at it). The archive's SHA-256 must equal O(archive_sha256)
        before anything is loaded, else the run fails with cause C(IMAGE_ARCHIVE_CORRUPT).
    type: str
    choices: [build, present, archive]
    default: build
    version_added: 0.2.0
  export_path:
    description:
      - After the image is built or found, write it here as a gzip-compressed C(docker save) archive (mode C(0600)),
        and its record (tag, image ID, assets hash, SHA-256, size) to C(<export_path>.json).
      - Nothing is written when the file already holds that image ID and its bytes still match the record.
        A file there that no export wrote (no record beside it) is refused with cause C(ARCHIVE_WRITE_FAILED).
    type: path
    version_added: 0.2.0
  omit_layers:
    description:
      - With O(export_path), leave the files of the image's first this many layers out of the archive, for hosts
        whose engine already holds them (RV(present_layers) of a O(source=archive) run there with O(layers));
        C(docker load) never opens the file of a layer the engine holds. An upgrade that changed only the guest
        runtime then ships under a megabyte instead of the whole image.
      - V(0) writes the whole image. An engine that lacks a left-out layer refuses the archive with cause
        C(IMAGE_ARCHIVE_CORRUPT) and loads nothing.
    type: int
    default: 0
    version_added: 0.2.0
  layers:
    description:
      - With O(source=archive), the layer diff IDs of the image to load (RV(layers) of the exporting host's run),
        base first; the run returns RV(present_layers), how many of them this engine already holds.
    type: list
    elements: str
    version_added: 0.2.0
  archive_path:
    description:
      - With O(source=archive), the archive to load on the target host. Not read when the engine already has
        O(image_id); needed (with O(archive_sha256)) when it has not.
    type: path
    version_added: 0.2.0
  archive_sha256:
    description:
      - With O(source=archive), the SHA-256 (hex) the export returned as RV(archive.sha256). Take it from the
        exporting host's result, not from a file that travelled with the archive.
      - Without O(archive_path) and O(archive_sha256), a run only confirms (or, in check mode, asks) whether the
        engine has O(image_id); a load that is due fails with cause C(INVALID_ARGUMENT).
    type: str
    version_added: 0.2.0
  image_id:
    description:
      - With O(source=archive), the ID of the image the archive holds (RV(archive.image_id) of the export),
        with or without its C(sha256:) prefix.
    type: str
    version_added: 0.2.0
  force:
    description:
      - Build even when an image from the same assets exists.
    type: bool
    default: false
  prune:
    description:
      - After the build, remove C(tx9-box:*) images that no container uses (never O(image) itself).
    type: bool
    default: false
  base_bootstrap:
    description:
      - What to do when the base image is neither present nor pullable.
      - V(auto) builds a Debian base with C(debootstrap) from the host's apt mirror.
      - V(never) fails with cause C(BASE_IMAGE_UNAVAILABLE).
    type: str
    choices: [auto, never]
    default: auto
  trust_host_ca:
    description:
      - Trust the target host's CA bundle inside the image, at build time and at run time
        (system store, Node and pip), so builds behind TLS-inspecting proxies work.
    type: bool
    default: true
  ca_bundle:
    description:
      - The CA bundle on the target host that O(trust_host_ca) copies into the image.
    type: path
    default: /etc/ssl/certs/ca-certificates.crt
  assets_dir:
    description:
      - A directory on the target host holding the assets to build from, instead of the ones
        the action plugin ships from the controller.
    type: path
  assets_archive:
    description:
      - Set by the action plugin; the tar of the controller's assets on the target host.
    type: path
  assets_sha256:
    description:
      - Set by the action plugin; the SHA-256 of the controller's assets as a build context holds them.
      - With it and no assets, the module only compares that digest (with the CA bundle's) to the image's
        label. Assets are sent only when a build is due, so a plan or a current image costs no transfer.
    type: str
  build_timeout:
    description:
      - Seconds the build may take before it is abandoned.
    type: int
    default: 3600
  log_path:
    description:
      - The file on the target host that receives Docker's build output (appended to, mode C(0600));
        its directory must exist.
      - By default a new C(image-build-<tag>-<UTC time>.log) in RV(log_dir).
    type: path
    version_added: 0.2.0
notes:
  - The assets hash covers the host's CA bundle when O(trust_host_ca) is on, so hosts with different bundles
    build different images; loading one host's image on the others keeps them alike.
  - The first build on a fresh host takes a few minutes (about 3 on an idle 2-core machine, more on a
    busy one or behind a slow mirror); later runs compare a hash and take seconds, and a rebuild
    reuses Docker's layer cache.
seealso:
  - module: col_agents.tx9.tx9_box
  - module: col_agents.tx9.tx9_prune
"""

EXAMPLES = r"""
- name: Build the box image (a no-op when it is current)
  col_agents.tx9.tx9_image:
  register: built

- name: Show where the build log is
  ansible.builtin.debug:
    msg: "The build's output: {{ built.log_path }}"
  when: built.log_path

- name: Find out whether a build is due, without building
  col_agents.tx9.tx9_image:
  check_mode: true
  register: plan

- name: Say where the log will be before the build starts
  ansible.builtin.debug:
    msg: "Building; follow it with: tail -f {{ plan.log_dir }}/first-build.log"
  when: plan.built

- name: Build, writing the log named above
  col_agents.tx9.tx9_image:
    log_path: "{{ plan.log_dir }}/first-build.log"
  when: plan.built

- name: Export the image this host has, for other hosts
  col_agents.tx9.tx9_image:
    source: present
    export_path: /var/tmp/tx9-images/tx9-box.tar.gz
  register: exported

- name: Load it on a host that got a copy (skipped when that host has the same image ID)
  col_agents.tx9.tx9_image:
    source: archive
    archive_path: /var/tmp/tx9-images/tx9-box.tar.gz
    archive_sha256: "{{ exported.archive.sha256 }}"
    image_id: "{{ exported.archive.image_id }}"

- name: Rebuild from scratch and drop images no box uses
  col_agents.tx9.tx9_image:
    force: true
    prune: true
"""

RETURN = r"""
image:
  description: The image tag.
  returned: always
  type: str
  sample: tx9-box:0.1.0
image_id:
  description: The image ID after the run; empty in check mode when it would be built or loaded.
  returned: always
  type: str
  sample: sha256:6d0a4d3997437f1c2b
assets_hash:
  description:
    - The digest of the build context, stored in the image's C(tx9.assets) label.
    - With O(source=present) or O(source=archive), that label as the image on the engine carries it.
  returned: always
  type: str
  sample: 3f2a0c3bb2a5b4c6
built:
  description: Whether the image was (or in check mode would be) built.
  returned: always
  type: bool
  sample: false
loaded:
  description: Whether the archive was (or in check mode would be) loaded into the engine.
  returned: always
  type: bool
  sample: true
  version_added: 0.2.0
exported:
  description: Whether the archive at O(export_path) was (or in check mode would be) written.
  returned: always
  type: bool
  sample: true
  version_added: 0.2.0
archive:
  description:
    - With O(export_path), the export's record; with O(source=archive), the archive's O(archive_path) and
      O(archive_sha256). Null otherwise.
  returned: always
  type: dict
  version_added: 0.2.0
  contains:
    path:
      description: The archive on the target host.
      type: str
      sample: /var/tmp/tx9-images/tx9-box.tar.gz
    sha256:
      description: Its SHA-256, taken while it was written; empty in check mode when it would be written.
      type: str
      sample: 9b1c2f0e6a1d4c58e0b6f2a3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b
    size:
      description: Its size in bytes (exports only).
      type: int
      sample: 912345678
    image:
      description: The tag it was saved from (exports only).
      type: str
      sample: tx9-box:0.1.0
    image_id:
      description: The ID of the image it holds (exports only).
      type: str
      sample: sha256:6d0a4d3997437f1c2b
    assets_hash:
      description: The C(tx9.assets) label of that image (exports only).
      type: str
      sample: 3f2a0c3bb2a5b4c6
    omitted_layers:
      description: How many of the image's first layers the archive leaves out (exports only).
      type: int
      sample: 0
      version_added: 0.2.0
layers:
  description: The diff IDs of the image's layers, base first; empty when the image is not (yet) on the engine.
  returned: always
  type: list
  elements: str
  sample: [sha256:52828e05fe504f41e119e380cd33b604117fad3530d73a557c96191063166994]
  version_added: 0.2.0
present_layers:
  description: With O(source=archive) and O(layers), how many of those layers, from the base up, this engine already
    holds (as the first layers of one of its images); an export for it may leave that many out (O(omit_layers)).
  returned: always
  type: int
  sample: 5
  version_added: 0.2.0
log_path:
  description: The build log on the target host; null when nothing was built (and in check mode).
  returned: always
  type: str
  sample: /root/.tx9/logs/image-build-tx9-box_0.1.0-20261130-031500.log
planned_log_path:
  description: In check mode with a build due, the file it would log to; pass it as O(log_path) to the run that builds.
  returned: in check mode, when a build is due
  type: str
  version_added: 0.2.0
log_dir:
  description: The directory on the target host where build logs go unless O(log_path) names
    another file (the state home's C(logs) directory).
  returned: always
  type: str
  sample: /root/.tx9/logs
  version_added: 0.2.0
pruned:
  description: Tags (or IDs of untagged images) removed, or that would be removed in check mode.
  returned: always
  type: list
  elements: str
  sample: [tx9-box:0.0.9]
"""

from ansible_collections.col_agents.tx9.plugins.module_utils._image.ensure import ensure_image
from ansible_collections.col_agents.tx9.plugins.module_utils._module import docker_client, new_module, run
from ansible_collections.col_agents.tx9.plugins.module_utils._version import DEFAULT_IMAGE


def main() -> None:
    module = new_module(
        dict(
            image=dict(type='str', default=DEFAULT_IMAGE),
            force=dict(type='bool', default=False),
            prune=dict(type='bool', default=False),
            base_bootstrap=dict(type='str', choices=['auto', 'never'], default='auto'),
            trust_host_ca=dict(type='bool', default=True),
            ca_bundle=dict(type='path', default='/etc/ssl/certs/ca-certificates.crt'),
            assets_dir=dict(type='path'),
            assets_archive=dict(type='path'),
            assets_sha256=dict(type='str'),
            build_timeout=dict(type='int', default=3600),
            log_path=dict(type='path'),
            source=dict(type='str', choices=['build', 'present', 'archive'], default='build'),
            export_path=dict(type='path'),
            archive_path=dict(type='path'),
            archive_sha256=dict(type='str'),
            image_id=dict(type='str'),
            omit_layers=dict(type='int', default=0),
            layers=dict(type='list', elements='str'),
            state_home=dict(type='path'),
        ),
        required_if=[('source', 'archive', ('image_id',))],
        mutually_exclusive=[('export_path', 'archive_path')],
        supports_check_mode=True,
    )
    run(module, lambda: ensure_image(docker_client(module), module.params, module.check_mode))


if __name__ == '__main__':
    main()
