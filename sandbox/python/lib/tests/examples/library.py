from gradebox import StringThread
from gradebox.graders import SubScore, combine, contains, exact_match, numeric_match


async def grade(thread: StringThread) -> dict:
    answer = thread.completion() or ""
    expected = thread.metadata.get("expected", "")
    result = await combine(
        SubScore(name="exact", value=exact_match(answer, expected), weight=0.6),
        SubScore(name="number", value=numeric_match(answer, float(thread.metadata.get("number", 0))), weight=0.3),
        SubScore(name="polite", value=contains(answer, "please"), weight=0.1),
    )
    return {"score": result.reward, "reason": f"expected {expected!r}", "subscores": result.subscores}
