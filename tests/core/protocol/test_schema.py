"""Schema types: JSON (against every real schemaString in the test tables), Arrow
mapping, evolution (mergeSchema) and write enforcement."""

from __future__ import annotations

import json
import string

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from data_paths import TESTDATA
from delta_pyspark.core.protocol.schema import (
    BINARY,
    BYTE,
    DATE,
    DOUBLE,
    FLOAT,
    INTEGER,
    LONG,
    SHORT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    VARIANT,
    VOID,
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    data_type_from_json,
    data_type_to_json,
    parse_schema_string,
    schema_to_string,
    schema_tree_string,
)
from delta_pyspark.core.protocol.schema_arrow import (
    from_arrow_schema,
    from_arrow_type,
    to_arrow_schema,
    to_arrow_type,
)
from delta_pyspark.core.protocol.schema_evolution import (
    check_write_compatible,
    is_type_widening_supported,
    merge_schemas,
)
from delta_pyspark.exceptions import (
    CorruptLogError,
    DeltaAnalysisException,
    SchemaMismatchError,
    UnsupportedTableFeatureError,
)


def _real_schema_strings() -> list[tuple[str, str]]:
    """(log file, schemaString) for every distinct schema in the test tables' logs."""
    found: dict[str, str] = {}
    for log in sorted(TESTDATA.glob("**/_delta_log/*.json")):
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                action = json.loads(line)
            except ValueError:
                continue
            s = (
                (action.get("metaData") or {}).get("schemaString")
                if isinstance(action, dict)
                else None
            )
            if s and s not in found:
                found[s] = str(log.relative_to(TESTDATA))
    return [(where, s) for s, where in found.items()]


REAL_SCHEMAS = _real_schema_strings()
GEO_FREE = [(w, s) for w, s in REAL_SCHEMAS if "geometry(" not in s and "geography(" not in s]


def strip_metadata(dt: DataType) -> DataType:
    if isinstance(dt, StructType):
        return StructType(
            tuple(StructField(f.name, strip_metadata(f.type), f.nullable) for f in dt.fields)
        )
    if isinstance(dt, ArrayType):
        return ArrayType(strip_metadata(dt.element_type), dt.contains_null)
    if isinstance(dt, MapType):
        return MapType(
            strip_metadata(dt.key_type), strip_metadata(dt.value_type), dt.value_contains_null
        )
    return dt


# ------------------------------------------------------------- real schema strings


def test_found_the_real_schemas() -> None:
    assert len(REAL_SCHEMAS) > 50


@pytest.mark.parametrize(("where", "schema_string"), GEO_FREE, ids=[w for w, _ in GEO_FREE])
def test_real_schema_string_round_trips(where: str, schema_string: str) -> None:
    schema = parse_schema_string(schema_string)
    out = schema_to_string(schema)
    assert parse_schema_string(out) == schema
    # Every writer of these tables (delta-spark, delta-rs, kernel) used Spark's layout:
    # we reproduce the exact bytes, so a schema we rewrite is unchanged in the log.
    assert out == schema_string
    assert json.loads(out) == json.loads(schema_string)


@pytest.mark.parametrize(("where", "schema_string"), GEO_FREE, ids=[w for w, _ in GEO_FREE])
def test_real_schema_arrow_round_trip(where: str, schema_string: str) -> None:
    schema = parse_schema_string(schema_string)
    assert from_arrow_schema(to_arrow_schema(schema)) == strip_metadata(schema)


def test_geospatial_types_need_their_feature() -> None:
    s = TESTDATA / "kernel/table-with-geo/_delta_log/00000000000000000000.json"
    schema_string = json.loads(s.read_text().splitlines()[1])["metaData"]["schemaString"]
    with pytest.raises(UnsupportedTableFeatureError) as e:
        parse_schema_string(schema_string)
    assert e.value.features == ["geospatial"]
    assert "geometry(OGC:CRS84)" in str(e.value)


def test_golden_primitives_schema() -> None:
    log = TESTDATA / "golden/data-reader-primitives/delta/_delta_log/00000000000000000000.json"
    for line in log.read_text().splitlines():
        action = json.loads(line)
        if "metaData" in action:
            schema = parse_schema_string(action["metaData"]["schemaString"])
    types = {f.name: f.type for f in schema}
    assert types["as_int"] == INTEGER
    assert types["as_long"] == LONG
    assert types["as_byte"] == BYTE
    assert types["as_short"] == SHORT
    assert types["as_boolean"] == PrimitiveType("boolean")
    assert types["as_float"] == FLOAT
    assert types["as_double"] == DOUBLE
    assert types["as_string"] == STRING
    assert types["as_binary"] == BINARY
    assert types["as_big_decimal"] == DecimalType(1, 0)


# --------------------------------------------------------------------- JSON parsing

SPEC_EXAMPLE = """{
  "type" : "struct",
  "fields" : [ {
    "name" : "a", "type" : "integer", "nullable" : false, "metadata" : { }
  }, {
    "name" : "b",
    "type" : {"type" : "struct", "fields" : [ {
        "name" : "d", "type" : "integer", "nullable" : false, "metadata" : { } } ] },
    "nullable" : true, "metadata" : { }
  }, {
    "name" : "c",
    "type" : {"type" : "array", "elementType" : "integer", "containsNull" : false},
    "nullable" : true, "metadata" : { }
  }, {
    "name" : "e",
    "type" : {"type" : "array", "elementType" : {"type" : "struct", "fields" : [ {
          "name" : "d", "type" : "integer", "nullable" : false, "metadata" : { } } ] },
      "containsNull" : true },
    "nullable" : true, "metadata" : { }
  }, {
    "name" : "f",
    "type" : {"type" : "map", "keyType" : "string", "valueType" : "string",
      "valueContainsNull" : true },
    "nullable" : true, "metadata" : { }
  } ]
}"""

SPEC_TREE = """root
 |-- a: integer (nullable = false)
 |-- b: struct (nullable = true)
 |    |-- d: integer (nullable = false)
 |-- c: array (nullable = true)
 |    |-- element: integer (containsNull = false)
 |-- e: array (nullable = true)
 |    |-- element: struct (containsNull = true)
 |    |    |-- d: integer (nullable = false)
 |-- f: map (nullable = true)
 |    |-- key: string
 |    |-- value: string (valueContainsNull = true)"""


def test_spec_example_parses_and_prints_like_spark() -> None:
    schema = parse_schema_string(SPEC_EXAMPLE)
    d = StructType((StructField("d", INTEGER, False),))
    assert schema == StructType(
        (
            StructField("a", INTEGER, False),
            StructField("b", d, True),
            StructField("c", ArrayType(INTEGER, False)),
            StructField("e", ArrayType(d, True)),
            StructField("f", MapType(STRING, STRING, True)),
        )
    )
    assert schema_tree_string(schema) == SPEC_TREE
    assert schema_to_string(schema).startswith(
        '{"type":"struct","fields":[{"name":"a","type":"integer","nullable":false,"metadata":{}}'
    )


def test_type_json_spellings() -> None:
    assert data_type_from_json("decimal(38,18)") == DecimalType(38, 18)
    assert data_type_from_json("decimal( 5 , 2 )") == DecimalType(5, 2)
    assert data_type_from_json("decimal") == DecimalType(10, 0)
    assert data_type_to_json(DecimalType(5, 2)) == "decimal(5,2)"
    # The spec's variant example writes the type as an object; Spark writes a string.
    assert data_type_from_json({"type": "variant"}) == VARIANT
    assert data_type_to_json(VARIANT) == "variant"
    assert data_type_from_json("void") == VOID
    assert data_type_from_json("timestamp_ntz") == TIMESTAMP_NTZ


def test_metadata_survives_exactly() -> None:
    meta = {
        "delta.columnMapping.id": 5,
        "comment": 'ünïcode "quoted"',
        "delta.typeChanges": [{"fromType": "short", "toType": "integer"}],
        "nested": {"x": 1.5, "flag": True, "list": [1, 2]},
    }
    schema = StructType((StructField("x", LONG, True, meta),))
    back = parse_schema_string(schema_to_string(schema))
    assert back.field("x").metadata == meta
    assert "ünïcode" in schema_to_string(schema)  # raw UTF-8, like Spark


def test_missing_metadata_defaults_to_empty() -> None:
    schema = parse_schema_string(
        '{"type":"struct","fields":[{"name":"a","type":"long","nullable":true}]}'
    )
    assert schema.field("a").metadata == {}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{not json", "not valid JSON"),
        ('"string"', "struct"),
        ('{"type":"struct","fields":[{"name":"a","type":"bogus","nullable":true}]}', "bogus"),
        ('{"type":"struct","fields":[{"name":"a","type":"long"}]}', "nullable"),
        ('{"type":"struct","fields":[{"type":"long","nullable":true}]}', "name"),
        ('{"type":"struct","fields":[{"name":"a","type":"decimal(40,2)","nullable":true}]}', "40"),
        (
            '{"type":"struct","fields":[{"name":"a","type":{"type":"array","elementType":"long"},'
            '"nullable":true}]}',
            "containsNull",
        ),
        (
            '{"type":"struct","fields":[{"name":"a","type":{"type":"weird"},"nullable":true}]}',
            "weird",
        ),
        (
            '{"type":"struct","fields":[{"name":"A","type":"long","nullable":true},'
            '{"name":"a","type":"long","nullable":true}]}',
            "duplicate",
        ),
    ],
)
def test_malformed_schema_strings(text: str, needle: str) -> None:
    with pytest.raises(CorruptLogError) as e:
        parse_schema_string(text)
    assert needle in str(e.value)


def test_struct_api() -> None:
    schema = StructType(
        [StructField("Id", LONG, False), StructField("name", STRING, True, {"comment": "x"})]
    )
    assert isinstance(schema.fields, tuple)
    assert schema.field_names == ["Id", "name"]
    assert len(schema) == 2
    assert [f.name for f in schema] == ["Id", "name"]
    assert schema.field("Id").type == LONG
    with pytest.raises(KeyError):
        schema.field("id")
    assert schema.find_field("id").name == "Id"
    assert schema.find_field("id", case_sensitive=True) is None
    assert schema.find_field("missing") is None
    assert StructType.from_json(schema.to_json()) == schema
    # Metadata counts for equality but not for hashing.
    plain = StructField("name", STRING, True)
    assert plain != schema.field("name")
    assert hash(plain) == hash(schema.field("name"))
    assert {schema: 1}[StructType.from_json(schema.to_json())] == 1


def test_invalid_types_are_rejected_on_construction() -> None:
    with pytest.raises(ValueError):
        PrimitiveType("int")
    with pytest.raises(ValueError):
        DecimalType(39, 0)
    with pytest.raises(ValueError):
        DecimalType(5, 6)


# ------------------------------------------------------------------ Arrow mapping


def test_arrow_types() -> None:
    expected = {
        STRING: pa.string(),
        LONG: pa.int64(),
        INTEGER: pa.int32(),
        SHORT: pa.int16(),
        BYTE: pa.int8(),
        FLOAT: pa.float32(),
        DOUBLE: pa.float64(),
        PrimitiveType("boolean"): pa.bool_(),
        BINARY: pa.binary(),
        DATE: pa.date32(),
        TIMESTAMP: pa.timestamp("us", tz="UTC"),
        TIMESTAMP_NTZ: pa.timestamp("us"),
        DecimalType(38, 10): pa.decimal128(38, 10),
    }
    for dt, arrow in expected.items():
        assert to_arrow_type(dt) == arrow
        assert from_arrow_type(arrow) == dt


def test_variant_layout_matches_spark_files() -> None:
    t = to_arrow_type(VARIANT)
    assert [(f.name, f.type, f.nullable) for f in t] == [
        ("value", pa.binary(), False),
        ("metadata", pa.binary(), False),
    ]
    assert from_arrow_type(t) == VARIANT
    table = TESTDATA / "kernel/unshredded-variant"
    files = sorted(table.glob("*.parquet"))
    import pyarrow.parquet as pq

    assert pq.read_schema(files[0]).field("v").type == t


def test_nested_arrow_types_and_nullability() -> None:
    dt = MapType(STRING, ArrayType(StructType((StructField("x", LONG, False),)), False), True)
    t = to_arrow_type(dt)
    assert pa.types.is_map(t)
    assert not t.key_field.nullable
    assert t.item_field.nullable
    assert not t.item_type.value_field.nullable
    assert not t.item_type.value_type.field("x").nullable
    assert from_arrow_type(t) == dt


def test_field_ids_come_from_column_mapping_ids() -> None:
    schema = StructType(
        (
            StructField("a", LONG, True, {"delta.columnMapping.id": 7}),
            StructField(
                "b", StructType((StructField("c", LONG, True, {"delta.columnMapping.id": 9}),))
            ),
        )
    )
    arrow = to_arrow_schema(schema)
    assert arrow.field("a").metadata == {b"PARQUET:field_id": b"7"}
    assert arrow.field("b").metadata is None
    assert arrow.field("b").type.field("c").metadata == {b"PARQUET:field_id": b"9"}


@pytest.mark.parametrize(
    ("arrow", "expected"),
    [
        (pa.large_string(), STRING),
        (pa.string_view(), STRING),
        (pa.large_binary(), BINARY),
        (pa.binary(16), BINARY),
        (pa.timestamp("ns"), TIMESTAMP_NTZ),
        (pa.timestamp("ms", tz="America/New_York"), TIMESTAMP),
        (pa.timestamp("s", tz="UTC"), TIMESTAMP),
        (pa.date64(), DATE),
        (pa.large_list(pa.int32()), ArrayType(INTEGER, True)),
        (pa.list_(pa.field("item", pa.int32(), nullable=False)), ArrayType(INTEGER, False)),
        (pa.dictionary(pa.int32(), pa.string()), STRING),
        (pa.decimal256(20, 3), DecimalType(20, 3)),
        (pa.null(), VOID),
    ],
)
def test_from_arrow_accepts_equivalent_types(arrow: pa.DataType, expected: DataType) -> None:
    assert from_arrow_type(arrow) == expected


@pytest.mark.parametrize(
    "arrow",
    [
        pa.uint8(),
        pa.uint64(),
        pa.float16(),
        pa.duration("s"),
        pa.time64("us"),
        pa.decimal256(50, 2),
    ],
)
def test_from_arrow_rejects_types_delta_lacks(arrow: pa.DataType) -> None:
    with pytest.raises(DeltaAnalysisException):
        from_arrow_type(arrow)


# -------------------------------------------------------------- property tests

_names = st.text(alphabet=string.ascii_letters + string.digits + " _-.,;{}()\n\t=é中", min_size=1)
_primitives = st.sampled_from(
    [STRING, LONG, INTEGER, SHORT, BYTE, FLOAT, DOUBLE, PrimitiveType("boolean"), BINARY, DATE,
     TIMESTAMP, TIMESTAMP_NTZ, VARIANT]
)  # fmt: skip
_decimals = st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: DecimalType(p, s)))
_metadata = st.dictionaries(
    st.text(min_size=1, max_size=10),
    st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(), st.booleans()),
    max_size=3,
)


def _structs(children: st.SearchStrategy[DataType], metadata: bool) -> st.SearchStrategy:
    fields = st.lists(
        st.tuples(_names, children, st.booleans(), _metadata if metadata else st.just({})),
        min_size=1,
        max_size=4,
        unique_by=lambda t: t[0].lower(),
    )
    return fields.map(lambda fs: StructType(tuple(StructField(*f) for f in fs)))


def _types(metadata: bool) -> st.SearchStrategy[DataType]:
    return st.recursive(
        st.one_of(_primitives, _decimals),
        lambda children: st.one_of(
            st.builds(ArrayType, children, st.booleans()),
            st.builds(MapType, children, children, st.booleans()),
            _structs(children, metadata),
        ),
        max_leaves=12,
    )


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(_structs(_types(metadata=True), metadata=True))
def test_schema_json_round_trip(schema: StructType) -> None:
    text = schema_to_string(schema)
    assert parse_schema_string(text) == schema
    assert schema_to_string(parse_schema_string(text)) == text


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(_structs(_types(metadata=False), metadata=False))
def test_schema_arrow_round_trip(schema: StructType) -> None:
    assert from_arrow_schema(to_arrow_schema(schema)) == schema


# ----------------------------------------------------------------- type widening


@pytest.mark.parametrize(
    ("src", "dst", "ok", "automatic"),
    [
        (BYTE, SHORT, True, True),
        (BYTE, LONG, True, True),
        (INTEGER, LONG, True, True),
        (LONG, INTEGER, False, False),
        (FLOAT, DOUBLE, True, True),
        (INTEGER, DOUBLE, True, False),
        (LONG, DOUBLE, False, False),
        (DATE, TIMESTAMP_NTZ, True, True),
        (DATE, TIMESTAMP, False, False),
        (DecimalType(10, 2), DecimalType(12, 4), True, True),
        (DecimalType(10, 2), DecimalType(12, 5), False, False),
        (DecimalType(10, 2), DecimalType(10, 1), False, False),
        (INTEGER, DecimalType(10, 0), True, False),
        (INTEGER, DecimalType(11, 2), False, False),
        (LONG, DecimalType(20, 0), True, False),
        (LONG, DecimalType(19, 0), False, False),
        (STRING, LONG, False, False),
    ],
)
def test_type_widening_rules(src: DataType, dst: DataType, ok: bool, automatic: bool) -> None:
    assert is_type_widening_supported(src, dst) is ok
    assert is_type_widening_supported(src, dst, automatic=True) is automatic


# ------------------------------------------------------------------ merge_schemas


def s(*fields: StructField) -> StructType:
    return StructType(fields)


def test_merge_appends_new_columns_nullable_and_keeps_table_casing() -> None:
    table = s(StructField("Id", LONG, False, {"comment": "key"}), StructField("v", STRING))
    data = s(
        StructField("id", LONG, True),
        StructField("extra", DOUBLE, False),
        StructField("V", STRING),
    )
    merged = merge_schemas(table, data)
    assert merged == s(
        StructField("Id", LONG, False, {"comment": "key"}),
        StructField("v", STRING),
        StructField("extra", DOUBLE, True),
    )


def test_merge_is_identity_for_the_same_schema() -> None:
    table = parse_schema_string(SPEC_EXAMPLE)
    assert merge_schemas(table, table) == table
    assert merge_schemas(table, s()) == table


def test_merge_nested_structs_in_arrays_and_maps() -> None:
    inner = s(StructField("a", LONG))
    table = s(
        StructField("st", inner),
        StructField("arr", ArrayType(inner, True)),
        StructField("m", MapType(STRING, inner, True)),
    )
    wider = s(StructField("a", LONG), StructField("b", s(StructField("c", STRING, False)), False))
    data = s(
        StructField("st", wider),
        StructField("arr", ArrayType(wider, False)),
        StructField("m", MapType(STRING, wider, False)),
    )
    merged = merge_schemas(table, data)
    expected_inner = s(StructField("a", LONG), StructField("b", s(StructField("c", STRING)), True))
    assert merged == s(
        StructField("st", expected_inner),
        StructField("arr", ArrayType(expected_inner, True)),
        StructField("m", MapType(STRING, expected_inner, True)),
    )


def test_merge_widens_and_records_type_changes() -> None:
    table = s(
        StructField(
            "i", INTEGER, True, {"delta.typeChanges": [{"fromType": "byte", "toType": "integer"}]}
        ),
        StructField("arr", ArrayType(FLOAT, True)),
        StructField("d", DecimalType(10, 2)),
    )
    data = s(
        StructField("i", LONG),
        StructField("arr", ArrayType(DOUBLE, True)),
        StructField("d", DecimalType(12, 3)),
    )
    merged = merge_schemas(table, data)
    assert merged.field("i").type == LONG
    assert merged.field("i").metadata["delta.typeChanges"] == [
        {"fromType": "byte", "toType": "integer"},
        {"fromType": "integer", "toType": "long"},
    ]
    assert merged.field("arr").type == ArrayType(DOUBLE, True)
    assert merged.field("arr").metadata["delta.typeChanges"] == [
        {"fromType": "float", "toType": "double", "fieldPath": "element"}
    ]
    assert merged.field("d").type == DecimalType(12, 3)
    # The recorded schema still serialises and parses.
    assert parse_schema_string(schema_to_string(merged)) == merged


def test_merge_keeps_wider_table_types() -> None:
    table = s(StructField("l", LONG), StructField("d", DOUBLE), StructField("t", TIMESTAMP_NTZ))
    data = s(StructField("l", BYTE), StructField("d", INTEGER), StructField("t", DATE))
    assert merge_schemas(table, data, allow_type_widening=False) == table


def test_merge_void_columns() -> None:
    table = s(StructField("a", VOID), StructField("b", LONG))
    data = s(StructField("a", STRING), StructField("b", VOID))
    assert merge_schemas(table, data, allow_type_widening=False) == s(
        StructField("a", STRING), StructField("b", LONG)
    )


def test_merge_without_widening_names_column_and_types() -> None:
    table = s(StructField("outer", s(StructField("n", INTEGER))))
    data = s(StructField("outer", s(StructField("n", LONG))))
    with pytest.raises(SchemaMismatchError) as e:
        merge_schemas(table, data, allow_type_widening=False)
    msg = str(e.value)
    assert "outer.n" in msg and "integer" in msg and "long" in msg
    assert "delta.enableTypeWidening" in msg


def test_merge_rejects_duplicate_data_columns() -> None:
    with pytest.raises(SchemaMismatchError) as e:
        merge_schemas(s(StructField("a", LONG)), s(StructField("a", LONG), StructField("A", LONG)))
    assert "'A'" in str(e.value)


@pytest.mark.parametrize(
    ("current", "update"),
    [
        (STRING, LONG),
        (LONG, STRING),
        (INTEGER, DOUBLE),  # supported widening, but never applied automatically
        (DATE, TIMESTAMP),
        (DecimalType(10, 2), DecimalType(10, 3)),
        (ArrayType(LONG), LONG),
        (s(StructField("a", LONG)), MapType(STRING, LONG)),
    ],
)
def test_merge_rejects_incompatible_types(current: DataType, update: DataType) -> None:
    with pytest.raises(SchemaMismatchError) as e:
        merge_schemas(s(StructField("c", current)), s(StructField("c", update)))
    assert "'c'" in str(e.value)


# ---------------------------------------------------------- check_write_compatible


def test_write_compatible_accepts_matching_and_subset_data() -> None:
    table = parse_schema_string(SPEC_EXAMPLE)
    check_write_compatible(table, table)
    nullable_only = s(*(f for f in table if f.nullable))
    check_write_compatible(table, s(StructField("a", INTEGER, False)))
    check_write_compatible(
        table, s(StructField("a", INTEGER, True), *[f for f in nullable_only if f.name != "b"])
    )
    # delta-spark lets narrower INT32-family integers and void columns through.
    check_write_compatible(table, s(StructField("a", SHORT), StructField("c", ArrayType(BYTE))))
    check_write_compatible(table, s(StructField("a", INTEGER), StructField("f", VOID)))


def _mismatch(table: StructType, data: StructType) -> str:
    with pytest.raises(SchemaMismatchError) as e:
        check_write_compatible(table, data)
    return str(e.value)


def test_write_compatible_rejects_extra_column() -> None:
    table = s(StructField("a", LONG))
    msg = _mismatch(table, s(StructField("a", LONG), StructField("new_col", STRING)))
    assert "'new_col'" in msg
    assert "mergeSchema" in msg and "overwriteSchema" in msg
    assert "Table schema:\nroot\n |-- a: long (nullable = true)" in msg
    assert "Data schema:\nroot\n |-- a: long (nullable = true)\n |-- new_col: string" in msg


def test_write_compatible_rejects_case_only_difference() -> None:
    msg = _mismatch(s(StructField("Name", STRING)), s(StructField("name", STRING)))
    assert "'name'" in msg and "'Name'" in msg and "case" in msg


def test_write_compatible_rejects_nested_type_difference() -> None:
    table = s(StructField("p", s(StructField("q", ArrayType(s(StructField("r", INTEGER)))))))
    data = s(StructField("p", s(StructField("q", ArrayType(s(StructField("r", STRING)))))))
    msg = _mismatch(table, data)
    assert "p.q.element.r" in msg and "string" in msg and "integer" in msg
    assert msg.startswith("[DELTA_FAILED_TO_MERGE_FIELDS] Failed to merge fields")
    assert " |    |    |    |-- r: integer (nullable = true)" in msg


def test_write_compatible_rejects_wider_data_and_missing_required_column() -> None:
    assert "'x'" in _mismatch(s(StructField("x", INTEGER)), s(StructField("x", LONG)))
    msg = _mismatch(
        s(StructField("k", LONG, False), StructField("v", LONG)), s(StructField("v", LONG))
    )
    assert "non-nullable" in msg and "'k'" in msg
    nested = s(StructField("o", s(StructField("k", LONG, False), StructField("v", LONG))))
    assert "'o.k'" in _mismatch(nested, s(StructField("o", s(StructField("v", LONG)))))
