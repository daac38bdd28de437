package software.amazon.kinesis.coordinator;

import software.amazon.kinesis.checkpoint.CheckpointConfig;
import software.amazon.kinesis.leases.LeaseManagementConfig;
import software.amazon.kinesis.leases.exceptions.DependencyException;
import software.amazon.kinesis.leases.exceptions.InvalidStateException;
import software.amazon.kinesis.leases.exceptions.ProvisionedThroughputException;
import software.amazon.kinesis.lifecycle.LifecycleConfig;
import software.amazon.kinesis.metrics.MetricsConfig;
import software.amazon.kinesis.processor.ProcessorConfig;
import software.amazon.kinesis.retrieval.RetrievalConfig;

/**
 * The KCL's {@link Scheduler} without its bootstrap jitter (tools/kcl's Consume, one worker per test): when the lease
 * table is empty (a new application), {@code Scheduler.shouldInitiateLeaseSync} waits a random 1 to 30 s, looking
 * every 3 s for another worker's leases, so that a fleet starting at once does not sync shards all together. Here the
 * first look decides: an empty table means this worker syncs the shards now. Everything else is the KCL's. (In the
 * KCL's package because the method is package-private; it is marked {@code @VisibleForTesting}.)
 */
public final class PromptScheduler extends Scheduler {
  public PromptScheduler(
      CheckpointConfig checkpointConfig,
      CoordinatorConfig coordinatorConfig,
      LeaseManagementConfig leaseManagementConfig,
      LifecycleConfig lifecycleConfig,
      MetricsConfig metricsConfig,
      ProcessorConfig processorConfig,
      RetrievalConfig retrievalConfig) {
    super(
        checkpointConfig,
        coordinatorConfig,
        leaseManagementConfig,
        lifecycleConfig,
        metricsConfig,
        processorConfig,
        retrievalConfig);
  }

  @Override
  boolean shouldInitiateLeaseSync()
      throws InterruptedException, DependencyException, ProvisionedThroughputException, InvalidStateException {
    return leaseRefresher().isLeaseTableEmpty();
  }
}
