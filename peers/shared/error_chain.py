"""What an exception wraps, shared by the Python adapters: each adapter classifies a failed run
(`context_overflow`, `rate_limited`, …) by looking through the whole chain, because harnesses
wrap the provider's error in their own (and in exception groups, under asyncio's task groups)."""


def causes(exc):
    """The exception and everything it wraps (__cause__, __context__, exception groups),
    outermost first, each once."""
    seen, queue = set(), [exc]
    while queue:
        e = queue.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        queue += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
