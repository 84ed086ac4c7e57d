"""Checks 1-3 (syntax, structure, signature) and the import rules: each failure with its check
name, message and 1-based position in the user's source (columns in characters)."""

from __future__ import annotations

import unittest

from tests.support import check, src

GOOD = src(
    """
    from adaptive_harmony import StringThread

    async def grade(thread: StringThread) -> float:
        return 1.0
    """
)


def failure(source: str) -> dict:
    out = check(source)
    assert out["ok"] is False, out
    return out["failure"]


class Syntax(unittest.TestCase):
    def test_a_good_source_passes_without_warnings(self) -> None:
        self.assertEqual(check(GOOD), {"ok": True, "warnings": []})

    def test_parser_error_with_position(self) -> None:
        f = failure(src("async def grade(thread):\n    return (1 +\n"))
        self.assertEqual(f["check"], "syntax")
        self.assertEqual(f["line"], 2)
        self.assertIsInstance(f["column"], int)

    def test_column_counts_characters_not_bytes(self) -> None:
        f = failure('x = "éé" +\n')
        self.assertEqual((f["line"], f["column"]), (1, 11))

    def test_compiler_errors_count_characters_too(self) -> None:
        # symbol-table errors come from the compiler, which counts UTF-8 bytes
        f = failure('x = "éé" ; return 3\n')
        self.assertEqual((f["check"], f["message"], f["line"], f["column"]), ("syntax", "'return' outside function", 1, 12))

    def test_await_outside_a_function(self) -> None:
        f = failure("import asyncio\nawait asyncio.sleep(0)\n")
        self.assertEqual((f["check"], f["line"], f["column"]), ("syntax", 2, 1))
        self.assertIn("'await' outside", f["message"])

    def test_indentation_error_is_named(self) -> None:
        f = failure("async def grade(t):\nreturn 1\n")
        self.assertEqual((f["check"], f["line"]), ("syntax", 2))
        self.assertTrue(f["message"].startswith("IndentationError: "), f["message"])

    def test_nul_character(self) -> None:
        f = failure("x = 1\ny = 2\0\n")
        self.assertEqual((f["check"], f["line"], f["column"]), ("syntax", 2, 6))

    def test_nesting_past_the_compiler_is_a_syntax_failure(self) -> None:
        f = failure("x = " + "-" * 200_000 + "1\n")
        # the interpreter runs out of stack (our message) or its parser gives up (its own words)
        self.assertEqual(f["check"], "syntax")
        self.assertTrue(f["message"])

    def test_compile_warnings_become_warnings(self) -> None:
        out = check(src('async def grade(thread: StringThread) -> float:\n    return 1.0 if "\\d" else 0.0\n'))
        self.assertTrue(out["ok"])
        self.assertEqual(len(out["warnings"]), 1)
        self.assertRegex(out["warnings"][0], r"^line 2: invalid escape sequence")


class Structure(unittest.TestCase):
    def test_no_grade(self) -> None:
        f = failure("async def score(thread):\n    return 1.0\n")
        self.assertEqual(f["check"], "structure")
        self.assertIn("found score: name the entry point grade", f["message"])
        self.assertNotIn("line", f)

    def test_sync_grade_is_refused(self) -> None:
        f = failure("x = 1\n\ndef grade(thread):\n    return 1.0\n")
        self.assertEqual((f["check"], f["line"], f["column"]), ("structure", 3, 1))
        self.assertIn("sync graders are rejected", f["message"])

    def test_nested_grade(self) -> None:
        f = failure("def outer():\n    async def grade(thread):\n        return 1.0\n")
        self.assertEqual((f["check"], f["line"], f["column"]), ("structure", 2, 5))
        self.assertIn("inside another statement", f["message"])

    def test_grade_inside_a_block(self) -> None:
        f = failure("if True:\n    async def grade(thread):\n        return 1.0\n")
        self.assertEqual((f["check"], f["line"]), ("structure", 2))

    def test_grade_defined_twice(self) -> None:
        f = failure("async def grade(t):\n    return 1.0\n\nasync def grade(t):\n    return 0.0\n")
        self.assertEqual((f["check"], f["line"]), ("structure", 4))
        self.assertIn("2 times", f["message"])

    def test_grade_bound_to_something_else(self) -> None:
        f = failure("grade = lambda thread: 1.0\n")
        self.assertEqual((f["check"], f["line"], f["column"]), ("structure", 1, 1))
        self.assertIn("must be an async function", f["message"])

    def test_helpers_and_decorators_beside_grade_are_fine(self) -> None:
        out = check(
            src(
                """
                import functools

                def helper(x: str) -> str:
                    return x.strip()

                @functools.lru_cache
                def cached(x: int) -> int:
                    return x

                async def grade(thread: StringThread) -> float:
                    return float(cached(1))
                """
            )
        )
        self.assertEqual(out, {"ok": True, "warnings": []})


class Signature(unittest.TestCase):
    def sig(self, params: str) -> dict:
        return failure(f"x = 'é'\nasync def grade({params}):\n    return 1.0\n")

    def test_no_parameter(self) -> None:
        f = self.sig("")
        self.assertEqual((f["check"], f["line"], f["column"]), ("signature", 2, 1))
        self.assertIn("exactly one parameter (the thread); it takes 0 parameters", f["message"])

    def test_two_parameters(self) -> None:
        self.assertIn("it takes 2 parameters", self.sig("thread, extra=1")["message"])

    def test_star_args(self) -> None:
        self.assertIn("it takes *args", self.sig("*args")["message"])
        self.assertIn("it takes *rest", self.sig("thread, *rest")["message"])

    def test_star_star_kwargs(self) -> None:
        self.assertIn("it takes **kw", self.sig("thread, **kw")["message"])

    def test_required_keyword_only(self) -> None:
        self.assertIn("required keyword-only parameter mode", self.sig("thread, *, mode")["message"])

    def test_optional_keyword_only_and_positional_only_pass(self) -> None:
        self.assertTrue(check("async def grade(thread: StringThread, /, *, mode: str = 'x') -> float:\n    return 1.0\n")["ok"])

    def test_annotation_warnings(self) -> None:
        out = check("async def grade(thread: dict) -> str:\n    return 1.0\n")
        self.assertEqual(
            out,
            {
                "ok": True,
                "warnings": ["the parameter of grade is annotated dict, not StringThread", "the return type of grade is str, not float"],
            },
        )

    def test_missing_annotations_warn(self) -> None:
        out = check("async def grade(thread):\n    return 1.0\n")
        self.assertEqual(
            out["warnings"],
            [
                "the parameter of grade is not annotated; annotate it as StringThread",
                "the return type of grade is not annotated; annotate it as float",
            ],
        )

    def test_accepted_annotations(self) -> None:
        for param, returns in [
            ("StringThread", "float"),
            ('"StringThread"', "'float'"),
            ("adaptive_harmony.StringThread", "int"),
            ("gradebox.StringThread", "float | dict"),
            ("StringThread", "Union[float, GradeScore]"),
            ("StringThread", "dict[str, Any]"),
            ("StringThread", "EvaluationResult"),
        ]:
            out = check(f"async def grade(thread: {param}) -> {returns}:\n    return 1.0\n")
            self.assertEqual(out, {"ok": True, "warnings": []}, (param, returns))


class Imports(unittest.TestCase):
    def refused(self, line: str) -> dict:
        f = failure(f"x = 'é'\n{line}\n\nasync def grade(thread):\n    return 1.0\n")
        self.assertEqual((f["check"], f["line"]), ("structure", 2))
        return f

    def test_network_processes_threads_and_ctypes_are_refused(self) -> None:
        for line, why in [
            ("import socket", "network"),
            ("import subprocess", "processes"),
            ("from multiprocessing import Pool", "processes"),
            ("import threading", "threads"),
            ("from concurrent.futures import ThreadPoolExecutor", "threads"),
            ("import urllib.request", "network"),
            ("from http.client import HTTPConnection", "network"),
            ("import ctypes", "native code"),
            ("import importlib", "dynamically"),
            ("import tkinter", "not part of the sandbox"),
        ]:
            f = self.refused(line)
            self.assertIn(why, f["message"], line)
            self.assertIn("Graders can use the Python standard library", f["message"])

    def test_outside_the_standard_library(self) -> None:
        f = self.refused("import requests")
        self.assertIn("not in the standard library (use an endpoint grader", f["message"])
        local = self.refused("from helpers import words")["message"]
        self.assertIn('import of "helpers" is not allowed: it is not in the standard library', local)
        self.assertIn("a Python grader is one file: put the code it uses into the grader", local)
        self.assertNotIn("one file", f["message"])  # a known package keeps its own hint

    def test_imports_inside_functions_are_checked_too(self) -> None:
        f = failure("async def grade(thread):\n    x = 'é'; import socket\n    return 1.0\n")
        self.assertEqual((f["check"], f["line"], f["column"]), ("structure", 2, 14))

    def test_relative_and_private_and_dynamic(self) -> None:
        self.assertIn("relative imports", self.refused("from . import x")["message"])
        self.assertIn("private module", self.refused("import _socket")["message"])
        self.assertIn("gradebox, gradebox.graders and adaptive_harmony", self.refused("import gradebox._sandbox")["message"])
        self.assertIn("__import__() is not allowed", self.refused("os = __import__('os')")["message"])

    def test_names_gradebox_does_not_provide(self) -> None:
        f = self.refused("from adaptive_harmony import TextFragment")
        self.assertIn('"adaptive_harmony" has no "TextFragment": it provides StringThread', f["message"])
        self.assertIn('"gradebox.graders" has no "BashGrader"', self.refused("from gradebox.graders import BashGrader")["message"])

    def test_the_standard_library_and_gradebox_are_allowed(self) -> None:
        source = src(
            """
            from __future__ import annotations
            import re, json, math, string, statistics, asyncio, collections, datetime, difflib, unicodedata, os.path
            import urllib.parse
            import gradebox
            import gradebox.graders as g
            from gradebox import StringThread, graders, gather
            from gradebox.graders import exact_match, combine, SubScore
            from adaptive_harmony import StringThread

            async def grade(thread: StringThread) -> float:
                return 1.0
            """
        )
        self.assertEqual(check(source), {"ok": True, "warnings": []})


if __name__ == "__main__":
    unittest.main()
