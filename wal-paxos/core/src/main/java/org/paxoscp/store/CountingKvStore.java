package org.paxoscp.store;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;

/**
 * A {@link KvStore} decorator that counts operations and the time spent in them, to measure what
 * the protocol costs in store round trips. Collection ({@code deleteRow},
 * {@code deleteVersionsBefore}) and {@code census} are passed on uncounted: they are not part of
 * the protocol's request path. Closing it closes the delegate. Thread-safe.
 */
public final class CountingKvStore extends ForwardingKvStore {

  /** A snapshot of the counters. */
  public record Counts(long reads, long rowReads, long writes, long checkAndWrites, long nanos) {
    public long operations() {
      return reads + rowReads + writes + checkAndWrites;
    }

    public Counts minus(Counts o) {
      return new Counts(reads - o.reads, rowReads - o.rowReads, writes - o.writes,
          checkAndWrites - o.checkAndWrites, nanos - o.nanos);
    }
  }

  private final LongAdder reads = new LongAdder();
  private final LongAdder rowReads = new LongAdder();
  private final LongAdder writes = new LongAdder();
  private final LongAdder checkAndWrites = new LongAdder();
  private final LongAdder nanos = new LongAdder();
  /** The calling thread's counts: reads, rowReads, writes, checkAndWrites, nanos. */
  private final ThreadLocal<long[]> mine = ThreadLocal.withInitial(() -> new long[5]);

  public CountingKvStore(KvStore delegate) {
    super(delegate);
  }

  /** Counts of the operations made by the calling thread only. */
  public Counts threadCounts() {
    long[] c = mine.get();
    return new Counts(c[0], c[1], c[2], c[3], c[4]);
  }

  private void count(LongAdder op, int index, long startNanos) {
    long took = System.nanoTime() - startNanos;
    op.increment();
    nanos.add(took);
    long[] c = mine.get();
    c[index]++;
    c[4] += took;
  }

  public Counts counts() {
    return new Counts(reads.sum(), rowReads.sum(), writes.sum(), checkAndWrites.sum(),
        nanos.sum());
  }

  @Override
  public Optional<Cell> read(Table table, byte[] row, String column, long maxTimestamp) {
    long t = System.nanoTime();
    try {
      return delegate.read(table, row, column, maxTimestamp);
    } finally {
      count(reads, 0, t);
    }
  }

  @Override
  public Map<String, Cell> readRow(Table table, byte[] row) {
    long t = System.nanoTime();
    try {
      return delegate.readRow(table, row);
    } finally {
      count(rowReads, 1, t);
    }
  }

  @Override
  public List<Map<String, Cell>> readRows(Table table, List<byte[]> rows) {
    long t = System.nanoTime();
    try {
      return delegate.readRows(table, rows);
    } finally {
      count(rowReads, 1, t);
    }
  }

  @Override
  public void write(Table table, byte[] row, long timestamp, Map<String, byte[]> cells) {
    long t = System.nanoTime();
    try {
      delegate.write(table, row, timestamp, cells);
    } finally {
      count(writes, 2, t);
    }
  }

  @Override
  public boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
      long timestamp, Map<String, byte[]> cells) {
    long t = System.nanoTime();
    try {
      return delegate.checkAndWrite(table, row, checkColumn, expected, timestamp, cells);
    } finally {
      count(checkAndWrites, 3, t);
    }
  }

  @Override
  public void close() {
    delegate.close();
  }
}
