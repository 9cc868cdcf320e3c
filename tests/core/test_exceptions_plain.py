"""The core's exception classes are plain Python: in an interpreter where pyspark cannot be
imported they derive only from builtins and each other (the Spark layer adds PySpark's bases
when it is imported, see ``delta_pyspark.spark.jvm.bridge``), and they still pickle whole."""

from __future__ import annotations

import subprocess
import sys

_CHECK = """
import builtins, pickle, sys

class NoSpark:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("pyspark", "py4j"):
            raise ImportError(name)
        return None

sys.meta_path.insert(0, NoSpark())
import delta_pyspark.core.commands.restore as restore
from delta_pyspark import exceptions as ex

classes = [v for v in vars(ex).values() if isinstance(v, type) and issubclass(v, ex.DeltaError)]
classes.append(restore.RestoreMissingFilesError)
for cls in classes:
    for base in cls.__mro__:
        assert base.__module__ in ("builtins", ex.__name__, restore.__name__), (cls, base)
err = ex.SchemaMismatchError("[DELTA_FAILED_TO_MERGE_FIELDS] bad schema")
assert (str(err), err.args, err.condition) == (
    "[DELTA_FAILED_TO_MERGE_FIELDS] bad schema",
    ("[DELTA_FAILED_TO_MERGE_FIELDS] bad schema",),
    "DELTA_FAILED_TO_MERGE_FIELDS",
)
assert ex.DeltaTableNotFoundError("x").condition == "DELTA_MISSING_DELTA_TABLE"
assert ex.DeltaAnalysisException("[1, 2] are not a condition").condition is None
feature = pickle.loads(pickle.dumps(ex.UnsupportedTableFeatureError("needs x", ["x"])))
assert (str(feature), feature.features) == ("needs x", ["x"])
missing = pickle.loads(pickle.dumps(restore.RestoreMissingFilesError("gone", ["a.parquet"])))
assert (str(missing), missing.missing) == ("gone", ["a.parquet"])
print(len(classes), "pyspark" in sys.modules)
"""


def test_exception_classes_are_plain_without_pyspark() -> None:
    run = subprocess.run(
        [sys.executable, "-c", _CHECK], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["57", "False"]
