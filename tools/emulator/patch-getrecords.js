// kinesis-mock 0.6.2 stores records up to 10 MiB (MaxRecordSizeInKiB, UpdateMaxRecordSize), but its GetRecords stops
// before a record that would take the answer past 10 MiB even when it is the first one, then fails (HTTP 500, "last on
// empty queue"): a 10 MiB record with its key and overhead could never be read back. Kinesis always returns at least
// one record; this makes the emulator do so too (the 10 MiB cap then applies from the second record on). Idempotent;
// fails when the code it changes is not found (a kinesis-local other than 0.6.2: check whether it is still needed).
"use strict";
const fs = require("fs");
const main = process.argv[2] || "node_modules/kinesis-local/main.js";
const old = "if ((((x22.alT + totalSize$tailLocal1) | 0) > 10485760)) {";
const patched = "if (((totalSize$tailLocal1 !== 0) && (((x22.alT + totalSize$tailLocal1) | 0) > 10485760))) {";
const text = fs.readFileSync(main, "utf8");
if (text.includes(patched)) process.exit(0);
if (text.split(old).length !== 2) {
  console.error(`patch-getrecords.js: GetRecords' size check not found once in ${main} (kinesis-local changed?)`);
  process.exit(1);
}
fs.writeFileSync(main, text.replace(old, () => patched));
