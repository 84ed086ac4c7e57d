# The function-grader contract's first example, unchanged: Python graders run in the same
# isolates as TypeScript ones (docs/python-graders.md).
from adaptive_harmony import StringThread

async def grade(thread: StringThread) -> float:
    completion = thread.completion() or ""
    expected = thread.metadata.get("expected", "")
    return 1.0 if completion.strip() == expected.strip() else 0.0
