"""What Kinesis bills for the records a stream received (shared/reference/limits-and-costs.md, "What a record costs").

A Kinesis record's size is its data and its partition key (the size its limits apply to). A provisioned stream bills
each record in PUT payload units of 25 KiB, rounded up (a 200-byte record costs one, a 51,200-byte aggregate two); an
on-demand stream bills each record's size rounded up to 1 KiB. The floor is what the user's records would cost if
every Kinesis record were full: their bytes (data and keys) in 25 KiB units, not rounded per record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .emulator import aggregate_of, iter_shard

PUT_UNIT_BYTES = 25 * 1024
ON_DEMAND_UNIT_BYTES = 1024


def _units(size: int, unit: int) -> int:
    return max(1, -(-size // unit))


@dataclass
class Bill:
    """The Kinesis records of a stream as billed, and the user records they carried."""

    kinesis_records: int = 0
    put_units: int = 0  # provisioned: each record in 25 KiB units, rounded up
    on_demand_kib: int = 0  # on-demand: each record in KiB, rounded up
    user_records: int = 0
    user_bytes: int = 0  # the user records' data and partition keys

    def received(self, record: dict[str, Any]) -> None:
        """A Kinesis record as ``GetRecords`` returns it (boto3): ``Data`` and ``PartitionKey``; the user records it
        carries are a KPL aggregate's sub-records (whichever shard they name: what was sent, not what a consumer
        keeps), else itself."""
        data, key = record["Data"], record["PartitionKey"]
        size = len(data) + len(key.encode("utf-8"))
        self.kinesis_records += 1
        self.put_units += _units(size, PUT_UNIT_BYTES)
        self.on_demand_kib += _units(size, ON_DEMAND_UNIT_BYTES)
        message = aggregate_of(data)
        if message is None:
            self.user_records += 1
            self.user_bytes += size
            return
        keys = [len(k.encode("utf-8")) for k in message.partition_key_table]
        self.user_records += len(message.records)
        self.user_bytes += sum(len(r.data) + keys[r.partition_key_index] for r in message.records)

    @classmethod
    def of_stream(cls, client: Any, stream: str, idle_polls: int = 2) -> Bill:
        """Every record of every shard of ``stream`` (boto3 ``client``), from TRIM_HORIZON."""
        bill = cls()
        for shard in client.list_shards(StreamName=stream)["Shards"]:
            for record in iter_shard(client, stream, shard["ShardId"], idle_polls):
                bill.received(record)
        return bill

    def per_million(self) -> dict[str, float]:
        """Kinesis records, PUT units and on-demand KiB per million user records, the floor of PUT units, and the PUT
        units over the floor."""
        n = self.user_records or 1
        floor = self.user_bytes / PUT_UNIT_BYTES
        return {
            "kinesis_records_per_m": self.kinesis_records * 1e6 / n,
            "put_units_per_m": self.put_units * 1e6 / n,
            "on_demand_kib_per_m": self.on_demand_kib * 1e6 / n,
            "floor_put_units_per_m": floor * 1e6 / n,
            "put_over_floor": self.put_units / floor if floor else 0.0,
            "user_records_per_kinesis_record": self.user_records / (self.kinesis_records or 1),
        }
