"""The tools' input schemas, generated from their argument models, and the server agree: what
the schema a client reads over stdio refuses, the server refuses too, naming the argument.

Each test starts ``lantern mcp`` and talks to it through the SDK's stdio client; the schemas are
the ones tools/list answers, checked with jsonschema as a client would before sending a call.
"""

from __future__ import annotations

from typing import Annotated

import jsonschema
import pytest
from support.mcp import fail, ok, run
from support.stores import snapshot

# The words a refusal uses for each JSON type, as lantern's messages spell them.
TYPE_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


def _types(schema: dict) -> list[str]:
    kinds = schema["type"]
    return [kinds] if isinstance(kinds, str) else list(kinds)


def _good(schema: dict) -> object:
    """A value of the property's first JSON type (not necessarily one the library accepts)."""
    return {
        "string": "x",
        "integer": 1,
        "number": 0.5,
        "boolean": False,
        "array": [],
        "object": {},
    }[_types(schema)[0]]


def _wrong(schema: dict) -> tuple[object, str]:
    """A value of none of the property's JSON types, and how the refusal describes it."""
    if "object" in _types(schema):
        return [1], "a list"
    return {"a": 1}, "an object"


def _tools(client_tools) -> dict[str, dict]:
    return {tool.name: tool.input_schema for tool in client_tools}


def _refused_by_schema(schema: dict, arguments: dict, name: str) -> bool:
    errors = jsonschema.Draft202012Validator(schema).iter_errors(arguments)
    # Refused for this argument: an error at it, or the object's error naming it (unknown).
    return any(
        (error.path and error.path[0] == name) or (not error.path and name in error.message)
        for error in errors
    )


def test_every_argument_of_the_wrong_json_type_is_refused_by_schema_and_server_alike(
    store_path,
):
    before = snapshot(store_path)

    async def body(client):
        tools = _tools((await client.list_tools()).tools)
        refused = []
        for tool, schema in tools.items():
            required = {name: _good(schema["properties"][name]) for name in schema["required"]}
            for name, prop in schema["properties"].items():
                value, shown = _wrong(prop)
                arguments = {**required, name: value}
                assert _refused_by_schema(schema, arguments, name), (tool, name)
                error = await fail(client, tool, **arguments)
                refused.append((tool, name, prop, shown, error))
                if "array" in _types(prop):  # and a list holding a value of the wrong type
                    arguments = {**required, name: [value]}
                    assert _refused_by_schema(schema, arguments, name), (tool, name)
                    error = await fail(client, tool, **arguments)
                    refused.append((tool, f"{name}[0]", prop["items"], shown, error))
        return refused

    refused = run(body)(store_path)
    # Every tool that takes arguments (status and verify take none), lists' items too.
    assert len({tool for tool, *_ in refused}) == 24
    assert {"kind[0]", "scope[0]", "source_refs[0]", "fields[0]"} <= {n for _, n, *_ in refused}
    for tool, name, prop, shown, error in refused:
        words = " or ".join(TYPE_WORDS[t] for t in _types(prop))
        message = f"{name}: must be {words}, got {shown}"
        assert error == {"code": "invalid_field", "message": message}, tool
    assert snapshot(store_path) == before


def test_an_unknown_argument_is_refused_by_every_tools_schema_and_the_server(store_path):
    async def body(client):
        tools = _tools((await client.list_tools()).tools)
        refused = {}
        for tool, schema in tools.items():
            arguments = {name: _good(schema["properties"][name]) for name in schema["required"]}
            arguments["colour"] = "blue"
            assert _refused_by_schema(schema, arguments, "colour"), tool
            refused[tool] = (list(schema["properties"]), await fail(client, tool, **arguments))
        return refused

    refused = run(body)(store_path)
    assert len(refused) == 26
    for tool, (names, error) in refused.items():
        message = f"colour: unknown argument for {tool}; it takes: {', '.join(names)}"
        assert error == {"code": "usage_error", "message": message}


def test_a_missing_argument_is_refused_by_the_schema_and_the_server(store_path):
    async def body(client):
        tools = _tools((await client.list_tools()).tools)
        refused = []
        for tool, schema in tools.items():
            for left_out in schema["required"]:
                arguments = {
                    name: _good(schema["properties"][name])
                    for name in schema["required"]
                    if name != left_out
                }
                errors = jsonschema.Draft202012Validator(schema).iter_errors(arguments)
                assert any(e.validator == "required" for e in errors), (tool, left_out)
                refused.append((left_out, await fail(client, tool, **arguments)))
        return refused

    refused = run(body)(store_path)
    assert len(refused) >= 12
    for left_out, error in refused:
        assert error == {"code": "usage_error", "message": f"{left_out}: is required"}


# (tool, other arguments, the argument out of range, its value, the code the server refuses it
# with): values of the right JSON type that the schema's limits, enums and patterns refuse, and
# the library with the CLI's codes.
ADD = {"content": "x", "kind": "fact"}
OUT_OF_RANGE = [
    ("lantern_memory_list", {}, "limit", 501, "usage_error"),
    ("lantern_memory_list", {}, "limit", -1, "usage_error"),
    ("lantern_source_search", {"query": "x"}, "limit", 501, "usage_error"),
    ("lantern_memory_history", {"id": "abcd"}, "offset", -1, "usage_error"),
    ("lantern_memory_add", ADD, "priority", 101, "invalid_field"),
    ("lantern_memory_add", ADD, "urgency", -1, "invalid_field"),
    ("lantern_memory_add", ADD, "confidence", 1.5, "invalid_field"),
    ("lantern_memory_add", ADD, "kind", "mood", "invalid_field"),
    ("lantern_memory_add", ADD, "scope", "user ana", "invalid_field"),
    ("lantern_memory_list", {}, "status", "deleted", "invalid_field"),
    ("lantern_memory_list", {}, "min_priority", 101, "invalid_field"),
    ("lantern_memory_search", {"query": "x"}, "mode", "fuzzy", "invalid_field"),
    ("lantern_source_add", {"text": "x"}, "kind", "diary", "invalid_field"),
    ("lantern_memory_show", {}, "id", "xyz!", "invalid_id"),
    ("lantern_source_list", {}, "kind", ["diary"], "invalid_field"),
]


def test_values_out_of_the_schemas_limits_are_refused_by_it_and_by_the_server(store_path):
    before = snapshot(store_path)

    async def body(client):
        tools = _tools((await client.list_tools()).tools)
        seen = []
        for tool, others, name, value, _ in OUT_OF_RANGE:
            arguments = {**others, name: value}
            errors = jsonschema.Draft202012Validator(tools[tool]).iter_errors(arguments)
            # Refused for its value, not its type.
            keywords = {e.validator for e in errors if e.path and e.path[0] == name}
            assert keywords and keywords <= {"minimum", "maximum", "enum", "pattern"}, tool
            seen.append(await fail(client, tool, **arguments))
        return seen

    seen = run(body)(store_path)
    for (tool, _, name, _, code), error in zip(OUT_OF_RANGE, seen):
        assert error["code"] == code, (tool, name, error)
        # The refusal names what was wrong.
        assert name in error["message"] or name == "id", (tool, error)
    assert snapshot(store_path) == before


def test_what_the_schema_accepts_at_its_edges_the_server_accepts(store_path):
    async def body(client):
        tools = _tools((await client.list_tools()).tools)
        calls = [
            ("lantern_memory_list", {"limit": 500, "offset": 0}),
            ("lantern_memory_list", {"limit": 0}),
            ("lantern_memory_list", {"status": "all", "min_priority": 100, "min_urgency": 0}),
            (
                "lantern_memory_add",
                {"content": "Edge.", "kind": "fact", "priority": 100, "urgency": 0},
            ),
            ("lantern_memory_add", {"content": "Sure.", "kind": "goal", "confidence": 0}),
            ("lantern_source_search", {"query": "x", "limit": 500, "kind": ["note"]}),
        ]
        answers = []
        for tool, arguments in calls:
            jsonschema.Draft202012Validator(tools[tool]).validate(arguments)
            answers.append(await ok(client, tool, **arguments))
        return answers

    answers = run(body)(store_path)
    assert answers[0]["limit"] == 500 and answers[1]["limit"] == 0
    assert (answers[3]["priority"], answers[3]["urgency"]) == (100, 0)
    assert answers[4]["confidence"] == 0.0


def test_a_table_field_typed_otherwise_than_the_table_says_fails_to_build():
    """The Python type beside a field of the table must be the table's JSON type: a priority
    typed as text cannot slip into a schema."""
    from lantern_git.mcp.schemas import Arguments, Table, input_schema

    class Wrong(Arguments):
        priority: Annotated[str, Table("priority")]

    with pytest.raises(TypeError, match="priority: typed string, shown integer"):
        input_schema(Wrong)
