"""adaptive_harmony, as far as a function grader uses it: ``from adaptive_harmony import
StringThread`` (Adaptive's graders page imports nothing else from it)."""

from gradebox.thread import StringThread

__all__ = ["StringThread"]
