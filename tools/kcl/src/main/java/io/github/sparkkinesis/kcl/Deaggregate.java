package io.github.sparkkinesis.kcl;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import software.amazon.kinesis.retrieval.AggregatorUtil;
import software.amazon.kinesis.retrieval.KinesisClientRecord;

/**
 * The KCL's own deaggregation as a line protocol, so a test reads back what a KCL consumer would get without a model
 * of the KCL: each request line is one shard's records, each answer line the user records
 * {@code AggregatorUtil.deaggregate} returns for them, in order. Runs until its input ends.
 *
 * <p>Request (tab-separated fields, base64 where binary): {@code startingHashKey endingHashKey} then, per Kinesis
 * record, {@code sequenceNumber partitionKey explicitHashKeyOr- base64Data}. Answer: per user record, {@code
 * sequenceNumber subSequenceNumber aggregated(0|1) partitionKey explicitHashKeyOr- base64Data}, tab-separated, all on
 * one line ({@code -} for an empty answer).
 */
public final class Deaggregate {
  private Deaggregate() {}

  public static void main(String[] args) throws Exception {
    AggregatorUtil kcl = new AggregatorUtil();
    Base64.Decoder b64in = Base64.getDecoder();
    Base64.Encoder b64out = Base64.getEncoder();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 20);
    BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 20);
    String line;
    while ((line = in.readLine()) != null) {
      String[] f = line.split("\t", -1);
      BigInteger start = new BigInteger(f[0]);
      BigInteger end = new BigInteger(f[1]);
      List<KinesisClientRecord> records = new ArrayList<>();
      for (int i = 2; i + 3 < f.length; i += 4) {
        records.add(
            KinesisClientRecord.builder()
                .sequenceNumber(f[i])
                .partitionKey(f[i + 1])
                .explicitHashKey("-".equals(f[i + 2]) ? null : f[i + 2])
                .data(ByteBuffer.wrap(b64in.decode(f[i + 3])))
                .build());
      }
      StringBuilder answer = new StringBuilder();
      for (KinesisClientRecord r : kcl.deaggregate(records, start, end)) {
        if (answer.length() > 0) answer.append('\t');
        ByteBuffer data = r.data().duplicate();
        byte[] bytes = new byte[data.remaining()];
        data.get(bytes);
        answer
            .append(r.sequenceNumber()).append('\t')
            .append(r.subSequenceNumber()).append('\t')
            .append(r.aggregated() ? '1' : '0').append('\t')
            .append(r.partitionKey()).append('\t')
            .append(r.explicitHashKey() == null ? "-" : r.explicitHashKey()).append('\t')
            .append(b64out.encodeToString(bytes));
      }
      out.write(answer.length() == 0 ? "-" : answer.toString());
      out.newLine();
      out.flush();
    }
  }
}
