"""Abstentions and group graders in the library: None and Abstain abstain, grade_group is
checked, loaded and run, and the group rewards of gradebox.graders compute what they document."""

from __future__ import annotations

import json
import unittest

from gradebox import Abstain as TopLevelAbstain
from gradebox import _sandbox
from gradebox.graders import Abstain, group_summary, majority_agreement, rank_in_group, relative_length
from tests.support import MOCK_TURNS, check, load, run, src


def group(source: str, n: int = 3) -> object:
    """check, load, then grade_group over n threads whose completions are "0", "1", ..."""
    checked = check(source)
    assert checked["ok"], checked
    assert load(source) is None
    turns = [[["user", "q"], ["assistant", str(i)]] for i in range(n)]
    return json.loads(_sandbox.grade_group(json.dumps(turns), json.dumps([{"i": i} for i in range(n)])))


class Abstaining(unittest.TestCase):
    def test_none_abstains(self) -> None:
        out = run(src("async def grade(thread):\n    return None\n"))
        self.assertEqual(out, {"abstained": {"reason": "grade returned None"}})

    def test_abstain_abstains_with_its_reason_from_either_import(self) -> None:
        self.assertIs(TopLevelAbstain, Abstain)
        out = run(src('from gradebox import Abstain\nasync def grade(thread):\n    raise Abstain("no reference answer")\n'))
        self.assertEqual(out, {"abstained": {"reason": "no reference answer"}})
        out = run(src("from gradebox.graders import Abstain\nasync def grade(thread):\n    raise Abstain()\n"))
        self.assertEqual(out, {"abstained": {"reason": "the grader abstained"}})

    def test_a_huge_or_hostile_reason_is_bounded_or_replaced(self) -> None:
        out = run(src('from gradebox import Abstain\nasync def grade(thread):\n    raise Abstain("x" * 10**6)\n'))
        assert isinstance(out, dict)
        self.assertEqual(len(out["abstained"]["reason"]), 2001)
        hostile = src(
            """
            from gradebox import Abstain
            class Odd(Abstain):
                @property
                def reason(self):
                    raise RuntimeError("no")
                @reason.setter
                def reason(self, value):
                    pass
            async def grade(thread):
                raise Odd()
            """
        )
        self.assertEqual(run(hostile), {"abstained": {"reason": "the grader abstained"}})

    def test_a_grade_without_any_return_value_is_warned_about(self) -> None:
        warnings = check(src("async def grade(thread) -> float:\n    thread.completion()\n"))["warnings"]
        self.assertTrue(any("grade has no `return <value>`" in w for w in warnings), warnings)
        # a return inside a nested function is not grade's
        nested = src("async def grade(thread) -> float:\n    def f():\n        return 1.0\n    f()\n")
        self.assertTrue(any("no `return <value>`" in w for w in check(nested)["warnings"]))
        self.assertEqual(check(src("async def grade(thread: StringThread) -> float | None:\n    return None if thread.metadata else 1.0\n"))["warnings"], [])


class GroupGraders(unittest.TestCase):
    def test_group_only_and_both_pass_the_checks_and_report_their_shape(self) -> None:
        only = src("async def grade_group(threads):\n    return [1.0 for _ in threads]\n")
        self.assertEqual(check(only), {"ok": True, "warnings": []})
        self.assertIsNone(load(only))
        self.assertEqual(_sandbox.shape(), "group")
        both = src("async def grade(thread):\n    return 1.0\nasync def grade_group(threads):\n    return [1.0 for _ in threads]\n")
        self.assertIsNone(load(both))
        self.assertEqual(_sandbox.shape(), "both")
        self.assertIsNone(load(src("async def grade(thread):\n    return 1.0\n")))
        self.assertEqual(_sandbox.shape(), "thread")

    def test_group_checks_refuse_what_they_should(self) -> None:
        sync = check(src("def grade_group(threads):\n    return []\n"))
        self.assertEqual(sync["failure"]["check"], "structure")
        self.assertIn("grade_group must be async", sync["failure"]["message"])
        two = check(src("async def grade_group(a, b):\n    return []\n"))
        self.assertEqual(two["failure"]["check"], "signature")
        self.assertIn("grade_group must take exactly one parameter", two["failure"]["message"])
        neither = check(src("async def helper(t):\n    return 1.0\nasync def other(t):\n    return 1.0\n"))
        self.assertIn("grade_group(threads)", neither["failure"]["message"])

    def test_results_per_thread_each_as_grade_returns_them(self) -> None:
        out = group(
            src(
                """
                from gradebox import Abstain
                async def grade_group(threads):
                    return [1, {"score": 0.5, "reason": "half"}, None, Abstain("skip"), float("nan")][: len(threads)]
                """
            ),
            5,
        )
        assert isinstance(out, list)
        self.assertEqual(out[0], 1.0)
        self.assertEqual(out[1], {"score": 0.5, "reason": "half"})
        self.assertEqual(out[2], {"abstained": {"reason": "grade_group returned None for this thread"}})
        self.assertEqual(out[3], {"abstained": {"reason": "skip"}})
        self.assertEqual(out[4]["error"]["code"], "INVALID_SCORE")

    def test_the_group_arrives_whole_in_order_with_metadata(self) -> None:
        out = group(src("async def grade_group(threads):\n    return [float(t.completion()) * 10 + t.metadata['i'] for t in threads]\n"), 4)
        self.assertEqual(out, [0.0, 11.0, 22.0, 33.0])

    def test_wrong_length_not_a_list_raise_and_abstain_cover_the_whole_group(self) -> None:
        short = group(src("async def grade_group(threads):\n    return [1.0]\n"))
        self.assertEqual(short["error"]["code"], "INVALID_SCORE")
        self.assertIn("returned 1 results for a group of 3 threads", short["error"]["message"])
        self.assertIn("must return a list of 3", group(src("async def grade_group(threads):\n    return 1.0\n"))["error"]["message"])
        raised = group(src("async def grade_group(threads):\n    raise ValueError('bad')\n"))
        self.assertEqual(raised["error"]["code"], "GRADER_ERROR")
        self.assertEqual(raised["error"]["line"], 2)
        abstained = group(src("from gradebox import Abstain\nasync def grade_group(threads):\n    raise Abstain('later')\n"))
        self.assertEqual(abstained, {"abstained": {"reason": "later"}})


class GroupRewards(unittest.TestCase):
    def test_rank_in_group(self) -> None:
        self.assertEqual(rank_in_group([0.2, 0.9, 0.2, 0.5]), [1 / 6, 1.0, 1 / 6, 2 / 3])
        self.assertEqual(rank_in_group([3.0]), [0.5])
        self.assertEqual(rank_in_group([1.0, None, 3.0]), [0.0, None, 1.0])
        self.assertEqual(rank_in_group([2.0, 2.0, 2.0]), [0.5, 0.5, 0.5])
        self.assertEqual(rank_in_group([]), [])
        with self.assertRaises(ValueError):
            rank_in_group([float("nan")])

    def test_majority_agreement(self) -> None:
        self.assertEqual(majority_agreement(["4", "four", "4", "5"]), [1.0, 0.0, 1.0, 0.0])
        self.assertEqual(majority_agreement(["The 4.", "4", None]), [1.0, 1.0, 0.0])
        self.assertEqual(majority_agreement(["a", "b", "a", "b"]), [0.0] * 4)  # a tie: no majority
        self.assertEqual(majority_agreement(["A", "a"], normalize_text=False), [0.0, 0.0])

    def test_relative_length(self) -> None:
        self.assertEqual(relative_length(["ab", "abcd", "abcdef"]), [1.0, 1.0, 0.5])
        self.assertEqual(relative_length(["", ""]), [1.0, 1.0])
        self.assertEqual(relative_length(["a b", "a b c d e f g"], unit="words"), [1.0, 0.0 + max(0.0, 2 - 7 / 4.5)])

    def test_group_summary(self) -> None:
        self.assertEqual(group_summary([0.0, 1.0, None, 0.5]), {"k": 3, "best": 1.0, "mean": 0.5})
        s = group_summary([0.0, 1.0, 0.0], threshold=1.0, answers=["5", "4", "5"])
        self.assertEqual(s, {"k": 3, "best": 1.0, "mean": 1 / 3, "pass_at_k": 1.0, "majority_at_k": 0.0})
        s = group_summary([1.0, 0.0, 1.0], threshold=0.5, answers=["4", "5", "4"])
        self.assertEqual(s["majority_at_k"], 1.0)
        # the batch summary's rule: a tie goes to the answer seen first, and an abstention does not vote
        self.assertEqual(group_summary([1.0, 0.0], threshold=0.5, answers=["4", "5"])["majority_at_k"], 1.0)
        self.assertEqual(group_summary([0.0, 1.0], threshold=0.5, answers=["5", "4"])["majority_at_k"], 0.0)
        self.assertEqual(group_summary([None, None, 1.0], threshold=0.5, answers=["5", "5", "4"])["majority_at_k"], 1.0)
        self.assertEqual(group_summary([None], threshold=0.5), {"k": 0, "best": None, "mean": None, "pass_at_k": 0.0})


if __name__ == "__main__":
    unittest.main()
