"""delta-spark's Delta Connect messages (``delta.connect.DeltaRelation`` and
``DeltaCommand``, which its Connect client sends inside Spark Connect's extension fields),
declared here from their published field numbers and decoded with protobuf's runtime.

Spark's own messages inside them (a ``Relation``, ``Expression`` or ``DataType``) are
declared as bytes, which is their wire form: they go to the server's planner as they came.
The declarations live in a descriptor pool of their own, so delta-spark's generated modules
(its client, in the same process) can register the same names in the default pool.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_Field = descriptor_pb2.FieldDescriptorProto
_STRING, _BYTES, _BOOL = _Field.TYPE_STRING, _Field.TYPE_BYTES, _Field.TYPE_BOOL
_INT32, _INT64, _DOUBLE = _Field.TYPE_INT32, _Field.TYPE_INT64, _Field.TYPE_DOUBLE
_MESSAGE, _ENUM = _Field.TYPE_MESSAGE, _Field.TYPE_ENUM
_REPEATED = "repeated"

# message -> fields: (name, number, type, type name or None, flags); a oneof named in flags
# groups its fields; "optional" fields have presence (proto3 ``optional``)
_MESSAGES: dict[str, list[tuple[str, int, int, str | None, str]]] = {
    "DeltaTable": [
        ("path", 1, _MESSAGE, "DeltaTable.Path", "oneof:access_type"),
        ("table_or_view_name", 2, _STRING, None, "oneof:access_type"),
    ],
    "DeltaTable.Path": [
        ("path", 1, _STRING, None, ""),
        ("hadoop_conf", 2, _MESSAGE, "StringPair", _REPEATED),
    ],
    "StringPair": [("key", 1, _STRING, None, ""), ("value", 2, _STRING, None, "")],
    "DeltaRelation": [
        (name, number, _MESSAGE, kind, "oneof:relation_type")
        for number, (name, kind) in enumerate(
            [
                ("scan", "Scan"),
                ("describe_history", "Scan"),
                ("describe_detail", "Scan"),
                ("convert_to_delta", "ConvertToDelta"),
                ("restore_table", "RestoreTable"),
                ("is_delta_table", "IsDeltaTable"),
                ("delete_from_table", "DeleteFromTable"),
                ("update_table", "UpdateTable"),
                ("merge_into_table", "MergeIntoTable"),
                ("optimize_table", "OptimizeTable"),
            ],
            start=1,
        )
    ],
    "Scan": [("table", 1, _MESSAGE, "DeltaTable", "")],
    "ConvertToDelta": [
        ("identifier", 1, _STRING, None, ""),
        ("partition_schema_string", 2, _STRING, None, "oneof:partition_schema"),
        ("partition_schema_struct", 3, _BYTES, None, "oneof:partition_schema"),
    ],
    "RestoreTable": [
        ("table", 1, _MESSAGE, "DeltaTable", ""),
        ("version", 2, _INT64, None, "oneof:version_or_timestamp"),
        ("timestamp", 3, _STRING, None, "oneof:version_or_timestamp"),
    ],
    "IsDeltaTable": [("path", 1, _STRING, None, "")],
    "DeleteFromTable": [("target", 1, _BYTES, None, ""), ("condition", 2, _BYTES, None, "")],
    "UpdateTable": [
        ("target", 1, _BYTES, None, ""),
        ("condition", 2, _BYTES, None, ""),
        ("assignments", 3, _MESSAGE, "Assignment", _REPEATED),
    ],
    "Assignment": [("field", 1, _BYTES, None, ""), ("value", 2, _BYTES, None, "")],
    "MergeIntoTable": [
        ("target", 1, _BYTES, None, ""),
        ("source", 2, _BYTES, None, ""),
        ("condition", 3, _BYTES, None, ""),
        ("matched_actions", 4, _MESSAGE, "MergeAction", _REPEATED),
        ("not_matched_actions", 5, _MESSAGE, "MergeAction", _REPEATED),
        ("not_matched_by_source_actions", 6, _MESSAGE, "MergeAction", _REPEATED),
        ("with_schema_evolution", 7, _BOOL, None, "optional"),
    ],
    "MergeAction": [
        ("condition", 1, _BYTES, None, ""),
        ("delete_action", 2, _MESSAGE, "Empty", "oneof:action_type"),
        ("update_action", 3, _MESSAGE, "Assignments", "oneof:action_type"),
        ("update_star_action", 4, _MESSAGE, "Empty", "oneof:action_type"),
        ("insert_action", 5, _MESSAGE, "Assignments", "oneof:action_type"),
        ("insert_star_action", 6, _MESSAGE, "Empty", "oneof:action_type"),
    ],
    "Empty": [],
    "Assignments": [("assignments", 1, _MESSAGE, "Assignment", _REPEATED)],
    "OptimizeTable": [
        ("table", 1, _MESSAGE, "DeltaTable", ""),
        ("partition_filters", 2, _STRING, None, _REPEATED),
        ("zorder_columns", 3, _STRING, None, _REPEATED),
    ],
    "DeltaCommand": [
        (name, number, _MESSAGE, kind, "oneof:command_type")
        for number, (name, kind) in enumerate(
            [
                ("clone_table", "CloneTable"),
                ("vacuum_table", "VacuumTable"),
                ("upgrade_table_protocol", "UpgradeTableProtocol"),
                ("generate", "Generate"),
                ("create_delta_table", "CreateDeltaTable"),
                ("add_feature_support", "FeatureSupport"),
                ("drop_feature_support", "FeatureSupport"),
            ],
            start=1,
        )
    ],
    "CloneTable": [
        ("table", 1, _MESSAGE, "DeltaTable", ""),
        ("target", 2, _STRING, None, ""),
        ("version", 3, _INT32, None, "oneof:version_or_timestamp"),
        ("timestamp", 4, _STRING, None, "oneof:version_or_timestamp"),
        ("is_shallow", 5, _BOOL, None, ""),
        ("replace", 6, _BOOL, None, ""),
        ("properties", 7, _MESSAGE, "StringPair", _REPEATED),
    ],
    "VacuumTable": [
        ("table", 1, _MESSAGE, "DeltaTable", ""),
        ("retention_hours", 2, _DOUBLE, None, "optional"),
    ],
    "UpgradeTableProtocol": [
        ("table", 1, _MESSAGE, "DeltaTable", ""),
        ("reader_version", 2, _INT32, None, ""),
        ("writer_version", 3, _INT32, None, ""),
    ],
    "Generate": [("table", 1, _MESSAGE, "DeltaTable", ""), ("mode", 2, _STRING, None, "")],
    "CreateDeltaTable": [
        ("mode", 1, _INT32, None, ""),  # an enum on the wire: MODE_CREATE = 1, ...
        ("table_name", 2, _STRING, None, "optional"),
        ("location", 3, _STRING, None, "optional"),
        ("comment", 4, _STRING, None, "optional"),
        ("columns", 5, _MESSAGE, "ColumnDefinition", _REPEATED),
        ("partitioning_columns", 6, _STRING, None, _REPEATED),
        ("properties", 7, _MESSAGE, "StringPair", _REPEATED),
        ("clustering_columns", 8, _STRING, None, _REPEATED),
    ],
    "ColumnDefinition": [
        ("name", 1, _STRING, None, ""),
        ("data_type", 2, _BYTES, None, ""),
        ("nullable", 3, _BOOL, None, ""),
        ("generated_always_as", 4, _STRING, None, "optional"),
        ("comment", 5, _STRING, None, "optional"),
        ("identity_info", 6, _MESSAGE, "IdentityInfo", "optional"),
    ],
    "IdentityInfo": [
        ("start", 1, _INT64, None, ""),
        ("step", 2, _INT64, None, ""),
        ("allow_explicit_insert", 3, _BOOL, None, ""),
    ],
    "FeatureSupport": [
        ("table", 1, _MESSAGE, "DeltaTable", ""),
        ("feature_name", 2, _STRING, None, ""),
        ("truncate_history", 3, _BOOL, None, "optional"),
    ],
}

_PACKAGE = "delta_pyspark.connect"


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="delta_pyspark/connect/messages.proto", package=_PACKAGE, syntax="proto3"
    )
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name.replace(".", "_"))
        oneofs: list[str] = []
        for field_name, number, kind, type_name, flags in fields:
            field = message.field.add(name=field_name, number=number, type=kind)
            field.label = _Field.LABEL_REPEATED if flags == _REPEATED else _Field.LABEL_OPTIONAL
            if type_name is not None:
                field.type_name = f".{_PACKAGE}.{type_name.replace('.', '_')}"
            group = flags.removeprefix("oneof:") if flags.startswith("oneof:") else None
            if flags == "optional":  # proto3 presence: a synthetic oneof of its own
                group = f"_{field_name}"
                field.proto3_optional = True
            if group is not None:
                if group not in oneofs:
                    oneofs.append(group)
                    message.oneof_decl.add(name=group)
                field.oneof_index = oneofs.index(group)
    return proto


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())


def _message(name: str) -> Any:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{_PACKAGE}.{name}"))


DeltaRelation = _message("DeltaRelation")
DeltaCommand = _message("DeltaCommand")

#: the ``type_url`` names delta-spark's client gives them (after ``type.googleapis.com/``)
RELATION_TYPE = "delta.connect.DeltaRelation"
COMMAND_TYPE = "delta.connect.DeltaCommand"
