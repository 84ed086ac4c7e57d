"""What grade() returns for each kind of result: the TypeScript prelude's rules in Python terms,
with no grader code run while reading a result."""

from __future__ import annotations

import json
import unittest
from decimal import Decimal
from fractions import Fraction
from typing import Any

from gradebox import _sandbox
from gradebox._result import MAX_MESSAGE, MAX_RESULT, convert
from gradebox.graders import EvaluationResult, SubScore


def invalid(value: Any) -> str:
    out = convert(value)
    assert isinstance(out, str), out
    error = json.loads(out)["error"]
    assert error["code"] == "INVALID_SCORE", error
    return error["message"]


def result(value: Any) -> dict:
    out = convert(value)
    assert isinstance(out, str), out
    parsed = json.loads(out)
    assert "error" not in parsed, parsed
    return parsed


class Tripwire:
    """Fails the test if any of its hooks runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("never constructed")


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("grader code ran while the result was read")


class Numbers(unittest.TestCase):
    def test_floats_and_ints_are_the_fast_path(self) -> None:
        self.assertEqual(convert(0.25), 0.25)
        out = convert(3)
        self.assertEqual((out, type(out)), (3.0, float))
        self.assertEqual(convert(-0.0), -0.0)

    def test_bool_is_not_a_score(self) -> None:
        self.assertIn("is a bool (True): booleans are not scores; return float(...)", invalid(True))
        self.assertIn("bool (False)", invalid({"score": False}))

    def test_nan_and_infinity_are_refused(self) -> None:
        self.assertIn("must be a finite number, got nan", invalid(float("nan")))
        self.assertIn("got inf", invalid(float("inf")))
        self.assertIn("got -inf", invalid({"score": float("-inf")}))
        self.assertIn("an int too large for a float", invalid(10**400))

    def test_subclasses_are_read_as_their_base_type_without_running_their_code(self) -> None:
        class Sneaky(float):
            __float__ = __repr__ = __str__ = __eq__ = __sub__ = __hash__ = _boom  # type: ignore[assignment]

        class SneakyInt(int):
            __index__ = __int__ = __float__ = __repr__ = _boom  # type: ignore[assignment]

        out = convert(Sneaky(0.5))
        self.assertEqual((out, type(out)), (0.5, float))
        self.assertEqual(convert(SneakyInt(2)), 2.0)
        self.assertEqual(result({"score": Sneaky(0.75)}), {"score": 0.75})
        self.assertIn("got nan", invalid(Sneaky("nan")))

    def test_objects_with_float_are_refused_with_a_hint(self) -> None:
        class HasFloat:
            def __float__(self) -> float:
                raise AssertionError("never called")

        for value in (Fraction(1, 2), Decimal("0.5"), HasFloat()):
            self.assertIn("convert it with float(...)", invalid(value))
        self.assertIn("got a str", invalid("1.0"))
        self.assertIn("got a list", invalid([1.0]))


class Structured(unittest.TestCase):
    def test_the_full_shape(self) -> None:
        out = convert({"score": 0.5, "reason": "half", "metadata": {"a": [1, 2.5, None, True, "x"], "b": {"c": {}}}, "subscores": [{"name": "p", "value": 1}]})
        self.assertEqual(
            out, '{"score":0.5,"reason":"half","metadata":{"a":[1,2.5,null,true,"x"],"b":{"c":{}}},"subscores":[{"name":"p","value":1}]}'
        )

    def test_reward_is_read_as_score_and_unknown_keys_dropped(self) -> None:
        self.assertEqual(result({"reward": 1, "done": True}), {"score": 1.0})
        self.assertEqual(result({"score": 0.2, "reward": 0.9}), {"score": 0.2})
        self.assertIn("has no score", invalid({"reason": "x"}))
        self.assertIn("got None", invalid({"score": None}))

    def test_none_means_absent(self) -> None:
        self.assertEqual(result({"score": 1.0, "reason": None, "metadata": None, "subscores": None}), {"score": 1.0})

    def test_field_types(self) -> None:
        self.assertIn("reason must be a str, got an int (3)", invalid({"score": 1.0, "reason": 3}))
        self.assertIn("metadata must be a dict, got a list", invalid({"score": 1.0, "metadata": [1]}))
        self.assertIn("subscores must be a list, got a dict", invalid({"score": 1.0, "subscores": {}}))

    def test_metadata_must_be_json(self) -> None:
        self.assertIn("metadata has a key that is an int (1); keys must be str", invalid({"score": 1.0, "metadata": {1: "x"}}))
        self.assertIn("metadata['x'] is nan: JSON has no NaN", invalid({"score": 1.0, "metadata": {"x": float("nan")}}))
        self.assertIn("metadata['x'][1] is a set", invalid({"score": 1.0, "metadata": {"x": [1, {2}]}}))
        self.assertIn("results may not use __proto__", invalid({"score": 1.0, "metadata": {"a": {"constructor": 1}}}))
        deep: Any = 1
        for _ in range(150):
            deep = [deep]
        self.assertIn("nested more than 100 levels", invalid({"score": 1.0, "metadata": {"d": deep}}))
        loop: dict = {}
        loop["self"] = loop
        self.assertIn("nested more than 100 levels", invalid({"score": 1.0, "metadata": loop}))

    def test_tuples_become_lists_and_str_subclasses_their_text(self) -> None:
        class Tag(str):
            __str__ = __repr__ = _boom  # type: ignore[assignment]

        self.assertEqual(result({"score": 1.0, "reason": Tag("why"), "metadata": {Tag("k"): (1, Tag("v"))}}), {"score": 1.0, "reason": "why", "metadata": {"k": [1, "v"]}})

    def test_dict_subclasses_are_read_through_dict_itself(self) -> None:
        class Sneaky(dict):
            get = items = keys = values = __getitem__ = __iter__ = __contains__ = _boom  # type: ignore[assignment]

        self.assertEqual(result(Sneaky(score=0.5, metadata=Sneaky(k=1))), {"score": 0.5, "metadata": {"k": 1}})

    def test_size_bound(self) -> None:
        self.assertIn(f"over {MAX_RESULT} characters", invalid({"score": 1.0, "reason": "x" * MAX_RESULT}))
        self.assertIn(f"over {MAX_RESULT} characters", invalid({"score": 1.0, "metadata": {"many": list(range(MAX_RESULT))}}))
        ok = result({"score": 1.0, "reason": "x" * (MAX_RESULT - 40)})
        self.assertEqual(len(ok["reason"]), MAX_RESULT - 40)
        # counted as JavaScript counts: an astral character is two UTF-16 units
        self.assertIn("characters of JSON", invalid({"score": 1.0, "reason": "😀" * (MAX_RESULT // 2)}))

    def test_lone_surrogates_travel_escaped(self) -> None:
        out = convert({"score": 1.0, "reason": "a\ud800b"})
        self.assertIsInstance(out, str)
        self.assertTrue(out.isascii())
        self.assertEqual(json.loads(out)["reason"], "a\ud800b")


class LibraryShapes(unittest.TestCase):
    def test_subscores_as_the_typescript_library_writes_them(self) -> None:
        node = SubScore(name="any", value=1.0, weight=0.5, children=[SubScore(name="t", value=1.0, info={"exit": 0})])
        self.assertEqual(
            result({"score": 1.0, "subscores": [node]})["subscores"],
            [{"name": "any", "value": 1.0, "weight": 0.5, "children": [{"name": "t", "value": 1.0, "weight": 1.0, "metadata": {"exit": 0}}]}],
        )

    def test_an_evaluation_result_is_a_result(self) -> None:
        r = EvaluationResult(reward=0.5, content="why", info={"k": 1}, subscores=[SubScore(name="a", value=0.5)])
        self.assertEqual(result(r), {"score": 0.5, "reason": "why", "metadata": {"k": 1}, "subscores": [{"name": "a", "value": 0.5, "weight": 1.0}]})
        self.assertEqual(result(EvaluationResult.from_float(1.0)), {"score": 1.0})
        failed = json.loads(convert(EvaluationResult(reward=0.0, isError=True, content="tool crashed")))["error"]
        self.assertEqual(failed, {"code": "GRADER_ERROR", "message": "grade returned an EvaluationResult with isError=True: tool crashed"})

    def test_a_bare_subscore_is_refused_with_a_hint(self) -> None:
        self.assertIn("return its .value", invalid(SubScore(name="a", value=1.0)))


class Messages(unittest.TestCase):
    def test_messages_are_bounded(self) -> None:
        _sandbox.load(f"async def grade(thread):\n    raise ValueError('{'x' * 5000}')\n")
        error = json.loads(_sandbox.grade("[]", "{}"))["error"]
        self.assertEqual(len(error["message"]), MAX_MESSAGE + 1)
        self.assertTrue(error["message"].startswith("ValueError: xxx"))
        self.assertTrue(error["message"].endswith("…"))


if __name__ == "__main__":
    unittest.main()
