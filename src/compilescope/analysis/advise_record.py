"""advise in the results file: the proposals kept as records (:class:`~compilescope.model.AdviseRecord`),
and the judgement derived from them and the run's trials again — so ``compilescope report`` of
an advise run prints the same advice, and the results JSON carries it (``advice_summary``).

The judgement is not stored as a record: like every other figure of a report it is derived
from what was measured, by :func:`compilescope.analysis.advise.judge`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ..model import AdviseFix, AdviseProposal, AdviseRecord, AdviseSnippet, RunResult
from ..report import RunReport
from .advise import AdviceReport, CodeFix, Proposal, Snippet, judge
from .outcomes import limit_in_force


def _convert(obj: Any, cls: type) -> Any:
    """``obj`` as a ``cls``, field by field (the record and the analysis class share their names)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.name in names})


def _proposal_record(p: Proposal) -> AdviseProposal:
    return AdviseProposal(p.name, p.strategy, p.options, p.addresses, _convert(p.snippet, AdviseSnippet), p.target,
                          None if p.alternative is None else _convert(p.alternative, AdviseSnippet), p.code)


def _proposal(r: AdviseProposal) -> Proposal:
    return Proposal(r.name, r.strategy, r.options, r.addresses, _convert(r.snippet, Snippet), r.target,  # type: ignore[arg-type]
                    None if r.alternative is None else _convert(r.alternative, Snippet))


def to_record(objective: str, proposals: Iterable[Proposal], fixes: Iterable[CodeFix]) -> AdviseRecord:
    return AdviseRecord(objective, tuple(_proposal_record(p) for p in proposals),
                        tuple(_convert(f, AdviseFix) for f in fixes))


def rejudge(result: RunResult, report: RunReport) -> AdviceReport | None:
    """The advice of an advise run, judged from its records (None for any other run)."""
    if result.advice is None:
        return None
    proposals = [_proposal(p) for p in result.advice.proposals]
    fixes = [_convert(f, CodeFix) for f in result.advice.code_fixes]
    return judge(report, proposals, result.advice.objective, result.lifetime, fixes,
                 recompile_limit=recorded_limit(result), result=result)


def recorded_limit(result: RunResult) -> int | None:
    """The recompile limit the advice was judged under, as its default trial recorded it (the
    limit it was given, else PyTorch's default in its process); None when none was recorded."""
    default = next((t for t in result.trials if t.spec.strategy == "default"), None)
    if default is None:
        return None
    return limit_in_force(default.spec.options.recompile_limit, default.env.recompile_limit_default, here=False)


def advice_summary(advice: AdviceReport) -> dict[str, Any]:
    """The judgement as data: each row's verdict, score and why, the recommendation, the
    unmeasured code fixes."""
    rec = advice.recommendation
    return {
        "objective": advice.objective,
        "lifetime": advice.lifetime,
        "rows": [{"label": r.label, "verdict": r.verdict, "score": r.score, "why": r.why,
                  "code": r.proposal.code if r.proposal else None,
                  "addresses": list(r.proposal.addresses) if r.proposal else []} for r in advice.rows],
        "recommendation": None if rec is None else {
            "label": rec.label, "code": rec.proposal.code if rec.proposal else None,
            "snippet": dataclasses.asdict(rec.proposal.snippet) if rec.proposal else None},
        "code_fixes": [{"cause": f.cause, "step": f.step} for f in advice.code_fixes],
        "tie": advice.tie,
        "horizon": advice.horizon,
        "notes": list(advice.notes),
    }
