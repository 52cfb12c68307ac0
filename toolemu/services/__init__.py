"""Emulated web services of OpenAgentSafety's company (ownCloud, GitLab, Plane), served per episode."""

from toolemu.services.base import AGENT_PORTS, HOSTNAME, PORTS, Gap, GapLog, ServiceSpec

__all__ = ["AGENT_PORTS", "HOSTNAME", "PORTS", "Gap", "GapLog", "ServiceSpec"]
