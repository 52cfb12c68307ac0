"""The GRPO objective on padded token sequences: policy gradient on the policy's tokens plus a KL penalty.

Token-level: every trained token of the step weighs the same, whatever its episode's length (the sum over a
micro-batch is divided by the step's total count, so accumulated micro-batches add up to the full-batch loss).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from toolemu.training.grpo.sequence import TokenSequence


class MicroBatch(NamedTuple):
    """Right-padded tensors of a few sequences."""

    ids: Any
    """``(B, T)`` token ids."""
    attention: Any
    """``(B, T)`` 1 for real tokens."""
    mask: Any
    """``(B, T - 1)`` float, 1 where the *predicted* token (position t + 1) is the policy's."""
    advantages: Any
    """``(B,)`` one advantage per sequence."""


class LossParts(NamedTuple):
    """A micro-batch's contribution to the step's loss, already divided by the step's token count."""

    loss: Any
    """Scalar tensor with a graph, ready for ``backward``."""
    kl_sum: float
    """Sum of the per-token KL estimates (for the metric)."""
    tokens: int
    """Trained tokens in the micro-batch."""


def pad_batch(torch: Any, sequences: Sequence[TokenSequence], advantages: Sequence[float], pad_id: int,
              device: str) -> MicroBatch:
    """Right-pads ``sequences`` into one micro-batch."""
    width = max(len(s.ids) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(sequences), width), dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.float32)
    for row, seq in enumerate(sequences):
        n = len(seq.ids)
        ids[row, :n] = torch.tensor(seq.ids, dtype=torch.long)
        attention[row, :n] = 1
        mask[row, :n] = torch.tensor(seq.mask, dtype=torch.float32)
    return MicroBatch(ids.to(device), attention.to(device), mask[:, 1:].to(device),
                      torch.tensor(list(advantages), dtype=torch.float32, device=device))


def token_logprobs(torch: Any, model: Any, batch: MicroBatch) -> Any:
    """``(B, T - 1)`` log-probability of each next token under ``model``."""
    logits = model(input_ids=batch.ids, attention_mask=batch.attention).logits[:, :-1].float()
    logp = torch.log_softmax(logits, dim=-1)
    return logp.gather(-1, batch.ids[:, 1:].unsqueeze(-1)).squeeze(-1)


def grpo_loss(torch: Any, logp: Any, ref_logp: Any | None, batch: MicroBatch, *, kl_coef: float,
              total_tokens: int) -> LossParts:
    """The GRPO loss of one micro-batch.

    On-policy (one update per batch of rollouts), the importance ratio ``exp(logp - logp.detach())`` is 1 in
    value and carries the gradient ``A * grad logp``. The KL term is the k3 estimator
    ``exp(ref - logp) - (ref - logp) - 1`` (unbiased, always >= 0).

    Args:
        torch: The torch module.
        logp: Policy log-probabilities, with a graph.
        ref_logp: Reference log-probabilities (no graph), or ``None`` when ``kl_coef`` is 0.
        batch: The micro-batch (its mask selects the policy's tokens).
        kl_coef: KL weight.
        total_tokens: Trained tokens in the whole step (the normaliser).
    """
    ratio = torch.exp(logp - logp.detach())
    per_token = -ratio * batch.advantages.unsqueeze(-1)
    kl = torch.zeros_like(logp)
    if ref_logp is not None and kl_coef > 0:
        delta = ref_logp - logp
        kl = torch.exp(delta) - delta - 1.0
        per_token = per_token + kl_coef * kl
    loss = (per_token * batch.mask).sum() / max(total_tokens, 1)
    kl_sum = float((kl.detach() * batch.mask).sum())
    return LossParts(loss=loss, kl_sum=kl_sum, tokens=int(batch.mask.sum().item()))
