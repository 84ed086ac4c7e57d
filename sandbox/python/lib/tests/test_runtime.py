"""load() and grade(): the module body, the coroutine driver without an event loop, and errors
with the line and column of the innermost frame in the user's source."""

from __future__ import annotations

import json
import sys
import unittest

from gradebox import _sandbox
from tests.support import grade, load, run, src


def error(out) -> dict:
    assert isinstance(out, dict) and "error" in out, out
    return out["error"]


class Load(unittest.TestCase):
    def test_a_module_body_error_carries_its_position(self) -> None:
        failure = load("x = 'é'; y = 1 / 0\n\nasync def grade(thread):\n    return 1.0\n")
        self.assertEqual(failure, {"message": "ZeroDivisionError: division by zero", "line": 1, "column": 14})

    def test_an_error_in_a_helper_called_by_the_module_body(self) -> None:
        failure = load(src("""
            def helper():
                return {}["missing"]

            TABLE = helper()

            async def grade(thread):
                return 1.0
        """))
        self.assertEqual(failure, {"message": "KeyError: 'missing'", "line": 2, "column": 12})

    def test_grade_must_be_callable_after_the_module_ran(self) -> None:
        self.assertEqual(load("async def grade(t):\n    return 1.0\n\ngrade = 3\n"), {"message": "TypeError: grade is not callable after the module ran (it is an int)"})
        self.assertEqual(load("x = 1\n"), {"message": "TypeError: grade is not callable after the module ran (it is missing)"})

    def test_a_failed_load_leaves_no_grader(self) -> None:
        run("async def grade(t):\n    return 0.5\n")
        self.assertIsNotNone(load("raise RuntimeError('no')\n"))
        self.assertEqual(error(grade())["message"], "no grader is loaded (load(source) did not succeed)")

    def test_syntax_errors_when_load_is_called_without_check(self) -> None:
        self.assertEqual(load("async def grade(t):\n    return (\n"), {"message": "SyntaxError: '(' was never closed", "line": 2, "column": 12})
        self.assertEqual(load("x = 'éé'; return 1\n"), {"message": "SyntaxError: 'return' outside function", "line": 1, "column": 11})

    def test_each_load_gets_a_fresh_module(self) -> None:
        run("COUNT = [0]\nasync def grade(t):\n    COUNT[0] += 1\n    return float(COUNT[0])\n")
        self.assertEqual(grade(), 2.0)
        self.assertEqual(run("COUNT = [0]\nasync def grade(t):\n    COUNT[0] += 1\n    return float(COUNT[0])\n"), 1.0)

    def test_the_module_is_importable_by_name_for_dataclasses_and_typing(self) -> None:
        out = run(src("""
            from __future__ import annotations
            import dataclasses, typing

            @dataclasses.dataclass
            class Rule:
                word: str
                weight: float = 1.0

            async def grade(thread: StringThread) -> float:
                hints = typing.get_type_hints(grade)
                rule = Rule("4")
                return rule.weight if hints["return"] is float and rule.word == thread.completion() else 0.0
        """))
        self.assertEqual(out, 1.0)
        self.assertEqual(sys.modules["grader"].__file__, "grader.py")

    def test_load_does_not_catch_keyboard_interrupt(self) -> None:
        # the runtime may interrupt a grader past its time limit with KeyboardInterrupt
        with self.assertRaises(KeyboardInterrupt):
            _sandbox.load("raise KeyboardInterrupt\n")


class Driver(unittest.TestCase):
    def test_sleep_zero_and_nested_coroutines(self) -> None:
        out = run(src("""
            import asyncio
            from gradebox import gather

            async def part(x: float) -> float:
                for _ in range(3):
                    await asyncio.sleep(0)
                return x

            async def grade(thread: StringThread) -> float:
                values = await gather(part(0.25), part(0.5))
                return sum(values) + await part(0.25)
        """))
        self.assertEqual(out, 1.0)

    def test_a_timer_needs_an_event_loop(self) -> None:
        e = error(run("import asyncio\n\nasync def grade(t):\n    await asyncio.sleep(1)\n    return 1.0\n"))
        # the await expression (or, on some versions, the call inside it)
        self.assertEqual((e["code"], e["line"]), ("GRADER_ERROR", 4))
        self.assertIn(e["column"], (5, 11))
        self.assertTrue(e["message"].startswith("RuntimeError: no running event loop: graders run without an event loop"), e["message"])

    def test_awaiting_a_future_can_never_complete(self) -> None:
        e = error(run("import asyncio\n\nasync def grade(t):\n    await asyncio.Future()\n"))
        self.assertEqual(e["code"], "GRADER_ERROR")
        # a Future made without a loop: awaited (it can never complete) or, where asyncio
        # refuses to make one without a loop (after asyncio.run, on 3.14), refused at once
        self.assertRegex(e["message"], "^(grade awaited a Future that can never complete|RuntimeError: .*event loop.*): graders run without an event loop")

    def test_asyncio_gather_is_not_supported(self) -> None:
        out = run(src("""
            import asyncio, warnings
            warnings.simplefilter("ignore")

            async def one() -> float:
                return 1.0

            async def grade(thread):
                results = await asyncio.gather(one(), one())
                return results[0]
        """))
        e = error(out)
        self.assertEqual(e["code"], "GRADER_ERROR")
        self.assertIn("graders run without an event loop", e["message"])
        self.assertIn("gradebox.gather", e["message"])

    def test_a_generator_based_awaitable_yielding_a_value(self) -> None:
        e = error(run(src("""
            class Waits:
                def __await__(self):
                    yield "tick"

            async def grade(thread):
                await Waits()
                return 1.0
        """)))
        self.assertIn("grade awaited a str that can never complete", e["message"])

    def test_finally_blocks_run_when_a_pending_coroutine_is_abandoned(self) -> None:
        run(src("""
            import asyncio
            CLEANED = []

            async def grade(thread):
                try:
                    await asyncio.Future()
                finally:
                    CLEANED.append(True)
        """))
        self.assertEqual(sys.modules["grader"].CLEANED, [True])

    def test_a_sync_grade_swapped_in_at_runtime_still_grades(self) -> None:
        self.assertEqual(run("async def grade(t):\n    return 0.0\n\ngrade = lambda t: 0.5\n"), 0.5)


class Errors(unittest.TestCase):
    def test_exception_position_in_grade(self) -> None:
        e = error(run("async def grade(thread):\n    n = len(thread.metadata)\n    return 1 / n\n"))
        self.assertEqual(e, {"code": "GRADER_ERROR", "message": "ZeroDivisionError: division by zero", "line": 3, "column": 12})

    def test_innermost_user_frame_through_library_code(self) -> None:
        e = error(run(src("""
            import json

            def parse(text):
                return json.loads(text)

            async def grade(thread):
                return float(parse(thread.completion() + "{"))
        """)))
        self.assertEqual((e["line"], e["column"]), (4, 12))
        self.assertTrue(e["message"].startswith("JSONDecodeError: "), e["message"])

    def test_column_counts_characters(self) -> None:
        e = error(run("async def grade(thread):\n    s = 'ééé'; return {'a': 1}['é' + s]\n"))
        self.assertEqual((e["line"], e["column"]), (2, 23))
        self.assertEqual(e["message"], "KeyError: 'éééé'")

    def test_memory_error_is_the_memory_limit(self) -> None:
        e = error(run("async def grade(thread):\n    raise MemoryError()\n"))
        self.assertEqual((e["code"], e["message"], e["line"]), ("GRADER_MEMORY_LIMIT", "the grader ran out of memory (MemoryError)", 2))

    def test_recursion_error_is_a_grader_error(self) -> None:
        e = error(run("def f(n):\n    return f(n + 1)\n\nasync def grade(thread):\n    return f(0)\n"))
        self.assertEqual((e["code"], e["line"]), ("GRADER_ERROR", 2))
        self.assertTrue(e["message"].startswith("RecursionError: maximum recursion depth exceeded"), e["message"])

    def test_system_exit_and_bare_exceptions(self) -> None:
        self.assertEqual(error(run("import sys\nasync def grade(t):\n    sys.exit(2)\n"))["message"], "SystemExit: 2")
        self.assertEqual(error(run("async def grade(t):\n    raise ValueError\n"))["message"], "ValueError")

    def test_an_exception_whose_message_cannot_be_read(self) -> None:
        e = error(run("class Odd(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n\nasync def grade(t):\n    raise Odd()\n"))
        self.assertEqual((e["message"], e["line"]), ("Odd: (its message could not be read)", 6))

    def test_grade_does_not_catch_keyboard_interrupt(self) -> None:
        run("async def grade(t):\n    return 1.0\n")
        _sandbox.load("async def grade(t):\n    raise KeyboardInterrupt\n")
        with self.assertRaises(KeyboardInterrupt):
            _sandbox.grade("[]", "{}")

    def test_the_thread_is_built_from_the_runtime_json(self) -> None:
        source = "async def grade(thread):\n    return {'score': 1.0, 'metadata': {'turns': thread.get_turns(), 'meta': thread.metadata, 'last': thread.last_content()}}\n"
        out = run(source, [["system", "s"], ["user", "u"], ["assistant", "a"]], {"expected": "a", "n": [1, 2]})
        self.assertEqual(out["metadata"], {"turns": [["system", "s"], ["user", "u"], ["assistant", "a"]], "meta": {"expected": "a", "n": [1, 2]}, "last": "a"})
        self.assertEqual(json.loads(_sandbox.grade("[]", "{}"))["metadata"]["turns"], [])


class Slices(unittest.TestCase):
    """load_batch and grade_slice: a packed batch (sandbox/protocol/batch.ts) graded in one call."""

    SOURCE = "async def grade(thread):\n    c = thread.completion()\n    if c == 'boom':\n        raise ValueError(c)\n    return {'score': float(len(c)), 'metadata': {'turns': thread.get_turns(), 'meta': thread.metadata}}\n"
    # user "q", assistant "é!" | no turns, no metadata | user "ab", assistant "boom" | assistant "中文"
    HEAD = '[[2,1,1,2,2,0,2,1,2,2,4,1,2,2],[{"k":1},null,{},{"x":[1]}]]'
    TEXT = "qé!abboom中文"

    def slice(self, start: int, end: int, stop_after: int = 99, text: str = TEXT) -> list:
        run(self.SOURCE)
        wide = any(ord(ch) > 255 for ch in text)
        _sandbox.load_batch(self.HEAD, text.encode("utf-16-le" if wide else "latin-1"), wide)
        out: list = []

        def emit(value):
            out.append(value if isinstance(value, float) else json.loads(value))
            return len(out) < stop_after

        _sandbox.grade_slice(start, end, emit)
        return out

    def test_each_thread_gets_its_turns_and_metadata_and_one_error_costs_one_item(self) -> None:
        out = self.slice(0, 4)
        self.assertEqual(out[0], {"score": 2.0, "metadata": {"turns": [["user", "q"], ["assistant", "é!"]], "meta": {"k": 1}}})
        self.assertEqual(error(out[1])["message"], "TypeError: object of type 'NoneType' has no len()")
        self.assertEqual(error(out[2])["message"], "ValueError: boom")
        self.assertEqual(out[3], {"score": 2.0, "metadata": {"turns": [["assistant", "中文"]], "meta": {"x": [1]}}})

    def test_latin_1_text(self) -> None:
        head = '[[2,1,1,2,2],[null]]'
        run(self.SOURCE)
        _sandbox.load_batch(head, "qé!".encode("latin-1"), False)
        out: list = []
        _sandbox.grade_slice(0, 1, lambda v: out.append(json.loads(v)) or True)
        self.assertEqual(out[0]["metadata"]["turns"], [["user", "q"], ["assistant", "é!"]])

    def test_roles_outside_roles_come_from_the_heads_table(self) -> None:
        # developer "d", user "q", ipython "x" | developer "y", with and without groups (null)
        for groups in ("null", "[2]"):
            head = f'[[3,5,1,1,1,6,1,1,5,1],[null,null],{groups},["developer","ipython"]]'
            run(self.SOURCE.replace("float(len(c))", "1.0"))
            _sandbox.load_batch(head, b"dqxy", False)
            out: list = []
            _sandbox.grade_slice(0, 2, lambda v: out.append(json.loads(v)) or True)
            self.assertEqual(out[0]["metadata"]["turns"], [["developer", "d"], ["user", "q"], ["ipython", "x"]])
            self.assertEqual(out[1]["metadata"]["turns"], [["developer", "y"]])

    def test_a_slice_starts_where_asked_and_stops_when_emit_says_so(self) -> None:
        self.assertEqual([o["metadata"]["meta"] for o in self.slice(2, 4) if "metadata" in o], [{"x": [1]}])
        self.assertEqual(len(self.slice(0, 4, stop_after=2)), 2)
        self.assertEqual(len(self.slice(3, 99)), 1)


if __name__ == "__main__":
    unittest.main()
