"""Typed errors, named as delta-spark names them so user code ports unchanged.

This module is Spark-free: the core raises these, the API layer re-exports them. Once
the Spark layer is imported (``delta_pyspark.spark.jvm.bridge``) each class also derives from
the PySpark exception delta-spark users catch for the same error (``AnalysisException``, ...).
"""

from __future__ import annotations

import re
from typing import ClassVar

#: a message opening with delta-spark's condition in brackets, as delta-spark's own do
_CONDITION = re.compile(r"\[([A-Z_][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\] ")


class DeltaError(Exception):
    """Base class of every error this package raises on purpose."""

    #: delta-spark's error class for this error, where it has exactly one (PySpark's
    #: ``getCondition()``); None where delta-spark's depends on the case.
    error_class: ClassVar[str | None] = None

    @property
    def condition(self) -> str | None:
        """delta-spark's condition for this error: the one its message opens with
        (``"[DELTA_...] ..."``, for classes whose condition depends on the case), else the
        class's ``error_class``."""
        opening = _CONDITION.match(str(self.args[0])) if self.args else None
        return opening.group(1) if opening else self.error_class


class DeltaAnalysisException(DeltaError):
    """Invalid request against a table (bad schema, bad option, bad predicate)."""


class DeltaParseException(DeltaAnalysisException):
    """A Delta SQL statement that does not follow its grammar (delta-spark: ParseException)."""


class DeltaIllegalArgumentException(DeltaError, ValueError):
    """An argument that can never be valid."""


class DeltaTypeError(DeltaError, TypeError):
    """An argument of the wrong type (delta-spark's Python API raises ``TypeError`` there)."""


class DeltaTableNotFoundError(DeltaAnalysisException):
    """The path holds no Delta table (no ``_delta_log`` or no commits)."""

    error_class = "DELTA_MISSING_DELTA_TABLE"


class DeltaPathNotFoundError(DeltaTableNotFoundError):
    """A read of a path where nothing exists (delta-spark's reads say PATH_NOT_FOUND there,
    as Spark's do for any source; an existing directory without a log is
    DELTA_MISSING_DELTA_TABLE)."""

    error_class = "PATH_NOT_FOUND"


class VersionNotFoundError(DeltaAnalysisException):
    """Time travel to a version or timestamp the log cannot reconstruct."""


class CorruptLogError(DeltaError):
    """The transaction log is malformed: never read past it silently."""


class ChecksumMismatchError(CorruptLogError):
    """A version checksum (``NNN.crc``) disagrees with the replayed log: one of them is
    damaged, so the version is not read (delta-spark: DELTA_TXN_LOG_FAILED_INTEGRITY)."""

    error_class = "DELTA_TXN_LOG_FAILED_INTEGRITY"


class UnsupportedTableFeatureError(DeltaError):
    """The table needs a reader or writer feature this implementation lacks."""

    def __init__(self, message: str, features: list[str]) -> None:
        super().__init__(message)
        self.features = features

    def __reduce__(self) -> tuple[type, tuple[str, list[str]]]:
        # the default rebuilds from ``args`` (the message only): keep the features too
        return (type(self), (str(self.args[0]), self.features))


class DeltaUnsupportedOperationException(DeltaError):
    """The operation cannot be carried out as asked (e.g. an ambiguous MERGE)."""


class IcebergCompatViolationError(DeltaUnsupportedOperationException):
    """A commit would break IcebergCompatV2 or UniForm's requirements (delta-spark's
    ``DELTA_ICEBERG_COMPAT_VIOLATION.*``, ``DELTA_UNIVERSAL_FORMAT_VIOLATION``; the message
    opens with the condition)."""


class DeltaSchemaChangedError(DeltaAnalysisException):
    """The table's schema changed incompatibly between a DataFrame's analysis and its scan."""

    error_class = "DELTA_SCHEMA_CHANGED"


class DeltaPlannerUnsupportedError(DeltaUnsupportedOperationException):
    """The table uses a feature reads through Spark's planner do not support yet."""


class DeltaJvmExtensionError(DeltaError):
    """delta-pyspark's JVM helper could not be built, or the SparkSession lacks it."""


class UnsupportedStorageError(DeltaIllegalArgumentException):
    """A table path whose storage scheme delta-pyspark has no implementation for."""


class StorageAccessError(DeltaError, OSError):
    """Storage refused or failed a request its retries could not get through (credentials,
    permissions, network, a store without conditional writes)."""


class VacuumLiteUnavailableError(DeltaError):
    """VACUUM LITE cannot name every file to delete: commits it needs are gone from the log."""

    error_class = "DELTA_CANNOT_VACUUM_LITE"


class FileAlreadyExistsError(DeltaError):
    """Put-if-absent lost: another writer created the file first."""


class SchemaMismatchError(DeltaAnalysisException):
    """Data written does not match the table schema (delta-spark's schema enforcement); its
    message opens with delta-spark's condition for the case."""


class MergeMultipleMatchesError(DeltaUnsupportedOperationException):
    """A MERGE whose matched clause would change a target row several source rows matched."""

    error_class = "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"


class InvariantViolationError(DeltaError):
    """A NOT NULL column, CHECK constraint or invariant rejected a row."""


class GeneratedColumnError(DeltaAnalysisException):
    """A generated column delta-spark refuses (an expression over a missing or generated
    column, non-deterministic, of the wrong type, ...); its message opens with delta-spark's
    condition for the case (e.g. ``DELTA_INVALID_GENERATED_COLUMN_REFERENCES``)."""


class DeltaConcurrentModificationException(DeltaError):
    """Base of every optimistic-concurrency conflict: the transaction committed nothing."""


class ConcurrentWriteException(DeltaConcurrentModificationException):
    """A commit the table's commit coordinator (its catalog) refused because another
    commit took the version first."""

    error_class = "DELTA_CONCURRENT_WRITE"


class ConcurrentAppendException(DeltaConcurrentModificationException):
    """Files were added where this transaction read (its predicates match them)."""

    error_class = "DELTA_CONCURRENT_APPEND"


class ConcurrentDeleteReadException(DeltaConcurrentModificationException):
    """A file this transaction read was removed by a concurrent commit."""

    error_class = "DELTA_CONCURRENT_DELETE_READ"


class ConcurrentDeleteDeleteException(DeltaConcurrentModificationException):
    """A file (or row) this transaction removes was already removed concurrently."""

    error_class = "DELTA_CONCURRENT_DELETE_DELETE"


class MetadataChangedException(DeltaConcurrentModificationException):
    """Schema, partitioning or table properties changed concurrently."""

    error_class = "DELTA_METADATA_CHANGED"


class ProtocolChangedException(DeltaConcurrentModificationException):
    """The protocol changed concurrently, or another writer created the table first."""

    error_class = "DELTA_PROTOCOL_CHANGED"


class ConcurrentTransactionException(DeltaConcurrentModificationException):
    """Two writers used the same application transaction id concurrently."""

    error_class = "DELTA_CONCURRENT_TRANSACTION"


class ChangeDataNotRecordedError(DeltaAnalysisException):
    """A change data feed read covers a version written without the change data feed on."""

    error_class = "DELTA_MISSING_CHANGE_DATA"


class NoChangeDataStartError(DeltaAnalysisException):
    """A change data feed read with neither ``startingVersion`` nor ``startingTimestamp``."""

    error_class = "DELTA_NO_START_FOR_CDC_READ"


class InvalidChangeDataRangeError(DeltaIllegalArgumentException):
    """A change data feed range whose end comes before its start."""

    error_class = "DELTA_INVALID_CDC_RANGE"


class ChangeDataStartAfterLatestError(DeltaIllegalArgumentException):
    """A change data feed read starting after the table's latest version."""

    error_class = "DELTA_CDC_START_VERSION_AFTER_LATEST"


class UnsupportedFeaturesInConfigError(DeltaIllegalArgumentException):
    """A table feature name this implementation does not know."""

    error_class = "DELTA_UNSUPPORTED_FEATURES_IN_CONFIG"


class CannotDropCheckConstraintFeatureError(DeltaAnalysisException):
    """DROP FEATURE checkConstraints while the table still has CHECK constraints."""

    error_class = "DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE"


class DeltaTableFeatureException(DeltaError):
    """A refused DROP FEATURE (delta-spark's DeltaTableFeatureException); the subclasses carry
    delta-spark's error classes. Nothing was dropped, though a first step may have run."""


class FeatureDropNotPresentError(DeltaTableFeatureException):
    error_class = "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"


class FeatureDropIsDeltaPropertyError(DeltaTableFeatureException):
    error_class = "DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY"


class FeatureDropNonRemovableError(DeltaTableFeatureException):
    error_class = "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE"


class FeatureDropUnsupportedClientFeatureError(DeltaTableFeatureException):
    error_class = "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE"


class FeatureDropDependentFeatureError(DeltaTableFeatureException):
    error_class = "DELTA_FEATURE_DROP_DEPENDENT_FEATURE"


class FeatureDropHistoryTruncationNotAllowedError(DeltaTableFeatureException):
    error_class = "DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED"


class FeatureDropNeedsHistoryTruncationError(DeltaTableFeatureException):
    error_class = "DELTA_FEATURE_CAN_ONLY_DROP_CHECKPOINT_PROTECTION_WITH_HISTORY_TRUNCATION"


class FeatureDropWaitForRetentionPeriodError(DeltaTableFeatureException):
    error_class = "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"


class FeatureDropHistoricalVersionsExistError(DeltaTableFeatureException):
    error_class = "DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST"


class FeatureDropCheckpointProtectionWaitError(DeltaTableFeatureException):
    error_class = "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"


class FeatureDropConflictRevalidationError(DeltaTableFeatureException):
    error_class = "DELTA_FEATURE_DROP_CONFLICT_REVALIDATION_FAIL"


class IdentityColumnExplicitInsertError(DeltaAnalysisException):
    """A write gave values for a GENERATED ALWAYS AS IDENTITY column."""

    error_class = "DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED"


class IdentityColumnUpdateError(DeltaAnalysisException):
    """UPDATE (or a MERGE update) assigns an identity column."""

    error_class = "DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED"


class IdentityColumnIllegalStepError(DeltaAnalysisException):
    """An identity column declared with INCREMENT BY 0."""

    error_class = "DELTA_IDENTITY_COLUMNS_ILLEGAL_STEP"


class IdentityColumnPartitionError(DeltaAnalysisException):
    """A table partitioned by an identity column."""

    error_class = "DELTA_IDENTITY_COLUMNS_PARTITION_NOT_SUPPORTED"


class IdentityColumnWithGenerationError(DeltaAnalysisException):
    """A column declared both identity and generated by an expression."""

    error_class = "DELTA_IDENTITY_COLUMNS_WITH_GENERATED_EXPRESSION"


class IdentityColumnDataTypeError(DeltaUnsupportedOperationException):
    """An identity column of a type other than BIGINT."""

    error_class = "DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE"
