"""The testkit's bill (billing.py): PUT payload units and on-demand KiB as AWS counts them, and the user records an
aggregate carries. Pure logic: no Kinesis, no Spark."""

from __future__ import annotations

from aws_kinesis_agg.aggregator import RecordAggregator
from spark_kinesis_testkit.billing import Bill


def test_each_record_is_rounded_up_to_its_units_data_and_key_together() -> None:
    bill = Bill()
    bill.received({"Data": b"x" * 198, "PartitionKey": "ab"})  # 200 B: a whole unit, one KiB
    bill.received({"Data": b"x" * (25 * 1024 - 2), "PartitionKey": "ab"})  # 25 KiB exactly: one unit
    bill.received({"Data": b"x" * (25 * 1024 - 1), "PartitionKey": "ab"})  # a byte more: two
    assert (bill.kinesis_records, bill.put_units, bill.on_demand_kib) == (3, 1 + 1 + 2, 1 + 25 + 26)
    assert (bill.user_records, bill.user_bytes) == (3, 200 + 2 * 25 * 1024 + 1)


def test_an_aggregate_is_billed_once_and_carries_each_sub_record() -> None:
    agg = RecordAggregator()
    for i in range(300):
        agg.add_user_record(str(i), b"y" * 100)
    pk, _ehk, data = agg.clear_and_get().get_contents()
    bill = Bill()
    bill.received({"Data": data, "PartitionKey": pk})
    keys = sum(len(str(i)) for i in range(300))
    assert (bill.kinesis_records, bill.user_records, bill.user_bytes) == (1, 300, 300 * 100 + keys)
    size = len(data) + len(pk)
    assert bill.put_units == -(-size // (25 * 1024)) == 2
    figures = bill.per_million()
    assert figures["put_units_per_m"] == 2 * 1e6 / 300
    assert figures["put_over_floor"] == 2 / ((300 * 100 + keys) / (25 * 1024))  # the floor is not rounded per record
