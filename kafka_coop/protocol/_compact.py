"""Kafka's flexible (KIP-482) wire encoding: unsigned varints, compact strings and arrays, tagged fields.

The flexible versions of a message (every ConsumerGroupDescribe version) write lengths as unsigned
varints of length + 1 (0 is null) and end every struct with a tagged-field section. The same bounds
discipline as `_buffer`: every read checks what is left, so any input gives a value or a
`ProtocolDecodeError` naming the field.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterable
from typing import Annotated, TypeVar

from pydantic import AfterValidator, Field

from kafka_coop.protocol._buffer import INT16_MAX, Reader, Writer
from kafka_coop.protocol._errors import ProtocolDecodeError

T = TypeVar("T")

UINT32_MAX = 2**32 - 1
INT8_MIN, INT8_MAX = -(2**7), 2**7 - 1
UUID_SIZE = 16
_VARINT_MAX_BYTES = 5  # an unsigned 32-bit value; Kafka's readUnsignedVarint refuses a longer one


def _rising_tags(fields: tuple[tuple[int, bytes], ...]) -> tuple[tuple[int, bytes], ...]:
    tags = [tag for tag, _ in fields]
    if any(b <= a for a, b in itertools.pairwise(tags)):
        raise ValueError(f"tags must rise strictly, got {tags}")
    return fields


TaggedFields = Annotated[
    tuple[tuple[Annotated[int, Field(ge=0, le=UINT32_MAX)], bytes], ...], AfterValidator(_rising_tags)
]
"""Tagged fields this codec has no name for, as (tag, raw bytes) in increasing tag order.

Kafka's generated messages keep such fields and write them back (`_unknownTaggedFields`); so do we,
so a message from a newer broker re-encodes byte for byte."""


class CompactReader(Reader):
    __slots__ = ()

    def int8(self, field: str) -> int:
        (value,) = self._take(1, field)
        return value - 256 if value > INT8_MAX else value

    def boolean(self, field: str) -> bool:
        """Kafka reads any non-zero byte as true; only 0 and 1 are written, so only they are accepted."""
        start = self.offset
        (value,) = self._take(1, field)
        if value not in (0, 1):
            raise ProtocolDecodeError(field, start, f"invalid boolean byte {value}")
        return value == 1

    def uuid(self, field: str) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(UUID_SIZE, field))

    def uvarint(self, field: str) -> int:
        start = self.offset
        value = 0
        for index in range(_VARINT_MAX_BYTES):
            (byte,) = self._take(1, field)
            value |= (byte & 0x7F) << (7 * index)
            if not byte & 0x80:
                if value > UINT32_MAX:
                    raise ProtocolDecodeError(field, start, "varint exceeds 32 bits")
                return value
        raise ProtocolDecodeError(field, start, f"varint longer than {_VARINT_MAX_BYTES} bytes")

    def _compact_length(self, field: str, *, nullable: bool) -> int | None:
        start = self.offset
        encoded = self.uvarint(field)
        if encoded == 0:
            if nullable:
                return None
            raise ProtocolDecodeError(field, start, "null is not allowed for this field")
        return encoded - 1

    def _compact_utf8(self, length: int, field: str, start: int) -> str:
        if length > INT16_MAX:  # Kafka's generated readers refuse longer strings, compact or not
            raise ProtocolDecodeError(field, start, f"string length {length} exceeds {INT16_MAX}")
        return self._utf8(length, field)

    def compact_string(self, field: str) -> str:
        start = self.offset
        length = self._compact_length(field, nullable=False)
        assert length is not None
        return self._compact_utf8(length, field, start)

    def compact_nullable_string(self, field: str) -> str | None:
        start = self.offset
        length = self._compact_length(field, nullable=True)
        return None if length is None else self._compact_utf8(length, field, start)

    def compact_array(
        self, field: str, read_item: Callable[[CompactReader, str], T], min_item_size: int
    ) -> tuple[T, ...]:
        """A non-nullable compact array, its count bounded by the bytes left (see `Reader.array`)."""
        start = self.offset
        count = self._compact_length(field, nullable=False)
        assert count is not None
        self._check_count(field, start, count, min_item_size)
        return tuple(read_item(self, f"{field}[{index}]") for index in range(count))

    def tagged_fields(self, field: str) -> tuple[tuple[int, bytes], ...]:
        """A struct's tagged-field section, kept raw. Tags must rise strictly, as Kafka writes them."""
        start = self.offset
        count = self.uvarint(f"{field}.count")
        if count * 2 > self.remaining:  # a tag and a size: one byte each at least
            raise ProtocolDecodeError(
                field, start, f"declares {count} tagged fields but only {self.remaining} bytes remain"
            )
        out: list[tuple[int, bytes]] = []
        for index in range(count):
            tag_at = self.offset
            tag = self.uvarint(f"{field}[{index}].tag")
            if out and tag <= out[-1][0]:
                raise ProtocolDecodeError(
                    f"{field}[{index}].tag", tag_at, f"tag {tag} does not follow tag {out[-1][0]}"
                )
            size = self.uvarint(f"{field}[{index}].size")
            out.append((tag, self._take(size, f"{field}[{index}].data")))
        return tuple(out)

    def expect_end(self, field: str) -> None:
        if self.remaining:
            raise ProtocolDecodeError(field, self.offset, f"{self.remaining} bytes left after the message")


class CompactWriter(Writer):
    __slots__ = ()

    def int8(self, value: int, field: str) -> None:
        if not INT8_MIN <= value <= INT8_MAX:
            raise ValueError(f"{field}: {value} does not fit in int8")
        self._buffer.append(value & 0xFF)

    def boolean(self, value: bool, field: str) -> None:
        self._buffer.append(1 if value else 0)

    def uuid(self, value: uuid.UUID, field: str) -> None:
        self._buffer += value.bytes

    def uvarint(self, value: int, field: str) -> None:
        if not 0 <= value <= UINT32_MAX:
            raise ValueError(f"{field}: {value} does not fit in an unsigned 32-bit varint")
        while value >= 0x80:
            self._buffer.append((value & 0x7F) | 0x80)
            value >>= 7
        self._buffer.append(value)

    def compact_string(self, value: str, field: str) -> None:
        raw = value.encode("utf-8")
        if len(raw) > INT16_MAX:
            raise ValueError(f"{field}: {len(raw)} UTF-8 bytes exceed the string length limit {INT16_MAX}")
        self.uvarint(len(raw) + 1, field)
        self._buffer += raw

    def compact_nullable_string(self, value: str | None, field: str) -> None:
        if value is None:
            self.uvarint(0, field)
        else:
            self.compact_string(value, field)

    def compact_array(
        self, items: Iterable[T], write_item: Callable[[CompactWriter, T, str], None], field: str
    ) -> None:
        materialized = tuple(items)
        self.uvarint(len(materialized) + 1, field)
        for index, item in enumerate(materialized):
            write_item(self, item, f"{field}[{index}]")

    def tagged_fields(self, fields: tuple[tuple[int, bytes], ...], field: str) -> None:
        previous = -1
        self.uvarint(len(fields), f"{field}.count")
        for tag, data in fields:
            if tag <= previous:
                raise ValueError(f"{field}: tag {tag} does not follow tag {previous}")
            previous = tag
            self.uvarint(tag, f"{field}.tag")
            self.uvarint(len(data), f"{field}.size")
            self._buffer += data
