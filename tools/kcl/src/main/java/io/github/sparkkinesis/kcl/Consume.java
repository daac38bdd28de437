package io.github.sparkkinesis.kcl;

import java.io.BufferedWriter;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider;
import software.amazon.awssdk.http.Protocol;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.cloudwatch.CloudWatchAsyncClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbAsyncClient;
import software.amazon.awssdk.services.kinesis.KinesisAsyncClient;
import software.amazon.awssdk.services.kinesis.model.Shard;
import software.amazon.awssdk.services.kinesis.model.ShardFilter;
import software.amazon.awssdk.services.kinesis.model.ShardFilterType;
import software.amazon.kinesis.common.ConfigsBuilder;
import software.amazon.kinesis.common.InitialPositionInStream;
import software.amazon.kinesis.common.InitialPositionInStreamExtended;
import software.amazon.kinesis.common.StreamIdentifier;
import software.amazon.kinesis.coordinator.CoordinatorConfig;
import software.amazon.kinesis.coordinator.PromptScheduler;
import software.amazon.kinesis.coordinator.Scheduler;
import software.amazon.kinesis.coordinator.WorkerStateChangeListener;
import software.amazon.kinesis.exceptions.ShutdownException;
import software.amazon.kinesis.leases.KinesisShardDetector;
import software.amazon.kinesis.leases.LeaseManagementConfig;
import software.amazon.kinesis.lifecycle.events.InitializationInput;
import software.amazon.kinesis.lifecycle.events.LeaseLostInput;
import software.amazon.kinesis.lifecycle.events.ProcessRecordsInput;
import software.amazon.kinesis.lifecycle.events.ShardEndedInput;
import software.amazon.kinesis.lifecycle.events.ShutdownRequestedInput;
import software.amazon.kinesis.metrics.MetricsLevel;
import software.amazon.kinesis.processor.RecordProcessorCheckpointer;
import software.amazon.kinesis.processor.ShardRecordProcessor;
import software.amazon.kinesis.processor.SingleStreamTracker;
import software.amazon.kinesis.retrieval.KinesisClientRecord;
import software.amazon.kinesis.retrieval.polling.PollingConfig;

/**
 * A KCL 3.x consumer as a program: a {@link Scheduler} (polling retrieval, TRIM_HORIZON, lease table in DynamoDB, no
 * CloudWatch metrics) whose record processor appends every user record the KCL hands it to a file, flushed per batch
 * before the batch is checkpointed, and checkpoints at {@code shardEnded} so the KCL starts the shard's children, as
 * any KCL application must. Tests read the file (testkit/spark_kinesis_testkit/kcl_worker.py) to see what a KCL
 * consumer of a stream receives: aggregates deaggregated, resharded streams followed parents before children, by the
 * KCL's own code.
 *
 * <p>Settings: {@code --name value} arguments, else the environment variable beside each: {@code --kinesis-endpoint}
 * (KCL_KINESIS_ENDPOINT), {@code --dynamodb-endpoint} (KCL_DYNAMODB_ENDPOINT), {@code --region} (KCL_REGION, else
 * AWS_REGION), {@code --stream} (KCL_STREAM), {@code --application} (KCL_APPLICATION: the lease table's name),
 * {@code --output} (KCL_OUTPUT), optionally {@code --worker-id} (KCL_WORKER_ID) and {@code --shutdown-timeout-ms}
 * (KCL_SHUTDOWN_TIMEOUT_MS, 20000). Keys come only from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY in the environment,
 * never the command line. KCL_LOG_LEVEL (slf4j-simple: trace, debug, info, warn, error) is warn unless set.
 *
 * <p>Output, one line per user record, tab-separated: {@code shardId sequenceNumber subSequenceNumber partitionKey
 * explicitHashKeyOr- base64Data aggregated(0|1) approximateArrivalEpochMillisOr-}, the partition key with backslash,
 * tab, newline and carriage return escaped ({@code \\ \t \n \r}). {@code aggregated} is the KCL's own flag: a
 * sub-sequence number of 0 is both a plain record and an aggregate's first user record.
 *
 * <p>On stderr, one line per state the worker enters ({@code kcl-consume: STARTED after 4321 ms}, JVM up-time), and
 * the exit status is 1 when the KCL gave up initialising. SIGTERM shuts the worker down gracefully: every processor
 * is asked to checkpoint and leases are released, for at most the shutdown timeout.
 */
public final class Consume {
  private Consume() {}

  public static void main(String[] args) throws Exception {
    // slf4j-simple reads its settings once, when the first logger is made: before any KCL or SDK class loads.
    System.setProperty(
        "org.slf4j.simpleLogger.defaultLogLevel", System.getenv().getOrDefault("KCL_LOG_LEVEL", "warn"));
    System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
    System.setProperty("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS");

    Map<String, String> opts = options(args);
    URI kinesisEndpoint = URI.create(setting(opts, "kinesis-endpoint", "KCL_KINESIS_ENDPOINT", null));
    URI dynamoDbEndpoint = URI.create(setting(opts, "dynamodb-endpoint", "KCL_DYNAMODB_ENDPOINT", null));
    Region region = Region.of(setting(opts, "region", "KCL_REGION", System.getenv("AWS_REGION")));
    String stream = setting(opts, "stream", "KCL_STREAM", null);
    String application = setting(opts, "application", "KCL_APPLICATION", null);
    String output = setting(opts, "output", "KCL_OUTPUT", null);
    String workerId =
        setting(opts, "worker-id", "KCL_WORKER_ID", "consume-" + ProcessHandle.current().pid() + "-"
            + UUID.randomUUID().toString().substring(0, 8));
    long shutdownTimeoutMs = Long.parseLong(setting(opts, "shutdown-timeout-ms", "KCL_SHUTDOWN_TIMEOUT_MS", "20000"));

    // Explicit keys and region: the SDK's default chains would probe instance metadata, off loopback.
    EnvironmentVariableCredentialsProvider keys = EnvironmentVariableCredentialsProvider.create();
    // Polling only, so HTTP/1.1: kinesis-mock's plain port does not speak h2c (the KCL's own client builder asks
    // for HTTP/2, which only enhanced fan-out needs).
    KinesisAsyncClient kinesis = KinesisAsyncClient.builder()
        .endpointOverride(kinesisEndpoint)
        .region(region)
        .credentialsProvider(keys)
        .httpClientBuilder(NettyNioAsyncHttpClient.builder().protocol(Protocol.HTTP1_1).maxConcurrency(64))
        .build();
    DynamoDbAsyncClient dynamoDb = DynamoDbAsyncClient.builder()
        .endpointOverride(dynamoDbEndpoint)
        .region(region)
        .credentialsProvider(keys)
        .httpClientBuilder(NettyNioAsyncHttpClient.builder().maxConcurrency(64))
        .build();
    // MetricsLevel.NONE drops every metric before it is queued, so this client sends nothing; it points at the
    // DynamoDB endpoint (moto's server, which also speaks CloudWatch) so that nothing could ever leave loopback.
    CloudWatchAsyncClient cloudWatch = CloudWatchAsyncClient.builder()
        .endpointOverride(dynamoDbEndpoint)
        .region(region)
        .credentialsProvider(keys)
        .httpClientBuilder(NettyNioAsyncHttpClient.builder().maxConcurrency(2))
        .build();

    RecordLog log = new RecordLog(output);
    ConfigsBuilder configs = new ConfigsBuilder(
        new SingleStreamTracker(
            stream, InitialPositionInStreamExtended.newInitialPosition(InitialPositionInStream.TRIM_HORIZON)),
        application, kinesis, dynamoDb, cloudWatch, workerId, () -> new Processor(log));

    // The KCL's Scheduler but for its 1-30 s bootstrap jitter on a new application's empty lease table.
    Scheduler scheduler = new PromptScheduler(
        configs.checkpointConfig(),
        coordinator(configs.coordinatorConfig()),
        leases(configs.leaseManagementConfig()),
        configs.lifecycleConfig(),
        configs.metricsConfig().metricsLevel(MetricsLevel.NONE),
        configs.processorConfig(),
        configs.retrievalConfig().retrievalSpecificConfig(
            // A shard with nothing new is read again after 200 ms (the KCL's floor) rather than 1.5 s.
            new PollingConfig(stream, kinesis).idleTimeBetweenReadsInMillis(PollingConfig.MIN_IDLE_MILLIS_BETWEEN_READS)));

    // SIGTERM: the hook asks the scheduler to shut down gracefully and waits (bounded) while run() winds down.
    // When run() returned by itself (initialisation failed), there is nothing left to shut down.
    CountDownLatch finished = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      if (finished.getCount() > 0) {
        try {
          Future<Boolean> done = scheduler.startGracefulShutdown();
          if (!done.get(shutdownTimeoutMs, TimeUnit.MILLISECONDS)) {
            System.err.println("kcl-consume: graceful shutdown did not complete");
          }
        } catch (Exception e) {
          System.err.println("kcl-consume: graceful shutdown: " + e);
        }
      }
      log.close();
    }, "kcl-consume-shutdown"));

    scheduler.run();
    finished.countDown();
    if (INIT_FAILED.get()) {
      System.exit(1);
    }
  }

  private static final AtomicBoolean INIT_FAILED = new AtomicBoolean();

  /** Shorter coordinator timings: a test waits for parents to finish and leases to move, seconds rather than tens. */
  private static CoordinatorConfig coordinator(CoordinatorConfig c) {
    return c
        // The lease of a child shard checks its parents' checkpoints every 10 s by default.
        .parentShardPollIntervalMillis(500L)
        // The scheduler looks for new or lost leases (and moves shard consumers on) every second by default.
        .shardConsumerDispatchPollIntervalMillis(200L)
        // A failed initialisation attempt (DynamoDB not ready) is retried after 1 s by default.
        .schedulerInitializationBackoffTimeMillis(500L)
        .workerStateChangeListener(new WorkerStateChangeListener() {
          @Override
          public void onWorkerStateChange(WorkerState state) {
            System.err.println("kcl-consume: " + state + " after "
                + ManagementFactory.getRuntimeMXBean().getUptime() + " ms");
          }

          @Override
          public void onAllInitializationAttemptsFailed(Throwable e) {
            INIT_FAILED.set(true);
            System.err.println("kcl-consume: initialisation failed: " + e);
            e.printStackTrace();
          }
        });
  }

  /** Shorter lease timings, and the KCL 3 worker metrics off (see below). */
  private static LeaseManagementConfig leases(LeaseManagementConfig c) {
    c.workerUtilizationAwareAssignmentConfig()
        // With no metric list the KCL picks one by asking where it runs: ECS, EKS, then EC2, by a request to the
        // instance metadata service (169.254.169.254, off loopback; 5 s timeouts). Disabled, it balances leases
        // by throughput alone, as it does wherever no platform is found.
        .disableWorkerMetrics(true)
        // The leader assigns leases only to workers whose WorkerMetricStats entry it has read: reported every 30 s
        // by default, first after twice the capture period (1 s by default; with no metrics there is nothing to
        // capture), so a new worker is seen after 0.5 s rather than 2 s.
        .inMemoryWorkerMetricsCaptureFrequencyMillis(250L)
        .workerMetricsReporterFreqInMillis(2000L);
    return c
        // A lease not renewed in 10 s is taken over by default (renewals run every third of it), and a graceful
        // shutdown waits as long for the processors. 5 s: a killed worker's leases move on sooner, while a worker
        // starved of CPU for a moment (two cores shared with Spark, kinesis-mock and moto) keeps its leases.
        .failoverTimeMillis(5000L)
        // The leader assigns leases every 2 × failover by default, and workers look for new ones twice as often:
        // a child shard's lease waits for one assignment after its parents end.
        .leaseAssignmentIntervalMillis(1000L)
        // Despite its name, the pause a shard sync that created leases makes before it returns (60 s by default):
        // the first worker of a new application would start no lease before it is over.
        .shardSyncIntervalMillis(100L)
        // The leader lock (DynamoDB lock client): 120 s lease, 30 s heartbeat by default, so a worker restarted
        // under the same application name waits minutes to lead.
        .dynamoDbLockBasedLeaderLeaseDurationInMillis(6000L)
        .dynamoDbLockBasedLeaderHeartbeatPeriodInMillis(1000L)
        // The leader's periodic shard sync, which also audits the leases for hash-range holes: every 2 min by default.
        .leasesRecoveryAuditorExecutionFrequencyMillis(5000L)
        // The KCL's shard detector, but for kinesis-mock's answer to ListShards(AT_TRIM_HORIZON) (see below).
        .customShardDetectorProvider(stream -> new TrimHorizonShardDetector(
            c.kinesisClient(),
            stream.streamIdentifier(),
            c.listShardsBackoffTimeInMillis(),
            c.maxListShardsRetryAttempts(),
            c.listShardsCacheAllowedAgeInSeconds(),
            c.maxCacheMissesBeforeReload(),
            c.cacheMissWarningModulus(),
            c.dynamoDbRequestTimeout()));
  }

  /**
   * The KCL's {@link KinesisShardDetector} with ListShards' {@code AT_TRIM_HORIZON} filter answered as Kinesis
   * answers it. A new application's first shard sync (TRIM_HORIZON) asks Kinesis for the shards open at the trim
   * horizon, expects them to cover the hash-key space exactly once, and creates their leases; their descendants get
   * theirs as they end. kinesis-mock (0.6.2, ListShardsRequest.getList) answers that filter with every shard of the
   * stream, parents and children overlapping, so the KCL finds the hash range "incomplete" and never starts. Here a
   * shard is dropped from that answer when one of its parents is in it: what is left is the shards open at the
   * trim horizon (a stream's shards outlive no retention period in a test). A correct answer has no parent and
   * child both, so it passes unchanged.
   */
  static final class TrimHorizonShardDetector extends KinesisShardDetector {
    TrimHorizonShardDetector(
        KinesisAsyncClient kinesis,
        StreamIdentifier stream,
        long listShardsBackoffTimeInMillis,
        int maxListShardsRetryAttempts,
        long listShardsCacheAllowedAgeInSeconds,
        int maxCacheMissesBeforeReload,
        int cacheMissWarningModulus,
        Duration kinesisRequestTimeout) {
      super(kinesis, stream, listShardsBackoffTimeInMillis, maxListShardsRetryAttempts,
          listShardsCacheAllowedAgeInSeconds, maxCacheMissesBeforeReload, cacheMissWarningModulus,
          kinesisRequestTimeout);
    }

    @Override
    public List<Shard> listShardsWithFilter(ShardFilter filter) {
      return atTrimHorizon(filter, super.listShardsWithFilter(filter));
    }

    @Override
    public List<Shard> listShardsWithFilter(ShardFilter filter, String consumerId) {
      return atTrimHorizon(filter, super.listShardsWithFilter(filter, consumerId));
    }

    private static List<Shard> atTrimHorizon(ShardFilter filter, List<Shard> shards) {
      if (shards == null || filter == null || filter.type() != ShardFilterType.AT_TRIM_HORIZON) {
        return shards;
      }
      Set<String> listed = new HashSet<>();
      for (Shard s : shards) listed.add(s.shardId());
      List<Shard> roots = new ArrayList<>();  // mutable: the KCL sorts it
      for (Shard s : shards) {
        if (!listed.contains(s.parentShardId()) && !listed.contains(s.adjacentParentShardId())) roots.add(s);
      }
      return roots;
    }
  }

  private static Map<String, String> options(String[] args) {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("expected --name value pairs, got " + String.join(" ", args));
      }
      opts.put(args[i].substring(2), args[++i]);
    }
    return opts;
  }

  private static String setting(Map<String, String> opts, String name, String env, String fallback) {
    String value = opts.getOrDefault(name, System.getenv(env));
    if (value == null || value.isEmpty()) value = fallback;
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException("missing --" + name + " (or " + env + ")");
    }
    return value;
  }

  /** A partition key in one field: backslash, tab, newline and carriage return escaped as {@code \\ \t \n \r}. */
  static String escape(String key) {
    StringBuilder out = new StringBuilder(key.length());
    for (int i = 0; i < key.length(); i++) {
      char c = key.charAt(i);
      switch (c) {
        case '\\' -> out.append("\\\\");
        case '\t' -> out.append("\\t");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        default -> out.append(c);
      }
    }
    return out.toString();
  }

  /** The output file, shared by every shard's processor: a batch is written and flushed at once, under a lock. */
  static final class RecordLog {
    private final Writer out;

    RecordLog(String path) throws IOException {
      out = new BufferedWriter(
          new OutputStreamWriter(new FileOutputStream(path, true), StandardCharsets.UTF_8), 1 << 16);
    }

    synchronized void write(CharSequence lines) {
      try {
        out.append(lines);
        out.flush();
      } catch (IOException e) {
        // The KCL would log a processor's exception and go on to the next batch, the records unwritten: a test
        // must see the worker die instead. (halt, not exit: the shutdown hook would wait for this very thread.)
        System.err.println("kcl-consume: cannot write the record log: " + e);
        Runtime.getRuntime().halt(2);
      }
    }

    synchronized void close() {
      try {
        out.close();
      } catch (IOException e) {
        System.err.println("kcl-consume: closing the record log: " + e);
      }
    }
  }

  /** One shard's processor: writes each batch, then checkpoints it; checkpoints at the shard's end. */
  static final class Processor implements ShardRecordProcessor {
    private final RecordLog log;
    private final Base64.Encoder b64 = Base64.getEncoder();
    private String shardId = "?";

    Processor(RecordLog log) {
      this.log = log;
    }

    @Override
    public void initialize(InitializationInput input) {
      shardId = input.shardId();
    }

    @Override
    public void processRecords(ProcessRecordsInput input) {
      StringBuilder lines = new StringBuilder();
      for (KinesisClientRecord r : input.records()) {
        ByteBuffer data = r.data().duplicate();
        byte[] bytes = new byte[data.remaining()];
        data.get(bytes);
        lines
            .append(shardId).append('\t')
            .append(r.sequenceNumber()).append('\t')
            .append(r.subSequenceNumber()).append('\t')
            .append(escape(r.partitionKey())).append('\t')
            .append(r.explicitHashKey() == null ? "-" : r.explicitHashKey()).append('\t')
            .append(b64.encodeToString(bytes)).append('\t')
            .append(r.aggregated() ? '1' : '0').append('\t')
            .append(r.approximateArrivalTimestamp() == null ? "-"
                : Long.toString(r.approximateArrivalTimestamp().toEpochMilli()))
            .append('\n');
      }
      if (lines.length() > 0) {
        log.write(lines);
      }
      checkpoint(input.checkpointer(), "batch");
    }

    @Override
    public void leaseLost(LeaseLostInput input) {
      // Another worker holds the shard now; it resumes from the last checkpoint (what was written since is
      // delivered again: a duplicate, never a loss).
    }

    @Override
    public void shardEnded(ShardEndedInput input) {
      // The KCL creates and starts the children's leases only once the parent is checkpointed at SHARD_END.
      checkpoint(input.checkpointer(), "shard end");
    }

    @Override
    public void shutdownRequested(ShutdownRequestedInput input) {
      checkpoint(input.checkpointer(), "shutdown");
    }

    private void checkpoint(RecordProcessorCheckpointer checkpointer, String what) {
      try {
        checkpointer.checkpoint();
      } catch (ShutdownException e) {
        // The lease was lost meanwhile: the next holder reads from the previous checkpoint.
      } catch (Exception e) {
        System.err.println("kcl-consume: " + shardId + ": checkpoint at " + what + " failed: " + e);
      }
    }
  }
}
