"""The global options of the admin tools that reach either the brokers or the controllers
(``metadata-quorum``, ``features``): Kafka's ``--bootstrap-server`` /
``--bootstrap-controller`` pair and ``--command-config``, checked when a command runs (not
in the group callback, which runs before a subcommand's ``--help`` and would refuse it for
want of a bootstrap address)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pykraft.cli.errors import fail

if TYPE_CHECKING:
    from pykraft.tools.admin_client import ClientSecurity

BOOTSTRAP_CONTROLLER_HELP = "Comma-separated host:port of controllers."
BOOTSTRAP_SERVER_HELP = "Comma-separated host:port of brokers."


@dataclass(frozen=True, slots=True)
class BootstrapOptions:
    bootstrap: str
    command_config: Path | None


def bootstrap_options(bootstrap_controller: str | None, bootstrap_server: str | None,
                      command_config: Path | None) -> BootstrapOptions:
    """Exactly one bootstrap address list, and a --command-config that exists."""
    if (bootstrap_controller is None) == (bootstrap_server is None):
        raise fail("exactly one of --bootstrap-controller and --bootstrap-server is required")
    if command_config is not None and not command_config.exists():
        raise fail(f"Properties file {command_config} does not exist.")
    return BootstrapOptions(str(bootstrap_controller or bootstrap_server), command_config)


def command_security(options: BootstrapOptions) -> ClientSecurity:
    """How to connect, from --command-config as Kafka's admin client reads it."""
    from pykraft.config.properties import load_properties
    from pykraft.tools.admin_client import ClientSecurity, client_security

    if options.command_config is None:
        return ClientSecurity()
    return client_security(load_properties(options.command_config))
