"""A result's size as the client reads it (`result_bytes`): exactly the UTF-8 bytes of `text_view`, without joining
it, the structured content's duplicate counted once."""

import mcp.types as types
import pytest

from gateway.results import result_bytes, text_view

TEXT = types.TextContent
CASES = [
    types.CallToolResult(content=[]),
    types.CallToolResult(content=[TEXT(text="hi")]),
    types.CallToolResult(content=[TEXT(text="grüße ✓"), TEXT(text="\ud800 lone")]),
    types.CallToolResult(content=[TEXT(text="a"), types.ImageContent(data="AAAA", mime_type="image/png")]),
    types.CallToolResult(content=[TEXT(text='{"n":1}')], structured_content={"n": 1}),  # carried: counted once
    types.CallToolResult(content=[TEXT(text="n is one")], structured_content={"n": 1}),
    types.CallToolResult(content=[], structured_content={"ü": [1, 2]}),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_results_size_is_the_utf8_bytes_of_what_a_reader_pages_through(case: int) -> None:
    result = CASES[case]
    assert result_bytes(result) == len(text_view(result).encode("utf-8", "surrogatepass"))
