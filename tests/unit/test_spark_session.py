"""Spark's edges without starting Spark: the missing extra, settings, one-line errors."""

from __future__ import annotations

import sys

import pytest

from producer_core.distributed.session import describe_spark_error, parse_conf, require_pyspark
from producer_core.errors import UsageError

PYTHON_TASK_FAILURE = """An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/worker.py", line 4327, in invoke_udf
    run_process()
  File "/work/producer_core/engine/drivers/engine.py", line 12, in run
    raise ValueError("boom here")
ValueError: boom here
"""  # noqa: E501

JAVA_FAILURE = """An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.
: org.apache.spark.scheduler.BarrierJobSlotsNumberCheckFailed: [SPARK-24819]: Barrier execution mode does not allow run a barrier stage that requires more slots than the total number of slots in the cluster currently.
\tat org.apache.spark.errors.SparkCoreErrors$.numPartitionsGreaterThanMaxNumConcurrentTasksError(SparkCoreErrors.scala:241)
\tat org.apache.spark.scheduler.DAGScheduler.checkBarrierStageWithNumSlots(DAGScheduler.scala:872)
"""  # noqa: E501


def test_a_python_failure_in_a_task_becomes_its_last_line():
    assert describe_spark_error(RuntimeError(PYTHON_TASK_FAILURE)) == "ValueError: boom here"


def test_a_java_failure_becomes_its_exception_and_message_without_the_stack():
    text = describe_spark_error(RuntimeError(JAVA_FAILURE))
    assert text.startswith("BarrierJobSlotsNumberCheckFailed: [SPARK-24819]: Barrier")
    assert "\tat " not in text and "scala" not in text


def test_anything_else_is_its_first_line():
    assert describe_spark_error(OSError("first\nsecond")) == "first"
    assert describe_spark_error(OSError()) == "OSError"


def test_spark_settings_are_key_value_pairs_of_spark_keys():
    assert parse_conf(["spark.executor.memory=2g", "spark.a.b = c=d"]) == {
        "spark.executor.memory": "2g", "spark.a.b": "c=d"}
    for bad in ("spark.executor.memory", "executor.memory=2g", "=2"):
        with pytest.raises(UsageError, match="Malformed --spark-conf"):
            parse_conf([bad])


def test_without_pyspark_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark -> ImportError
    with pytest.raises(UsageError) as error:
        require_pyspark("kbatch analyze")
    assert "kbatch analyze runs on Spark" in str(error.value)
    assert "pip install 'kbatch[spark]'" in str(error.value)
