"""ACLs against real processes on 127.0.0.1 (one controller, one broker, PLAINTEXT, the
StandardAuthorizer): ``pykraft acls`` add, list and remove; confluent-kafka's AdminClient
create, describe and delete; the ACLs outlive a restart of every node."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from process_harness import wait_for
from typer.testing import CliRunner, Result

from pykraft.config.authorizer import STANDARD_AUTHORIZER
from pykraft.tools.local_cluster import LocalCluster

pytestmark = pytest.mark.timeout(180)
PROPERTIES = {"pykraft.shutdown.timeout.ms": "3000",
              "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS"}
ALICE_READ = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"


def acls(cluster: LocalCluster, *args: str, stdin: str | None = None) -> Result:
    from pykraft.cli.main import app

    return CliRunner().invoke(app, ["acls", "--bootstrap-server", cluster.bootstrap_servers,
                                    *args], input=stdin)


def ok(cluster: LocalCluster, *args: str, stdin: str | None = None) -> str:
    result = acls(cluster, *args, stdin=stdin)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def listed(cluster: LocalCluster, *args: str) -> list[dict[str, str]]:
    return list(json.loads(ok(cluster, "--list", "--json", *args)))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    made = LocalCluster.create(tmp_path_factory.mktemp("acls") / "c", 1, PROPERTIES,
                               brokers=1)
    made.start_all()
    made.wait_listening(made.brokers)
    wait_for("the broker answers DescribeAcls",
             lambda: True if acls(made, "--list").exit_code == 0 else None)
    yield made
    for node_id in made.nodes:
        made.kill(node_id)


def test_the_tool_adds_lists_and_removes(cluster: LocalCluster) -> None:
    out = ok(cluster, "--add", "--allow-principal", "User:alice", "--operation", "Read",
             "--topic", "orders")
    assert out == ("Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, "
                   f"name=orders, patternType=LITERAL)`: \n \t{ALICE_READ} \n\n")
    wait_for("the ACL listed", lambda: True if listed(cluster, "--topic", "orders") else None)
    assert ok(cluster, "--list", "--topic", "orders") == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, "
        f"patternType=LITERAL)`: \n \t{ALICE_READ} \n\n")
    ok(cluster, "--add", "--allow-principal", "User:bob", "--consumer", "--topic", "pay-",
       "--group", "pay-", "--resource-pattern-type", "PREFIXED")
    wait_for("bob's ACLs", lambda: True if len(listed(
        cluster, "--topic", "pay-1", "--resource-pattern-type", "MATCH")) == 2 else None)
    by_bob = ok(cluster, "--list", "--principal", "User:bob")
    assert by_bob.startswith("ACLs for principal `User:bob`\n") and "alice" not in by_bob

    # without --force the tool asks, and "n" keeps the ACL
    kept = ok(cluster, "--remove", "--topic", "orders", stdin="n\n")
    assert "Are you sure you want to delete all ACLs for resource filter" in kept
    assert listed(cluster, "--topic", "orders")
    ok(cluster, "--remove", "--force", "--allow-principal", "User:bob", "--consumer",
       "--topic", "pay-", "--group", "pay-", "--resource-pattern-type", "PREFIXED")
    ok(cluster, "--remove", "--force", "--topic", "orders")
    wait_for("the ACLs gone", lambda: True if not listed(cluster) else None)


def test_refusals(cluster: LocalCluster) -> None:
    missing = acls(cluster, "--add", "--topic", "t")
    assert missing.exit_code == 1
    assert "You must specify one of: --allow-principal, --deny-principal" in missing.stderr
    wrong = acls(cluster, "--add", "--allow-principal", "User:a", "--operation", "Read",
                 "--cluster")
    assert wrong.exit_code == 1 and "ResourceType CLUSTER only supports" in wrong.stderr


def test_confluent_admin_and_a_restart(cluster: LocalCluster) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    binding = AclBinding(ResourceType.TOPIC, "ledger", ResourcePatternType.LITERAL,
                         "User:carol", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    for future in admin.create_acls([binding]).values():
        assert future.result(timeout=30) is None
    anything: Any = None  # confluent-kafka's stubs type the filter's "any" None as str
    any_topic = AclBindingFilter(ResourceType.TOPIC, anything, ResourcePatternType.ANY,
                                 anything, anything, AclOperation.ANY, AclPermissionType.ANY)
    wait_for("carol's ACL described", lambda: True if admin.describe_acls(
        any_topic).result(timeout=30) == [binding] else None)

    for node_id in cluster.nodes:
        cluster.stop(node_id)
    cluster.start_all()
    cluster.wait_listening(cluster.brokers)
    wait_for("the ACL back after a restart", lambda: True if listed(
        cluster, "--topic", "ledger") == [{
            "resourceType": "TOPIC", "name": "ledger", "patternType": "LITERAL",
            "principal": "User:carol", "host": "*", "operation": "WRITE",
            "permissionType": "ALLOW"}] else None)

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    (deleted,) = admin.delete_acls([any_topic]).values()
    assert deleted.result(timeout=30) == [binding]
    wait_for("no ACL left", lambda: True if not listed(cluster) else None)
