# Multi-keyword scoring with partial credit
async def grade(thread: StringThread) -> float:
    completion = (thread.completion() or "").lower()
    keywords = thread.metadata.get("keywords", [])
    if not keywords:
        return 0.0
    hits = sum(1 for k in keywords if k.lower() in completion)
    return hits / len(keywords)
