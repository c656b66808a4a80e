"""UTF-8 sizes and cuts of Python strings without encoding them whole (results can be 100 MB)."""

_SLICE = 1024 * 1024


def utf8_len(text: str) -> int:
    """Bytes of `text` in UTF-8 (lone surrogates counted as 3, as surrogatepass writes them)."""
    if text.isascii():  # O(1): CPython keeps the flag
        return len(text)
    return sum(len(text[i : i + _SLICE].encode("utf-8", "surrogatepass")) for i in range(0, len(text), _SLICE))


def cut(text: str, size: int, *, from_end: bool = False) -> str:
    """At most `size` UTF-8 bytes of `text` from its start (or end), whole characters only."""
    if size <= 0:
        return ""
    # `size` characters hold at least `size` bytes, so a big string is never encoded just to keep a bit of it.
    part = text[-size:] if from_end else text[:size]
    data = part.encode("utf-8", "surrogatepass")
    data = data[-size:] if from_end else data[:size]
    return data.decode("utf-8", "ignore")  # drops only the partial character at the cut (and lone surrogates)


def utf8_slices(text: str) -> list[bytes]:
    """`text` encoded in 1 MiB pieces, for writing it out without a second whole copy."""
    return [text[i : i + _SLICE].encode("utf-8", "surrogatepass") for i in range(0, len(text), _SLICE)]
