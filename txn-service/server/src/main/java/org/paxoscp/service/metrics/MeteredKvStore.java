package org.paxoscp.service.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.paxoscp.store.ForwardingKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreUnavailableException;

/**
 * A {@link KvStore} decorator that times every store request by operation
 * ({@code paxoscp_store_request_seconds{op}}) and counts the failed ones by operation and kind
 * ({@code paxoscp_store_errors_total{op, error}}: {@code unavailable} for a store that did not
 * answer, {@code other} for anything else). Closing it closes the delegate. Thread-safe.
 */
public final class MeteredKvStore extends ForwardingKvStore {
  /** A store operation, as the {@code op} tag names it. */
  enum Op {
    READ, READ_ROW, WRITE, WRITE_ROWS, CHECK_AND_WRITE, DELETE_ROW, DELETE_VERSIONS, CENSUS;

    String tag() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  private final Map<Op, Timer> timers = new EnumMap<>(Op.class);
  private final Map<Op, Counter> unavailable = new EnumMap<>(Op.class);
  private final Map<Op, Counter> other = new EnumMap<>(Op.class);

  public MeteredKvStore(KvStore delegate, MeterRegistry registry) {
    super(delegate);
    for (Op op : Op.values()) {
      timers.put(op, Timer.builder("paxoscp.store.request")
          .description("store requests of this DC's service, by operation")
          .tag("op", op.tag()).publishPercentileHistogram().register(registry));
      unavailable.put(op, Counter.builder("paxoscp.store.errors")
          .description("store requests that failed, by operation and kind")
          .tag("op", op.tag()).tag("error", "unavailable").register(registry));
      other.put(op, Counter.builder("paxoscp.store.errors")
          .description("store requests that failed, by operation and kind")
          .tag("op", op.tag()).tag("error", "other").register(registry));
    }
  }

  private void done(Op op, long startNanos, RuntimeException failure) {
    timers.get(op).record(System.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
    if (failure != null) {
      (failure instanceof StoreUnavailableException ? unavailable : other).get(op).increment();
    }
  }

  /** Runs {@code call}, timing it as {@code op} and counting its failure by kind. */
  private <T> T timed(Op op, java.util.function.Supplier<T> call) {
    long t = System.nanoTime();
    try {
      T result = call.get();
      done(op, t, null);
      return result;
    } catch (RuntimeException e) {
      done(op, t, e);
      throw e;
    }
  }

  @Override
  public Optional<Cell> read(Table table, byte[] row, String column, long maxTimestamp) {
    return timed(Op.READ, () -> delegate.read(table, row, column, maxTimestamp));
  }

  @Override
  public Map<String, Cell> readRow(Table table, byte[] row) {
    return timed(Op.READ_ROW, () -> delegate.readRow(table, row));
  }

  /** One batch, timed as one row read (HBase sends it in one request). */
  @Override
  public List<Map<String, Cell>> readRows(Table table, List<byte[]> rows) {
    return timed(Op.READ_ROW, () -> delegate.readRows(table, rows));
  }

  @Override
  public void write(Table table, byte[] row, long timestamp, Map<String, byte[]> cells) {
    timed(Op.WRITE, () -> {
      delegate.write(table, row, timestamp, cells);
      return null;
    });
  }

  @Override
  public void writeRows(Table table, long timestamp, List<RowWrite> rows) {
    timed(Op.WRITE_ROWS, () -> {
      delegate.writeRows(table, timestamp, rows);
      return null;
    });
  }

  @Override
  public boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
      long timestamp, Map<String, byte[]> cells) {
    return timed(Op.CHECK_AND_WRITE,
        () -> delegate.checkAndWrite(table, row, checkColumn, expected, timestamp, cells));
  }

  @Override
  public void deleteRow(Table table, byte[] row) {
    timed(Op.DELETE_ROW, () -> {
      delegate.deleteRow(table, row);
      return null;
    });
  }

  @Override
  public void deleteVersionsBefore(Table table, byte[] row, String column, long timestamp) {
    timed(Op.DELETE_VERSIONS, () -> {
      delegate.deleteVersionsBefore(table, row, column, timestamp);
      return null;
    });
  }

  @Override
  public TableCensus census(Table table) {
    return timed(Op.CENSUS, () -> delegate.census(table));
  }

  @Override
  public void close() {
    delegate.close();
  }
}
