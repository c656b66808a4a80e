"""Reading config YAML: YAML 1.2 booleans (so `on:` stays a key) and `${VAR}` expansion with named failures."""

import os
import re
from typing import Any

import yaml


class _Yaml12Loader(yaml.SafeLoader):
    """Safe YAML with 1.2 booleans: only true/false. YAML 1.1 reads `on:` (a steering key) as True."""


_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def read_yaml(text: str) -> Any:
    loader = _Yaml12Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_vars(node: Any, path: str, problems: list[str]) -> Any:
    """Replace `${VAR}` in every string; an unset variable is a problem naming the key path."""
    if isinstance(node, dict):
        return {k: expand_vars(v, f"{path}.{k}" if path else str(k), problems) for k, v in node.items()}
    if isinstance(node, list):
        return [expand_vars(v, f"{path}[{i}]", problems) for i, v in enumerate(node)]
    if isinstance(node, str):

        def sub(m: re.Match[str]) -> str:
            value = os.environ.get(m.group(1))
            if value is None:
                problems.append(f"{path}: environment variable {m.group(1)} is not set")
                return ""
            return value

        return _VAR.sub(sub, node)
    return node
