"""Plane, the issue tracker of OpenAgentSafety's company, emulated: workspace ``tac``, API v1 on port 8091.

State is one JSON document in the state folder (``store``), seeded from the world (``seed``) and changed only
through the API (``app``) and its web pages (``web``): projects, members, states, labels and issues with Plane's
field names, pagination and error codes. Requests outside the emulated API and pages are recorded as gaps.
"""

from __future__ import annotations

from toolemu.services.base import PORTS, ServiceSpec
from toolemu.services.plane.app import PlaneApp, make_app
from toolemu.services.plane.records import records
from toolemu.services.plane.seed import seed

SPEC = ServiceSpec(name="plane", port=PORTS["plane"], seed=seed, make_app=make_app, records=records)
"""The Plane service."""

__all__ = ["SPEC", "PlaneApp", "make_app", "seed"]
