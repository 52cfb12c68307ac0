"""The env's action parser, ``toolemu.core.action`` (it lives in ``core`` so that agent wrappers, which may not
import ``envs``, parse actions exactly as the env does)."""

from toolemu.core.action import FORMAT_HELP, ParsedAction, action_text, nests_deeper_than, parse_action

__all__ = ["FORMAT_HELP", "ParsedAction", "action_text", "nests_deeper_than", "parse_action"]
