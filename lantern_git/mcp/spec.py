"""What a tool is to the MCP server: its name, schemas, hints and the library call it makes.

Kept apart from the server so each family of tools (records, evidence) can be declared in its
own module without importing the server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store import Store


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict
    output_schema: dict
    read_only: bool
    destructive: bool
    idempotent: bool
    call: Callable[[Store, dict], tuple[dict, str | None]]


def object_schema(properties: dict, required: tuple[str, ...] = ()) -> dict:
    """A JSON Schema object of ``properties``, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }
