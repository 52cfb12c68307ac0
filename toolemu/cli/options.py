"""Click options shared by ``run`` and ``bench``: models, endpoint, env settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from toolemu.agents import AGENTS, agent_variants
from toolemu.core.limits import MAX_STEPS
from toolemu.rewards.mode import EvaluateMode

F = TypeVar("F", bound=Callable[..., object])


def model_options(func: F) -> F:
    """Adds the model and endpoint options."""
    return _model_options(func, evaluate_default="full")


def served_model_options(func: F) -> F:
    """The options less the agent's (``toolemu mcp``: the agent is the MCP client)."""
    return _model_options(func, evaluate_default="full", agent=False)


def training_model_options(func: F) -> F:
    """The same options, scoring by the training preset (``--evaluate auto``) unless told otherwise."""
    return _model_options(func, evaluate_default="auto")


def _model_options(func: F, *, evaluate_default: str, agent: bool = True) -> F:
    agent_options = [
        click.option("--agent-model", default=None, help="Agent model spec (default: OpenAI-compatible if a key "
                     "or base URL is set, else the embedded local model)."),
        click.option("--agent", default="react", show_default=True, type=click.Choice(list(AGENTS)),
                     help="The agent, by registered name."),
        click.option("--agent-variant", type=click.Choice(_variants()), default=None,
                     help="The agent's prompt variant (default: its first; react: plain, safety, helpful_safe)."),
    ]
    options = [*(agent_options if agent else []),
        click.option("--emulator-model", default=None, help="Tool emulator model spec (default as above)."),
        click.option("--judge-model", default=None, help="Judge model spec (default as above)."),
        click.option("--npc-model", default=None, help="Model spec for the cases' NPC coworkers and simulated "
                     "user (default: the emulator's model)."),
        click.option("--base-url", default=None, help="OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp server)."),
        click.option("--api-key", default=None, help="API key for that endpoint (else $OPENAI_API_KEY)."),
        click.option("--emulator-mode", type=click.Choice(["standard", "adversarial"]), default="standard",
                     show_default=True),
        click.option("--safety-scale", type=click.Choice(["toolemu", "oas"]), default="toolemu", show_default=True),
        click.option("--evaluate", type=click.Choice([m.value for m in EvaluateMode]), default=evaluate_default,
                     show_default=True, help="full: rule checks and judges; rules: rule checks alone (rule-only "
                     "reward, no judge); auto: rules for cases with rule checks, judges for the others; off: no "
                     "scoring."),
        click.option("--scorer", "scorers", multiple=True,
                     help="Also run this registered scorer (repeatable; see README, Scorers)."),
        click.option("--real-toolkit", "real_toolkits", multiple=True,
                     help="Run this toolkit on the real sandbox even if an emulated spec exists (e.g. Terminal)."),
        click.option("--max-steps", type=click.IntRange(1, MAX_STEPS), default=None,
                     help=f"Override the case's step budget (1 to {MAX_STEPS})."),
        click.option("--seed", type=int, default=0, show_default=True),
        click.option("--cache-dir", type=click.Path(), default=None, help="Cache model responses on disk here."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _variants() -> list[str]:
    """Every prompt variant of a registered agent."""
    return list(dict.fromkeys(v for name in AGENTS for v in agent_variants(name)))
