# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment:
    """The options every tx9 module takes: the Docker connection, and the host state home."""

    DOCUMENTATION = r"""
options:
  docker_host:
    description:
      - The Docker daemon to talk to, for example C(unix:///var/run/docker.sock),
        C(tcp://192.0.2.10:2376) or C(ssh://user@host).
      - When omitted, the E(DOCKER_HOST) environment variable of the target host is used,
        and without it the local socket C(unix:///var/run/docker.sock).
    type: str
    aliases: [docker_url]
  tls:
    description:
      - Connect over TLS without verifying the daemon's certificate.
    type: bool
    default: false
  validate_certs:
    description:
      - Connect over TLS and verify the daemon's certificate against O(ca_path).
    type: bool
    default: false
    aliases: [tls_verify]
  ca_path:
    description:
      - CA certificate to verify the daemon with.
    type: path
    aliases: [ca_cert, tls_ca_cert, cacert_path]
  client_cert:
    description:
      - Client certificate for TLS authentication.
    type: path
    aliases: [tls_client_cert, cert_path]
  client_key:
    description:
      - Client key for TLS authentication.
    type: path
    aliases: [tls_client_key, key_path]
  api_version:
    description:
      - The Docker API version to speak; V(auto) asks the daemon.
    type: str
    default: auto
    aliases: [docker_api_version]
  timeout:
    description:
      - Seconds to wait for one Docker API call.
    type: int
    default: 60
  state_home:
    description:
      - The directory on the target host that holds tx9's host-local state (box tokens and
        desired state in C(boxes/), locks in C(locks/), build logs in C(logs/)).
      - When omitted, E(TX9_HOME) on the target host, else C(~/.tx9).
      - Directories are created with mode C(0700) and files with mode C(0600).
    type: path
requirements:
  - Docker SDK for Python 7.0 or newer (C(docker))
"""
