"""Loading the config: the inherited blocked domains and what opting into private networks drops."""

from __future__ import annotations

from indexfoundry.models.config import parse_pipeline_config


def test_opting_into_private_networks_drops_only_the_inherited_loopback_blocks():
    source = {"type": "url", "url": "http://127.0.0.1/"}
    default = parse_pipeline_config({"connect": {"sources": [source]}})
    assert default.connect.blocked_domains == ["localhost", "127.0.0.1"]
    opted = parse_pipeline_config({"connect": {"sources": [source], "allow_private_networks": True}})
    assert opted.connect.blocked_domains == []
    one_host = parse_pipeline_config({"connect": {"sources": [source], "allowed_private_hosts": ["127.0.0.1:8765"]}})
    assert one_host.connect.blocked_domains == ["localhost"]
    explicit = parse_pipeline_config(
        {"connect": {"sources": [source], "allow_private_networks": True, "blocked_domains": ["localhost"]}}
    )
    assert explicit.connect.blocked_domains == ["localhost"]
