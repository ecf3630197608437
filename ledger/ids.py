"""Ids derived from names: a round's from its table and number, a shoe's and a table's
(ledger/shoe.py, ledger/table.py) from theirs, under one namespace fixed forever."""
from __future__ import annotations

from functools import lru_cache
from uuid import NAMESPACE_URL, UUID, uuid5

# Fixed forever: round and shoe ids are derived from it (docs/events.md).
NAMESPACE = uuid5(NAMESPACE_URL, "https://casino-ledger/ids")
# Ids memoised per name: a feed touches a table's current round (and shoe) command after
# command, so the working set is a name per table with a round in flight. 1,024 serves a
# studio of a thousand tables (a miss costs a uuid5 on every command once the tables
# outnumber the memo) in about 1 KiB per name over the memos; a larger memo only held
# memory that grew with the rounds ingested.
ID_MEMO_MAX = 1024


@lru_cache(maxsize=ID_MEMO_MAX)  # uuid5 hashes on every command; ids are pure functions of their names
def round_id_for(table_id: str, round_no: int) -> UUID:
    return uuid5(NAMESPACE, f"round/{table_id}/{round_no}")


@lru_cache(maxsize=ID_MEMO_MAX)
def round_text_for(table_id: str, round_no: int) -> str:
    """The round id as text (what results and logs show), without a UUID str() per command."""
    return str(round_id_for(table_id, round_no))
