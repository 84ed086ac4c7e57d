async def grade(thread: StringThread) -> float:
    completion = thread.completion()    # last assistant turn, or None
    turns = thread.get_turns()           # list of (role, content) tuples
    history = thread.messages()          # all turns except final assistant
    metadata = thread.metadata           # dataset row metadata dict
    ...
