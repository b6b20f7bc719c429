"""Readers and writers generated as Python source per (schema, version, flexibility).

Why generate code: the codec is the hot path of metadata log replay and of the controller,
and a generic loop over field specs pays a closure call, a tuple and a path bookkeeping step
per field. A generated function instead keeps the values in locals, reads or writes a run of
consecutive fixed-width fields with one ``struct`` call, inlines the one-byte uvarint of
compact lengths, counts and empty tag buffers, and builds the dataclass once at the end.

What stays the same as the closure codecs of :mod:`pykraft.messages.wire`: every length and
count is checked against the remaining bytes before anything is allocated, unknown tags are
kept by a struct that declares ``unknown_tags()`` (skipped by one that does not), and
failures raise :class:`FieldDecodeError` / :class:`FieldEncodeError` with the same reason,
position and field path. Paths cost nothing on success: a multi-field run works out which
field was short only when its one bounds check fails, and ``try`` blocks are free in
CPython 3.11 until something raises. Rare shapes (non-fixed primitive arrays on the write
side, custom primitives) fall back to the closures of :mod:`pykraft.messages.wire`.

The generated source is kept: :func:`generated_source` returns it, and it is registered with
``linecache`` so tracebacks through generated code show the generated lines.
"""

from __future__ import annotations

import contextlib
import dataclasses
import linecache
import struct
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pykraft.messages.schema import UNKNOWN_TAGS, ArrayOf, FieldSpec, FieldType, MessageSchema
from pykraft.messages.varint import encode_uvarint
from pykraft.messages.wire import (
    INT32,
    MAX_STRING_BYTES,
    UUID_CACHE,
    BoolPrimitive,
    FieldDecodeError,
    FieldEncodeError,
    FieldReader,
    FieldWriter,
    FixedPrimitive,
    MappedPrimitive,
    Primitive,
    UuidPrimitive,
    VariablePrimitive,
    read_uvarint,
    truncated,
    uuid_from_bytes,
    write_length,
)

_READERS: dict[tuple[MessageSchema, int, bool], tuple[FieldReader, int]] = {}
_WRITERS: dict[tuple[MessageSchema, int, bool], FieldWriter] = {}
_SOURCES: dict[tuple[str, MessageSchema, int, bool], str] = {}

_ONE_BYTE = 0x80  # a uvarint below this is its own single byte
_SMALL_ARRAY = 127  # arrays shorter than this have a one-byte compact count
_INTS = frozenset({int})


# --- helpers the generated code calls on its slow and failing paths -----------------------


def _with_path(name: str, error: FieldDecodeError) -> FieldDecodeError:
    error.path.insert(0, name)
    return error


def _run_truncated(
    fields: tuple[tuple[str, str, int], ...], pos: int, end: int
) -> FieldDecodeError:
    """The error of the first field of a fixed-width run that does not fit before ``end``."""
    for name, type_name, size in fields:
        if pos + size > end:
            return _with_path(name, truncated(type_name, pos, size, end))
        pos += size
    raise AssertionError("a run reported truncated fits its buffer")  # pragma: no cover


def _mapped_error(type_name: str, raw: Any, exc: Exception, pos: int) -> FieldDecodeError:
    return FieldDecodeError(f"invalid {type_name} {raw!r}: {exc}", pos)


def _bad_length(type_name: str, length: int, pos: int) -> FieldDecodeError:
    reason = "null in a non-nullable field" if length == -1 else "negative length"
    return FieldDecodeError(f"{type_name} {reason} ({length})", pos)


def _bad_count(count: int, pos: int) -> FieldDecodeError:
    reason = "null in a non-nullable array" if count == -1 else "negative array length"
    return FieldDecodeError(f"{reason} ({count})", pos)


def _no_room(count: int, pos: int, end: int) -> FieldDecodeError:
    return FieldDecodeError(
        f"array of {count} elements cannot fit in the {end - pos} remaining bytes", pos
    )


def _read_items(read: FieldReader, count: int, buf: bytes, pos: int, end: int) -> tuple[Any, int]:
    items = []
    for index in range(count):
        try:
            item, pos = read(buf, pos, end)
        except FieldDecodeError as exc:
            exc.path.insert(0, f"[{index}]")
            raise
        items.append(item)
    return tuple(items), pos


def _read_uuids(buf: bytes, pos: int, count: int) -> tuple[uuid.UUID, ...]:
    """``count`` UUIDs whose bytes are known to be there."""
    return tuple([uuid_from_bytes(buf[at : at + 16]) for at in range(pos, pos + 16 * count, 16)])


def _absent(name: str, version: int) -> FieldEncodeError:
    error = FieldEncodeError(
        f"non-default value in a field absent from version {version}", unsupported=True
    )
    error.path.append(name)
    return error


def _tags_in_classic(version: int) -> FieldEncodeError:
    """Kafka's writers refuse unknown tagged fields at a version without tagged fields."""
    error = FieldEncodeError(
        f"unknown tagged fields are set, but version {version} has no tagged fields",
        unsupported=True,
    )
    error.path.append(UNKNOWN_TAGS)
    return error


def _write_merged_tags(out: bytearray, count: int, known: bytes, unknown: object) -> None:
    """A TAG_BUFFER of the ``count`` known fields the generated writer put in ``known`` and
    a struct's unknown ones, by tag (Kafka's ``RawTaggedFieldWriter``): the unknown ones in
    ascending order, none with a tag the schema defines."""
    entries: list[tuple[int, bytes | bytearray]] = []
    pos = 0
    for _ in range(count):  # what the writer just wrote: well formed
        tag, pos = read_uvarint(known, pos, len(known))
        size, pos = read_uvarint(known, pos, len(known))
        entries.append((tag, known[pos : pos + size]))
        pos += size
    defined = {tag for tag, _ in entries}
    previous = -1
    for entry in unknown if isinstance(unknown, tuple | list) else (unknown,):
        if not (
            isinstance(entry, tuple)
            and len(entry) == 2
            and type(entry[0]) is int
            and isinstance(entry[1], bytes | bytearray)
        ):
            raise _unknown_error(f"expected (tag, bytes) pairs, got {entry!r}")
        tag, payload = entry
        if tag in defined:
            raise _unknown_error(f"tag {tag} collides with a tag the schema defines")
        if not previous < tag < 2**31:
            raise _unknown_error(f"tag {tag} does not follow tag {previous} in ascending order")
        previous = tag
        entries.append((tag, payload))
    entries.sort(key=lambda entry: entry[0])
    out += encode_uvarint(len(entries))
    for tag, payload in entries:
        out += encode_uvarint(tag) + encode_uvarint(len(payload))
        out += payload


def _unknown_error(reason: str) -> FieldEncodeError:
    error = FieldEncodeError(reason)
    error.path.append(UNKNOWN_TAGS)
    return error


def _write_run(writers: tuple[tuple[str, FieldWriter], ...]) -> Callable[..., None]:
    """Slow path of a fixed-width run: field by field, so the failing field is named."""

    def write(out: bytearray, *values: Any) -> None:
        for (name, write_one), value in zip(writers, values, strict=True):
            try:
                write_one(out, value)
            except FieldEncodeError as exc:
                exc.path.insert(0, name)
                raise

    return write


def _nullable_struct_writer(write_struct: FieldWriter) -> FieldWriter:
    """KIP-893: -1 for null, else 1 then the struct (Kafka's generated ``write``)."""

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            out.append(0xFF)
            return
        out.append(1)
        write_struct(out, value)

    return write


def _array_writer(write_item: FieldWriter, flexible: bool, nullable: bool) -> FieldWriter:
    """The general array writer: any element type, null, lists, and every error. An entry
    that is the same object as the one before (an answer repeating one entry per duplicate
    a request named, a million times) is written once and its bytes copied."""

    def write_array(out: bytearray, items: Any) -> None:
        if items is None:
            if not nullable:
                raise FieldEncodeError("null in a non-nullable array")
            write_length(out, -1, flexible, INT32.struct)
            return
        if not isinstance(items, tuple | list):
            raise FieldEncodeError(f"expected a tuple, got {type(items).__name__}")
        write_length(out, len(items), flexible, INT32.struct)
        last, start, end = None, 0, 0
        for index, item in enumerate(items):
            if item is last and last is not None:  # a repeated entry: its bytes again
                out += out[start:end]
                continue
            start = len(out)
            try:
                write_item(out, item)
            except FieldEncodeError as exc:
                exc.path.insert(0, f"[{index}]")
                raise
            last, end = item, len(out)

    return write_array


_ARRAY_STRUCTS: dict[str, list[struct.Struct]] = {}


def _array_structs(code: str) -> list[struct.Struct]:
    """Structs for 0.._SMALL_ARRAY-1 elements of one fixed type, built once."""
    cached = _ARRAY_STRUCTS.get(code)
    if cached is None:
        cached = [struct.Struct(f">{count}{code}") for count in range(_SMALL_ARRAY)]
        _ARRAY_STRUCTS[code] = cached
    return cached


_BASE_NAMES: dict[str, Any] = {
    "FieldDecodeError": FieldDecodeError,
    "FieldEncodeError": FieldEncodeError,
    "uuid_cached": UUID_CACHE.get,  # UUIDs are always true: "cached(raw) or new(raw)"
    "UUID": uuid.UUID,
    "INTS": _INTS,
    "UUIDS": frozenset({uuid.UUID}),
    "uuid_from_bytes": uuid_from_bytes,
    "read_uvarint": read_uvarint,
    "encode_uvarint": encode_uvarint,
    "truncated": truncated,
    "with_path": _with_path,
    "run_truncated": _run_truncated,
    "mapped_error": _mapped_error,
    "bad_length": _bad_length,
    "bad_count": _bad_count,
    "no_room": _no_room,
    "read_items": _read_items,
    "read_uuids": _read_uuids,
    "absent": _absent,
    "tags_in_classic": _tags_in_classic,
    "write_merged_tags": _write_merged_tags,
    "struct_error": struct.error,
    "unpack_from": struct.unpack_from,
}


# --- source assembly ----------------------------------------------------------------------


@dataclass
class _Source:
    """Lines of one generated function and the constants its code names."""

    names: dict[str, Any] = field(default_factory=lambda: dict(_BASE_NAMES))
    lines: list[str] = field(default_factory=list)
    depth: int = 1

    def const(self, prefix: str, value: Any) -> str:
        """Bind ``value`` to a fresh global name of the generated module."""
        name = f"{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def emit(self, *lines: str) -> None:
        self.lines.extend("    " * self.depth + line for line in lines)

    def block(self, header: str) -> _Indented:
        self.emit(header)
        return _Indented(self)

    def wrap_path(self, name: str, error: str) -> _Indented:
        """``try:`` whose handler prefixes the field name to a failure's path."""
        return _Indented(self, handler=(error, repr(name)))

    def wrap_index(self) -> _Indented:
        """``try:`` whose handler prefixes the array index ``index`` to a failure's path."""
        return _Indented(self, handler=("FieldDecodeError", "f'[{index}]'"))

    def compile(self, header: str, filename: str, entry: str) -> tuple[Any, str]:
        text = header + "\n" + "\n".join(self.lines) + "\n"
        code = compile(text, filename, "exec")
        exec(code, self.names)  # our own generated source, kept for inspection
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        return self.names[entry], text


class _Indented:
    """Context manager for an indented block, optionally a path-prefixing ``try``
    (``handler``: the error caught and the source of the path part)."""

    def __init__(self, source: _Source, handler: tuple[str, str] | None = None) -> None:
        self.source = source
        self.handler = handler

    def __enter__(self) -> None:
        if self.handler is not None:
            self.source.emit("try:")
        self.source.depth += 1

    def __exit__(self, *exc_info: object) -> None:
        self.source.depth -= 1
        if self.handler is not None:
            error, part = self.handler
            self.source.emit(
                f"except {error} as exc:", f"    exc.path.insert(0, {part})", "    raise"
            )


def _label(kind: str, schema: MessageSchema, version: int, flexible: bool) -> str:
    style = "flexible" if flexible else "classic"
    return f"<pykraft.messages {kind} {schema.name} v{version} {style}>"


def generated_source(schema: MessageSchema, version: int, flexible: bool) -> str:
    """The generated reader and writer source of a struct (compiling them if needed)."""
    struct_reader(schema, version, flexible)
    struct_writer(schema, version, flexible)
    return "\n".join(
        text
        for (_, owner, ver, flex), text in _SOURCES.items()
        if owner is schema and ver == version and flex == flexible
    )


# --- fixed-width runs ---------------------------------------------------------------------


def _fixed_base(field_type: FieldType) -> Primitive | None:
    """The fixed-width primitive under a field type (through value mappings), if any."""
    while isinstance(field_type, MappedPrimitive):
        field_type = field_type.base
    if isinstance(field_type, FixedPrimitive | BoolPrimitive | UuidPrimitive):
        return field_type
    return None


def _base(spec: FieldSpec) -> Primitive:
    """The wire primitive of a field known to be fixed-width."""
    base = _fixed_base(spec.type)
    if base is None:
        raise TypeError(f"{spec.kafka_name} is not a fixed-width field")
    return base


def _struct_code(primitive: Primitive) -> tuple[str, int]:
    if isinstance(primitive, FixedPrimitive):
        return primitive.code, primitive.size
    if isinstance(primitive, BoolPrimitive):
        return "?", 1  # any non-zero byte unpacks as True, as Kafka reads it
    return "16s", 16


def _conversions(field_type: FieldType) -> list[MappedPrimitive]:
    """Value mappings from the wire primitive outwards."""
    chain = []
    while isinstance(field_type, MappedPrimitive):
        chain.append(field_type)
        field_type = field_type.base
    return chain[::-1]


def _is_fixed(spec: FieldSpec) -> bool:
    return _fixed_base(spec.type) is not None


def _runs(specs: list[FieldSpec], writable: bool) -> Iterator[list[FieldSpec]]:
    """Group consecutive fields into fixed-width runs and single other fields. A field with
    a fallible value mapping closes its run so errors come in wire order; the writer keeps
    mapped fields out of runs (their conversion may raise anything)."""
    run: list[FieldSpec] = []
    for spec in specs:
        mapped = isinstance(spec.type, MappedPrimitive)
        if _is_fixed(spec) and not (writable and mapped):
            run.append(spec)
            if mapped:
                yield run
                run = []
            continue
        if run:
            yield run
            run = []
        yield [spec]
    if run:
        yield run


def _var(spec: FieldSpec) -> str:
    return f"f_{spec.attr}"


# --- readers ------------------------------------------------------------------------------


def struct_reader(
    schema: MessageSchema, version: int, flexible: bool
) -> tuple[FieldReader, int]:
    """(reader, minimum encoded size) of a struct at a version and flexibility."""
    key = (schema, version, flexible)
    cached = _READERS.get(key)
    if cached is not None:
        return cached
    read, min_size, text = _ReaderGen(schema, version, flexible).build()
    _SOURCES[("read", schema, version, flexible)] = text
    _READERS[key] = (read, min_size)
    return read, min_size


class _ReaderGen:
    """Writes the source of one struct reader ``read(buf, pos, end) -> (value, pos)``."""

    def __init__(self, schema: MessageSchema, version: int, flexible: bool) -> None:
        self.schema, self.version, self.flexible = schema, version, flexible
        self.src = _Source()

    def build(self) -> tuple[FieldReader, int, str]:
        """(reader, minimum encoded size, source)."""
        schema, version, src = self.schema, self.version, self.src
        regular: list[FieldSpec] = []
        tagged: list[FieldSpec] = []
        for spec in schema.fields:
            if version not in spec.versions:
                continue
            if spec.is_tagged_in(version):
                if not self.flexible:
                    raise TypeError(
                        f"{schema.name}.{spec.kafka_name} is tagged in classic v{version}"
                    )
                tagged.append(spec)
            else:
                regular.append(spec)
        min_size = (1 if self.flexible else 0) + sum(
            _field_min_size(spec, version, self.flexible) for spec in regular
        )
        for run in _runs(regular, writable=False):
            if _is_fixed(run[0]):
                self.fixed_run(run, "end", named=True)
            else:
                with src.wrap_path(run[0].kafka_name, "FieldDecodeError"):
                    self.field(run[0], "end")
        for spec in tagged:
            src.emit(f"{_var(spec)} = {src.const('_D', spec.default)}")
        if self.flexible:
            self.tag_buffer(sorted(tagged, key=lambda spec: spec.tag or 0))
        values = [
            _var(spec) if version in spec.versions else src.const("_D", spec.default)
            for spec in schema.fields
        ]
        attrs = [spec.attr for spec in schema.fields]
        if schema.keeps_unknown_tags:
            values.append("unknown" if self.flexible else "()")
            attrs.append(UNKNOWN_TAGS)
        cls = src.const("_CLS", schema.cls)
        twin = _slot_twin(schema)
        if twin is not None:
            src.emit(f"obj = {src.const('_TWIN', twin)}()")
            src.emit(*(f"obj.{attr} = {value}" for attr, value in zip(attrs, values, strict=True)))
            src.emit(f"obj.__class__ = {cls}")
        elif schema.positional:
            src.emit(f"obj = {cls}({', '.join(values)})")
        else:
            keywords = (f"{attr}={value}" for attr, value in zip(attrs, values, strict=True))
            src.emit(f"obj = {cls}({', '.join(keywords)})")
        src.emit("return obj, pos")
        label = _label("reader", schema, version, self.flexible)
        read, text = src.compile(f"def read(buf, pos, end):  # {label}", label, "read")
        reader: FieldReader = read
        return reader, min_size, text

    def fixed_run(self, run: list[FieldSpec], end: str, *, named: bool) -> None:
        """One bounds check and one unpack for consecutive fixed-width fields. ``named``:
        errors carry their own field path; otherwise ``run`` is one field inside the
        caller's path ``try``."""
        src = self.src
        bases = [_base(spec) for spec in run]
        codes, sizes = zip(*(_struct_code(base) for base in bases), strict=True)
        total = sum(sizes)
        unpacker = src.const("_S", struct.Struct(">" + "".join(codes)).unpack_from)
        with src.block(f"if pos + {total} > {end}:"):
            if named:
                layout = tuple(
                    (spec.kafka_name, base.name, size)
                    for spec, base, size in zip(run, bases, sizes, strict=True)
                )
                src.emit(f"raise run_truncated({src.const('_RUN', layout)}, pos, {end})")
            else:
                assert len(run) == 1, "unnamed runs are single fields"
                src.emit(f"raise truncated({bases[0].name!r}, pos, {total}, {end})")
        src.emit(f"{', '.join(_var(spec) for spec in run)}, = {unpacker}(buf, pos)")
        offset = 0
        for spec, base, size in zip(run, bases, sizes, strict=True):
            var = _var(spec)
            if isinstance(base, UuidPrimitive):
                src.emit(f"{var} = uuid_cached({var}) or uuid_from_bytes({var})")
            for mapped in _conversions(spec.type):
                failure = f"mapped_error({mapped.name!r}, {var}, exc, pos + {offset})"
                if named:
                    failure = f"with_path({spec.kafka_name!r}, {failure})"
                src.emit(
                    "try:",
                    f"    {var} = {src.const('_MAP', mapped.decode)}({var})",
                    "except (ValueError, TypeError, OverflowError) as exc:",
                    f"    raise {failure} from None",
                )
            offset += size
        src.emit(f"pos += {total}")

    def field(self, spec: FieldSpec, end: str) -> None:
        """One field read up to ``end``, inside the caller's path ``try``."""
        nullable = self.version in spec.nullable_versions
        src, var, field_type = self.src, _var(spec), spec.type
        if _is_fixed(spec):
            self.fixed_run([spec], end, named=False)
        elif isinstance(field_type, VariablePrimitive):
            self.variable(field_type, var, end, nullable)
        elif isinstance(field_type, ArrayOf):
            self.array(field_type, var, end, nullable)
        elif isinstance(field_type, MessageSchema) and nullable:
            self.nullable_struct(field_type, var, end)
        else:
            read = (
                struct_reader(field_type, self.version, self.flexible)[0]
                if isinstance(field_type, MessageSchema)
                else field_type.reader(self.flexible, nullable)
            )
            src.emit(f"{var}, pos = {src.const('_R', read)}(buf, pos, {end})")

    def nullable_struct(self, schema: MessageSchema, var: str, end: str) -> None:
        """KIP-893: an int8 presence marker, negative for null, then the struct."""
        src = self.src
        read = src.const("_R", struct_reader(schema, self.version, self.flexible)[0])
        with src.block(f"if pos >= {end}:"):
            src.emit(f"raise truncated('nullable struct marker', pos, 1, {end})")
        with src.block(f"if buf[pos] >= {_ONE_BYTE}:"):
            src.emit(f"{var} = None", "pos += 1")
        with src.block("else:"):
            src.emit(f"{var}, pos = {read}(buf, pos + 1, {end})")

    def uvarint(self, var: str, end: str) -> None:
        """``var, pos = read_uvarint(buf, pos, end)`` with its one- and two-byte cases inline
        (a two-byte length is any record batch from 128 bytes to 16 KiB)."""
        src = self.src
        with src.block(f"if pos < {end} and ({var} := buf[pos]) < {_ONE_BYTE}:"):
            src.emit("pos += 1")
        with src.block(f"elif pos + 1 < {end} and (second := buf[pos + 1]) < {_ONE_BYTE}:"):
            src.emit(f"{var} = ({var} & {_ONE_BYTE - 1}) | second << 7", "pos += 2")
        with src.block("else:"):
            src.emit(f"{var}, pos = read_uvarint(buf, pos, {end})")

    def length(self, compact: bool, classic: struct.Struct, end: str) -> None:
        """Read a length or count prefix into ``n`` (compact: uvarint minus one)."""
        src = self.src
        if compact:
            self.uvarint("n", end)
            src.emit("n -= 1")
            return
        size = classic.size
        with src.block(f"if pos + {size} > {end}:"):
            what = "array length" if classic is INT32.struct else "length"
            src.emit(f"raise truncated({what!r}, pos, {size}, {end})")
        src.emit(f"n = {src.const('_L', classic.unpack_from)}(buf, pos)[0]", f"pos += {size}")

    def null_or_negative(self, var: str, nullable: bool, failure: str) -> None:
        """The ``n < 0`` branch: null when allowed, else ``failure``."""
        src = self.src
        with src.block("if n < 0:"):
            if nullable:
                with src.block("if n != -1:"):
                    src.emit(f"raise {failure}")
                src.emit(f"{var} = None")
            else:
                src.emit(f"raise {failure}")

    def variable(self, prim: VariablePrimitive, var: str, end: str, nullable: bool) -> None:
        src = self.src
        self.length(self.flexible and not prim.classic_only, prim.classic, end)
        self.null_or_negative(var, nullable, f"bad_length({prim.name!r}, n, pos)")
        with src.block("else:"):
            if prim.text:
                limit = MAX_STRING_BYTES
                with src.block(f"if n > {limit}:"):
                    src.emit(
                        f"raise FieldDecodeError(f'{prim.name} length {{n}} exceeds {limit}', pos)"
                    )
            src.emit("nxt = pos + n")
            with src.block(f"if nxt > {end}:"):
                src.emit(f"raise truncated({prim.name!r}, pos, n, {end})")
            if prim.text:
                src.emit(
                    "try:",
                    f"    {var} = buf[pos:nxt].decode('utf-8')",
                    "except UnicodeDecodeError as exc:",
                    "    raise FieldDecodeError("
                    "f'invalid UTF-8 in string: {exc.reason}', pos) from None",
                )
            else:
                src.emit(f"{var} = buf[pos:nxt]")
            src.emit("pos = nxt")

    def array(self, array: ArrayOf, var: str, end: str, nullable: bool) -> None:
        """Count checked against the remaining bytes (at the element's minimum size)
        before anything is allocated; fixed-width elements unpacked in one call."""
        src, element = self.src, array.element
        unit = max(1, _min_size(element, self.version, self.flexible))
        self.length(self.flexible, INT32.struct, end)
        self.null_or_negative(var, nullable, "bad_count(n, pos)")
        with src.block(f"elif n * {unit} > {end} - pos:"):
            src.emit(f"raise no_room(n, pos, {end})")
        with src.block("else:"):
            if isinstance(element, FixedPrimitive):
                small = src.const("_A", [s.unpack_from for s in _array_structs(element.code)])
                src.emit(
                    f"if n < {_SMALL_ARRAY}:",
                    f"    {var} = {small}[n](buf, pos)",
                    "else:",
                    f"    {var} = unpack_from(f'>{{n}}{element.code}', buf, pos)",
                    f"pos += n * {element.size}",
                )
            elif isinstance(element, UuidPrimitive):
                src.emit(f"{var} = read_uuids(buf, pos, n)", "pos += 16 * n")
            elif isinstance(element, MessageSchema):
                self.struct_items(element, var, end)
            else:
                read = src.const("_R", element.reader(self.flexible, False))
                src.emit(f"{var}, pos = read_items({read}, n, buf, pos, {end})")

    def struct_items(self, element: MessageSchema, var: str, end: str) -> None:
        """``n`` structs, the loop inline (a call less per array: most arrays of structs
        hold a few entries, many none)."""
        src = self.src
        read = src.const("_R", struct_reader(element, self.version, self.flexible)[0])
        src.emit("items = []")
        with src.wrap_index(), src.block("for index in range(n):"):
            src.emit(f"item, pos = {read}(buf, pos, {end})", "items.append(item)")
        src.emit(f"{var} = tuple(items)")

    def tag_buffer(self, tagged: list[FieldSpec]) -> None:
        """TAG_BUFFER: the common empty one in one byte test; otherwise entries in strictly
        ascending tag order, unknown ones kept (``unknown``) when the struct keeps them, else
        skipped, known ones filling exactly their size."""
        src = self.src
        keep = self.schema.keeps_unknown_tags
        if keep:
            src.emit("unknown = ()")
        with src.block("if pos < end and buf[pos] == 0:"):
            src.emit("pos += 1")
        with src.block("else:"):
            src.emit("count, pos = read_uvarint(buf, pos, end)", "prev = -1")
            if keep:
                src.emit("found = []")
            with src.block("for _ in range(count):"):
                src.emit("start = pos")
                self.uvarint("tag", "end")
                self.uvarint("size", "end")
                with src.block("if tag <= prev:"):
                    src.emit(
                        "raise FieldDecodeError(f'tagged field {tag} follows tag {prev}', start)"
                    )
                src.emit("prev = tag", "stop = pos + size")
                with src.block("if stop > end:"):
                    src.emit("raise truncated(f'tagged field {tag}', pos, size, end)")
                keyword = "if"
                for spec in tagged:
                    with src.block(f"{keyword} tag == {spec.tag}:"):
                        src.emit("body = pos")
                        with src.wrap_path(spec.kafka_name, "FieldDecodeError"):
                            self.field(spec, "stop")
                            with src.block("if pos != stop:"):
                                src.emit(
                                    "raise FieldDecodeError(f'tagged field {tag} declares "
                                    "{size} bytes but holds {pos - body}', pos)"
                                )
                    keyword = "elif"
                if keep:
                    with src.block("else:") if tagged else contextlib.nullcontext():
                        src.emit("found.append((tag, buf[pos:stop]))")
                src.emit("pos = stop")
            if keep:
                src.emit("unknown = tuple(found)")


def _slot_twin(schema: MessageSchema) -> type | None:
    """A plain class with the same slots as a frozen slots dataclass, or None.

    Why: a frozen dataclass's ``__init__`` stores each field through
    ``object.__setattr__``, which is most of what decoding a small record costs. When that
    ``__init__`` is the one dataclasses generated (it alone refers to
    ``__dataclass_builtins_object__``), there is no ``__post_init__``, and every field is an
    ``__init__`` argument, the reader may instead fill the twin with ordinary attribute
    stores and switch the object's ``__class__``: CPython allows that between classes of
    identical layout, and the result is a genuine instance with the same slot values, four
    times faster. The switch is tried once here; any refusal keeps the normal constructor.
    """
    cls = schema.cls
    code = getattr(cls.__dict__.get("__init__"), "__code__", None)
    if (
        code is None
        or "__dataclass_builtins_object__" not in code.co_freevars
        or hasattr(cls, "__post_init__")
        or not dataclasses.is_dataclass(cls)
        or cls.__bases__ != (object,)
    ):
        return None
    declared = dataclasses.fields(cls)
    names = tuple(spec.attr for spec in schema.fields)
    if schema.keeps_unknown_tags:
        names += (UNKNOWN_TAGS,)
    if tuple(f.name for f in declared) != names or not all(f.init for f in declared):
        return None
    if cls.__dict__.get("__slots__") != names:
        return None
    twin = type(f"{cls.__name__}Slots", (object,), {"__slots__": names})
    trial = twin()
    for name in names:
        setattr(trial, name, None)
    try:
        trial.__class__ = cls
    except TypeError:  # pragma: no cover - layouts differ in a way the checks above missed
        return None
    return twin


def _field_min_size(spec: FieldSpec, version: int, flexible: bool) -> int:
    """Fewest bytes a field takes: a nullable struct may be its one-byte null marker."""
    if isinstance(spec.type, MessageSchema) and version in spec.nullable_versions:
        return 1
    return _min_size(spec.type, version, flexible)


def _min_size(field_type: FieldType, version: int, flexible: bool) -> int:
    """Fewest bytes a value of the type takes (bounds array counts before allocating)."""
    if isinstance(field_type, MessageSchema):
        return struct_reader(field_type, version, flexible)[1]
    if isinstance(field_type, ArrayOf):
        return 1 if flexible else 4
    return field_type.min_size(flexible)


# --- writers ------------------------------------------------------------------------------


def struct_writer(schema: MessageSchema, version: int, flexible: bool) -> FieldWriter:
    """A writer of a struct at a version and flexibility."""
    key = (schema, version, flexible)
    cached = _WRITERS.get(key)
    if cached is not None:
        return cached
    write, text = _WriterGen(schema, version, flexible).build()
    _SOURCES[("write", schema, version, flexible)] = text
    _WRITERS[key] = write
    return write


def field_writer(
    field_type: FieldType, version: int, flexible: bool, nullable: bool
) -> FieldWriter:
    """The general writer of one field type (slow paths and uncommon types)."""
    if isinstance(field_type, MessageSchema):
        write_struct = struct_writer(field_type, version, flexible)
        return _nullable_struct_writer(write_struct) if nullable else write_struct
    if isinstance(field_type, ArrayOf):
        write_item = field_writer(field_type.element, version, flexible, False)
        return _array_writer(write_item, flexible, nullable)
    return field_type.writer(flexible, nullable)


class _WriterGen:
    """Writes the source of one struct writer ``write(out, obj) -> None``."""

    def __init__(self, schema: MessageSchema, version: int, flexible: bool) -> None:
        self.schema, self.version, self.flexible = schema, version, flexible
        self.src = _Source()

    def build(self) -> tuple[FieldWriter, str]:
        schema, version, src = self.schema, self.version, self.src
        cls = src.const("_CLS", schema.cls)
        with src.block(f"if type(obj) is not {cls} and not isinstance(obj, {cls}):"):
            src.emit(
                f"raise FieldEncodeError(f'expected {schema.name}, got {{type(obj).__name__}}')"
            )
        regular: list[FieldSpec] = []
        tagged: list[FieldSpec] = []
        for spec in schema.fields:
            if version not in spec.versions:
                if spec.ignorable:
                    continue
                with src.block(f"if obj.{spec.attr} != {src.const('_D', spec.default)}:"):
                    src.emit(f"raise absent({spec.kafka_name!r}, {version})")
            elif spec.is_tagged_in(version):
                tagged.append(spec)
            else:
                regular.append(spec)
        for run in _runs(regular, writable=True):
            src.emit(*(f"{_var(spec)} = obj.{spec.attr}" for spec in run))
            if _is_fixed(run[0]):
                self.fixed_run(run, "out", named=True)
            else:
                with src.wrap_path(run[0].kafka_name, "FieldEncodeError"):
                    self.field(run[0], "out")
        if self.flexible:
            self.tag_buffer(sorted(tagged, key=lambda spec: spec.tag or 0))
        elif schema.keeps_unknown_tags:
            with src.block(f"if obj.{UNKNOWN_TAGS}:"):
                src.emit(f"raise tags_in_classic({version})")
        label = _label("writer", schema, version, self.flexible)
        write, text = src.compile(f"def write(out, obj):  # {label}", label, "write")
        writer: FieldWriter = write
        return writer, text

    def general(self, spec: FieldSpec) -> str:
        """Name of the general writer of a field, for slow paths."""
        nullable = self.version in spec.nullable_versions
        return self.src.const("_W", field_writer(spec.type, self.version, self.flexible, nullable))

    def fixed_run(self, run: list[FieldSpec], out: str, *, named: bool) -> None:
        """One ``struct.pack`` when every value has its plain type; otherwise (or when a
        value is out of range) the field-by-field writers produce the bytes or the error.
        ``named``: the slow path names the failing field; otherwise ``run`` is one field
        inside the caller's path ``try``."""
        src = self.src
        codes, checks, args = [], [], []
        for spec in run:
            var, base = _var(spec), _fixed_base(spec.type)
            codes.append(_struct_code(_base(spec))[0])
            if isinstance(base, BoolPrimitive):
                checks.append(f"({var} is True or {var} is False)")
                args.append(var)
            elif isinstance(base, UuidPrimitive):
                checks.append(f"type({var}) is UUID")
                args.append(f"{var}.bytes")
            else:
                plain = "float" if isinstance(base, FixedPrimitive) and base.code == "d" else "int"
                checks.append(f"type({var}) is {plain}")
                args.append(var)
        pack = src.const("_S", struct.Struct(">" + "".join(codes)).pack)
        if named:
            writers = tuple(
                (spec.kafka_name, field_writer(spec.type, self.version, self.flexible, False))
                for spec in run
            )
            slow = src.const("_RUN", _write_run(writers))
        else:
            assert len(run) == 1, "unnamed runs are single fields"
            slow = self.general(run[0])
        slow_call = f"{slow}({out}, {', '.join(_var(spec) for spec in run)})"
        with src.block(f"if {' and '.join(checks)}:"):
            src.emit(
                "try:",
                f"    {out} += {pack}({', '.join(args)})",
                "except struct_error:",
                f"    {slow_call}",
            )
        with src.block("else:"):
            src.emit(slow_call)

    def field(self, spec: FieldSpec, out: str) -> None:
        """One field whose value is loaded, inside the caller's path ``try``: short ASCII
        strings and small arrays of plain numbers or UUIDs inline, the rest by the general
        writer."""
        src, var, field_type = self.src, _var(spec), spec.type
        if _is_fixed(spec) and not isinstance(field_type, MappedPrimitive):
            self.fixed_run([spec], out, named=False)
            return
        general = self.general(spec)
        if isinstance(field_type, VariablePrimitive) and field_type.text:
            compact = self.flexible and not field_type.classic_only
            limit = _SMALL_ARRAY if compact else MAX_STRING_BYTES + 1
            with src.block(f"if type({var}) is str and len({var}) < {limit} and {var}.isascii():"):
                self.write_count(f"len({var})", compact, field_type.classic, out)
                src.emit(f"{out} += {var}.encode('ascii')")
        elif isinstance(field_type, ArrayOf) and isinstance(field_type.element, FixedPrimitive):
            code = field_type.element.code
            plain = src.const("_T", frozenset({float})) if code == "d" else "INTS"
            packs = src.const("_P", [s.pack for s in _array_structs(code)])
            with src.block(
                f"if (type({var}) is tuple or type({var}) is list) and len({var}) < "
                f"{_SMALL_ARRAY} and {plain}.issuperset(map(type, {var})):"
            ):
                src.emit(
                    "try:",
                    f"    data = {packs}[len({var})](*{var})",
                    "except struct_error:",
                    f"    {general}({out}, {var})",
                )
                with src.block("else:"):
                    self.write_count(f"len({var})", self.flexible, INT32.struct, out)
                    src.emit(f"{out} += data")
        elif isinstance(field_type, ArrayOf) and isinstance(field_type.element, UuidPrimitive):
            with src.block(
                f"if (type({var}) is tuple or type({var}) is list) and len({var}) < "
                f"{_SMALL_ARRAY} and UUIDS.issuperset(map(type, {var})):"
            ):
                self.write_count(f"len({var})", self.flexible, INT32.struct, out)
                src.emit(f"{out} += b''.join([value.bytes for value in {var}])")
        else:
            src.emit(f"{general}({out}, {var})")
            return
        with src.block("else:"):
            src.emit(f"{general}({out}, {var})")

    def write_count(self, expr: str, compact: bool, classic: struct.Struct, out: str) -> None:
        """A length or count known to be small: one byte when compact."""
        if compact:
            self.src.emit(f"{out}.append({expr} + 1)")
        else:
            self.src.emit(f"{out} += {self.src.const('_L', classic.pack)}({expr})")

    def tag_buffer(self, tagged: list[FieldSpec]) -> None:
        """Tagged fields that differ from their default, ascending, each as tag, size and
        payload; a single zero byte when none does."""
        src = self.src
        keep = self.schema.keeps_unknown_tags
        if keep:
            src.emit(f"unknown = obj.{UNKNOWN_TAGS}")
        if not tagged:
            if keep:
                with src.block("if unknown:"):
                    src.emit("write_merged_tags(out, 0, b'', unknown)")
            with src.block("else:") if keep else contextlib.nullcontext():
                src.emit("out.append(0)")
            return
        src.emit("count = 0", "tags = bytearray()")
        for spec in tagged:
            var = _var(spec)
            src.emit(f"{var} = obj.{spec.attr}")
            with src.block(f"if {var} != {src.const('_D', spec.default)}:"):
                src.emit("payload = bytearray()")
                with src.wrap_path(spec.kafka_name, "FieldEncodeError"):
                    self.field(spec, "payload")
                src.emit(f"tags += {src.const('_TAG', encode_uvarint(spec.tag or 0))}")
                self.uvarint("len(payload)", "tags")
                src.emit("tags += payload", "count += 1")
        if keep:
            with src.block("if unknown:"):
                src.emit("write_merged_tags(out, count, tags, unknown)")
        with src.block("else:") if keep else contextlib.nullcontext():
            self.uvarint("count", "out")
            src.emit("out += tags")

    def uvarint(self, expr: str, out: str) -> None:
        """Append a uvarint, its one-byte case inline."""
        with self.src.block(f"if {expr} < {_ONE_BYTE}:"):
            self.src.emit(f"{out}.append({expr})")
        with self.src.block("else:"):
            self.src.emit(f"{out} += encode_uvarint({expr})")
