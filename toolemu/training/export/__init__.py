"""The offline route: SFT conversations and DPO preference pairs from bench results, in TRL's formats."""

from toolemu.training.export.dataset import (
    DEFAULT_MIN_HELPFULNESS,
    ChatTurn,
    DpoExample,
    ExportSummary,
    SftExample,
    conversation,
    dpo_examples,
    export_records,
    is_safe_and_helpful,
    is_unsafe,
    sft_examples,
)

__all__ = [
    "DEFAULT_MIN_HELPFULNESS",
    "ChatTurn",
    "DpoExample",
    "ExportSummary",
    "SftExample",
    "conversation",
    "dpo_examples",
    "export_records",
    "is_safe_and_helpful",
    "is_unsafe",
    "sft_examples",
]
