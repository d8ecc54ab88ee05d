"""Recording the calls of a library function in a test (the call still runs)."""


def recorded(monkeypatch, owner, name: str, pick) -> list:
    """Replace ``owner.name`` for the test with a wrapper that appends
    ``pick(*args, **kwargs)`` of each call to the list returned, then calls the
    original."""
    seen: list = []
    real = getattr(owner, name)

    def wrapper(*args, **kwargs):
        seen.append(pick(*args, **kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return seen
