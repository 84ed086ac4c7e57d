"""A batch's summary, computed here when grade_batch split the batch into several requests (each
request's own summary covers only its part; unsplit, the server's is returned as it is). The
statistics are the BatchSummary schema's: counts by outcome; over the scores, mean, population
standard deviation, standard error (sample standard deviation / √n), min, max, quantiles by
linear interpolation, a histogram of ``bins`` equal bins from min to max (the last includes
its upper edge); over the groups, the mean of each group's best and of its mean, pass@k with a
threshold and majority@k with a threshold and an answer key."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .results import Result
from .types import BatchSummary, GroupSummary, Histogram

__all__ = ["summarize"]

DEFAULT_BINS = 10


def _quantile(ordered: Sequence[float], p: float) -> float:
    at = (len(ordered) - 1) * p
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def _histogram(ordered: Sequence[float], bins: int) -> Histogram:
    low, high = ordered[0], ordered[-1]
    width = (high - low) / bins
    edges = [low + width * i for i in range(bins)] + [high]
    counts = [0] * bins
    for score in ordered:
        # equal scores (width 0) all fall in the last bin, which includes its upper edge
        i = bins - 1 if width == 0 else min(int((score - low) / width), bins - 1)
        counts[i] += 1
    return {"edges": edges, "counts": counts}


def _answer_key(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _groups(results: Sequence[Result], members: Sequence[Sequence[int]], threshold: float | None, answer_key: str | None) -> GroupSummary:
    best: list[float] = []
    means: list[float] = []
    passed = 0
    majority = 0
    for group in members:
        scores = [s for s in (results[i].score for i in group) if s is not None]
        if scores:
            best.append(max(scores))
            means.append(sum(scores) / len(scores))
        if threshold is not None and any(s >= threshold for s in scores):
            passed += 1
        if threshold is not None and answer_key is not None:
            # the most common answer (first seen on a tie) and the score of its first result
            counts: dict[str, int] = {}
            first_score: dict[str, float] = {}
            for i in group:
                result = results[i]
                metadata = result.metadata
                if result.score is None or metadata is None or answer_key not in metadata:
                    continue
                answer = _answer_key(metadata[answer_key])
                counts[answer] = counts.get(answer, 0) + 1
                first_score.setdefault(answer, result.score)
            if counts:
                top = max(counts, key=lambda a: counts[a])  # max keeps the first of equal counts
                if first_score[top] >= threshold:
                    majority += 1
    n = len(members)
    summary: GroupSummary = {
        "groups": n,
        "k": max((len(g) for g in members), default=0),
        "meanOfBest": sum(best) / len(best) if best else None,
        "meanOfMeans": sum(means) / len(means) if means else None,
    }
    if threshold is not None:
        summary["passAtK"] = passed / n if n else None
        if answer_key is not None:
            summary["majorityAtK"] = majority / n if n else None
    return summary


def summarize(results: Sequence[Result], options: bool | Mapping[str, Any], groups: Sequence[Sequence[int]] | None) -> BatchSummary:
    """The summary of ``results``; ``options`` as the request's ``summary`` (True, or ``bins``,
    ``threshold``, ``answerKey``); ``groups``: each group's result indexes, when grouped."""
    opts = options if isinstance(options, Mapping) else {}
    bins = int(opts.get("bins") or DEFAULT_BINS)
    scores = sorted(s for s in (r.score for r in results) if s is not None)
    outcomes = {"scored": 0, "error": 0, "abstained": 0}
    for r in results:
        outcomes[r.outcome] += 1
    n = len(scores)
    mean = sum(scores) / n if n else None
    squares = sum((s - mean) ** 2 for s in scores) if mean is not None else 0.0
    summary: BatchSummary = {
        "count": len(results),
        "outcomes": outcomes,
        "mean": mean,
        "std": math.sqrt(squares / n) if n else None,
        "sem": math.sqrt(squares / (n - 1)) / math.sqrt(n) if n > 1 else None,
        "min": scores[0] if n else None,
        "max": scores[-1] if n else None,
        "quantiles": {f"p{round(p * 100)}": _quantile(scores, p) for p in (0.05, 0.25, 0.5, 0.75, 0.95)} if n else None,
        "histogram": _histogram(scores, bins) if n else None,
    }
    if groups is not None:
        threshold = opts.get("threshold")
        answer_key = opts.get("answerKey")
        summary["groups"] = _groups(
            results,
            groups,
            float(threshold) if isinstance(threshold, (int, float)) else None,
            answer_key if isinstance(answer_key, str) else None,
        )
    return summary
