"""What an agent may do: its own input schemas, resolved against what the operator named.

``AgentScope`` (the roots, the connections file, the server's private-network allowances),
``agent_tool_specs(scope)`` (the tool catalogue an MCP client gets) and ``full_config`` (an
agent's pipeline config as the operator's).
"""

from indexfoundry.app.agent.pipeline import full_config
from indexfoundry.app.agent.scope import AgentScope, Roots, is_url
from indexfoundry.app.agent.tools import AGENT_INPUTS, AS_IS, agent_tool_specs

__all__ = ["AGENT_INPUTS", "AS_IS", "AgentScope", "Roots", "agent_tool_specs", "full_config", "is_url"]
