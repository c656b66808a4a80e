"""The base of every config model: unknown keys are errors, values are frozen, docstrings document fields."""

from pydantic import BaseModel, ConfigDict


class ConfigModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
