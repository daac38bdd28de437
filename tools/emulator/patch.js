// Three changes to kinesis-mock 0.6.2 (npm kinesis-local, the newest), each applied once to its compiled main.js.
// Idempotent; fails when the code a patch changes is not found exactly once (a kinesis-local other than 0.6.2: check
// whether each is still needed).
"use strict";
const fs = require("fs");
const main = process.argv[2] || "node_modules/kinesis-local/main.js";
const patches = [
  {
    // GetRecords: kinesis-mock stores records up to 10 MiB (MaxRecordSizeInKiB, UpdateMaxRecordSize), but its
    // GetRecords stops before a record that would take the answer past 10 MiB even when it is the first one, then
    // fails (HTTP 500, "last on empty queue"): a 10 MiB record with its key and overhead could never be read back.
    // Kinesis always returns at least one record; this makes the emulator do so too (the 10 MiB cap then applies
    // from the second record on).
    name: "GetRecords' size check",
    old: "if ((((x22.alT + totalSize$tailLocal1) | 0) > 10485760)) {",
    patched: "if (((totalSize$tailLocal1 !== 0) && (((x22.alT + totalSize$tailLocal1) | 0) > 10485760))) {",
  },
  {
    // PutRecords: kinesis-mock groups a request's records by (shard, the records the shard already holds), so each
    // entry hashes every record stored in its shard: a put costs the shard's length, and a test's emulator CPU grows
    // with the square of its records per shard.
    // The key hashes by its shard alone. Grouping is unchanged: within one request a shard's entries carry the same
    // stored-records instance, and the key's equality still compares both parts (the records by reference first).
    name: "PutRecords' grouping key",
    old: "var key = $ct_T2__O__O__(new $c_T2(), elem.ev, elem.e2);",
    patched:
      "var key = $ct_T2__O__O__(new $c_T2(), elem.ev, elem.e2); key.g = (function() { return $dp_hashCode__I(this.m()); });",
  },
  {
    // new String(char[], offset, count) in its Scala.js runtime: it appends the chars one at a time, so a string of n
    // chars is a chain of n concatenations that the garbage collector copies until it is read. Every record's data goes
    // through it (its base64 both ways), so a 3 MiB PutRecord made hundreds of MB of heap and spent more than half its
    // CPU in the collector. The same string, built from slices of the array.
    name: "String from chars",
    old:
      "  while ((i !== end)) {\n    result = (result + (\"\" + $cToS(value.a[i])));\n    i = ((1 + i) | 0);\n  }\n  return result;",
    patched:
      "  while ((i !== end)) {\n    var next = Math.min(end, (i + 8192) | 0);\n" +
      "    result = (result + String.fromCharCode.apply(null, value.a.subarray(i, next)));\n    i = next;\n  }\n  return result;",
  },
];
let text = fs.readFileSync(main, "utf8");
for (const p of patches) {
  if (text.includes(p.patched)) continue;
  if (text.split(p.old).length !== 2) {
    console.error(`patch.js: ${p.name} not found once in ${main} (kinesis-local changed?)`);
    process.exit(1);
  }
  text = text.replace(p.old, () => p.patched);
}
fs.writeFileSync(main, text);
