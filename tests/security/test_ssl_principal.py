"""ssl.principal.mapping.rules as Kafka's SslPrincipalMapper applies them."""

from __future__ import annotations

import datetime

import pytest
from cryptography.hazmat.primitives.serialization import Encoding

from pykraft.security.certificates import issue, new_ca
from pykraft.security.ssl_principal import NoMatchingRuleError, PrincipalMapper

RULES = ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
         "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
         "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,"
         "DEFAULT")


@pytest.mark.parametrize(("dn", "principal"), [
    ("CN=kafka1,OU=ServiceUsers,O=Org,C=US", "User:kafka1"),
    ("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Palo Alto,ST=CA,C=US", "User:duke@javasoft"),
    ("OU=x,cn=Someone", "User:SOMEONE"),
    ("OU=nobody", "User:OU=nobody"),
])
def test_rules_apply_in_order_until_one_matches(dn: str, principal: str) -> None:
    assert str(PrincipalMapper(RULES).principal(dn)) == principal


def test_default_keeps_the_dn_and_no_matching_rule_refuses() -> None:
    assert str(PrincipalMapper().principal("CN=a,O=b")) == "User:CN=a,O=b"
    with pytest.raises(NoMatchingRuleError, match="No rules apply to OU=x"):
        PrincipalMapper("RULE:^CN=(.*)$/$1/").principal("OU=x")


@pytest.mark.parametrize("rules", ["garbage", "RULE:^CN=(.*$/$1/"])
def test_invalid_rules_are_refused(rules: str) -> None:
    with pytest.raises(ValueError, match="Invalid rule"):
        PrincipalMapper(rules)


def test_a_certificate_subject_is_written_most_specific_first() -> None:
    now = datetime.datetime.now(datetime.UTC)
    client = issue(new_ca("CN=ca", now), "CN=alice,OU=eng,O=pykraft", now)
    der = client.certificate.public_bytes(Encoding.DER)
    assert str(PrincipalMapper().of_certificate(der)) == "User:CN=alice,OU=eng,O=pykraft"
    assert str(PrincipalMapper().of_certificate(None)) == "User:ANONYMOUS"
