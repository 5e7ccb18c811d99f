"""Big-endian primitives of Kafka's non-flexible (pre-KIP-482) wire encoding.

Kept separate from the message codecs so that every bounds check lives in one place: the codecs read
field after field and never index raw bytes themselves, which is what makes "any input gives either a
model or a ProtocolDecodeError" true by construction.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import TypeVar

from kafka_coop.protocol._errors import ProtocolDecodeError

T = TypeVar("T")

INT16_SIZE = 2
INT32_SIZE = 4
INT16_MAX = 0x7FFF
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
NULL_LENGTH = -1

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class Reader:
    """Cursor over one payload that turns every malformation into a `ProtocolDecodeError`.

    Every read takes a `field` path so the error can say which field broke, not just where.
    """

    __slots__ = ("_data", "_offset")

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self._offset = 0

    @property
    def offset(self) -> int:
        return self._offset

    @property
    def remaining(self) -> int:
        return len(self._data) - self._offset

    def _take(self, size: int, field: str) -> bytes:
        if size > self.remaining:
            raise ProtocolDecodeError(
                field, self._offset, f"needs {size} bytes but only {self.remaining} remain"
            )
        start = self._offset
        self._offset += size
        return self._data[start : self._offset]

    def int16(self, field: str) -> int:
        (value,) = _INT16.unpack(self._take(INT16_SIZE, field))
        return int(value)

    def int32(self, field: str) -> int:
        (value,) = _INT32.unpack(self._take(INT32_SIZE, field))
        return int(value)

    def _length(self, field: str, prefix_size: int, *, nullable: bool) -> int:
        """Read a length prefix, returning NULL_LENGTH for null; only -1 means null, and only where allowed.

        Kafka itself reads any negative length as null; being stricter costs nothing for well-formed
        payloads and turns garbage into an error instead of a silently plausible null.
        """
        start = self._offset
        length = self.int16(field) if prefix_size == INT16_SIZE else self.int32(field)
        if length == NULL_LENGTH and nullable:
            return NULL_LENGTH
        if length == NULL_LENGTH:
            raise ProtocolDecodeError(field, start, "null is not allowed for this field")
        if length < 0:
            raise ProtocolDecodeError(field, start, f"invalid negative length {length}")
        return length

    def _utf8(self, length: int, field: str) -> str:
        start = self._offset
        raw = self._take(length, field)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolDecodeError(field, start + exc.start, "invalid UTF-8") from None

    def string(self, field: str) -> str:
        return self._utf8(self._length(field, INT16_SIZE, nullable=False), field)

    def nullable_string(self, field: str) -> str | None:
        length = self._length(field, INT16_SIZE, nullable=True)
        return None if length == NULL_LENGTH else self._utf8(length, field)

    def nullable_bytes(self, field: str) -> bytes | None:
        length = self._length(field, INT32_SIZE, nullable=True)
        return None if length == NULL_LENGTH else self._take(length, field)

    def array(self, field: str, read_item: Callable[[Reader, str], T], min_item_size: int) -> tuple[T, ...]:
        """Read a non-nullable int32-counted array.

        `min_item_size` bounds the count by the bytes actually left, so a forged count of two billion
        in a ten-byte payload fails at once instead of looping or allocating.
        """
        start = self._offset
        count = self._length(field, INT32_SIZE, nullable=False)
        self._check_count(field, start, count, min_item_size)
        return tuple(read_item(self, f"{field}[{index}]") for index in range(count))

    def _check_count(self, field: str, start: int, count: int, min_item_size: int) -> None:
        if count * min_item_size > self.remaining:
            raise ProtocolDecodeError(
                field,
                start,
                f"declares {count} elements of at least {min_item_size} bytes each "
                f"but only {self.remaining} bytes remain",
            )


class Writer:
    """Append-only encoder mirroring `Reader`; range errors are `ValueError`s naming the field."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self._buffer)

    def int16(self, value: int, field: str) -> None:
        if not -(INT16_MAX + 1) <= value <= INT16_MAX:
            raise ValueError(f"{field}: {value} does not fit in int16")
        self._buffer += _INT16.pack(value)

    def int32(self, value: int, field: str) -> None:
        if not INT32_MIN <= value <= INT32_MAX:
            raise ValueError(f"{field}: {value} does not fit in int32")
        self._buffer += _INT32.pack(value)

    def string(self, value: str, field: str) -> None:
        raw = value.encode("utf-8")
        if len(raw) > INT16_MAX:
            raise ValueError(f"{field}: {len(raw)} UTF-8 bytes exceed the int16 length limit {INT16_MAX}")
        self.int16(len(raw), field)
        self._buffer += raw

    def nullable_string(self, value: str | None, field: str) -> None:
        if value is None:
            self.int16(NULL_LENGTH, field)
        else:
            self.string(value, field)

    def nullable_bytes(self, value: bytes | None, field: str) -> None:
        if value is None:
            self.int32(NULL_LENGTH, field)
            return
        self.int32(len(value), field)
        self._buffer += value

    def array(self, items: Iterable[T], write_item: Callable[[Writer, T, str], None], field: str) -> None:
        materialized = tuple(items)
        self.int32(len(materialized), field)
        for index, item in enumerate(materialized):
            write_item(self, item, f"{field}[{index}]")
