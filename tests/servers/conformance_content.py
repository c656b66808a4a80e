"""The conformance fixture's resources and prompts: names and contents as the suite asks for them."""

import json

import mcp.types as types

IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
WATCHED = "test://watched-resource"

RESOURCES = [
    types.Resource(uri="test://static-text", name="static-text", title="Static Text Resource", mime_type="text/plain"),
    types.Resource(
        uri="test://static-binary", name="static-binary", title="Static Binary Resource", mime_type="image/png"
    ),
    types.Resource(uri=WATCHED, name="watched-resource", title="Watched Resource", mime_type="text/plain"),
]
TEMPLATES = [
    types.ResourceTemplate(
        uri_template="test://template/{id}/data",
        name="template",
        title="Resource Template",
        description="A resource template with parameter substitution",
        mime_type="application/json",
    )
]
PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A simple prompt without arguments"),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with required arguments",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that includes an embedded resource",
        arguments=[types.PromptArgument(name="resourceUri", description="URI of the resource to embed", required=True)],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt that includes image content"),
]


def text(value: str) -> types.TextContent:
    return types.TextContent(text=value)


def embedded(uri: str, body: str, mime: str = "text/plain") -> types.EmbeddedResource:
    return types.EmbeddedResource(resource=types.TextResourceContents(uri=uri, mime_type=mime, text=body))


def read(uri: str) -> types.ReadResourceResult:
    """A resource's contents, as the suite expects them."""
    contents: types.TextResourceContents | types.BlobResourceContents
    if uri == "test://static-text":
        contents = types.TextResourceContents(
            uri=uri, mime_type="text/plain", text="This is the content of the static text resource."
        )
    elif uri == "test://static-binary":
        contents = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=IMAGE)
    elif uri == WATCHED:
        contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text="Watched resource content")
    elif uri.startswith("test://template/") and uri.endswith("/data"):
        ident = uri.removeprefix("test://template/").removesuffix("/data")
        body = json.dumps({"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"})
        contents = types.TextResourceContents(uri=uri, mime_type="application/json", text=body)
    else:
        raise ValueError(f"Resource not found: {uri}")
    return types.ReadResourceResult(contents=[contents])


def prompt(name: str, args: dict[str, str]) -> types.GetPromptResult:
    """A prompt's messages, as the suite expects them."""
    user = "user"
    match name:
        case "test_simple_prompt":
            messages = [types.PromptMessage(role=user, content=text("This is a simple prompt for testing."))]
        case "test_prompt_with_arguments":
            line = f"Prompt with arguments: arg1='{args.get('arg1')}', arg2='{args.get('arg2')}'"
            messages = [types.PromptMessage(role=user, content=text(line))]
        case "test_prompt_with_embedded_resource":
            resource = embedded(args.get("resourceUri", ""), "Embedded resource content for testing.")
            messages = [
                types.PromptMessage(role=user, content=resource),
                types.PromptMessage(role=user, content=text("Please process the embedded resource above.")),
            ]
        case "test_prompt_with_image":
            messages = [
                types.PromptMessage(role=user, content=types.ImageContent(data=IMAGE, mime_type="image/png")),
                types.PromptMessage(role=user, content=text("Please analyze the image above.")),
            ]
        case _:
            raise ValueError(f"Prompt not found: {name}")
    return types.GetPromptResult(messages=messages)
