"""The record schema's names and limits: no heavy imports, so the CLI can use them for help."""

KINDS = ("fact", "preference", "goal", "constraint", "task_state", "observation", "hypothesis")
STATUSES = ("active", "archived", "superseded")
FIELD_ORDER = (
    "id",
    "kind",
    "scope",
    "status",
    "priority",
    "urgency",
    "confidence",
    "created_at",
    "updated_at",
    "expires_at",
    "supersedes_id",
    "source_refs",
)
OPTIONAL_FIELDS = ("expires_at", "supersedes_id", "source_refs")
# Public record object keys (JSON, export, MCP), in the contract's order.
RECORD_KEYS = (*FIELD_ORDER, "content")

MAX_CONTENT_BYTES = 64 * 1024
MAX_FILE_BYTES = 256 * 1024
MAX_SCOPE_CHARS = 200
MAX_SOURCE_REFS = 200
MAX_SOURCE_REF_CHARS = 1000
# Unix seconds beyond this are almost certainly milliseconds or garbage (year 2286).
MAX_TIMESTAMP = 9_999_999_999

# The suffix of the temporary file an atomic write renames into place: readers skip these.
TMP_SUFFIX = ".lantern-tmp"
