# A stand-in for the in-sandbox library (sandbox/python/lib/, written separately): just enough
# of its API (check, load, grade) for the runtime's own tests. Replaced when the library lands.
import asyncio, inspect, json, math, sys, traceback

_grade = None

def _where(tb):
    line = None
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename == "grader.py":
            line = lineno
    return line

def check(source):
    try:
        compile(source, "grader.py", "exec")
    except SyntaxError as e:
        return json.dumps({"ok": False, "failure": {"check": "syntax", "message": str(e.msg), "line": e.lineno or 1, "column": e.offset or 1}})
    return json.dumps({"ok": True, "warnings": []})

def load(source):
    global _grade
    namespace = {"__name__": "grader"}
    try:
        exec(compile(source, "grader.py", "exec"), namespace)
    except BaseException as e:
        line = _where(e.__traceback__)
        return json.dumps({"message": f"{type(e).__name__}: {e}", **({"line": line} if line else {})})
    _grade = namespace.get("grade")
    if not callable(_grade):
        return json.dumps({"message": "grade is not defined"})
    return ""

class Thread:
    def __init__(self, turns, metadata):
        self.turns = [{"role": r, "content": c} for r, c in turns]
        self.metadata = metadata
    @property
    def completion(self):
        return self.turns[-1]["content"] if self.turns else ""

def grade(turns_json, metadata_json):
    try:
        value = _grade(Thread(json.loads(turns_json), json.loads(metadata_json)))
        if inspect.iscoroutine(value):
            try:
                value.send(None)
            except StopIteration as stop:
                value = stop.value
    except MemoryError:
        return json.dumps({"error": {"code": "GRADER_MEMORY_LIMIT", "message": "MemoryError"}})
    except BaseException as e:
        line = _where(e.__traceback__)
        return json.dumps({"error": {"code": "GRADER_ERROR", "message": f"{type(e).__name__}: {e}", **({"line": line} if line else {})}})
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, dict):
            return json.dumps(value)
        return json.dumps({"error": {"code": "INVALID_SCORE", "message": f"grade must return a number, got {type(value).__name__}"}})
    if not math.isfinite(value):
        return json.dumps({"error": {"code": "INVALID_SCORE", "message": "grade must return a finite number"}})
    return float(value)
