"""GitLab, emulated: REST API v4 and git over smart HTTP over a state folder (a JSON store and bare repositories).

``SPEC`` is what the server pool starts: port 8929 as in OpenAgentSafety, ``seed`` writes the TAC world's 14
projects, ``make_app`` serves a copy of them.
"""

from toolemu.services.base import PORTS, ServiceSpec
from toolemu.services.gitlab.app import GAP_HEADER, GitLabApp, make_app
from toolemu.services.gitlab.records import records
from toolemu.services.gitlab.seed import seed

SPEC = ServiceSpec(name="gitlab", port=PORTS["gitlab"], seed=seed, make_app=make_app, records=records)

__all__ = ["GAP_HEADER", "SPEC", "GitLabApp", "make_app", "seed"]
