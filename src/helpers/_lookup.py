"""Forgiving name lookup shared by the GPU and model catalogs."""

import difflib
import re


def normalize(name: str) -> str:
    """Lower-case ``name`` and drop everything but letters and digits ("A100 80GB" -> "a10080gb")."""
    if not isinstance(name, str):
        raise ValueError(f"name must be a string, got {name!r}")
    return re.sub(r"[^a-z0-9]", "", name.lower())


def resolve(name: object, index: dict[str, str], what: str) -> str:
    """Map ``name`` to a canonical key of ``index`` (normalized alias -> canonical name).

    Raises a ValueError that lists the closest known names when nothing matches.
    """
    if not isinstance(name, str):
        raise ValueError(f"{what} name must be a string, got {name!r}")
    key = normalize(name)
    for prefix in ("nvidia", "amd", "geforce"):
        if key not in index and key.startswith(prefix):
            key = key[len(prefix):]
    if key in index:
        return index[key]
    close = difflib.get_close_matches(key, index, n=8, cutoff=0.4)
    suggestions = list(dict.fromkeys(index[k] for k in close))[:4]
    hint = f"closest known: {', '.join(suggestions)}" if suggestions else "see catalog() for the list"
    raise ValueError(f"unknown {what} {name!r}; {hint}")
