"""Stop-on-repetition for batched `generate`: a sequence stops once its tail is one 1–32-token unit
repeated over ≥ 64 tokens (VLM OCR's typical failure: one line or one token forever).

`repetition_period` is the pure rule; `make_repetition_criteria` wraps it as a transformers
`StoppingCriteria` (built lazily: transformers is imported on first use) whose `.flagged` and
`.periods` say which rows stopped and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class RepetitionPolicy:
    """A tail that is one `period`-token unit (1..max_period) repeated over max(min_span,
    period*min_repeats) tokens is a loop."""

    max_period: int = 32
    min_span: int = 64
    min_repeats: int = 4

    def span(self, period: int) -> int:
        return max(self.min_span, period * self.min_repeats)


def repetition_period(
    tokens: Sequence[int], policy: RepetitionPolicy = RepetitionPolicy(), ignore: Sequence[int] = ()
) -> int | None:
    """The smallest period with which `tokens` ends in a loop, or None. Spans containing an
    `ignore` id (padding, end of sequence) never count."""
    ignored = set(ignore)
    for period in range(1, policy.max_period + 1):
        span = policy.span(period)
        if len(tokens) < span:
            break
        tail = list(tokens[-span:])
        if ignored.intersection(tail):
            continue
        if all(tail[i] == tail[i + period] for i in range(span - period)):
            return period
    return None


@lru_cache(maxsize=1)
def _criteria_class() -> type:
    """Build the StoppingCriteria subclass on first use (transformers is imported lazily)."""
    import torch
    from transformers import StoppingCriteria

    class RepetitionStoppingCriteria(StoppingCriteria):
        """Per sequence: done once its generated tail is a loop (see `repetition_period`)."""

        def __init__(
            self,
            prompt_len: int,
            policy: RepetitionPolicy,
            ignore_ids: Sequence[int] = (),
            check_every: int = 1,
        ) -> None:
            self.prompt_len = prompt_len
            self.policy = policy
            self.ignore = torch.tensor(sorted(set(ignore_ids)), dtype=torch.long)
            self.check_every = max(1, check_every)
            self.flagged: torch.Tensor | None = None  # bool per sequence, on cpu
            self.periods: dict[int, int] = {}  # row → period of the loop that stopped it
            self._calls = 0

        def __call__(
            self, input_ids: torch.Tensor, scores: Any = None, **kwargs: Any
        ) -> torch.Tensor:
            batch = input_ids.shape[0]
            if self.flagged is None:
                self.flagged = torch.zeros(batch, dtype=torch.bool)
            self._calls += 1
            if self._calls % self.check_every == 0:
                window = self.policy.span(self.policy.max_period)
                generated = input_ids[:, self.prompt_len :]
                self._check(generated[:, -window:].to("cpu"))
            return self.flagged.to(input_ids.device)

        def _check(self, tail: torch.Tensor) -> None:
            assert self.flagged is not None
            length = tail.shape[1]
            for period in range(1, self.policy.max_period + 1):
                span = self.policy.span(period)
                if length < span:
                    break
                part = tail[:, -span:]
                loop = (part[:, period:] == part[:, :-period]).all(dim=1)
                if self.ignore.numel():
                    loop &= ~torch.isin(part, self.ignore).any(dim=1)
                for row in torch.nonzero(loop & ~self.flagged).flatten().tolist():
                    self.periods[row] = period
                self.flagged |= loop

    return RepetitionStoppingCriteria


def make_repetition_criteria(
    prompt_len: int,
    policy: RepetitionPolicy = RepetitionPolicy(),
    ignore_ids: Sequence[int] = (),
    check_every: int = 1,
) -> Any:
    """A transformers `StoppingCriteria` that stops looping sequences; `.flagged` / `.periods` tell which."""
    return _criteria_class()(prompt_len, policy, ignore_ids, check_every)
