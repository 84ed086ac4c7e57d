"""gradebox.graders: HUD's Python semantics for the text helpers and combining (where they differ
from the TypeScript library, the cases say so), autorubric scoring as the TypeScript library does
it, and invariants over a few thousand random inputs."""

from __future__ import annotations

import asyncio
import random
import unittest
import warnings

from gradebox import graders
from gradebox.graders import (
    EvaluationResult,
    Grader,
    SubScore,
    combine,
    combine_all,
    combine_any,
    contains,
    contains_all,
    contains_any,
    dedupe_names,
    exact_match,
    f1_score,
    first_number,
    normalize,
    numeric_match,
    score_rubric,
)


def resolve(coro):
    return asyncio.run(coro)


class Text(unittest.TestCase):
    def test_normalize(self) -> None:
        for text, expected in [
            ("  The Answer is: 42! ", "answer is 42"),
            ("Hello World", "hello world"),
            ("The-end", "end"),
            ("A.I. is an A", "i is"),
            ("ÀN Apple, the ÉTÉ!", "àn apple été"),
            ("don't stop", "don t stop"),
            ("snake_case stays", "snake_case stays"),
            ("theater and another", "theater and another"),
            ("  lots   of    space  ", "lots of space"),
            ("", ""),
            ("the a an", ""),
        ]:
            self.assertEqual(normalize(text), expected, text)
        self.assertEqual(normalize(42), "42")
        self.assertEqual(normalize(None), "none")

    def test_python_whitespace_and_case_rules(self) -> None:
        # Python's str.strip and re's \s take \x1c-\x1f and \x85 as whitespace (JavaScript's
        # trim and \s do not); str.lower folds İ to i + a combining dot, which is punctuation here
        self.assertEqual(exact_match("Paris\x1c", "paris", normalize_text=False), 1.0)
        self.assertEqual(exact_match("\x85Paris", "paris", normalize_text=False), 1.0)
        self.assertEqual(normalize("a\x1fb"), "b")
        self.assertEqual(normalize("İstanbul"), "i stanbul")

    def test_exact_match(self) -> None:
        self.assertEqual(exact_match("The Answer!", "answer"), 1.0)
        self.assertEqual(exact_match("Germany", "france"), 0.0)
        self.assertEqual(exact_match("The capital is Paris", "capital is Paris"), 1.0)
        self.assertEqual(exact_match("The Paris!", "Paris", normalize_text=False), 0.0)
        self.assertEqual(exact_match("  PARIS ", "paris", normalize_text=False), 1.0)
        self.assertEqual(exact_match(42, "42"), 1.0)
        self.assertEqual(exact_match("", ""), 1.0)
        with self.assertRaises(AttributeError):  # as HUD's: expected must be a str without normalisation
            exact_match("42", 42, normalize_text=False)  # type: ignore[arg-type]

    def test_contains_family(self) -> None:
        self.assertEqual(contains("The capital of France is Paris", "paris"), 1.0)
        self.assertEqual(contains("Paris", "paris", case_sensitive=True), 0.0)
        self.assertEqual(contains(12345, "234"), 1.0)
        self.assertEqual(contains_any("red green", ["blue", "GREEN"]), 1.0)
        self.assertEqual(contains_any("anything", []), 0.0)
        self.assertEqual(contains_all("red green", ["RED", "green"]), 1.0)
        self.assertEqual(contains_all("red green", ["red", "blue"]), 0.0)
        self.assertEqual(contains_all("anything", []), 1.0)
        self.assertEqual(contains_all("Red", ["red"], case_sensitive=True), 0.0)

    def test_numbers(self) -> None:
        self.assertEqual(first_number("The answer is -3.5 or 4"), -3.5)
        self.assertEqual(first_number("١٢٣ apples"), 123.0)  # any Unicode decimal digits, as float() reads them
        self.assertEqual(first_number("7."), 7.0)
        self.assertIsNone(first_number("none here"))
        self.assertEqual(numeric_match("about 3.14159", 3.14, tolerance=0.01), 1.0)
        self.assertEqual(numeric_match("about 3.14159", 3.14), 0.0)
        self.assertEqual(numeric_match("x = 42", 42), 1.0)
        self.assertEqual(numeric_match("no number", 0), 0.0)

    def test_f1(self) -> None:
        self.assertAlmostEqual(f1_score("The capital is Paris, France", "Paris"), 0.4)
        self.assertEqual(f1_score("Paris", "Paris"), 1.0)
        self.assertEqual(f1_score("", "Paris"), 0.0)
        self.assertEqual(f1_score("a an the", "Paris"), 0.0)
        self.assertAlmostEqual(f1_score("cat cat dog", "cat dog dog"), 2 / 3)


class Combining(unittest.TestCase):
    def test_subscore_values_must_be_in_0_1(self) -> None:
        for bad in (1.5, -0.1, float("nan")):
            with self.assertRaisesRegex(ValueError, "between 0.0 and 1.0"):
                SubScore(name="x", value=bad)
        with self.assertRaisesRegex(TypeError, "must be a number"):
            SubScore(name="x", value="1")  # type: ignore[arg-type]
        s = SubScore(name="x", value=1, metadata={"k": 1})
        self.assertEqual((s.value, s.weight, s.info, s.metadata, s.score), (1.0, 1.0, {"k": 1}, {"k": 1}, 1.0))

    def test_combine_normalizes_positive_weights_and_keeps_penalties(self) -> None:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            r = resolve(
                combine(
                    SubScore(name="a", value=1.0, weight=3),
                    SubScore(name="b", value=0.5, weight=1),
                    SubScore(name="penalty", value=1.0, weight=-2),
                    SubScore(name="zero", value=1.0, weight=0),
                )
            )
        self.assertIsInstance(r, EvaluationResult)
        self.assertAlmostEqual(r.reward, 0.75 + 0.125 - 2)
        self.assertEqual([s.weight for s in r.subscores], [0.75, 0.25, -2, 0])
        self.assertTrue(any("weights sum to 4.0000, not 1.0" in str(w.message) for w in seen))

    def test_combine_awaits_graders_in_order_without_an_event_loop(self) -> None:
        async def part(name: str, value: float) -> SubScore:
            await asyncio.sleep(0)
            return SubScore(name=name, value=value, weight=0.5)

        coro = combine(part("x", 1.0), SubScore(name="y", value=0.0, weight=0.25), part("x", 0.5))
        # driven by hand, as the sandbox does: send(None) until it returns
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                while True:
                    self.assertIsNone(coro.send(None))
            except StopIteration as stop:
                r = stop.value
        self.assertEqual([s.name for s in r.subscores], ["x-1", "y", "x-2"])
        self.assertAlmostEqual(r.reward, (0.5 * 1.0 + 0.25 * 0.0 + 0.5 * 0.5) / 1.25)

    def test_combine_refusals(self) -> None:
        with self.assertRaisesRegex(ValueError, "must not be empty"):
            resolve(combine())
        with self.assertRaisesRegex(ValueError, "at least one positive weight"):
            resolve(combine(SubScore(name="p", value=1.0, weight=-1)))
        with self.assertRaisesRegex(TypeError, "Expected SubScore or Awaitable\\[SubScore\\], got list"):
            resolve(combine([SubScore(name="a", value=1.0)]))  # type: ignore[arg-type]

    def test_dedupe_names_as_hud_counts(self) -> None:
        self.assertEqual(dedupe_names(["same", "same"]), ["same-1", "same-2"])
        self.assertEqual(dedupe_names(["x-1", "x", "x"]), ["x-1", "x-2", "x-3"])
        self.assertEqual(dedupe_names(["a", "a-1", "a", "b"]), ["a-2", "a-1", "a-3", "b"])
        # HUD counts from 1 and skips taken names (TypeScript's dedupeNames counts on from the
        # highest suffix present: a-3, a-4 here)
        self.assertEqual(dedupe_names(["a", "a", "a-2"]), ["a-1", "a-3", "a-2"])
        self.assertEqual(dedupe_names(["a", "a", "a-5"]), ["a-1", "a-2", "a-5"])

    def test_combine_any_and_all_name_their_children(self) -> None:
        parts = [SubScore(name="x", value=0.2), SubScore(name="x", value=0.9), SubScore(name="y", value=0.5)]
        anyone = combine_any(0.5, parts)
        self.assertEqual((anyone.name, anyone.value, anyone.weight), ("any", 0.9, 0.5))
        self.assertEqual([c.name for c in anyone.children], ["x-1", "x-2", "y"])
        self.assertEqual([p.name for p in parts], ["x", "x", "y"])  # the inputs are not changed
        every = combine_all(1.0, parts, name="both")
        self.assertEqual((every.name, every.value), ("both", 0.2))
        with self.assertRaisesRegex(ValueError, "must not be empty"):
            combine_any(1.0, [])

    def test_a_custom_grader_as_hud_documents_it(self) -> None:
        class LengthGrader(Grader):
            name = "length"

            @classmethod
            async def compute_score(cls, answer: str = "", target: int = 100, **kwargs):
                return 1.0 if len(answer) >= target else 0.0

        class InfoGrader(Grader):
            name = "info"

            @classmethod
            async def compute_score(cls, **kwargs):
                return 0.5, {"why": "half"}

        s = resolve(LengthGrader.grade(weight=1.0, answer="x" * 200, target=200))
        self.assertEqual((s.name, s.value, s.weight), ("length", 1.0, 1.0))
        self.assertEqual(s.info, {"_parameters": {"answer": "x" * 200, "target": 200}})
        t = resolve(InfoGrader.grade(weight=0.3, name="renamed", blob={1, 2}))
        self.assertEqual((t.name, t.value, t.info["why"]), ("renamed", 0.5, "half"))
        self.assertEqual(t.info["_parameters"], {"blob": "<set: not serializable>"})
        with self.assertRaises(NotImplementedError):
            resolve(Grader.grade(weight=1.0))


class Rubric(unittest.TestCase):
    binary = [{"requirement": "correct", "weight": 10}, {"requirement": "cites sources", "weight": 5}, {"requirement": "rude", "weight": -5}]
    quality = {
        "name": "quality",
        "weight": 10,
        "requirement": "how good",
        "options": [{"label": "Poor", "value": 0.2}, {"label": "Good", "value": 0.8}, {"label": "Great", "value": 1}, {"label": "N/A", "value": 0, "na": True}],
    }

    def test_binary(self) -> None:
        self.assertAlmostEqual(score_rubric(self.binary, ["MET", "UNMET", "UNMET"]), 10 / 15)
        self.assertAlmostEqual(score_rubric(self.binary, ["MET", "MET", "MET"]), 10 / 15)
        self.assertEqual(score_rubric(self.binary, ["UNMET", "UNMET", "MET"]), 0.0)
        self.assertEqual(score_rubric(self.binary, ["MET", "MET", "MET"], normalize=False), 10.0)
        self.assertAlmostEqual(score_rubric([{"requirement": "a"}, {"requirement": "b", "weight": 30}], ["met ", " Unmet"]), 10 / 40)

    def test_cannot_assess_policies(self) -> None:
        v = ["MET", "CANNOT_ASSESS", "CANNOT_ASSESS"]
        self.assertAlmostEqual(score_rubric(self.binary, v), 1.0)
        self.assertAlmostEqual(score_rubric(self.binary, v, cannot_assess="zero"), 10 / 15)
        self.assertAlmostEqual(score_rubric(self.binary, v, cannot_assess="partial"), 12.5 / 15)
        self.assertAlmostEqual(score_rubric(self.binary, v, cannot_assess="partial", partial_credit=0.2), 11 / 15)
        self.assertAlmostEqual(score_rubric(self.binary, v, cannot_assess="fail"), 5 / 15)
        self.assertIsNone(score_rubric(self.binary, ["CANNOT_ASSESS"] * 3))
        self.assertIsNone(score_rubric([], []))

    def test_multi_choice(self) -> None:
        self.assertAlmostEqual(score_rubric([self.quality], ["good"]), 0.8)
        self.assertIsNone(score_rubric([self.quality], ["N/A"]))
        self.assertAlmostEqual(score_rubric([self.quality, {"requirement": "x"}], ["N/A", "MET"], cannot_assess="fail"), 12 / 20)
        with self.assertRaisesRegex(ValueError, "not one of its options"):
            score_rubric([self.quality], ["Excellent"])
        with self.assertRaisesRegex(ValueError, "3 criteria but 1 verdicts"):
            score_rubric(self.binary, ["MET"])
        with self.assertRaisesRegex(ValueError, "at least 2 non-NA"):
            score_rubric([{"requirement": "x", "options": [{"label": "only", "value": 1}]}], ["only"])


ALPHABET = ["a", "A", "the", "The", " ", "\t", "\n", "\x1c", "\x85", ".", ",", "!", "é", "É", "1", "2", "-", "_", "an", "ß", "İ", "١"]


def words(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))


class Invariants(unittest.TestCase):
    """Properties the helpers hold on 3,000 random strings made of the characters the rules
    treat specially (articles, Python-only whitespace, punctuation, case folds, Unicode digits)."""

    def test_random_inputs(self) -> None:
        rng = random.Random(24)
        for _ in range(3000):
            a, b = words(rng), words(rng)
            n = normalize(a)
            self.assertEqual(normalize(n), n, repr(a))
            self.assertEqual(n, n.strip())
            self.assertNotIn("  ", n)
            self.assertEqual(exact_match(a, a), 1.0)
            self.assertEqual(exact_match(a, b), 1.0 if normalize(a) == normalize(b) else 0.0)
            self.assertEqual(exact_match(a, b, normalize_text=False), 1.0 if a.strip().lower() == b.strip().lower() else 0.0)
            subs = [words(rng) for _ in range(rng.randint(0, 3))]
            self.assertEqual(contains_any(a, subs), max([contains(a, s) for s in subs], default=0.0))
            self.assertEqual(contains_all(a, subs), min([contains(a, s) for s in subs], default=1.0))
            f = f1_score(a, b)
            self.assertAlmostEqual(f, f1_score(b, a))
            self.assertTrue(0.0 <= f <= 1.0)
            if n:
                self.assertEqual(f1_score(a, a), 1.0)
            x = first_number(a)
            self.assertEqual(numeric_match(a, x if x is not None else 0.0), 1.0 if x is not None else 0.0)

    def test_random_combinations(self) -> None:
        rng = random.Random(25)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(500):
                parts = [
                    SubScore(name=rng.choice(["a", "b", "a-1", "a-2"]), value=rng.random(), weight=rng.choice([0.5, 1.0, 2.0, -1.0, 0.0]))
                    for _ in range(rng.randint(1, 6))
                ]
                names = dedupe_names([p.name for p in parts])
                self.assertEqual(len(set(names)), len(names))
                for p, name in zip(parts, names):
                    self.assertTrue(name == p.name or name.startswith(p.name + "-"))
                positive = sum(p.weight for p in parts if p.weight > 0)
                if positive <= 0:
                    continue
                r = graders.combine_subscores(parts)
                self.assertAlmostEqual(sum(s.weight for s in r.subscores if s.weight > 0), 1.0)
                self.assertAlmostEqual(r.reward, sum(p.value * (p.weight / positive if p.weight > 0 else p.weight) for p in parts))
                self.assertEqual(combine_any(1.0, parts).value, max(p.value for p in parts))
                self.assertEqual(combine_all(1.0, parts).value, min(p.value for p in parts))


if __name__ == "__main__":
    unittest.main()
