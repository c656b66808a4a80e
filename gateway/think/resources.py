"""Think's MCP resources for progressive disclosure: workflow://list, workflow://metadata/{name}, /schema/{name}."""

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import mcp.types as types
from mcp import MCPError

from gateway.think.errors import ThinkError
from gateway.think.library import Library
from gateway.think.listing import input_schema, list_workflows, metadata

LIST = types.Resource(
    uri="workflow://list",
    name="workflows",
    mime_type="application/json",
    description="Compact list of the workflows (like think.workflows.list); ?tags=a,b (all must match), "
    "&filter=text, &mode=compact|standard|detailed.",
)
TEMPLATES = [
    types.ResourceTemplate(
        uri_template="workflow://metadata/{name}", name="workflow-metadata", mime_type="application/json"
    ),
    types.ResourceTemplate(
        uri_template="workflow://schema/{name}", name="workflow-input-schema", mime_type="application/schema+json"
    ),
]


def _list_query(query: str) -> dict[str, Any]:
    """`workflow://list?tags=a,b&tags=c&filter=x&mode=standard` as list_workflows' arguments (tags match all).

    Raises:
        MCPError: INVALID_PARAMS naming an unknown key, or a key given twice that takes one value.
    """
    fields = parse_qs(query, keep_blank_values=True)
    unknown = sorted(set(fields) - {"tags", "filter", "mode"})
    if unknown:
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"Unknown query {unknown} in workflow://list; use tags=a,b (all must match), filter=, mode=.",
        )
    for key in ("filter", "mode"):
        if len(fields.get(key, [])) > 1:
            raise MCPError(code=types.INVALID_PARAMS, message=f"workflow://list takes one {key}, got {fields[key]}.")
    tags = [tag for value in fields.get("tags", []) for tag in value.split(",") if tag.strip()]
    return {"tags": tags or None, "filter": fields.get("filter", [None])[0], "mode": fields.get("mode", [None])[0]}


def handlers(library: Library) -> dict[str, Any]:
    """`Server` keyword arguments serving the resources from `library`."""

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[LIST])

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        parts = urlsplit(params.uri)
        try:
            if parts.netloc == "list":
                workflows, broken = library.loaded()
                body: dict[str, Any] = list_workflows(workflows, **_list_query(parts.query), invalid_files=broken)
            elif parts.netloc in ("metadata", "schema"):
                workflow = library.get(parts.path.strip("/"))
                body = metadata(workflow) if parts.netloc == "metadata" else input_schema(workflow)
            else:
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource {params.uri!r}.")
        except ThinkError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        text = json.dumps(body, ensure_ascii=False)
        contents = [types.TextResourceContents(uri=params.uri, text=text, mime_type="application/json")]
        return types.ReadResourceResult(contents=contents)

    return {
        "on_list_resources": list_resources,
        "on_list_resource_templates": list_templates,
        "on_read_resource": read_resource,
    }
