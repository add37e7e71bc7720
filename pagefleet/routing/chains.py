"""Routing decisions as values: which script a page is, who said so, and which engine chain reads it.

    text-layer classifier (trustworthy layer only) ─► source=text_layer
    else visual router: SigLIP2 (gpu fleets) ─► source=siglip2, margin vs threshold
                        Tesseract OSD (cpu)  ─► source=osd, script confidence as margin
    both failed or undecided ────────────────► source=default (the multilingual safe chain)

Chains are configuration (`Settings.chains`), not code. What an engine reads is the engine's own
declaration (`pagefleet.workers.engines.base.Engine.reads`); the caller hands it in as data
(`scripts_by_entry`), so routing never imports an engine. This module never dispatches and does no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class VisualVote:
    """One visual router's opinion: `script` None when it could not decide."""

    source: str  # siglip2 | osd
    script: str | None
    margin: float | None = None
    detail: str = ""


@dataclass(frozen=True)
class RouteDecision:
    script: str  # latin | he | ar | default
    source: str  # text_layer | siglip2 | osd | default
    margin: float | None
    chain: tuple[str, ...]
    tried: tuple[str, ...] = field(default=())  # visual routers consulted, with their outcome

    @property
    def chain_key(self) -> str:
        return self.script if self.script in ("latin", "he", "ar") else "default"


def chain_for(script: str, chains: Mapping[str, Sequence[str]], *, gpu: bool) -> tuple[str, ...]:
    key = script if script in ("latin", "he", "ar") else "default"
    name = key if gpu else f"cpu_{key}"
    return tuple(chains[name])


def decide(
    hint_script: str | None,
    hint_margin: float | None,
    votes: Sequence[VisualVote],
    chains: Mapping[str, Sequence[str]],
    *,
    gpu: bool,
) -> RouteDecision:
    """First decisive source wins: the text layer's hint, then each visual vote in order."""
    tried = tuple(f"{v.source}:{v.script or 'undecided'}" for v in votes)
    if hint_script in ("latin", "he", "ar"):
        return RouteDecision(
            hint_script, "text_layer", hint_margin, chain_for(hint_script, chains, gpu=gpu), tried
        )
    for vote in votes:
        if vote.script in ("latin", "he", "ar"):
            return RouteDecision(
                vote.script,
                vote.source,
                vote.margin,
                chain_for(vote.script, chains, gpu=gpu),
                tried,
            )
    return RouteDecision("default", "default", None, chain_for("default", chains, gpu=gpu), tried)


def reads_script(engine_entry: str, script: str, reads: Mapping[str, Collection[str]]) -> bool:
    """Can this chain entry read `script`? `reads` maps chain entries to the scripts each engine
    declares it reads; an entry it does not hold reads nothing. Used by the routing table and the
    chain tests: an RTL page must never be read by an engine that cannot read its script."""
    return script in reads.get(engine_entry, ())
