"""Table keys: escaping, resource identities, due-index shards and row keys.

Table Storage forbids ``/ \\ # ?`` and control characters in keys and limits each key to 1 KiB of
UTF-16 (512 UTF-16 code units; Azurite checks the same). Names are matched case-insensitively (as ARM
does), so keys hold the name lower-cased character by character, percent-escaped; the original spelling
is kept in an entity property for output. The API refuses names whose keys would not fit (the budget is
in :data:`MAX_NAME_UNITS`, checked by ``scheduler_core.api.paths``; see ``docs/names.md``).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

from scheduler_core.errors import ValidationError

_ESCAPE = frozenset("/\\#?%|'\"")
#: Longest key Table Storage accepts: 1 KiB, strings being stored as UTF-16.
MAX_KEY_BYTES = 1024
SEPARATOR = "|"


@functools.lru_cache(maxsize=4096)
def escape_key(text: str) -> str:
    """``text`` lower-cased and percent-escaped so that it is a valid key part and contains no ``|``.

    The case is folded one character at a time (no context-dependent rule such as the Greek final sigma
    of ``str.lower``), so that equal names in any case give one key. Every ``%`` is escaped, so distinct
    lower-cased texts give distinct keys. (Remembered for the last few thousand texts: a request computes
    the keys of its subscription, group and collection several times, and most requests name the same few.)
    """
    out: list[str] = []
    for char in "".join(c.lower() for c in text):
        if char in _ESCAPE or ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F:
            out.extend(f"%{byte:02X}" for byte in char.encode())
        else:
            out.append(char)
    return "".join(out)


def key_units(text: str) -> int:
    """Length of a key (or key part) as Table Storage counts it: UTF-16 code units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def name_units(name: str) -> int:
    """What a name takes in every key that holds it (UTF-16 code units of :func:`escape_key`)."""
    return key_units(escape_key(name))


#: Longest name of each kind, in :func:`name_units`. The longest key holding names is a job's identity
#: (subscription | resource group | collection | job: the partition of its history and execution
#: claims): at most 457 units, within ``MAX_KEY_BYTES`` (tests/unit/test_names.py checks the budget).
MAX_NAME_UNITS: dict[str, int] = {
    "subscriptionId": 64,
    "resourceGroupName": 90,
    "jobCollectionName": 100,
    "jobName": 200,
}


def _checked(key: str, what: str) -> str:
    if key_units(key) * 2 > MAX_KEY_BYTES:
        raise ValidationError(what, f"is too long (the storage key would exceed {MAX_KEY_BYTES} bytes of UTF-16)")
    return key


@dataclass(frozen=True)
class CollectionRef:
    """A job collection, as addressed by a request (names in the client's spelling)."""

    subscription: str
    resource_group: str
    name: str

    @property
    def partition_key(self) -> str:
        return _checked(escape_key(self.subscription), "subscriptionId")

    @property
    def row_key(self) -> str:
        return _checked(escape_key(self.resource_group) + SEPARATOR + escape_key(self.name), "jobCollectionName")

    @property
    def identity(self) -> str:
        """The collection's identity: the partition of its jobs."""
        return self.partition_key + SEPARATOR + self.row_key

    @property
    def resource_id(self) -> str:
        return (
            f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}"
            f"/providers/Microsoft.Scheduler/jobCollections/{self.name}"
        )


@dataclass(frozen=True)
class JobRef:
    """A job inside a collection."""

    collection: CollectionRef
    name: str

    @property
    def partition_key(self) -> str:
        return _checked(self.collection.identity, "jobCollectionName")

    @property
    def row_key(self) -> str:
        return _checked(escape_key(self.name), "jobName")

    @property
    def identity(self) -> str:
        """The job's identity: the partition of its history and part of its due-index rows."""
        return self.partition_key + SEPARATOR + self.row_key

    @property
    def resource_id(self) -> str:
        return f"{self.collection.resource_id}/jobs/{self.name}"


def shard_of(identity: str, shards: int) -> str:
    """The due-index shard (partition key) of a job: a stable hash of its identity modulo ``shards``."""
    digest = hashlib.blake2b(identity.encode(), digest_size=8).digest()
    return f"{int.from_bytes(digest, 'big') % shards:04d}"


def format_due(instant: datetime) -> str:
    """A sortable, fixed-width UTC text of an instant (microseconds kept)."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def due_row_key(due: datetime, job_identity: str, generation: int) -> str:
    """Due-index row key: due time, then the job and its generation, so a range scan on time finds it.

    The job is named by a 128-bit digest of its identity (the row's ``JobPartition`` and ``JobRow`` say
    which job it is; nothing reads the key back), and the generation takes 16 digits (it counts
    microseconds, :func:`~scheduler_core.model.job.first_generation`), so that the key has a fixed length
    of 77 characters whatever the names, and suffixes the dispatcher appends (retries, watches) always fit.
    """
    digest = hashlib.blake2b(job_identity.encode(), digest_size=16).hexdigest()
    return f"{format_due(due)}{SEPARATOR}{digest}{SEPARATOR}{generation:016d}"


def history_row_key(started: datetime, execution_id: str) -> str:
    """History row key: inverted time first, so that a partition scan returns the newest rows first."""
    inverted = 10**17 - int(started.astimezone(UTC).timestamp() * 1_000_000)
    return f"{inverted:017d}{SEPARATOR}{execution_id}"


def flow_partition(subscription: str, key: str) -> str:
    """The partition of a flow control key's state: a digest of the subscription and the key (both without
    regard to case), so that any key of up to 256 characters fits a table key and keys of two subscriptions
    never meet."""
    text = f"{escape_key(subscription)}{SEPARATOR}{key.lower()}"
    return "flow-" + hashlib.sha256(text.encode()).hexdigest()[:40]
