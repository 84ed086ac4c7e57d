"""Reads {"text": [...], "names": [...], "combines": [...]} as JSON on stdin; writes what HUD's
own code (hud_graders) makes of each case, in the same order, as JSON on stdout."""

import json
import sys
import warnings

from hud_graders.combine import _combine_subscores, _dedupe_subscore_names, combine_all, combine_any
from hud_graders.results import SubScore
from hud_graders.text import contains, contains_all, contains_any, exact_match, f1_score, normalize, numeric_match


class Named:
    def __init__(self, name: str) -> None:
        self.name = name


def text_case(c: dict) -> dict:
    a, b, subs = c["a"], c["b"], c["subs"]
    return {
        "normalize": normalize(a),
        "exact": exact_match(a, b),
        "exactRaw": exact_match(a, b, normalize_text=False),
        "contains": contains(a, b),
        "containsCase": contains(a, b, case_sensitive=True),
        "any": contains_any(a, subs),
        "all": contains_all(a, subs),
        "numeric": numeric_match(a, c["x"], tolerance=c["tolerance"]),
        "f1": f1_score(a, b),
    }


def combine_case(c: dict) -> dict:
    try:
        parts = [SubScore(name=p["name"], value=p["value"], weight=p["weight"]) for p in c["parts"]]
    except ValueError:
        return {"refused": True}
    out: dict = {"refused": False, "any": [s.name for s in combine_any(1.0, parts).children]}
    out["all"] = [s.name for s in combine_all(1.0, parts).children]
    try:
        r = _combine_subscores(parts)
    except ValueError as error:
        out["error"] = str(error)
        return out
    out["score"] = r.reward
    out["names"] = [s.name for s in r.subscores]
    out["weights"] = [s.weight for s in r.subscores]
    return out


def main() -> None:
    cases = json.load(sys.stdin)
    warnings.simplefilter("ignore")  # HUD warns when the weights do not sum to 1; the result is the same
    json.dump(
        {
            "text": [text_case(c) for c in cases["text"]],
            "names": [_dedupe_subscore_names([Named(n) for n in names]) for names in cases["names"]],
            "combines": [combine_case(c) for c in cases["combines"]],
        },
        sys.stdout,
    )


main()
