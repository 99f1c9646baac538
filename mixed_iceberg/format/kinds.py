"""The two kinds a file name encodes: the data file type and the store it belongs to.

They live with the file names that spell them (``mixed_iceberg.typedef`` re-exports them for
every layer above).
"""

from __future__ import annotations

import enum

__all__ = ["DataFileType", "TableStore"]


class DataFileType(enum.Enum):
    """File types of a Mixed-Iceberg table, as encoded in file names (``DataFileType.java``)."""

    BASE_FILE = (0, "B")
    INSERT_FILE = (1, "I")
    EQ_DELETE_FILE = (2, "ED")
    POS_DELETE_FILE = (3, "PD")
    ICEBERG_EQ_DELETE_FILE = (4, "IED")
    LOG_FILE = (5, "L")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def short_name(self) -> str:
        return self.value[1]

    @classmethod
    def from_short_name(cls, short: str) -> DataFileType:
        for member in cls:
            if member.short_name == short:
                return member
        raise ValueError(f"unknown data file type {short!r}; expected one of B, I, ED, PD, IED, L")


class TableStore(enum.Enum):
    """Which store of a Mixed-Iceberg table an Iceberg table is (``mixed-format.table-store``)."""

    BASE = "base"
    CHANGE = "change"
