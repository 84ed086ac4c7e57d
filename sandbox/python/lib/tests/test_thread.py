"""StringThread: Adaptive's accessors and builders, and the two import paths."""

from __future__ import annotations

import unittest

import adaptive_harmony
import gradebox
from gradebox.thread import StringThread

TURNS = [("system", "be brief"), ("user", "What is 2+2?"), ("assistant", "4")]


class Reading(unittest.TestCase):
    def test_one_class_under_both_imports(self) -> None:
        self.assertIs(adaptive_harmony.StringThread, StringThread)
        self.assertIs(gradebox.StringThread, StringThread)

    def test_accessors(self) -> None:
        t = StringThread(TURNS, metadata={"expected": "4"})
        self.assertEqual(t.completion(), "4")
        self.assertEqual(t.last_content(), "4")
        self.assertEqual(t.get_turns(), TURNS)
        self.assertEqual(t.turns(), TURNS)
        self.assertEqual(t.messages(), TURNS[:2])
        self.assertEqual(t.metadata, {"expected": "4"})
        self.assertEqual(len(t), 3)
        self.assertIsInstance(t.get_turns()[0], tuple)

    def test_no_final_assistant_turn(self) -> None:
        t = StringThread([("user", "hi"), ("assistant", "hello"), ("user", "bye")])
        self.assertIsNone(t.completion())
        self.assertEqual(t.last_content(), "bye")
        self.assertEqual(t.messages(), t.get_turns())

    def test_empty_thread(self) -> None:
        t = StringThread([])
        self.assertIsNone(t.completion())
        self.assertIsNone(t.last_content())
        self.assertEqual((t.get_turns(), t.messages(), t.metadata), ([], [], {}))

    def test_turn_lists_are_copies(self) -> None:
        t = StringThread(TURNS)
        t.get_turns().append(("user", "x"))
        t.messages().clear()
        self.assertEqual(t.get_turns(), TURNS)

    def test_adopted_turns_read_the_same(self) -> None:
        t = StringThread._adopt([["user", "q"], ["assistant", "a"]], {"k": 1})
        self.assertEqual((t.completion(), t.get_turns(), t.messages()), ("a", [("user", "q"), ("assistant", "a")], [("user", "q")]))
        self.assertEqual(t, StringThread([("user", "q"), ("assistant", "a")], {"k": 1}))

    def test_keyword_construction_and_wire_turns(self) -> None:
        t = StringThread(turns=[{"role": "user", "content": "q"}, ["document", "d"]], metadata={"a": 1})
        self.assertEqual(t.get_turns(), [("user", "q"), ("document", "d")])
        self.assertEqual(t.to_dict(), {"turns": [{"role": "user", "content": "q"}, {"role": "document", "content": "d"}], "metadata": {"a": 1}})

    def test_any_role_string_is_kept_verbatim(self) -> None:
        t = StringThread([("developer", "be brief"), ("user", "q"), ("assistant", "a")])
        # never aliased: a developer turn is not a system turn, and messages() keeps it as it is
        self.assertEqual(t.messages(), [("developer", "be brief"), ("user", "q")])
        self.assertEqual(t.completion(), "a")
        self.assertEqual(StringThread([("ipython", "x")]).completion(), None)
        self.assertEqual(StringThread([("é" * 64, "x")]).get_turns()[0][0], "é" * 64)

    def test_bad_turns_are_refused(self) -> None:
        for role in ("", "a" * 65, "tab\there", "\U0001F600", 3, None):
            with self.assertRaisesRegex(ValueError, "turn 0 has role .*; a role is 1 to 64 characters"):
                StringThread([(role, "x")])
        with self.assertRaisesRegex(TypeError, "turn 1 content must be a str"):
            StringThread([("user", "x"), ("user", 3)])
        with self.assertRaisesRegex(TypeError, "turns must be a list"):
            StringThread("user: hi")
        with self.assertRaisesRegex(TypeError, "metadata must be a dict"):
            StringThread([], metadata=[1])


class Building(unittest.TestCase):
    def test_builders_return_new_threads(self) -> None:
        t0 = StringThread([])
        t1 = t0.system("You're name is Adaptive.")
        t2 = t1.user("Hello there!")
        t3 = t2.assistant("Hello, I'm Adaptive, and here to help you!")
        t4 = t3.tool('{"result": "success"}')
        self.assertEqual(len(t0), 0)
        self.assertEqual([r for r, _ in t4.get_turns()], ["system", "user", "assistant", "tool"])
        self.assertEqual(t3.completion(), "Hello, I'm Adaptive, and here to help you!")
        self.assertIsNone(t4.completion())
        self.assertEqual(t4.last_content(), '{"result": "success"}')

    def test_with_metadata_replaces_on_a_copy(self) -> None:
        t = StringThread(TURNS, {"a": 1})
        u = t.with_metadata({"b": 2})
        self.assertEqual((t.metadata, u.metadata), ({"a": 1}, {"b": 2}))
        self.assertEqual(u.get_turns(), TURNS)
        v = t.user("more")
        v.metadata["a"] = 9
        self.assertEqual(t.metadata, {"a": 1})

    def test_builders_refuse_non_strings(self) -> None:
        with self.assertRaisesRegex(TypeError, "StringThread.user: content must be a str"):
            StringThread([]).user(3)  # type: ignore[arg-type]

    def test_repr_and_equality(self) -> None:
        t = StringThread([("user", "q")], {"k": 1})
        self.assertEqual(repr(t), "StringThread([('user', 'q')], metadata={'k': 1})")
        self.assertNotEqual(t, t.with_metadata({}))
        with self.assertRaises(TypeError):
            hash(t)


if __name__ == "__main__":
    unittest.main()
