"""Every Python grader on Adaptive's graders page (shared reference 004), run unchanged: checked,
loaded and graded as the runtime does it, on the contract's mock thread and on real samples."""

from __future__ import annotations

import unittest
from pathlib import Path

from tests.support import MOCK_TURNS, check, grade, load, run

EXAMPLES = Path(__file__).parent / "examples"


def example(name: str) -> str:
    return (EXAMPLES / f"{name}.py").read_text()


class AdaptiveExamples(unittest.TestCase):
    def test_exact_match_imports_string_thread_from_adaptive_harmony(self) -> None:
        source = example("adaptive_exact_match")
        self.assertEqual(check(source), {"ok": True, "warnings": []})
        self.assertEqual(run(source), 0.0)  # the mock's metadata is {}: expected ""
        self.assertEqual(grade(MOCK_TURNS, {"expected": " 4 "}), 1.0)
        self.assertEqual(grade([["user", "q"]], {"expected": ""}), 1.0)  # no completion: ""

    def test_reading_the_thread_runs_every_accessor(self) -> None:
        # the page's example ends in `...`: grade returns None, which abstains, after every
        # accessor ran without error; the checks warn that it never returns a value
        source = example("adaptive_reading")
        out = run(source)
        assert isinstance(out, dict)
        self.assertEqual(out, {"abstained": {"reason": "grade returned None"}})
        self.assertIn("grade has no `return <value>`", " ".join(check(source)["warnings"]))

    def test_regex_without_importing_string_thread(self) -> None:
        source = example("adaptive_regex")
        self.assertEqual(check(source), {"ok": True, "warnings": []})
        self.assertEqual(run(source), 1.0)  # pattern "" matches anything
        self.assertEqual(grade([["user", "q"], ["assistant", "order #123"]], {"pattern": r"#\d+"}), 1.0)
        self.assertEqual(grade([["user", "q"], ["assistant", "no order"]], {"pattern": r"#\d+"}), 0.0)

    def test_json_shape(self) -> None:
        source = example("adaptive_json_shape")
        self.assertEqual(run(source), 0.0)  # "4" parses to an int: no keys, caught
        good = '{"name": "Ada", "email": "ada@example.com", "age": 36}'
        self.assertEqual(grade([["user", "q"], ["assistant", good]]), 1.0)
        self.assertEqual(grade([["user", "q"], ["assistant", '{"name": "Ada"}']]), 0.0)
        self.assertEqual(grade([["user", "q"], ["assistant", "not json"]]), 0.0)

    def test_keywords_partial_credit(self) -> None:
        source = example("adaptive_keywords")
        self.assertEqual(run(source), 0.0)
        turns = [["user", "q"], ["assistant", "Paris is the CAPITAL of France"]]
        self.assertEqual(grade(turns, {"keywords": ["paris", "capital", "berlin", "europe"]}), 0.5)

    def test_a_sync_grade_is_refused_as_the_contract_says(self) -> None:
        source = example("adaptive_exact_match").replace("async def grade", "def grade")
        failure = check(source)["failure"]
        self.assertEqual((failure["check"], failure["line"], failure["column"]), ("structure", 3, 1))
        self.assertIn("must be async", failure["message"])

    def test_the_library_example(self) -> None:
        out = run(example("library"), [["user", "q"], ["assistant", "Paris, 42, please"]], {"expected": "paris 42 please", "number": 42})
        assert isinstance(out, dict), out
        self.assertAlmostEqual(out["score"], 1.0)
        self.assertEqual([s["name"] for s in out["subscores"]], ["exact", "number", "polite"])
        self.assertEqual(out["reason"], "expected 'paris 42 please'")
        self.assertIsNone(load(example("library")))


if __name__ == "__main__":
    unittest.main()
