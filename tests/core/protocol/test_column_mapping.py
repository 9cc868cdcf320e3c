"""Column mapping against real tables: the physical schema we derive must name (and
number) the columns exactly as the Parquet files other writers produced."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_paths import TESTDATA
from delta_pyspark.core.protocol.column_mapping import (
    assign_column_mapping,
    column_mapping_mode,
    logical_to_physical_names,
    max_column_id,
    physical_name,
    to_physical_schema,
)
from delta_pyspark.core.protocol.schema import (
    LONG,
    STRING,
    ArrayType,
    MapType,
    StructField,
    StructType,
    parse_schema_string,
    schema_to_string,
)
from delta_pyspark.core.protocol.schema_arrow import to_arrow_schema
from delta_pyspark.exceptions import CorruptLogError, UnsupportedTableFeatureError

ID_TABLE = TESTDATA / "golden/table-with-columnmapping-mode-id/delta"
NAME_TABLE = TESTDATA / "delta-rs/table_with_column_mapping"
PHYSICAL = re.compile(r"col-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def _log(table: Path) -> tuple[dict, list[dict]]:
    """The last metaData and every add action of a table's JSON log."""
    meta, adds = None, []
    for log in sorted((table / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            meta = action.get("metaData", meta)
            if "add" in action:
                adds.append(action["add"])
    assert meta is not None, f"no metaData in {table}"
    return meta, adds


def _field_id(field: pa.Field) -> int | None:
    raw = (field.metadata or {}).get(b"PARQUET:field_id")
    return int(raw) if raw is not None else None


def _shape(t: pa.DataType) -> object:
    """Names and field ids of every struct field, through lists and maps; the
    list/map wrapper names differ between writers and are not part of the contract."""
    if pa.types.is_struct(t):
        return [(f.name, _field_id(f), _shape(f.type)) for f in t]
    if pa.types.is_map(t):
        return ("map", _shape(t.key_type), _shape(t.item_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return ("list", _shape(t.value_type))
    return None


def _schema_shape(schema: pa.Schema) -> object:
    return [(f.name, _field_id(f), _shape(f.type)) for f in schema]


# ------------------------------------------------------------------------- modes


def test_mode_from_configuration() -> None:
    assert column_mapping_mode({}) == "none"
    assert column_mapping_mode({"delta.columnMapping.mode": "none"}) == "none"
    assert column_mapping_mode({"delta.columnMapping.mode": "name"}) == "name"
    assert column_mapping_mode({"delta.columnMapping.mode": "ID"}) == "id"
    with pytest.raises(UnsupportedTableFeatureError) as e:
        column_mapping_mode({"delta.columnMapping.mode": "position"})
    assert e.value.features == ["columnMapping"]
    assert "position" in str(e.value)


def test_physical_name_per_mode() -> None:
    mapped = StructField("a", LONG, True, {"delta.columnMapping.physicalName": "col-x"})
    assert physical_name(mapped, "none") == "a"
    assert physical_name(mapped, "name") == "col-x"
    assert physical_name(mapped, "id") == "col-x"
    with pytest.raises(CorruptLogError) as e:
        physical_name(StructField("b", LONG), "name")
    assert "'b'" in str(e.value)


def test_none_mode_is_identity() -> None:
    schema = StructType((StructField("a", LONG),))
    assert to_physical_schema(schema, "none") is schema
    assert logical_to_physical_names(schema, "none") == {("a",): ("a",)}


# ------------------------------------------------------------------- real tables


def test_id_mode_table_matches_parquet_files() -> None:
    meta, _ = _log(ID_TABLE)
    mode = column_mapping_mode(meta["configuration"])
    assert mode == "id"
    schema = parse_schema_string(meta["schemaString"])
    physical = to_physical_schema(schema, mode)
    ours = _schema_shape(to_arrow_schema(physical))
    files = sorted(ID_TABLE.glob("*.parquet"))
    assert files
    for path in files:
        assert _schema_shape(pq.read_schema(path)) == ours
    # The ids in the schema agree with the table's recorded maximum.
    assert max_column_id(schema) == int(meta["configuration"]["delta.columnMapping.maxColumnId"])


def test_id_mode_written_file_carries_field_ids(tmp_path: Path) -> None:
    """pyarrow turns our Arrow field metadata into Parquet field ids: a file written with
    the physical schema reads back with the same names and ids as delta-spark's."""
    meta, _ = _log(ID_TABLE)
    schema = parse_schema_string(meta["schemaString"])
    target = tmp_path / "x.parquet"
    pq.write_table(to_arrow_schema(to_physical_schema(schema, "id")).empty_table(), target)
    source = sorted(ID_TABLE.glob("*.parquet"))[0]
    assert _schema_shape(pq.read_schema(target)) == _schema_shape(pq.read_schema(source))
    assert "field_id=13" in str(pq.ParquetFile(target).schema)


def test_name_mode_table_matches_parquet_files_and_partition_keys() -> None:
    meta, adds = _log(NAME_TABLE)
    mode = column_mapping_mode(meta["configuration"])
    assert mode == "name"
    schema = parse_schema_string(meta["schemaString"])
    physical = to_physical_schema(schema, mode)
    mapping = logical_to_physical_names(schema, mode)
    part_keys = {mapping[(c,)][0] for c in meta["partitionColumns"]}
    data_fields = [f for f in to_arrow_schema(physical) if f.name not in part_keys]
    assert adds
    for add in adds:
        # Partition values in the log are keyed by physical name.
        assert set(add["partitionValues"]) == part_keys
        file_schema = pq.read_schema(NAME_TABLE / add["path"])
        assert _schema_shape(file_schema) == _schema_shape(pa.schema(data_fields))


def test_nested_paths_of_golden_id_table() -> None:
    meta, _ = _log(ID_TABLE)
    schema = parse_schema_string(meta["schemaString"])
    mapping = logical_to_physical_names(schema, "id")
    assert mapping[("nested_struct", "ac", "aca")] == (
        "col-ab01c262-302d-4162-be9c-98d905966527",
        "col-6551e960-1c32-4bf2-bd5b-1f57180d25f7",
        "col-c091fdeb-7cca-4849-912d-5f77fa400933",
    )
    assert mapping[("ByteType",)] == ("col-adb3ab8f-9a6d-4f44-abb3-cf411d800e5f",)
    # Struct fields inside arrays/maps have no stats path.
    assert all(len(k) == len(v) for k, v in mapping.items())
    assert ("array_of_structs", "ab") not in mapping


def test_physical_schema_renames_inside_arrays_and_maps() -> None:
    meta, _ = _log(ID_TABLE)
    physical = to_physical_schema(parse_schema_string(meta["schemaString"]), "id")
    by_id = {f.metadata["delta.columnMapping.id"]: f for f in physical}
    array_of_structs = by_id[19].type
    assert isinstance(array_of_structs, ArrayType)
    assert array_of_structs.element_type.field_names == ["col-e983d1fc-d588-46a7-a0ad-2f63a6834ea6"]
    map_of_rows = by_id[22].type
    assert isinstance(map_of_rows, MapType)
    assert map_of_rows.value_type.field_names == ["col-43f9ca1b-82fe-4ad7-9e5a-1af143d2abf4"]


# ------------------------------------------------------------- assigning mapping


def test_assign_numbers_fields_depth_first() -> None:
    schema = StructType(
        (
            StructField("a", LONG),
            StructField("s", StructType((StructField("x", LONG), StructField("y", STRING)))),
            StructField("arr", ArrayType(StructType((StructField("e", LONG),)))),
            StructField("m", MapType(STRING, StructType((StructField("v", LONG),)))),
        )
    )
    mapped, max_id = assign_column_mapping(schema)
    assert max_id == 8
    ids = {}

    def walk(dt, prefix=""):
        if isinstance(dt, StructType):
            for f in dt:
                ids[prefix + f.name] = f.metadata["delta.columnMapping.id"]
                assert PHYSICAL.fullmatch(f.metadata["delta.columnMapping.physicalName"])
                walk(f.type, prefix + f.name + ".")
        elif isinstance(dt, ArrayType):
            walk(dt.element_type, prefix)
        elif isinstance(dt, MapType):
            walk(dt.value_type, prefix)

    walk(mapped)
    assert ids == {"a": 1, "s": 2, "s.x": 3, "s.y": 4, "arr": 5, "arr.e": 6, "m": 7, "m.v": 8}
    names = [f.metadata["delta.columnMapping.physicalName"] for f in mapped]
    assert len(set(names)) == len(names)
    # Logical schema is unchanged apart from the metadata; serialises like Spark's.
    assert mapped.field_names == schema.field_names
    assert parse_schema_string(schema_to_string(mapped)) == mapped
    # Mapping a mapped schema again changes nothing.
    again, again_max = assign_column_mapping(mapped, max_id)
    assert again == mapped and again_max == max_id


def test_assign_continues_after_existing_ids() -> None:
    meta, _ = _log(ID_TABLE)
    schema = parse_schema_string(meta["schemaString"])
    grown = StructType((*schema.fields, StructField("new", LONG)))
    mapped, max_id = assign_column_mapping(grown, start_id=24)
    assert max_id == 25
    assert mapped.fields[:-1] == schema.fields
    new = mapped.field("new")
    assert new.metadata["delta.columnMapping.id"] == 25
    assert physical_name(new, "name").startswith("col-")
    # A start id above what the schema holds wins (ids are never reused).
    _, max_id = assign_column_mapping(StructType((StructField("z", LONG),)), start_id=100)
    assert max_id == 101
