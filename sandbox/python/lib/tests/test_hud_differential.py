"""gradebox.graders against HUD's own code (test/support/hud/hud_graders, vendored unchanged, MIT)
on generated inputs: the text helpers, and combine's names, weights and score. Skipped when the
vendored copy is not beside the library (the library alone, outside the repository)."""

import asyncio
import math
import os
import random
import sys
import unittest
import warnings

from gradebox import graders as ours

HUD = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "test", "support", "hud"))
HAVE_HUD = os.path.isdir(os.path.join(HUD, "hud_graders"))
if HAVE_HUD:
    sys.path.insert(0, HUD)
    from hud_graders import combine as hud_combine  # noqa: E402
    from hud_graders import text as hud_text  # noqa: E402
    from hud_graders.results import SubScore as HudSubScore  # noqa: E402

# the characters where Python's and JavaScript's ideas of whitespace and case differ, and plain text
ALPHABET = list("ab AB12.,-!?'\"") + ["\t", "\n", "\x1c", "\x1f", "\x85", "\u00a0", "\ufeff", "\u2028", "İ", "ß", "é", "3.5", " 42 "]


def text(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) < 1e-12


@unittest.skipUnless(HAVE_HUD, "HUD's vendored graders are not beside the library")
class HudDifferential(unittest.TestCase):
    def test_text_helpers_match_hud_on_3000_inputs(self) -> None:
        rng = random.Random(24)
        for _ in range(3000):
            a, b = text(rng), text(rng)
            subs = [text(rng) for _ in range(rng.randint(0, 3))]
            x, tol = rng.choice([0.0, 1.0, 3.5, 42.0]), rng.choice([0.0, 0.5])
            pairs = [
                ("normalize", ours.normalize(a), hud_text.normalize(a)),
                ("exact_match", ours.exact_match(a, b), hud_text.exact_match(a, b)),
                ("exact_match raw", ours.exact_match(a, b, normalize_text=False), hud_text.exact_match(a, b, normalize_text=False)),
                ("contains", ours.contains(a, b), hud_text.contains(a, b)),
                ("contains cased", ours.contains(a, b, case_sensitive=True), hud_text.contains(a, b, case_sensitive=True)),
                ("contains_any", ours.contains_any(a, subs), hud_text.contains_any(a, subs)),
                ("contains_all", ours.contains_all(a, subs), hud_text.contains_all(a, subs)),
                ("numeric_match", ours.numeric_match(a, x, tolerance=tol), hud_text.numeric_match(a, x, tolerance=tol)),
                ("f1_score", ours.f1_score(a, b), hud_text.f1_score(a, b)),
            ]
            for name, mine, theirs in pairs:
                if isinstance(mine, float):
                    self.assertTrue(same(mine, theirs), f"{name}({a!r}, {b!r}): {mine} != {theirs}")
                else:
                    self.assertEqual(mine, theirs, f"{name}({a!r}, {b!r})")

    def test_combine_matches_hud_on_1500_combinations(self) -> None:
        rng = random.Random(27)
        names = ["a", "b", "a-1", "a-2", "x"]
        for _ in range(1500):
            parts = [
                (rng.choice(names), rng.choice([0.0, 0.25, 1.0]), rng.choice([0.5, 1.0, -0.5, 2.0]))
                for _ in range(rng.randint(1, 4))
            ]
            mine = [ours.SubScore(name=n, value=v, weight=w) for n, v, w in parts]
            theirs = [HudSubScore(name=n, value=v, weight=w) for n, v, w in parts]
            outcomes = []
            for combine, subs in ((ours.combine, mine), (hud_combine.combine, theirs)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        outcomes.append(asyncio.run(combine(*subs)))
                    except ValueError as error:
                        outcomes.append(str(error))
            r1, r2 = outcomes
            if isinstance(r1, str) or isinstance(r2, str):
                self.assertEqual(r1, r2, f"{parts}: both refuse, with the same reason")
                continue
            self.assertTrue(same(r1.reward, r2.reward), f"{parts}: {r1.reward} != {r2.reward}")
            self.assertEqual([s.name for s in r1.subscores], [s.name for s in r2.subscores], f"{parts}")
            self.assertEqual([s.weight for s in r1.subscores], [s.weight for s in r2.subscores], f"{parts}")
            self.assertEqual(
                [s.name for s in ours.combine_any(1.0, mine).children], [s.name for s in hud_combine.combine_any(1.0, theirs).children]
            )
            self.assertEqual(
                [s.name for s in ours.combine_all(1.0, mine).children], [s.name for s in hud_combine.combine_all(1.0, theirs).children]
            )


if __name__ == "__main__":
    unittest.main()
