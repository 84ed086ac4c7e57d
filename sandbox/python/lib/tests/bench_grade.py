"""Microseconds per grade() call, natively: python3 -m tests.bench_grade (from sandbox/python/lib).

Each case is loaded once, then graded N times over the same thread, as the runtime calls it: the
turns and metadata as JSON strings in, a float or a JSON string out.
"""

from __future__ import annotations

import json
import sys
import time

from gradebox import _sandbox

CASES = {
    "exact_match (gradebox.graders)": """
from gradebox.graders import exact_match

async def grade(thread: StringThread) -> float:
    return exact_match(thread.completion() or "", thread.metadata.get("expected", ""))
""",
    "strip == (Adaptive's example)": """
from adaptive_harmony import StringThread

async def grade(thread: StringThread) -> float:
    completion = thread.completion() or ""
    expected = thread.metadata.get("expected", "")
    return 1.0 if completion.strip() == expected.strip() else 0.0
""",
    "dict result with a reason": """
async def grade(thread: StringThread) -> dict:
    ok = (thread.completion() or "").strip().lower() == thread.metadata.get("expected", "")
    return {"score": 1.0 if ok else 0.0, "reason": "matched" if ok else "differs"}
""",
    "raises (error path)": """
async def grade(thread: StringThread) -> float:
    return 1 / 0
""",
}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    turns = json.dumps([["system", "Answer in one word."], ["user", "What is the capital of France?"], ["assistant", " Paris "]])
    metadata = json.dumps({"expected": "paris"})
    print(f"Python {sys.version.split()[0]}, {n} calls each")
    for name, source in CASES.items():
        assert json.loads(_sandbox.check(source))["ok"]
        assert _sandbox.load(source) == ""
        grade = _sandbox.grade
        for _ in range(1000):
            grade(turns, metadata)
        t0 = time.perf_counter()
        for _ in range(n):
            grade(turns, metadata)
        us = (time.perf_counter() - t0) / n * 1e6
        print(f"  {name:34s} {us:6.2f} µs/call  -> {grade(turns, metadata)!r:.60}")


if __name__ == "__main__":
    main()
