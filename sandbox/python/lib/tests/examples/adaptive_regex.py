# Regex match
import re

async def grade(thread: StringThread) -> float:
    completion = thread.completion() or ""
    pattern = thread.metadata.get("pattern", "")
    return 1.0 if re.search(pattern, completion) else 0.0
