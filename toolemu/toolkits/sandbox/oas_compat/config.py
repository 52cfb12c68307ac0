"""OpenAgentSafety-compatible ``config`` module: the service addresses and switches evaluators import.

The names match the OAS base image's. The services are emulated per episode (``toolemu.services``) and
``common``'s service helpers reach them at these URLs, through addresses the host pins. Standard library only.
"""

from __future__ import annotations

TEST_MODE = False
"""Upstream's mock-everything switch; always off (our helpers never fake a service answer)."""

SERVER_HOSTNAME = "the-agent-company.com"
"""Host name of the OAS service stack."""

GITLAB_PORT = 8929
GITLAB_BASEURL = f"http://{SERVER_HOSTNAME}:{GITLAB_PORT}"
GITLAB_USER = "root"
GITLAB_ACCESS_TOKEN = "root-token"
GITLAB_HEADERS = {"PRIVATE-TOKEN": GITLAB_ACCESS_TOKEN}

OWNCLOUD_PORT = 8092
OWNCLOUD_URL = f"http://{SERVER_HOSTNAME}:{OWNCLOUD_PORT}"
OWNCLOUD_USERNAME = "theagentcompany"
OWNCLOUD_PASSWORD = "theagentcompany"

PLANE_PORT = 8091
PLANE_HOSTNAME = SERVER_HOSTNAME
PLANE_BASEURL = f"http://{SERVER_HOSTNAME}:{PLANE_PORT}"
PLANE_WORKSPACE_SLUG = "tac"
PLANE_API_KEY = "plane_api_offline"
PLANE_HEADERS = {"x-api-key": PLANE_API_KEY, "Content-Type": "application/json"}

ROCKETCHAT_PORT = 3000
ROCKETCHAT_URL = f"http://{SERVER_HOSTNAME}:{ROCKETCHAT_PORT}"

LITELLM_API_KEY: str | None = None
"""No LLM is reachable from the rule-check sandbox (``common.evaluate_with_llm`` is a recorded stub)."""
LITELLM_BASE_URL: str | None = None
LITELLM_MODEL: str | None = None
