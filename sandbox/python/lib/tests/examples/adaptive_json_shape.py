# Strict JSON shape
import json

async def grade(thread: StringThread) -> float:
    completion = thread.completion() or ""
    try:
        parsed = json.loads(completion)
        return 1.0 if {"name", "email", "age"}.issubset(parsed.keys()) else 0.0
    except Exception:
        return 0.0
