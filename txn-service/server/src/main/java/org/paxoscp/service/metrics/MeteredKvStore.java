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

  @Override
  public Optional<Cell> read(Table table, byte[] row, String column, long maxTimestamp) {
    long t = System.nanoTime();
    try {
      Optional<Cell> c = delegate.read(table, row, column, maxTimestamp);
      done(Op.READ, t, null);
      return c;
    } catch (RuntimeException e) {
      done(Op.READ, t, e);
      throw e;
    }
  }

  @Override
  public Map<String, Cell> readRow(Table table, byte[] row) {
    long t = System.nanoTime();
    try {
      Map<String, Cell> m = delegate.readRow(table, row);
      done(Op.READ_ROW, t, null);
      return m;
    } catch (RuntimeException e) {
      done(Op.READ_ROW, t, e);
      throw e;
    }
  }

  @Override
  public List<Map<String, Cell>> readRows(Table table, List<byte[]> rows) {
    long t = System.nanoTime();
    try {
      List<Map<String, Cell>> m = delegate.readRows(table, rows);
      done(Op.READ_ROW, t, null);
      return m;
    } catch (RuntimeException e) {
      done(Op.READ_ROW, t, e);
      throw e;
    }
  }

  @Override
  public void write(Table table, byte[] row, long timestamp, Map<String, byte[]> cells) {
    long t = System.nanoTime();
    try {
      delegate.write(table, row, timestamp, cells);
      done(Op.WRITE, t, null);
    } catch (RuntimeException e) {
      done(Op.WRITE, t, e);
      throw e;
    }
  }

  @Override
  public void writeRows(Table table, long timestamp, List<RowWrite> rows) {
    long t = System.nanoTime();
    try {
      delegate.writeRows(table, timestamp, rows);
      done(Op.WRITE_ROWS, t, null);
    } catch (RuntimeException e) {
      done(Op.WRITE_ROWS, t, e);
      throw e;
    }
  }

  @Override
  public boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
      long timestamp, Map<String, byte[]> cells) {
    long t = System.nanoTime();
    try {
      boolean ok = delegate.checkAndWrite(table, row, checkColumn, expected, timestamp, cells);
      done(Op.CHECK_AND_WRITE, t, null);
      return ok;
    } catch (RuntimeException e) {
      done(Op.CHECK_AND_WRITE, t, e);
      throw e;
    }
  }

  @Override
  public void deleteRow(Table table, byte[] row) {
    long t = System.nanoTime();
    try {
      delegate.deleteRow(table, row);
      done(Op.DELETE_ROW, t, null);
    } catch (RuntimeException e) {
      done(Op.DELETE_ROW, t, e);
      throw e;
    }
  }

  @Override
  public void deleteVersionsBefore(Table table, byte[] row, String column, long timestamp) {
    long t = System.nanoTime();
    try {
      delegate.deleteVersionsBefore(table, row, column, timestamp);
      done(Op.DELETE_VERSIONS, t, null);
    } catch (RuntimeException e) {
      done(Op.DELETE_VERSIONS, t, e);
      throw e;
    }
  }

  @Override
  public TableCensus census(Table table) {
    long t = System.nanoTime();
    try {
      TableCensus c = delegate.census(table);
      done(Op.CENSUS, t, null);
      return c;
    } catch (RuntimeException e) {
      done(Op.CENSUS, t, e);
      throw e;
    }
  }

  @Override
  public void close() {
    delegate.close();
  }
}
