"""One ChangeStore commit: ``with table.new_transaction() as txn: txn.write(changes)``.

Batches are validated as they are written (a bad batch raises and nothing of the
transaction is committed), buffered as Arrow, and turned into ``I``/``ED`` files at commit.
Offsets continue across the batches of one transaction, as in one Amoro task writer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from mixed_iceberg.changestore.batch import ChangeRows, normalize_changes
from mixed_iceberg.changestore.offsets import assign_offsets, last_row, pair_updates, route_rows
from mixed_iceberg.changestore.writer import write_change_files
from mixed_iceberg.exceptions import TransactionClosedError
from mixed_iceberg.format import WriterIdentity
from mixed_iceberg.schema import FILE_OFFSET_FIELD, arrow_schema
from mixed_iceberg.store.commit import CommitOutcome, commit_files
from mixed_iceberg.typedef import CommitId

if TYPE_CHECKING:
    from mixed_iceberg.handle import TableHandle

__all__ = ["ChangeTransaction"]

log = logging.getLogger(__name__)


class ChangeTransaction:
    """Buffers validated change rows and commits them as one ChangeStore snapshot."""

    def __init__(
        self,
        table: TableHandle,
        commit_id: CommitId | None = None,
        *,
        summary: Mapping[str, str] | None = None,
        writer: WriterIdentity | None = None,
    ) -> None:
        self._table = table
        self._commit_id = commit_id
        self._summary = dict(summary or {})
        self._writer = writer or WriterIdentity()
        self._schema = table.schema()  # files are written with the ids rows were validated against
        self._target = arrow_schema(self._schema, field_ids=False)
        self._batches: list[tuple[pa.Table, npt.NDArray[np.int8]]] = []
        self._offset = 0
        self._previous: tuple[int, pa.Table] | None = None
        self._state = "open"
        self.outcome: CommitOutcome | None = None

    @property
    def commit_id(self) -> CommitId | None:
        return self._commit_id

    def write(self, changes: pa.Table | pa.RecordBatch) -> None:
        """Validate ``changes`` (table columns + ``_change_action``) and buffer them.

        Raises:
            InvalidChangeError: the batch is malformed; nothing of it is buffered.
        """
        self._require_open()
        rows: ChangeRows = normalize_changes(changes, self._target, self._table.primary_key, table_name=self._table.name)
        if rows.num_rows == 0:
            return
        keys = rows.data.select(list(self._table.primary_key))
        actions = pair_updates(rows.actions, keys, self._previous)
        self._previous = last_row(actions, keys)
        offsets = assign_offsets(actions, self._offset)
        self._offset = int(offsets[-1])
        data = rows.data.append_column(FILE_OFFSET_FIELD.name, pa.array(offsets))
        self._batches.append((data, actions))

    def commit(self) -> CommitOutcome:
        """Write the buffered rows as change files and commit them in one snapshot.

        An empty transaction with a commit id still commits (an empty snapshot carrying
        the id), so that a checkpoint with no data is recorded too.
        """
        self._require_open()
        self._state = "committing"
        store = self._table.change_store
        assert store is not None, "keyed tables always have a ChangeStore"
        files = []
        if self._batches:
            data = pa.concat_tables([batch for batch, _ in self._batches])
            actions = np.concatenate([acts for _, acts in self._batches])
            to_insert, to_delete = route_rows(actions, upsert=self._table.config.layout.upsert)
            files = write_change_files(
                store,
                data,
                to_insert,
                to_delete,
                self._table.primary_key,
                self._table.config.layout.change_buckets,
                self._writer,
                schema=self._schema,
            )
        if not files and self._commit_id is None:
            self._state = "committed"
            self.outcome = CommitOutcome.skip()
            return self.outcome
        self.outcome = commit_files(
            store, added=files, commit_id=self._commit_id, summary=self._summary, table_name=self._table.name
        )
        self._state = "committed"
        rows = sum(batch.num_rows for batch, _ in self._batches)
        log.info(
            "%s: change commit %s rows=%d files=%d skipped=%s",
            self._table.name,
            self._commit_id,
            rows,
            len(files),
            self.outcome.skipped,
        )
        self._batches.clear()
        return self.outcome

    def abort(self) -> None:
        """Drop the buffered rows; nothing was written to the table."""
        self._batches.clear()
        self._state = "aborted"

    def _require_open(self) -> None:
        if self._state != "open":
            raise TransactionClosedError(f"{self._table.name}: transaction is {self._state}; expected an open transaction")

    def __enter__(self) -> ChangeTransaction:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
